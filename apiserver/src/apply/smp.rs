//! Strategic merge patch (`application/strategic-merge-patch+json`), as apimachinery's
//! `StrategicMergeMapPatch` applies it on the server.

use serde_json::{Map, Value};

use super::schema::{MergeSchema, Node};
use crate::error::{ApiError, ApiResult};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Strategic merge patch of `patch` onto `original`: maps merge recursively, `null` deletes,
/// lists with a merge key (from `schema`) merge by key, other lists replace; with the directives
/// `$patch` (delete, replace, merge), `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
/// `$setElementOrder/<field>` that client-side `kubectl apply` sends. A patch that cannot be
/// applied is a `400 BadRequest`.
pub fn strategic_merge(original: &Value, patch: &Value, schema: &MergeSchema) -> ApiResult<Value> {
    let (Value::Object(original), Value::Object(patch)) = (original, patch) else {
        return Err(ApiError::bad_request(
            "a strategic merge patch must be a JSON object",
        ));
    };
    merge_map(original.clone(), patch.clone(), &schema.root)
        .map(Value::Object)
        .map_err(ApiError::bad_request)
}

type Result<T> = std::result::Result<T, String>;

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    node: &Node,
) -> Result<Map<String, Value>> {
    if let Some(directive) = patch.remove(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => Ok(patch),
            Some("delete") => Ok(Map::new()),
            _ => Err(format!("Unable to find patch type {directive} in map")),
        };
    }
    retain_keys(&mut original, &mut patch)?;
    set_element_orders(&mut original, &mut patch, node)?;
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            delete_from_primitive_list(&mut original, field, &value)?;
            continue;
        }
        if value.is_null() {
            original.remove(&key);
            continue;
        }
        let (child, _) = node.field(&key);
        let merged = match (original.remove(&key), value) {
            (Some(Value::Object(o)), Value::Object(p)) => Value::Object(merge_map(o, p, child)?),
            (Some(Value::Array(o)), Value::Array(p)) => Value::Array(merge_list(o, p, child)?),
            (_, value) => drop_nulls(value),
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// A new value as it is stored: nulls inside maps mean nothing.
fn drop_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, drop_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(drop_nulls).collect()),
        other => other,
    }
}

/// `$retainKeys`: drop the original's keys that are not listed.
fn retain_keys(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Result<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let bad = || "doesn't match the retainKeys directive format".to_string();
    let retain: Vec<&str> = retain
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|v| v.as_str().ok_or_else(bad))
        .collect::<Result<_>>()?;
    let listed = |k: &str| retain.contains(&k);
    for (key, value) in patch.iter() {
        let directive =
            key.starts_with(DELETE_FROM_PRIMITIVE_LIST) || key.starts_with(SET_ELEMENT_ORDER);
        if !value.is_null() && !directive && !listed(key) {
            return Err(bad());
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// `$deleteFromPrimitiveList/<field>`: remove the listed values from a list of scalars.
fn delete_from_primitive_list(
    original: &mut Map<String, Value>,
    field: &str,
    value: &Value,
) -> Result<()> {
    let remove = value
        .as_array()
        .ok_or("doesn't match the $deleteFromPrimitiveList format")?;
    if let Some(Value::Array(items)) = original.get_mut(field) {
        items.retain(|item| !remove.contains(item));
    }
    Ok(())
}

/// `$setElementOrder/<field>`: merge the list (if patched) and order it as listed.
fn set_element_orders(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    node: &Node,
) -> Result<()> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in keys {
        let Some(order) = patch.remove(&key) else {
            continue;
        };
        let field = &key[SET_ELEMENT_ORDER.len()..];
        let order = order
            .as_array()
            .cloned()
            .ok_or("doesn't match the $setElementOrder list format")?;
        let (child, _) = node.field(field);
        let merge_key = child.smp_list().1;
        let list = |v: Option<Value>| match v {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(format!("expected a list for {field}, got {other}")),
        };
        let original_list = list(original.get(field).cloned())?;
        let patch_list = list(patch.remove(field))?;
        validate_order(patch_list.as_deref().unwrap_or(&[]), &order, merge_key)?;
        let server_order = original_list.clone().unwrap_or_default();
        let merged = match (original_list, patch_list) {
            (Some(o), None) => o,
            (None, Some(p)) => p,
            (Some(o), Some(p)) => merge_list(o, p, child)?,
            (None, None) => continue,
        };
        let (in_patch, server_only): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|item| index(&order, item, merge_key).is_some());
        let sorted = normalize_order(in_patch, server_only, &order, &server_order, merge_key);
        original.insert(field.to_string(), Value::Array(sorted));
    }
    Ok(())
}

/// The patch list's items must appear in the `$setElementOrder` list in the same order.
fn validate_order(patch: &[Value], order: &[Value], merge_key: Option<&str>) -> Result<()> {
    let items: Vec<&Value> = patch
        .iter()
        .filter(|item| item.get(DIRECTIVE).is_none())
        .collect();
    let mut at = 0;
    for item in order {
        if at < items.len() && merge_value(items[at], merge_key) == merge_value(item, merge_key) {
            at += 1;
        }
    }
    if at < items.len() {
        return Err("The order in patch list doesn't match $setElementOrder list".into());
    }
    Ok(())
}

