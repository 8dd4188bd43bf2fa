//! The fields added, modified and removed between two versions of an object.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::fieldset::FieldSet;
use super::path::{Path, Pe};
use super::schema::{Node, Shape};
use super::walk::{all_paths, item_pes, list_parts};

/// What changed from one object to another (structured-merge-diff's `Comparison`).
#[derive(Debug, Default)]
pub(super) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// Added and modified fields.
    pub fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }

    /// The comparison without the paths in (or below) `ignored`.
    pub fn excluding(self, ignored: &FieldSet) -> Comparison {
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

static NULL: Value = Value::Null;
static EMPTY: Vec<Value> = Vec::new();

/// Compares `old` with `new` at the root of `node`.
pub(super) fn compare(old: &Value, new: &Value, node: &Node) -> Comparison {
    let mut out = Comparison::default();
    walk(Some(old), Some(new), node, &mut Vec::new(), &mut out);
    out
}

/// Whether the value is walked as an object or a list (`None`: a leaf).
#[derive(PartialEq)]
enum Granular {
    Object,
    List,
}

fn granular(value: Option<&Value>, node: &Node) -> Option<Granular> {
    match node.shape(value?) {
        Shape::Object(_) => Some(Granular::Object),
        Shape::Set(_) | Shape::Map(..) => Some(Granular::List),
        Shape::Leaf => None,
    }
}

fn walk(
    old: Option<&Value>,
    new: Option<&Value>,
    node: &Node,
    path: &mut Path,
    out: &mut Comparison,
) {
    if old.is_none() && new.is_none() {
        return;
    }
    let absent_or_null = |v: Option<&Value>| v.is_none_or(Value::is_null);
    let (g_old, g_new) = (granular(old, node), granular(new, node));
    let kind = match (g_old, g_new) {
        (Some(a), Some(b)) if a == b => Some(a),
        (Some(a), None) if absent_or_null(new) => Some(a),
        (None, Some(b)) if absent_or_null(old) => Some(b),
        _ => None,
    };
    match kind {
        Some(Granular::Object) => walk_object(old, new, node, path, out),
        Some(Granular::List) => {
            if !walk_list(old, new, node, path, out) {
                leaf(old, new, out, path);
            }
        }
        None => {
            leaf(old, new, out, path);
            return;
        }
    }
    if old.is_none() {
        out.added.insert(path);
    } else if new.is_none() {
        out.removed.insert(path);
    }
}

fn leaf(old: Option<&Value>, new: Option<&Value>, out: &mut Comparison, path: &Path) {
    match (old, new) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(a), Some(b)) if a != b => out.modified.insert(path),
        _ => {}
    }
}

fn walk_object(
    old: Option<&Value>,
    new: Option<&Value>,
    node: &Node,
    path: &mut Path,
    out: &mut Comparison,
) {
    let empty = Map::new();
    let old_map = old.and_then(Value::as_object).unwrap_or(&empty);
    let new_map = new.and_then(Value::as_object).unwrap_or(&empty);
    let keys: Vec<&String> = old_map
        .keys()
        .chain(new_map.keys().filter(|k| !old_map.contains_key(*k)))
        .collect();
    for key in keys {
        let (child, _) = node.field(key);
        let (mut a, mut b) = (old_map.get(key), new_map.get(key));
        if child.zero() {
            a = a.or(Some(&NULL));
            b = b.or(Some(&NULL));
        }
        path.push(Pe::Field(key.clone()));
        walk(a, b, child, path, out);
        path.pop();
    }
}

/// Compares list items by identity; false when the items cannot be identified.
fn walk_list(
    old: Option<&Value>,
    new: Option<&Value>,
    node: &Node,
    path: &mut Path,
    out: &mut Comparison,
) -> bool {
    let shape_source = old.filter(|v| v.is_array()).or(new).unwrap_or(&NULL);
    let shape = node.shape(shape_source);
    let Some((keys, item_node)) = list_parts(&shape) else {
        return false;
    };
    let old_items = old.and_then(Value::as_array).unwrap_or(&EMPTY);
    let new_items = new.and_then(Value::as_array).unwrap_or(&EMPTY);
    let (Ok(old_pes), Ok(new_pes)) = (
        item_pes(old_items, keys, path, true),
        item_pes(new_items, keys, path, true),
    ) else {
        return false;
    };
    let mut new_by_pe: HashMap<&Pe, &Value> = HashMap::new();
    for (pe, item) in new_pes.iter().zip(new_items).rev() {
        new_by_pe.insert(pe, item);
    }
    let mut old_by_pe: HashMap<&Pe, &Value> = HashMap::new();
    for (pe, item) in old_pes.iter().zip(old_items).rev() {
        old_by_pe.insert(pe, item);
    }
    let mut done = std::collections::HashSet::new();
    for pe in old_pes.iter().chain(&new_pes) {
        if !done.insert(pe) {
            continue;
        }
        path.push(pe.clone());
        match (old_by_pe.get(pe).copied(), new_by_pe.get(pe).copied()) {
            (None, Some(item)) => all_paths(item, item_node, path, &mut out.added),
            (Some(item), None) => all_paths(item, item_node, path, &mut out.removed),
            (a, b) => walk(a, b, item_node, path, out),
        }
        path.pop();
    }
    true
}
