//! What `converge` and `steady_state` share: an embedded server with the Widget CRD, and
//! controllers doing the same work — each Widget gets an owned ConfigMap child (controller
//! reference, `data.message` = `spec.message`) and `status.conditions` Ready=True:
//! - [`Engine::Dynrec`]: a `ResourceReconciler` + `ChildReconciler` on `DynamicObject`s,
//!   run by the dynrec `Manager` ([`dynamic`]);
//! - [`Engine::Typed`]: a hand-written kube-runtime `Controller` over a derived `Widget`
//!   and k8s_openapi's `ConfigMap`, reading children from a reflector ([`typed`]);
//! - [`Engine::Definition`]: `examples/definitions/widgets.yaml` (the same controller as a
//!   `ReconcilerDefinition`, its child template in CEL) started by `Definitions` under the
//!   same `Manager` setup as [`Engine::Dynrec`]. Its child is `<widget>-config` with
//!   `data.greeting` (from `spec.greeting`) and `data.size`; Ready=True comes through its
//!   `ConfigMapReady` condition.
//! - [`Engine::WidgetsExample`]: `examples/widgets/controller.rs`, the Rust controller the
//!   definition restates, under the same `Manager` setup: it writes the same ConfigMap
//!   (without the definition's two labels) and the same two conditions, so it is the
//!   definition's baseline.
//!
//! Each runs with a given number of workers ([`DEFAULT_WORKERS`] unless a group says
//! otherwise). The dynamic engines record no Events (`EventRecorder::disabled`), as the
//! typed one records none; [`Writes`] reads what each wrote from the server's counters.
//!
//! Every engine starts from the same state: [`server`] installs the Widget CRD before any
//! controller starts. The definition applies its own Widget CRD (from its `schema:`) over it
//! when it starts, also before timing, and so does the widgets example; their schema has
//! the server validate and prune the Widgets' writes. Widgets carry both
//! `spec.message` (read by the bench's own Rust controllers) and `spec.greeting` (read by the
//! definition and the widgets example), with the same text.
//!
//! Widgets live in namespaces of [`PER_NAMESPACE`] each (see benches/README.md).
#![allow(dead_code)] // each bench uses part of this module

/// With `--features bench-mimalloc`: every engine on mimalloc, the `dynrec` binary's allocator.
#[cfg(feature = "bench-mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod dynamic;
pub mod report;
mod typed;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dynrec::apiserver::ApiServer;
use dynrec::object::{Gvk, ObjectKey, READY};
use dynrec::reconcilers::ResourceReconciler;
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::reflector::Store;
use serde_json::json;

use report::Writes;

/// Widgets per namespace.
pub const PER_NAMESPACE: usize = 100;
/// Workers of a controller (the dynrec `Manager`'s workers, the typed controller's
/// concurrency) unless a group says otherwise: the machine's cores.
pub const DEFAULT_WORKERS: usize = 2;

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

/// The controller under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Dynrec,
    Typed,
    Definition,
    /// `examples/widgets/controller.rs`: the Rust controller the widgets definition
    /// restates, so the two write the same objects.
    WidgetsExample,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Dynrec => "dynrec",
            Engine::Typed => "typed_kube_runtime",
            Engine::Definition => "definition",
            Engine::WidgetsExample => "rust_widgets_example",
        }
    }

    /// Starts the controller against `server` with `workers` workers; returns once its
    /// caches are ready.
    pub async fn start(self, server: &ApiServer, workers: usize) -> Running {
        match self {
            Engine::Dynrec => dynamic::start_dynrec(server, workers).await,
            Engine::Typed => typed::start(server, workers).await,
            Engine::Definition => dynamic::start_definition(server, workers).await,
            Engine::WidgetsExample => dynamic::start_widgets_example(server, workers).await,
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
    Typed(Store<typed::Widget>, Arc<typed::TypedContext>),
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
            Direct::Typed(widgets, ctx) => typed::reconcile(widgets, ctx, i).await,
        }
    }

    /// How many ConfigMaps the controller's cache holds (dynrec's shared cache, the typed
    /// ConfigMap reflector).
    pub fn cached_config_maps(&self) -> usize {
        match &self.direct {
            Direct::Dynrec(reconciler) => {
                use dynrec::reconcilers::RootReconciler;
                let client = &reconciler.config().client;
                client.cached_object_count(&config_map_gvk()).unwrap_or(0)
            }
            Direct::Typed(_, ctx) => ctx.cached_config_maps(),
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

/// A controller that converged the widgets, as [`converge`] leaves it.
pub struct Converged {
    /// Still running.
    pub running: Running,
    /// From the first create to convergence.
    pub elapsed: Duration,
    /// The server's counts when the controller was ready, before the first create.
    pub before: Writes,
}

/// A fresh server, the controller started with `workers` workers and ready, then `n`
/// widgets created and waited for.
pub async fn converge(engine: Engine, n: usize, workers: usize) -> (ApiServer, Converged) {
    let server = server(n).await;
    let converged = converge_on(&server, engine, n, workers).await;
    (server, converged)
}

/// [`converge`] on a `server` set up by [`server`] (and maybe seeded more).
pub async fn converge_on(
    server: &ApiServer,
    engine: Engine,
    n: usize,
    workers: usize,
) -> Converged {
    let running = engine.start(server, workers).await;
    let before = Writes::read(server);
    let start = Instant::now();
    within("widgets are created", create_widgets(server, n)).await;
    wait_converged(server, n).await;
    Converged {
        running,
        elapsed: start.elapsed(),
        before,
    }
}

/// Seeds ConfigMaps no Widget owns (labels, an annotation, three data keys), so that they
/// and the children of `n` widgets make `total` ConfigMaps (besides each namespace's
/// `kube-root-ca.crt`): every other one in the widgets' namespaces, the rest in namespaces
/// of [`PER_NAMESPACE`] of their own (`other-0`, `other-1`, ...). Stored directly, before
/// any controller starts.
pub fn seed_unowned_config_maps(server: &ApiServer, n: usize, total: usize) {
    let widget_namespaces = n.div_ceil(PER_NAMESPACE);
    let config_maps = (0..total.saturating_sub(n)).map(|i| {
        let namespace = if i % 2 == 0 {
            format!("ns-{}", (i / 2) % widget_namespaces)
        } else {
            format!("other-{}", i / 2 / PER_NAMESPACE)
        };
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("unowned-{i}"), "namespace": namespace,
                "labels": {"app": "bench", "tier": "backend"},
                "annotations": {"example.com/owner": format!("team-{}", i % 7)}},
            "data": {"mode": "production", "level": "info",
                "endpoint": format!("https://svc-{i}.example.com:8443/api")}})
    });
    server.seed(config_maps).expect("config maps seeded");
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

/// A group of one-run samples (criterion's minimum of 10, a 1 ms warm-up, a 1 s target):
/// each sample of converge and steady state is a whole run or pass of `n` Widgets.
pub fn flat_group<'a>(
    c: &'a mut criterion::Criterion,
    name: &str,
    n: usize,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .sampling_mode(criterion::SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1))
        .throughput(criterion::Throughput::Elements(n as u64));
    group
}
