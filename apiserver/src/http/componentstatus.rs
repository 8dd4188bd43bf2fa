//! `componentstatuses` as kube-apiserver answers them on a cluster whose scheduler and
//! controller manager do not run: kube probes each component's health endpoint when asked
//! (nothing is stored), so `etcd-0` — the store, which is this server — is healthy and the
//! two controllers are unhealthy with the prober's connection error.

use axum::body::Body;
use http::Response;
use serde_json::{Value, json};

use super::call::Call;
use super::negotiate::Representation;
use super::{list, respond, table};
use crate::error::{ApiError, ApiResult};

/// Each component kube checks, with the default secure port of its health endpoint (none
/// for the store).
const PROBED: [(&str, Option<u16>); 3] = [
    ("scheduler", Some(10259)),
    ("controller-manager", Some(10257)),
    ("etcd-0", None),
];

/// A component's status: `Healthy` true with `ok` for the store; false with the dial error
/// as the message (kube's HTTP prober reports it so) for a component that does not run.
fn status_of(name: &str, port: Option<u16>) -> Value {
    let condition = match port {
        None => json!({"type": "Healthy", "status": "True", "message": "ok"}),
        Some(port) => json!({"type": "Healthy", "status": "False", "message": format!(
            "Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )}),
    };
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": null},
        "conditions": [condition],
    })
}

/// Every component's status (kube ignores label and field selectors here).
fn all() -> Vec<Value> {
    PROBED
        .iter()
        .map(|(name, port)| status_of(name, *port))
        .collect()
}

/// One component's status; an unknown name is kube's `Component not found` error (500).
fn get(name: &str) -> ApiResult<Value> {
    PROBED
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(name, port)| status_of(name, *port))
        .ok_or_else(|| {
            ApiError::internal(format!(
                "Internal error occurred: Component not found: {name}"
            ))
        })
}

/// The `Healthy` condition's field `field`, or `None` when there is no such condition.
fn healthy(object: &Value, field: &str) -> Option<String> {
    let conditions = object["conditions"].as_array()?;
    let healthy = conditions.iter().find(|c| c["type"] == "Healthy")?;
    Some(healthy[field].as_str().unwrap_or_default().to_string())
}

/// kube's printer columns for componentstatuses (`kubectl get cs`): NAME, STATUS (Healthy,
/// Unhealthy or Unknown), MESSAGE and ERROR of the `Healthy` condition.
fn columns() -> Vec<table::Column> {
    table::name_and([
        table::Column::computed("Status", "Status of the component conditions", |object| {
            match healthy(object, "status").as_deref() {
                Some("True") => "Healthy".into(),
                Some(_) => "Unhealthy".into(),
                None => "Unknown".into(),
            }
        }),
        table::Column::computed("Message", "Message of the component conditions", |object| {
            healthy(object, "message").unwrap_or_default()
        }),
        table::Column::computed("Error", "Error of the component conditions", |object| {
            healthy(object, "error").unwrap_or_default()
        }),
    ])
}

/// Answers a get (`name`) or a list of componentstatuses in the representation asked for.
pub(super) fn serve(call: &Call, name: Option<&str>) -> ApiResult<Response<Body>> {
    let objects = match name {
        Some(name) => vec![get(name)?],
        None => all(),
    };
    if call.representation == Representation::Table {
        let rows: Vec<&Value> = objects.iter().collect();
        return Ok(respond::json(200, &table::table(&columns(), &rows, "")));
    }
    if name.is_some() {
        return Ok(call.respond(200, &objects[0]));
    }
    let items = objects
        .iter()
        .map(|object| list::render(object, &call.info, call.representation))
        .collect();
    let body = list::list_body(&call.info, call.representation, json!({}), items);
    Ok(respond::json(200, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_healthy_and_the_controllers_are_refused() {
        let etcd = get("etcd-0").unwrap();
        assert_eq!(etcd["conditions"][0]["status"], "True");
        let scheduler = get("scheduler").unwrap();
        assert_eq!(
            scheduler["conditions"][0]["message"],
            "Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused"
        );
        assert_eq!(get("kubelet").unwrap_err().code, 500);
        assert_eq!(all().len(), 3);
    }
}
