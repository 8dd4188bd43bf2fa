//! What the driver does to a running controller, and what it records: a converge (create N
//! instances at a rate, wait until every one is Ready), churn steps (change instances at a
//! set rate, time each change until the child shows it), and a restart catch-up (start → the
//! first child written → every child caught up, beside how fast a typed kube-runtime Store
//! fills from the same lists).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use dynrec::object::Gvk;

use crate::metrics::ControllerLatency;
use crate::webapps::WebApp;
use crate::widgets::Widget;
use crate::workload::{Workload, converged};

/// How many writes the driver has in flight at most.
const IN_FLIGHT: usize = 64;

/// The converge of N new instances.
#[derive(Debug, Serialize)]
pub struct Converge {
    pub instances: usize,
    /// From the first create to the last instance seen Ready, seconds.
    pub seconds: f64,
    /// Instances converged per second.
    pub per_second: f64,
    /// How long the creates alone took, seconds.
    pub create_seconds: f64,
}

/// Creates `count` instances in `namespace`, `rate` a second (0: as fast as the server takes
/// them), and waits until all are Ready, for at most `limit`.
pub async fn converge(
    client: &kube::Client,
    namespace: &str,
    workload: Workload,
    count: usize,
    rate: f64,
    limit: Duration,
) -> Result<Converge> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &workload.kind());
    let ready = Arc::new(Mutex::new(HashSet::new()));
    let watching = tokio::spawn(track_ready(api.clone(), ready.clone()));
    let start = Instant::now();
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut creates = Vec::with_capacity(count);
    for i in 0..count {
        pace(start, i, rate).await;
        let permit = slots.clone().acquire_owned().await?;
        let api = api.clone();
        creates.push(tokio::spawn(async move {
            let created = api
                .create(
                    &PostParams::default(),
                    &workload.instance(i, api_namespace(&api)),
                )
                .await;
            drop(permit);
            created.map(drop)
        }));
    }
    for create in creates {
        create.await?.context("create an instance")?;
    }
    let create_seconds = start.elapsed().as_secs_f64();
    let deadline = start + limit;
    while ready.lock().unwrap().len() < count {
        if Instant::now() > deadline {
            let done = ready.lock().unwrap().len();
            watching.abort();
            bail!("converge: {done} of {count} instances Ready after {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seconds = start.elapsed().as_secs_f64();
    watching.abort();
    Ok(Converge {
        instances: count,
        seconds,
        per_second: count as f64 / seconds,
        create_seconds,
    })
}

/// The namespace an `Api` was made for (the driver makes only namespaced ones).
fn api_namespace(api: &Api<DynamicObject>) -> &str {
    api.namespace().unwrap_or("default")
}

/// Sleeps until the `i`th event of a schedule of `rate` a second from `start` is due.
async fn pace(start: Instant, i: usize, rate: f64) {
    if rate > 0.0 {
        let due = start + Duration::from_secs_f64(i as f64 / rate);
        tokio::time::sleep_until(due.into()).await;
    }
}

/// The events of a watch of `api`'s objects, retried after an error with kube's default
/// backoff. Without one, a watch whose every request fails at once (its client's connection
/// worker gone, as when the runtime shuts down) retries in a loop that never yields: the
/// task can then be neither aborted nor dropped, and the process never exits.
fn watch<K>(api: Api<K>) -> impl futures::Stream<Item = watcher::Result<watcher::Event<K>>> + Send
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    watcher(api, watcher::Config::default()).default_backoff()
}

/// Keeps `ready` the set of instances that are Ready for their generation.
async fn track_ready(api: Api<DynamicObject>, ready: Arc<Mutex<HashSet<String>>>) {
    let mut events = watch(api).boxed();
    while let Some(event) = events.next().await {
        let Ok(event) = event else { continue };
        let (watcher::Event::Apply(instance) | watcher::Event::InitApply(instance)) = event else {
            continue;
        };
        let mut ready = ready.lock().unwrap();
        if converged(&instance) {
            ready.insert(instance.name_any());
        } else {
            ready.remove(&instance.name_any());
        }
    }
}

/// One churn step: changes at a target rate for a while, each timed until the child shows it.
#[derive(Debug, Serialize)]
pub struct Step {
    /// Changes a second asked for.
    pub target_rate: f64,
    /// Changes a second the server accepted.
    pub achieved_rate: f64,
    pub changes: usize,
    /// Change → the child ConfigMap showing it, milliseconds.
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Changes no child showed within the drain limit (counted at the limit above).
    pub unseen: usize,
    /// p99 within the SLO, every change seen, and the rate reached (≥ 95%).
    pub meets_slo: bool,
    /// The controller's own queue and reconcile p99s over the step (dynrec only).
    pub controller: Option<ControllerLatency>,
}

/// Changes not yet shown by their child, by widget: (greeting written, when).
type Pending = Arc<Mutex<HashMap<String, VecDeque<(String, Instant)>>>>;

/// The latencies of changes their child has shown, milliseconds, and when the first of them
/// was seen.
#[derive(Default)]
struct Shown {
    latencies: Vec<f64>,
    first: Option<Instant>,
}

type Seen = Arc<Mutex<Shown>>;

/// Watches the instances' children and records, for each pending change, when the child
/// first shows it (or a later change of the same instance).
pub struct ChildWatch {
    pending: Pending,
    seen: Seen,
    task: tokio::task::JoinHandle<()>,
}

impl ChildWatch {
    /// Starts watching the children of `namespace` that show the workload's changes, and
    /// waits (for at most `limit`) until the watch has listed them: a change made before
    /// then would be timed from its write to the end of the list (at 100,000 ConfigMaps,
    /// about five seconds).
    pub async fn start(
        client: &kube::Client,
        namespace: &str,
        workload: Workload,
        limit: Duration,
    ) -> Result<Self> {
        let pending: Pending = Arc::default();
        let seen: Seen = Arc::default();
        let (listed, mut done) = tokio::sync::watch::channel(false);
        let api = Api::namespaced_with(client.clone(), namespace, &workload.watched_child());
        let task = tokio::spawn(resolve(
            api,
            workload,
            pending.clone(),
            seen.clone(),
            listed,
        ));
        let watch = Self {
            pending,
            seen,
            task,
        };
        tokio::time::timeout(limit, done.wait_for(|listed| *listed))
            .await
            .context("the children's watch did not list them in time")?
            .context("the children's watch stopped")?;
        Ok(watch)
    }

    /// Records that `instance`'s changed value was set to `value` now.
    fn expect(&self, instance: String, value: String) {
        let mut pending = self.pending.lock().unwrap();
        pending
            .entry(instance)
            .or_default()
            .push_back((value, Instant::now()));
    }

    /// Waits until every pending change is seen, for at most `limit`; returns what was seen
    /// since the last call and how many changes stayed unseen (then forgotten).
    async fn drain(&self, limit: Duration) -> (Shown, usize) {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline && !self.pending.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut pending = self.pending.lock().unwrap();
        let unseen = pending.values().map(VecDeque::len).sum();
        pending.clear();
        (std::mem::take(&mut *self.seen.lock().unwrap()), unseen)
    }
}

impl Drop for ChildWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The body of a [`ChildWatch`]; `listed` turns true once its first list is done.
async fn resolve(
    api: Api<DynamicObject>,
    workload: Workload,
    pending: Pending,
    seen: Seen,
    listed: tokio::sync::watch::Sender<bool>,
) {
    let mut events = watch(api).boxed();
    while let Some(event) = events.next().await {
        if let Ok(watcher::Event::InitDone) = event {
            listed.send_replace(true);
        }
        let Ok(watcher::Event::Apply(child) | watcher::Event::InitApply(child)) = event else {
            continue;
        };
        let Some((instance, value)) = workload.shown(&child) else {
            continue;
        };
        let mut pending = pending.lock().unwrap();
        let Some(queue) = pending.get_mut(&instance) else {
            continue;
        };
        // The child shows this change: it and every earlier one of the instance are done.
        let Some(position) = queue.iter().position(|(v, _)| *v == value) else {
            continue;
        };
        let now = Instant::now();
        let mut seen = seen.lock().unwrap();
        seen.first.get_or_insert(now);
        for (_, sent) in queue.drain(..=position) {
            seen.latencies.push((now - sent).as_secs_f64() * 1000.0);
        }
        if queue.is_empty() {
            pending.remove(&instance);
        }
    }
}

/// What one churn step does: `rate` changes a second for `length`, then up to `drain` for
/// their children to show them; `slo_ms` is the p99 a passing step keeps.
#[derive(Clone, Copy)]
pub struct StepPlan {
    pub rate: f64,
    pub length: Duration,
    pub drain: Duration,
    pub slo_ms: f64,
}

/// Changes random instances among `count` as `plan` says.
pub async fn churn_step(
    client: &kube::Client,
    namespace: &str,
    workload: Workload,
    watch: &ChildWatch,
    count: usize,
    plan: &StepPlan,
) -> Result<Step> {
    let StepPlan {
        rate,
        length,
        drain,
        slo_ms,
    } = *plan;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &workload.kind());
    let total = (rate * length.as_secs_f64()).round() as usize;
    let start = Instant::now();
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut changes = Vec::with_capacity(total);
    for i in 0..total {
        pace(start, i, rate).await;
        let instance = workload.name(rand::random_range(0..count));
        let value = format!("churn-{rate}-{i}");
        let permit = slots.clone().acquire_owned().await?;
        changes.push(set_value(&api, watch, workload, instance, value, permit));
    }
    for change in changes {
        change.await?.context("change an instance")?;
    }
    let achieved_rate = total as f64 / start.elapsed().as_secs_f64();
    let (Shown { mut latencies, .. }, unseen) = watch.drain(drain).await;
    latencies.extend(std::iter::repeat_n(drain.as_secs_f64() * 1000.0, unseen));
    latencies.sort_by(f64::total_cmp);
    let p99_ms = percentile(&latencies, 0.99);
    Ok(Step {
        target_rate: rate,
        achieved_rate,
        changes: total,
        p50_ms: percentile(&latencies, 0.50),
        p90_ms: percentile(&latencies, 0.90),
        p99_ms,
        max_ms: latencies.last().copied().unwrap_or(0.0),
        unseen,
        meets_slo: unseen == 0 && p99_ms <= slo_ms && achieved_rate >= 0.95 * rate,
        controller: None,
    })
}

