//! Merging an applied configuration into a live object (structured-merge-diff's `Merge`).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::path::{Path, Pe};
use super::schema::{KeyField, Node, Shape};
use super::walk::{item_pes, list_parts};

/// `config` merged into `live`: objects key by key, sets and keyed lists item by item, everything
/// else replaced. A `null` in the config removes the field. Errors name the bad list item.
pub(super) fn merge(live: Option<&Value>, config: &Value, node: &Node) -> Result<Value, String> {
    merge_at(live, config, node, &mut Vec::new())
}

fn merge_at(
    live: Option<&Value>,
    config: &Value,
    node: &Node,
    path: &mut Path,
) -> Result<Value, String> {
    let shape = node.shape(config);
    if let Shape::Object(object) = shape {
        let mut out = live.and_then(Value::as_object).cloned().unwrap_or_default();
        if let Value::Object(fields) = config {
            for (key, value) in fields {
                if value.is_null() {
                    out.remove(key);
                    continue;
                }
                path.push(Pe::Field(key.clone()));
                let merged = merge_at(out.get(key), value, object.field(key).0, path)?;
                path.pop();
                out.insert(key.clone(), merged);
            }
        }
        return Ok(Value::Object(out));
    }
    match (list_parts(&shape), config) {
        (Some((keys, item)), Value::Array(items)) => merge_list(live, items, keys, item, path),
        _ => Ok(config.clone()),
    }
}

/// Merges list items in structured-merge-diff's order: shared items keep the config's relative
/// order, live-only items stay where they were, config-only items come where the config has them.
fn merge_list(
    live: Option<&Value>,
    config: &[Value],
    keys: Option<&[KeyField]>,
    item: &Node,
    path: &mut Path,
) -> Result<Value, String> {
    let rhs_pes = item_pes(config, keys, path, false)?;
    let lhs: &[Value] = live.and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let (lhs, lhs_pes) = match item_pes(lhs, keys, path, true) {
        Ok(pes) => (lhs, pes),
        Err(_) => (&[][..], Vec::new()),
    };
    // Duplicated live items are not merged: they map to None.
    let mut observed_lhs: HashMap<&Pe, Option<&Value>> = HashMap::new();
    for (pe, value) in lhs_pes.iter().zip(lhs) {
        observed_lhs
            .entry(pe)
            .and_modify(|v| *v = None)
            .or_insert(Some(value));
    }
    let observed_rhs: HashMap<&Pe, &Value> = rhs_pes.iter().zip(config).collect();
    let shared: Vec<&Pe> = rhs_pes
        .iter()
        .filter(|pe| observed_lhs.contains_key(pe))
        .collect();
    let mut shared_at = 0;
    let mut merged_rhs: HashSet<&Pe> = HashSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(config.len()));
    let (mut li, mut ri) = (0, 0);
    while li < lhs_pes.len() || ri < rhs_pes.len() {
        if li < lhs_pes.len() && ri < rhs_pes.len() {
            let pe = &lhs_pes[li];
            if *pe == rhs_pes[ri] {
                merged_rhs.insert(pe);
                out.push(merge_item(
                    observed_lhs[pe],
                    observed_rhs[pe],
                    item,
                    pe,
                    path,
                )?);
                li += 1;
                ri += 1;
                shared_at += 1;
                continue;
            }
            let next_shared = shared.get(shared_at);
            if observed_rhs.contains_key(pe) && next_shared.is_some_and(|s| *s != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs_pes.len() {
            let pe = &lhs_pes[li];
            if !observed_rhs.contains_key(pe) {
                out.push(lhs[li].clone());
                li += 1;
                continue;
            }
            if merged_rhs.contains(pe) {
                li += 1;
                continue;
            }
        }
        if ri < rhs_pes.len() {
            let pe = &rhs_pes[ri];
            merged_rhs.insert(pe);
            let lhs_item = observed_lhs.get(pe).copied().flatten();
            out.push(merge_item(lhs_item, observed_rhs[pe], item, pe, path)?);
            ri += 1;
            if shared.get(shared_at).is_some_and(|s| *s == pe) {
                shared_at += 1;
            }
        }
    }
    Ok(Value::Array(out))
}

fn merge_item(
    live: Option<&Value>,
    config: &Value,
    item: &Node,
    pe: &Pe,
    path: &mut Path,
) -> Result<Value, String> {
    path.push(pe.clone());
    let merged = merge_at(live, config, item, path);
    path.pop();
    merged
}
