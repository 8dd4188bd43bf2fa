//! Preflight: before a controller starts, the Manager asks the API server whether the
//! controller's identity may do everything its reconcilers declared — its own identity by
//! SelfSubjectAccessReview, an impersonated ServiceAccount (see [`Client::acting_as`]) by
//! SubjectAccessReview — and the controller waits, named in `/readyz`, until it may.
//!
//! [`Client::acting_as`]: crate::client::Client::acting_as

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec, SubjectAccessReview,
    SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tracing::warn;

use super::Readiness;
use super::health::MANAGER_COMPONENT;
use super::rbac_changes::{RECHECK, RbacChanges};
use crate::client::{Client, Resolved};
use crate::object::Gvk;
use crate::reconcilers::{Permission, READ};

/// One verb of a permission that the API server refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The verb refused.
    pub verb: String,
    /// The resource as RBAC names it, e.g. `widgets/status`.
    pub resource: String,
    /// The object it was asked for (a permission limited to `resourceNames`).
    pub name: Option<String>,
    /// The namespace it was asked in; `None` for cluster-wide.
    pub namespace: Option<String>,
    /// The permission it belongs to.
    pub permission: Permission,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot {} {}", self.verb, self.resource)?;
        if let Some(name) = &self.name {
            write!(f, " {name:?}")?;
        }
        write!(f, " in API group {:?}", self.permission.gvk.group)?;
        if let Some(namespace) = &self.namespace {
            write!(f, " in the namespace {namespace:?}")?;
        }
        write!(f, " (needed by {})", self.permission.by)
    }
}

/// `missing` as lines a person reads: one per resource (and object, and namespace), its
/// refused verbs sorted, then every reconciler needing them.
pub fn summarize(missing: &[Missing]) -> Vec<String> {
    type Key<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>);
    let mut grouped: BTreeMap<Key<'_>, (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
    for refused in missing {
        let key = (
            refused.permission.gvk.group.as_str(),
            refused.resource.as_str(),
            refused.name.as_deref(),
            refused.namespace.as_deref(),
        );
        let (verbs, needed_by) = grouped.entry(key).or_default();
        verbs.insert(&refused.verb);
        needed_by.insert(&refused.permission.by);
    }
    grouped
        .into_iter()
        .map(|((group, resource, name, namespace), (verbs, needed_by))| {
            let verbs: Vec<&str> = verbs.into_iter().collect();
            let mut line = format!("cannot {} {resource}", verbs.join(", "));
            if let Some(name) = name {
                line.push_str(&format!(" {name:?}"));
            }
            line.push_str(&format!(" in API group {group:?}"));
            if let Some(namespace) = namespace {
                line.push_str(&format!(" in the namespace {namespace:?}"));
            }
            let needed_by: Vec<&str> = needed_by.into_iter().collect();
            line + &format!(" (needed by {})", needed_by.join("; "))
        })
        .collect()
}

/// The verbs of `permissions` the client's identity may not use, each asked about in the
/// namespace the permission names, if any, else: for the client's own identity
/// cluster-wide; for an impersonated ServiceAccount, when the reconciled kind is
/// `namespaced`, namespaced kinds in the account's namespace (where a tenant's Role grants
/// them), otherwise cluster-wide, or in each of the client's namespaces when its caches hold
/// only those (`dynrec run --namespace`). Reads are asked about cluster-wide too for an
/// impersonated account, to decide whether the shared cache may serve it (see
/// [`Client::allow_shared_cache`]).
pub async fn missing(
    client: &Client,
    permissions: &[Permission],
    namespaced: bool,
) -> Result<Vec<Missing>, kube::Error> {
    let own_namespace = client
        .identity()
        .filter(|_| namespaced)
        .map(|identity| identity.namespace.clone());
    let mut refused = Vec::new();
    for permission in permissions {
        let resolved = client.resolver().resolve(&permission.gvk).await.ok();
        let resource = permission.resource(resolved.as_ref().map(|r| r.resource.plural.as_str()));
        let namespaces: Vec<Option<String>> = match &resolved {
            Some(resolved) if resolved.namespaced => {
                match permission.namespace.clone().or(own_namespace.clone()) {
                    Some(namespace) => vec![Some(namespace)],
                    None if !client.namespaces().is_empty() => {
                        client.namespaces().iter().cloned().map(Some).collect()
                    }
                    None => vec![None],
                }
            }
            _ => vec![None],
        };
        let (plural, subresource) = match resource.split_once('/') {
            Some((plural, sub)) => (plural, Some(sub.to_string())),
            None => (resource.as_str(), None),
        };
        let names: Vec<Option<&String>> = match permission.resource_names.is_empty() {
            true => vec![None],
            false => permission.resource_names.iter().map(Some).collect(),
        };
        let attributes =
            |verb: &str, namespace: Option<&String>, name: Option<&String>| ResourceAttributes {
                group: Some(permission.gvk.group.clone()),
                resource: Some(plural.to_string()),
                subresource: subresource.clone(),
                verb: Some(verb.to_owned()),
                namespace: namespace.cloned(),
                name: name.cloned(),
                ..ResourceAttributes::default()
            };
        for verb in &permission.verbs {
            for namespace in &namespaces {
                for name in &names {
                    if !allowed(client, attributes(verb, namespace.as_ref(), *name)).await? {
                        refused.push(Missing {
                            verb: verb.clone(),
                            resource: resource.clone(),
                            name: name.cloned(),
                            namespace: namespace.clone(),
                            permission: permission.clone(),
                        });
                    }
                }
            }
        }
        let reads = ["list", "watch"];
        if client.identity().is_some()
            && subresource.is_none()
            && reads
                .iter()
                .all(|r| permission.verbs.iter().any(|v| v == r))
        {
            let mut cluster_wide = true;
            for verb in reads {
                cluster_wide =
                    cluster_wide && allowed(client, attributes(verb, None, None)).await?;
            }
            client.allow_shared_cache(&permission.gvk, cluster_wide);
        }
    }
    Ok(refused)
}

