//! One admission request's calls: the AdmissionReview each webhook is sent, and what its
//! answer does (a patch, a denial, warnings, or a failure under its failurePolicy).

use serde_json::{Value, json};

use super::hooks::Hook;
use super::{Write, call, call_failed};
use crate::auth::User;
use crate::error::{ApiError, ApiResult};

/// The calls of one admission request, sharing its uid and gathering warnings.
pub(super) struct Calls<'a> {
    write: &'a Write<'a>,
    old: Option<&'a Value>,
    uid: String,
    warnings: Vec<String>,
}

impl<'a> Calls<'a> {
    /// The calls for `write` of an object whose stored version is `old`.
    pub(super) fn new(write: &'a Write<'a>, old: Option<&'a Value>) -> Self {
        Self {
            write,
            old,
            uid: uuid::Uuid::new_v4().to_string(),
            warnings: Vec::new(),
        }
    }

    /// Calls a mutating webhook and applies its patch to `object`; whether it changed it.
    pub(super) async fn mutate(
        &mut self,
        hook: &Hook,
        object: &mut Option<Value>,
    ) -> ApiResult<bool> {
        let Some(response) = self.call(hook, object.as_ref()).await? else {
            return Ok(false);
        };
        let (Some(target), Some(patch)) = (object.as_mut(), patch_of(&response)) else {
            return Ok(false);
        };
        let patch = patch.map_err(|reason| call_failed(&hook.name, &reason))?;
        let before = target.clone();
        json_patch::patch(target, &patch).map_err(|err| {
            ApiError::internal(format!(
                "Internal error occurred: admission webhook {:?} returned a patch that cannot be applied: {err}",
                hook.name
            ))
        })?;
        Ok(*target != before)
    }

    /// Calls a validating webhook on the object about to be written.
    pub(super) async fn validate(&mut self, hook: &Hook, object: Option<&Value>) -> ApiResult<()> {
        self.call(hook, object).await.map(|_| ())
    }

    /// The warnings the webhooks returned.
    pub(super) fn into_warnings(self) -> Vec<String> {
        self.warnings
    }

    /// Calls `hook`: its allowed response, `None` when a failure is ignored, or the error
    /// the client gets (a denial, or a failure under `failurePolicy: Fail`).
    async fn call(&mut self, hook: &Hook, object: Option<&Value>) -> ApiResult<Option<Value>> {
        if self.write.dry_run && !hook.dry_run_safe {
            return Err(ApiError::bad_request(format!(
                "admission webhook {:?} does not support dry run",
                hook.name
            )));
        }
        let review = self.review(object);
        let answer = match &hook.endpoint {
            Ok(endpoint) => call::call(endpoint, &review, hook.timeout).await,
            Err(invalid) => Err(invalid.clone()),
        };
        let answer = answer.and_then(|answer| self.response_of(answer));
        let response = match answer {
            Ok(response) => response,
            Err(reason) if hook.fail_closed => return Err(call_failed(&hook.name, &reason)),
            Err(reason) => {
                tracing::warn!(webhook = %hook.name, %reason, "failed calling webhook, failing open");
                return Ok(None);
            }
        };
        let warnings = response["warnings"].as_array().into_iter().flatten();
        self.warnings
            .extend(warnings.filter_map(Value::as_str).map(str::to_string));
        if response["allowed"].as_bool() != Some(true) {
            return Err(denial(&hook.name, &response["status"]));
        }
        Ok(Some(response))
    }

    /// The AdmissionReview of this request for `object`.
    fn review(&self, object: Option<&Value>) -> Value {
        let a = &self.write.attributes;
        let kind = object
            .or(self.old)
            .map(|o| o["kind"].clone())
            .unwrap_or_default();
        let gvk = json!({"group": a.group, "version": a.version, "kind": kind});
        let gvr = json!({"group": a.group, "version": a.version, "resource": a.plural});
        let old = match a.operation {
            "CREATE" => None,
            _ => self.old,
        };
        let options_kind = match a.operation {
            "CREATE" => "CreateOptions",
            "UPDATE" => "UpdateOptions",
            _ => "DeleteOptions",
        };
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": self.uid,
                "kind": gvk,
                "resource": gvr,
                "requestKind": gvk,
                "requestResource": gvr,
                "name": self.write.name,
                "namespace": (!a.namespace.is_empty()).then_some(a.namespace),
                "operation": a.operation,
                "userInfo": user_info(self.write.user),
                "object": if a.operation == "DELETE" { None } else { object },
                "oldObject": old,
                "dryRun": self.write.dry_run,
                "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind},
            },
        })
    }

    /// The response of an answered review, checked against the request.
    fn response_of(&self, answer: Value) -> Result<Value, String> {
        let response = answer
            .get("response")
            .cloned()
            .ok_or("webhook response was absent")?;
        match response["uid"].as_str() {
            Some(uid) if uid == self.uid => Ok(response),
            other => Err(format!(
                "expected response.uid={:?}, got {:?}",
                self.uid,
                other.unwrap_or_default()
            )),
        }
    }
}

/// The JSON patch of a response, if it has one: base64 (as Go sends `[]byte`) or an
/// array of bytes (as kube-rs does).
fn patch_of(response: &Value) -> Option<Result<json_patch::Patch, String>> {
    let bytes = match &response["patch"] {
        Value::String(b64) => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|err| format!("invalid patch: {err}"))
        }
        Value::Array(items) => Ok(items
            .iter()
            .filter_map(|b| b.as_u64())
            .map(|b| b as u8)
            .collect()),
        _ => return None,
    };
    Some(bytes.and_then(|bytes| {
        serde_json::from_slice(&bytes).map_err(|err| format!("invalid patch: {err}"))
    }))
}

/// The error a denial answers the client with, as kube-apiserver words it.
fn denial(name: &str, status: &Value) -> ApiError {
    let denied = format!("admission webhook {name:?} denied the request");
    let message = match status["message"].as_str().unwrap_or_default() {
        "" => format!("{denied} without explanation"),
        message => format!("{denied}: {message}"),
    };
    let code = status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(0);
    ApiError {
        code: code.max(400),
        reason: status["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
            .into(),
        message,
        details: None,
    }
}

/// The request's `userInfo`, as kube-apiserver sends it: name, uid and groups.
fn user_info(user: &User) -> Value {
    let mut info = json!({"username": user.username, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    info
}
