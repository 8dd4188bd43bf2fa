//! What `dynrec run` writes to its log when it is not a terminal: no colour codes, and one
//! line per failed reconcile carrying the cause, not one per layer that saw the error.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

/// Starts `dynrec apiserver` with `faults`; returns it and its URL.
fn start_apiserver(dir: &Path, faults: serde_json::Value) -> (Child, String) {
    let faults_file = dir.join("faults.json");
    std::fs::write(&faults_file, faults.to_string()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .args(["apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out"])
        .arg(dir.join("kubeconfig"))
        .arg("--faults")
        .arg(&faults_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout);
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    // Keep reading: the server writes more, and a closed pipe would end it.
    std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
    let url = first
        .trim()
        .strip_prefix("dynrec apiserver listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    (child, url)
}

fn terminate(child: &mut Child) {
    let pid = child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let deadline = Instant::now() + DEADLINE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn api(client: &kube::Client, group: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural);
    Api::namespaced_with(client.clone(), "default", &ar)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_child_write_is_one_uncoloured_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, url) = start_apiserver(
        dir.path(),
        json!([{"match": {"verb": "update", "kind": "ConfigMap", "name": "w1-config"},
            "action": {"fail": {"code": 500, "reason": "InternalError",
                "message": "injected storage failure"}}, "times": 1}]),
    );
    let log_path = dir.path().join("run.log");
    let definition =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/definitions/widgets.yaml");
    let mut run = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .arg("-f")
        .arg(&definition)
        .args(["--leader-elect", "false"])
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();

    let kube = kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();
    let widget: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1",
        "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"greeting": "hi"}}))
    .unwrap();
    let widgets = api(&kube, "example.com", "Widget", "widgets");
    let deadline = Instant::now() + DEADLINE;
    while widgets
        .create(&PostParams::default(), &widget)
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the Widget kind is served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let configmaps = api(&kube, "", "ConfigMap", "configmaps");
    let greeting_is = |greeting: &'static str| {
        let configmaps = configmaps.clone();
        async move {
            configmaps
                .get_opt("w1-config")
                .await
                .unwrap()
                .is_some_and(|c| c.data["data"]["greeting"] == greeting)
        }
    };
    while !greeting_is("hi").await {
        assert!(Instant::now() < deadline, "the ConfigMap is created");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The first update of the child fails (500); the retry lands it.
    widgets
        .patch(
            "w1",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"greeting": "hello"}})),
        )
        .await
        .unwrap();
    while !greeting_is("hello").await {
        assert!(
            Instant::now() < deadline,
            "the ConfigMap is updated on a retry"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    terminate(&mut run);
    terminate(&mut server);

    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        !log.contains('\u{1b}'),
        "no escape codes in a log file:\n{log}"
    );
    let loud: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect();
    assert_eq!(loud.len(), 1, "one warning or error line:\n{log}");
    assert!(
        loud[0].contains("ERROR") && loud[0].contains("injected storage failure"),
        "the line is an error carrying the cause: {}",
        loud[0]
    );
}
