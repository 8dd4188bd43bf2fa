//! Server-side apply and the recording of other writes in `managedFields`
//! (structured-merge-diff's `Updater.Apply` and `Updater.Update`, with kube-apiserver's
//! stripping of server-owned metadata).

use serde_json::{Value, json};

use super::compare::{Comparison, compare};
use super::fieldset::FieldSet;
use super::last_applied;
use super::managed::{self, APPLY, Entry, UPDATE};
use super::merge::merge;
use super::path::{Pe, display};
use super::schema::{MergeSchema, Node};
use super::walk::{field_set, remove_items, with_named_members};
use super::{ApplyConflict, ApplyError, Part, Writer};
use crate::error::ApiError;

/// Fields no manager owns (kube-apiserver's strip set).
fn stripped() -> FieldSet {
    let mut set = FieldSet::default();
    for top in ["apiVersion", "kind", "metadata"] {
        set.insert(&[Pe::Field(top.into())]);
    }
    for meta in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[Pe::Field("metadata".into()), Pe::Field(meta.into())]);
    }
    set
}

/// Top-level fields whose ownership this kind of write does not record (the reset fields of
/// kube-apiserver's strategies).
fn ignored(part: Part, objects: &[&Value]) -> FieldSet {
    let mut set = FieldSet::default();
    match part {
        Part::All => {}
        Part::Main => set.insert(&[Pe::Field("status".into())]),
        Part::Status => {
            for key in objects
                .iter()
                .filter_map(|o| o.as_object())
                .flat_map(|o| o.keys())
            {
                if key != "status" {
                    set.insert(&[Pe::Field(key.clone())]);
                }
            }
        }
    }
    set
}

impl Writer<'_> {
    fn entry(&self, operation: &str, fields: FieldSet) -> Entry {
        Entry {
            manager: self.manager.to_string(),
            operation: operation.to_string(),
            api_version: self.api_version.to_string(),
            subresource: match self.part {
                Part::Status => "status".into(),
                _ => String::new(),
            },
            time: Some(self.now.to_string()),
            fields,
        }
    }
}

/// Why one attempt at an apply failed.
enum Failure {
    Conflicts(Vec<(Entry, FieldSet)>),
    Invalid(ApiError),
}

impl From<Failure> for ApplyError {
    fn from(failure: Failure) -> ApplyError {
        match failure {
            Failure::Conflicts(conflicts) => ApplyError::Conflict(ApplyConflict::new(conflicts)),
            Failure::Invalid(error) => ApplyError::Invalid(error),
        }
    }
}

/// Server-side apply of `config` by `writer` onto `live` (`None`: create-on-apply), with
/// kube-apiserver's handling of the client-side apply annotation for the manager `kubectl`.
pub(super) fn apply(
    live: Option<&Value>,
    config: &Value,
    writer: &Writer,
    force: bool,
    schema: &MergeSchema,
) -> Result<Value, ApplyError> {
    if !config.is_object() {
        return Err(ApplyError::Invalid(ApiError::bad_request(
            "the applied configuration must be a JSON object",
        )));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApplyError::Invalid(ApiError::bad_request(
            "metadata.managedFields must be nil",
        )));
    }
    if writer.manager != last_applied::KUBECTL {
        return Ok(apply_once(live, config, writer, force, schema)?);
    }
    let applied = match apply_once(live, config, writer, force, schema) {
        Err(Failure::Conflicts(conflicts)) => {
            let allowed = live.and_then(|l| last_applied::unchanged_fields(l, &schema.root));
            let Some(allowed) = allowed else {
                return Err(Failure::Conflicts(conflicts).into());
            };
            let remaining: Vec<(Entry, FieldSet)> = conflicts
                .into_iter()
                .map(|(entry, set)| (entry, set.difference(&allowed)))
                .filter(|(_, set)| !set.is_empty())
                .collect();
            if !remaining.is_empty() {
                return Err(Failure::Conflicts(remaining).into());
            }
            apply_once(live, config, writer, true, schema)?
        }
        other => other?,
    };
    Ok(last_applied::sync(live, applied, config))
}

