//! Ducks found at run time: which kinds implement a duck (table of CRD schemas, labels and
//! built-ins), and duck controllers started and stopped while the manager runs.

/// The addressable example's controller (each user of it uses a part).
#[path = "../examples/addressable/controller.rs"]
#[allow(dead_code)]
mod addressable;

/// The podspecable example's controller (each user of it uses a part).
#[path = "../examples/podspecable/controller.rs"]
#[allow(dead_code)]
mod podspecable;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::client::{DuckEvent, Projection};
use dynrec::duck_types::PodSpecable;
use dynrec::ducks::{
    DuckControllers, DuckMapping, DuckType, KindMatch, Miss, Reason, Verdict, cluster_survey,
    install_mapping_crd, match_builtins, match_crd, match_mapping, table,
};
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{Config, Draft, ResourceReconciler, SyncReconciler};
use dynrec::runtime::{ControllerHandle, Manager, ManagerOptions};
use dynrec_test_support::eventually;
use dynrec_test_support::process::kubectl_on_path;
use futures::StreamExt;
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::EnvVar;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};
use tower::ServiceExt;

const DEADLINE: Duration = Duration::from_secs(20);

/// A pod template schema as a CRD author writes it: partial, but of the right shape.
fn pod_template() -> Value {
    json!({"type": "object", "properties": {
        "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "spec": {"type": "object", "properties": {
            "containers": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "image": {"type": "string"},
                "env": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "value": {"type": "string"}}}}}}}}}}})
}

/// An established CRD `{plural}.example.com` of kind `kind` whose `spec` has `spec` as
/// its schema, with `labels`.
fn crd(kind: &str, spec: Value, labels: Value) -> DynamicObject {
    let plural = format!("{}s", kind.to_lowercase());
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com"), "labels": labels},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]},
        "status": {"conditions": [{"type": "Established", "status": "True"}]}
    }))
    .unwrap()
}

fn spec_with_template(template: Value) -> Value {
    json!({"type": "object", "properties": {"replicas": {"type": "integer"}, "template": template}})
}

fn workload_gvk() -> Gvk {
    Gvk::new("example.com", "v1", "Workload")
}

#[test]
fn crds_match_podspecable_by_schema_or_label_and_misses_say_where() {
    let podspecable = DuckType::podspecable();
    let no_labels = json!({});
    let label = json!({"duck.knative.dev/podspecable": "true"});
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let wrong = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "containers": {"type": "string"}}}}});
    let wrong_deep = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "containers": {"type": "array", "items": {"type": "object", "properties": {
            "env": {"type": "object"}}}}}}}});
    let cases: Vec<(&str, DynamicObject, Verdict)> = vec![
        (
            "a pod template of the right shape",
            crd(
                "Workload",
                spec_with_template(pod_template()),
                no_labels.clone(),
            ),
            Verdict::Match(Reason::Schema("spec.template".into())),
        ),
        (
            "containers of the wrong type",
            crd("Workload", spec_with_template(wrong), no_labels.clone()),
            Verdict::Miss(Miss::WrongType {
                path: "spec.template.spec.containers".into(),
                expected: "array".into(),
                found: "string".into(),
            }),
        ),
        (
            "a container's env of the wrong type",
            crd(
                "Workload",
                spec_with_template(wrong_deep),
                no_labels.clone(),
            ),
            Verdict::Miss(Miss::WrongType {
                path: "spec.template.spec.containers[].env".into(),
                expected: "array".into(),
                found: "object".into(),
            }),
        ),
        (
            "no template",
            crd(
                "Widget",
                json!({"type": "object", "properties": {"greeting": {"type": "string"}}}),
                no_labels.clone(),
            ),
            Verdict::Miss(Miss::Missing {
                path: "spec.template".into(),
            }),
        ),
        (
            "a template of unrelated fields",
            crd(
                "Widget",
                spec_with_template(
                    json!({"type": "object", "properties": {"size": {"type": "integer"}}}),
                ),
                no_labels.clone(),
            ),
            Verdict::Miss(Miss::NoKnownField {
                path: "spec.template".into(),
            }),
        ),
        (
            "a template that preserves unknown fields",
            crd(
                "Workload",
                spec_with_template(open.clone()),
                no_labels.clone(),
            ),
            Verdict::Miss(Miss::Open {
                path: "spec.template".into(),
            }),
        ),
        (
            "a spec that preserves unknown fields",
            crd("Workload", open.clone(), no_labels.clone()),
            Verdict::Miss(Miss::Open {
                path: "spec".into(),
            }),
        ),
        (
            "preserve-unknown-fields with the Knative label",
            crd("Workload", spec_with_template(open.clone()), label.clone()),
            Verdict::Match(Reason::Label("duck.knative.dev/podspecable".into())),
        ),
        (
            "the label set to false",
            crd(
                "Workload",
                spec_with_template(open),
                json!({"duck.knative.dev/podspecable": "false"}),
            ),
            Verdict::Miss(Miss::Open {
                path: "spec.template".into(),
            }),
        ),
    ];
    for (name, crd, expected) in cases {
        let found = match_crd(&podspecable, &crd).map(|(_, verdict)| verdict);
        assert_eq!(found, Some(expected), "{name}");
    }
}

