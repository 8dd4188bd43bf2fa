//! Per-call costs of two dynamic building blocks, each next to its static baseline:
//! - a CEL condition (`Predicate::cel`, compiled once) vs the same condition as a Rust
//!   closure, both evaluated on a Widget `DynamicObject`;
//! - projecting a Deployment into the `PodSpecable` duck vs deserializing it into
//!   k8s_openapi's typed `Deployment`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::duck::{Duck, PodSpecable};
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{Config, Context, Predicate};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::DynamicObject;
use serde::Deserialize;
use serde_json::{Value, json};

const CONDITION: &str = "self.spec.replicas > 2 && self.metadata.name.startsWith('widget-') \
    && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')";

/// The same condition as [`CONDITION`], written in Rust over the object's JSON.
fn closure_condition(widget: &DynamicObject) -> bool {
    let replicas = widget.data["spec"]["replicas"].as_i64();
    let name = widget.metadata.name.as_deref().unwrap_or_default();
    let ready = widget.data["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
    replicas.is_some_and(|r| r > 2) && name.starts_with("widget-") && ready
}

fn widget() -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "widget-1", "namespace": "default", "uid": "u-1",
            "resourceVersion": "1042", "generation": 1, "labels": {"app": "bench"}},
        "spec": {"replicas": 3, "message": "hello"},
        "status": {"observedGeneration": 1, "conditions": [
            {"type": "Ready", "status": "True", "reason": "Ready", "message": "",
             "lastTransitionTime": "2026-11-22T00:00:00Z"}]}
    }))
    .expect("a widget")
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
            "annotations": {"deployment.kubernetes.io/revision": "3"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "serviceAccountName": "web",
                "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                    "env": [{"name": "MODE", "value": "prod"}, {"name": "LEVEL", "value": "info"}],
                    "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m"}},
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 80}, "periodSeconds": 5}},
                    {"name": "sidecar", "image": "busybox:1.36", "args": ["sleep", "infinity"]}],
                "volumes": [{"name": "config", "configMap": {"name": "web-config"}}]}}},
        "status": {"replicas": 3, "readyReplicas": 3, "observedGeneration": 3}
    })
}

fn conditions(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let _guard = runtime.enter();
    let client = Client::new(ApiServer::new().client());
    let ctx = Context::new(
        ObjectKey::namespaced("default", "widget-1"),
        Gvk::new("example.com", "v1", "Widget"),
        Config::new(client, "bench", Duration::from_secs(600)),
        jiff::Timestamp::now(),
    );
    let widget = widget();
    let cel = Predicate::<DynamicObject>::cel(CONDITION).expect("a valid expression");
    let closure = Predicate::new(|_, w: &DynamicObject| closure_condition(w));
    assert!(cel.test(&ctx, &widget) && closure.test(&ctx, &widget));

    let mut group = c.benchmark_group("condition");
    group.bench_function("cel", |b| {
        b.iter(|| cel.test(black_box(&ctx), black_box(&widget)))
    });
    group.bench_function("rust_closure", |b| {
        b.iter(|| closure.test(black_box(&ctx), black_box(&widget)))
    });
    group.finish();
}

fn projection(c: &mut Criterion) {
    let deployment = deployment();
    let mut group = c.benchmark_group("deployment_projection");
    group.bench_function("duck_podspecable", |b| {
        b.iter(|| PodSpecable::project(black_box(&deployment)).expect("a PodSpecable"))
    });
    // `serde_json::from_value` without its clone of the input: the same deserializer,
    // reading the Value by reference as the duck does.
    group.bench_function("typed_deployment", |b| {
        b.iter(|| Deployment::deserialize(black_box(&deployment)).expect("a Deployment"))
    });
    group.finish();
}

criterion_group!(benches, conditions, projection);
criterion_main!(benches);
