//! Subresources other than `status`: the ones that write one field of their object
//! (`pods/ephemeralcontainers`, `certificatesigningrequests/approval`, `namespaces/finalize`)
//! and the ones that do something (`pods/binding`, `pods/eviction`,
//! `serviceaccounts/token`), or would reach a kubelet (`pods/log`, `exec`, `attach`,
//! `portforward`, `proxy`; `nodes/proxy`, `services/proxy`).

use std::sync::Arc;

use axum::body::Body;
use http::{Method, Response};
use serde_json::{Value, json};

use super::tokens::{self, Claims};
use super::{Shared, respond};
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::resources::ResourceInfo;
use crate::store::{DeleteOptions, Target, WriteOptions};

/// The field a one-field subresource writes, if `sub` is one.
pub fn part(info: &ResourceInfo, sub: &str) -> Option<&'static [&'static str]> {
    if info.custom {
        return None;
    }
    match (info.group.as_str(), info.plural.as_str(), sub) {
        ("", "pods", "ephemeralcontainers") => Some(&["spec", "ephemeralContainers"]),
        ("certificates.k8s.io", "certificatesigningrequests", "approval") => {
            Some(&["status", "conditions"])
        }
        ("", "namespaces", "finalize") => Some(&["spec", "finalizers"]),
        _ => None,
    }
}

/// One request on an acting subresource.
pub struct SubCall<'a> {
    /// The parent's kind.
    pub info: &'a Arc<ResourceInfo>,
    /// The parent's namespace ("" for cluster-scoped kinds).
    pub namespace: &'a str,
    /// The parent's name.
    pub name: &'a str,
    /// The subresource.
    pub sub: &'a str,
    /// The request body, if it had one.
    pub body: Option<Value>,
}

/// Serves a request on an acting subresource.
pub fn serve(
    shared: &Arc<Shared>,
    method: &Method,
    call: SubCall<'_>,
) -> ApiResult<Response<Body>> {
    let SubCall {
        info,
        namespace,
        name,
        sub,
        ..
    } = call;
    match (info.plural.as_str(), sub, method.as_str()) {
        ("pods", "log" | "exec" | "attach" | "portforward" | "proxy", _) => {
            let pod = shared
                .state
                .read()
                .get(&info.key(), namespace, name)
                .ok_or_else(|| ApiError::not_found(info, name))?;
            let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
            if node.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "pod {name} does not have a host assigned"
                )));
            }
            Err(no_kubelet(node))
        }
        ("nodes", "proxy", _) => {
            shared
                .state
                .read()
                .get(&info.key(), "", name)
                .ok_or_else(|| ApiError::not_found(info, name))?;
            Err(no_kubelet(name))
        }
        ("services", "proxy", _) => Err(ApiError::injected(
            503,
            "ServiceUnavailable",
            format!("no endpoints available for service \"{name}\""),
        )),
        ("pods", "binding", "POST") => {
            let body = call.body.unwrap_or(Value::Null);
            bind(shared, info, namespace, name, &body)
        }
        ("pods", "eviction", "POST") => {
            let body = call.body.unwrap_or(Value::Null);
            let options = DeleteOptions {
                precondition_uid: body["deleteOptions"]["preconditions"]["uid"]
                    .as_str()
                    .map(str::to_string),
                dry_run: body["deleteOptions"]["dryRun"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|v| v == "All")),
                ..DeleteOptions::default()
            };
            shared
                .state
                .transact(|state| state.evict(info, namespace, name, &options))?;
            Ok(respond::json(201, &success()))
        }
        ("serviceaccounts", "token", "POST") => token_request(
            shared,
            info,
            namespace,
            name,
            call.body.unwrap_or(Value::Null),
        ),
        _ => Err(ApiError::method_not_allowed(format!(
            "{method} is not supported on {}/{sub}",
            info.plural
        ))),
    }
}

/// A `Status` with `status: Success`, as an eviction or binding answers.
fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})
}

/// What a request that needs a kubelet meets: none runs.
fn no_kubelet(node: &str) -> ApiError {
    ApiError::internal(format!(
        "error dialing backend: no kubelet serves node {node:?} (dynrec runs no kubelet)"
    ))
}