#[test]
fn the_label_is_configurable_per_duck() {
    let duck = DuckType::podspecable().label("example.com/workload");
    let labelled = crd(
        "Workload",
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        json!({"example.com/workload": "true", "duck.knative.dev/podspecable": "true"}),
    );
    assert_eq!(
        match_crd(&duck, &labelled),
        Some((
            workload_gvk(),
            Verdict::Match(Reason::Label("example.com/workload".into()))
        ))
    );
}

#[test]
fn a_crd_that_is_not_established_serves_no_kind_to_match() {
    let mut pending = crd("Workload", spec_with_template(pod_template()), json!({}));
    pending.data["status"] = json!({});
    assert_eq!(match_crd(&DuckType::podspecable(), &pending), None);
}

#[test]
fn the_storage_version_is_chosen_when_several_match() {
    let mut two = crd("Workload", spec_with_template(pod_template()), json!({}));
    let v1 = two.data["spec"]["versions"][0].clone();
    let mut beta = v1.clone();
    beta["name"] = json!("v1beta1");
    beta["storage"] = json!(false);
    two.data["spec"]["versions"] = json!([beta, v1]);
    let (gvk, verdict) = match_crd(&DuckType::podspecable(), &two).unwrap();
    assert_eq!(gvk, workload_gvk());
    assert!(matches!(verdict, Verdict::Match(Reason::Schema(_))));
}

#[test]
fn addressable_matches_by_its_own_path_and_shape() {
    let addressable = DuckType::addressable();
    let status = |url: Value| {
        let mut broker = crd("Broker", json!({"type": "object"}), json!({}));
        broker.data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] = json!({"type": "object", "properties": {"address": {"type": "object", "properties": {"url": url}}}});
        broker
    };
    assert_eq!(
        match_crd(&addressable, &status(json!({"type": "string"}))).map(|(_, v)| v),
        Some(Verdict::Match(Reason::Schema("status.address".into())))
    );
    assert_eq!(
        match_crd(&addressable, &status(json!({"type": "integer"}))).map(|(_, v)| v),
        Some(Verdict::Miss(Miss::WrongType {
            path: "status.address.url".into(),
            expected: "string".into(),
            found: "integer".into()
        }))
    );
}

#[test]
fn built_in_kinds_match_when_the_cluster_serves_them() {
    let duck = DuckType::podspecable();
    let deployment = Gvk::new("apps", "v1", "Deployment");
    let served = |gvk: &Gvk| *gvk == deployment;
    let found: Vec<KindMatch> = match_builtins(&duck, served).collect();
    assert_eq!(
        found,
        vec![KindMatch::new(&duck, deployment, Reason::Builtin)]
    );
}

fn mapping(path: &str) -> DuckMapping {
    DuckMapping {
        name: "runs.example.com".into(),
        duck: "PodSpecable".into(),
        group: "example.com".into(),
        kind: "Run".into(),
        versions: Vec::new(),
        path: path.into(),
    }
}

#[test]
fn a_mapping_says_where_the_kind_keeps_the_duck_and_a_wrong_path_is_named() {
    let duck = DuckType::podspecable();
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "runTemplate": pod_template(),
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "count": {"type": "integer"}}}}});
    let mapped = |path: &str| Reason::Mapping {
        name: "runs.example.com".into(),
        path: path.into(),
    };
    // (path, whether the kind's schema is known, verdict)
    let cases: Vec<(&str, bool, Verdict)> = vec![
        (
            "spec.runTemplate",
            true,
            Verdict::Match(mapped("spec.runTemplate")),
        ),
        (
            "spec.runTemplat",
            true,
            Verdict::Miss(Miss::Missing {
                path: "spec.runTemplat".into(),
            }),
        ),
        (
            "spec.extra.template",
            true,
            Verdict::Match(mapped("spec.extra.template")),
        ),
        (
            "spec.count",
            true,
            Verdict::Miss(Miss::WrongType {
                path: "spec.count".into(),
                expected: "object".into(),
                found: "integer".into(),
            }),
        ),
        (
            "spec.anywhere",
            false,
            Verdict::Match(mapped("spec.anywhere")),
        ),
    ];
    for (path, known, expected) in cases {
        let schema = known.then_some((&schema, &Value::Null));
        assert_eq!(
            match_mapping(&duck, &mapping(path), schema),
            expected,
            "{path}"
        );
    }
    let other_duck = DuckType::addressable();
    assert!(matches!(
        match_mapping(
            &other_duck,
            &mapping("status"),
            Some((&schema, &Value::Null))
        ),
        Verdict::Miss(Miss::Missing { .. })
    ));
}

fn crds_api(kube: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    Api::all_with(kube.clone(), &ar)
}

fn namespaced(kube: &kube::Client, gvk: (&str, &str, &str), plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(gvk.0, gvk.1, gvk.2), plural);
    Api::namespaced_with(kube.clone(), "default", &ar)
}

async fn create_crd(kube: &kube::Client, crd: &DynamicObject) {
    let mut crd = crd.clone();
    crd.data.as_object_mut().unwrap().remove("status");
    crds_api(kube)
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
}

fn env_of(object: &DynamicObject) -> Value {
    object.data["spec"]["template"]["spec"]["containers"][0]["env"].clone()
}

/// A manager running over a fresh embedded server, with what a test looks at.
struct Running {
    server: ApiServer,
    kube: kube::Client,
    handle: ControllerHandle,
    /// The manager's `/metrics`, `/healthz` and `/readyz` routes.
    health: axum::Router,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), dynrec::runtime::ManagerError>>,
}

