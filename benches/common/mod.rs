//! What `converge` and `steady_state` share: an embedded server with the Widget CRD, and two
//! controllers doing the same work — each Widget gets an owned ConfigMap child (controller
//! reference, `data.message` = `spec.message`) and `status.conditions` Ready=True:
//! - [`Engine::Dynrec`]: a `ResourceReconciler` + `ChildReconciler` on `DynamicObject`s,
//!   run by the dynrec `Manager` (2 workers);
//! - [`Engine::Typed`]: a hand-written kube-runtime `Controller` over a derived `Widget`
//!   and k8s_openapi's `ConfigMap` (concurrency 2), reading children from a reflector;
//! - [`Engine::Definition`]: `examples/definitions/widgets.yaml` (the same controller as a
//!   `ReconcilerDefinition`, its child template in CEL) started by `Definitions` under the
//!   same `Manager` setup as [`Engine::Dynrec`]. Its child is `<widget>-config` with
//!   `data.greeting` (from `spec.greeting`) and `data.size`; Ready=True comes through its
//!   `ConfigMapReady` condition.
//!
//! Every engine starts from the same state: [`server`] installs the Widget CRD before any
//! controller starts. The definition applies its own Widget CRD (from its `schema:`) over it
//! when it starts, also before timing; the embedded server neither prunes nor validates
//! against CRD schemas, so the Widgets are stored the same either way. Widgets carry both
//! `spec.message` (read by the Rust controllers) and `spec.greeting` (read by the definition),
//! with the same text.
//!
//! Widgets live in namespaces of [`PER_NAMESPACE`] each (see the README's Benchmarks).
#![allow(dead_code)] // each bench uses part of this module

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::object::{ConditionSet, Gvk, ObjectKey, READY};
use dynrec::reconcilers::{ChildReconciler, Config, ResourceReconciler};
use dynrec::runtime::{Manager, ManagerOptions};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{CustomResource, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Widgets per namespace.
pub const PER_NAMESPACE: usize = 100;
/// Workers of either controller.
const WORKERS: usize = 2;

/// The typed Widget of the kube-runtime baseline (the same CRD the dynamic side reads).
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[kube(status = "WidgetStatus")]
pub struct WidgetSpec {
    pub message: String,
}

/// The typed Widget's status.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

pub fn widget_gvk() -> Gvk {
    Gvk::new("example.com", "v1", "Widget")
}

pub fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// The key of widget `i`.
pub fn widget_key(i: usize) -> ObjectKey {
    ObjectKey::namespaced(format!("ns-{}", i / PER_NAMESPACE), format!("widget-{i}"))
}

/// A server (watch buffers large enough for 10,000 quick creates) with the Widget CRD and
/// the namespaces `n` widgets need.
pub async fn server(n: usize) -> ApiServer {
    let server = ApiServer::builder()
        .history_limit(1 << 17)
        .watch_buffer(1 << 17)
        .build();
    let kube = server.client();
    let crds = dynamic_api(
        &kube,
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        None,
    );
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    crds.create(&PostParams::default(), &from_json(crd))
        .await
        .expect("the CRD");
    let namespaces = Api::<Namespace>::all(kube);
    for ns in 0..n.div_ceil(PER_NAMESPACE) {
        let namespace = from_json(json!({"metadata": {"name": format!("ns-{ns}")}}));
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .expect("a namespace");
    }
    server
}

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

/// A dynamic API of `kind` (group version v1), in one namespace or all.
fn dynamic_api(
    kube: &kube::Client,
    group: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1", kind);
    let ar = ApiResource::from_gvk_with_plural(&gvk, &format!("{}s", kind.to_lowercase()));
    match namespace {
        Some(ns) => Api::namespaced_with(kube.clone(), ns, &ar),
        None => Api::all_with(kube.clone(), &ar),
    }
}

/// Creates widgets `0..n` (eight requests in flight).
pub async fn create_widgets(server: &ApiServer, n: usize) {
    let kube = server.client();
    stream::iter(0..n)
        .map(|i| {
            let key = widget_key(i);
            let api = dynamic_api(&kube, "example.com", "Widget", key.namespace.as_deref());
            let widget = from_json::<DynamicObject>(json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": key.name},
                "spec": {"message": format!("hello from widget {i}"),
                         "greeting": format!("hello from widget {i}")}
            }));
            async move { api.create(&PostParams::default(), &widget).await }
        })
        .buffer_unordered(8)
        .try_for_each(|_| async { Ok(()) })
        .await
        .expect("widgets created");
}

