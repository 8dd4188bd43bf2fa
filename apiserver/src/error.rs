//! API errors, answered as `metav1.Status` bodies with kube-apiserver's codes and reasons.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::resources::ResourceInfo;

/// One field-level cause of an `Invalid` error.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// Machine-readable reason, e.g. `FieldValueInvalid`.
    pub reason: &'static str,
    /// The field path, e.g. `metadata.name`.
    pub field: String,
    /// What is wrong, in kube-apiserver's words.
    pub message: String,
}

impl Cause {
    /// `field: Invalid value: "value": detail`.
    pub fn invalid(field: &str, value: &Value, detail: &str) -> Self {
        Cause {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: {}: {detail}", render_value(value)),
        }
    }

    /// `field: Required value: detail`.
    pub fn required(field: &str, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Cause {
            reason: "FieldValueRequired",
            field: field.into(),
            message,
        }
    }

    /// `field: Invalid value: <value as Go prints it>: detail`, for values kube prints with
    /// Go's `%#v` (`[]string{"10.96.0.9"}`, a struct).
    pub fn invalid_go(field: &str, go_value: &str, detail: &str) -> Self {
        Cause {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: {go_value}: {detail}"),
        }
    }

    /// `field: Unsupported value: "x": supported values: "a", "b"` (`field.NotSupported`).
    pub fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Self {
        let supported: Vec<String> = supported.iter().map(|v| format!("{v:?}")).collect();
        Cause {
            reason: "FieldValueNotSupported",
            field: field.into(),
            message: format!(
                "Unsupported value: {}: supported values: {}",
                render_value(value),
                supported.join(", ")
            ),
        }
    }

    /// `field: Duplicate value: "x"` (`field.Duplicate`).
    pub fn duplicate(field: &str, value: &Value) -> Self {
        Cause {
            reason: "FieldValueDuplicate",
            field: field.into(),
            message: format!("Duplicate value: {}", render_value(value)),
        }
    }

    /// `field: Forbidden: detail`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Cause {
            reason: "FieldValueForbidden",
            field: field.into(),
            message: format!("Forbidden: {detail}"),
        }
    }

    /// `field: Too long: may not be more than N bytes` (`field.TooLong`).
    pub fn too_long(field: &str, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Cause {
            reason: "FieldValueTooLong",
            field: field.into(),
            message: format!("Too long: may not be more than {max} {unit}"),
        }
    }

    fn full_message(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }
}

/// Renders a value as kube-apiserver does inside `Invalid value: ...`.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// An error answered to the client as a `Status` with an HTTP code.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason`, e.g. `NotFound`.
    pub reason: Cow<'static, str>,
    /// Human-readable message.
    pub message: String,
    /// `Status.details`, when the error is about one object.
    pub details: Option<Box<Value>>,
}

impl ApiError {
    fn new(code: u16, reason: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    fn object_details(info: &ResourceInfo, name: &str) -> Value {
        details(name, &info.group, &info.plural)
    }

    /// 404: `configmaps "x" not found`.
    pub fn not_found(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", info.qualified_plural()),
        )
        .with_details(Self::object_details(info, name))
    }