/// Starts a manager with what `register` adds.
fn run_manager(register: impl FnOnce(&mut Manager, &Config)) -> Running {
    let server = ApiServer::new();
    let kube = server.client();
    let client = Client::new(kube.clone());
    let config = Config::new(client.clone(), "demo");
    let mut manager = Manager::new(client, ManagerOptions::default());
    let handle = manager.handle();
    let metrics = manager.metrics();
    let scrape = move || {
        let metrics = metrics.clone();
        async move { metrics.render().unwrap() }
    };
    let health =
        dynrec::runtime::router(manager.readiness()).route("/metrics", axum::routing::get(scrape));
    register(&mut manager, &config);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(manager.run(async move {
        let _ = stopped.await;
    }));
    Running {
        server,
        kube,
        handle,
        health,
        stop,
        task,
    }
}

impl Running {
    /// Stops the manager and waits until it has.
    async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(DEADLINE, self.task)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podspecable_kinds_appear_are_reconciled_and_their_controllers_stop_when_they_go() {
    let running = run_manager(podspecable::register);
    let (kube, handle) = (running.kube.clone(), running.handle.clone());
    let controller = "PodSpecable/Workload.v1.example.com";
    eventually("the built-in kinds have controllers", || async {
        handle
            .names()
            .contains(&"PodSpecable/Deployment.v1.apps".to_string())
            && handle
                .names()
                .contains(&"PodSpecable/Job.v1.batch".to_string())
    })
    .await;
    assert!(!handle.names().contains(&controller.to_string()));

    let env: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": podspecable::ENV_CONFIG_MAP}, "data": {"GREETING": "hi"}}))
        .unwrap();
    namespaced(&kube, ("", "v1", "ConfigMap"), "configmaps")
        .create(&PostParams::default(), &env)
        .await
        .unwrap();

    // A PodSpecable CRD created while the manager runs: its instances get the env.
    create_crd(
        &kube,
        &crd("Workload", spec_with_template(pod_template()), json!({})),
    )
    .await;
    let workloads = namespaced(&kube, ("example.com", "v1", "Workload"), "workloads");
    let w1: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Workload",
        "metadata": {"name": "w1"}, "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}))
    .unwrap();
    eventually("the Workload kind is served", || async {
        workloads.create(&PostParams::default(), &w1).await.is_ok()
    })
    .await;
    eventually("the env is injected into the Workload", || async {
        workloads
            .get("w1")
            .await
            .is_ok_and(|w| env_of(&w) == json!([{"name": "GREETING", "value": "hi"}]))
    })
    .await;
    assert!(handle.names().contains(&controller.to_string()));
    // Labelled as well, it matches by label now: /metrics says so, the controller runs on.
    let label = json!({"metadata": {"labels": {"duck.knative.dev/podspecable": "true"}}});
    crds_api(&kube)
        .patch(
            "workloads.example.com",
            &PatchParams::default(),
            &Patch::Merge(&label),
        )
        .await
        .unwrap();
    let by_label = r#"dynrec_duck_kinds{controller="PodSpecable/Workload.v1.example.com",duck="PodSpecable",gvk="example.com/v1/Workload",reason="label duck.knative.dev/podspecable=true"} 1"#;
    eventually("/metrics gives the new reason", || async {
        get_text(running.health.clone(), "/metrics")
            .await
            .contains(by_label)
    })
    .await;

    // A CRD that keeps its template open matches once it is labelled.
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    create_crd(&kube, &crd("Gadget", spec_with_template(open), json!({}))).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !handle
            .names()
            .contains(&"PodSpecable/Gadget.v1.example.com".to_string())
    );
    let label = json!({"metadata": {"labels": {"duck.knative.dev/podspecable": "true"}}});
    crds_api(&kube)
        .patch(
            "gadgets.example.com",
            &PatchParams::default(),
            &Patch::Merge(&label),
        )
        .await
        .unwrap();
    eventually("the labelled kind gets a controller", || async {
        handle
            .names()
            .contains(&"PodSpecable/Gadget.v1.example.com".to_string())
    })
    .await;

    // An object that does not fit the duck (its schema is open): a Warning Event names the
    // path, and the other objects of the kind are still reconciled.
    let gadgets = namespaced(&kube, ("example.com", "v1", "Gadget"), "gadgets");
    let gadget = |name: &str, containers: Value| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Gadget",
            "metadata": {"name": name}, "spec": {"template": {"spec": {"containers": containers}}}}))
        .unwrap()
    };
    gadgets
        .create(&PostParams::default(), &gadget("bad", json!("not a list")))
        .await
        .unwrap();
    gadgets
        .create(
            &PostParams::default(),
            &gadget("good", json!([{"name": "app", "image": "nginx"}])),
        )
        .await
        .unwrap();
    eventually("the good Gadget gets the env", || async {
        gadgets
            .get("good")
            .await
            .is_ok_and(|g| env_of(&g) == json!([{"name": "GREETING", "value": "hi"}]))
    })
    .await;
    let events = namespaced(&kube, ("events.k8s.io", "v1", "Event"), "events");
    eventually(
        "the bad Gadget has a Warning Event naming the path",
        || async {
            events.list(&Default::default()).await.is_ok_and(|list| {
                list.items.iter().any(|e| {
                    e.data["regarding"]["name"] == "bad"
                        && e.data["type"] == "Warning"
                        && e.data["reason"] == podspecable::NOT_PODSPECABLE
                        && e.data["note"]
                            .as_str()
                            .is_some_and(|n| n.contains("at spec.template.spec.containers"))
                })
            })
        },
    )
    .await;
    assert!(
        handle
            .names()
            .contains(&"PodSpecable/Gadget.v1.example.com".to_string())
    );

    // Deleting the CRD stops its controller.
    crds_api(&kube)
        .delete("workloads.example.com", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Workload controller stops", || async {
        !handle.names().contains(&controller.to_string())
    })
    .await;

    running.stop().await;
}

