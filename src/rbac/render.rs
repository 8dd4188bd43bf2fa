//! Rules as YAML: a ClusterRole, or a Role in one namespace plus a ClusterRole for the
//! cluster-scoped kinds, each rule preceded by comments naming who needs which verbs.

use std::fmt::Write;

use super::Rule;

/// What the roles leave out, and why.
const DEFAULTS: &str = "Discovery and SelfSubjectAccessReview (the preflight) are granted to every authenticated user by Kubernetes' default bindings.";

/// What kind of role to print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoleKind {
    /// One ClusterRole with every rule.
    Cluster,
    /// A Role in this namespace for the namespaced kinds, and a ClusterRole for the others.
    Namespaced(String),
}

/// The YAML of the role(s) named `name` holding `rules`; `namespaced` says whether a rule's
/// kind is namespaced; `header` is a comment line on top.
pub fn render(
    name: &str,
    rules: &[Rule],
    kind: &RoleKind,
    namespaced: impl Fn(&Rule) -> bool,
    header: &str,
) -> String {
    let mut out = format!("# {header}\n# {DEFAULTS}\n");
    match kind {
        RoleKind::Cluster => out.push_str(&role("ClusterRole", name, None, rules.iter())),
        RoleKind::Namespaced(namespace) => {
            let (local, cluster): (Vec<&Rule>, Vec<&Rule>) =
                rules.iter().partition(|r| namespaced(r));
            out.push_str(&role("Role", name, Some(namespace), local.into_iter()));
            if !cluster.is_empty() {
                out.push_str("---\n# Cluster-scoped kinds cannot be granted by a Role.\n");
                out.push_str(&role("ClusterRole", name, None, cluster.into_iter()));
            }
        }
    }
    out
}

/// The roles and bindings that grant the ServiceAccount `account_namespace/account` the
/// rules, named `name`: with `namespace`, a Role and RoleBinding there for the namespaced
/// kinds and a ClusterRole and ClusterRoleBinding for the others; without, a ClusterRole
/// and ClusterRoleBinding for all. `header` is a comment line on top.
pub fn render_grant(
    name: &str,
    rules: &[Rule],
    namespace: Option<&str>,
    namespaced: impl Fn(&Rule) -> bool,
    (account_namespace, account): (&str, &str),
    header: &str,
) -> String {
    let (local, cluster): (Vec<&Rule>, Vec<&Rule>) = match namespace {
        Some(_) => rules.iter().partition(|r| namespaced(r)),
        None => (Vec::new(), rules.iter().collect()),
    };
    let mut parts = Vec::new();
    if let Some(namespace) = namespace.filter(|_| !local.is_empty()) {
        parts.push(role("Role", name, Some(namespace), local.into_iter()));
        parts.push(binding(
            "Role",
            name,
            Some(namespace),
            account_namespace,
            account,
        ));
    }
    if !cluster.is_empty() {
        parts.push(role("ClusterRole", name, None, cluster.into_iter()));
        parts.push(binding(
            "ClusterRole",
            name,
            None,
            account_namespace,
            account,
        ));
    }
    format!("# {header}\n{}", parts.join("---\n"))
}

/// A RoleBinding (in `namespace`) or ClusterRoleBinding of the role `kind`/`name` to a
/// ServiceAccount.
fn binding(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    account_namespace: &str,
    account: &str,
) -> String {
    let binding_kind = match namespace {
        Some(_) => "RoleBinding",
        None => "ClusterRoleBinding",
    };
    let mut out = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: {binding_kind}\nmetadata:\n  name: {name}\n"
    );
    if let Some(namespace) = namespace {
        let _ = writeln!(out, "  namespace: {namespace}");
    }
    let _ = write!(
        out,
        "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: {kind}\n  name: {name}\nsubjects:\n- kind: ServiceAccount\n  name: {account}\n  namespace: {account_namespace}\n"
    );
    out
}

fn role<'a>(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    rules: impl Iterator<Item = &'a Rule>,
) -> String {
    let mut out = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata:\n  name: {name}\n"
    );
    if let Some(namespace) = namespace {
        let _ = writeln!(out, "  namespace: {namespace}");
    }
    out.push_str("rules:\n");
    for rule in rules {
        for (by, verbs) in &rule.needed_by {
            let _ = writeln!(out, "# {}: {by}", join(verbs.iter()));
        }
        let _ = writeln!(
            out,
            "- apiGroups: [{}]\n  resources: [{}]",
            quote(&rule.group),
            quote(&rule.resource),
        );
        if !rule.resource_names.is_empty() {
            let _ = writeln!(out, "  resourceNames: [{}]", quoted(&rule.resource_names));
        }
        let _ = writeln!(out, "  verbs: [{}]", quoted(rule.verbs.iter()));
    }
    out
}

fn quote(text: &str) -> String {
    format!("\"{text}\"")
}

fn quoted<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    items
        .into_iter()
        .map(|item| quote(item))
        .collect::<Vec<_>>()
        .join(", ")
}

fn join<'a>(items: impl Iterator<Item = &'a String>) -> String {
    items.map(String::as_str).collect::<Vec<_>>().join(", ")
}