/// Makes the workload's change to `instance` in a task holding `permit`, expecting its child
/// to show `value`.
fn set_value(
    api: &Api<DynamicObject>,
    watch: &ChildWatch,
    workload: Workload,
    instance: String,
    value: String,
    permit: OwnedSemaphorePermit,
) -> tokio::task::JoinHandle<kube::Result<()>> {
    watch.expect(instance.clone(), value.clone());
    let api = api.clone();
    tokio::spawn(async move {
        let patch = workload.change(&value);
        let patched = api
            .patch(&instance, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
        drop(permit);
        patched.map(drop)
    })
}

/// The `q` quantile of sorted values (nearest rank), 0 for none.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Changes every instance among `count` while no controller runs, returning once the server
/// has them all; `watch` then times how long a newly started controller takes to catch up.
pub async fn change_all(
    client: &kube::Client,
    namespace: &str,
    workload: Workload,
    watch: &ChildWatch,
    count: usize,
) -> Result<()> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &workload.kind());
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut changes = Vec::with_capacity(count);
    for i in 0..count {
        let permit = slots.clone().acquire_owned().await?;
        let value = format!("restart-{i}");
        changes.push(set_value(
            &api,
            watch,
            workload,
            workload.name(i),
            value,
            permit,
        ));
    }
    for change in changes {
        change.await?.context("change an instance")?;
    }
    Ok(())
}