#[tokio::test]
async fn the_ducks_table_lists_built_ins_and_matching_crds_with_why() {
    let server = ApiServer::new();
    let kube = server.client();
    let label = json!({"duck.knative.dev/addressable": "true"});
    create_crd(
        &kube,
        &crd("Workload", spec_with_template(pod_template()), json!({})),
    )
    .await;
    create_crd(&kube, &crd("Broker", json!({"type": "object"}), label)).await;
    create_crd(&kube, &run_crd()).await;
    let client = Client::new(kube.clone());
    install_mapping_crd(&client).await.unwrap();
    create_mapping(&kube, "runs.example.com", "spec.runTemplate").await;
    // A mapping whose path the kind lacks matches nothing (the follower logs why).
    create_crd(&kube, &crd("Gadget", json!({"type": "object"}), json!({}))).await;
    let gadgets = json!({"apiVersion": "dynrec.dev/v1alpha1", "kind": "DuckMapping",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"duck": "PodSpecable", "group": "example.com", "kind": "Gadget", "path": "spec.nothing"}});
    mappings_api(&kube)
        .create(
            &PostParams::default(),
            &serde_json::from_value(gadgets).unwrap(),
        )
        .await
        .unwrap();
    eventually("the CRDs are established", || {
        let client = client.clone();
        async move {
            let survey = cluster_survey(&client, &DuckType::known()).await.unwrap();
            survey.matches.len() == 10
        }
    })
    .await;
    let survey = cluster_survey(&client, &DuckType::known()).await.unwrap();
    assert_eq!(
        table(&survey.matches),
        "\
DUCK          APIVERSION       KIND                    WHY
PodSpecable   v1               ReplicationController   openapi schema at spec.template
PodSpecable   apps/v1          DaemonSet               openapi schema at spec.template
PodSpecable   apps/v1          Deployment              openapi schema at spec.template
PodSpecable   apps/v1          ReplicaSet              openapi schema at spec.template
PodSpecable   apps/v1          StatefulSet             openapi schema at spec.template
PodSpecable   batch/v1         CronJob                 mapping built-in at spec.jobTemplate.spec.template
PodSpecable   batch/v1         Job                     openapi schema at spec.template
PodSpecable   example.com/v1   Run                     mapping runs.example.com at spec.runTemplate
PodSpecable   example.com/v1   Workload                schema at spec.template
Addressable   example.com/v1   Broker                  label duck.knative.dev/addressable=true
"
    );
    let near: Vec<String> = survey.near_misses.iter().map(ToString::to_string).collect();
    assert_eq!(
        near,
        [
            "PodSpecable example.com/v1/Gadget: DuckMapping gadgets.example.com: no field at spec.nothing"
        ]
    );
}

/// A CRD `runs.example.com` keeping pod templates at `spec.runTemplate` and
/// `spec.otherTemplate` (not where PodSpecable reads them).
fn run_crd() -> DynamicObject {
    crd(
        "Run",
        json!({"type": "object", "properties": {
            "runTemplate": pod_template(), "otherTemplate": pod_template()}}),
        json!({}),
    )
}

fn mappings_api(kube: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("dynrec.dev", "v1alpha1", "DuckMapping"),
        "duckmappings",
    );
    Api::all_with(kube.clone(), &ar)
}

/// Creates the DuckMapping `name` of the `Run` kind at `path`, once the kind is served.
async fn create_mapping(kube: &kube::Client, name: &str, path: &str) {
    let mapping: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "dynrec.dev/v1alpha1", "kind": "DuckMapping", "metadata": {"name": name},
        "spec": {"duck": "PodSpecable", "group": "example.com", "kind": "Run", "versions": ["v1"], "path": path}}))
    .unwrap();
    let api = mappings_api(kube);
    eventually("the DuckMapping kind is served", || async {
        api.create(&PostParams::default(), &mapping).await.is_ok()
    })
    .await;
}

/// The status, reason and message of a mapping's Ready condition.
async fn mapping_ready(kube: &kube::Client, name: &str) -> [String; 3] {
    let mapping = mappings_api(kube).get(name).await.unwrap();
    let conditions = mapping.data["status"]["conditions"].as_array().cloned();
    let ready = conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c["type"] == "Ready")
        .unwrap_or_default();
    ["status", "reason", "message"].map(|f| ready[f].as_str().unwrap_or_default().to_string())
}

async fn set_mapping_path(kube: &kube::Client, name: &str, path: &str) {
    mappings_api(kube)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"path": path}})),
        )
        .await
        .unwrap();
}

fn greeting() -> Value {
    json!([{"name": "GREETING", "value": "hi"}])
}

async fn create_env_config_map(kube: &kube::Client) {
    let env: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": podspecable::ENV_CONFIG_MAP}, "data": {"GREETING": "hi"}}))
        .unwrap();
    namespaced(kube, ("", "v1", "ConfigMap"), "configmaps")
        .create(&PostParams::default(), &env)
        .await
        .unwrap();
}

