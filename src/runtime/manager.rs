//! The Manager: runs one controller per registered kind, each starting when its kind
//! resolves, waiting while it does not exist, and stopping when its CRD goes; watches come
//! from what each reconciler tree declares (the kind, owned children, tracked kinds), all
//! through the client's shared per-GVK caches. Optionally only while holding a Lease.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::DynamicObject;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tracing::{Instrument, debug, info, warn};

use crate::trace::info_span;

use super::unseen_writes::UnseenWrites;
use super::{
    DEFAULT_RESYNC, HealthServer, LeaderConfig, LeaderElector, Metrics, MetricsServer,
    MetricsServing, QueueConfig, RbacChanges, Readiness, ResultLabel, WorkOutcome, WorkQueue,
};
use crate::client::unseen::record_writes;
use crate::client::{CacheEvent, CacheEvents, Client};
use crate::object::{Gvk, ObjectKey};
use crate::reconcilers::failure::{self, FailingRequests};
use crate::reconcilers::{
    self, Config, Permission, RootReconciler, ScopedWatch, ValidationError, Watch,
};

/// Why the manager could not run.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// A registered reconciler tree is incomplete.
    #[error("controller {controller}: {source}")]
    Invalid {
        /// The controller's name.
        controller: String,
        /// What is missing.
        source: ValidationError,
    },
    /// The health endpoint could not start.
    #[error(transparent)]
    Health(#[from] super::HealthError),
    /// The metrics endpoint could not start.
    #[error(transparent)]
    Metrics(#[from] super::MetricsServerError),
    /// Leader election could not start.
    #[error(transparent)]
    Leader(#[from] super::LeaderError),
    /// The admission webhook server could not start.
    #[error(transparent)]
    Webhooks(#[from] crate::webhook::WebhookServerError),
}

/// How the manager runs its controllers.
#[derive(Clone, Debug)]
pub struct ManagerOptions {
    /// Workers per controller.
    pub workers: usize,
    /// Backoff, resync and shutdown bound of each controller's queue.
    pub queue: QueueConfig,
    /// Run controllers only while holding this Lease; `None` runs them at once.
    pub leader_election: Option<LeaderConfig>,
    /// Serve `/metrics` so (secure or plain, on its own address).
    pub metrics: Option<MetricsServing>,
    /// Serve `/healthz` and `/readyz` here (plain HTTP).
    pub health_address: Option<SocketAddr>,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        Self {
            workers: 2,
            queue: QueueConfig::default(),
            leader_election: None,
            metrics: None,
            health_address: None,
        }
    }
}

/// A registered controller.
struct Controller {
    name: String,
    gvk: Gvk,
    reconciler: Arc<dyn RootReconciler>,
    /// Every declared watch but the kind's own, each with the config it is opened through.
    watches: Vec<ScopedWatch>,
    /// What the tree needs on the API server, checked before it starts.
    permissions: Vec<Permission>,
}

/// The controllers a manager runs, by name; changed while it runs through a
/// [`ControllerHandle`].
#[derive(Default)]
struct Registry {
    controllers: Mutex<BTreeMap<String, Arc<Controller>>>,
    /// Bumped on every change, so that the running manager starts and stops controllers.
    changed: watch::Sender<u64>,
}

impl Registry {
    fn insert(&self, controller: Controller) {
        let name = controller.name.clone();
        self.controllers.lock().insert(name, Arc::new(controller));
        self.changed.send_modify(|n| *n += 1);
    }

    fn remove(&self, name: &str) -> bool {
        let removed = self.controllers.lock().remove(name).is_some();
        if removed {
            self.changed.send_modify(|n| *n += 1);
        }
        removed
    }

    fn snapshot(&self) -> BTreeMap<String, Arc<Controller>> {
        self.controllers.lock().clone()
    }
}

/// A task that runs alongside the controllers while the manager runs.
type Companion = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs controllers for kinds resolved at run time.
///
/// A controller is registered as a [`RootReconciler`]; it starts when its kind resolves
/// (waiting while it does not exist), its watches come from what its reconciler tree
/// declares, and [`Manager::run`] runs them all until `shutdown` completes.
/// [`run_controllers`](super::run_controllers) does the connecting and the flags for you.
///
/// ```no_run
/// use dynrec::client::Client;
/// use dynrec::prelude::*;
/// use dynrec::runtime::{ManagerOptions, shutdown_signal};
///
/// # fn widgets(config: &Config) -> ResourceReconciler { unimplemented!() }
/// # async fn run() -> anyhow::Result<()> {
/// let client = Client::new(kube::Client::try_default().await?);
/// let mut manager = Manager::new(client, ManagerOptions::default());
/// let config = manager.config("widgets");
/// manager.register(widgets(&config))?;
/// manager.run(shutdown_signal()).await?;
/// # Ok(())
/// # }
/// ```
pub struct Manager {
    client: Client,
    options: ManagerOptions,
    registry: Arc<Registry>,
    metrics: Metrics,
    readiness: Readiness,
    /// Taken by `run` (behind a lock only so that the manager stays `Sync`).
    companions: Mutex<Vec<Companion>>,
    /// Admission webhooks served until the manager stops.
    webhooks: Vec<crate::webhook::WebhookServing>,
    /// Changes of RBAC objects, which make permission checks ask again.
    rbac: RbacChanges,
}

/// Adds, replaces and removes a manager's controllers while it runs (and before). Cheap to
/// clone.
#[derive(Clone)]
pub struct ControllerHandle {
    registry: Arc<Registry>,
    readiness: Readiness,
}

impl ControllerHandle {
    /// Registers a root reconciler under its name, replacing a controller of that name: the
    /// old one stops (its in-flight reconciles finish) before the new one starts and
    /// reconciles every object of its kind. As in [`Manager::register`], the kind and config
    /// are the root's; the tree is validated here.
    pub fn register(&self, reconciler: impl RootReconciler + 'static) -> Result<(), ManagerError> {
        let controller = Controller::new(Arc::new(reconciler))?;
        self.readiness.set_not_ready(
            &controller.name,
            format!("waiting to start ({})", controller.gvk),
        );
        self.registry.insert(controller);
        Ok(())
    }

    /// Stops and forgets the controller named `name`; false when there is none.
    pub fn remove(&self, name: &str) -> bool {
        let removed = self.registry.remove(name);
        if removed {
            self.readiness.remove(name);
        }
        removed
    }

    /// The names of the registered controllers.
    pub fn names(&self) -> Vec<String> {
        self.registry.controllers.lock().keys().cloned().collect()
    }

    /// What the registered controllers need on the API server, each naming its reconciler.
    pub fn permissions(&self) -> Vec<Permission> {
        self.permissions_by_controller()
            .into_values()
            .flatten()
            .collect()
    }

    /// What each registered controller needs on the API server, by controller name.
    pub fn permissions_by_controller(&self) -> BTreeMap<String, Vec<Permission>> {
        let controllers = self.registry.snapshot();
        controllers
            .into_iter()
            .map(|(name, c)| (name, c.permissions.clone()))
            .collect()
    }
}

impl Controller {
    /// Validates `reconciler` and collects the watches its tree declares.
    fn new(reconciler: Arc<dyn RootReconciler>) -> Result<Self, ManagerError> {
        let name = reconciler.name().to_string();
        let gvk = reconciler.resource_type().clone();
        let config = reconciler.config().clone();
        let invalid = |source| ManagerError::Invalid {
            controller: name.clone(),
            source,
        };
        reconciler.validate().map_err(invalid)?;
        let setup = reconciler.setup().map_err(invalid)?;
        let watches = setup
            .watches()
            .iter()
            .filter(|w| !matches!(w, Watch::For(_)))
            .map(|watch| ScopedWatch {
                watch: watch.clone(),
                config: config.clone(),
            })
            .chain(setup.scoped_watches().iter().cloned())
            .collect();
        Ok(Self {
            permissions: setup.permissions(&name),
            name,
            gvk,
            reconciler,
            watches,
        })
    }
}

impl Manager {
    /// A manager over `client` (whose caches every controller shares).
    pub fn new(client: Client, options: ManagerOptions) -> Self {
        let metrics = Metrics::new();
        metrics.observe_client(&client);
        Self {
            client,
            options,
            registry: Arc::default(),
            metrics,
            readiness: Readiness::new(),
            companions: Mutex::default(),
            webhooks: Vec::new(),
            rbac: RbacChanges::default(),
        }
    }

    /// Runs `task` alongside the controllers from the start of [`Manager::run`] until the
    /// manager stops (it is dropped then if it has not ended), e.g. a follower that adds and
    /// removes controllers through a [`ControllerHandle`].
    pub fn run_alongside(&mut self, task: impl Future<Output = ()> + Send + 'static) {
        self.companions.get_mut().push(Box::pin(task));
    }

    /// Serves `webhooks` on `address` (port 0 picks a free one) from now until the manager
    /// stops, whether or not it leads, counting their requests in the manager's metrics.
    /// The returned handle gives the URL and CA a webhook configuration needs.
    pub async fn serve_webhooks(
        &mut self,
        webhooks: crate::webhook::WebhookServer,
        address: SocketAddr,
    ) -> Result<&crate::webhook::WebhookServing, ManagerError> {
        let metrics = self.metrics.clone();
        let record = move |webhook: &str, allowed: bool, took: std::time::Duration| {
            metrics.record_admission(webhook, allowed, took)
        };
        let serving = webhooks.recording(Arc::new(record)).bind(address).await?;
        info!(address = %serving.local_addr(), "serving admission webhooks");
        self.webhooks.push(serving);
        Ok(&self.webhooks[self.webhooks.len() - 1])
    }

    /// A handle that adds, replaces and removes controllers, also while the manager runs.
    pub fn handle(&self) -> ControllerHandle {
        ControllerHandle {
            registry: self.registry.clone(),
            readiness: self.readiness.clone(),
        }
    }

    /// A config over the manager's client for the controller `controller` (the events'
    /// reporting component), its tracker's lease following the manager's resync period.
    pub fn config(&self, controller: &str) -> Config {
        let resync = self.options.queue.resync.unwrap_or(DEFAULT_RESYNC);
        Config::with_resync(self.client.clone(), controller, resync)
    }

    /// The client whose caches the controllers share.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Registers a root reconciler for the kind it reconciles, with the config it was built
    /// with (its client opens the tree's watches, its tracker maps tracked objects to
    /// requests; watches declared under `WithConfig` use that config's). The tree is
    /// validated here. A controller of the same name is replaced.
    pub fn register(
        &mut self,
        reconciler: impl RootReconciler + 'static,
    ) -> Result<(), ManagerError> {
        self.handle().register(reconciler)
    }

    /// The manager's metrics.
    pub fn metrics(&self) -> Metrics {
        self.metrics.clone()
    }

    /// The manager's readiness registry.
    pub fn readiness(&self) -> Readiness {
        self.readiness.clone()
    }

    /// The changes of RBAC objects the manager watches while it runs (its permission
    /// checks ask again after each).
    pub fn rbac_changes(&self) -> RbacChanges {
        self.rbac.clone()
    }

    /// Runs every controller until `shutdown` completes; in-flight reconciles finish within
    /// the queue's shutdown bound, and a held Lease is released.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ManagerError> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut background = JoinSet::new();
        let companions = std::mem::take(&mut *self.companions.lock());
        for task in companions {
            let stopped = wait_stopped(stop_rx.clone());
            background.spawn(async move {
                tokio::select! {
                    () = task => {}
                    () = stopped => {}
                }
            });
        }
        if let Some(address) = self.options.health_address {
            let server = HealthServer::bind(address, self.readiness.clone()).await?;
            let stopped = wait_stopped(stop_rx.clone());
            background.spawn(async move {
                if let Err(err) = server.serve(stopped).await {
                    warn!(%err, "health endpoint stopped");
                }
            });
        }
        if let Some(serving) = &self.options.metrics {
            let reviewer = self.client.kube().clone();
            let server = MetricsServer::bind(serving, self.metrics.clone(), reviewer).await?;
            let stopped = wait_stopped(stop_rx.clone());
            background.spawn(async move {
                if let Err(err) = server.serve(stopped).await {
                    warn!(%err, "metrics endpoint stopped");
                }
            });
        }
        let rbac = self.rbac.clone().watch(self.client.kube().clone());
        let stopped = wait_stopped(stop_rx.clone());
        background.spawn(async move {
            tokio::select! {
                () = rbac => {}
                () = stopped => {}
            }
        });
        background.spawn(super::preflight::check_manager(
            self.client.clone(),
            self.options.leader_election.is_some(),
            self.readiness.clone(),
            self.rbac.clone(),
            stop_rx.clone(),
        ));
        // Without leader election this replica always leads: the sender lives as long as `run`.
        let (_always_leading, mut leading) = watch::channel(true);
        if let Some(config) = self.options.leader_election.clone() {
            let elector = LeaderElector::new(self.client.kube().clone(), config)?;
            leading = elector.subscribe();
            let stopped = wait_stopped(stop_rx.clone());
            background.spawn(elector.run(stopped));
        }
        let runner = self.run_while_leading(leading, stop_rx.clone());
        let mut runner = std::pin::pin!(runner);
        tokio::select! {
            () = shutdown => {
                info!("shutting down: waiting for in-flight reconciles");
                let _ = stop_tx.send(true);
                runner.await;
            }
            () = &mut runner => {}
        }
        let _ = stop_tx.send(true);
        while background.join_next().await.is_some() {}
        Ok(())
    }

    /// Reports whether this replica holds the Lease (with leader election only).
    fn set_leader(&self, leading: bool) {
        if let Some(election) = &self.options.leader_election {
            self.metrics.set_leader(&election.name, leading);
        }
    }

    /// Starts the controllers whenever this replica leads, and stops them when it does not.
    async fn run_while_leading(
        &self,
        mut leading: watch::Receiver<bool>,
        stop: watch::Receiver<bool>,
    ) {
        let elects = self.options.leader_election.is_some();
        loop {
            self.readiness.set_standby(elects);
            tokio::select! {
                leads = leading.wait_for(|l| *l) => if leads.is_err() { return },
                () = wait_stopped(stop.clone()) => return,
            }
            self.readiness.set_standby(false);
            self.set_leader(true);
            info!("leading: starting controllers");
            let (lost_tx, lost_rx) = watch::channel(false);
            let mut running = RunningControllers::default();
            let mut changed = self.registry.changed.subscribe();
            let stopping = loop {
                changed.mark_unchanged();
                let wanted = self.registry.snapshot();
                running.stop_unwanted(&wanted).await;
                for controller in wanted.values() {
                    if running.is_running(controller) {
                        continue;
                    }
                    let run = ControllerRun {
                        controller: controller.clone(),
                        client: self.client.clone(),
                        options: self.options.clone(),
                        metrics: self.metrics.clone(),
                        readiness: self.readiness.clone(),
                        rbac: self.rbac.clone(),
                    };
                    let (own_tx, own_rx) = watch::channel(false);
                    let stopped =
                        either_stopped(either_stopped(stop.clone(), lost_rx.clone()), own_rx);
                    let span = info_span!("controller", controller = %controller.name, kind = %controller.gvk);
                    let task = tokio::spawn(run.run(stopped).instrument(span));
                    running.add(controller.clone(), own_tx, task);
                }
                tokio::select! {
                    _ = leading.wait_for(|l| !*l) => break false,
                    () = wait_stopped(stop.clone()) => break true,
                    changed = changed.changed() => if changed.is_err() { break true },
                }
            };
            if !stopping {
                warn!("lost leadership: stopping controllers");
            }
            self.set_leader(false);
            let _ = lost_tx.send(true);
            // Each controller finishes its in-flight reconciles (within the queue's bound).
            running.join_all().await;
            if stopping {
                return;
            }
        }
    }
}

/// A started controller: what runs, its stop flag and its task.
type Started = (Arc<Controller>, watch::Sender<bool>, JoinHandle<()>);

/// The controllers started while leading, each with its own stop flag.
#[derive(Default)]
struct RunningControllers {
    running: BTreeMap<String, Started>,
}

impl RunningControllers {
    fn is_running(&self, controller: &Arc<Controller>) -> bool {
        self.running
            .get(&controller.name)
            .is_some_and(|(running, _, _)| Arc::ptr_eq(running, controller))
    }

    fn add(
        &mut self,
        controller: Arc<Controller>,
        stop: watch::Sender<bool>,
        task: JoinHandle<()>,
    ) {
        self.running
            .insert(controller.name.clone(), (controller, stop, task));
    }

    /// Stops the controllers that were removed or replaced, and waits until they finished.
    async fn stop_unwanted(&mut self, wanted: &BTreeMap<String, Arc<Controller>>) {
        let unwanted: Vec<String> = self
            .running
            .iter()
            .filter(|(name, (running, _, _))| {
                wanted
                    .get(*name)
                    .is_none_or(|controller| !Arc::ptr_eq(running, controller))
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in unwanted {
            if let Some((_, stop, task)) = self.running.remove(&name) {
                info!(controller = %name, "stopping controller");
                let _ = stop.send(true);
                let _ = task.await;
            }
        }
    }

    async fn join_all(self) {
        for (_, (_, _, task)) in self.running {
            let _ = task.await;
        }
    }
}

/// Resolves once the stop flag is set (or its sender is gone).
async fn wait_stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Resolves once either flag is set.
fn either_stopped(a: watch::Receiver<bool>, b: watch::Receiver<bool>) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            () = wait_stopped(a) => {}
            () = wait_stopped(b) => {}
        }
        let _ = tx.send(true);
    });
    rx
}