    /// 404 for a namespace that does not exist.
    pub fn namespace_not_found(namespace: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("namespaces \"{namespace}\" not found"),
        )
        .with_details(details(namespace, "", "namespaces"))
    }

    /// 404 for a path that names no resource.
    pub fn no_such_path(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource (path {path})"),
        )
    }

    /// 409: `configmaps "x" already exists`.
    pub fn already_exists(info: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", info.qualified_plural()),
        )
        .with_details(Self::object_details(info, name))
    }

    /// 409: the object has been modified (stale resourceVersion).
    pub fn conflict_modified(info: &ResourceInfo, name: &str) -> Self {
        Self::conflict(
            info,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 with a detail, e.g. a failed precondition.
    pub fn conflict(info: &ResourceInfo, name: &str, detail: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {detail}",
                info.qualified_plural()
            ),
        )
        .with_details(Self::object_details(info, name))
    }

    /// 422: `Kind.group "name" is invalid: cause, cause` (`Kind` alone in the core group).
    pub fn invalid(info: &ResourceInfo, name: &str, causes: Vec<Cause>) -> Self {
        Self::invalid_kind(&info.group, &info.kind, name, causes)
    }

    /// 422 for an object of `kind` in `group` (e.g. a `Scale.autoscaling`).
    pub fn invalid_kind(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let joined = causes.iter().map(Cause::full_message).collect::<Vec<_>>();
        let message = if joined.len() == 1 {
            joined[0].clone()
        } else {
            format!("[{}]", joined.join(", "))
        };
        let causes_json: Vec<Value> = causes
            .iter()
            .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
            .collect();
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        Self::new(
            422,
            "Invalid",
            format!("{qualified} \"{name}\" is invalid: {message}"),
        )
        .with_details({
            let mut details = details(name, group, kind);
            details["causes"] = Value::Array(causes_json);
            details
        })
    }

    /// 400 with a message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 403: the request is refused for the named object.
    pub fn forbidden(info: &ResourceInfo, name: &str, detail: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!(
                "{} \"{name}\" is forbidden: {detail}",
                info.qualified_plural()
            ),
        )
        .with_details(Self::object_details(info, name))
    }

    /// 403: the authorizer refused a request (`group`, `resource` and `name` may be "").
    pub fn denied(group: &str, resource: &str, name: &str, message: String) -> Self {
        Self::new(403, "Forbidden", message).with_details(details(name, group, resource))
    }

    /// 429: a request refused for now, with the causes in `details`.
    pub fn too_many_requests(message: impl Into<String>, causes: Vec<Value>) -> Self {
        Self::new(429, "TooManyRequests", message).with_details(json!({"causes": causes}))
    }

    /// 409 with a message about an object, e.g. a pod already bound to a node.
    pub fn conflict_message(info: &ResourceInfo, name: &str, message: impl Into<String>) -> Self {
        Self::new(409, "Conflict", message).with_details(Self::object_details(info, name))
    }

    /// 405 with a message.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 410: a resourceVersion older than the retained history.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 415: a body type the endpoint does not take.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/merge-patch+json, application/json-patch+json (got {content_type:?})"
            ),
        )
    }

    /// 401: no or wrong bearer token.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 413: the body is larger than the server accepts (worded as kube's limitedReadBody).
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 406: the client accepts no representation the server can produce.
    pub fn not_acceptable(accept: &str) -> Self {
        Self::new(
            406,
            "NotAcceptable",
            format!("only application/json is served; the request asked for {accept:?}"),
        )
    }

    /// An injected failure with any code and reason.
    pub fn injected(code: u16, reason: &str, message: String) -> Self {
        Self::new(code, reason.to_string(), message)
    }

    /// 503: durable storage failed earlier, so writes are refused.
    pub fn storage_unavailable(failure: &str) -> Self {
        Self::new(
            503,
            "ServiceUnavailable",
            format!("writes are refused because durable storage failed: {failure}"),
        )
    }

    /// 500 for a fault inside the server.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// The `metav1.Status` body of this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = Value::clone(details);
        }
        status
    }
}

/// `Status.details` naming one object: `name`, `group` and `kind`, each left out when
/// empty (Go's `omitempty`), so the core group writes no `group`.
pub fn details(name: &str, group: &str, kind: &str) -> Value {
    let fields = [("name", name), ("group", group), ("kind", kind)];
    Value::Object(
        fields
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(key, value)| (key.to_string(), Value::from(value)))
            .collect(),
    )
}

/// Result of a server operation.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn not_found_names_the_group_qualified_resource() {
        let registry = Registry::with_builtins();
        let info = registry.get("apps", "v1", "deployments").unwrap();
        let status = ApiError::not_found(&info, "web").to_status();
        assert_eq!(status["message"], "deployments.apps \"web\" not found");
        assert_eq!(status["code"], 404);
        assert_eq!(status["details"]["group"], "apps");
        assert_eq!(status["details"]["kind"], "deployments");
    }

    #[test]
    fn invalid_lists_every_cause() {
        let registry = Registry::with_builtins();
        let info = registry.get("", "v1", "configmaps").unwrap();
        let err = ApiError::invalid(
            &info,
            "Bad",
            vec![
                Cause::invalid("metadata.name", &json!("Bad"), "must be lower case"),
                Cause::required("metadata.namespace", ""),
            ],
        );
        assert_eq!(
            err.message,
            "ConfigMap \"Bad\" is invalid: [metadata.name: Invalid value: \"Bad\": must be lower case, metadata.namespace: Required value]"
        );
        assert_eq!(
            err.to_status()["details"]["causes"][0]["field"],
            "metadata.name"
        );
    }
}
