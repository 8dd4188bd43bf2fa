//! Durable storage: a server killed with SIGKILL mid-stream keeps every write it answered.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::json;

/// A `dynrec apiserver` process, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(data_dir: &std::path::Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .args(["apiserver", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .arg("--kubeconfig-out")
        .arg(data_dir.join("kubeconfig"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("dynrec starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("dynrec apiserver listening on ") {
                let _ = sender.send(url.to_string());
            }
        }
    });
    let url = receiver
        .recv_timeout(Duration::from_secs(30))
        .expect("dynrec apiserver prints its URL");
    Server { child, url }
}

fn configmaps(url: &str) -> Api<DynamicObject> {
    let config = kube::Config::new(url.parse().expect("a URL"));
    let client = kube::Client::try_from(config).expect("a client");
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("", "v1", "ConfigMap"),
        "configmaps",
    );
    Api::namespaced_with(client, "default", &ar)
}

fn configmap(i: usize) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm{i}")}, "data": {"i": i.to_string()}}))
    .expect("a valid object")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_server_keeps_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path());
    let cms = configmaps(&server.url);
    let acknowledged = Arc::new(Mutex::new(Vec::<(String, u64)>::new()));
    let writer = {
        let acknowledged = acknowledged.clone();
        tokio::spawn(async move {
            for i in 0..1_000 {
                match cms.create(&PostParams::default(), &configmap(i)).await {
                    Ok(created) => {
                        let rv = created
                            .metadata
                            .resource_version
                            .unwrap_or_default()
                            .parse()
                            .unwrap_or(0);
                        acknowledged.lock().unwrap().push((format!("cm{i}"), rv));
                    }
                    Err(_) => return i,
                }
            }
            1_000
        })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while acknowledged.lock().unwrap().len() < 300 {
        assert!(Instant::now() < deadline, "300 writes within a minute");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.child.kill().expect("SIGKILL");
    server.child.wait().expect("the process ends");
    let stopped_at = tokio::time::timeout(Duration::from_secs(30), writer)
        .await
        .expect("the writer notices")
        .unwrap();
    assert!(stopped_at < 1_000, "the server was killed mid-stream");
    let acknowledged = acknowledged.lock().unwrap().clone();

    let server = start(dir.path());
    let cms = configmaps(&server.url);
    let stored: std::collections::HashSet<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect();
    let lost: Vec<&String> = acknowledged
        .iter()
        .map(|(n, _)| n)
        .filter(|n| !stored.contains(*n))
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged writes lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    let newest = acknowledged.iter().map(|(_, rv)| *rv).max().unwrap_or(0);
    let after = cms
        .create(&PostParams::default(), &configmap(5_000))
        .await
        .unwrap();
    let after_rv: u64 = after.metadata.resource_version.unwrap().parse().unwrap();
    assert!(
        after_rv > newest,
        "resourceVersions keep increasing across restarts: {after_rv} after {newest}"
    );
}