/// One controller's life: wait for the kind, run until it goes away, repeat.
struct ControllerRun {
    controller: Arc<Controller>,
    client: Client,
    options: ManagerOptions,
    metrics: Metrics,
    readiness: Readiness,
    rbac: RbacChanges,
}

impl ControllerRun {
    async fn run(self, stop: watch::Receiver<bool>) {
        let name = self.controller.name.clone();
        let gvk = self.controller.gvk.clone();
        loop {
            self.readiness
                .set_not_ready(&name, format!("waiting for the kind {gvk} to exist"));
            info!("waiting for the kind to exist");
            let resolved = tokio::select! {
                () = wait_stopped(stop.clone()) => return,
                resolved = self.client.resolver().wait_for(&gvk) => resolved,
            };
            let resolved = match resolved {
                Ok(resolved) => resolved,
                Err(err) => {
                    warn!(%err, "cannot resolve the kind; retrying");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    continue;
                }
            };
            // Asked as the identity the controller acts as (its config's client).
            let permitted = super::wait_until_allowed(
                &self.controller.reconciler.config().client,
                &self.controller.permissions,
                resolved.namespaced,
                super::Waiting {
                    readiness: &self.readiness,
                    component: &name,
                    rbac: &self.rbac,
                },
                stop.clone(),
            );
            if !permitted.await {
                return;
            }
            self.readiness.set_ready(&name);
            info!("kind resolved: controller started");
            let ended_by_stop = self.serve(resolved.namespaced, stop.clone()).await;
            self.metrics.remove_queue(&name);
            if ended_by_stop {
                self.readiness.remove(&name);
                return;
            }
            info!("kind removed: controller stopped");
        }
    }

