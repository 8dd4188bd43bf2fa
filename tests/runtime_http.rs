//! The endpoints over HTTP: `/metrics` (plain) with controller-runtime's series, and the
//! health probes `/healthz` and `/readyz` with the detail of what is not ready.

use std::{net::SocketAddr, time::Duration};

use dynrec::{
    apiserver::ApiServer,
    client::Client,
    object::Gvk,
    runtime::{
        HealthServer, Metrics, MetricsServer, MetricsServing, QueueConfig, QueueStats, QueueTiming,
        Readiness, ResultLabel, WorkOutcome, WorkQueue,
    },
};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, PostParams},
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::oneshot,
    task::JoinHandle,
    time::timeout,
};

/// A response: status code, content type and body.
struct Reply {
    status: u16,
    content_type: String,
    body: String,
}

/// A plain HTTP/1.1 GET.
async fn get(address: SocketAddr, path: &str) -> Reply {
    let exchange = async {
        let mut stream = TcpStream::connect(address).await.expect("connect");
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut raw = String::new();
        stream.read_to_string(&mut raw).await.expect("receive");
        raw
    };
    let raw = timeout(Duration::from_secs(10), exchange)
        .await
        .expect("a timely answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status code");
    let content_type = head
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase()
                .strip_prefix("content-type: ")
                .map(str::to_owned)
        })
        .unwrap_or_default();
    Reply {
        status,
        content_type,
        body: body.to_owned(),
    }
}

/// Asserts that `path` answers 200 "ok".
async fn assert_ok(address: SocketAddr, path: &str, why: &str) {
    let reply = get(address, path).await;
    assert_eq!(
        (reply.status, reply.body.as_str()),
        (200, "ok"),
        "{path}: {why}"
    );
}

/// Serves the probes on a free loopback port until the returned sender is dropped.
async fn serve(readiness: &Readiness) -> (SocketAddr, oneshot::Sender<()>, JoinHandle<()>) {
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let server = HealthServer::bind(loopback, readiness.clone())
        .await
        .expect("bind a loopback port");
    let address = server.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        server.serve(shutdown).await.expect("served");
    });
    (address, stop, task)
}

/// Serves `/metrics` over plain HTTP on a free loopback port until the sender is dropped.
async fn serve_metrics(
    metrics: &Metrics,
    server: &ApiServer,
) -> (SocketAddr, oneshot::Sender<()>, JoinHandle<()>) {
    let serving = MetricsServing {
        address: SocketAddr::from(([127, 0, 0, 1], 0)),
        secure: None,
    };
    let metrics_server = MetricsServer::bind(&serving, metrics.clone(), server.client())
        .await
        .expect("bind a loopback port");
    let address = metrics_server.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        metrics_server.serve(shutdown).await.expect("served");
    });
    (address, stop, task)
}

async fn stop(stop: oneshot::Sender<()>, task: JoinHandle<()>) {
    drop(stop);
    timeout(Duration::from_secs(10), task)
        .await
        .expect("the server stopped")
        .expect("the server did not panic");
}