/// Waits until all `n` widgets are Ready=True and each has its controlled ConfigMap.
/// Polls a request counter (cheap) until `n` status writes happened, then lists to check.
pub async fn wait_converged(server: &ApiServer, n: usize) {
    let kube = server.client();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let status_writes = server.request_count("update", "example.com", "widgets")
            + server.request_count("patch", "example.com", "widgets");
        let late = Instant::now() > deadline;
        if (status_writes as usize >= n || late) && converged(&kube, n).await {
            return;
        }
        assert!(
            !late,
            "no convergence within 2 minutes: {status_writes} status writes, {} ConfigMaps created",
            server.request_count("create", "", "configmaps")
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether all `n` widgets are ready and own a ConfigMap (printed when they are not).
async fn converged(kube: &kube::Client, n: usize) -> bool {
    let widgets = dynamic_api(kube, "example.com", "Widget", None)
        .list(&Default::default())
        .await
        .expect("widgets");
    let ready: HashSet<String> = widgets
        .items
        .iter()
        .filter(|w| {
            w.data["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == READY && c["status"] == "True")
            })
        })
        .filter_map(|w| w.metadata.uid.clone())
        .collect();
    if ready.len() < n {
        eprintln!("{} of {n} widgets ready", ready.len());
        return false;
    }
    let children = Api::<ConfigMap>::all(kube.clone())
        .list(&Default::default())
        .await
        .expect("config maps");
    let owned = children.items.iter().filter(|cm| {
        cm.owner_references()
            .iter()
            .any(|r| r.controller == Some(true) && r.kind == "Widget" && ready.contains(&r.uid))
    });
    let owned = owned.count();
    if owned < n {
        eprintln!("{owned} of {n} ConfigMaps owned by a ready widget");
    }
    owned >= n
}

/// Creates, updates and patches of widgets and ConfigMaps the server has answered.
pub fn writes(server: &ApiServer) -> u64 {
    let kinds = [("example.com", "widgets"), ("", "configmaps")];
    ["create", "update", "patch"]
        .iter()
        .flat_map(|verb| {
            kinds
                .iter()
                .map(move |(g, p)| server.request_count(verb, g, p))
        })
        .sum()
}

/// The controller under test.
#[derive(Clone, Copy, Debug)]
pub enum Engine {
    Dynrec,
    Typed,
    Definition,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Dynrec => "dynrec",
            Engine::Typed => "typed_kube_runtime",
            Engine::Definition => "definition",
        }
    }

    /// Starts the controller against `server`; returns once its caches are ready.
    pub async fn start(self, server: &ApiServer) -> Running {
        match self {
            Engine::Dynrec => start_dynrec(server).await,
            Engine::Typed => start_typed(server).await,
            Engine::Definition => start_definition(server).await,
        }
    }
}

/// A running controller, with what a direct reconcile of one widget needs.
pub struct Running {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Asks the dynrec Manager to shut down (the typed tasks are aborted).
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    direct: Direct,
}

/// Reconciles outside the controller's queue (for the steady-state bench).
enum Direct {
    Dynrec(Box<ResourceReconciler>),
    Typed(Store<Widget>, Arc<TypedContext>),
}

impl Running {
    /// Reconciles widget `i` once, now, and checks that the reconcile succeeded.
    pub async fn reconcile(&self, i: usize) {
        match &self.direct {
            Direct::Dynrec(reconciler) => {
                use dynrec::reconcilers::RootReconciler;
                let outcome = reconciler.reconcile(&widget_key(i)).await;
                assert!(outcome.is_ok(), "{:?}", outcome.error);
            }
            Direct::Typed(widgets, ctx) => {
                let key = widget_key(i);
                let reference =
                    ObjectRef::new(&key.name).within(key.namespace.as_deref().unwrap_or_default());
                let widget = widgets.get(&reference).expect("a cached widget");
                typed_reconcile(widget, ctx.clone())
                    .await
                    .expect("a reconcile");
            }
        }
    }

    /// Stops the controller and waits for it.
    pub async fn stop(mut self) {
        let graceful = self.stop.take().map(|stop| stop.send(())).is_some();
        for task in self.tasks {
            if !graceful {
                task.abort();
            }
            let _ = task.await;
        }
    }
}

// ---- dynrec -------------------------------------------------------------------------

/// The dynamic reconciler: an owned ConfigMap child, Ready reflected from it.
fn dynrec_reconciler(config: &Config) -> ResourceReconciler {
    let child = ChildReconciler::new(
        config_map_gvk(),
        |_, widget| {
            let config_map = json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": widget.metadata.name, "namespace": widget.metadata.namespace},
                "data": {"message": widget.data["spec"]["message"]}
            });
            Ok(Some(serde_json::from_value(config_map)?))
        },
        |ctx, widget, child, _| {
            let mut conditions = ctx.conditions(widget);
            match child {
                Some(_) => conditions.mark_true(READY, READY, "")?,
                None => conditions.mark_false(READY, "NoConfigMap", "the ConfigMap is missing")?,
            }
            Ok(())
        },
    )
    .merge_before_update(|current, desired| {
        current.data["data"] = desired.data["data"].clone();
    });
    ResourceReconciler::new(widget_gvk(), child, config.clone())
        .conditions(ConditionSet::living(&[]))
}