    /// Runs the queue and its feeds; returns true when stopped, false when the kind went away.
    async fn serve(&self, namespaced: bool, stop: watch::Receiver<bool>) -> bool {
        let observer = {
            let (metrics, name) = (self.metrics.clone(), self.controller.name.clone());
            Arc::new(move |timing| metrics.record_queue_timing(&name, timing))
        };
        let queue = WorkQueue::<ObjectKey>::observed(self.options.queue.clone(), observer);
        let stats_queue = queue.clone();
        self.metrics
            .register_queue(&self.controller.name, self.options.workers, move || {
                stats_queue.stats()
            });
        let mut feeds = JoinSet::new();
        let (gone_tx, mut gone_rx) = watch::channel(false);
        let own_cache = match self.client.cache(&self.controller.gvk).await {
            Ok(cache) => {
                let own_cache = cache.clone();
                let queue = queue.clone();
                let gone = gone_tx.clone();
                feeds.spawn(async move {
                    let events = cache.subscribe();
                    feed(
                        events,
                        &cache,
                        |object| ObjectKey::of(object).ok().into_iter().collect(),
                        &queue,
                    )
                    .await;
                    let _ = gone.send(true);
                });
                own_cache
            }
            Err(err) => {
                warn!(%err, "cannot watch the kind");
                return false;
            }
        };
        let mut caches = vec![own_cache.clone()];
        for watch in &self.controller.watches {
            caches.extend(self.spawn_feed(&mut feeds, watch, namespaced, &queue).await);
        }
        let mut stop = stop;
        let filled = tokio::select! {
            () = wait_until_filled(&caches) => None,
            _ = stop.wait_for(|s| *s) => Some(true),
            _ = gone_rx.wait_for(|g| *g) => Some(false),
        };
        if let Some(stopped) = filled {
            feeds.abort_all();
            return stopped;
        }
        let initial = self.controller.reconciler.initial_requests();
        for request in &initial {
            queue.add(request.clone());
        }
        let forget_gone = ForgetGone {
            cache: own_cache,
            queue: queue.clone(),
            keep: initial,
        };
        let workers = self.options.workers;
        let reconciler = self.controller.reconciler.clone();
        let metrics = self.metrics.clone();
        let name = self.controller.name.clone();
        let forget_gone = Arc::new(forget_gone);
        let unseen_writes = Arc::new(UnseenWrites::default());
        let failing = Arc::new(FailingRequests::default());
        let runner = queue.run(workers, move |key: ObjectKey| {
            let failing = failing.clone();
            let reconciler = reconciler.clone();
            let metrics = metrics.clone();
            let name = name.clone();
            let forget_gone = forget_gone.clone();
            let unseen_writes = unseen_writes.clone();
            let span = info_span!("reconcile", object = %key, reconcile_id = %uuid::Uuid::new_v4());
            async move {
                if let Some(delay) = unseen_writes.hold_back(&key) {
                    debug!("the caches have not yet seen what the last reconcile wrote: held back");
                    return WorkOutcome::RequeueAfter(delay);
                }
                let started = Instant::now();
                let reconcile = async {
                    let outcome = reconciler.reconcile(&key).await;
                    if let Some(err) = &outcome.error {
                        failure::log_failed_reconcile(err);
                    }
                    outcome
                };
                let (outcome, writes) = record_writes(failing.reconcile(&key, reconcile)).await;
                unseen_writes.remember(key.clone(), writes);
                let (queued, label) = queue_outcome(&outcome);
                metrics.record_reconcile(&name, label, started.elapsed());
                if matches!(queued, WorkOutcome::Success) {
                    forget_gone.forget_if_gone(&key);
                }
                queued
            }
            .instrument(span)
        });
        let stopper = queue.clone();
        let mut runner = std::pin::pin!(runner);
        let (stopped, finished) = tokio::select! {
            result = &mut runner => (false, Some(result)),
            _ = stop.wait_for(|s| *s) => (true, None),
            _ = gone_rx.wait_for(|g| *g) => (false, None),
        };
        feeds.abort_all();
        stopper.shutdown();
        // In-flight reconciles finish (within the queue's shutdown bound) before we return.
        let result = match finished {
            Some(result) => result,
            None => runner.await,
        };
        if let Err(err) = result {
            warn!(%err, "work queue ended");
        }
        stopped
    }

