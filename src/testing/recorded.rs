//! What one reconcile did, in the case file's own form: the `expect` block that `--update`
//! writes, and what a case's expectation is compared with.

use serde::Serialize;
use serde_json::{Value, json};

use super::diff::{Compare, normalized};
use super::recording::Observed;
use crate::client::Client;

/// What one reconcile did, in the form of a case's `expect` (what `--update` writes).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    /// Created objects, as sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub creates: Vec<Value>,
    /// Updated objects, without server-kept metadata.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub updates: Vec<Value>,
    /// Applied bodies, as sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub applies: Vec<Value>,
    /// Deleted objects, `{apiVersion, kind, namespace, name}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deletes: Vec<Value>,
    /// Status writes of the reconciled object: kind, name and status.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status_updates: Vec<Value>,
    /// Events, `{type, reason, message}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
    /// What the reconciled object tracks, `{apiVersion, kind, namespace, name}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tracks: Vec<Value>,
    /// Whether the reconcile returned an error.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
    /// The error, if any.
    #[serde(skip)]
    pub error_message: Option<String>,
}

/// What was observed, in the case file's form.
pub(super) fn record(observed: Observed, client: &Client) -> Recorded {
    let write = |v: Value| pasteable(&v, Compare::Write);
    Recorded {
        creates: observed.creates.into_iter().map(write).collect(),
        updates: observed.updates.into_iter().map(write).collect(),
        applies: observed.applies.into_iter().map(|a| a.body).collect(),
        deletes: observed
            .deletes
            .iter()
            .map(|d| flat_reference(client, &d.group, &d.kind, d.namespace.as_deref(), &d.name))
            .collect(),
        status_updates: observed.status_updates.iter().map(status_form).collect(),
        events: observed
            .events
            .iter()
            .map(|e| json!({"type": e.type_, "reason": e.reason, "message": e.message}))
            .collect(),
        ..Default::default()
    }
}

/// A written object as a case expects it: without the fields the comparison ignores, and
/// without the uid and generation the server chose (compared only when expected).
fn pasteable(value: &Value, compare: Compare) -> Value {
    let (_, mut actual) = normalized(&json!({}), value, compare);
    let Some(object) = actual.as_object_mut() else {
        return actual;
    };
    // apiVersion, kind and metadata first, as people write objects.
    let mut ordered = serde_json::Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = value.get(key) {
            ordered.insert(key.into(), v.clone());
        }
    }
    if let Some(metadata) = object.shift_remove("metadata") {
        ordered.insert("metadata".into(), metadata);
    }
    ordered.append(object);
    Value::Object(ordered)
}

/// A status write as a case expects it: the kind, name and status (each condition's
/// fields in the order people write them).
fn status_form(value: &Value) -> Value {
    let mut status = normalized(value, value, Compare::Status).1;
    let conditions = status.get_mut("conditions").and_then(Value::as_array_mut);
    for condition in conditions.into_iter().flatten() {
        if let Some(fields) = condition.as_object_mut() {
            let mut ordered = serde_json::Map::new();
            for key in ["type", "status", "reason", "message"] {
                if let Some(value) = fields.shift_remove(key) {
                    ordered.insert(key.into(), value);
                }
            }
            ordered.append(fields);
            *fields = ordered;
        }
    }
    let mut metadata = json!({"name": value["metadata"]["name"]});
    if let Some(namespace) = value["metadata"].get("namespace") {
        metadata["namespace"] = namespace.clone();
    }
    json!({
        "apiVersion": value["apiVersion"],
        "kind": value["kind"],
        "metadata": metadata,
        "status": status,
    })
}

/// `{apiVersion, kind, namespace, name}` of an object the client resolved (its version is
/// the one the client used; the group alone if it never resolved the kind).
pub(super) fn flat_reference(
    client: &Client,
    group: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> Value {
    let api_version = client
        .resolver()
        .kinds()
        .into_iter()
        .find(|r| r.gvk.group == group && r.gvk.kind == kind)
        .map(|r| r.gvk.api_version())
        .unwrap_or_else(|| group.to_string());
    let mut flat = json!({"apiVersion": api_version, "kind": kind});
    if let Some(namespace) = namespace {
        flat["namespace"] = Value::from(namespace);
    }
    flat["name"] = Value::from(name);
    flat
}
