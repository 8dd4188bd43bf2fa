//! Built-in kinds are decoded into their Go types by kube-apiserver; a body whose field has
//! the wrong JSON type is refused with encoding/json's words. This checks a body against
//! the kind's k8s-openapi schema and words the first mismatch as Go does:
//! `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal
//! number into Go struct field ConfigMap.data of type string`.

use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::kind_schemas::kind_schemas;
use crate::resources::ResourceInfo;

/// Refuses (400) a body of a built-in kind whose fields do not fit the kind's Go type.
pub fn check(info: &ResourceInfo, object: &Value) -> ApiResult<()> {
    if info.custom {
        return Ok(());
    }
    let Some(schemas) = kind_schemas(&info.api_version(), &info.kind) else {
        return Ok(());
    };
    let checker = Checker {
        components: &schemas.components,
    };
    let Some(root) = schemas.components.get(&schemas.name) else {
        return Ok(());
    };
    let context = Context {
        name: &schemas.name,
        path: String::new(),
    };
    match checker.fields(root, object, &context) {
        None => Ok(()),
        Some(mismatch) => Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {mismatch}",
            kind = info.kind,
            version = info.version,
        ))),
    }
}

/// Where a value is: the component name of the struct whose field holds it, and the field
/// path from the object (Go's `errorContext`).
struct Context<'a> {
    name: &'a str,
    path: String,
}

struct Checker<'a> {
    components: &'a Map<String, Value>,
}

/// The component a schema refers to (`$ref`, or `allOf: [{$ref}]`), by name.
fn reference(schema: &Value) -> Option<&str> {
    let target = schema["$ref"]
        .as_str()
        .or_else(|| schema["allOf"][0]["$ref"].as_str())?;
    target.rsplit('/').next()
}

/// `io.k8s.api.core.v1.Container` as Go names the type: `v1.Container`.
fn go_name(component: &str) -> String {
    let mut parts = component.rsplit('.');
    let name = parts.next().unwrap_or(component);
    match parts.next() {
        Some(package) => format!("{package}.{name}"),
        None => name.to_string(),
    }
}

/// The short struct name (`Container`) of a component.
fn struct_name(component: &str) -> &str {
    component.rsplit('.').next().unwrap_or(component)
}

