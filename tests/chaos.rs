//! Chaos: the widgets controller (`dynrec run` with the widgets definition) against
//! `dynrec apiserver` over loopback on `--data-dir`, with faults injected from a file (10%
//! of child writes and Widget status writes failing with 500, 10% of watches failing,
//! reads stalled), the controller SIGKILLed and restarted, the server restarted (which
//! cuts every watch). Every Widget converges, every greeting change lands, a hand-edited
//! child is put back, no child is duplicated, deleting the Widgets leaves no child behind,
//! and neither log shows a panic. It prints what it measured.

mod process_common;

use std::path::Path;
use std::time::{Duration, Instant};

use dynrec_test_support::{configmaps_api, widgets_api};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use process_common::*;
use serde_json::json;

const WIDGETS: usize = 30;
/// How long each phase may take to converge. A phase takes seconds, but a cache whose watch
/// failed several times in a row waits as kube's watcher backoff says (0.8 s doubling, with
/// jitter, up to 30 s; reset by the next event), so the bound leaves room for two such
/// ceilings. (Restarts once took 30 s here: `dynrec apiserver` cut its watches on SIGTERM,
/// the controller resumed them before the listener closed, and the graceful shutdown waited
/// on the resumed watches until the test killed it. A stopping server now ends resumed
/// watches at once; apiserver/tests/watch.rs checks it.)
const PHASE: Duration = Duration::from_secs(75);

/// The faults: probabilities drawn from the server's fixed seed, so a run repeats.
fn faults() -> serde_json::Value {
    let fail = json!({"fail": {"code": 500, "reason": "InternalError"}});
    let stall = json!({"stall": {"millis": 150}});
    json!([
        {"match": {"verb": "create", "kind": "configmaps"}, "action": fail, "probability": 0.1},
        {"match": {"verb": "update", "kind": "configmaps"}, "action": fail, "probability": 0.1},
        {"match": {"verb": "patch", "kind": "configmaps"}, "action": fail, "probability": 0.1},
        {"match": {"verb": "update", "kind": "widgets", "subresource": "status"}, "action": fail, "probability": 0.1},
        {"match": {"verb": "patch", "kind": "widgets", "subresource": "status"}, "action": fail, "probability": 0.1},
        {"match": {"verb": "watch"}, "action": fail, "probability": 0.1},
        {"match": {"verb": "get"}, "action": stall, "probability": 0.1},
        {"match": {"verb": "list"}, "action": stall, "probability": 0.1},
    ])
}

struct Cluster {
    dir: tempfile::TempDir,
    listen: String,
    server: ChildGuard,
    controller: ChildGuard,
    kube: kube::Client,
}

impl Cluster {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("faults.json"), faults().to_string()).unwrap();
        let listen = format!("127.0.0.1:{}", free_port());
        let (server, url) = start_server(dir.path(), &listen);
        let controller =
            start_widgets_controller(dir.path(), &dir.path().join("controller.log"), None, &[]);
        Cluster {
            dir,
            listen,
            server,
            controller,
            kube: client(&url),
        }
    }

    fn restart_server(&mut self) {
        stop(&mut self.server, "TERM");
        let (server, _) = start_server(self.dir.path(), &self.listen);
        self.server = server;
    }

    fn kill_and_restart_controller(&mut self) {
        stop(&mut self.controller, "KILL");
        let log = self.dir.path().join("controller.log");
        self.controller = start_widgets_controller(self.dir.path(), &log, None, &[]);
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    fn widgets(&self) -> Api<DynamicObject> {
        widgets_api(&self.kube)
    }

    fn configmaps(&self) -> Api<DynamicObject> {
        configmaps_api(&self.kube)
    }
}

fn start_server(dir: &Path, listen: &str) -> (ChildGuard, String) {
    let data = dir.join("data");
    let faults = dir.join("faults.json");
    start_apiserver(
        dir,
        listen,
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "--faults",
            faults.to_str().unwrap(),
        ],
    )
}

fn name(i: usize) -> String {
    format!("w{i}")
}