async fn start_dynrec(server: &ApiServer) -> Running {
    let client = Client::new(server.client());
    let config = Config::new(client.clone(), "widgets");
    let options = ManagerOptions {
        workers: WORKERS,
        ..Default::default()
    };
    let mut manager = Manager::new(client.clone(), options);
    manager
        .register(dynrec_reconciler(&config))
        .expect("a valid reconciler");
    let readiness = manager.readiness();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = manager.run(async move { drop(stopped.await) }).await;
    });
    let caches_ready = async {
        while !readiness.is_ready() || client.cached_object_count(&config_map_gvk()).is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    within("the dynrec controller is ready", caches_ready).await;
    Running {
        tasks: vec![task],
        stop: Some(stop),
        direct: Direct::Dynrec(Box::new(dynrec_reconciler(&config))),
    }
}

// ---- the widgets definition -----------------------------------------------------------

/// `examples/definitions/widgets.yaml`, read from the file.
pub fn widgets_definition() -> dynrec::definitions::Loaded {
    let path = format!(
        "{}/examples/definitions/widgets.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut loaded =
        dynrec::definitions::load_file(std::path::Path::new(&path)).expect("the definition");
    assert_eq!(loaded.len(), 1, "one definition in {path}");
    loaded.remove(0)
}

/// The widgets definition under a `Manager` set up as [`start_dynrec`]'s: `Definitions`
/// compiles it, applies its Widget CRD and registers its root reconciler (no controller of
/// in-cluster definitions).
async fn start_definition(server: &ApiServer) -> Running {
    use dynrec::definitions::{Definitions, Inventory, root_reconciler};
    let client = Client::new(server.client());
    let config = Config::new(client.clone(), "widgets");
    let options = ManagerOptions {
        workers: WORKERS,
        ..Default::default()
    };
    let manager = Manager::new(client.clone(), options);
    let definitions = Definitions::new(&manager, &config);
    let compiled = within(
        "the definition starts",
        definitions.start(&widgets_definition()),
    )
    .await
    .expect("the widgets definition starts");
    assert_eq!(compiled.for_kind, widget_gvk());
    let readiness = manager.readiness();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = manager.run(async move { drop(stopped.await) }).await;
    });
    let caches_ready = async {
        while !readiness.is_ready() || client.cached_object_count(&config_map_gvk()).is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    within("the definition's controller is ready", caches_ready).await;
    let direct = root_reconciler(&compiled, &config, &Inventory::default());
    Running {
        tasks: vec![task],
        stop: Some(stop),
        direct: Direct::Dynrec(Box::new(direct)),
    }
}

// ---- typed kube-runtime ---------------------------------------------------------------

/// What the typed reconcile function reads and writes with.
pub struct TypedContext {
    client: kube::Client,
    /// ConfigMaps from a reflector of their own: kube-runtime's `owns` keeps no store.
    config_maps: Store<ConfigMap>,
}

/// The typed reconcile: create or fix the ConfigMap, then mark Ready unless it is.
async fn typed_reconcile(
    widget: Arc<Widget>,
    ctx: Arc<TypedContext>,
) -> Result<Action, kube::Error> {
    let namespace = widget.namespace().unwrap_or_default();
    let name = widget.name_any();
    let data = BTreeMap::from([("message".to_string(), widget.spec.message.clone())]);
    let config_maps = Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace);
    let reference = ObjectRef::new(&name).within(&namespace);
    match ctx.config_maps.get(&reference) {
        None => {
            let mut child = ConfigMap {
                data: Some(data),
                ..Default::default()
            };
            child.metadata.name = Some(name.clone());
            child.metadata.namespace = Some(namespace.clone());
            child.metadata.owner_references = widget.controller_owner_ref(&()).map(|r| vec![r]);
            // A child created by an earlier reconcile the reflector has not seen yet is fine.
            match config_maps.create(&PostParams::default(), &child).await {
                Err(kube::Error::Api(status)) if status.is_already_exists() => {}
                created => drop(created?),
            }
        }
        Some(current) if current.data.as_ref() != Some(&data) => {
            let mut fixed = (*current).clone();
            fixed.data = Some(data);
            config_maps
                .replace(&name, &PostParams::default(), &fixed)
                .await?;
        }
        Some(_) => {}
    }
    let generation = widget.meta().generation;
    let status = widget.status.clone().unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .any(|c| c.type_ == READY && c.status == "True");
    if !ready || status.observed_generation != generation {
        let condition = Condition {
            type_: READY.into(),
            status: "True".into(),
            reason: READY.into(),
            message: String::new(),
            last_transition_time: Time(jiff::Timestamp::now()),
            observed_generation: None,
        };
        let patch =
            json!({"status": {"observedGeneration": generation, "conditions": [condition]}});
        Api::<Widget>::namespaced(ctx.client.clone(), &namespace)
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(Action::await_change())
}