/// Merges two lists by the node's strategy: by merge key, as a set of scalars, or replacing.
fn merge_list(original: Vec<Value>, patch: Vec<Value>, node: &Node) -> Result<Vec<Value>> {
    let (merge, merge_key) = node.smp_list();
    if !merge {
        return Ok(patch.into_iter().map(drop_nulls).collect());
    }
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let maps = original.iter().chain(&patch).all(Value::is_object);
    let scalars = !original
        .iter()
        .chain(&patch)
        .any(|v| v.is_object() || v.is_array());
    if maps {
        let merge_key = merge_key.ok_or("cannot merge lists without merge key")?;
        merge_list_of_maps(original, patch, merge_key, node.item())
    } else if scalars {
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        let merged = deduplicate(both);
        let (in_patch, server_only): (Vec<Value>, Vec<Value>) =
            merged.into_iter().partition(|item| patch.contains(item));
        Ok(normalize_order(
            in_patch,
            server_only,
            &patch,
            &original,
            None,
        ))
    } else {
        Err("list element types are not identical".into())
    }
}

fn merge_list_of_maps(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    item: &Node,
) -> Result<Vec<Value>> {
    let mut items = Vec::new();
    let mut replace = false;
    for entry in patch {
        match entry.get(DIRECTIVE).map(|d| d.as_str()) {
            None => items.push(entry),
            Some(Some("delete")) => {
                let key = entry
                    .get(merge_key)
                    .ok_or_else(|| no_merge_key(&entry, merge_key))?;
                original.retain(|o| o.get(merge_key) != Some(key));
            }
            Some(Some("replace")) => replace = true,
            Some(Some("merge")) => {
                return Err("merging lists cannot yet be specified in the patch".into());
            }
            Some(_) => return Err(format!("Unable to find patch type in {entry}")),
        }
    }
    if replace {
        return Ok(items.into_iter().map(drop_nulls).collect());
    }
    let server_order = original.clone();
    for entry in &items {
        let key = entry
            .get(merge_key)
            .ok_or_else(|| no_merge_key(entry, merge_key))?;
        match original.iter().position(|o| o.get(merge_key) == Some(key)) {
            Some(at) => {
                let (Value::Object(o), Value::Object(p)) = (original[at].take(), entry.clone())
                else {
                    return Err("list items must be maps".into());
                };
                original[at] = Value::Object(merge_map(o, p, item)?);
            }
            None => original.push(drop_nulls(entry.clone())),
        }
    }
    let (in_patch, server_only): (Vec<Value>, Vec<Value>) = original
        .into_iter()
        .partition(|o| index(&items, o, Some(merge_key)).is_some());
    Ok(normalize_order(
        in_patch,
        server_only,
        &items,
        &server_order,
        Some(merge_key),
    ))
}

fn no_merge_key(entry: &Value, merge_key: &str) -> String {
    format!("map: {entry} does not contain declared merge key: {merge_key}")
}

/// The value items are matched by: the merge key's value, or the item itself.
fn merge_value<'a>(item: &'a Value, merge_key: Option<&str>) -> Option<&'a Value> {
    match merge_key {
        Some(key) => item.get(key),
        None => Some(item),
    }
}

fn index(list: &[Value], item: &Value, merge_key: Option<&str>) -> Option<usize> {
    let wanted = merge_value(item, merge_key);
    list.iter()
        .position(|v| merge_value(v, merge_key) == wanted)
}

/// apimachinery's `deduplicateScalars`: a later duplicate is replaced by the last item.
fn deduplicate(mut items: Vec<Value>) -> Vec<Value> {
    let mut i = 0;
    while i < items.len() {
        let mut j = i + 1;
        while j < items.len() {
            if items[i] == items[j] {
                items.swap_remove(j);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    items
}

/// Sorts the patched items by `patch_order` and the server-only items by `server_order`, then
/// interleaves them, keeping server-only items before patched items that followed them on the
/// server (apimachinery's `normalizeElementOrder`).
fn normalize_order(
    mut patched: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
) -> Vec<Value> {
    let by = |order: &[Value], v: &Value| index(order, v, merge_key).unwrap_or(usize::MAX);
    patched.sort_by_key(|v| by(patch_order, v));
    server_only.sort_by_key(|v| by(server_order, v));
    let mut out = Vec::with_capacity(patched.len() + server_only.len());
    let mut patched = patched.into_iter().peekable();
    let mut server_only = server_only.into_iter().peekable();
    loop {
        let take_server = match (server_only.peek(), patched.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(s), Some(p)) => match (
                index(server_order, s, merge_key),
                index(server_order, p, merge_key),
            ) {
                (Some(si), Some(pi)) => si < pi,
                _ => false,
            },
        };
        let next = if take_server {
            server_only.next()
        } else {
            patched.next()
        };
        out.extend(next);
    }
    out
}