fn has(handle: &ControllerHandle, name: &str) -> bool {
    handle.names().iter().any(|n| n == name)
}

/// A GET through the health router, as a scrape or a probe would do it.
async fn get_text(router: axum::Router, uri: &str) -> String {
    let request = http::Request::get(uri)
        .body(axum::body::Body::empty())
        .unwrap();
    let response = router.oneshot(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duck_mappings_start_restart_and_stop_controllers_and_cron_jobs_are_written_at_their_mapped_path()
 {
    let running = run_manager(podspecable::register);
    let (kube, handle, health) = (
        running.kube.clone(),
        running.handle.clone(),
        running.health.clone(),
    );
    create_env_config_map(&kube).await;

    // CronJob, through dynrec's built-in mapping: the env lands in the job's pod template.
    let cron_jobs = namespaced(&kube, ("batch", "v1", "CronJob"), "cronjobs");
    cron_jobs
        .create(&PostParams::default(), &cron_job("nightly"))
        .await
        .unwrap();
    eventually("the CronJob's pod template gets the env", || async {
        cron_jobs.get("nightly").await.is_ok_and(|c| {
            c.data["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
                == greeting()
        })
    })
    .await;
    let nightly = cron_jobs.get("nightly").await.unwrap();
    assert_eq!(nightly.data["spec"]["schedule"], "0 3 * * *");
    assert!(nightly.data["spec"].get("template").is_none());

    // /metrics and /readyz?verbose list the kinds the duck controllers run for, and why.
    let metrics = get_text(health.clone(), "/metrics").await;
    assert!(
        metrics.contains(r#"dynrec_duck_kinds{controller="PodSpecable/CronJob.v1.batch",duck="PodSpecable",gvk="batch/v1/CronJob",reason="mapping built-in at spec.jobTemplate.spec.template"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"dynrec_duck_kinds{controller="PodSpecable/Deployment.v1.apps",duck="PodSpecable",gvk="apps/v1/Deployment",reason="openapi schema at spec.template"} 1"#),
        "{metrics}"
    );
    eventually(
        "/readyz?verbose lists the duck controllers, ready",
        || async {
            let readyz = get_text(health.clone(), "/readyz?verbose").await;
            readyz.contains("[+]PodSpecable/CronJob.v1.batch ok\n")
                && readyz.contains("[+]PodSpecable/Job.v1.batch ok\n")
                && readyz.ends_with("readyz check passed\n")
        },
    )
    .await;

    // A kind that keeps its templates elsewhere matches only once a mapping says where.
    create_crd(&kube, &run_crd()).await;
    let runs = namespaced(&kube, ("example.com", "v1", "Run"), "runs");
    let container = json!({"spec": {"containers": [{"name": "app", "image": "busybox"}]}});
    let run: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Run",
        "metadata": {"name": "r1"}, "spec": {"runTemplate": container, "otherTemplate": container}}))
    .unwrap();
    eventually("the Run kind is served", || async {
        runs.create(&PostParams::default(), &run).await.is_ok()
    })
    .await;
    let controller = "PodSpecable/Run.v1.example.com";
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!has(&handle, controller));
    let env_at = |template: &'static str| {
        let runs = runs.clone();
        async move {
            runs.get("r1")
                .await
                .ok()
                .map(|r| r.data["spec"][template]["spec"]["containers"][0]["env"].clone())
        }
    };

    // A malformed mapping is refused by the API server, naming the field.
    let malformed: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "dynrec.dev/v1alpha1", "kind": "DuckMapping", "metadata": {"name": "bad"},
        "spec": {"duck": "PodSpecable", "kind": "Run", "path": "spec..runTemplate"}}))
    .unwrap();
    create_mapping(&kube, "runs.example.com", "spec.runTemplate").await;
    let refused = mappings_api(&kube)
        .create(&PostParams::default(), &malformed)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("spec.path"), "{refused}");

    // Added: the controller starts and writes at the mapped path.
    eventually(
        "the mapped Run gets the env at spec.runTemplate",
        || async { env_at("runTemplate").await == Some(greeting()) },
    )
    .await;
    assert!(has(&handle, controller));
    assert_eq!(env_at("otherTemplate").await, Some(Value::Null));
    let ready = |expected: [&'static str; 3]| {
        let kube = kube.clone();
        async move { mapping_ready(&kube, "runs.example.com").await == expected }
    };
    eventually("the mapping is Ready", || {
        ready([
            "True",
            "Mapped",
            "example.com/v1/Run keeps PodSpecable at spec.runTemplate",
        ])
    })
    .await;

    // Changed: the controller restarts with the new path.
    set_mapping_path(&kube, "runs.example.com", "spec.otherTemplate").await;
    eventually("the Run gets the env at the new path", || async {
        env_at("otherTemplate").await == Some(greeting())
    })
    .await;

    // Changed to a path the kind lacks: the controller stops.
    set_mapping_path(&kube, "runs.example.com", "spec.nothing").await;
    eventually(
        "a mapping to a missing path stops the controller",
        || async { !has(&handle, controller) },
    )
    .await;
    eventually("the mapping's status names the missing path", || {
        ready([
            "False",
            "DoesNotFit",
            "example.com/v1/Run: no field at spec.nothing",
        ])
    })
    .await;
    set_mapping_path(&kube, "runs.example.com", "spec.runTemplate").await;
    eventually("a fixed mapping starts it again", || async {
        has(&handle, controller)
    })
    .await;

    // Deleted: the controller stops.
    mappings_api(&kube)
        .delete("runs.example.com", &DeleteParams::default())
        .await
        .unwrap();
    eventually("deleting the mapping stops the controller", || async {
        !has(&handle, controller)
    })
    .await;

    // The follower is the manager's: once the manager stopped, nothing starts.
    running.stop().await;
    create_mapping(&kube, "runs-again", "spec.runTemplate").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!has(&handle, controller));
}

