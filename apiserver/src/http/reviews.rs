//! The virtual kinds that are created to get an answer and never stored: TokenReview and
//! SelfSubjectReview (authentication.k8s.io), the access and rules reviews
//! (authorization.k8s.io, answered by the server's authorizer) and Binding.

use std::sync::Arc;

use axum::body::Body;
use http::Response;
use serde_json::{Value, json};

use super::tokens;
use super::{Shared, respond, subresource};
use crate::auth;
use crate::auth::User;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::resources::ResourceKey;

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
        "selfsubjectaccessreviews" => {
            let state = shared.state.read();
            auth::access_review(shared.config.authorization, &state, user, &body["spec"])?
        }
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            let subject = reviewed_user(&body["spec"]);
            let state = shared.state.read();
            auth::access_review(shared.config.authorization, &state, &subject, &body["spec"])?
        }
        "selfsubjectrulesreviews" => {
            let namespace = body["spec"]["namespace"].as_str().unwrap_or_default();
            let state = shared.state.read();
            auth::rules_review(shared.config.authorization, &state, user, namespace)
        }
        _ => {
            return Err(ApiError::internal(format!(
                "{plural} is not a virtual kind"
            )));
        }
    };
    Ok(respond::json(201, &body))
}

/// The user a SubjectAccessReview asks about.
fn reviewed_user(spec: &Value) -> User {
    User {
        username: spec["user"].as_str().unwrap_or_default().to_string(),
        uid: spec["uid"].as_str().unwrap_or_default().to_string(),
        groups: meta::string_list(&spec["groups"]),
    }
}

/// `POST /api/v1/namespaces/{ns}/bindings`: binds the pod the Binding is named after.
fn bind(shared: &Arc<Shared>, namespace: &str, binding: &Value) -> ApiResult<Response<Body>> {
    let pods = shared
        .state
        .read()
        .registry()
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
