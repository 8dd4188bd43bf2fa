//! Defaulting, as apiextensions-apiserver's structural defaulting does it.

use serde_json::Value;

use super::node::Node;

/// Removes nulls of fields that are not `nullable` and have no `default`
/// (kube-apiserver's `PruneNonNullableNullsWithoutDefaults`).
pub(super) fn drop_disallowed_nulls(value: &mut Value, node: &Node) {
    match value {
        Value::Object(map) => {
            map.retain(|key, v| {
                let Some(sub) = node.properties.get(key).or(node.additional.as_deref()) else {
                    return true;
                };
                if v.is_null() && !sub.nullable && sub.default.is_none() {
                    return false;
                }
                drop_disallowed_nulls(v, sub);
                true
            });
        }
        Value::Array(items) => {
            if let Some(item_node) = node.items.as_deref() {
                items
                    .iter_mut()
                    .for_each(|item| drop_disallowed_nulls(item, item_node));
            }
        }
        _ => {}
    }
}

/// Whether `value` is a null that `node` does not allow, so that its default replaces it.
fn replaceable(value: &Value, node: &Node) -> bool {
    value.is_null() && !node.nullable
}

/// Applies defaults: missing properties (and non-nullable nulls) take their schema's
/// default, array items and map values that are non-nullable nulls take the item's or
/// value's default, and defaulting goes on inside what was defaulted.
pub(super) fn apply(value: &mut Value, node: &Node) {
    match value {
        Value::Object(map) => {
            for (key, property) in &node.properties {
                let Some(default) = &property.default else {
                    continue;
                };
                match map.get_mut(key) {
                    Some(v) if !replaceable(v, property) => {}
                    Some(v) => *v = default.clone(),
                    None => {
                        map.insert(key.clone(), default.clone());
                    }
                }
            }
            for (key, v) in map.iter_mut() {
                if let Some(property) = node.properties.get(key) {
                    apply(v, property);
                } else if let Some(additional) = node.additional.as_deref() {
                    fill_null(v, additional);
                    apply(v, additional);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = node.items.as_deref() {
                for item in items {
                    fill_null(item, item_node);
                    apply(item, item_node);
                }
            }
        }
        _ => {}
    }
}

fn fill_null(value: &mut Value, node: &Node) {
    if let Some(default) = node.default.as_ref().filter(|_| replaceable(value, node)) {
        *value = default.clone();
    }
}
