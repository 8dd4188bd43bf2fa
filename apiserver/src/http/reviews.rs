//! The virtual kinds that are created to get an answer and never stored: TokenReview and
//! SelfSubjectReview (authentication.k8s.io), the access and rules reviews
//! (authorization.k8s.io; no RBAC is enforced, so everything is allowed) and Binding.

use std::sync::Arc;

use axum::body::Body;
use http::Response;
use serde_json::{Value, json};

use super::tokens::{self, User};
use super::{Shared, respond, subresource};
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::resources::ResourceKey;

/// Why every access review is allowed.
const ALLOWED_REASON: &str = "dynrec enforces no authorization: every request is allowed";

/// Answers the creation of a virtual object by `user`.
pub fn create(
    shared: &Arc<Shared>,
    plural: &str,
    namespace: Option<&str>,
    api_version: &str,
    kind: &str,
    user: &User,
    mut body: Value,
) -> ApiResult<Response<Body>> {
    if !body.is_object() {
        return Err(ApiError::bad_request(format!(
            "the body of a {kind} must be a JSON object"
        )));
    }
    body["apiVersion"] = Value::from(api_version);
    body["kind"] = Value::from(kind);
    if !body["metadata"].is_object() {
        body["metadata"] = json!({});
    }
    body["metadata"]["creationTimestamp"] = Value::Null;
    body["status"] = match plural {
        "bindings" => return bind(shared, namespace.unwrap_or_default(), &body),
        "tokenreviews" => token_review(shared, &body["spec"]),
        "selfsubjectreviews" => json!({"userInfo": user.to_json()}),
        "subjectaccessreviews" | "selfsubjectaccessreviews" | "localsubjectaccessreviews" => {
            json!({"allowed": true, "reason": ALLOWED_REASON})
        }
        "selfsubjectrulesreviews" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        _ => {
            return Err(ApiError::internal(format!(
                "{plural} is not a virtual kind"
            )));
        }
    };
    Ok(respond::json(201, &body))
}

/// `POST /api/v1/namespaces/{ns}/bindings`: binds the pod the Binding is named after.
fn bind(shared: &Arc<Shared>, namespace: &str, binding: &Value) -> ApiResult<Response<Body>> {
    let pods = shared
        .state
        .read()
        .registry
        .get("", "v1", "pods")
        .ok_or_else(|| ApiError::internal("pods are not served"))?;
    subresource::bind(shared, &pods, namespace, meta::name(binding), binding)
}

/// A TokenReview's status: the ServiceAccount a token this server issued stands for.
fn token_review(shared: &Arc<Shared>, spec: &Value) -> Value {
    let token = spec["token"].as_str().unwrap_or_default();
    let wanted = meta::string_list(&spec["audiences"]);
    match authenticate(shared, token) {
        Ok((user, audiences)) => {
            let targets = if wanted.is_empty() {
                vec![tokens::DEFAULT_AUDIENCE.to_string()]
            } else {
                wanted
            };
            let matched: Vec<&String> = audiences.iter().filter(|a| targets.contains(a)).collect();
            if matched.is_empty() {
                return json!({"authenticated": false, "user": {}, "error": format!(
                    "[invalid bearer token, token audiences {audiences:?} is invalid for the target audiences {targets:?}]"
                )});
            }
            json!({"authenticated": true, "user": user.to_json(), "audiences": matched})
        }
        Err(error) => json!({"authenticated": false, "user": {},
            "error": format!("[invalid bearer token, {error}]")}),
    }
}

/// The user a ServiceAccount token stands for, and the token's audiences; the account must
/// still exist with the uid the token was issued for.
pub fn authenticate(shared: &Shared, token: &str) -> Result<(User, Vec<String>), &'static str> {
    let claims = shared.signer.verify(token, tokens::now())?;
    let key = ResourceKey {
        group: String::new(),
        plural: "serviceaccounts".into(),
    };
    let state = shared.state.read();
    let account = state
        .get(&key, &claims.namespace, &claims.name)
        .ok_or("service account has been deleted")?;
    if meta::uid(&account) != claims.uid {
        return Err("service account uid does not match the token");
    }
    Ok((
        User::service_account(&claims.namespace, &claims.name, &claims.uid),
        claims.audiences,
    ))
}
