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
fn equate_empty(value: &mut Value) {
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

/// A line diff of `expected` and `actual`: `-` lines are expected only, `+` lines actual only.
pub(super) fn diff(expected: &str, actual: &str) -> String {
    let color = std::env::var("COLOR_DIFF").is_ok_and(|v| v == "true");
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // Longest common subsequence table, from the end.
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let line = |sign: char, text: &str| match (color, sign) {
        (true, '-') => format!("\x1b[31m- {text}\x1b[0m\n"),
        (true, '+') => format!("\x1b[32m+ {text}\x1b[0m\n"),
        _ => format!("{sign} {text}\n"),
    };
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out += &line(' ', a[i]);
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out += &line('-', a[i]);
            i += 1;
        } else {
            out += &line('+', b[j]);
            j += 1;
        }
    }
    out
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
