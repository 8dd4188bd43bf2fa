//! What a child step needs besides what its reconciler declares for the child's kind: the
//! writes in the namespace its template names, when that is not the parent's (checked
//! there, where a tenant's Role may not reach), and, for RBAC children, what
//! kube-apiserver's escalation prevention asks. Escalation prevention lets a RoleBinding or ClusterRoleBinding be written only by someone who holds
//! every permission of the role it binds or may `bind` that role, and a Role or
//! ClusterRole only by someone who holds what it grants or may `escalate`. Which
//! permissions a template's role grants is known only once it is evaluated, so a definition
//! asks for `bind` and `escalate`: on the named role when the name is literal, on every
//! role of the kind when it is an expression.

use super::compile::ChildPlan;
use super::expr::{Template, Text};
use crate::object::Gvk;
use crate::reconcilers::{Permission, WRITE};

/// The RBAC API group.
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// What writing the child of `plan` needs besides writes of its kind: writes in the
/// namespace its template names literally, and `bind` or `escalate` for RBAC children.
pub(super) fn child_permissions(plan: &ChildPlan, by: &str) -> Vec<Permission> {
    let mut needs = escalation_permissions(plan, by);
    if let Some(namespace) = literal(field(&plan.template, &["metadata", "namespace"])) {
        let why = format!("{by} (its children in the namespace {namespace})");
        needs.push(Permission::new(&plan.gvk, "", WRITE, why).in_namespace(namespace));
    }
    needs
}

/// `bind` on the role a binding child names, or `escalate` on a role child; nothing for
/// other kinds.
fn escalation_permissions(plan: &ChildPlan, by: &str) -> Vec<Permission> {
    if plan.gvk.group != RBAC_GROUP {
        return Vec::new();
    }
    match plan.gvk.kind.as_str() {
        "RoleBinding" | "ClusterRoleBinding" => bind(plan, by),
        "Role" | "ClusterRole" => {
            let name = literal(field(&plan.template, &["metadata", "name"]));
            vec![limited(
                Permission::new(
                    &plan.gvk,
                    "",
                    &["escalate"],
                    why(by, "the role it writes", name),
                ),
                name,
            )]
        }
        _ => Vec::new(),
    }
}

/// `bind` on the role in the binding's `roleRef` (a Role or a ClusterRole, both when the
/// kind is an expression).
fn bind(plan: &ChildPlan, by: &str) -> Vec<Permission> {
    let role_ref = field(&plan.template, &["roleRef"]);
    let name = literal(role_ref.and_then(|r| field(r, &["name"])));
    let kinds: Vec<&str> = match literal(role_ref.and_then(|r| field(r, &["kind"]))) {
        Some(kind) => vec![kind],
        None if plan.gvk.kind == "ClusterRoleBinding" => vec!["ClusterRole"],
        None => vec!["ClusterRole", "Role"],
    };
    kinds
        .into_iter()
        .map(|kind| {
            let role = Gvk::new(RBAC_GROUP, "v1", kind);
            let permission =
                Permission::new(&role, "", &["bind"], why(by, "the role it binds", name));
            limited(permission, name)
        })
        .collect()
}

/// Why the permission is needed, saying so when the role's name is an expression.
fn why(by: &str, what: &str, name: Option<&str>) -> String {
    match name {
        Some(_) => format!("{by} ({what})"),
        None => format!("{by} ({what} has an expression for its name: any role of the kind)"),
    }
}

fn limited(permission: Permission, name: Option<&str>) -> Permission {
    match name {
        Some(name) => permission.named([name.to_owned()]),
        None => permission,
    }
}

/// The template at `path` under `template`, when its maps hold it.
fn field<'a>(template: &'a Template, path: &[&str]) -> Option<&'a Template> {
    path.iter().try_fold(template, |at, key| match at {
        Template::Map(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    })
}

/// The text of a template with no expression.
fn literal(template: Option<&Template>) -> Option<&str> {
    match template {
        Some(Template::Text(Text::Literal(text))) => Some(text),
        _ => None,
    }
}
