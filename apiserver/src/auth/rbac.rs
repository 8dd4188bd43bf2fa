//! Role-based access control evaluated as kube-apiserver's RBAC authorizer does: the
//! ClusterRoleBindings everywhere, the RoleBindings of the request's namespace, each
//! granting the rules of its Role or ClusterRole to the subjects it names.

use serde_json::{Value, json};

use super::Attributes;
use super::user::User;
use crate::meta;
use crate::resources::ResourceKey;
use crate::store::State;

const GROUP: &str = "rbac.authorization.k8s.io";

fn key(plural: &str) -> ResourceKey {
    ResourceKey {
        group: GROUP.into(),
        plural: plural.into(),
    }
}

/// A binding that applies to the user, with the rules of the role it names.
struct Grant {
    /// e.g. `ClusterRoleBinding "x" of ClusterRole "y"`.
    source: String,
    rules: Vec<Value>,
}

/// The rules granted to `user` in `namespace` ("" for cluster-wide only), each with the
/// binding that grants it.
fn grants(state: &State, user: &User, namespace: &str) -> Vec<Grant> {
    let mut grants = Vec::new();
    for binding in state
        .objects()
        .list(&key("clusterrolebindings"), None, None)
    {
        if binds(&binding, user) {
            grants.push(grant(state, &binding, "ClusterRoleBinding", ""));
        }
    }
    if !namespace.is_empty() {
        for binding in state
            .objects()
            .list(&key("rolebindings"), Some(namespace), None)
        {
            if binds(&binding, user) {
                grants.push(grant(state, &binding, "RoleBinding", namespace));
            }
        }
    }
    grants
}

/// The rules of the role `binding` refers to (none when the role does not exist).
fn grant(state: &State, binding: &Value, binding_kind: &str, namespace: &str) -> Grant {
    let role_kind = binding["roleRef"]["kind"].as_str().unwrap_or_default();
    let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
    let mut source = format!(
        "{binding_kind} \"{}\" of {role_kind} \"{role_name}\"",
        meta::name(binding)
    );
    if !namespace.is_empty() {
        source = format!("{source} in the namespace \"{namespace}\"");
    }
    Grant {
        source,
        rules: role_rules(state, &binding["roleRef"], namespace).unwrap_or_default(),
    }
}

/// The rules of the Role (in `namespace`) or ClusterRole a `roleRef` names, or `None` when
/// it does not exist.
pub fn role_rules(state: &State, role_ref: &Value, namespace: &str) -> Option<Vec<Value>> {
    let name = role_ref["name"].as_str().unwrap_or_default();
    let role = match role_ref["kind"].as_str().unwrap_or_default() {
        "ClusterRole" => state.get(&key("clusterroles"), "", name),
        "Role" => state.get(&key("roles"), namespace, name),
        _ => None,
    }?;
    Some(role["rules"].as_array().cloned().unwrap_or_default())
}

/// Every rule granted to `user` in `namespace` ("" for cluster-wide grants only), as
/// kube's `RulesFor`.
pub fn rules_for(state: &State, user: &User, namespace: &str) -> Vec<Value> {
    grants(state, user, namespace)
        .into_iter()
        .flat_map(|grant| grant.rules)
        .collect()
}

/// Whether one of the binding's subjects is the user or one of its groups.
fn binds(binding: &Value, user: &User) -> bool {
    let subjects = binding["subjects"].as_array().map(Vec::as_slice);
    subjects.unwrap_or_default().iter().any(|subject| {
        let name = subject["name"].as_str().unwrap_or_default();
        match subject["kind"].as_str().unwrap_or_default() {
            "User" => user.username == name,
            "Group" => user.groups.iter().any(|g| g == name),
            "ServiceAccount" => {
                let namespace = subject["namespace"]
                    .as_str()
                    .filter(|ns| !ns.is_empty())
                    .unwrap_or_else(|| meta::namespace(binding));
                user.username == format!("system:serviceaccount:{namespace}:{name}")
            }
            _ => false,
        }
    })
}

/// Whether `list` holds `wanted` or `*`.
fn has(list: &Value, wanted: &str) -> bool {
    list.as_array()
        .is_some_and(|items| items.iter().any(|i| i == "*" || i == wanted))
}