/// One attempt at an apply.
fn apply_once(
    live: Option<&Value>,
    config: &Value,
    writer: &Writer,
    force: bool,
    schema: &MergeSchema,
) -> Result<Value, Failure> {
    let root = &schema.root;
    let empty = json!({});
    let live_clean = live.map_or_else(|| empty.clone(), managed::without);
    let typed_error = |e: String| Failure::Invalid(typed_patch_error(config, &e));
    let config_set = field_set(config, root, true).map_err(typed_error)?;
    let merged = merge(Some(&live_clean), config, root).map_err(typed_error)?;

    let ignored = ignored(writer.part, &[config, &live_clean]);
    let strip = stripped();
    let mut entries = live.map(managed::read).unwrap_or_default();
    if entries.is_empty() && live.is_some() {
        // kube-apiserver's "before-first-apply": what existed before any apply is owned.
        let existing = compare(&empty, &live_clean, root).excluding(&ignored);
        let before = Writer {
            manager: "before-first-apply",
            ..*writer
        };
        entries.push(before.entry(UPDATE, existing.changed().difference(&strip)));
    }
    let me = writer.entry(
        APPLY,
        config_set.recursive_difference(&ignored).difference(&strip),
    );
    let last = match entries.iter().position(|e| e.same_manager(&me)) {
        Some(i) => entries.remove(i).fields,
        None => FieldSet::default(),
    };
    entries.push(me);
    let mine = entries.len() - 1;
    let pruned = prune(&merged, &entries, &last, root);

    let comparison = compare(&live_clean, &pruned, root).excluding(&ignored);
    let conflicts = take_from_others(&mut entries, Some(mine), &comparison, force);
    if !conflicts.is_empty() {
        return Err(Failure::Conflicts(conflicts));
    }
    for entry in &mut entries {
        entry.fields = entry.fields.difference(&strip);
    }
    Ok(finish(live, pruned, entries))
}

/// Records a non-apply write from `old` (`None`: a create) to `new` in `managedFields`.
pub(super) fn record_update(
    old: Option<&Value>,
    new: &Value,
    writer: &Writer,
    schema: &MergeSchema,
) -> Value {
    let requested = match writer.part {
        Part::Status => None,
        _ => managed::requested(new),
    };
    if requested.as_ref().is_some_and(Vec::is_empty) {
        return managed::without(new);
    }
    let empty = json!({});
    let old_clean = old.map_or_else(|| empty.clone(), managed::without);
    let new_clean = managed::without(new);
    let mut entries = requested.unwrap_or_else(|| old.map(managed::read).unwrap_or_default());
    let ignored = ignored(writer.part, &[&old_clean, &new_clean]);
    let comparison = compare(&old_clean, &new_clean, &schema.root).excluding(&ignored);
    take_from_others(&mut entries, None, &comparison, true);
    let strip = stripped();
    let changed = comparison.changed().difference(&strip);
    if !changed.is_empty() {
        let me = writer.entry(UPDATE, changed);
        match entries.iter_mut().find(|e| e.same_manager(&me)) {
            Some(previous) => {
                previous.fields = previous.fields.union(&me.fields);
                previous.time = me.time;
            }
            None => entries.push(me),
        }
    }
    for entry in &mut entries {
        entry.fields = entry.fields.difference(&strip);
    }
    finish(old, new_clean, entries)
}

/// Removes what others own of the changed and removed fields; returns the conflicts (changed
/// fields others own) and leaves the entries alone when there are conflicts and no `force`.
fn take_from_others(
    entries: &mut [Entry],
    mine: Option<usize>,
    comparison: &Comparison,
    force: bool,
) -> Vec<(Entry, FieldSet)> {
    let changed = comparison.changed();
    let conflicts: Vec<(Entry, FieldSet)> = entries
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != mine)
        .map(|(_, e)| (e.clone(), e.fields.intersection(&changed)))
        .filter(|(_, set)| !set.is_empty())
        .collect();
    if !force && !conflicts.is_empty() {
        return conflicts;
    }
    for (i, entry) in entries.iter_mut().enumerate() {
        if Some(i) != mine {
            entry.fields = entry
                .fields
                .difference(&changed)
                .difference(&comparison.removed);
        }
    }
    Vec::new()
}

