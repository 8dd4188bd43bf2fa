//! Least-privilege RBAC derived from what reconciler trees declare: the rules a set of
//! controllers needs, merged per resource, each verb traced to the reconcilers that need
//! it, rendered as a ClusterRole (or a Role plus what must stay cluster-wide). Sorted, so a
//! diff in review is a real change.

mod render;

pub use render::{RoleKind, render, render_grant};

use std::collections::{BTreeMap, BTreeSet};

use crate::object::Gvk;
use crate::reconcilers::Permission;

/// One RBAC rule: verbs on one resource of one API group, with who needs which verbs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The API group ("" for core).
    pub group: String,
    /// The resource, with `/subresource` when it is one.
    pub resource: String,
    /// The objects the rule is limited to (`resourceNames`); empty for all.
    pub resource_names: Vec<String>,
    /// Every verb, sorted.
    pub verbs: BTreeSet<String>,
    /// Who needs it: each reconciler with the verbs it needs.
    pub needed_by: BTreeMap<String, BTreeSet<String>>,
    /// The kind, to decide where the rule belongs (Role or ClusterRole).
    pub gvk: Gvk,
}

/// Merges permissions into one rule per (group, resource, resource names), sorted by group,
/// resource, then names; `plurals` holds the plurals the server serves kinds under (others
/// are guessed).
pub fn rules(permissions: &[Permission], plurals: &BTreeMap<Gvk, String>) -> Vec<Rule> {
    let mut rules: BTreeMap<(String, String, Vec<String>), Rule> = BTreeMap::new();
    for permission in permissions {
        let resource = permission.resource(plurals.get(&permission.gvk).map(String::as_str));
        let mut names = permission.resource_names.clone();
        names.sort();
        names.dedup();
        let key = (
            permission.gvk.group.clone(),
            resource.clone(),
            names.clone(),
        );
        let rule = rules.entry(key).or_insert_with(|| Rule {
            group: permission.gvk.group.clone(),
            resource,
            resource_names: names,
            verbs: BTreeSet::new(),
            needed_by: BTreeMap::new(),
            gvk: permission.gvk.clone(),
        });
        rule.verbs.extend(permission.verbs.iter().cloned());
        rule.needed_by
            .entry(permission.by.clone())
            .or_default()
            .extend(permission.verbs.iter().cloned());
    }
    rules.into_values().collect()
}