fn cron_job(name: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure",
            "containers": [{"name": "app", "image": "busybox"}]}}}}}}))
    .unwrap()
}

/// A client of `kube` that records the body of every PATCH it sends.
fn recording_patches(kube: kube::Client, patches: Arc<Mutex<Vec<Value>>>) -> kube::Client {
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let (kube, patches) = (kube.clone(), patches.clone());
        async move {
            if request.method() != http::Method::PATCH {
                return kube.send(request).await;
            }
            let (parts, body) = request.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            patches
                .lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap());
            let request = http::Request::from_parts(parts, kube::client::Body::from(body.to_vec()));
            kube.send(request).await
        }
    });
    kube::Client::new(service, "default")
}

#[tokio::test]
async fn a_duck_patch_through_a_mapping_is_sent_at_the_mapped_path() {
    let server = ApiServer::new();
    let patches = Arc::new(Mutex::new(Vec::new()));
    let client = Client::new(recording_patches(server.client(), patches.clone()));
    let cron_jobs = namespaced(&server.client(), ("batch", "v1", "CronJob"), "cronjobs");
    let created = cron_jobs
        .create(&PostParams::default(), &cron_job("nightly"))
        .await
        .unwrap();
    let gvk = Gvk::new("batch", "v1", "CronJob");
    let ducks = client.duck::<PodSpecable>().through(Projection::mapped(
        "spec.template",
        "spec.jobTemplate.spec.template",
    ));
    let mut watch = ducks.watch(&gvk).await.unwrap();
    let mut nightly = ducks
        .get(&gvk, &ObjectKey::namespaced("default", "nightly"))
        .await
        .unwrap();
    let read_at = nightly.metadata.resource_version.clone().unwrap();
    let pod = nightly.spec.template.spec.as_mut().unwrap();
    assert_eq!(pod.containers[0].image.as_deref(), Some("busybox"));
    pod.containers[0].env = Some(vec![EnvVar {
        name: "GREETING".into(),
        value: Some("hi".into()),
        value_from: None,
    }]);
    let patched = ducks.patch(&nightly).await.unwrap();
    // A merge patch replaces a list whole: the containers as stored (with the server's
    // defaults), plus the env, under the job's pod template and nowhere else.
    let mut containers =
        created.data["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"].clone();
    assert_eq!(containers[0]["imagePullPolicy"], "Always");
    containers[0]["env"] = greeting();
    assert_eq!(
        *patches.lock().unwrap(),
        vec![json!({"metadata": {"resourceVersion": read_at},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": containers}}}}}})]
    );
    assert_eq!(
        patched.spec.template.spec.as_ref().unwrap().containers[0].env,
        nightly.spec.template.spec.as_ref().unwrap().containers[0].env
    );
    let stored = cron_jobs.get("nightly").await.unwrap();
    assert_eq!(
        stored.data["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"],
        greeting()
    );
    assert_eq!(stored.data["spec"]["schedule"], "0 3 * * *");
    assert!(stored.data["spec"].get("template").is_none());
    // A watch through the mapping sees the change as the duck.
    let env_seen = async {
        while let Some(event) = watch.next().await {
            if let Ok(DuckEvent::Applied(seen)) = event
                && seen.spec.template.spec.as_ref().unwrap().containers[0]
                    .env
                    .is_some()
            {
                return seen.projection().kind_path();
            }
        }
        String::new()
    };
    assert_eq!(
        tokio::time::timeout(DEADLINE, env_seen).await.unwrap(),
        "spec.jobTemplate.spec.template"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_duck_reconcilers_on_one_kind_share_one_watch() {
    // A second reconciler of the same duck: it records what it reconciled.
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let audit = seen.clone();
    let running = run_manager(|manager, config| {
        podspecable::register(manager, config);
        DuckControllers::new(manager, config)
            .register_as(
                "PodSpecableAudit",
                DuckType::podspecable(),
                move |found, config| {
                    let audit = audit.clone();
                    let sync = SyncReconciler::new(move |_ctx, object: &mut Draft| {
                        let name = object.metadata.name.clone().unwrap_or_default();
                        audit.lock().unwrap().push(name);
                        Ok(())
                    });
                    ResourceReconciler::new(found.gvk.clone(), sync, config.clone())
                },
            )
            .start(manager);
    });
    let (kube, handle, server) = (
        running.kube.clone(),
        running.handle.clone(),
        &running.server,
    );
    create_env_config_map(&kube).await;
    let deployments = namespaced(&kube, ("apps", "v1", "Deployment"), "deployments");
    let web: DynamicObject = serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}))
    .unwrap();
    deployments
        .create(&PostParams::default(), &web)
        .await
        .unwrap();
    eventually("both reconcilers reconciled the Deployment", || async {
        let injected = deployments
            .get("web")
            .await
            .is_ok_and(|d| env_of(&d) == greeting());
        injected && seen.lock().unwrap().contains(&"web".to_string())
    })
    .await;
    assert!(has(&handle, "PodSpecable/Deployment.v1.apps"));
    assert!(has(&handle, "PodSpecableAudit/Deployment.v1.apps"));
    // A core kind's controller is named without a trailing dot for the empty group.
    assert!(has(&handle, "PodSpecable/ReplicationController.v1"));
    assert_eq!(server.open_watches().get("apps/deployments"), Some(&1));
    assert_eq!(server.request_count("watch", "apps", "deployments"), 1);
    assert_eq!(server.request_count("list", "apps", "deployments"), 1);
    running.stop().await;
}

/// A client of `server` that serves no OpenAPI v3 (as a cluster before it had one).
fn without_openapi(kube: kube::Client) -> kube::Client {
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let kube = kube.clone();
        async move {
            if request.uri().path().starts_with("/openapi") {
                let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                    "reason": "NotFound", "code": 404, "message": "not found"});
                let mut response =
                    http::Response::new(kube::client::Body::from(status.to_string().into_bytes()));
                *response.status_mut() = http::StatusCode::NOT_FOUND;
                return Ok(response);
            }
            kube.send(request).await
        }
    });
    kube::Client::new(service, "default")
}

