//! `dynrec plan`: what a reconcile of every instance would change, without changing it.
//! The compiled trees run against the live objects through a client that sends every write
//! with `dryRun=All` and records it; each write is shown as a diff of the object before
//! and as the server says it would be after.

use std::fmt::Write as _;
use std::sync::Arc;

use bytes::Bytes;
use http::Method;
use http_body_util::BodyExt;
use kube::api::DynamicObject;
use parking_lot::Mutex;
use serde_json::Value;

use super::build::root_reconciler;
use super::compile::CompiledDefinition;
use crate::client::{Client, ListOptions};
use crate::object::{ObjectKey, line_diff};
use crate::reconcilers::{Config, RootReconciler};

/// One write a reconcile would make.
#[derive(Clone, Debug)]
pub struct PlannedWrite {
    /// `create`, `update`, `patch`, `apply` or `delete`.
    pub verb: String,
    /// The request path (without the query).
    pub path: String,
    /// The object before (`None` for a create).
    pub before: Option<Value>,
    /// The object as the server says it would be (`None` for a delete that removes it).
    pub after: Option<Value>,
    /// The server's refusal, if it refused the dry run.
    pub refused: Option<String>,
}

/// The plan of one instance.
#[derive(Clone, Debug)]
pub struct InstancePlan {
    /// The definition.
    pub definition: String,
    /// The instance.
    pub instance: ObjectKey,
    /// The writes a reconcile would make, in order.
    pub writes: Vec<PlannedWrite>,
    /// The reconcile's error, if it failed.
    pub error: Option<String>,
}

impl InstancePlan {
    /// Whether a reconcile would change anything.
    pub fn changes(&self) -> bool {
        !self.writes.is_empty()
    }
}

/// A write the dry-run client saw.
struct Recorded {
    method: Method,
    path: String,
    status: u16,
    response: Value,
}

/// Plans every instance of `definition` in the cluster `kube` reaches.
pub async fn plan(
    kube: &kube::Client,
    definition: &CompiledDefinition,
) -> Result<Vec<InstancePlan>, crate::client::Error> {
    let recorded: Arc<Mutex<Vec<Recorded>>> = Arc::default();
    let dry = dry_run_client(kube.clone(), recorded.clone());
    let client = Client::new(dry);
    let config = Config::new(client.clone(), "dynrec-plan");
    let reconciler = root_reconciler(definition, &config, &Default::default());
    let instances = match client
        .api_reader()
        .list(&definition.for_kind, &ListOptions::default())
        .await
    {
        Ok(instances) => instances,
        Err(err) if err.is_not_found() => Vec::new(),
        Err(err) => return Err(err),
    };
    let mut plans = Vec::new();
    for instance in instances {
        let Ok(key) = ObjectKey::of(&instance) else {
            continue;
        };
        recorded.lock().clear();
        let outcome = reconciler.reconcile(&key).await;
        let writes = std::mem::take(&mut *recorded.lock());
        let mut planned = Vec::new();
        for write in writes {
            let write = planned_write(kube, write).await;
            // A write the server would answer with the object as it is changes nothing.
            let no_op = write.refused.is_none()
                && write.after.is_some()
                && shown(&write.before) == shown(&write.after);
            if !no_op {
                planned.push(write);
            }
        }
        plans.push(InstancePlan {
            definition: definition.name.clone(),
            instance: key,
            writes: planned,
            error: outcome.error.map(|e| e.to_string()),
        });
    }
    Ok(plans)
}

/// A client whose writes are dry runs, recorded; events are not sent at all.
fn dry_run_client(kube: kube::Client, recorded: Arc<Mutex<Vec<Recorded>>>) -> kube::Client {
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let kube = kube.clone();
        let recorded = recorded.clone();
        async move { dry_run(&kube, &recorded, request).await }
    });
    kube::Client::new(service, "default")
}

