//! Reactors: functions that see each request before the server does and may fail it.

use std::sync::Arc;

use serde_json::{Value, json};

/// A request as reactors see it.
#[derive(Clone, Debug)]
pub struct Action {
    /// `get`, `list`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// The API group ("" for core).
    pub group: String,
    /// The API version (`v1`).
    pub version: String,
    /// The kind (`ConfigMap`; `ConfigMapList` for lists).
    pub kind: String,
    /// The namespace, if any.
    pub namespace: Option<String>,
    /// The object's name (from the path, or the body of a create).
    pub name: Option<String>,
    /// The subresource, if any.
    pub subresource: Option<String>,
    /// Whether a `patch` is a server-side apply.
    pub apply: bool,
    /// The body, if any.
    pub body: Option<Value>,
}

/// The failure a reactor answers with, sent as a `metav1.Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiStatus {
    /// The HTTP status code.
    pub code: u16,
    /// The machine-readable reason, e.g. `Conflict`.
    pub reason: String,
    /// The message.
    pub message: String,
}

impl ApiStatus {
    /// A failure with this code, reason and message.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// The `metav1.Status` body.
    pub(super) fn body(&self) -> Value {
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code,
        })
    }
}

/// The function behind a [`Reactor`].
type React = dyn Fn(&Action) -> Option<ApiStatus> + Send + Sync;

/// Sees a request before the server; `Some` fails it with that status.
#[derive(Clone)]
pub struct Reactor(Arc<React>);

impl Reactor {
    /// A reactor from a function.
    pub fn new(react: impl Fn(&Action) -> Option<ApiStatus> + Send + Sync + 'static) -> Self {
        Self(Arc::new(react))
    }

    /// Runs the reactor.
    pub(super) fn react(&self, action: &Action) -> Option<ApiStatus> {
        (self.0)(action)
    }
}

/// Fails requests of a verb on a kind (reconciler.io's `InduceFailure`); narrow it with the
/// builder methods.
#[derive(Clone, Debug)]
pub struct InduceFailure {
    verb: String,
    kind: String,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
    error: Option<ApiStatus>,
}

/// Fails every `verb` request on `kind` with a 500 `"inducing failure for <verb> <kind>"`.
pub fn induce_failure(verb: &str, kind: &str) -> InduceFailure {
    InduceFailure {
        verb: verb.into(),
        kind: kind.into(),
        namespace: None,
        name: None,
        subresource: None,
        error: None,
    }
}

impl InduceFailure {
    /// Only in this namespace.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only for the object of this name.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Only on this subresource (e.g. "status").
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.subresource = Some(subresource.into());
        self
    }

    /// Fails with this status instead of the default.
    pub fn error(mut self, error: ApiStatus) -> Self {
        self.error = Some(error);
        self
    }

    fn matches(&self, action: &Action) -> bool {
        let wanted = |want: &Option<String>, got: &Option<String>| {
            want.as_ref().is_none_or(|want| Some(want) == got.as_ref())
        };
        self.verb == action.verb
            && self.kind == action.kind
            && wanted(&self.namespace, &action.namespace)
            && wanted(&self.name, &action.name)
            && wanted(&self.subresource, &action.subresource)
    }
}

impl From<InduceFailure> for Reactor {
    fn from(failure: InduceFailure) -> Self {
        Reactor::new(move |action| {
            failure.matches(action).then(|| {
                failure.error.clone().unwrap_or_else(|| {
                    let message = format!("inducing failure for {} {}", failure.verb, failure.kind);
                    ApiStatus::new(500, "InternalError", message)
                })
            })
        })
    }
}
