//! Walks of a value against its schema: list item identities, field sets, item removal.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::fieldset::FieldSet;
use super::path::{Path, Pe, display};
use super::schema::{KeyField, Node, Shape};

/// The identity of a list item: `k:{..}` for keyed lists, `v:..` for sets.
fn item_pe(item: &Value, keys: Option<&[KeyField]>) -> Result<Pe, String> {
    let Some(keys) = keys else {
        return Ok(Pe::value(item));
    };
    let Value::Object(fields) = item else {
        return Err("associative list with keys has an element that is not a map".into());
    };
    let mut key = Map::new();
    for field in keys {
        let value = match (fields.get(&field.name), &field.default) {
            (Some(v), _) if !v.is_null() => v.clone(),
            (_, Some(default)) => default.clone(),
            _ => {
                return Err(format!(
                    "associative list with keys has an element that omits key field {:?} (and doesn't have default value)",
                    field.name
                ));
            }
        };
        key.insert(field.name.clone(), value);
    }
    Ok(Pe::key(key))
}

/// The identities of the items of a set or keyed list, or an error naming the bad item.
/// Duplicates are an error unless `allow_duplicates` (live objects may hold them).
pub(super) fn item_pes(
    items: &[Value],
    keys: Option<&[KeyField]>,
    path: &[Pe],
    allow_duplicates: bool,
) -> Result<Vec<Pe>, String> {
    let mut seen = HashSet::new();
    let mut pes = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let pe = item_pe(item, keys).map_err(|e| format!("{}: element {i}: {e}", display(path)))?;
        if !seen.insert(pe.clone()) && !allow_duplicates {
            return Err(format!(
                "{}: duplicate entries for key {}",
                display(path),
                pe.display()
            ));
        }
        pes.push(pe);
    }
    Ok(pes)
}

/// The list items and their key definition, when `shape` is a set or keyed list.
pub(super) fn list_parts<'a>(shape: &Shape<'a>) -> Option<(Option<&'a [KeyField]>, &'a Node)> {
    match shape {
        Shape::Set(item) => Some((None, item)),
        Shape::Map(keys, item) => Some((Some(keys), item)),
        _ => None,
    }
}

/// The fields a value sets (structured-merge-diff's `ToFieldSet`). With `strict`, a list item
/// that cannot be identified is an error; otherwise its list is owned whole.
pub(super) fn field_set(value: &Value, node: &Node, strict: bool) -> Result<FieldSet, String> {
    let mut set = FieldSet::default();
    collect(value, node, &mut Vec::new(), &mut set, strict, false)?;
    Ok(set)
}

/// Every path in a value, intermediate objects and list items included, below `path`
/// (and `path` itself).
pub(super) fn all_paths(value: &Value, node: &Node, path: &mut Path, set: &mut FieldSet) {
    // Lenient walks never fail.
    let _ = collect(value, node, path, set, false, true);
    set.insert(path);
}

fn collect(
    value: &Value,
    node: &Node,
    path: &mut Path,
    set: &mut FieldSet,
    strict: bool,
    every: bool,
) -> Result<(), String> {
    let shape = node.shape(value);
    if let Shape::Object(object) = shape {
        let Value::Object(map) = value else {
            return Ok(());
        };
        for (key, child) in map {
            let (child_node, declared) = object.field(key);
            path.push(Pe::Field(key.clone()));
            collect(child, child_node, path, set, strict, every)?;
            let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
            if every || empty || !declared {
                set.insert(path);
            }
            path.pop();
        }
        return Ok(());
    }
    let (Some((keys, item_node)), Value::Array(items)) = (list_parts(&shape), value) else {
        set.insert(path);
        return Ok(());
    };
    match item_pes(items, keys, path, false) {
        Ok(pes) => {
            for (item, pe) in items.iter().zip(pes) {
                path.push(pe);
                collect(item, item_node, path, set, strict, every)?;
                set.insert(path);
                path.pop();
            }
            Ok(())
        }
        Err(e) if strict => Err(e),
        Err(_) => {
            set.insert(path);
            Ok(())
        }
    }
}

/// The value without the paths in `remove` (a path removes everything below it). `None` when
/// nothing is left of an object or list.
pub(super) fn remove_items(value: &Value, node: &Node, remove: &FieldSet) -> Option<Value> {
    let shape = node.shape(value);
    if let Shape::Object(object) = shape {
        let map = value.as_object()?;
        let mut out = Map::new();
        for (key, child) in map {
            let pe = Pe::Field(key.clone());
            if remove.members.contains(&pe) {
                continue;
            }
            let kept = match remove.child(&pe) {
                Some(below) => remove_items(child, object.field(key).0, below),
                None => Some(child.clone()),
            };
            if let Some(kept) = kept {
                out.insert(key.clone(), kept);
            }
        }
        return (!out.is_empty()).then_some(Value::Object(out));
    }
    let (Some((keys, item_node)), Value::Array(items)) = (list_parts(&shape), value) else {
        return Some(value.clone());
    };
    let Ok(pes) = item_pes(items, keys, &[], true) else {
        return Some(value.clone());
    };
    let kept: Vec<Value> = items
        .iter()
        .zip(pes)
        .filter(|(_, pe)| !remove.members.contains(pe))
        .filter_map(|(item, pe)| match remove.child(&pe) {
            Some(below) => remove_items(item, item_node, below),
            None => Some(item.clone()),
        })
        .collect();
    (!kept.is_empty()).then_some(Value::Array(kept))
}

/// The set with every declared field that has paths below it made a member too
/// (structured-merge-diff's `EnsureNamedFieldsAreMembers`).
pub(super) fn with_named_members(set: &FieldSet, node: &Node) -> FieldSet {
    let mut out = set.clone();
    for (pe, below) in &set.children {
        let child_node = match pe {
            Pe::Field(name) => {
                let (child_node, declared) = node.field(name);
                if declared {
                    out.members.insert(pe.clone());
                }
                child_node
            }
            _ => node.item(),
        };
        out.children
            .insert(pe.clone(), with_named_members(below, child_node));
    }
    out
}
