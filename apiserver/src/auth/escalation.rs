//! Escalation prevention, as kube-apiserver's RBAC registry enforces it on every create and
//! update of an RBAC object: a Role or ClusterRole may grant only permissions its writer
//! holds (unless the writer may `escalate` it), a binding may bind only a role whose
//! permissions its writer holds (unless the writer may `bind` it), and only a writer with
//! every permission may set or change a ClusterRole's `aggregationRule`.

use serde_json::Value;

use super::policy_rule::{self, PolicyRule};
use super::user::User;
use super::{Attributes, Authorization, ResourceAttributes, decide, rbac};
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::resources::ResourceInfo;
use crate::store::State;

/// The RBAC API group.
const GROUP: &str = "rbac.authorization.k8s.io";

/// Checks that `user` may write `object` (replacing `old`, on an update) of the kind
/// `info` without gaining permissions it does not hold; kube's 403 otherwise. Objects of
/// other kinds pass.
pub fn confirm_no_escalation(
    state: &State,
    user: &User,
    info: &ResourceInfo,
    old: Option<&Value>,
    object: &Value,
) -> ApiResult<()> {
    if info.custom || info.group != GROUP {
        return Ok(());
    }
    if old.is_some_and(|old| only_gc_fields_change(old, object)) {
        return Ok(());
    }
    let namespace = meta::namespace(object);
    let check = Check {
        state,
        user,
        info,
        name: meta::name(object),
        namespace,
    };
    match info.plural.as_str() {
        "roles" | "clusterroles" => {
            // As kube: `escalate` is asked for the name in the request's path, none on create.
            let request_name = old.map(meta::name).unwrap_or_default();
            if check.allowed("escalate", &info.plural, request_name, namespace) {
                return Ok(());
            }
            check.holds(&PolicyRule::list(&object["rules"]))?;
            let aggregates = [Some(object), old].into_iter().flatten().any(aggregates);
            if info.plural == "clusterroles" && aggregates {
                check.holds(&PolicyRule::full_authority()).map_err(|_| {
                    ApiError::forbidden(
                        info,
                        check.name,
                        "must have cluster-admin privileges to use the aggregationRule",
                    )
                })?;
            }
            Ok(())
        }
        "rolebindings" | "clusterrolebindings" => check.binds(&object["roleRef"]),
        _ => Ok(()),
    }
}

/// One write of an RBAC object being checked.
struct Check<'a> {
    state: &'a State,
    user: &'a User,
    /// The written kind.
    info: &'a ResourceInfo,
    /// The written object's name.
    name: &'a str,
    /// Its namespace ("" for cluster-scoped kinds).
    namespace: &'a str,
}

impl Check<'_> {
    /// Whether the user may `verb` the RBAC `resource` named `name` in `namespace` (a
    /// member of `system:masters` may do anything, so is never checked further).
    fn allowed(&self, verb: &str, resource: &str, name: &str, namespace: &str) -> bool {
        let attributes = Attributes {
            verb: verb.into(),
            resource: Some(ResourceAttributes {
                group: GROUP.into(),
                resource: resource.into(),
                subresource: String::new(),
                namespace: namespace.into(),
                name: name.into(),
            }),
            path: String::new(),
        };
        decide(Authorization::Rbac, self.state, self.user, &attributes).is_some()
    }

    /// A binding of `role_ref`: allowed with `bind` on the role, or when the user holds
    /// every permission the role grants.
    fn binds(&self, role_ref: &Value) -> ApiResult<()> {
        let role_name = role_ref["name"].as_str().unwrap_or_default();
        let role_resource = match role_ref["kind"].as_str().unwrap_or_default() {
            "ClusterRole" => "clusterroles",
            "Role" => "roles",
            // Validation refuses other kinds; nothing is granted by them.
            _ => return Ok(()),
        };
        if self.allowed("bind", role_resource, role_name, self.namespace) {
            return Ok(());
        }
        let Some(rules) = rbac::role_rules(self.state, role_ref, self.namespace) else {
            let role_info = self.state.registry().get(GROUP, "v1", role_resource);
            return Err(match role_info {
                Some(role_info) => ApiError::not_found(&role_info, role_name),
                None => ApiError::internal(format!("{role_resource} are not served")),
            });
        };
        let rules: Vec<PolicyRule> = rules.iter().map(PolicyRule::from_json).collect();
        self.holds(&rules)
    }

    /// Whether the user holds every permission of `rules` in the object's namespace (its
    /// ClusterRoleBindings, and its RoleBindings there); kube's 403 naming what it lacks
    /// otherwise.
    fn holds(&self, rules: &[PolicyRule]) -> ApiResult<()> {
        let owner = rbac::rules_for(self.state, self.user, self.namespace);
        let owner: Vec<PolicyRule> = owner.iter().map(PolicyRule::from_json).collect();
        let missing = policy_rule::uncovered(&owner, rules);
        if missing.is_empty() {
            return Ok(());
        }
        let mut lines: Vec<String> = policy_rule::compact(missing)
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        lines.sort();
        lines.dedup();
        let message = format!(
            "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
            self.user.username,
            policy_rule::go_quoted_list(&self.user.groups),
            lines.join("\n")
        );
        Err(ApiError::forbidden(self.info, self.name, &message))
    }
}

/// Whether a ClusterRole has an `aggregationRule` with selectors.
fn aggregates(role: &Value) -> bool {
    role["aggregationRule"]["clusterRoleSelectors"]
        .as_array()
        .is_some_and(|selectors| !selectors.is_empty())
}

/// Whether an update changes nothing but what the garbage collector changes
/// (`ownerReferences` and `finalizers`), as kube's `IsOnlyMutatingGCFields`: such an
/// update is not checked.
fn only_gc_fields_change(old: &Value, new: &Value) -> bool {
    let without_gc_fields = |object: &Value| {
        let mut object = object.clone();
        for field in [
            "ownerReferences",
            "finalizers",
            "resourceVersion",
            "managedFields",
        ] {
            meta::remove_meta(&mut object, field);
        }
        object
    };
    without_gc_fields(old) == without_gc_fields(new)
}
