//! The OpenAPI v3 schemas of the built-in kinds, generated once from their k8s-openapi
//! types: read by type checking on writes (`typecheck`) and served by `/openapi/v3`.

use std::sync::LazyLock;

use k8s_openapi::schemars::SchemaGenerator;
use k8s_openapi::schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::catalog::{BUILTIN_KINDS, add, add_schema};

/// The OpenAPI v3 schema of a type: its component name and every component it needs.
pub struct Schemas {
    /// The component name of the type itself.
    pub name: String,
    /// The components, the type's own included.
    pub components: Map<String, Value>,
}

/// Generates the schemas of one type.
fn generate(add: impl FnOnce(&mut SchemaGenerator) -> Option<String>) -> Option<Schemas> {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let name = add(&mut generator)?;
    Some(Schemas {
        name,
        components: generator.take_definitions(true),
    })
}

/// The schemas of every built-in kind, generated once, by (apiVersion, kind).
static KIND_SCHEMAS: LazyLock<Vec<((String, &str), Schemas)>> = LazyLock::new(|| {
    BUILTIN_KINDS
        .iter()
        .filter_map(|builtin| {
            let api_version = if builtin.group.is_empty() {
                builtin.version.to_string()
            } else {
                format!("{}/{}", builtin.group, builtin.version)
            };
            let schemas = generate(|g| add_schema(&api_version, builtin.kind, g))?;
            Some(((api_version, builtin.kind), schemas))
        })
        .collect()
});

/// The schemas of a built-in kind; `None` for a kind that is not built in.
pub fn kind_schemas(api_version: &str, kind: &str) -> Option<&'static Schemas> {
    KIND_SCHEMAS
        .iter()
        .find(|((v, k), _)| v == api_version && *k == kind)
        .map(|(_, schemas)| schemas)
}

/// The schemas every document refers to: ObjectMeta, ListMeta, Status and Patch.
pub fn meta_schemas() -> &'static Map<String, Value> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
    static META: LazyLock<Map<String, Value>> = LazyLock::new(|| {
        let mut generator = SchemaSettings::openapi3().into_generator();
        add::<meta::ObjectMeta>(&mut generator);
        add::<meta::ListMeta>(&mut generator);
        add::<meta::Status>(&mut generator);
        add::<meta::Patch>(&mut generator);
        generator.take_definitions(true)
    });
    &META
}