async fn start_typed(server: &ApiServer) -> Running {
    let client = server.client();
    let (config_maps, writer) = reflector::store();
    let reflect = watcher(Api::<ConfigMap>::all(client.clone()), Default::default())
        .default_backoff()
        .reflect(writer);
    let reflecting = tokio::spawn(reflect.for_each(|_| async {}));
    within(
        "the typed ConfigMap reflector lists",
        config_maps.wait_until_ready(),
    )
    .await
    .expect("the reflector runs");
    let ctx = Arc::new(TypedContext {
        client: client.clone(),
        config_maps,
    });
    let controller = Controller::new(Api::<Widget>::all(client.clone()), Default::default())
        .owns(Api::<ConfigMap>::all(client), Default::default())
        .with_config(kube::runtime::controller::Config::default().concurrency(WORKERS as u16));
    let widgets = controller.store();
    let running = controller.run(
        typed_reconcile,
        |_, _, _| Action::requeue(Duration::from_millis(100)),
        ctx.clone(),
    );
    let controlling = tokio::spawn(running.for_each(|result| async move {
        if let Err(err) = result {
            eprintln!("typed reconcile failed: {err}");
        }
    }));
    // Not `widgets.wait_until_ready()`: the controller's runner awaits the same readiness,
    // and kube-runtime wakes only the last of two concurrent waiters (its `DelayedInit`
    // holds one oneshot receiver), so this wait could sleep until its timeout. The
    // controller's watcher opens its watch only after its list reached the store.
    let watching = async {
        while !server.open_watches().contains_key("example.com/widgets") {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    within("the typed controller lists widgets", watching).await;
    Running {
        tasks: vec![controlling, reflecting],
        stop: None,
        direct: Direct::Typed(widgets, ctx),
    }
}

/// A fresh server, the controller started and ready, then `n` widgets created and waited
/// for; returns the server, the still running controller and the time from the first
/// create to convergence.
pub async fn converge(engine: Engine, n: usize) -> (ApiServer, Running, Duration) {
    let server = server(n).await;
    let running = engine.start(&server).await;
    let start = Instant::now();
    within("widgets are created", create_widgets(&server, n)).await;
    wait_converged(&server, n).await;
    let elapsed = start.elapsed();
    (server, running, elapsed)
}

/// Durations of the timed runs of each engine, for the ratio printed after a group.
#[derive(Clone, Default)]
pub struct Timings(Arc<std::sync::Mutex<BTreeMap<&'static str, Vec<Duration>>>>);

impl Timings {
    pub fn record(&self, engine: Engine, elapsed: Duration) {
        let mut timings = self.0.lock().expect("timings");
        timings.entry(engine.name()).or_default().push(elapsed);
    }

    /// Prints each engine's median (the first run, criterion's warm-up, left out), its
    /// number of runs, and the ratios dynrec / typed, definition / dynrec and
    /// definition / typed (of medians measured in the same group, so the same run).
    pub fn print_ratio(&self, what: &str) {
        let timings = self.0.lock().expect("timings");
        let median = |engine: Engine| {
            let mut runs = timings
                .get(engine.name())?
                .iter()
                .skip(1)
                .copied()
                .collect::<Vec<_>>();
            runs.sort();
            let median = runs.get(runs.len() / 2).copied()?;
            println!(
                "{what}: {} median {median:.3?} of {} runs",
                engine.name(),
                runs.len()
            );
            Some(median)
        };
        let dynrec = median(Engine::Dynrec);
        let typed = median(Engine::Typed);
        let definition = median(Engine::Definition);
        let ratio = |a: Option<Duration>, b: Option<Duration>, label: &str| {
            if let (Some(a), Some(b)) = (a, b) {
                let ratio = a.as_secs_f64() / b.as_secs_f64();
                println!("{what}: {label} = {ratio:.2}");
            }
        };
        ratio(dynrec, typed, "dynrec / typed");
        ratio(definition, dynrec, "definition / dynrec");
        ratio(definition, typed, "definition / typed");
    }
}

/// The runtime every bench runs on: two workers, as the machine has two cores.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Waits for `future`, failing the bench when it takes more than a minute.
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(60), future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out waiting until {what}"),
    }
}
