//! The Manager against the embedded API server: controllers that start when their kind
//! appears and stop when it goes, retries with growing delays, metrics and readiness.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dynrec::apiserver::{ApiServer, Fault, FaultMatch};
use dynrec::client::Client;
use dynrec::object::{ConditionSet, Gvk, ObjectKey, READY};
use dynrec::reconcilers::{
    ChildReconciler, Config, Draft, Outcome, ReconcileError, RequestOptions, ResourceReconciler,
    RootReconciler, Setup, SyncReconciler, UpdatingObjectManager, ValidationError, WithConfig,
};
use dynrec::runtime::{Backoff, Manager, ManagerOptions, QueueConfig};
use dynrec_test_support::{configmaps_api, widgets_api};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use parking_lot::Mutex;
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(10);

fn widget_gvk() -> Gvk {
    Gvk::new("example.com", "v1", "Widget")
}

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

/// A reconciler that marks widgets ready, failing the first `failures` attempts.
fn marking_reconciler(
    config: &Config,
    failures: usize,
    attempts: Arc<Mutex<Vec<Instant>>>,
) -> ResourceReconciler {
    let sub = SyncReconciler::new(move |_ctx, widget: &mut Draft| {
        let mut seen = attempts.lock();
        seen.push(Instant::now());
        if seen.len() <= failures {
            return Err(ReconcileError::msg("not yet"));
        }
        widget.data["status"] = json!({"ready": true});
        Ok(())
    });
    ResourceReconciler::new(widget_gvk(), sub, config.clone())
}

/// Creates the Widget `name` in the default namespace.
async fn create_widget(widgets: &Api<DynamicObject>, name: &str) {
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}});
    widgets
        .create(&PostParams::default(), &object(widget))
        .await
        .unwrap();
}

async fn wait_until<F: Fn() -> bool>(what: &str, check: F) {
    let deadline = Instant::now() + DEADLINE;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn ready(widgets: &Api<DynamicObject>, name: &str) -> bool {
    widgets
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .is_some_and(|w| w.data["status"]["ready"] == true)
}

/// The CustomResourceDefinitions of a server.
fn crds(kube: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    Api::all_with(kube.clone(), &ar)
}

/// Installs the Widget CRD.
async fn install_widget_crd(kube: &kube::Client) {
    crds(kube)
        .create(
            &PostParams::default(),
            &dynrec::testing::crd("example.com", "Widget", "widgets"),
        )
        .await
        .unwrap();
}

/// A fresh server with the Widget CRD installed, and its in-process client.
async fn server_with_crd() -> (ApiServer, kube::Client) {
    let server = ApiServer::new();
    let kube = server.client();
    install_widget_crd(&kube).await;
    (server, kube)
}

/// A dynrec client and config over an in-process kube client.
fn client_and_config(kube: &kube::Client) -> (Client, Config) {
    let client = Client::new(kube.clone());
    let config = Config::new(client.clone(), "widgets");
    (client, config)
}

/// A manager running in the background until `stop`.
struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<Result<(), dynrec::runtime::ManagerError>>,
}

impl Running {
    fn start(manager: Manager) -> Self {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(manager.run(async move {
            let _ = stopped.await;
        }));
        Self { stop, handle }
    }

    /// Stops the manager and waits for it to return.
    async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(DEADLINE, self.handle)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}

