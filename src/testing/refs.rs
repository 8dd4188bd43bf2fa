//! What a test expects the code under test to have done: writes named by kind, events, tracks.

use kube::api::DynamicObject;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::object::{Gvk, ObjectKey};
use crate::tracker::Reference;

/// A patch request: where it went, its content type and its exact body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchRef {
    /// The API group ("" for core).
    pub group: String,
    /// The kind (not the plural).
    pub kind: String,
    /// The namespace, if namespaced.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// The subresource ("status"), if any.
    pub subresource: Option<String>,
    /// The content type, e.g. `application/merge-patch+json`.
    pub patch_type: String,
    /// The body as sent. A test compares it as JSON (key order does not matter) when it is
    /// JSON, else byte for byte.
    #[serde(serialize_with = "as_json")]
    pub patch: String,
}

/// A patch body as the JSON it holds (so bodies compare and show as values), or as the
/// string it is when it is not JSON.
fn as_json<S: Serializer>(patch: &str, serializer: S) -> Result<S::Ok, S::Error> {
    match serde_json::from_str::<Value>(patch) {
        Ok(value) => value.serialize(serializer),
        Err(_) => serializer.serialize_str(patch),
    }
}

/// The content type of a JSON merge patch.
pub const MERGE_PATCH: &str = "application/merge-patch+json";

impl PatchRef {
    /// A merge patch of `object`'s kind and key with `patch` as its body (compared as JSON
    /// when it is JSON).
    pub fn merge(object: &DynamicObject, patch: &str) -> Self {
        let (gvk, key) = identity(object);
        Self {
            group: gvk.group,
            kind: gvk.kind,
            namespace: key.namespace,
            name: key.name,
            subresource: None,
            patch_type: MERGE_PATCH.into(),
            patch: patch.into(),
        }
    }
}

/// A delete request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteRef {
    /// The API group ("" for core).
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The namespace, if namespaced.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl DeleteRef {
    /// The delete of `object`.
    pub fn of(object: &DynamicObject) -> Self {
        let (gvk, key) = identity(object);
        Self {
            group: gvk.group,
            kind: gvk.kind,
            namespace: key.namespace,
            name: key.name,
        }
    }
}

/// A delete-collection request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteCollectionRef {
    /// The API group ("" for core).
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The namespace, if namespaced.
    pub namespace: Option<String>,
    /// The label selector, as sent (an empty one is `None`).
    pub labels: Option<String>,
    /// The field selector, as sent (an empty one is `None`).
    pub fields: Option<String>,
}

/// A server-side apply request.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyRef {
    /// The API group ("" for core).
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The namespace, if namespaced.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// The field manager.
    pub field_manager: Option<String>,
    /// The applied configuration.
    pub body: Value,
}

impl ApplyRef {
    /// The server-side apply of `desired` (its kind, key and whole body) by
    /// `field_manager`. `ChildReconciler::new` applies its children with the field manager
    /// `{Kind}ApplyingObjectManager` (e.g. `ConfigMapApplyingObjectManager`) unless its
    /// object manager is given another.
    pub fn of(desired: &DynamicObject, field_manager: impl Into<String>) -> Self {
        let (gvk, key) = identity(desired);
        Self {
            group: gvk.group,
            kind: gvk.kind,
            namespace: key.namespace,
            name: key.name,
            field_manager: Some(field_manager.into()),
            body: serde_json::to_value(desired).expect("a DynamicObject is JSON"),
        }
    }
}

/// An event recorded about an object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The regarding object's kind.
    pub kind: String,
    /// The regarding object's namespace.
    pub namespace: Option<String>,
    /// The regarding object's name.
    pub name: String,
    /// `Normal` or `Warning`.
    pub type_: String,
    /// The reason, e.g. `StatusUpdated`.
    pub reason: String,
    /// The message (the event's note).
    pub message: String,
}

impl Event {
    /// An event of `type_` about `object`.
    pub fn new(
        object: &DynamicObject,
        type_: &str,
        reason: &str,
        message: impl Into<String>,
    ) -> Self {
        let (gvk, key) = identity(object);
        Self {
            kind: gvk.kind,
            namespace: key.namespace,
            name: key.name,
            type_: type_.into(),
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// A Normal event about `object`.
    pub fn normal(object: &DynamicObject, reason: &str, message: impl Into<String>) -> Self {
        Self::new(object, "Normal", reason, message)
    }

    /// A Warning event about `object`.
    pub fn warning(object: &DynamicObject, reason: &str, message: impl Into<String>) -> Self {
        Self::new(object, "Warning", reason, message)
    }
}

/// That `tracker` watches what `reference` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackRequest {
    /// The observing (reconciled) object.
    pub tracker: ObjectKey,
    /// What it watches.
    pub reference: Reference,
}

impl TrackRequest {
    /// That `by` watches `tracked` (by name).
    pub fn new(tracked: &DynamicObject, by: &DynamicObject) -> Self {
        let (gvk, key) = identity(tracked);
        Self {
            tracker: identity(by).1,
            reference: Reference::named(&gvk.group_kind(), &key),
        }
    }
}

/// The kind and key of a test object; test objects must have both.
fn identity(object: &DynamicObject) -> (Gvk, ObjectKey) {
    let gvk = Gvk::of(object).unwrap_or_else(|err| panic!("test object has no kind: {err}"));
    let key = ObjectKey::of(object).unwrap_or_else(|err| panic!("test object has no name: {err}"));
    (gvk, key)
}