#[tokio::test]
async fn without_openapi_the_known_built_ins_match_by_the_list() {
    let server = ApiServer::new();
    let client = Client::new(without_openapi(server.client()));
    let survey = cluster_survey(&client, &[DuckType::podspecable()])
        .await
        .unwrap();
    assert_eq!(
        table(&survey.matches),
        "\
DUCK          APIVERSION   KIND          WHY
PodSpecable   apps/v1      DaemonSet     built-in (no openapi schema)
PodSpecable   apps/v1      Deployment    built-in (no openapi schema)
PodSpecable   apps/v1      ReplicaSet    built-in (no openapi schema)
PodSpecable   apps/v1      StatefulSet   built-in (no openapi schema)
PodSpecable   batch/v1     CronJob       mapping built-in at spec.jobTemplate.spec.template
PodSpecable   batch/v1     Job           built-in (no openapi schema)
"
    );
}

#[test]
fn dynrec_ducks_prints_only_the_table_on_stdout() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .args(["ducks", "--embedded"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let mut lines = stdout.lines();
    assert!(
        lines.next().is_some_and(|l| l.starts_with("DUCK ")),
        "{stdout}"
    );
    assert!(
        lines.all(|l| l.starts_with("PodSpecable ") || l.starts_with("Addressable ")),
        "{stdout}"
    );
    assert!(stdout.contains("CronJob"), "{stdout}");
}

/// An addressable CRD: `status.address.url` a string in its schema, or kept open and
/// labelled.
fn addressable_crd(kind: &str, labelled: bool) -> DynamicObject {
    let mut crd = crd(kind, json!({"type": "object"}), json!({}));
    let status = if labelled {
        crd.metadata.labels = Some(
            [(
                "duck.knative.dev/addressable".to_string(),
                "true".to_string(),
            )]
            .into(),
        );
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    } else {
        json!({"type": "object", "properties": {"address": {"type": "object", "properties": {
            "url": {"type": "string"}}}}})
    };
    crd.data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] = status;
    crd
}

fn addressable_object(kind: &str, name: &str, url: Value) -> DynamicObject {
    let status = if url.is_null() {
        json!({})
    } else {
        json!({"address": {"url": url}})
    };
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": kind,
        "metadata": {"name": name, "namespace": "default"}, "spec": {}, "status": status}))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_addressable_demo_lists_every_address_of_every_matching_kind_in_a_config_map() {
    let running = run_manager(addressable::register);
    let (kube, handle) = (running.kube.clone(), running.handle.clone());
    let config_maps = namespaced(&kube, ("", "v1", "ConfigMap"), "configmaps");
    let listed = || async {
        config_maps
            .get_opt(addressable::CONFIG_MAP)
            .await
            .ok()
            .flatten()
            .map(|c| c.data["data"].clone())
            .unwrap_or(Value::Null)
    };

    // A kind of the duck's schema appears; its objects are listed once they have an address.
    create_crd(&kube, &addressable_crd("Broker", false)).await;
    let brokers = namespaced(&kube, ("example.com", "v1", "Broker"), "brokers");
    let b1 = addressable_object("Broker", "b1", Value::Null);
    eventually("the Broker kind is served", || async {
        brokers.create(&PostParams::default(), &b1).await.is_ok()
    })
    .await;
    brokers
        .create(
            &PostParams::default(),
            &addressable_object("Broker", "b2", json!("http://b2.default.svc")),
        )
        .await
        .unwrap();
    eventually("b2 is listed", || async {
        listed().await == json!({"Broker.example.com_default_b2": "http://b2.default.svc"})
    })
    .await;
    brokers
        .patch(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"address": {"url": "http://b1.default.svc"}}})),
        )
        .await
        .unwrap();
    eventually("b1 is listed once it has an address", || async {
        listed().await
            == json!({"Broker.example.com_default_b1": "http://b1.default.svc",
                      "Broker.example.com_default_b2": "http://b2.default.svc"})
    })
    .await;

    // A second kind, labelled: its objects join the same ConfigMap; one that does not fit
    // the duck gets a Warning Event naming the path and is left out.
    create_crd(&kube, &addressable_crd("Channel", true)).await;
    let channels = namespaced(&kube, ("example.com", "v1", "Channel"), "channels");
    let c1 = addressable_object("Channel", "c1", json!("http://c1.default.svc"));
    eventually("the Channel kind is served", || async {
        channels.create(&PostParams::default(), &c1).await.is_ok()
    })
    .await;
    channels
        .create(
            &PostParams::default(),
            &addressable_object("Channel", "odd", json!(42)),
        )
        .await
        .unwrap();
    eventually("c1 is listed", || async {
        listed().await
            == json!({"Broker.example.com_default_b1": "http://b1.default.svc",
                      "Broker.example.com_default_b2": "http://b2.default.svc",
                      "Channel.example.com_default_c1": "http://c1.default.svc"})
    })
    .await;
    let events = namespaced(&kube, ("events.k8s.io", "v1", "Event"), "events");
    eventually(
        "the odd Channel has a Warning Event naming the path",
        || async {
            events.list(&Default::default()).await.is_ok_and(|list| {
                list.items.iter().any(|e| {
                    e.data["regarding"]["name"] == "odd"
                        && e.data["reason"] == addressable::NOT_ADDRESSABLE
                        && e.data["note"]
                            .as_str()
                            .is_some_and(|n| n.contains("at status.address.url"))
                })
            })
        },
    )
    .await;

    // An object deleted drops its entry; a kind going away drops all of its entries.
    brokers
        .delete("b1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("b1's entry is dropped", || async {
        listed().await
            == json!({"Broker.example.com_default_b2": "http://b2.default.svc",
                      "Channel.example.com_default_c1": "http://c1.default.svc"})
    })
    .await;
    crds_api(&kube)
        .delete("channels.example.com", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "the Channel entries are dropped with their kind",
        || async {
            listed().await == json!({"Broker.example.com_default_b2": "http://b2.default.svc"})
        },
    )
    .await;
    eventually("the Channel controller stops", || async {
        !has(&handle, "Addressable/Channel.v1.example.com")
    })
    .await;
    assert!(has(&handle, "Addressable/Broker.v1.example.com"));

    running.stop().await;
}

