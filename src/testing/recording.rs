//! The recording layer between the code under test and the embedded API server: it records
//! every write in order, records events, runs reactors, and names `generateName` creates.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::request::Parts;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use serde_json::Value;
use tower::{Service, ServiceExt};

use super::reactor::{Action, ApiStatus, Reactor};
use super::refs::{ApplyRef, DeleteCollectionRef, DeleteRef, Event, PatchRef};

type Response = http::Response<axum::body::Body>;

/// Everything the code under test wrote, by kind of write, in order.
#[derive(Clone, Debug, Default)]
pub(super) struct Observed {
    pub(super) creates: Vec<Value>,
    pub(super) updates: Vec<Value>,
    pub(super) status_updates: Vec<Value>,
    pub(super) patches: Vec<PatchRef>,
    pub(super) status_patches: Vec<PatchRef>,
    pub(super) deletes: Vec<DeleteRef>,
    pub(super) delete_collections: Vec<DeleteCollectionRef>,
    pub(super) applies: Vec<ApplyRef>,
    pub(super) status_applies: Vec<ApplyRef>,
    pub(super) events: Vec<Event>,
}

/// The shared state of one recording client.
pub(super) struct Recording {
    observed: Mutex<Observed>,
    reactors: Mutex<Vec<Reactor>>,
    generated: AtomicU32,
    kinds: Mutex<HashMap<(String, String, String), String>>,
}

/// Where a resource request goes.
struct Target {
    group: String,
    version: String,
    namespace: Option<String>,
    plural: String,
    name: Option<String>,
    subresource: Option<String>,
}

/// What the layer does with a request.
enum Intercept {
    Forward,
    Rewrite(Bytes),
    Fail(ApiStatus),
}

impl Recording {
    /// A recording that runs `reactors` (the first has the highest priority).
    pub(super) fn new(reactors: Vec<Reactor>) -> Arc<Self> {
        Arc::new(Self {
            observed: Mutex::default(),
            reactors: Mutex::new(reactors),
            generated: AtomicU32::new(0),
            kinds: Mutex::default(),
        })
    }

    /// What was observed so far.
    pub(super) fn observed(&self) -> Observed {
        self.observed.lock().clone()
    }

    /// What was observed so far, forgotten here (the next call starts afresh).
    pub(super) fn take(&self) -> Observed {
        std::mem::take(&mut *self.observed.lock())
    }

    /// Replaces the reactors (for the next requests).
    pub(super) fn set_reactors(&self, reactors: Vec<Reactor>) {
        *self.reactors.lock() = reactors;
    }

    /// A `kube::Client` whose requests pass through this recording to `router`.
    pub(super) fn client(self: &Arc<Self>, router: axum::Router) -> kube::Client {
        let service = RecordingService {
            router,
            recording: self.clone(),
        };
        kube::Client::new(service, "default")
    }