    /// Feeds a declared watch into the queue, through its config's client: owned children
    /// to their controller owner, tracked objects to their observers in its config's tracker.
    /// Returns the watched kind's cache.
    async fn spawn_feed(
        &self,
        feeds: &mut JoinSet<()>,
        declared: &ScopedWatch,
        namespaced: bool,
        queue: &WorkQueue<ObjectKey>,
    ) -> Option<crate::client::Cache> {
        let (gvk, owned) = match &declared.watch {
            Watch::Owns(gvk) => (gvk.clone(), true),
            Watch::Tracked(gvk) => (gvk.clone(), false),
            Watch::For(_) => return None,
        };
        let cache = match declared.config.client.cache(&gvk).await {
            Ok(cache) => cache,
            Err(err) => {
                warn!(watched = %gvk, %err, "cannot watch a declared kind; it will not trigger reconciles");
                return None;
            }
        };
        let watched = cache.clone();
        let queue = queue.clone();
        let owner = self.controller.gvk.clone();
        let tracker = declared.config.tracker.clone();
        feeds.spawn(async move {
            let events = cache.subscribe();
            if owned {
                feed(
                    events,
                    &cache,
                    |child| controller_owner(child, &owner, namespaced),
                    &queue,
                )
                .await;
            } else {
                feed(
                    events,
                    &cache,
                    |object| tracker.observers(object).unwrap_or_default(),
                    &queue,
                )
                .await;
            }
        });
        Some(watched)
    }
}