/// What Go expects for a schema.
enum Expected<'a> {
    /// Anything (no type, or a type with its own decoding: Quantity, FieldsV1, ...).
    Any,
    /// A struct (component with properties).
    Struct(&'a str, &'a Value),
    /// A string, or bytes when `format: byte`.
    String(bool),
    /// An integer of this many bits.
    Integer(u32),
    /// A float.
    Number,
    /// A bool.
    Bool,
    /// A slice of items.
    Slice(&'a Value),
    /// A map of values.
    Map(&'a Value),
    /// An int-or-string.
    IntOrString,
}

impl<'a> Checker<'a> {
    fn expected(&self, schema: &'a Value) -> Expected<'a> {
        if let Some(name) = reference(schema) {
            return match self.components.get(name) {
                Some(component) if component["properties"].is_object() => {
                    Expected::Struct(name, component)
                }
                Some(component) => self.expected(component),
                None => Expected::Any,
            };
        }
        if schema["x-kubernetes-int-or-string"] == true {
            return Expected::IntOrString;
        }
        match schema["type"].as_str() {
            Some("string") => Expected::String(schema["format"] == "byte"),
            Some("integer") => Expected::Integer(if schema["format"] == "int32" { 32 } else { 64 }),
            Some("number") => Expected::Number,
            Some("boolean") => Expected::Bool,
            Some("array") => Expected::Slice(&schema["items"]),
            Some("object") if schema["additionalProperties"].is_object() => {
                Expected::Map(&schema["additionalProperties"])
            }
            _ => Expected::Any,
        }
    }

    /// Go's name of the type a schema decodes into.
    fn type_name(&self, schema: &'a Value) -> String {
        match self.expected(schema) {
            Expected::Any => reference(schema).map_or_else(|| "interface {}".into(), go_name),
            Expected::Struct(name, _) => go_name(name),
            Expected::String(false) => "string".into(),
            Expected::String(true) => "[]uint8".into(),
            Expected::Integer(bits) => format!("int{bits}"),
            Expected::Number => "float64".into(),
            Expected::Bool => "bool".into(),
            Expected::Slice(items) => format!("[]{}", self.type_name(items)),
            Expected::Map(values) => format!("map[string]{}", self.type_name(values)),
            Expected::IntOrString => "intstr.IntOrString".into(),
        }
    }

    /// The fields of a struct value.
    fn fields(&self, schema: &'a Value, object: &Value, context: &Context) -> Option<String> {
        let Value::Object(map) = object else {
            return None;
        };
        for (key, value) in map {
            let Some(property) = schema["properties"].get(key) else {
                continue;
            };
            let path = if context.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", context.path)
            };
            let inner = Context {
                name: context.name,
                path,
            };
            if let Some(mismatch) = self.value(property, value, &inner) {
                return Some(mismatch);
            }
        }
        None
    }

    /// A value of the field at `context`.
    fn value(&self, schema: &'a Value, value: &Value, context: &Context) -> Option<String> {
        if value.is_null() {
            return None;
        }
        let mismatch = |what: String| {
            Some(format!(
                "json: cannot unmarshal {what} into Go struct field {}.{} of type {}",
                struct_name(context.name),
                context.path,
                self.type_name(schema)
            ))
        };
        let kind = json_kind(value);
        match (self.expected(schema), value) {
            (Expected::Any, _) => None,
            (Expected::Struct(name, component), Value::Object(_)) => {
                let inner = Context {
                    name,
                    path: context.path.clone(),
                };
                self.fields(component, value, &inner)
            }
            (Expected::String(_), Value::String(_)) => None,
            (Expected::Integer(bits), Value::Number(n)) => {
                let fits = n
                    .as_i64()
                    .is_some_and(|i| bits == 64 || i32::try_from(i).is_ok());
                if fits {
                    None
                } else {
                    mismatch(format!("number {n}"))
                }
            }
            (Expected::Number, Value::Number(_)) => None,
            (Expected::Bool, Value::Bool(_)) => None,
            (Expected::IntOrString, Value::String(_) | Value::Number(_)) => None,
            (Expected::Slice(items), Value::Array(list)) => list
                .iter()
                .find_map(|item| self.value(items, item, context)),
            (Expected::Map(values), Value::Object(map)) => map
                .values()
                .find_map(|item| self.value(values, item, context)),
            _ => mismatch(kind.to_string()),
        }
    }
}

/// How Go's encoding/json names a JSON value in a type error.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use serde_json::json;

    fn message(group: &str, plural: &str, object: Value) -> Option<String> {
        let registry = Registry::with_builtins();
        let info = registry.get(group, "v1", plural).unwrap();
        check(&info, &object).err().map(|e| e.message)
    }

    #[test]
    fn the_first_mismatch_in_body_order_is_reported_as_go_reports_it() {
        let body = serde_json::from_str(r#"{"immutable": "yes", "data": {"a": 1}}"#).unwrap();
        let reported = message("", "configmaps", body).unwrap();
        assert!(
            reported.ends_with("Go struct field ConfigMap.immutable of type bool"),
            "{reported}"
        );
    }

    #[test]
    fn mismatches_are_worded_as_go_words_them() {
        assert_eq!(
            message("", "configmaps", json!({"data": {"a": 1}})).as_deref(),
            Some(
                "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
            )
        );
        assert_eq!(
            message("apps", "deployments", json!({"spec": {"replicas": "3"}})).as_deref(),
            Some(
                "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
            )
        );
        let containers = json!({"spec": {"template": {"spec": {"containers": [{"name": 5}]}}}});
        assert_eq!(
            message("apps", "deployments", containers).as_deref(),
            Some(
                "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.name of type string"
            )
        );
        let not_a_list = json!({"spec": {"template": {"spec": {"containers": {"name": "a"}}}}});
        assert!(message("apps", "deployments", not_a_list).unwrap().ends_with(
            "cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container"
        ));
        assert!(message("apps", "deployments", json!({"spec": {"replicas": 1.5}})).unwrap().ends_with(
            "cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
        ));
        assert!(
            message("", "secrets", json!({"data": {"a": true}}))
                .unwrap()
                .ends_with(
                    "cannot unmarshal bool into Go struct field Secret.data of type []uint8"
                )
        );
        assert!(message("", "configmaps", json!({"metadata": {"labels": {"a": 1}}})).unwrap().ends_with(
            "cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
        ));
    }

    #[test]
    fn well_typed_bodies_and_free_form_fields_pass() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"a": "b"}, "managedFields": [{"fieldsV1": {"f:x": {}}}]},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {"spec": {"containers": [{"name": "app", "image": "x",
                    "resources": {"limits": {"cpu": "1", "memory": 1024}}, "unknown": [1]}]}}}});
        assert_eq!(message("apps", "deployments", deployment), None);
    }
}
