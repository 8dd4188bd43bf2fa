//! ClusterRole aggregation, as kube-controller-manager's clusterrole-aggregation controller
//! does it: a ClusterRole with an `aggregationRule` gets as `rules` every rule of the
//! ClusterRoles its `clusterRoleSelectors` select (in name order, each rule once), kept up
//! to date whenever a ClusterRole is written or deleted. Here it runs inside the write that
//! triggers it, so the aggregated rules are in place when that write is answered.

use std::sync::Arc;

use serde_json::Value;

use super::state::State;
use super::watch::ChangeKind;
use crate::meta;
use crate::resources::ResourceKey;
use crate::selector::{LabelSelector, format_label_selector};

/// Where ClusterRoles are stored.
pub(super) fn cluster_roles_key() -> ResourceKey {
    ResourceKey {
        group: "rbac.authorization.k8s.io".into(),
        plural: "clusterroles".into(),
    }
}

/// The selectors of a ClusterRole's `aggregationRule`, when it has one with selectors.
fn selectors(role: &Value) -> Option<Vec<LabelSelector>> {
    let selectors = role["aggregationRule"]["clusterRoleSelectors"].as_array()?;
    if selectors.is_empty() {
        return None;
    }
    // A selector that does not parse selects nothing, as kube's controller skips it.
    Some(
        selectors
            .iter()
            .filter_map(|s| LabelSelector::parse(&format_label_selector(s)).ok())
            .collect(),
    )
}

/// A role's `rules` (none when absent).
fn rules_of(role: &Value) -> &[Value] {
    role["rules"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

impl State {
    /// Brings the `rules` of every aggregated ClusterRole up to date; an aggregated role
    /// that another aggregates (kube's `edit` into `admin`) is settled first, so this
    /// repeats until nothing changes.
    pub(super) fn aggregate_cluster_roles(&mut self) {
        let key = cluster_roles_key();
        let roles: Vec<Arc<Value>> = self.objects.list(&key, None, None).collect();
        for _ in 0..=roles.len() {
            if !self.aggregate_once(&key) {
                return;
            }
        }
    }

    /// One pass over the aggregated ClusterRoles; whether any changed.
    fn aggregate_once(&mut self, key: &ResourceKey) -> bool {
        let roles: Vec<Arc<Value>> = self.objects.list(key, None, None).collect();
        let mut changed = false;
        for role in &roles {
            let Some(selectors) = selectors(role) else {
                continue;
            };
            let mut rules: Vec<Value> = Vec::new();
            let selected = roles.iter().filter(|other| {
                meta::name(other) != meta::name(role)
                    && selectors.iter().any(|s| s.matches(meta::labels(other)))
            });
            for rule in selected.flat_map(|other| rules_of(other)) {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
            if rules_of(role) == rules.as_slice() {
                continue;
            }
            let mut updated = (**role).clone();
            updated["rules"] = Value::from(rules);
            let rv = self.objects.next_rv();
            meta::set_meta(&mut updated, "resourceVersion", Value::from(rv.to_string()));
            self.commit_put(key, updated, ChangeKind::Modified);
            changed = true;
        }
        changed
    }
}
