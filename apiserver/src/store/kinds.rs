//! The served kinds: the built-in ones and those CRDs define, with the compiled structural
//! schemas of the custom kinds' versions.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::{crd, schemas};
use crate::resources::{Registry, ResourceInfo, infos_from_crd};
use crate::schema::StructuralSchema;

/// (group, plural, version) of a custom kind's version.
type SchemaId = (String, String, String);

/// The registry of served kinds and the schemas of the custom ones.
pub struct Kinds {
    registry: Registry,
    schemas: HashMap<SchemaId, Arc<StructuralSchema>>,
}

impl Kinds {
    /// The built-in kinds, and no custom ones.
    pub fn builtin() -> Self {
        Kinds {
            registry: Registry::with_builtins(),
            schemas: HashMap::new(),
        }
    }

    /// The served kinds.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Whether a CRD's kind or plural is already taken by another served kind.
    pub fn names_clash(&self, crd: &Value) -> bool {
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
        self.registry.names_clash(&crd::custom_key(crd), kind)
    }

    /// Serves the kind a CRD defines, with the schemas of its versions (replacing what an
    /// earlier state of the CRD served).
    pub fn serve(&mut self, crd: &Value) {
        let key = crd::custom_key(crd);
        self.registry.set_custom(&key, infos_from_crd(crd));
        self.forget_schemas(crd);
        match schemas::compile_versions(crd) {
            Ok(versions) => {
                for (version, schema) in versions {
                    let id = (key.group.clone(), key.plural.clone(), version);
                    self.schemas.insert(id, Arc::new(schema));
                }
            }
            Err(causes) => {
                for cause in causes {
                    tracing::warn!(crd = %key.plural, field = %cause.field, error = %cause.message, "schema not compiled");
                }
            }
        }
    }

    /// Stops serving the kind a removed CRD defined.
    pub fn stop_serving(&mut self, crd: &Value) {
        self.forget_schemas(crd);
        self.registry.remove_custom(&crd::custom_key(crd));
    }

    /// The structural schema of a custom kind's version, if it has one.
    pub fn schema(&self, info: &ResourceInfo) -> Option<Arc<StructuralSchema>> {
        let id = (
            info.group.clone(),
            info.plural.clone(),
            info.version.clone(),
        );
        self.schemas.get(&id).cloned()
    }

    fn forget_schemas(&mut self, crd: &Value) {
        let key = crd::custom_key(crd);
        self.schemas
            .retain(|(group, plural, _), _| !(*group == key.group && *plural == key.plural));
    }
}
