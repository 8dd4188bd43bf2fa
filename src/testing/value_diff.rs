//! Differences between an expected and an actual JSON value, one line per differing field
//! with its path (`spec.template.spec.containers[0].image: want nginx:1.27, got nginx`):
//! maps are compared key by key (order never matters), lists item by item. Values print as
//! YAML flow scalars or collections, so a line can be pasted back into a case file.

use serde_json::Value;

/// Every difference of `actual` from `expected`, as `path: want X, got Y` lines.
pub(super) fn differences(expected: &Value, actual: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    walk("", expected, actual, &mut lines);
    lines
}

fn walk(path: &str, expected: &Value, actual: &Value, lines: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, want_value) in want {
                let at = child_path(path, key);
                match got.get(key) {
                    Some(got_value) => walk(&at, want_value, got_value, lines),
                    None => lines.push(format!("{at}: missing, want {}", flow(want_value))),
                }
            }
            for (key, got_value) in got.iter().filter(|(key, _)| !want.contains_key(*key)) {
                let at = child_path(path, key);
                lines.push(format!("{at}: not expected, got {}", flow(got_value)));
            }
        }
        (Value::Array(want), Value::Array(got)) => {
            for (i, want_item) in want.iter().enumerate() {
                let at = format!("{path}[{i}]");
                match got.get(i) {
                    Some(got_item) => walk(&at, want_item, got_item, lines),
                    None => lines.push(format!("{at}: missing, want {}", flow(want_item))),
                }
            }
            for (i, got_item) in got.iter().enumerate().skip(want.len()) {
                lines.push(format!("{path}[{i}]: not expected, got {}", flow(got_item)));
            }
        }
        _ if expected != actual => {
            let at = if path.is_empty() { "(the value)" } else { path };
            lines.push(format!(
                "{at}: want {}, got {}",
                flow(expected),
                flow(actual)
            ));
        }
        _ => {}
    }
}

/// `parent.key`, or `parent["key"]` when the key holds a dot, slash or space.
fn child_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (parent.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{parent}.{key}"),
        (_, false) => format!("{parent}[{}]", Value::from(key)),
    }
}

/// A value on one line as YAML reads it: a plain string when YAML would not read it as
/// something else, JSON (which is YAML flow style) otherwise.
pub(super) fn flow(value: &Value) -> String {
    match value {
        Value::String(text) if is_plain(text) => text.clone(),
        _ => value.to_string(),
    }
}

/// Whether YAML reads `text` unquoted as this same string.
fn is_plain(text: &str) -> bool {
    let reserved = ["true", "false", "null", "yes", "no", "on", "off", "~"];
    let first = text.chars().next();
    !text.is_empty()
        && !reserved.contains(&text.to_ascii_lowercase().as_str())
        && text.parse::<f64>().is_err()
        && !first.is_some_and(|c| "-?:,[]{}#&*!|>'\"%@` ".contains(c))
        && !text.ends_with(' ')
        && !text.contains(": ")
        && !text.contains(" #")
        && !text.contains('\n')
}

/// `values` as a YAML block list indented by `indent` spaces, ready to paste under a key.
pub(super) fn yaml_list(values: &[Value], indent: usize) -> String {
    let text = serde_saphyr::to_string(&values).unwrap_or_else(|err| format!("# {err}\n"));
    let pad = " ".repeat(indent);
    text.lines().map(|line| format!("{pad}{line}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_difference_names_its_path_and_key_order_never_matters() {
        let want = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}},
            "metadata": {"labels": {"app.kubernetes.io/name": "web", "tier": "a"}}});
        let got = json!({"metadata": {"labels": {"tier": "a", "app.kubernetes.io/name": "api"}},
            "spec": {"template": {"spec": {"containers": [{"image": "nginx", "name": "app"}, {"name": "x"}]}}}});
        assert_eq!(
            differences(&want, &got),
            [
                "spec.template.spec.containers[0].image: want nginx:1.27, got nginx",
                r#"spec.template.spec.containers[1]: not expected, got {"name":"x"}"#,
                r#"metadata.labels["app.kubernetes.io/name"]: want web, got api"#,
            ]
        );
        let reordered =
            json!({"metadata": {"labels": {"tier": "a", "app.kubernetes.io/name": "web"}}});
        let original =
            json!({"metadata": {"labels": {"app.kubernetes.io/name": "web", "tier": "a"}}});
        assert!(differences(&original, &reordered).is_empty());
    }

    #[test]
    fn strings_yaml_would_misread_are_quoted() {
        assert_eq!(flow(&json!("nginx:1.27")), "nginx:1.27");
        assert_eq!(flow(&json!("1")), r#""1""#);
        assert_eq!(flow(&json!("true")), r#""true""#);
        assert_eq!(flow(&json!("")), r#""""#);
        assert_eq!(flow(&json!(1)), "1");
        assert_eq!(
            differences(&json!({"a": 1}), &json!({})),
            ["a: missing, want 1"]
        );
    }
}