async fn dry_run(
    kube: &kube::Client,
    recorded: &Mutex<Vec<Recorded>>,
    request: http::Request<kube::client::Body>,
) -> Result<http::Response<kube::client::Body>, kube::Error> {
    let writes = matches!(
        *request.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    if !writes {
        return kube.send(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let is_event = path.ends_with("/events") || path.contains("/events/");
    let body = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    if is_event {
        // Events say what happened; a plan happens nothing.
        let mut response = http::Response::new(kube::client::Body::from(body.to_vec()));
        *response.status_mut() = http::StatusCode::CREATED;
        return Ok(response);
    }
    let query = match parts.uri.query() {
        Some(q) => format!("{q}&dryRun=All"),
        None => "dryRun=All".into(),
    };
    parts.uri = format!("{path}?{query}")
        .parse()
        .map_err(|e: http::uri::InvalidUri| kube::Error::Service(Box::new(e)))?;
    let method = parts.method.clone();
    let request = http::Request::from_parts(parts, kube::client::Body::from(body.to_vec()));
    let response = kube.send(request).await?;
    let (parts, body) = response.into_parts();
    let bytes: Bytes = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    recorded.lock().push(Recorded {
        method,
        path,
        status: parts.status.as_u16(),
        response: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    });
    Ok(http::Response::from_parts(
        parts,
        kube::client::Body::from(bytes.to_vec()),
    ))
}

/// A recorded write with the object as it is now.
async fn planned_write(kube: &kube::Client, write: Recorded) -> PlannedWrite {
    let object_path = write.path.strip_suffix("/status").unwrap_or(&write.path);
    let verb = match write.method {
        Method::POST => "create",
        Method::PUT if write.path.ends_with("/status") => "update status",
        Method::PUT => "update",
        Method::PATCH => "patch",
        _ => "delete",
    };
    let before = match write.method {
        Method::POST => None,
        _ => get(kube, object_path).await,
    };
    // A server-side apply of an object that does not exist creates it.
    let verb = match (&write.method, &before) {
        (&Method::PATCH, None) => "create",
        _ => verb,
    };
    let refused = (write.status >= 400).then(|| {
        write.response["message"]
            .as_str()
            .unwrap_or("refused")
            .to_owned()
    });
    let after = match (write.method.clone(), &refused) {
        (_, Some(_)) | (Method::DELETE, _) => None,
        _ => Some(write.response.clone()),
    };
    PlannedWrite {
        verb: verb.into(),
        path: write.path,
        before,
        after,
        refused,
    }
}

async fn get(kube: &kube::Client, path: &str) -> Option<Value> {
    let request = http::Request::get(path).body(Vec::new()).ok()?;
    kube.request::<Value>(request).await.ok()
}

/// Server-set fields that every write changes and a reader does not care about.
const NOISE: [&str; 5] = [
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
];

/// The object as a plan shows it.
fn shown(object: &Option<Value>) -> String {
    let Some(object) = object else {
        return String::new();
    };
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in NOISE {
            meta.remove(field);
        }
    }
    if let Some(conditions) = object
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        for condition in conditions {
            if let Some(c) = condition.as_object_mut() {
                c.remove("lastTransitionTime");
            }
        }
    }
    serde_saphyr::to_string(&object).unwrap_or_else(|_| object.to_string())
}

/// The plan as text: per instance, each write and its diff, or that nothing would change.
pub fn render(plans: &[InstancePlan]) -> String {
    let mut out = String::new();
    for plan in plans {
        let _ = writeln!(out, "{} {}:", plan.definition, plan.instance);
        if !plan.changes() {
            let _ = writeln!(out, "  no changes");
        }
        for write in &plan.writes {
            let name = write
                .after
                .as_ref()
                .or(write.before.as_ref())
                .map(describe)
                .unwrap_or_else(|| write.path.clone());
            let _ = writeln!(out, "  would {} {name}", write.verb);
            if let Some(refused) = &write.refused {
                let _ = writeln!(out, "    refused by the server: {refused}");
                continue;
            }
            let before = shown(&write.before);
            let after = shown(&write.after);
            for line in line_diff(&before, &after).lines() {
                if !line.starts_with(' ') {
                    let _ = writeln!(out, "    {line}");
                }
            }
        }
        if let Some(error) = &plan.error {
            let _ = writeln!(out, "  reconcile error: {error}");
        }
    }
    out
}

/// `Kind namespace/name` of an object.
fn describe(object: &Value) -> String {
    let parsed: Option<DynamicObject> = serde_json::from_value(object.clone()).ok();
    let kind = object["kind"].as_str().unwrap_or("object");
    let key = parsed
        .and_then(|o| ObjectKey::of(&o).ok())
        .map(|k| k.to_string())
        .unwrap_or_default();
    format!("{kind} {key}")
}