/// A restarted controller catching up with changes made while it was down.
#[derive(Debug, Serialize)]
pub struct Restart {
    /// From the process's start to the first child showing its change: start-up, caches
    /// filled, the first reconcile's write seen, seconds.
    pub first_write_seconds: f64,
    /// From the process's start to every child showing its change, seconds.
    pub caught_up_seconds: f64,
    /// The baseline of the first figure: how long the driver's typed kube-runtime
    /// reflectors take to fill Stores of the instances and their children (`Store<Widget>`
    /// and `Store<ConfigMap>`, say) from the same server, side by side, seconds (what a
    /// controller's caches must list before it reconciles).
    pub typed_stores_fill_seconds: f64,
    /// The same lists filling dynrec's shared caches of whole objects in the driver, side by
    /// side, measured alternately with the typed Stores (the fastest of four fills each).
    pub dynrec_caches_fill_seconds: f64,
}

/// How fast caches fill from the instances' and children's lists, typed against dynrec's.
pub struct CacheFills {
    pub typed_seconds: f64,
    pub dynrec_seconds: f64,
}

/// Fills typed Stores and dynrec's caches of the instances and children in `namespace`
/// alternately, four times each (typed first in every other round), and keeps the fastest
/// fill of each (the VM's speed drifts; one order kept for every round favoured whichever
/// went second: 1.03× one way, 1.27× alternating, at 100,000 Widgets).
pub async fn cache_fills(
    client: &kube::Client,
    namespace: &str,
    workload: Workload,
) -> Result<CacheFills> {
    let mut fills = CacheFills {
        typed_seconds: f64::MAX,
        dynrec_seconds: f64::MAX,
    };
    for typed_first in [true, false, true, false] {
        let (typed, dynrec) = if typed_first {
            let typed = typed_stores_fill(client, namespace, workload).await?;
            (
                typed,
                dynrec_caches_fill(client, namespace, workload).await?,
            )
        } else {
            let dynrec = dynrec_caches_fill(client, namespace, workload).await?;
            (
                typed_stores_fill(client, namespace, workload).await?,
                dynrec,
            )
        };
        fills.typed_seconds = fills.typed_seconds.min(typed);
        fills.dynrec_seconds = fills.dynrec_seconds.min(dynrec);
    }
    Ok(fills)
}

