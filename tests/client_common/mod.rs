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

/// A namespaced CRD `{plural}.{group}` serving `v1` of `kind`, with a status subresource and
/// an open spec.
pub fn crd(group: &str, kind: &str, plural: &str) -> DynamicObject {
    object(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }}
            }]
        }
    }))
}

/// The GVK of a CRD made by [`crd`].
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
