//! `x-kubernetes-list-type: set` and `map`: duplicate elements (or keys) are refused, as
//! apiextensions-apiserver's `listtype` validation refuses them, with the value printed as
//! Go prints it (`map[string]interface {}{"name":"http"}`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::node::Node;
use super::render::{field_of, go_float, go_quote};
use crate::error::Cause;

/// Duplicates in every set and map list of `value`, one cause each (the first repeat).
pub(super) fn validate(node: &Node, value: &Value, path: &str, out: &mut Vec<Cause>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                if let Some(property) = node.properties.get(key) {
                    let child = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    validate(property, item, &child, out);
                } else if let Some(additional) = &node.additional {
                    validate(additional, item, &format!("{path}[{key}]"), out);
                }
            }
        }
        Value::Array(items) => {
            match node.list_type.as_deref() {
                Some("set") => duplicates(items, path, out),
                Some("map") => map_duplicates(node, items, path, out),
                _ => {}
            }
            if let Some(item_node) = &node.items {
                for (i, item) in items.iter().enumerate() {
                    validate(item_node, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// Reports the second occurrence of every repeated value of `values`.
fn duplicates(values: &[Value], path: &str, out: &mut Vec<Cause>) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, value) in values.iter().enumerate() {
        let times = seen.entry(crate::json_order::canonical(value)).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(Cause {
                reason: "FieldValueDuplicate",
                field: field_of(&format!("{path}[{i}]")),
                message: format!("Duplicate value: {}", error_value(value)),
            });
        }
    }
}

/// A list-map's keys must be unique; elements must be objects.
fn map_duplicates(node: &Node, items: &[Value], path: &str, out: &mut Vec<Cause>) {
    for (i, item) in items.iter().enumerate() {
        if !item.is_null() && !item.is_object() {
            out.push(Cause::invalid(
                &field_of(&format!("{path}[{i}]")),
                item,
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|item| {
            let key: Map<String, Value> = node
                .list_map_keys
                .iter()
                .filter_map(|k| item.get(k).map(|v| (k.clone(), v.clone())))
                .collect();
            Value::Object(key)
        })
        .collect();
    duplicates(&keys, path, out);
}

/// A bad value as `field.Error` prints it: `%q` for strings, `%v` for numbers and bools,
/// Go syntax (`%#v`) for maps and lists.
fn error_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Number(_) | Value::Bool(_) => go_sharp(value),
        Value::Null => "null".into(),
        _ => go_sharp(value),
    }
}

/// `%#v` of a value decoded from JSON into `interface{}`.
fn go_sharp(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_sharp).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let entries: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_sharp(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", entries.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_print_as_go_prints_them() {
        assert_eq!(
            error_value(&json!({"name": "http", "port": 80})),
            r#"map[string]interface {}{"name":"http", "port":80}"#
        );
        assert_eq!(error_value(&json!({})), "map[string]interface {}{}");
        assert_eq!(error_value(&json!("a")), "\"a\"");
        assert_eq!(error_value(&json!(3)), "3");
        assert_eq!(error_value(&json!(["a", 1])), r#"[]interface {}{"a", 1}"#);
    }
}