/// Whether the client's identity may do what `attributes` describe.
async fn allowed(client: &Client, attributes: ResourceAttributes) -> Result<bool, kube::Error> {
    let status = match client.identity() {
        None => {
            let reviews: Api<SelfSubjectAccessReview> = Api::all(client.kube().clone());
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(attributes),
                    ..SelfSubjectAccessReviewSpec::default()
                },
                ..SelfSubjectAccessReview::default()
            };
            reviews
                .create(&PostParams::default(), &review)
                .await?
                .status
        }
        Some(identity) => {
            let reviews: Api<SubjectAccessReview> = Api::all(client.own_kube().clone());
            let review = SubjectAccessReview {
                spec: SubjectAccessReviewSpec {
                    resource_attributes: Some(attributes),
                    user: Some(identity.username()),
                    groups: Some(identity.groups()),
                    ..SubjectAccessReviewSpec::default()
                },
                ..SubjectAccessReview::default()
            };
            reviews
                .create(&PostParams::default(), &review)
                .await?
                .status
        }
    };
    Ok(status.is_some_and(|s| s.allowed))
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

/// What the Manager uses when it may, without waiting for it: `list` and `watch` of the four
/// RBAC kinds, so that a controller missing a permission asks again when RBAC changes (see
/// [`RbacChanges`]); without them it asks every few seconds.
pub fn rbac_watch_permissions() -> Vec<Permission> {
    ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"]
        .into_iter()
        .map(|kind| {
            Permission::new(
                &Gvk::new("rbac.authorization.k8s.io", "v1", kind),
                "",
                &["list", "watch"],
                "the preflight (asks again when RBAC changes; without it, every 5 s)",
            )
        })
        .collect()
}

/// Checks what the Manager itself needs (see [`manager_permissions`]) until it is allowed,
/// naming what is missing in `readiness` under the `manager` component meanwhile.
pub(super) async fn check_manager(
    client: Client,
    leader_election: bool,
    readiness: Readiness,
    rbac: RbacChanges,
    stop: watch::Receiver<bool>,
) {
    let needs = manager_permissions(leader_election);
    let waiting = Waiting {
        readiness: &readiness,
        component: MANAGER_COMPONENT,
        rbac: &rbac,
    };
    if wait_until_allowed(&client, &needs, false, waiting, stop).await {
        readiness.remove(MANAGER_COMPONENT);
    }
}

/// Where a wait for permissions is reported, and what wakes it.
#[derive(Clone, Copy)]
pub struct Waiting<'a> {
    /// The readiness registry naming what is missing.
    pub readiness: &'a Readiness,
    /// The component it is named under (a controller's name).
    pub component: &'a str,
    /// The RBAC changes that make it ask again (see [`RbacChanges::wait`]).
    pub rbac: &'a RbacChanges,
}

/// Waits until the API server allows every permission (asked as [`missing`] does, for a
/// controller of a `namespaced` kind or not), asking again when RBAC changes: each missing
/// one is logged once and named in the readiness registry; false when `stop` fires first.
/// When the server cannot be asked, it does not wait.
pub async fn wait_until_allowed(
    client: &Client,
    permissions: &[Permission],
    namespaced: bool,
    waiting: Waiting<'_>,
    mut stop: watch::Receiver<bool>,
) -> bool {
    let Waiting {
        readiness,
        component,
        rbac,
    } = waiting;
    let mut logged: Vec<String> = Vec::new();
    loop {
        if let Some(absent) = absent_account(client).await {
            if logged != [absent.clone()] {
                warn!(component, "{absent}: waiting until it is created");
            }
            readiness.set_not_ready(component, absent.clone());
            logged = vec![absent];
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return false,
                () = tokio::time::sleep(RECHECK) => {}
            }
            continue;
        }
        let since = rbac.count();
        let missing = match missing(client, permissions, namespaced).await {
            Ok(missing) => missing,
            Err(err) => {
                warn!(%err, component, "cannot check permissions (access review): not waiting");
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
            () = rbac.wait(since) => {}
        }
    }
}

/// What to say when the ServiceAccount the client acts as does not exist (kube would
/// impersonate it all the same, and grant it what bindings naming it grant): `None` when
/// it exists, the client acts as its own identity, or the API server does not say (dynrec
/// may not `get` the account — then its permissions alone decide).
pub async fn absent_account(client: &Client) -> Option<String> {
    let identity = client.identity()?;
    let accounts: Api<ServiceAccount> =
        Api::namespaced(client.own_kube().clone(), &identity.namespace);
    match accounts.get_metadata(&identity.name).await {
        Err(kube::Error::Api(status)) if status.code == 404 => Some(format!(
            "the ServiceAccount {}/{} does not exist",
            identity.namespace, identity.name
        )),
        _ => None,
    }
}
