//! How `kubectl apply --server-side` (the manager `kubectl`) meets client-side apply's
//! `kubectl.kubernetes.io/last-applied-configuration` annotation in kube-apiserver.

use serde_json::Value;

use super::compare::compare;
use super::fieldset::FieldSet;
use super::managed;
use super::schema::Node;
use super::walk::field_set;

/// The only manager whose applies read and write the annotation.
pub(super) const KUBECTL: &str = "kubectl";

const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn annotation(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/annotations")?
        .get(ANNOTATION)?
        .as_str()
        .filter(|text| !text.is_empty())
}

/// The fields of the annotation that still hold the value it records: conflicts on them are
/// forced, so that switching from client-side to server-side apply does not conflict.
pub(super) fn unchanged_fields(live: &Value, root: &Node) -> Option<FieldSet> {
    let last: Value = serde_json::from_str(annotation(live)?).ok()?;
    let set = field_set(&last, root, true).ok()?;
    let comparison = compare(&last, &managed::without(live), root);
    Some(set.difference(&comparison.changed().union(&comparison.removed)))
}

/// The applied object with the annotation rewritten from the applied configuration, when the
/// live object has the annotation.
pub(super) fn sync(live: Option<&Value>, mut object: Value, config: &Value) -> Value {
    if live.and_then(annotation).is_none() {
        return object;
    }
    let mut last = config.clone();
    if let Some(annotations) = last
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(ANNOTATION);
    }
    if let Some(annotations) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.insert(ANNOTATION.into(), Value::from(format!("{last}\n")));
    }
    object
}