/// How long a controller's workers wait for its caches to fill: controller-runtime's default
/// `CacheSyncTimeout`.
const CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Waits until every cache of a controller (its kind's, its children's, what it tracks) has
/// listed, as controller-runtime's controllers wait for their sources before starting
/// workers: a reconcile before then would list from the API server what a cache is still
/// listing (at 100,000 children, every reconcile a list of them all). After
/// [`CACHE_SYNC_TIMEOUT`] the workers start anyway, reading the kinds not filled from the
/// API server (controller-runtime fails the controller instead).
async fn wait_until_filled(caches: &[crate::client::Cache]) {
    let started = Instant::now();
    let filled = futures::future::join_all(caches.iter().map(|cache| cache.wait_until_ready()));
    match tokio::time::timeout(CACHE_SYNC_TIMEOUT, filled).await {
        Ok(_) => debug!(
            seconds = started.elapsed().as_secs_f64(),
            "caches filled: workers start"
        ),
        Err(_) => warn!(
            "the controller's caches did not fill within {} s; its workers start anyway, reading the kinds not listed yet from the API server",
            CACHE_SYNC_TIMEOUT.as_secs()
        ),
    }
}

/// Forgets the keys of deleted objects once their last reconcile succeeded, so that the
/// queue does not keep (and resync) every key it has ever seen.
struct ForgetGone {
    cache: crate::client::Cache,
    queue: WorkQueue<ObjectKey>,
    /// Requests the reconciler asks for whether or not their object exists.
    keep: Vec<ObjectKey>,
}

