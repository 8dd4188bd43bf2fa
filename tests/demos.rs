//! The examples' controllers reaching their end states: widgets in-process and as
//! `dynrec run` (the binary), the smallest controller, podspecable and singleton in-process.

/// The podspecable example's controller (each user of it uses a part).
#[path = "../examples/podspecable/controller.rs"]
#[allow(dead_code)]
mod podspecable;

/// The singleton example's controller (each user of it uses a part).
#[path = "../examples/singleton/controller.rs"]
#[allow(dead_code)]
mod singleton;

/// The smallest example (its `main` is not used here).
#[path = "../examples/smallest.rs"]
#[allow(dead_code)]
mod smallest;

/// The widgets example's controller (each user of it uses a part).
#[path = "../examples/widgets/controller.rs"]
#[allow(dead_code)]
mod widgets;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::reconcilers::Config;
use dynrec::runtime::{Manager, ManagerOptions};
use dynrec_test_support::{api, configmaps_api, eventually, widgets_api};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);

fn widget(name: &str, greeting: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"greeting": greeting, "size": 2}}))
    .unwrap()
}

/// Replaces the widget's greeting.
async fn change_greeting(kube: &kube::Client, name: &str, greeting: &str) {
    let mut changed = widgets_api(kube).get(name).await.unwrap();
    changed.data["spec"]["greeting"] = json!(greeting);
    widgets_api(kube)
        .replace(name, &PostParams::default(), &changed)
        .await
        .unwrap();
}