#[tokio::test]
async fn metrics_expose_controller_runtime_s_series_and_dynrec_s_caches() {
    let server = ApiServer::new();
    let configmaps = Gvk::new("", "v1", "ConfigMap");
    let resource = ApiResource::from_gvk(&(&configmaps).into());
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    for name in ["one", "two"] {
        api.create(&PostParams::default(), &DynamicObject::new(name, &resource))
            .await
            .expect("create a ConfigMap");
    }
    let client = Client::new(server.client());
    let cache = client.cache(&configmaps).await.expect("a ConfigMap cache");
    assert!(cache.wait_until_ready().await);

    let metrics = Metrics::new();
    metrics.observe_client(&client);
    metrics.set_leader("dynrec-leader", true);
    metrics.record_reconcile("widgets", ResultLabel::Success, Duration::from_millis(3));
    metrics.record_reconcile(
        "widgets",
        WorkOutcome::Error.into(),
        Duration::from_millis(40),
    );
    metrics.record_reconcile(
        "widgets",
        WorkOutcome::RequeueAfter(Duration::ZERO).into(),
        Duration::ZERO,
    );
    let queue = WorkQueue::new(QueueConfig::default());
    for key in ["a", "b", "a"] {
        queue.add(key);
    }
    let stats = queue.clone();
    metrics.register_queue("widgets", 4, move || stats.stats());
    metrics.register_queue("gadgets", 1, QueueStats::default);
    metrics.record_queue_timing("widgets", QueueTiming::Queued(Duration::from_millis(2)));
    metrics.record_queue_timing("widgets", QueueTiming::Worked(Duration::from_millis(30)));

    let (address, stopper, task) = serve_metrics(&metrics, &server).await;
    let reply = get(address, "/metrics").await;
    assert_eq!(reply.status, 200);
    assert!(
        reply.content_type.starts_with("text/plain; version=0.0.4"),
        "{}",
        reply.content_type
    );
    let expected = [
        r#"controller_runtime_reconcile_total{controller="widgets",result="success"} 1"#,
        r#"controller_runtime_reconcile_total{controller="widgets",result="error"} 1"#,
        r#"controller_runtime_reconcile_total{controller="widgets",result="requeue_after"} 1"#,
        r#"controller_runtime_reconcile_errors_total{controller="widgets"} 1"#,
        r#"controller_runtime_reconcile_time_seconds_count{controller="widgets"} 3"#,
        r#"controller_runtime_reconcile_time_seconds_bucket{controller="widgets",le="0.005"} 2"#,
        r#"controller_runtime_reconcile_time_seconds_bucket{controller="widgets",le="60"} 3"#,
        r#"controller_runtime_max_concurrent_reconciles{controller="widgets"} 4"#,
        r#"controller_runtime_active_workers{controller="widgets"} 0"#,
        r#"workqueue_depth{controller="widgets",name="widgets",priority=""} 2"#,
        r#"workqueue_adds_total{controller="widgets",name="widgets"} 3"#,
        r#"workqueue_retries_total{controller="widgets",name="widgets"} 0"#,
        r#"workqueue_depth{controller="gadgets",name="gadgets",priority=""} 0"#,
        r#"workqueue_unfinished_work_seconds{controller="widgets",name="widgets"} 0"#,
        r#"workqueue_longest_running_processor_seconds{controller="widgets",name="widgets"} 0"#,
        r#"workqueue_queue_duration_seconds_bucket{controller="widgets",name="widgets",le="0.001"} 0"#,
        r#"workqueue_queue_duration_seconds_bucket{controller="widgets",name="widgets",le="0.01"} 1"#,
        r#"workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="0.01"} 0"#,
        r#"workqueue_work_duration_seconds_bucket{controller="widgets",name="widgets",le="0.1"} 1"#,
        // The two created, and the kube-root-ca.crt of each of the four namespaces.
        r#"dynrec_cached_objects{gvk="v1/ConfigMap"} 6"#,
        r#"dynrec_open_watches{gvk="v1/ConfigMap"} 1"#,
        r#"leader_election_master_status{name="dynrec-leader"} 1"#,
        // As client_golang writes them: counters named with _total, Go's numbers.
        "# HELP controller_runtime_reconcile_total Total number of reconciliations per controller",
        "# TYPE controller_runtime_reconcile_total counter",
        "# TYPE workqueue_queue_duration_seconds histogram",
        r#"workqueue_queue_duration_seconds_bucket{controller="widgets",name="widgets",le="1e-08"} 0"#,
        r#"workqueue_queue_duration_seconds_bucket{controller="widgets",name="widgets",le="1000"} 1"#,
        r#"workqueue_queue_duration_seconds_bucket{controller="widgets",name="widgets",le="+Inf"} 1"#,
        // Every result starts at zero once the controller's queue is registered.
        r#"controller_runtime_reconcile_total{controller="gadgets",result="requeue"} 0"#,
        r#"controller_runtime_reconcile_errors_total{controller="gadgets"} 0"#,
    ];
    let lines: Vec<&str> = reply.body.lines().collect();
    for series in expected {
        assert!(
            lines.contains(&series),
            "missing {series:?} in:\n{}",
            reply.body
        );
    }

    assert!(
        !reply.body.contains("# EOF") && !reply.body.contains("60.0\""),
        "the text format, not OpenMetrics:\n{}",
        reply.body
    );

    metrics.remove_queue("gadgets");
    metrics.set_leader("dynrec-leader", false);
    drop(cache);
    let reply = get(address, "/metrics").await;
    assert!(
        !reply.body.contains(r#"controller="gadgets""#),
        "{}",
        reply.body
    );
    assert!(
        !reply
            .body
            .contains(r#"dynrec_open_watches{gvk="v1/ConfigMap"}"#),
        "the watch stopped with its cache:\n{}",
        reply.body
    );
    assert!(
        reply
            .body
            .lines()
            .any(|l| l == r#"leader_election_master_status{name="dynrec-leader"} 0"#),
        "{}",
        reply.body
    );
    stop(stopper, task).await;
}

#[tokio::test]
async fn readyz_lists_what_is_not_ready_and_healthz_is_always_ok() {
    let readiness = Readiness::new();
    let (address, stopper, task) = serve(&readiness).await;

    assert_ok(address, "/readyz", "nothing registered: ready").await;

    readiness.set_ready("controller v1/ConfigMap");
    readiness.set_not_ready(
        "controller widgets.example.com/v1/Widget",
        "waiting for the kind to exist",
    );
    readiness.set_not_ready("leader election", "not the leader");
    let reply = get(address, "/readyz").await;
    assert_eq!(reply.status, 503);
    assert_eq!(
        reply.body,
        "controller widgets.example.com/v1/Widget: waiting for the kind to exist\n\
         leader election: not the leader\n"
    );
    assert_ok(address, "/healthz", "alive while not ready").await;

    readiness.set_ready("controller widgets.example.com/v1/Widget");
    readiness.remove("leader election");
    assert!(readiness.is_ready());
    assert_ok(address, "/readyz", "all ready again").await;
    stop(stopper, task).await;
}