fn fast_queue() -> QueueConfig {
    QueueConfig {
        backoff: Backoff {
            initial: Duration::from_millis(20),
            max: Duration::from_secs(1),
            jitter: 0.0,
        },
        ..QueueConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_waits_for_its_crd_runs_and_stops_when_it_goes() {
    let server = ApiServer::new();
    let kube = server.client();
    let (client, config) = client_and_config(&kube);
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let mut manager = Manager::new(
        client.clone(),
        ManagerOptions {
            queue: fast_queue(),
            ..Default::default()
        },
    );
    manager
        .register(marking_reconciler(&config, 0, attempts))
        .unwrap();
    let readiness = manager.readiness();
    let running = Running::start(manager);

    wait_until("the controller says it waits for its kind", || {
        readiness
            .not_ready()
            .iter()
            .any(|r| r.contains("waiting for the kind example.com/v1/Widget"))
    })
    .await;
    install_widget_crd(&kube).await;
    let widgets = widgets_api(&kube);
    create_widget(&widgets, "w1").await;
    let deadline = Instant::now() + DEADLINE;
    while !ready(&widgets, "w1").await {
        assert!(
            Instant::now() < deadline,
            "the widget was reconciled once its CRD appeared"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(readiness.is_ready());
    assert_eq!(
        server.open_watches().get("example.com/widgets"),
        Some(&1),
        "{:?}",
        server.open_watches()
    );

    crds(&kube)
        .delete("widgets.example.com", &Default::default())
        .await
        .unwrap();
    wait_until("the widget watch is closed", || {
        !server.open_watches().contains_key("example.com/widgets")
    })
    .await;
    wait_until("the controller waits for its kind again", || {
        !readiness.is_ready()
    })
    .await;

    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_reconcile_is_retried_with_growing_delays_then_succeeds() {
    let (_server, kube) = server_with_crd().await;
    let (client, config) = client_and_config(&kube);
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let mut manager = Manager::new(
        client.clone(),
        ManagerOptions {
            queue: fast_queue(),
            ..Default::default()
        },
    );
    manager
        .register(marking_reconciler(&config, 3, attempts.clone()))
        .unwrap();
    let metrics = manager.metrics();
    let running = Running::start(manager);
    let widgets = widgets_api(&kube);
    create_widget(&widgets, "w1").await;
    let deadline = Instant::now() + DEADLINE;
    while !ready(&widgets, "w1").await {
        assert!(
            Instant::now() < deadline,
            "the widget is eventually reconciled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let times = attempts.lock().clone();
    assert!(
        times.len() >= 4,
        "three failures then a success: {} attempts",
        times.len()
    );
    let gaps: Vec<Duration> = times.windows(2).take(3).map(|w| w[1] - w[0]).collect();
    assert!(gaps[0] >= Duration::from_millis(20), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(40), "{gaps:?}");
    assert!(gaps[2] >= Duration::from_millis(80), "{gaps:?}");

    let text = metrics.render().unwrap();
    for series in [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_time_seconds",
        "workqueue_depth",
        "workqueue_queue_duration_seconds",
        "dynrec_cached_objects",
    ] {
        assert!(text.contains(series), "/metrics has {series}:\n{text}");
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_reconciles_and_another_takes_over_when_it_stops() {
    let (_server, kube) = server_with_crd().await;
    let lease = |identity: &str| {
        let mut config =
            dynrec::runtime::LeaderConfig::new("default", "widgets-controller", identity);
        config.lease_duration = Duration::from_secs(1);
        config.renew_deadline = Duration::from_millis(500);
        config.retry_period = Duration::from_millis(100);
        config
    };
    let start = |identity: &'static str, attempts: Arc<Mutex<Vec<Instant>>>| {
        let (client, config) = client_and_config(&kube);
        let options = ManagerOptions {
            queue: fast_queue(),
            leader_election: Some(lease(identity)),
            ..Default::default()
        };
        let mut manager = Manager::new(client, options);
        manager
            .register(marking_reconciler(&config, 0, attempts))
            .unwrap();
        Running::start(manager)
    };
    let (first_attempts, second_attempts) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(Vec::new())),
    );
    let first = start("first", first_attempts.clone());
    let widgets = widgets_api(&kube);
    create_widget(&widgets, "w1").await;
    wait_until("the first replica reconciles", || {
        !first_attempts.lock().is_empty()
    })
    .await;
    let second = start("second", second_attempts.clone());
    tokio::time::sleep(Duration::from_millis(600)).await;
    create_widget(&widgets, "w2").await;
    let deadline = Instant::now() + DEADLINE;
    while !ready(&widgets, "w2").await {
        assert!(Instant::now() < deadline, "w2 is reconciled by the leader");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        second_attempts.lock().is_empty(),
        "the follower reconciles nothing while the leader leads"
    );

    first.stop().await;
    let stopped_at = Instant::now();
    create_widget(&widgets, "w3").await;
    while !ready(&widgets, "w3").await {
        assert!(
            // One lease duration, with headroom for a loaded 2-core machine.
            stopped_at.elapsed() < Duration::from_secs(1) + Duration::from_secs(2),
            "the follower takes over within a lease duration (and headroom)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!second_attempts.lock().is_empty());
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_a_slow_reconcile_lets_it_finish() {
    let (_server, kube) = server_with_crd().await;
    let (client, config) = client_and_config(&kube);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started = Arc::new(Mutex::new(Some(started_tx)));
    let slow = SyncReconciler::new_async(move |_ctx, widget: &mut Draft| {
        if let Some(tx) = started.lock().take() {
            let _ = tx.send(());
        }
        widget.data["status"] = json!({"ready": true});
        Box::pin(async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            Ok(())
        })
    });
    let mut manager = Manager::new(
        client.clone(),
        ManagerOptions {
            queue: fast_queue(),
            ..Default::default()
        },
    );
    manager
        .register(ResourceReconciler::new(widget_gvk(), slow, config.clone()))
        .unwrap();
    let running = Running::start(manager);
    let widgets = widgets_api(&kube);
    create_widget(&widgets, "w1").await;
    tokio::time::timeout(DEADLINE, started_rx)
        .await
        .unwrap()
        .unwrap();
    running.stop().await;
    assert!(
        ready(&widgets, "w1").await,
        "the in-flight reconcile finished and wrote status before the manager stopped"
    );
}

/// A widget whose tree reads a ConfigMap on a second cluster through `WithConfig` is
/// reconciled again when that ConfigMap changes there: the tracked watch is opened on the
/// second cluster (and only there) and mapped through that config's tracker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_config_watches_tracked_objects_on_the_other_cluster() {
    let (home_server, home) = server_with_crd().await;
    let remote_server = ApiServer::new();
    let remote = remote_server.client();
    let (client, config) = client_and_config(&home);
    let (_, remote_config) = client_and_config(&remote);
    let settings = configmaps_api(&remote);
    settings
        .create(
            &PostParams::default(),
            &object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings"}, "data": {"color": "blue"}})),
        )
        .await
        .unwrap();

    let copy_color = SyncReconciler::new_async(|ctx, widget: &mut Draft| {
        Box::pin(async move {
            let key = ObjectKey::namespaced("default", "settings");
            let settings = ctx
                .track_and_get(&Gvk::new("", "v1", "ConfigMap"), &key)
                .await
                .map_err(|err| ReconcileError::msg(err.to_string()))?;
            widget.data["status"] = json!({"color": settings.data["data"]["color"]});
            Ok(())
        })
    })
    .with_setup(|setup| {
        setup.watch_tracked(Gvk::new("", "v1", "ConfigMap"));
        Ok(())
    });
    let tree = WithConfig::new(move |_, _| Ok(remote_config.clone()), copy_color);
    let mut manager = Manager::new(client, ManagerOptions::default());
    manager
        .register(ResourceReconciler::new(widget_gvk(), tree, config.clone()))
        .unwrap();
    let running = Running::start(manager);
    let widgets = widgets_api(&home);
    create_widget(&widgets, "w1").await;
    let color = |widget: Option<DynamicObject>| widget.map(|w| w.data["status"]["color"].clone());
    let deadline = Instant::now() + DEADLINE;
    while color(widgets.get_opt("w1").await.unwrap()) != Some(json!("blue")) {
        assert!(
            Instant::now() < deadline,
            "the widget copied the remote color"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    settings
        .patch(
            "settings",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"data": {"color": "green"}})),
        )
        .await
        .unwrap();
    while color(widgets.get_opt("w1").await.unwrap()) != Some(json!("green")) {
        assert!(
            Instant::now() < deadline,
            "a change on the remote cluster re-reconciled the widget"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(remote_server.open_watches().get("/configmaps"), Some(&1));
    assert_eq!(home_server.open_watches().get("/configmaps"), None);
    running.stop().await;
}

/// Counts the requests a root reconciler receives, per object name.
struct CountingRequests {
    inner: ResourceReconciler,
    seen: Arc<Mutex<Vec<String>>>,
}

#[async_trait::async_trait]
impl RootReconciler for CountingRequests {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn resource_type(&self) -> &Gvk {
        self.inner.resource_type()
    }

    fn config(&self) -> &Config {
        RootReconciler::config(&self.inner)
    }

    fn setup(&self) -> Result<Setup, ValidationError> {
        self.inner.setup()
    }

    fn validate(&self) -> Result<(), ValidationError> {
        RootReconciler::validate(&self.inner)
    }

    async fn reconcile_with(&self, request: &ObjectKey, options: RequestOptions) -> Outcome {
        self.seen.lock().push(request.name.clone());
        self.inner.reconcile_with(request, options).await
    }
}

/// The queue resyncs the objects that exist, not every key it has ever seen: a deleted
/// widget's key is forgotten after its last reconcile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_object_is_not_resynced() {
    let (_server, kube) = server_with_crd().await;
    let (client, config) = client_and_config(&kube);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let counting = CountingRequests {
        inner: marking_reconciler(&config, 0, Arc::default()),
        seen: seen.clone(),
    };
    let options = ManagerOptions {
        queue: QueueConfig {
            resync: Some(Duration::from_millis(100)),
            ..fast_queue()
        },
        ..Default::default()
    };
    let mut manager = Manager::new(client, options);
    manager.register(counting).unwrap();
    let running = Running::start(manager);
    let widgets = widgets_api(&kube);
    for name in ["kept", "deleted"] {
        create_widget(&widgets, name).await;
    }
    let count = |name: &str| seen.lock().iter().filter(|n| *n == name).count();
    wait_until("both widgets are reconciled", || {
        count("kept") > 0 && count("deleted") > 0
    })
    .await;
    widgets
        .delete("deleted", &Default::default())
        .await
        .unwrap();
    let kept_before = count("kept");
    wait_until("the kept widget is resynced three more times", || {
        count("kept") >= kept_before + 3
    })
    .await;
    let after_delete = count("deleted");
    let kept_now = count("kept");
    wait_until("three more resyncs", || count("kept") >= kept_now + 3).await;
    assert_eq!(
        count("deleted"),
        after_delete,
        "the deleted widget is not resynced"
    );
    running.stop().await;
}

/// Widgets with a ConfigMap child each (created and updated, not applied) and Ready
/// reflected from it.
fn child_reconciler(config: &Config) -> ResourceReconciler {
    let gvk = Gvk::new("", "v1", "ConfigMap");
    let child = ChildReconciler::new(
        gvk.clone(),
        |_, widget| {
            let config_map = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": widget.metadata.name, "namespace": widget.metadata.namespace},
                "data": {"from": "widget"}
            });
            Ok(Some(dynrec::object::from_json(config_map)?))
        },
        |ctx, widget, child, _| {
            let mut conditions = ctx.conditions(widget);
            match child {
                Some(_) => conditions.mark_true(READY, READY, "")?,
                None => conditions.mark_false(READY, "NoConfigMap", "")?,
            }
            Ok(())
        },
    )
    .child_object_manager(UpdatingObjectManager::new(gvk, |current, desired| {
        current.data["data"] = desired.data["data"].clone();
    }));
    ResourceReconciler::new(widget_gvk(), child, config.clone())
        .conditions(ConditionSet::living(&[]))
}

/// Whether every widget in `names` is Ready=True.
/// Waits until `names` widgets are ready, failing after [`DEADLINE`].
async fn wait_all_ready(widgets: &Api<DynamicObject>, names: usize) {
    let deadline = Instant::now() + DEADLINE;
    while !all_ready(widgets, names).await {
        assert!(
            Instant::now() < deadline,
            "the widgets did not all become ready"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn all_ready(widgets: &Api<DynamicObject>, names: usize) -> bool {
    let listed = widgets.list(&Default::default()).await.unwrap();
    let ready = listed.items.iter().filter(|w| {
        w.data["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == READY && c["status"] == "True")
        })
    });
    ready.count() == names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_waits_until_the_caches_saw_what_its_last_reconcile_wrote() {
    // Each widget's first reconcile creates its ConfigMap and writes its status; both
    // changes queue the widget again. The ConfigMap watch is made to lag by 400 ms, so the
    // widget's status change arrives first: a reconcile then would find no ConfigMap in the
    // cache and create it again (refused: it exists). The manager holds such a request back
    // until the caches saw what its last reconcile wrote.
    const WIDGETS: usize = 20;
    let (server, kube) = server_with_crd().await;
    let (client, config) = client_and_config(&kube);
    let options = ManagerOptions {
        workers: 8,
        queue: fast_queue(),
        ..Default::default()
    };
    let mut manager = Manager::new(client.clone(), options);
    manager.register(child_reconciler(&config)).unwrap();
    let running = Running::start(manager);
    let config_maps = Gvk::new("", "v1", "ConfigMap");
    let watching = || {
        let open = server.open_watches();
        client.cached_object_count(&config_maps).is_some()
            && open.keys().any(|kind| kind.ends_with("configmaps"))
    };
    wait_until("the ConfigMap cache watches", watching).await;
    let matcher = FaultMatch {
        verb: Some("watch".into()),
        kind: Some("configmaps".into()),
        ..Default::default()
    };
    server.add_fault(Fault::stall(matcher, Duration::from_millis(400)).times(1));
    server.close_all_watches();
    let widgets = widgets_api(&kube);
    for i in 0..WIDGETS {
        create_widget(&widgets, &format!("w-{i}")).await;
    }
    wait_all_ready(&widgets, WIDGETS).await;
    // The reconciles the last writes queued (held back until seen, then no-ops).
    tokio::time::sleep(Duration::from_millis(600)).await;
    running.stop().await;
    let status_updates = server.request_count("update", "example.com", "widgets");
    let creates = server.request_count("create", "", "configmaps");
    assert_eq!(
        (status_updates, creates),
        (WIDGETS as u64, WIDGETS as u64),
        "one status update and one ConfigMap create a widget, none refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_start_once_the_children_cache_has_listed() {
    // The widgets exist before the manager starts, and every list of ConfigMaps stalls for
    // 500 ms: the Widget cache fills first. A reconcile then would list the ConfigMaps from
    // the API server (the whole namespace, at scale) while their cache is still listing; as
    // controller-runtime does, the workers wait until every cache of the controller listed.
    const WIDGETS: usize = 5;
    let (server, kube) = server_with_crd().await;
    let widgets = widgets_api(&kube);
    for i in 0..WIDGETS {
        create_widget(&widgets, &format!("w-{i}")).await;
    }
    let matcher = FaultMatch {
        verb: Some("list".into()),
        kind: Some("configmaps".into()),
        ..Default::default()
    };
    server.add_fault(Fault::stall(matcher, Duration::from_millis(500)));
    let (client, config) = client_and_config(&kube);
    let mut manager = Manager::new(client.clone(), ManagerOptions::default());
    manager.register(child_reconciler(&config)).unwrap();
    let running = Running::start(manager);
    wait_all_ready(&widgets, WIDGETS).await;
    running.stop().await;
    assert_eq!(
        server.request_count("list", "", "configmaps"),
        1,
        "ConfigMaps listed once, by their cache, and not by a reconcile"
    );
    assert_eq!(
        server.request_count("create", "", "configmaps"),
        WIDGETS as u64
    );
}