impl ForgetGone {
    fn forget_if_gone(&self, key: &ObjectKey) {
        let gone = self.cache.is_ready() && self.cache.get(key).is_none();
        if gone && !self.keep.contains(key) {
            self.queue.forget_unless_pending(key);
        }
    }
}

/// Adds the keys `map` finds for every cached object once the cache is ready, then for each
/// changed object until the cache stops; after a relist, for everything cached again (the
/// queue drops duplicates). Deleted objects are forgotten by the queue.
///
/// Subscribed while the cache still lists, the listed objects arrive one by one and then as
/// a resync: they are added once, at the resync, or a worker taking an object between two
/// of its adds would reconcile it twice in a row (a failed first reconcile retried at once,
/// not after its backoff).
async fn feed(
    mut events: CacheEvents,
    cache: &crate::client::Cache,
    map: impl Fn(&DynamicObject) -> Vec<ObjectKey>,
    queue: &WorkQueue<ObjectKey>,
) {
    let add_everything = || {
        // Unordered: the queue keeps an order of its own, and `list` would sort them all.
        for object in cache.objects() {
            map(&object).into_iter().for_each(|key| queue.add(key));
        }
    };
    let mut listing = !cache.is_ready();
    if !listing {
        add_everything();
    }
    while let Some(event) = events.recv().await {
        match event {
            CacheEvent::Applied(_) if listing => {}
            CacheEvent::Applied(object) | CacheEvent::Deleted(object) => {
                map(&object).into_iter().for_each(|key| queue.add(key));
            }
            CacheEvent::Resynced => {
                listing = false;
                add_everything();
            }
        }
    }
}