/// Binds a pod to a node (`pods/binding`, or `bindings` named after the pod): sets
/// `spec.nodeName` and the `PodScheduled` condition.
pub fn bind(
    shared: &Arc<Shared>,
    pods: &Arc<ResourceInfo>,
    namespace: &str,
    name: &str,
    binding: &Value,
) -> ApiResult<Response<Body>> {
    let node = binding["target"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if node.is_empty() {
        return Err(ApiError::invalid(
            pods,
            name,
            vec![Cause::required("target.name", "")],
        ));
    }
    shared.state.transact(|state| {
        let pod = state
            .get(&pods.key(), namespace, name)
            .ok_or_else(|| ApiError::not_found(pods, name))?;
        if let Some(bound) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
            return Err(ApiError::conflict_message(
                pods,
                name,
                format!(
                    "Operation cannot be fulfilled on pods/binding \"{name}\": pod {name} is already assigned to node \"{bound}\""
                ),
            ));
        }
        let mut bound = (*pod).clone();
        bound["spec"]["nodeName"] = Value::from(node.clone());
        let options = WriteOptions::default();
        let stored = state.replace(pods, &pod, bound, Target::Part(&["spec", "nodeName"]), &options)?;
        let mut scheduled = (*stored).clone();
        let condition = json!({"type": "PodScheduled", "status": "True",
            "lastProbeTime": null, "lastTransitionTime": meta::now_rfc3339()});
        match scheduled["status"]["conditions"].as_array_mut() {
            Some(conditions) => {
                conditions.retain(|c| c["type"] != "PodScheduled");
                conditions.push(condition);
            }
            None => scheduled["status"]["conditions"] = json!([condition]),
        }
        state.replace(pods, &stored, scheduled, Target::Status, &options)
    })?;
    Ok(respond::json(201, &success()))
}

/// The shortest token lifetime a TokenRequest may ask for, in seconds.
const MIN_EXPIRATION: i64 = 600;
/// The lifetime of a token whose request names none, in seconds.
const DEFAULT_EXPIRATION: i64 = 3600;

/// `serviceaccounts/token`: a signed token for the ServiceAccount.
fn token_request(
    shared: &Arc<Shared>,
    accounts: &Arc<ResourceInfo>,
    namespace: &str,
    name: &str,
    mut request: Value,
) -> ApiResult<Response<Body>> {
    let account = shared
        .state
        .read()
        .get(&accounts.key(), namespace, name)
        .ok_or_else(|| ApiError::not_found(accounts, name))?;
    let seconds = request["spec"]["expirationSeconds"]
        .as_i64()
        .unwrap_or(DEFAULT_EXPIRATION);
    if seconds < MIN_EXPIRATION {
        let token_requests = ResourceInfo {
            group: "authentication.k8s.io".into(),
            kind: "TokenRequest".into(),
            ..(**accounts).clone()
        };
        return Err(ApiError::invalid(
            &token_requests,
            name,
            vec![Cause::invalid(
                "spec.expirationSeconds",
                &Value::from(seconds),
                "may not specify a duration less than 10 minutes",
            )],
        ));
    }
    let mut audiences = meta::string_list(&request["spec"]["audiences"]);
    if audiences.is_empty() {
        audiences = vec![tokens::DEFAULT_AUDIENCE.to_string()];
    }
    let claims = Claims {
        namespace: namespace.to_string(),
        name: name.to_string(),
        uid: meta::uid(&account).to_string(),
        audiences: audiences.clone(),
    };
    let now = tokens::now();
    let token = shared.signer.issue(&claims, now, seconds);
    let expires = jiff::Timestamp::from_second(now + seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    if !request.is_object() {
        request = json!({});
    }
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    request["kind"] = json!("TokenRequest");
    request["metadata"] = json!({"name": name, "namespace": namespace, "creationTimestamp": null});
    request["spec"]["audiences"] = json!(audiences);
    request["spec"]["expirationSeconds"] = json!(seconds);
    if request["spec"]["boundObjectRef"].is_null() {
        request["spec"]["boundObjectRef"] = Value::Null;
    }
    request["status"] = json!({"token": token, "expirationTimestamp": expires});
    Ok(respond::json(201, &request))
}
