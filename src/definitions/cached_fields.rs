//! What a compiled definition reads of the objects of its child kinds, so that their shared
//! caches keep only that ([`CachedFields`]): what its expressions read of each child (by the
//! step's id, and as `child` in its `readyWhen`), and what the child object manager compares
//! (the fields the template writes, whole, with the labels and annotations; all of the
//! metadata for server-side apply, which compares its managedFields entry).
//!
//! Kinds it also reads otherwise (as its parent or through a ref step) are read whole, and
//! so are the children of a KRO instance, whose expressions see children by other names.

use std::collections::BTreeMap;

use super::compile::{ChildPlan, CompiledDefinition, Plan};
use super::expr::{Expression, Template};
use super::model::ManagerKind;
use crate::client::CachedFields;
use crate::object::Gvk;

/// The fields the definition reads of each kind it makes children of (see the module doc).
pub(crate) fn child_kind_reads(definition: &CompiledDefinition) -> Vec<(Gvk, CachedFields)> {
    let children = child_plans(&definition.steps);
    if definition.kro.is_some() {
        let whole = children
            .iter()
            .map(|c| (c.gvk.clone(), CachedFields::Whole));
        return whole.collect();
    }
    let expressions = expressions(&definition.steps);
    let mut reads: BTreeMap<Gvk, CachedFields> = BTreeMap::new();
    for child in children {
        let fields = child_reads(child, &expressions);
        match reads.get_mut(&child.gvk) {
            Some(known) => known.union(&fields),
            None => drop(reads.insert(child.gvk.clone(), fields)),
        }
    }
    let whole = std::iter::once(definition.for_kind.clone())
        .chain(definition.steps.iter().flat_map(Plan::ref_kinds));
    for gvk in whole {
        if let Some(fields) = reads.get_mut(&gvk) {
            *fields = CachedFields::Whole;
        }
    }
    reads.into_iter().collect()
}

/// What the definition reads of one child step's children.
fn child_reads(child: &ChildPlan, expressions: &[&Expression]) -> CachedFields {
    let mut fields = CachedFields::metadata();
    match child.manager {
        ManagerKind::Apply => fields.add(&["metadata"]),
        ManagerKind::Update => {
            fields.add(&["metadata", "labels"]);
            fields.add(&["metadata", "annotations"]);
        }
    }
    match &child.template {
        Template::Map(written) => {
            let body = written.iter().map(|(name, _)| name.as_str());
            for name in body.filter(|n| !["apiVersion", "kind", "metadata"].contains(n)) {
                fields.add(&[name]);
            }
        }
        _ => return CachedFields::Whole,
    }
    let ready_when = child
        .ready_when
        .iter()
        .filter_map(|e| e.paths_read("child"));
    let anywhere = expressions.iter().filter_map(|e| e.paths_read(&child.id));
    for path in ready_when.chain(anywhere).flatten() {
        let segments: Vec<&str> = path.iter().map(String::as_str).collect();
        fields.add(&segments);
    }
    fields
}

/// The child plans of the steps, nested ones too.
fn child_plans(steps: &[Plan]) -> Vec<&ChildPlan> {
    steps
        .iter()
        .flat_map(|step| match step {
            Plan::Child(child) => vec![child.as_ref()],
            Plan::ChildSet(set) => vec![&set.child],
            Plan::Sync(_) | Plan::Ref(_) => Vec::new(),
            Plan::If {
                then, otherwise, ..
            } => [child_plans(then), child_plans(otherwise)].concat(),
            Plan::Finalizer { steps, .. } => child_plans(steps),
        })
        .collect()
}

/// Every expression of the steps.
fn expressions(steps: &[Plan]) -> Vec<&Expression> {
    steps
        .iter()
        .flat_map(|step| match step {
            Plan::Child(c) => child_expressions(c),
            Plan::ChildSet(set) => {
                let mut found = child_expressions(&set.child);
                found.push(&set.for_each);
                found.extend(set.item_id.expressions());
                found
            }
            Plan::Sync(sync) => sync.status.expressions(),
            Plan::Ref(r) => {
                let texts = r.name.iter().chain(&r.namespace);
                let labels = r.match_labels.iter().map(|(_, text)| text);
                texts.chain(labels).flat_map(|t| t.expressions()).collect()
            }
            Plan::If {
                condition,
                then,
                otherwise,
                ..
            } => {
                let mut found = vec![condition];
                found.extend(expressions(then));
                found.extend(expressions(otherwise));
                found
            }
            Plan::Finalizer { steps, .. } => expressions(steps),
        })
        .collect()
}

/// The expressions of a child step: its template's, `includeWhen` and `readyWhen`.
fn child_expressions(child: &ChildPlan) -> Vec<&Expression> {
    let mut found = child.template.expressions();
    found.extend(child.include_when.iter().chain(&child.ready_when));
    found
}
