//! Per-call costs of two dynamic building blocks, each next to its static baseline:
//! - a CEL condition (`Predicate::cel`, compiled once) vs the same condition as a Rust
//!   closure, both evaluated on a Widget `DynamicObject`, for a four-clause condition and
//!   for the one-field `self.spec.replicas > 2`;
//! - projecting a Deployment into the `PodSpecable` duck vs deserializing it into
//!   k8s_openapi's typed `Deployment`;
//! - the CEL of one reconcile of the widgets definition (`examples/definitions/widgets.yaml`):
//!   its compiled child template built for one Widget as the definition's `desired_child`
//!   does it (the Widget bound as `self` as JSON, with the fields the definition reads, the
//!   template's builder run — three distinct expressions, each evaluated once — and the
//!   namespace defaulted), vs the Rust `desired_child` of the converge bench (the same
//!   ConfigMap built with `json!` from the Widget and read as a `DynamicObject`).
//!   `template_only` times the builder alone over bindings made once.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::definitions::{
    BindingReads, Bindings, ObjectTemplate, Plan, Schemas, compile, load_file,
};
use dynrec::duck_types::{Duck, PodSpecable};
use dynrec::object::{Gvk, ObjectKey, from_json};
use dynrec::reconcilers::{Config, Context, Predicate};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::DynamicObject;
use serde::Deserialize;
use serde_json::{Value, json};

const CONDITION: &str = "self.spec.replicas > 2 && self.metadata.name.startsWith('widget-') \
    && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')";

/// The one-field condition of the goal (`self.spec.size > 2` on a Widget whose size
/// field is `replicas` here).
const SIMPLE_CONDITION: &str = "self.spec.replicas > 2";

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
        Config::new(client, "bench"),
        jiff::Timestamp::now(),
    );
    let widget = widget();
    let cel = Predicate::<DynamicObject>::cel(CONDITION).expect("a valid expression");
    let closure = Predicate::new(|_, w: &DynamicObject| closure_condition(w));
    assert!(cel.test(&ctx, &widget) && closure.test(&ctx, &widget));
    let simple_cel = Predicate::<DynamicObject>::cel(SIMPLE_CONDITION).expect("a valid expression");
    let simple_closure = Predicate::new(|_, w: &DynamicObject| {
        w.data["spec"]["replicas"].as_i64().is_some_and(|r| r > 2)
    });
    assert!(simple_cel.test(&ctx, &widget) && simple_closure.test(&ctx, &widget));

    let mut group = c.benchmark_group("condition");
    for (name, predicate) in [
        ("cel", &cel),
        ("rust_closure", &closure),
        ("cel_simple", &simple_cel),
        ("rust_closure_simple", &simple_closure),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| predicate.test(black_box(&ctx), black_box(&widget)))
        });
    }
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

/// A converged Widget of the converge bench, as the controller's cache holds it.
fn converged_widget() -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "widget-1", "namespace": "ns-0", "uid": "u-1",
            "resourceVersion": "1042", "generation": 1,
            "creationTimestamp": "2026-11-22T00:00:00Z"},
        "spec": {"message": "hello from widget 1", "greeting": "hello from widget 1"},
        "status": {"conditions": [
            {"type": "ConfigMapReady", "status": "True", "reason": "ConfigMapReady",
             "message": "ConfigMap widget-1-config is in place",
             "lastTransitionTime": "2026-11-22T00:00:00Z"},
            {"type": "Ready", "status": "True", "reason": "Ready", "message": "",
             "lastTransitionTime": "2026-11-22T00:00:00Z"}]}
    }))
    .expect("a widget")
}

