//! Comparing what was expected with what happened: the fields ignored (reconciler.io's
//! Differ table) and a readable line diff, colored when `COLOR_DIFF=true`.

use serde_json::Value;

/// Which fields a comparison of objects ignores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Compare {
    /// Creates, updates and stashed objects: TypeMeta, lastTransitionTime,
    /// creationTimestamp and resourceVersion are ignored.
    Write,
    /// Status updates: only the status is compared (without lastTransitionTime).
    Status,
    /// The resulting resource: TypeMeta and lastTransitionTime are ignored.
    Resource,
}

/// Server-owned metadata the embedded server always sets; compared only when expected.
const SERVER_OWNED: [&str; 3] = ["uid", "generation", "managedFields"];

/// The two objects as compared under `compare`.
pub(super) fn normalized(expected: &Value, actual: &Value, compare: Compare) -> (Value, Value) {
    let mut expected = expected.clone();
    let mut actual = actual.clone();
    for field in SERVER_OWNED {
        if expected["metadata"].get(field).is_none()
            && let Some(meta) = actual.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove(field);
        }
    }
    for value in [&mut expected, &mut actual] {
        strip(value, compare);
        equate_empty(value);
    }
    if compare == Compare::Status {
        expected = expected.get("status").cloned().unwrap_or_default();
        actual = actual.get("status").cloned().unwrap_or_default();
    }
    (expected, actual)
}

fn strip(value: &mut Value, compare: Compare) {
    let Some(object) = value.as_object_mut() else {
        return;
    };
    object.remove("apiVersion");
    object.remove("kind");
    if compare == Compare::Write
        && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("creationTimestamp");
        meta.remove("resourceVersion");
    }
    let conditions = object
        .get_mut("status")
        .and_then(|s| s.get_mut("conditions"))
        .and_then(Value::as_array_mut);
    for condition in conditions.into_iter().flatten() {
        if let Some(condition) = condition.as_object_mut() {
            condition.remove("lastTransitionTime");
        }
    }
}

/// Drops nulls, empty objects and empty arrays from objects (cmpopts.EquateEmpty).
pub(super) fn equate_empty(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.values_mut().for_each(equate_empty);
            map.retain(|_, v| !is_empty(v));
        }
        Value::Array(items) => items.iter_mut().for_each(equate_empty),
        _ => {}
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// Pretty JSON for messages.
pub(super) fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// `value` as YAML, for refs a test shows.
pub(super) fn yaml(value: &Value) -> String {
    serde_saphyr::to_string(value).unwrap_or_else(|_| pretty(value))
}

/// A line diff of `expected` and `actual`: `-` lines are expected only, `+` lines actual only.
pub(super) fn diff(expected: &str, actual: &str) -> String {
    crate::object::line_diff(expected, actual)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timing_fields_are_ignored_and_changes_are_marked() {
        let expected = json!({"kind": "A", "metadata": {"name": "x"}, "status": {"conditions": [{"type": "Ready"}]}});
        let actual = json!({"metadata": {"name": "x", "uid": "u", "resourceVersion": "1", "labels": {}},
            "status": {"conditions": [{"type": "Ready", "lastTransitionTime": "now"}]}});
        let (e, a) = normalized(&expected, &actual, Compare::Write);
        assert_eq!(e, a);
        let (e, a) = normalized(&expected, &actual, Compare::Resource);
        assert_ne!(e, a);
        let text = diff("a\nb\nc", "a\nx\nc");
        assert_eq!(text, "  a\n- b\n+ x\n  c\n");
    }
}