    async fn handle(
        &self,
        router: axum::Router,
        request: http::Request<kube::client::Body>,
    ) -> Response {
        let (mut parts, body) = request.into_parts();
        let mut bytes = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(err) => {
                return status_response(&ApiStatus::new(400, "BadRequest", err.to_string()));
            }
        };
        if let Some(target) = parse_path(parts.uri.path()) {
            match self.intercept(&router, &parts, &target, &bytes).await {
                Intercept::Forward => {}
                Intercept::Rewrite(body) => {
                    bytes = body;
                    parts.headers.remove(CONTENT_LENGTH);
                }
                Intercept::Fail(status) => return status_response(&status),
            }
        }
        let request = http::Request::from_parts(parts, axum::body::Body::from(bytes));
        match router.oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    async fn intercept(
        &self,
        router: &axum::Router,
        parts: &Parts,
        target: &Target,
        bytes: &Bytes,
    ) -> Intercept {
        let query = query_pairs(parts.uri.query());
        let verb = verb_of(&parts.method, target, &query);
        if verb == "watch" {
            return Intercept::Forward;
        }
        let body: Option<Value> = serde_json::from_slice(bytes).ok();
        if target.plural == "events" && matches!(verb, "create" | "patch") {
            if let Some(body) = &body {
                self.observed.lock().events.push(event_of(body));
            }
            return Intercept::Forward;
        }
        let kind = self.kind_of(router, target).await;
        let name = target.name.clone().or_else(|| {
            let name = body.as_ref()?["metadata"]["name"].as_str()?;
            Some(name.to_string())
        });
        let action = Action {
            verb: verb.into(),
            group: target.group.clone(),
            version: target.version.clone(),
            kind: if verb == "list" {
                format!("{kind}List")
            } else {
                kind
            },
            namespace: target.namespace.clone(),
            name,
            subresource: target.subresource.clone(),
            apply: patch_type(parts) == APPLY_PATCH,
            body,
        };
        self.record(&action, parts, &query, bytes);
        let reacted = self.reactors.lock().iter().find_map(|r| r.react(&action));
        if let Some(status) = reacted {
            return Intercept::Fail(status);
        }
        match (verb, action.body) {
            ("create", Some(mut body)) => self.generate_name(&mut body),
            _ => Intercept::Forward,
        }
    }

    /// Names a create that has only a generateName: `<generateName>001`, `002`, ...
    fn generate_name(&self, body: &mut Value) -> Intercept {
        let named = body["metadata"]["name"]
            .as_str()
            .is_some_and(|n| !n.is_empty());
        let Some(prefix) = body["metadata"]["generateName"]
            .as_str()
            .map(str::to_string)
        else {
            return Intercept::Forward;
        };
        if named {
            return Intercept::Forward;
        }
        let n = self.generated.fetch_add(1, Ordering::SeqCst) + 1;
        body["metadata"]["name"] = Value::from(format!("{prefix}{n:03}"));
        match serde_json::to_vec(body) {
            Ok(bytes) => Intercept::Rewrite(bytes.into()),
            Err(err) => Intercept::Fail(ApiStatus::new(500, "InternalError", err.to_string())),
        }
    }

    /// Records a write (reads are not recorded).
    fn record(
        &self,
        action: &Action,
        parts: &Parts,
        query: &HashMap<String, String>,
        bytes: &Bytes,
    ) {
        let status = action.subresource.as_deref() == Some("status");
        let mut observed = self.observed.lock();
        let object = || action.body.clone().unwrap_or_default();
        let name = || action.name.clone().unwrap_or_default();
        match action.verb.as_str() {
            "create" => observed.creates.push(object()),
            "update" if status => observed.status_updates.push(object()),
            "update" => observed.updates.push(object()),
            "patch" => {
                let patch_type = patch_type(parts).to_string();
                if action.apply {
                    let apply = ApplyRef {
                        group: action.group.clone(),
                        kind: action.kind.clone(),
                        namespace: action.namespace.clone(),
                        name: name(),
                        field_manager: query.get("fieldManager").cloned(),
                        body: object(),
                    };
                    let list = if status {
                        &mut observed.status_applies
                    } else {
                        &mut observed.applies
                    };
                    list.push(apply);
                } else {
                    let patch = PatchRef {
                        group: action.group.clone(),
                        kind: action.kind.clone(),
                        namespace: action.namespace.clone(),
                        name: name(),
                        subresource: action.subresource.clone(),
                        patch_type,
                        patch: String::from_utf8_lossy(bytes).into_owned(),
                    };
                    let list = if status {
                        &mut observed.status_patches
                    } else {
                        &mut observed.patches
                    };
                    list.push(patch);
                }
            }
            "delete" => observed.deletes.push(DeleteRef {
                group: action.group.clone(),
                kind: action.kind.clone(),
                namespace: action.namespace.clone(),
                name: name(),
            }),
            "deletecollection" => {
                let selector = |key: &str| query.get(key).filter(|s| !s.is_empty()).cloned();
                observed.delete_collections.push(DeleteCollectionRef {
                    group: action.group.clone(),
                    kind: action.kind.clone(),
                    namespace: action.namespace.clone(),
                    labels: selector("labelSelector"),
                    fields: selector("fieldSelector"),
                });
            }
            _ => {}
        }
    }