/// Waits until the widget is Ready and its ConfigMap carries the greeting.
async fn wait_converged(client: &kube::Client, name: &str, greeting: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let ready = widgets_api(client)
            .get_opt(name)
            .await
            .ok()
            .flatten()
            .is_some_and(|w| {
                w.data["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            });
        let child = configmaps_api(client)
            .get_opt(&format!("{name}-config"))
            .await
            .ok()
            .flatten();
        if ready && child.is_some_and(|c| c.data["data"]["greeting"] == greeting) {
            return;
        }
        assert!(Instant::now() < deadline, "widget {name} converged");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_widgets_controller_creates_and_updates_the_child_and_reports_ready() {
    let server = ApiServer::new();
    let kube = server.client();
    let client = Client::new(kube.clone());
    let config = Config::new(client.clone(), "widgets");
    let mut manager = Manager::new(client, ManagerOptions::default());
    widgets::register(&mut manager, &config).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(manager.run(async move {
        let _ = stopped.await;
    }));
    widgets::install_crd(&kube).await.unwrap();
    let deadline = Instant::now() + DEADLINE;
    while widgets_api(&kube)
        .create(&PostParams::default(), &widget("w1", "hi"))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the Widget kind is served");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    wait_converged(&kube, "w1", "hi").await;

    change_greeting(&kube, "w1", "hello again").await;
    wait_converged(&kube, "w1", "hello again").await;

    let _ = stop.send(());
    tokio::time::timeout(DEADLINE, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynrec_run_serves_the_embedded_default_runs_the_bundled_definitions_and_stops_on_sigterm()
{
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .arg("run")
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let first = lines_rx
        .recv_timeout(DEADLINE)
        .expect("dynrec run prints the server URL");
    let url = first
        .strip_prefix("embedded API server listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    let hint = lines_rx.recv_timeout(DEADLINE).unwrap();
    let kubeconfig = dir.path().join(".dynrec/kubeconfig");
    assert!(
        hint.starts_with(&format!("KUBECONFIG={} kubectl", kubeconfig.display())),
        "the hint names the kubeconfig by its absolute path: {hint}"
    );
    assert!(dir.path().join(".dynrec/kubeconfig").is_file());

    let kube = kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();
    let deadline = Instant::now() + DEADLINE;
    while widgets_api(&kube)
        .create(&PostParams::default(), &widget("w1", "hi"))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the Widget kind is served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_converged(&kube, "w1", "hi").await;
    let mut said = Vec::new();
    while let Ok(line) = lines_rx.recv_timeout(Duration::from_millis(200)) {
        said.push(line);
    }
    for bundled in ["widgets", "webapps", "configsets"] {
        assert!(
            said.iter()
                .any(|l| l.starts_with(&format!("definition {bundled} reconciles "))),
            "dynrec run says which bundled definitions run: {said:?}"
        );
    }

    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "dynrec run exits after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "a graceful exit: {status}");
    assert!(
        !kubeconfig.exists(),
        "the kubeconfig it wrote is removed when it stops"
    );
}

/// Starts a manager with `register` on a fresh embedded server; returns the server's client,
/// a stop switch and the running manager.
async fn start_demo(
    register: impl FnOnce(&mut Manager, &Config),
) -> (
    kube::Client,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), dynrec::runtime::ManagerError>>,
) {
    let server = ApiServer::new();
    let kube = server.client();
    let client = Client::new(kube.clone());
    let config = Config::new(client.clone(), "demo");
    let mut manager = Manager::new(client, ManagerOptions::default());
    register(&mut manager, &config);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(manager.run(async move {
        let _ = stopped.await;
    }));
    (kube, stop, running)
}

fn env_of(deployment: &DynamicObject) -> serde_json::Value {
    deployment.data["spec"]["template"]["spec"]["containers"][0]["env"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_podspecable_duck_reconciler_injects_env_from_the_tracked_configmap() {
    let (kube, stop, running) = start_demo(|manager, config| {
        podspecable::register(manager, config);
    })
    .await;
    let deployments = api(&kube, "apps", "Deployment", "deployments");
    let web: DynamicObject = serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}))
    .unwrap();
    deployments
        .create(&PostParams::default(), &web)
        .await
        .unwrap();
    // The status kube's deployment controller would have written: the duck reconciler
    // must leave it alone (no observedGeneration for a generation it did not roll out).
    let mut observed = deployments.get("web").await.unwrap();
    observed.data["status"] =
        json!({"observedGeneration": 1, "replicas": 3, "availableReplicas": 3});
    let observed = deployments
        .replace_status("web", &PostParams::default(), &observed)
        .await
        .unwrap();

    // The ConfigMap appears after the workload: the track makes it reconcile again.
    let env: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": podspecable::ENV_CONFIG_MAP}, "data": {"GREETING": "hi"}}))
        .unwrap();
    configmaps_api(&kube)
        .create(&PostParams::default(), &env)
        .await
        .unwrap();
    eventually("the variable is injected", || async {
        deployments
            .get("web")
            .await
            .is_ok_and(|d| env_of(&d) == json!([{"name": "GREETING", "value": "hi"}]))
    })
    .await;
    let web = deployments.get("web").await.unwrap();
    assert_eq!(
        web.data["spec"]["replicas"], 3,
        "fields the duck does not know are untouched"
    );

    let mut edited = configmaps_api(&kube)
        .get(podspecable::ENV_CONFIG_MAP)
        .await
        .unwrap();
    edited.data["data"] = json!({"GREETING": "hello"});
    configmaps_api(&kube)
        .replace(podspecable::ENV_CONFIG_MAP, &PostParams::default(), &edited)
        .await
        .unwrap();
    eventually(
        "editing the ConfigMap re-reconciles the workload",
        || async {
            deployments
                .get("web")
                .await
                .is_ok_and(|d| env_of(&d) == json!([{"name": "GREETING", "value": "hello"}]))
        },
    )
    .await;
    // Two env patches later (each reconciled again once it landed), the status is untouched.
    let web = deployments.get("web").await.unwrap();
    assert_eq!(
        web.metadata.generation,
        Some(3),
        "each env patch is a spec change"
    );
    assert_eq!(
        serde_json::to_string(&web.data["status"]).unwrap(),
        serde_json::to_string(&observed.data["status"]).unwrap(),
        "the Deployment's status is byte-for-byte what its own controller wrote"
    );
    let _ = stop.send(());
    tokio::time::timeout(DEADLINE, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_singleton_keeps_a_summary_of_the_namespaces() {
    let (kube, stop, running) =
        start_demo(|manager, config| singleton::register(manager, config).unwrap()).await;
    let summary = || async {
        configmaps_api(&kube)
            .get_opt("cluster-summary")
            .await
            .ok()
            .flatten()
            .map(|c| {
                c.data["data"]["namespaces"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
    };
    eventually("the summary is created", || async {
        summary().await.as_deref() == Some("default,kube-node-lease,kube-public,kube-system")
    })
    .await;
    let namespaces = Api::<DynamicObject>::all_with(
        kube.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "Namespace"),
            "namespaces",
        ),
    );
    let demo: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}}),
    )
    .unwrap();
    namespaces
        .create(&PostParams::default(), &demo)
        .await
        .unwrap();
    eventually("a new namespace updates the summary", || async {
        summary().await.as_deref() == Some("default,demo,kube-node-lease,kube-public,kube-system")
    })
    .await;
    let _ = stop.send(());
    tokio::time::timeout(DEADLINE, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

/// The ConfigMaps in `default` that name an owner (a Widget's children).
async fn owned_config_maps(kube: &kube::Client) -> Vec<String> {
    configmaps_api(kube)
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| {
            !c.metadata
                .owner_references
                .clone()
                .unwrap_or_default()
                .is_empty()
        })
        .filter_map(|c| c.metadata.name)
        .collect()
}

/// The race of a deleted parent: a reconcile working from a cache that has not yet seen its
/// Widget's deletion re-creates the ConfigMap the garbage collector has just deleted, owned by
/// a uid that no longer exists. As kube's collector, the server deletes such a dependent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_widgets_mid_reconcile_leaves_no_config_map_behind() {
    const WIDGETS: usize = 100;
    let (kube, stop, running) =
        start_demo(|manager, config| widgets::register(manager, config).unwrap()).await;
    widgets::install_crd(&kube).await.unwrap();
    let names: Vec<String> = (0..WIDGETS).map(|i| format!("w{i}")).collect();
    let deadline = Instant::now() + DEADLINE;
    while widgets_api(&kube)
        .create(&PostParams::default(), &widget(&names[0], "hi"))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the Widget kind is served");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    for name in &names[1..] {
        widgets_api(&kube)
            .create(&PostParams::default(), &widget(name, "hi"))
            .await
            .unwrap();
    }
    for name in &names {
        wait_converged(&kube, name, "hi").await;
    }
    for name in &names {
        let mut changed = widgets_api(&kube).get(name).await.unwrap();
        changed.data["spec"]["greeting"] = json!("hello again");
        widgets_api(&kube)
            .replace(name, &PostParams::default(), &changed)
            .await
            .unwrap();
    }
    for name in &names {
        widgets_api(&kube)
            .delete(name, &Default::default())
            .await
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left = owned_config_maps(&kube).await;
    while !left.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = owned_config_maps(&kube).await;
    }
    assert_eq!(left, Vec::<String>::new(), "ConfigMaps left behind");
    let _ = stop.send(());
    tokio::time::timeout(DEADLINE, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

/// The README's smallest controller, with the default object manager (server-side apply):
/// the child is created, follows the parent, and the parent is Ready through the condition
/// the root declares.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smallest_controller_applies_its_child_and_reports_ready() {
    let (kube, stop, running) = start_demo(|manager, config| {
        manager.register(smallest::widgets(config)).unwrap();
    })
    .await;
    widgets::install_crd(&kube).await.unwrap();
    let created = || async {
        widgets_api(&kube)
            .create(&PostParams::default(), &widget("w1", "hi"))
            .await
            .is_ok()
    };
    eventually("the Widget kind is served", created).await;
    let greeting = |expected: &'static str| {
        let kube = kube.clone();
        move || {
            let kube = kube.clone();
            async move {
                let widget = widgets_api(&kube).get("w1").await.unwrap();
                let ready = widget.data["status"]["conditions"]
                    .as_array()
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    });
                let child = configmaps_api(&kube).get_opt("w1-greeting").await.unwrap();
                ready && child.is_some_and(|c| c.data["data"]["greeting"] == expected)
            }
        }
    };
    eventually(
        "the ConfigMap holds the greeting and the widget is Ready",
        greeting("hi"),
    )
    .await;
    let child = configmaps_api(&kube).get("w1-greeting").await.unwrap();
    let managers: Vec<_> = child
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| (m.manager.clone(), m.operation.clone()))
        .collect();
    assert!(
        managers.contains(&(
            Some("ConfigMapApplyingObjectManager".into()),
            Some("Apply".into())
        )),
        "the child is applied by the default object manager: {managers:?}"
    );

    change_greeting(&kube, "w1", "hello again").await;
    eventually(
        "the ConfigMap follows the greeting",
        greeting("hello again"),
    )
    .await;
    let _ = stop.send(());
    running.await.unwrap().unwrap();
}

