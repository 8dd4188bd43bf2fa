//! Ducks found at run time: which kinds implement a duck (table of CRD schemas, labels and
//! built-ins), and duck controllers started and stopped while the manager runs.

use std::time::{Duration, Instant};

use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::demo::podspecable;
use dynrec::ducks::{
    DuckType, KindMatch, Miss, Reason, Verdict, cluster_matches, match_builtins, match_crd, table,
};
use dynrec::object::Gvk;
use dynrec::reconcilers::Config;
use dynrec::runtime::{Manager, ManagerOptions};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

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
        vec![KindMatch {
            duck: "PodSpecable".into(),
            gvk: deployment,
            reason: Reason::Builtin
        }]
    );
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

async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + DEADLINE;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podspecable_kinds_appear_are_reconciled_and_their_controllers_stop_when_they_go() {
    let server = ApiServer::new();
    let kube = server.client();
    let client = Client::new(kube.clone());
    let config = Config::new(client.clone(), "demo", Duration::from_secs(600));
    let manager = Manager::new(client, ManagerOptions::default());
    let handle = manager.handle();
    let follower = podspecable::register(&manager, &config);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(manager.run(async move {
        let _ = stopped.await;
    }));
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

    follower.abort();
    let _ = stop.send(());
    tokio::time::timeout(DEADLINE, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
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
    let client = Client::new(kube);
    eventually("both CRDs are established", || {
        let client = client.clone();
        async move {
            let matches = cluster_matches(&client, &DuckType::known()).await.unwrap();
            matches.len() == 7
        }
    })
    .await;
    let matches = cluster_matches(&client, &DuckType::known()).await.unwrap();
    assert_eq!(
        table(&matches),
        "\
DUCK          APIVERSION       KIND          WHY
PodSpecable   apps/v1          Deployment    built-in
PodSpecable   apps/v1          StatefulSet   built-in
PodSpecable   apps/v1          DaemonSet     built-in
PodSpecable   apps/v1          ReplicaSet    built-in
PodSpecable   batch/v1         Job           built-in
PodSpecable   example.com/v1   Workload      schema at spec.template
Addressable   example.com/v1   Broker        label duck.knative.dev/addressable=true
"
    );
}