/// Whether a rule grants the request, as kube's `RuleAllows`.
fn allows(rule: &Value, attributes: &Attributes) -> bool {
    if !has(&rule["verbs"], &attributes.verb) {
        return false;
    }
    match &attributes.resource {
        None => rule["nonResourceURLs"].as_array().is_some_and(|urls| {
            urls.iter().filter_map(Value::as_str).any(|url| {
                url == "*"
                    || url == attributes.path
                    || url
                        .strip_suffix('*')
                        .is_some_and(|prefix| attributes.path.starts_with(prefix))
            })
        }),
        Some(resource) => {
            let combined = match resource.subresource.as_str() {
                "" => resource.resource.clone(),
                sub => format!("{}/{sub}", resource.resource),
            };
            let resources = rule["resources"].as_array().map(Vec::as_slice);
            let resource_matches = resources.unwrap_or_default().iter().any(|r| {
                r == "*"
                    || *r == *combined
                    || r.as_str().is_some_and(|r| {
                        !resource.subresource.is_empty()
                            && r == format!("*/{}", resource.subresource)
                    })
            });
            let names = meta::string_list(&rule["resourceNames"]);
            has(&rule["apiGroups"], &resource.group)
                && resource_matches
                && (names.is_empty() || names.contains(&resource.name))
        }
    }
}

/// Why a request is allowed, or `None` when no binding allows it.
pub fn allowed_by(state: &State, user: &User, attributes: &Attributes) -> Option<String> {
    let namespace = attributes
        .resource
        .as_ref()
        .map(|r| r.namespace.as_str())
        .unwrap_or_default();
    grants(state, user, namespace)
        .into_iter()
        .find(|grant| grant.rules.iter().any(|rule| allows(rule, attributes)))
        .map(|grant| format!("RBAC: allowed by {} to {}", grant.source, subject_of(user)))
}

/// How kube names the subject in an allow reason.
fn subject_of(user: &User) -> String {
    match user.username.strip_prefix("system:serviceaccount:") {
        Some(account) => format!("ServiceAccount \"{}\"", account.replacen(':', "/", 1)),
        None => format!("User \"{}\"", user.username),
    }
}

/// The rules `user` has in `namespace`, as a SelfSubjectRulesReview's status.
pub fn rules_review(state: &State, user: &User, namespace: &str) -> Value {
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in rules_for(state, user, namespace) {
        if rule.get("nonResourceURLs").is_some() {
            non_resource_rules
                .push(json!({"verbs": rule["verbs"], "nonResourceURLs": rule["nonResourceURLs"]}));
        } else {
            let mut entry = json!({"verbs": rule["verbs"], "apiGroups": rule["apiGroups"], "resources": rule["resources"]});
            if rule.get("resourceNames").is_some() {
                entry["resourceNames"] = rule["resourceNames"].clone();
            }
            resource_rules.push(entry);
        }
    }
    json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": false})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::ResourceAttributes;

    fn request(verb: &str, resource: &str, subresource: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource: Some(ResourceAttributes {
                group: "apps".into(),
                resource: resource.into(),
                subresource: subresource.into(),
                namespace: "ns".into(),
                name: name.into(),
            }),
            path: String::new(),
        }
    }

    fn path(verb: &str, path: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource: None,
            path: path.into(),
        }
    }

    #[test]
    fn rules_match_as_kube_s_rule_allows() {
        let status_of_all =
            json!({"apiGroups": ["apps"], "resources": ["*/status"], "verbs": ["update"]});
        assert!(allows(
            &status_of_all,
            &request("update", "deployments", "status", "web")
        ));
        assert!(!allows(
            &status_of_all,
            &request("update", "deployments", "", "web")
        ));
        assert!(!allows(
            &status_of_all,
            &request("update", "deployments", "scale", "web")
        ));
        let main_only =
            json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]});
        assert!(allows(
            &main_only,
            &request("delete", "deployments", "", "web")
        ));
        assert!(!allows(
            &main_only,
            &request("get", "deployments", "status", "web")
        ));
        let other_group = json!({"apiGroups": [""], "resources": ["*"], "verbs": ["*"]});
        assert!(!allows(
            &other_group,
            &request("get", "deployments", "", "web")
        ));
        let named = json!({"apiGroups": ["*"], "resources": ["deployments"], "verbs": ["get", "list"], "resourceNames": ["web"]});
        assert!(allows(&named, &request("get", "deployments", "", "web")));
        assert!(!allows(&named, &request("list", "deployments", "", "")));
        let urls = json!({"nonResourceURLs": ["/apis/*", "/version"], "verbs": ["get"]});
        assert!(allows(&urls, &path("get", "/apis/apps/v1")));
        assert!(allows(&urls, &path("get", "/version")));
        assert!(!allows(&urls, &path("get", "/versions")));
        assert!(!allows(&urls, &path("post", "/version")));
        assert!(!allows(&urls, &request("get", "deployments", "", "web")));
    }
}
