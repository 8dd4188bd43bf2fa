//! The Go struct order of the objects the server writes, for [`crate::json_order`]: kube
//! writes JSON with encoding/json, which keeps struct field order, not sorted keys.

use serde_json::{Map, Value};

use crate::json_order::Shape;

/// `metav1.StatusCause`.
static STATUS_CAUSE: Shape = Shape {
    fields: &[("reason", None), ("message", None), ("field", None)],
};

/// `metav1.StatusDetails`.
static STATUS_DETAILS: Shape = Shape {
    fields: &[
        ("name", None),
        ("group", None),
        ("kind", None),
        ("uid", None),
        ("causes", Some(&STATUS_CAUSE)),
        ("retryAfterSeconds", None),
    ],
};

/// `metav1.Status`.
static STATUS: Shape = Shape {
    fields: &[
        ("kind", None),
        ("apiVersion", None),
        ("metadata", None),
        ("status", None),
        ("message", None),
        ("reason", None),
        ("details", Some(&STATUS_DETAILS)),
        ("code", None),
    ],
};

/// The shape of an object from its `kind` and `apiVersion`, where the server knows it.
pub fn shape_of(object: &Map<String, Value>) -> Option<&'static Shape> {
    let kind = object.get("kind").and_then(Value::as_str)?;
    let api_version = object.get("apiVersion").and_then(Value::as_str)?;
    match (api_version, kind) {
        ("v1" | "meta.k8s.io/v1", "Status") => Some(&STATUS),
        _ => None,
    }
}