/// Retries `write` (the test's own requests meet stalls and restarts too) until it works.
async fn retried<T, F, Fut>(what: &str, write: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = kube::Result<T>>,
{
    let deadline = Instant::now() + PHASE;
    loop {
        match write().await {
            Ok(done) => return done,
            Err(err) => assert!(Instant::now() < deadline, "{what}: {err}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The children in `default` (labelled with their Widget), by Widget name.
async fn children(cluster: &Cluster) -> Option<Vec<(String, String, String)>> {
    let params = ListParams::default().labels("example.com/widget");
    let list = cluster.configmaps().list(&params).await.ok()?;
    let mut found: Vec<(String, String, String)> = list
        .items
        .into_iter()
        .map(|c| {
            let owner = c.metadata.labels.clone().unwrap_or_default()["example.com/widget"].clone();
            let greeting = c.data["data"]["greeting"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let owner_uid = c
                .metadata
                .owner_references
                .unwrap_or_default()
                .first()
                .map(|r| r.uid.clone())
                .unwrap_or_default();
            (owner, greeting, owner_uid)
        })
        .collect();
    found.sort();
    Some(found)
}

/// Whether every Widget has exactly one child with `greeting(i)`, owned by it, and is Ready.
async fn converged(cluster: &Cluster, greeting: &dyn Fn(usize) -> String) -> bool {
    let Ok(widgets) = cluster.widgets().list(&ListParams::default()).await else {
        return false;
    };
    let Some(children) = children(cluster).await else {
        return false;
    };
    if widgets.items.len() != WIDGETS || children.len() != WIDGETS {
        return false;
    }
    widgets.items.iter().all(|w| {
        let name = w.metadata.name.clone().unwrap_or_default();
        let i: usize = name[1..].parse().unwrap_or(usize::MAX);
        let uid = w.metadata.uid.clone().unwrap_or_default();
        let ready = w.data["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        let mine: Vec<_> = children
            .iter()
            .filter(|(owner, _, _)| *owner == name)
            .collect();
        ready && mine.len() == 1 && mine[0].1 == greeting(i) && mine[0].2 == uid
    })
}

/// Waits until `check` holds; returns how long it took.
async fn until<F, Fut>(what: &str, check: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < PHASE, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    started.elapsed()
}

async fn set_greetings(cluster: &Cluster, greeting: &dyn Fn(usize) -> String) {
    for i in 0..WIDGETS {
        let patch = Patch::Merge(json!({"spec": {"greeting": greeting(i)}}));
        retried("a greeting change", || async {
            let widgets = cluster.widgets();
            widgets
                .patch(&name(i), &PatchParams::default(), &patch)
                .await
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_widgets_controller_converges_through_faults_kills_and_restarts() {
    let started = Instant::now();
    let mut cluster = Cluster::start();
    let first = |i: usize| format!("hello {i}");
    for i in 0..WIDGETS {
        let widget: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1",
            "kind": "Widget", "metadata": {"name": name(i)}, "spec": {"greeting": first(i)}}))
        .unwrap();
        retried("a Widget create", || async {
            cluster
                .widgets()
                .create(&PostParams::default(), &widget)
                .await
        })
        .await;
    }
    let t_create = until("every Widget converges", || converged(&cluster, &first)).await;

    // The controller dies mid-change and comes back.
    let second = |i: usize| format!("hi again {i}");
    set_greetings(&cluster, &second).await;
    cluster.kill_and_restart_controller();
    let t_kill = until("every greeting change lands after SIGKILL", || {
        converged(&cluster, &second)
    })
    .await;

    // The server restarts on its data dir (every watch is cut).
    let restarting = Instant::now();
    cluster.restart_server();
    let t_server_restart = restarting.elapsed();
    let third = |i: usize| format!("third {i}");
    set_greetings(&cluster, &third).await;
    let t_restart = until("every change lands after a server restart", || {
        converged(&cluster, &third)
    })
    .await;

    // A child edited by hand is put back.
    let tamper = Patch::Merge(json!({"data": {"greeting": "tampered"}}));
    retried("a hand edit", || async {
        let configmaps = cluster.configmaps();
        configmaps
            .patch("w0-config", &PatchParams::default(), &tamper)
            .await
    })
    .await;
    let t_edit = until("the hand-edited child is put back", || {
        converged(&cluster, &third)
    })
    .await;

    for i in 0..WIDGETS {
        retried("a Widget delete", || async {
            let widgets = cluster.widgets();
            widgets.delete(&name(i), &DeleteParams::default()).await
        })
        .await;
    }
    let t_delete = until("no child is left behind", || async {
        children(&cluster).await.is_some_and(|c| c.is_empty())
    })
    .await;

    stop(&mut cluster.controller, "TERM");
    stop(&mut cluster.server, "TERM");
    let server_log = cluster.log("server.log");
    let controller_log = cluster.log("controller.log");
    assert!(
        !server_log.contains("panicked"),
        "the server panicked:\n{server_log}"
    );
    assert!(
        !controller_log.contains("panicked"),
        "the controller panicked:\n{controller_log}"
    );
    let injected = server_log.matches("injected fault").count();
    assert!(injected > 0, "faults were injected");
    println!(
        "chaos: {WIDGETS} Widgets, 3 greetings each, {injected} faults injected (500s on child \
         and status writes, failed watches, stalled reads), 1 controller SIGKILL, 1 server \
         restart; converged in {t_create:?} after create, {t_kill:?} after the kill, \
         {t_restart:?} after the server restart (which took {t_server_restart:?}), {t_edit:?} to undo a hand edit; children gone {t_delete:?} after delete; \
         {:?} in all",
        started.elapsed()
    );
}