/// Runs kubectl with `kubeconfig`, `stdin` on its standard input; its stdout, or why it failed.
async fn kubectl(
    kubeconfig: &std::path::Path,
    args: &[&str],
    stdin: &str,
) -> Result<String, String> {
    let mut command = tokio::process::Command::new("kubectl");
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    if let Some(mut input) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        input
            .write_all(stdin.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
    }
    let output = child.wait_with_output().await.map_err(|e| e.to_string())?;
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    if output.status.success() {
        Ok(text(output.stdout))
    } else {
        Err(text(output.stderr))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_kubectl_a_podspecable_crd_is_reconciled_a_mapping_reports_ready_and_deleting_the_crd_stops_its_controller()
 {
    if kubectl_on_path().is_none() {
        return;
    }
    let running = run_manager(podspecable::register);
    let serving = running
        .server
        .serve(([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        dynrec::apiserver::kubeconfig(&serving.url(), None, None),
    )
    .unwrap();
    let apply = |manifest: Value| {
        let kubeconfig = kubeconfig.clone();
        async move { kubectl(&kubeconfig, &["apply", "-f", "-"], &manifest.to_string()).await }
    };
    let mut workloads = crd("Workload", spec_with_template(pod_template()), json!({}));
    workloads.data.as_object_mut().unwrap().remove("status");
    apply(serde_json::to_value(&workloads).unwrap())
        .await
        .unwrap();
    apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": podspecable::ENV_CONFIG_MAP, "namespace": "default"},
        "data": {"GREETING": "hi"}}))
    .await
    .unwrap();
    let w1 = json!({"apiVersion": "example.com/v1", "kind": "Workload",
        "metadata": {"name": "w1", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx"}]}}}});
    eventually("kubectl can create a Workload", || async {
        apply(w1.clone()).await.is_ok()
    })
    .await;
    let env = "jsonpath={.spec.template.spec.containers[0].env[0].value}";
    eventually("kubectl sees the env injected", || async {
        kubectl(&kubeconfig, &["get", "workload", "w1", "-o", env], "").await == Ok("hi".into())
    })
    .await;

    let mut runs = run_crd();
    runs.data.as_object_mut().unwrap().remove("status");
    apply(serde_json::to_value(&runs).unwrap()).await.unwrap();
    let mapping = json!({"apiVersion": "dynrec.dev/v1alpha1", "kind": "DuckMapping",
        "metadata": {"name": "runs.example.com"},
        "spec": {"duck": "PodSpecable", "group": "example.com", "kind": "Run", "path": "spec.runTemplate"}});
    eventually("kubectl can create the DuckMapping", || async {
        apply(mapping.clone()).await.is_ok()
    })
    .await;
    eventually("kubectl get duckmappings shows it Ready", || async {
        let table = kubectl(&kubeconfig, &["get", "dm", "runs.example.com"], "").await;
        table.is_ok_and(|t| {
            let row = t.lines().nth(1).unwrap_or_default().to_string();
            row.split_whitespace().collect::<Vec<_>>()
                == [
                    "runs.example.com",
                    "PodSpecable",
                    "example.com",
                    "Run",
                    "spec.runTemplate",
                    "True",
                    "Mapped",
                ]
        })
    })
    .await;

    kubectl(&kubeconfig, &["delete", "crd", "workloads.example.com"], "")
        .await
        .unwrap();
    eventually("deleting the CRD stops its controller", || async {
        !has(&running.handle, "PodSpecable/Workload.v1.example.com")
    })
    .await;
    serving.shutdown().await;
    running.stop().await;
}