/// docs/rust.md's table test of the smallest controller, as written there: its child is
/// applied (not created) under the default field manager, and the Widget's status is
/// written with the conditions the root declares.
#[tokio::test]
async fn the_docs_table_test_of_the_smallest_controller_passes() {
    use dynrec::object::ObjectKey;
    use dynrec::testing::{ApplyRef, Event, ExpectConfig, ReconcilerTestCase, ReconcilerTestSuite};

    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default", "generation": 1,
                     "uid": "11111111-1111-1111-1111-111111111111"},
        "spec": {"greeting": "hi"}}))
    .unwrap();
    let desired: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "w1-greeting", "namespace": "default",
            "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Widget", "name": "w1",
                "uid": "11111111-1111-1111-1111-111111111111",
                "controller": true, "blockOwnerDeletion": true}]},
        "data": {"greeting": "hi"}}))
    .unwrap();
    let mut ready = widget.clone();
    ready.data["status"] = json!({"observedGeneration": 1, "conditions": [
        {"type": "ConfigMapReady", "status": "True", "reason": "Created", "message": ""},
        {"type": "Ready", "status": "True", "reason": "Ready", "message": ""}]});
    let crd: DynamicObject = serde_json::from_value(widgets::widget_crd()).unwrap();
    ReconcilerTestSuite::from(vec![ReconcilerTestCase {
        name: "applies its ConfigMap and is Ready".into(),
        request: ObjectKey::of(&widget).unwrap(),
        config: ExpectConfig {
            given_api_resources: vec![crd],
            given_objects: vec![widget.clone()],
            expect_applies: vec![ApplyRef::of(&desired, "ConfigMapApplyingObjectManager")],
            expect_status_updates: vec![ready],
            expect_events: vec![
                Event::normal(&widget, "Created", r#"Created ConfigMap "w1-greeting""#),
                Event::normal(&widget, "StatusUpdated", "Updated status"),
            ],
            ..Default::default()
        },
        ..Default::default()
    }])
    .run(|_case, config| Box::new(smallest::widgets(config)))
    .await;
}
