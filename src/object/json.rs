//! Reading a `DynamicObject` from JSON without serde's flatten buffering.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DynamicObject, TypeMeta};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The `DynamicObject` of a JSON object, as `serde_json::from_value` reads it, for a
/// fraction of the cost: kube's `DynamicObject` flattens its type fields and body, so serde
/// buffers and copies every key and value of the object once more before reading them;
/// here the body is moved, and only `metadata` is deserialized. Objects of unusual shape
/// (`apiVersion` without `kind`, a type field that is not a string, a `metadata` that is not
/// an object) are read by `serde_json::from_value`, so the result (or error) is always its.
pub fn from_json(value: Value) -> Result<DynamicObject, serde_json::Error> {
    let mut fields = match value {
        Value::Object(fields) if is_common_shape(&fields) => fields,
        other => return serde_json::from_value(other),
    };
    // One pass moves the type fields and metadata out (no per-key hashing or shifting).
    let (mut api_version, mut kind, mut metadata) = (None, None, None);
    fields.retain(|key, value| {
        let slot = match key.as_str() {
            "apiVersion" => &mut api_version,
            "kind" => &mut kind,
            "metadata" => &mut metadata,
            _ => return true,
        };
        *slot = Some(value.take());
        false
    });
    let types = match (api_version, kind) {
        (Some(Value::String(api_version)), Some(Value::String(kind))) => {
            Some(TypeMeta { api_version, kind })
        }
        _ => None,
    };
    let metadata = match metadata {
        Some(metadata) => ObjectMeta::deserialize(metadata)?,
        None => ObjectMeta::default(),
    };
    Ok(DynamicObject {
        types,
        metadata,
        data: Value::Object(fields),
    })
}

/// Type fields both strings or both absent, and `metadata` an object or absent.
fn is_common_shape(fields: &Map<String, Value>) -> bool {
    let (mut api_version, mut kind, mut metadata) = (None, None, None);
    for (key, value) in fields {
        match key.as_str() {
            "apiVersion" => api_version = Some(value.is_string()),
            "kind" => kind = Some(value.is_string()),
            "metadata" => metadata = Some(value.is_object()),
            _ => {}
        }
    }
    let types = matches!((api_version, kind), (Some(true), Some(true)) | (None, None));
    types && metadata != Some(false)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Objects of every shape `from_json` reads itself or hands to serde.
    fn objects() -> Vec<Value> {
        vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns",
                "labels": {"app": "x"}, "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Widget",
                "name": "w", "uid": "u", "controller": true}]}, "data": {"b": "1", "a": "2"}}),
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {}, "metadata": {}}),
            json!({"spec": {"replicas": 3}, "status": null}),
            json!({}),
            json!({"apiVersion": "v1", "metadata": {"name": "no-kind"}, "spec": 1}),
            json!({"kind": "NoVersion", "spec": 1}),
            json!({"apiVersion": 5, "kind": "K", "spec": 1}),
            json!({"kind": "K", "apiVersion": 5, "spec": 1}),
            json!({"apiVersion": "v1", "kind": "K", "metadata": null}),
            json!({"apiVersion": "v1", "kind": "K", "metadata": "text"}),
            json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": 5}}),
            json!({"apiVersion": "v1", "kind": "K", "metadata": {"labels": ["a"]}}),
            json!({"apiVersion": "v1", "kind": "K", "metadata": {"creationTimestamp": "yesterday"}}),
            json!({"apiVersion": "v1", "kind": "K", "metadata": {"generation": 2, "unknown": true}}),
            json!([1, 2]),
            json!("text"),
            json!(null),
        ]
    }

    #[test]
    fn reads_every_object_as_serde_does() {
        for object in objects() {
            let expected = serde_json::from_value::<DynamicObject>(object.clone());
            let read = from_json(object.clone());
            match (&read, &expected) {
                (Ok(read), Ok(expected)) => {
                    assert_eq!(read, expected, "{object}");
                    let written = serde_json::to_string(read).unwrap();
                    assert_eq!(
                        written,
                        serde_json::to_string(expected).unwrap(),
                        "{object}"
                    );
                }
                (Err(read), Err(expected)) => {
                    assert_eq!(read.to_string(), expected.to_string(), "{object}")
                }
                _ => panic!("{object}: read {read:?}, serde {expected:?}"),
            }
        }
    }
}
