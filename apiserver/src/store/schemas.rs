//! Structural schemas of custom kinds: compiled when a CRD is written, applied to every
//! write of its objects (prune, default, validate), with `fieldValidation` deciding what
//! unknown fields do.

use std::sync::Arc;

use serde_json::Value;

use super::State;
use super::gc::custom_key;
use crate::error::{ApiError, ApiResult, Cause};
use crate::resources::ResourceInfo;
use crate::schema::{SchemaError, StructuralSchema};

/// What to do about fields the schema does not know (`fieldValidation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Refuse the write, naming the fields.
    Strict,
    /// Drop them and say so in a `Warning` header (kube-apiserver's default).
    #[default]
    Warn,
    /// Drop them silently.
    Ignore,
}

impl FieldValidation {
    /// Parses the query parameter value.
    pub fn parse(value: Option<&str>) -> ApiResult<Self> {
        match value {
            None | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of Strict, Warn or Ignore, not {other:?}"
            ))),
        }
    }
}

/// Compiles the schema of every served version of a CRD; a bad schema names its version,
/// and rules that do not compile are one cause each, at kube-apiserver's path
/// (`spec.validation.openAPIV3Schema...` when every version has the same schema).
pub fn compile_versions(crd: &Value) -> Result<Vec<(String, StructuralSchema)>, Vec<Cause>> {
    let versions = crd["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let identical = versions
        .windows(2)
        .all(|pair| pair[0]["schema"] == pair[1]["schema"]);
    let mut compiled = Vec::new();
    let mut causes = Vec::new();
    for (index, version) in versions.iter().enumerate() {
        let schema = &version["schema"]["openAPIV3Schema"];
        if schema.is_null() {
            continue;
        }
        let name = version["name"].as_str().unwrap_or_default().to_string();
        match StructuralSchema::compile(schema) {
            Ok(structural) => compiled.push((name, structural)),
            Err(SchemaError::Rules(errors)) => {
                if identical && index > 0 {
                    continue;
                }
                let prefix = if identical {
                    "spec.validation".to_string()
                } else {
                    format!("spec.versions[{index}].schema")
                };
                causes.extend(errors.into_iter().map(|e| Cause {
                    reason: e.reason,
                    field: format!("{prefix}.{}", e.path),
                    message: e.message,
                }));
            }
            Err(err) => {
                let field = format!("spec.versions[{index}].schema.openAPIV3Schema");
                causes.push(Cause::invalid(
                    &field,
                    &Value::from("schema"),
                    &err.to_string(),
                ));
                return Err(causes);
            }
        }
    }
    if causes.is_empty() {
        Ok(compiled)
    } else {
        Err(causes)
    }
}

impl State {
    /// Replaces the compiled schemas of the kind a CRD defines.
    pub(super) fn register_schemas(&mut self, crd: &Value) {
        let key = custom_key(crd);
        self.schemas
            .retain(|(group, plural, _), _| !(*group == key.group && *plural == key.plural));
        match compile_versions(crd) {
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

    /// Forgets the schemas of a removed CRD's kind.
    pub(super) fn forget_schemas(&mut self, crd: &Value) {
        let key = custom_key(crd);
        self.schemas
            .retain(|(group, plural, _), _| !(*group == key.group && *plural == key.plural));
    }

    /// Prunes, defaults and validates an object of a custom kind (replacing `old`, if it is
    /// an update), as kube-apiserver decodes and validates one. Unknown fields are refused,
    /// warned about or dropped as `validation` says.
    pub(super) fn enforce_schema(
        &mut self,
        info: &ResourceInfo,
        object: &mut Value,
        old: Option<&Value>,
        validation: FieldValidation,
    ) -> ApiResult<()> {
        let id = (
            info.group.clone(),
            info.plural.clone(),
            info.version.clone(),
        );
        let Some(schema) = self.schemas.get(&id).cloned() else {
            return Ok(());
        };
        let unknown = schema.prune(object);
        if !unknown.is_empty() {
            let described: Vec<String> = unknown
                .iter()
                .map(|p| format!("unknown field \"{p}\""))
                .collect();
            match validation {
                FieldValidation::Strict => {
                    return Err(ApiError::bad_request(format!(
                        "strict decoding error: {}",
                        described.join(", ")
                    )));
                }
                FieldValidation::Warn => self.warnings.extend(described),
                FieldValidation::Ignore => {}
            }
        }
        schema.apply_defaults(object);
        let checked = schema.validate_write(object, old);
        if !checked.causes.is_empty() {
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            return Err(ApiError::invalid(info, &name, checked.causes));
        }
        self.warnings.extend(checked.warnings);
        Ok(())
    }

    /// The warnings gathered by the current write, emptied.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}