/// The compiled child template of `examples/definitions/widgets.yaml`, and what its
/// expressions read.
fn widgets_template() -> (ObjectTemplate, BindingReads) {
    let path = format!(
        "{}/examples/definitions/widgets.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let loaded = load_file(std::path::Path::new(&path)).expect("the definition");
    let compiled = compile(&loaded[0].definition, &Schemas::default()).expect("it compiles");
    match compiled.steps.first() {
        Some(Plan::Child(child)) => (
            child.object.clone(),
            BindingReads::of(&child.template.expressions()),
        ),
        other => panic!("expected a child step first, found {other:?}"),
    }
}

/// What the definition's `desired_child` does with CEL: bind the Widget as `self` (as JSON,
/// the fields the expressions read), build the child, default the namespace.
fn definition_child(
    (template, reads): &(ObjectTemplate, BindingReads),
    widget: &DynamicObject,
) -> DynamicObject {
    let json = reads.parent(widget).expect("a JSON widget");
    let bindings = Bindings::from([("self".into(), std::sync::Arc::new(json))]);
    let mut child = template
        .build(&bindings, jiff::Timestamp::now())
        .expect("the template builds");
    if child.metadata.namespace.is_none() {
        child.metadata.namespace = widget.metadata.namespace.clone();
    }
    child
}

/// The Rust equivalent: the same ConfigMap as JSON, built with `json!` from the Widget.
fn rust_child_json(widget: &DynamicObject) -> Value {
    let greeting = match widget.data["spec"]["greeting"].as_str() {
        Some("") | None => "hello",
        Some(greeting) => greeting,
    };
    let size = widget.data["spec"]["size"].as_i64().unwrap_or(1);
    let name = widget.metadata.name.as_deref().unwrap_or_default();
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-config"), "namespace": widget.metadata.namespace,
            "labels": {"example.com/widget": name}},
        "data": {"greeting": greeting, "size": size.to_string()}
    })
}

/// The Rust child read as dynrec's desired children are: `dynrec::object::from_json`.
fn rust_child(widget: &DynamicObject) -> DynamicObject {
    from_json(rust_child_json(widget)).expect("a ConfigMap")
}

/// The same child started with `Gvk::new_object`: only the body is built as JSON.
fn rust_new_object_child(config_map: &Gvk, widget: &DynamicObject) -> DynamicObject {
    let greeting = match widget.data["spec"]["greeting"].as_str() {
        Some("") | None => "hello",
        Some(greeting) => greeting,
    };
    let size = widget.data["spec"]["size"].as_i64().unwrap_or(1);
    let name = widget.metadata.name.as_deref().unwrap_or_default();
    let mut child = config_map.new_object(format!("{name}-config"));
    child.metadata.namespace = widget.metadata.namespace.clone();
    let labels = [("example.com/widget".to_string(), name.to_string())];
    child.metadata.labels = Some(labels.into());
    child.data = json!({"data": {"greeting": greeting, "size": size.to_string()}});
    child
}

fn child_template(c: &mut Criterion) {
    let template = widgets_template();
    let widget = converged_widget();
    let by_definition = definition_child(&template, &widget);
    assert_eq!(
        serde_json::to_value(&by_definition).expect("JSON"),
        serde_json::to_value(rust_child(&widget)).expect("JSON"),
        "the definition and the Rust closure build the same ConfigMap"
    );
    assert_eq!(
        rust_new_object_child(&Gvk::new("", "v1", "ConfigMap"), &widget),
        rust_child(&widget),
        "new_object and json! build the same ConfigMap"
    );
    let json = template.1.parent(&widget).expect("a JSON widget");
    let bindings = Bindings::from([("self".into(), std::sync::Arc::new(json))]);
    let now = jiff::Timestamp::now();

    let mut group = c.benchmark_group("widgets_child_template");
    group.bench_function("definition_cel", |b| {
        b.iter(|| definition_child(black_box(&template), black_box(&widget)))
    });
    group.bench_function("rust_json_from_json", |b| {
        b.iter(|| rust_child(black_box(&widget)))
    });
    let config_map = Gvk::new("", "v1", "ConfigMap");
    group.bench_function("rust_new_object", |b| {
        b.iter(|| rust_new_object_child(black_box(&config_map), black_box(&widget)))
    });
    // The same JSON read by serde: kube's `DynamicObject` flattens its fields, so serde
    // buffers the whole object once more.
    group.bench_function("rust_json_serde_from_value", |b| {
        b.iter(|| {
            let json = rust_child_json(black_box(&widget));
            serde_json::from_value::<DynamicObject>(json).expect("a ConfigMap")
        })
    });
    group.bench_function("template_only", |b| {
        b.iter(|| {
            black_box(&template.0)
                .build(black_box(&bindings), now)
                .expect("the template builds")
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    // No HTML report: drawing its plots took 4 to 6 s a benchmark on the project's 2-core
    // VM, about 2½ minutes of a full `cargo bench`. `-- --plotting-backend plotters` draws
    // them.
    // Each call takes nanoseconds to microseconds: a 1 s warm-up and 3 s of 100 samples
    // (criterion's defaults are 3 s and 5 s) give each at least 100,000 calls.
    config = Criterion::default()
        .without_plots()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = conditions, projection, child_template
}
criterion_main!(benches);
