//! Preflight: before a controller starts, the Manager asks the API server
//! (SelfSubjectAccessReview) whether it may do everything the controller's reconcilers
//! declared; the controller waits, named in `/readyz`, until it may.

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tracing::warn;

use super::Readiness;
use super::health::MANAGER_COMPONENT;
use crate::client::{Client, Resolved};
use crate::object::Gvk;
use crate::reconcilers::{Permission, READ};

/// How long a controller missing a permission waits before it asks again.
pub const RECHECK: Duration = Duration::from_secs(5);

/// One verb of a permission that the API server refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The verb refused.
    pub verb: String,
    /// The resource as RBAC names it, e.g. `widgets/status`.
    pub resource: String,
    /// The namespace it was refused in; `None` for cluster-wide.
    pub namespace: Option<String>,
    /// The permission it belongs to.
    pub permission: Permission,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot {} {} in API group {:?}",
            self.verb, self.resource, self.permission.gvk.group
        )?;
        if let Some(namespace) = &self.namespace {
            write!(f, " in the namespace {namespace:?}")?;
        }
        write!(f, " (needed by {})", self.permission.by)
    }
}

/// The verbs of `permissions` the client's user may not use, cluster-wide, or in each of the
/// client's namespaces for a namespaced kind when its caches hold only those (kinds named by
/// the plural the resolver knows them under, else by kube's guess).
pub async fn missing(
    client: &Client,
    permissions: &[Permission],
) -> Result<Vec<Missing>, kube::Error> {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.kube().clone());
    let mut refused = Vec::new();
    for permission in permissions {
        let known = client.resolver().known(&permission.gvk);
        let resource = permission.resource(known.as_ref().map(|r| r.resource.plural.as_str()));
        let (plural, subresource) = match resource.split_once('/') {
            Some((plural, sub)) => (plural, Some(sub.to_string())),
            None => (resource.as_str(), None),
        };
        let namespaced = known.as_ref().is_some_and(|r| r.namespaced);
        let namespaces: Vec<Option<String>> = match client.namespaces() {
            scoped if namespaced && !scoped.is_empty() => {
                scoped.iter().cloned().map(Some).collect()
            }
            _ => vec![None],
        };
        let checks: Vec<(String, Option<String>)> = permission
            .verbs
            .iter()
            .flat_map(|verb| namespaces.iter().map(|ns| (verb.clone(), ns.clone())))
            .collect();
        for (verb, namespace) in checks {
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        group: Some(permission.gvk.group.clone()),
                        resource: Some(plural.to_string()),
                        subresource: subresource.clone(),
                        verb: Some(verb.clone()),
                        namespace: namespace.clone(),
                        ..ResourceAttributes::default()
                    }),
                    ..SelfSubjectAccessReviewSpec::default()
                },
                ..SelfSubjectAccessReview::default()
            };
            let answer = reviews.create(&PostParams::default(), &review).await?;
            if !answer.status.is_some_and(|s| s.allowed) {
                refused.push(Missing {
                    verb,
                    resource: resource.clone(),
                    namespace,
                    permission: permission.clone(),
                });
            }
        }
    }
    Ok(refused)
}

/// What the Manager itself needs: its kind resolver reads CRDs (discovery is granted to
/// every authenticated user by Kubernetes' default `system:discovery` binding, and
/// SelfSubjectAccessReview by `system:basic-user`), and leader election keeps a Lease.
pub fn manager_permissions(leader_election: bool) -> Vec<Permission> {
    let mut needs = vec![Permission::new(
        &Resolved::crd().gvk,
        "",
        READ,
        "the kind resolver (CRDs that come and go)",
    )];
    if leader_election {
        needs.push(Permission::new(
            &Gvk::new("coordination.k8s.io", "v1", "Lease"),
            "",
            &["create", "get", "update"],
            "leader election",
        ));
    }
    needs
}

/// Checks what the Manager itself needs (see [`manager_permissions`]) until it is allowed,
/// naming what is missing in `readiness` under the `manager` component meanwhile.
pub(super) async fn check_manager(
    client: Client,
    leader_election: bool,
    readiness: Readiness,
    stop: watch::Receiver<bool>,
) {
    let needs = manager_permissions(leader_election);
    if wait_until_allowed(&client, &needs, &readiness, MANAGER_COMPONENT, stop).await {
        readiness.remove(MANAGER_COMPONENT);
    }
}

/// Waits until the API server allows every permission: each missing one is logged once
/// and named in `readiness` under `component`; false when `stop` fires first. When the
/// server cannot be asked, it does not wait.
pub async fn wait_until_allowed(
    client: &Client,
    permissions: &[Permission],
    readiness: &Readiness,
    component: &str,
    mut stop: watch::Receiver<bool>,
) -> bool {
    let mut logged: Vec<String> = Vec::new();
    loop {
        let missing = match missing(client, permissions).await {
            Ok(missing) => missing,
            Err(err) => {
                warn!(%err, component, "cannot check permissions (SelfSubjectAccessReview): not waiting");
                return true;
            }
        };
        if missing.is_empty() {
            return true;
        }
        let lines: Vec<String> = missing.iter().map(ToString::to_string).collect();
        for line in lines.iter().filter(|l| !logged.contains(*l)) {
            warn!(component, missing = %line, "missing permission: waiting until it is granted");
        }
        readiness.set_not_ready(
            component,
            format!("missing permissions: {}", lines.join("; ")),
        );
        logged = lines;
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return false,
            () = tokio::time::sleep(RECHECK) => {}
        }
    }
}
