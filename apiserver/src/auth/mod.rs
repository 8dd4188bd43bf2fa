//! Authorization: who may do what. Off by default (every request is allowed); with
//! [`Authorization::Rbac`] requests are checked against the stored Roles, ClusterRoles and
//! their bindings as kube-apiserver's RBAC authorizer does, and refused with its 403.

mod escalation;
mod impersonate;
mod policy_rule;
mod rbac;
mod token_file;
mod user;

use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::store::State;

pub use escalation::confirm_no_escalation;
pub use impersonate::impersonate;
pub use token_file::{TokenFileError, parse_token_file};
pub use user::User;

/// How requests are authorized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Authorization {
    /// Every authenticated request is allowed.
    #[default]
    AlwaysAllow,
    /// Requests are allowed by RBAC only (members of `system:masters` always are).
    Rbac,
}

/// The group whose members every request is allowed to, as kube-apiserver's.
const SUPERUSER_GROUP: &str = "system:masters";

/// The object a resource request is about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// API group ("" for core).
    pub group: String,
    /// Plural resource name.
    pub resource: String,
    /// Subresource, "" for none.
    pub subresource: String,
    /// Namespace, "" for cluster-scoped requests.
    pub namespace: String,
    /// Object name, "" for collections.
    pub name: String,
}

/// What a request asks to do, as kube's `authorizer.Attributes`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, ... (for a non-resource path, the lower-case method).
    pub verb: String,
    /// The object, for a resource request; `None` for a non-resource path.
    pub resource: Option<ResourceAttributes>,
    /// The request path (for non-resource requests).
    pub path: String,
}

impl Attributes {
    /// The attributes of a SubjectAccessReview's spec (`resourceAttributes` or
    /// `nonResourceAttributes`).
    pub fn from_review_spec(spec: &Value) -> ApiResult<Self> {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        if let Some(resource) = spec.get("resourceAttributes").filter(|r| r.is_object()) {
            return Ok(Attributes {
                verb: text(&resource["verb"]),
                resource: Some(ResourceAttributes {
                    group: text(&resource["group"]),
                    resource: text(&resource["resource"]),
                    subresource: text(&resource["subresource"]),
                    namespace: text(&resource["namespace"]),
                    name: text(&resource["name"]),
                }),
                path: String::new(),
            });
        }
        if let Some(path) = spec.get("nonResourceAttributes").filter(|r| r.is_object()) {
            return Ok(Attributes {
                verb: text(&path["verb"]),
                resource: None,
                path: text(&path["path"]),
            });
        }
        Err(ApiError::bad_request(
            "spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ))
    }

    /// kube's wording of why `user` may not do this.
    fn forbidden_message(&self, user: &User) -> String {
        let username = &user.username;
        let verb = &self.verb;
        let Some(r) = &self.resource else {
            return format!("User \"{username}\" cannot {verb} path \"{}\"", self.path);
        };
        let resource = match r.subresource.as_str() {
            "" => r.resource.clone(),
            sub => format!("{}/{sub}", r.resource),
        };
        let scope = match r.namespace.as_str() {
            "" => "at the cluster scope".to_string(),
            ns => format!("in the namespace \"{ns}\""),
        };
        format!(
            "User \"{username}\" cannot {verb} resource \"{resource}\" in API group \"{}\" {scope}",
            r.group
        )
    }

    /// The 403 kube-apiserver answers when `user` may not do this.
    pub fn forbidden(&self, user: &User) -> ApiError {
        let message = self.forbidden_message(user);
        match &self.resource {
            None => ApiError::denied("", "", "", format!("forbidden: {message}")),
            Some(r) => {
                let qualified = match r.group.as_str() {
                    "" => r.resource.clone(),
                    group => format!("{}.{group}", r.resource),
                };
                let subject = match r.name.as_str() {
                    "" => qualified,
                    name => format!("{qualified} \"{name}\""),
                };
                ApiError::denied(
                    &r.group,
                    &r.resource,
                    &r.name,
                    format!("{subject} is forbidden: {message}"),
                )
            }
        }
    }
}

/// Why `user` may do what `attributes` ask under `mode`, or `None` when it may not.
pub fn decide(
    mode: Authorization,
    state: &State,
    user: &User,
    attributes: &Attributes,
) -> Option<String> {
    if mode == Authorization::AlwaysAllow {
        return Some("dynrec enforces no authorization: every request is allowed".into());
    }
    if user.groups.iter().any(|g| g == SUPERUSER_GROUP) {
        return Some(format!("allowed: {SUPERUSER_GROUP} may do anything"));
    }
    rbac::allowed_by(state, user, attributes)
}

/// Checks that `user` may do what `attributes` ask; the 403 otherwise.
pub fn authorize(
    mode: Authorization,
    state: &State,
    user: &User,
    attributes: &Attributes,
) -> ApiResult<()> {
    match decide(mode, state, user, attributes) {
        Some(_) => Ok(()),
        None => Err(attributes.forbidden(user)),
    }
}

/// A SubjectAccessReview's status: whether `user` may do what `spec` asks.
pub fn access_review(
    mode: Authorization,
    state: &State,
    user: &User,
    spec: &Value,
) -> ApiResult<Value> {
    let attributes = Attributes::from_review_spec(spec)?;
    Ok(match decide(mode, state, user, &attributes) {
        Some(reason) => json!({"allowed": true, "reason": reason}),
        None => json!({"allowed": false}),
    })
}

/// A SelfSubjectRulesReview's status: what `user` may do in `namespace`.
pub fn rules_review(mode: Authorization, state: &State, user: &User, namespace: &str) -> Value {
    let everything = json!({
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        "incomplete": false,
    });
    if mode == Authorization::AlwaysAllow || user.groups.iter().any(|g| g == SUPERUSER_GROUP) {
        return everything;
    }
    rbac::rules_review(state, user, namespace)
}
