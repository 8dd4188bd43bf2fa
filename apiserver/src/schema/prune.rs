//! Pruning of unknown fields, as apiextensions-apiserver's structural pruning does it.

use serde_json::{Map, Value};

use super::node::Node;

/// Fields an object (and an embedded resource) keeps whatever its schema says.
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Prunes a whole object, which is treated as an embedded resource; returns the pruned
/// paths, sorted.
pub(super) fn prune_object(object: &mut Value, root: &Node) -> Vec<String> {
    let mut pruned = Vec::new();
    prune(object, Some(root), true, "", &mut pruned);
    pruned.sort();
    pruned
}

/// Prunes a schema's `default` against the schema itself.
pub(super) fn prune_default(default: &mut Value, node: &Node) {
    prune(default, Some(node), node.embedded, "", &mut Vec::new());
}

fn child_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.into()
    } else {
        format!("{parent}.{key}")
    }
}

/// Whether an embedded resource keeps this field as it is: apiVersion and kind when
/// they are strings, metadata when it is an object (or null).
fn keeps_meta(key: &str, value: &Value) -> bool {
    match key {
        "apiVersion" | "kind" => value.is_string(),
        "metadata" => value.is_object() || value.is_null(),
        _ => false,
    }
}

fn prune(
    value: &mut Value,
    node: Option<&Node>,
    embedded: bool,
    path: &str,
    out: &mut Vec<String>,
) {
    if let Some(node) = node.filter(|n| n.preserve_unknown) {
        return skip_prune(value, node, embedded, path, out);
    }
    match value {
        Value::Object(map) => prune_map(map, node, embedded, path, out),
        Value::Array(items) => {
            let item_node = node.and_then(|n| n.items.as_deref());
            for (i, item) in items.iter_mut().enumerate() {
                let embedded = item_node.is_some_and(|n| n.embedded);
                prune(item, item_node, embedded, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn prune_map(
    map: &mut Map<String, Value>,
    node: Option<&Node>,
    embedded: bool,
    path: &str,
    out: &mut Vec<String>,
) {
    let Some(node) = node else {
        out.extend(map.keys().map(|k| child_path(path, k)));
        map.clear();
        return;
    };
    let mut unknown = Vec::new();
    for (key, value) in map.iter_mut() {
        if embedded && keeps_meta(key, value) {
            continue;
        }
        let sub = node.properties.get(key).or(node.additional.as_deref());
        match sub {
            Some(sub) => prune(value, Some(sub), sub.embedded, &child_path(path, key), out),
            None => unknown.push(key.clone()),
        }
    }
    for key in unknown {
        map.remove(&key);
        if !(path.is_empty() && META_FIELDS.contains(&key.as_str())) {
            out.push(child_path(path, &key));
        }
    }
}

/// Under `x-kubernetes-preserve-unknown-fields`: unknown fields stay, known ones are pruned
/// by their own schemas.
fn skip_prune(value: &mut Value, node: &Node, embedded: bool, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if embedded && META_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                if let Some(sub) = node.properties.get(key).or(node.additional.as_deref()) {
                    prune(value, Some(sub), sub.embedded, &child_path(path, key), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = node.items.as_deref() {
                for (i, item) in items.iter_mut().enumerate() {
                    let item_path = format!("{path}[{i}]");
                    skip_prune(item, item_node, item_node.embedded, &item_path, out);
                }
            }
        }
        _ => {}
    }
}
