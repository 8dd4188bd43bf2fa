//! The widgets demo, in-process and as `dynrec run` (the binary), reaching its end state.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::demo::widgets;
use dynrec::reconcilers::Config;
use dynrec::runtime::{Manager, ManagerOptions};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);

fn widgets_api(client: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn configmaps_api(client: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("", "v1", "ConfigMap"),
        "configmaps",
    );
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn widget(name: &str, greeting: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"greeting": greeting, "size": 2}}))
    .unwrap()
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
    let config = Config::new(client.clone(), "widgets", Duration::from_secs(600));
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

    let mut changed = widgets_api(&kube).get("w1").await.unwrap();
    changed.data["spec"]["greeting"] = json!("hello again");
    widgets_api(&kube)
        .replace("w1", &PostParams::default(), &changed)
        .await
        .unwrap();
    wait_converged(&kube, "w1", "hello again").await;

    let _ = stop.send(());
    tokio::time::timeout(DEADLINE, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynrec_run_serves_the_embedded_default_reconciles_and_stops_on_sigterm() {
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
    assert!(
        hint.starts_with("KUBECONFIG=.dynrec/kubeconfig kubectl"),
        "{hint}"
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
    let said = lines_rx.recv_timeout(DEADLINE).unwrap();
    assert!(
        said.contains("widget default/w1") && said.contains("Ready"),
        "{said}"
    );

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
}