/// The request for a child's controller owner of kind `owner`; a cluster-scoped owner of a
/// namespaced child is found too (which kube-runtime's `owns` misses).
fn controller_owner(child: &DynamicObject, owner: &Gvk, owner_namespaced: bool) -> Vec<ObjectKey> {
    let api_version = owner.api_version();
    child
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|r| {
            r.controller == Some(true) && r.api_version == api_version && r.kind == owner.kind
        })
        .map(
            |r| match (owner_namespaced, child.metadata.namespace.as_deref()) {
                (true, Some(ns)) => ObjectKey::namespaced(ns, &r.name),
                _ => ObjectKey::cluster(&r.name),
            },
        )
        .collect()
}

/// What the queue does next after a reconcile, and the metric label.
fn queue_outcome(outcome: &reconcilers::Outcome) -> (WorkOutcome, ResultLabel) {
    if outcome.error.is_some() {
        return (WorkOutcome::Error, ResultLabel::Error);
    }
    match (outcome.result.requeue_after, outcome.result.requeue) {
        (Some(delay), _) => (WorkOutcome::RequeueAfter(delay), ResultLabel::RequeueAfter),
        (None, true) => (WorkOutcome::Requeue, ResultLabel::Requeue),
        (None, false) => (WorkOutcome::Success, ResultLabel::Success),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cluster_scoped_owner_of_a_namespaced_child_is_found() {
        let child: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "demo", "ownerReferences": [
                {"apiVersion": "example.com/v1", "kind": "Cluster", "name": "big", "uid": "u", "controller": true},
                {"apiVersion": "example.com/v1", "kind": "Cluster", "name": "other", "uid": "v"}
            ]}
        }))
        .unwrap();
        let owner = Gvk::new("example.com", "v1", "Cluster");
        assert_eq!(
            controller_owner(&child, &owner, false),
            vec![ObjectKey::cluster("big")]
        );
        assert_eq!(
            controller_owner(&child, &owner, true),
            vec![ObjectKey::namespaced("demo", "big")]
        );
    }

    #[test]
    fn outcomes_map_to_queue_decisions() {
        let error = reconcilers::Outcome::err(reconcilers::ReconcileError::msg("x"));
        assert_eq!(queue_outcome(&error).0, WorkOutcome::Error);
        let later = reconcilers::Outcome::ok(reconcilers::ReconcileResult::requeue_after(
            std::time::Duration::from_secs(3),
        ));
        assert_eq!(
            queue_outcome(&later).0,
            WorkOutcome::RequeueAfter(std::time::Duration::from_secs(3))
        );
        assert_eq!(
            queue_outcome(&reconcilers::Outcome::done()).0,
            WorkOutcome::Success
        );
    }
}