    /// The kind a plural names, asked of the server's discovery (and remembered).
    async fn kind_of(&self, router: &axum::Router, target: &Target) -> String {
        let key = (
            target.group.clone(),
            target.version.clone(),
            target.plural.clone(),
        );
        if let Some(kind) = self.kinds.lock().get(&key) {
            return kind.clone();
        }
        let path = match target.group.as_str() {
            "" => format!("/api/{}", target.version),
            group => format!("/apis/{group}/{}", target.version),
        };
        let found = discover_kind(router, &path, &target.plural).await;
        let kind = found.unwrap_or_else(|| target.plural.clone());
        self.kinds.lock().insert(key, kind.clone());
        kind
    }
}

/// The kind of `plural` in the discovery document at `path`.
async fn discover_kind(router: &axum::Router, path: &str, plural: &str) -> Option<String> {
    let request = http::Request::get(path)
        .body(axum::body::Body::empty())
        .ok()?;
    let response = router.clone().oneshot(request).await.ok()?;
    let bytes = response.into_body().collect().await.ok()?.to_bytes();
    let list: Value = serde_json::from_slice(&bytes).ok()?;
    let resource = list["resources"]
        .as_array()?
        .iter()
        .find(|r| r["name"] == plural)?;
    Some(resource["kind"].as_str()?.to_string())
}

/// The tower service behind the recording `kube::Client`.
#[derive(Clone)]
struct RecordingService {
    router: axum::Router,
    recording: Arc<Recording>,
}

impl Service<http::Request<kube::client::Body>> for RecordingService {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let router = self.router.clone();
        let recording = self.recording.clone();
        Box::pin(async move { Ok(recording.handle(router, request).await) })
    }
}

/// The content type of server-side apply patches.
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// A request's content type (empty when it has none).
fn patch_type(parts: &Parts) -> &str {
    parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// The resource a path names; `None` for discovery and other non-resource paths.
fn parse_path(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, rest @ ..] if !rest.is_empty() => (Some(*namespace), rest),
        _ => (None, rest),
    };
    let (plural, rest) = rest.split_first()?;
    let owned = |s: Option<&&str>| s.map(|s| s.to_string());
    Some(Target {
        group: group.to_string(),
        version: version.to_string(),
        namespace: namespace.map(str::to_string),
        plural: plural.to_string(),
        name: owned(rest.first()),
        subresource: owned(rest.get(1)),
    })
}

fn query_pairs(query: Option<&str>) -> HashMap<String, String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

fn verb_of(method: &Method, target: &Target, query: &HashMap<String, String>) -> &'static str {
    let named = target.name.is_some();
    match *method {
        Method::GET if query.get("watch").is_some_and(|w| w == "true" || w == "1") => "watch",
        Method::GET if named => "get",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => "other",
    }
}

/// An event as published by the events.k8s.io/v1 recorder (or a core/v1 one).
fn event_of(body: &Value) -> Event {
    let regarding = match &body["regarding"] {
        Value::Null => &body["involvedObject"],
        regarding => regarding,
    };
    let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
    let message = match &body["note"] {
        Value::Null => &body["message"],
        note => note,
    };
    Event {
        kind: text(&regarding["kind"]),
        namespace: regarding["namespace"].as_str().map(str::to_string),
        name: text(&regarding["name"]),
        type_: text(&body["type"]),
        reason: text(&body["reason"]),
        message: text(message),
    }
}

fn status_response(status: &ApiStatus) -> Response {
    let code = StatusCode::from_u16(status.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::to_vec(&status.body()).unwrap_or_default();
    let mut response = http::Response::new(axum::body::Body::from(body));
    *response.status_mut() = code;
    if let Ok(value) = http::HeaderValue::from_str("application/json") {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
}
