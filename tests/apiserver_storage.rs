//! Durable storage: a server killed with SIGKILL mid-stream keeps every write it answered.

mod process_common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dynrec_test_support::configmaps_api;
use dynrec_test_support::process::ChildGuard;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::json;

/// Starts `dynrec apiserver` keeping its objects in `dir`: the process, killed when dropped,
/// and its ConfigMaps in `default`.
fn start(dir: &Path) -> (ChildGuard, Api<DynamicObject>) {
    let data_dir = dir.to_str().expect("a UTF-8 temp dir");
    let (child, url) =
        process_common::start_apiserver(dir, "127.0.0.1:0", &["--data-dir", data_dir]);
    let client = process_common::client(&url);
    (child, configmaps_api(&client))
}

fn configmap(i: usize) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm{i}")}, "data": {"i": i.to_string()}}))
    .expect("a valid object")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_server_keeps_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, cms) = start(dir.path());
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
    server.0.kill().expect("SIGKILL");
    server.0.wait().expect("the process ends");
    let stopped_at = tokio::time::timeout(Duration::from_secs(30), writer)
        .await
        .expect("the writer notices")
        .unwrap();
    assert!(stopped_at < 1_000, "the server was killed mid-stream");
    let acknowledged = acknowledged.lock().unwrap().clone();

    let (_server, cms) = start(dir.path());
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
