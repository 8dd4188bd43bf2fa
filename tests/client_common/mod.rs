//! Helpers shared by the client, duck and tracker integration tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::{future::Future, time::Duration};

use dynrec::{apiserver::ApiServer, client::Client, object::Gvk};
use kube::api::DynamicObject;
use serde_json::{Value, json};

/// An embedded server and a client on it.
pub fn start() -> (ApiServer, Client) {
    let server = ApiServer::new();
    let client = Client::new(server.client());
    (server, client)
}

/// An object from JSON.
pub fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("test objects are valid")
}

/// The GVK of a CRD made by `dynrec::testing::crd`.
pub fn crd_gvk(group: &str, kind: &str) -> Gvk {
    Gvk::new(group, "v1", kind)
}

/// A ConfigMap in `default`.
pub fn config_map(name: &str, labels: Value) -> DynamicObject {
    object(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "data": {"key": "value"}
    }))
}

/// A pod template with one container.
pub fn pod_template() -> Value {
    json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "env": [{"name": "A", "value": "1"}]}]}
    })
}

/// Polls `check` until it returns `Some`, failing after `deadline`.
pub async fn eventually<T, F, Fut>(deadline: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = tokio::time::Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            started.elapsed() < deadline,
            "timed out after {deadline:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
