//! What the embedded API server's store holds per object: Widgets (created, their status
//! applied by a controller), their ConfigMaps (server-side applied, owned) and two Events
//! each, written through the HTTP front end as `dynrec run` writes them. A counting global
//! allocator measures the live heap; the figures are printed per kind, with what the watch
//! history adds on top, and the test holds the store to at most 3× the objects' JSON.
//!
//! `DYNREC_MEMORY_WIDGETS` sets the number of Widgets (default 1,000); run with
//! `--nocapture` for the breakdown.

use dynrec::apiserver::ApiServer;
use dynrec_test_support::counting::{Counting, live};
use http::Request;
use serde_json::{Value, json};
use tower::ServiceExt;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

async fn send(
    server: &ApiServer,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Value,
) -> Value {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(axum::body::Body::from(body.to_string()))
        .expect("a valid request");
    let response = server.router().oneshot(request).await.expect("infallible");
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a body");
    assert!(
        status.is_success(),
        "{method} {uri}: {status} {}",
        String::from_utf8_lossy(&body)
    );
    serde_json::from_slice(&body).expect("a JSON answer")
}

fn widget_crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "greeting": {"type": "string"}, "size": {"type": "integer"}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}})
}

const APPLY: &str = "application/apply-patch+yaml";

/// Widget `i` as the driver creates it, then what the widgets definition writes for it.
async fn write_widget(server: &ApiServer, i: usize) {
    let name = format!("w-{i:06}");
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let created = send(
        server,
        "POST",
        widgets,
        "application/json",
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"greeting": format!("hello {i}"), "size": 1}}),
    )
    .await;
    let uid = created["metadata"]["uid"].clone();
    let config_map = format!("{name}-config");
    let _ = send(
        server,
        "PATCH",
        &format!(
            "/api/v1/namespaces/default/configmaps/{config_map}?fieldManager=dynrec&force=true"
        ),
        APPLY,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": config_map, "labels": {"example.com/widget": name},
                "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Widget",
                    "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
            "data": {"greeting": format!("hello {i}"), "size": "1"}}),
    )
    .await;
    let condition = |kind: &str| {
        json!({"type": kind, "status": "True", "reason": "Ready",
        "message": "", "observedGeneration": 1, "lastTransitionTime": "2026-11-27T18:00:00Z"})
    };
    let _ = send(
        server,
        "PATCH",
        &format!("{widgets}/{name}/status?fieldManager=dynrec&force=true"),
        APPLY,
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "status": {"observedGeneration": 1,
                "conditions": [condition("ConfigMapReady"), condition("Ready")]}}),
    )
    .await;
    for (reason, note) in [
        ("Created", "created ConfigMap"),
        ("StatusUpdated", "status updated"),
    ] {
        let _ = send(server, "POST", "/apis/events.k8s.io/v1/namespaces/default/events", "application/json",
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": format!("{name}.{}", reason.to_lowercase()), "namespace": "default"},
                "eventTime": "2026-11-27T18:00:00.000000Z", "type": "Normal",
                "reason": reason, "note": note, "action": "Reconcile",
                "reportingController": "dynrec", "reportingInstance": "dynrec-0",
                "regarding": {"apiVersion": "example.com/v1", "kind": "Widget",
                    "namespace": "default", "name": name, "uid": uid}})).await;
    }
}

/// The stored objects of a kind, as a list returns them.
async fn list(server: &ApiServer, uri: &str) -> Vec<Value> {
    let request = Request::get(uri)
        .body(axum::body::Body::empty())
        .expect("a valid request");
    let response = server.router().oneshot(request).await.expect("infallible");
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a body");
    let list: Value = serde_json::from_slice(&body).expect("a list");
    list["items"].as_array().expect("items").clone()
}

/// The live heap a server adds with `widgets` Widgets written, and the JSON of what it
/// stores then (bytes, objects).
async fn stored(widgets: usize, history_limit: usize) -> (isize, usize, usize) {
    let server = ApiServer::builder().history_limit(history_limit).build();
    let _ = send(
        &server,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        widget_crd(),
    )
    .await;
    let empty = live();
    for i in 0..widgets {
        write_widget(&server, i).await;
    }
    let added = live() - empty;
    let mut json = 0;
    let mut objects = 0;
    for (kind, uri) in [
        ("Widgets", "/apis/example.com/v1/widgets"),
        ("ConfigMaps", "/api/v1/configmaps"),
        ("Events (events.k8s.io)", "/apis/events.k8s.io/v1/events"),
        ("Events (core, mirrored)", "/api/v1/events"),
    ] {
        let items = list(&server, uri).await;
        let bytes: usize = items.iter().map(|o| o.to_string().len()).sum();
        let managed: usize = items
            .iter()
            .map(|o| o["metadata"]["managedFields"].to_string().len())
            .sum();
        let tree = tree_bytes(&items);
        println!(
            "{kind}: {} objects, JSON {} B each (managedFields {} B), as a serde_json tree {} B each",
            items.len(),
            bytes / items.len().max(1),
            managed / items.len().max(1),
            tree / items.len().max(1) as isize,
        );
        json += bytes;
        objects += items.len();
    }
    drop(server);
    (added, json, objects)
}

/// The heap a deep copy of these objects takes, as `serde_json::Value` trees.
fn tree_bytes(items: &[Value]) -> isize {
    let before = live();
    let copies: Vec<Value> = items.to_vec();
    let after = live();
    drop(copies);
    after - before - std::mem::size_of_val(items) as isize
}

#[tokio::test(flavor = "current_thread")]
async fn a_stored_object_takes_at_most_three_times_its_json() {
    let widgets = std::env::var("DYNREC_MEMORY_WIDGETS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000);
    // History kept to one change, then as many as the run writes (five per Widget).
    let (store, json, objects) = stored(widgets, 1).await;
    let (with_history, _, _) = stored(widgets, widgets * 6).await;
    let per_object = store as f64 / objects as f64;
    let json_per_object = json as f64 / objects as f64;
    println!(
        "{widgets} Widgets: {objects} objects stored, {per_object:.0} B each on the heap \
         ({:.1}× their JSON of {json_per_object:.0} B); with every change kept for watches \
         {:.0} B each",
        per_object / json_per_object,
        with_history as f64 / objects as f64,
    );
    assert!(
        per_object <= 3.0 * json_per_object,
        "{per_object:.0} B per stored object, more than 3× its JSON ({json_per_object:.0} B)"
    );
}