/// The object with its new `managedFields`, or the live object itself when nothing but
/// timestamps would change (kube-apiserver ignores timestamp-only managedFields changes).
fn finish(live: Option<&Value>, mut object: Value, entries: Vec<Entry>) -> Value {
    if let Some(live) = live {
        let before = managed::read(live);
        let untimed = |list: &[Entry]| -> Vec<Entry> {
            let mut list: Vec<Entry> = list
                .iter()
                .filter(|e| !e.fields.is_empty())
                .map(|e| Entry {
                    time: None,
                    ..e.clone()
                })
                .collect();
            list.sort_by_key(Entry::identifier);
            list
        };
        if managed::without(live) == object && untimed(&before) == untimed(&entries) {
            return live.clone();
        }
    }
    managed::write(&mut object, entries);
    object
}

/// Removes what the applier applied last time and omits now, unless another manager owns it
/// (structured-merge-diff's `prune`, with `addBackOwnedItems` and `addBackDanglingItems`).
fn prune(merged: &Value, entries: &[Entry], last: &FieldSet, root: &Node) -> Value {
    if last.is_empty() {
        return merged.clone();
    }
    let named = |set: &FieldSet| with_named_members(set, root);
    let set_of = |value: &Value| named(&field_set(value, root, false).unwrap_or_default());
    let remove = |set: &FieldSet| remove_items(merged, root, set).unwrap_or_else(|| json!({}));
    let last = named(last);
    let managed = entries
        .iter()
        .fold(FieldSet::default(), |acc, e| acc.union(&e.fields));
    let merged_set = set_of(merged);
    let pruned = remove(&last);
    let pruned = remove(&merged_set.difference(&set_of(&pruned).union(&named(&managed))));
    remove(&merged_set.difference(&set_of(&pruned)).intersection(&last))
}

/// kube-apiserver's error for an applied configuration it cannot type (a 500, as it answers).
fn typed_patch_error(config: &Value, detail: &str) -> ApiError {
    let text = |pointer: &str| {
        config
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let api_version = text("/apiVersion");
    let gv = if api_version.contains('/') {
        api_version.to_string()
    } else {
        format!("/{api_version}")
    };
    ApiError::internal(format!(
        "failed to create typed patch object ({}/{}; {gv}, Kind={}): {detail}",
        text("/metadata/namespace"),
        text("/metadata/name"),
        text("/kind"),
    ))
}

impl ApplyConflict {
    fn new(conflicts: Vec<(Entry, FieldSet)>) -> ApplyConflict {
        let mut groups = conflicts;
        groups.sort_by_key(|(e, _)| e.identifier());
        let mut list = Vec::new();
        let mut lines = Vec::new();
        for (entry, set) in &groups {
            let paths: Vec<String> = set.paths().iter().map(|p| display(p)).collect();
            lines.push(format!("conflicts with {}:", entry.label()));
            for path in &paths {
                lines.push(format!("- {path}"));
                list.push((entry.label(), path.clone()));
            }
        }
        let message = match list.as_slice() {
            [(label, path)] => {
                format!("Apply failed with 1 conflict: conflict with {label}: {path}")
            }
            _ => format!(
                "Apply failed with {} conflicts: {}",
                list.len(),
                lines.join("\n")
            ),
        };
        ApplyConflict {
            conflicts: groups
                .iter()
                .flat_map(|(e, set)| {
                    set.paths()
                        .into_iter()
                        .map(|p| (e.manager.clone(), display(&p)))
                        .collect::<Vec<_>>()
                })
                .collect(),
            labels: list.into_iter().map(|(label, _)| label).collect(),
            message,
        }
    }
}