/// Fills dynrec's shared caches of the instances and their children in `namespace` (whole
/// objects, as a `ChildReconciler` without projections keeps them), side by side, and
/// returns how long that took, seconds. The caches stop when the client is dropped.
async fn dynrec_caches_fill(
    client: &kube::Client,
    namespace: &str,
    workload: Workload,
) -> Result<f64> {
    let dynrec = dynrec::client::Client::in_namespaces(client.clone(), vec![namespace.into()]);
    let start = Instant::now();
    let kinds = workload.cached_kinds();
    let fills = kinds.iter().map(|(_, resource)| async {
        let gvk = Gvk::new(&resource.group, &resource.version, &resource.kind);
        let cache = dynrec.cache(&gvk).await?;
        if !cache.wait_until_ready().await {
            bail!("dynrec's cache of {gvk} stopped before it filled");
        }
        Ok(())
    });
    futures::future::try_join_all(fills).await?;
    Ok(start.elapsed().as_secs_f64())
}

/// Fills typed kube-runtime Stores of the instances and their children in `namespace`, side
/// by side as a controller's caches are, and returns how long that took, seconds.
async fn typed_stores_fill(
    client: &kube::Client,
    namespace: &str,
    workload: Workload,
) -> Result<f64> {
    let start = Instant::now();
    match workload {
        Workload::Widgets => {
            tokio::try_join!(
                fill::<Widget>(client, namespace),
                fill::<ConfigMap>(client, namespace),
            )?;
        }
        Workload::Webapps => {
            tokio::try_join!(
                fill::<WebApp>(client, namespace),
                fill::<Deployment>(client, namespace),
                fill::<Service>(client, namespace),
                fill::<Ingress>(client, namespace),
            )?;
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// Fills a typed Store of the `K`s of `namespace` from a list, then stops its watch.
async fn fill<K>(client: &kube::Client, namespace: &str) -> Result<()>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store::<K>();
    let api = Api::<K>::namespaced(client.clone(), namespace);
    let reflecting = tokio::spawn(reflector(writer, watch(api)).for_each(|_| async {}));
    let filled = store.wait_until_ready().await;
    reflecting.abort();
    filled.context("fill a typed store")
}

/// Waits until every change [`change_all`] made shows in its child, for at most `limit`;
/// returns how long that took from `start` (when the controller was started), and when the
/// first child showed its change.
pub async fn caught_up(
    watch: &ChildWatch,
    start: Instant,
    limit: Duration,
    fills: CacheFills,
) -> Result<Restart> {
    let (shown, unseen) = watch.drain(limit).await;
    if unseen > 0 {
        bail!("restart: {unseen} changes not in their children after {limit:?}");
    }
    let first = shown.first.context("restart: no child showed a change")?;
    Ok(Restart {
        first_write_seconds: (first - start).as_secs_f64(),
        caught_up_seconds: start.elapsed().as_secs_f64(),
        typed_stores_fill_seconds: fills.typed_seconds,
        dynrec_caches_fill_seconds: fills.dynrec_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A current-thread runtime with timers and I/O.
    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    /// A client whose connection worker is gone (it ran on a runtime since dropped), as every
    /// client is while a runtime shuts down: each of its requests fails at once.
    fn client_without_its_worker() -> kube::Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
        runtime().block_on(async { kube::Client::try_from(config).expect("a client") })
    }

    #[test]
    fn a_watch_whose_requests_fail_at_once_can_still_be_aborted() {
        let client = client_without_its_worker();
        let (finished, finishing) = std::sync::mpsc::channel();
        // On its own thread: a watch that never yields would hold it for good.
        std::thread::spawn(move || {
            runtime().block_on(async {
                let api = Api::namespaced_with(client, "loadtest", &Workload::Widgets.kind());
                let watching = tokio::spawn(track_ready(api, Arc::default()));
                tokio::time::sleep(Duration::from_millis(100)).await;
                watching.abort();
                assert!(watching.await.expect_err("aborted").is_cancelled());
            });
            finished.send(()).expect("the test waits");
        });
        finishing.recv_timeout(Duration::from_secs(30)).expect(
            "the watch retried its failing requests without yielding, so it could not be aborted",
        );
    }
}
