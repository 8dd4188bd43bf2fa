//! Shared per-GVK caches: one watch per kind per process, reference-counted, each filling an
//! indexed [`Store`] (by namespace and by controller).
//!
//! A cache keeps whole objects unless every reader that started or joined it declared the
//! fields it reads ([`CachedFields`]): then it keeps only those. A reader that needs more
//! widens it: the kind is listed again with the wider projection, and until that list is
//! done the cache serves only the readers it already covers ([`Cache::holds`]).

use std::{
    collections::HashMap,
    pin::pin,
    sync::{
        Arc, Weak,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Instant,
};

use futures::StreamExt;
use kube::{
    Api,
    api::{DynamicObject, ObjectMeta, TypeMeta},
    runtime::watcher,
};
use parking_lot::Mutex;
use tokio::{
    sync::{mpsc, watch},
    task::JoinHandle,
};
use tracing::{debug, info, warn};

use super::decoded;
use super::namespaced_watch::watch_namespaces;
use super::{CachedFields, ListOptions, Resolved, resolved::Kinds, store::Store, unseen::Unseen};
use crate::object::{Gvk, ObjectKey};

/// A change a shared cache saw.
#[derive(Clone, Debug)]
pub enum CacheEvent {
    /// An object was added or changed (also sent for every object on a relist).
    Applied(Arc<DynamicObject>),
    /// An object was deleted.
    Deleted(Arc<DynamicObject>),
    /// A (re)list finished: the cache holds the full current state.
    Resynced,
}

/// Where a cache is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheStatus {
    /// Listing for the first time.
    Starting,
    /// Listed and watching.
    Ready,
    /// Stopped: its last user went away or its kind was removed.
    Stopped,
}

struct State {
    resolved: Resolved,
    store: Store,
    /// Writes of this process the store has not received yet.
    unseen: Arc<Unseen>,
    status: watch::Sender<CacheStatus>,
    /// One sender a subscription; taken when the cache stops, which ends every subscription.
    events: Mutex<Option<Vec<mpsc::UnboundedSender<CacheEvent>>>>,
    /// The fields the stored objects hold: those of the last list done.
    held: Mutex<Arc<CachedFields>>,
    /// Whether `held` is whole (read on every read from the cache, without the lock).
    holds_whole: AtomicBool,
    /// The watch whose events the store takes; a widened cache's earlier watch is ignored.
    watch: AtomicU64,
    /// When the cache started, for the time its first list took.
    started: Instant,
}

impl State {
    fn stop(&self) {
        self.status.send_replace(CacheStatus::Stopped);
        self.unseen.clear();
        self.events.lock().take();
    }

    /// Sends the event to every subscription, forgetting those dropped.
    fn publish(&self, event: CacheEvent) {
        if let Some(senders) = self.events.lock().as_mut() {
            senders.retain(|sender| sender.send(event.clone()).is_ok());
        }
    }

    fn has_subscribers(&self) -> bool {
        self.events
            .lock()
            .as_ref()
            .is_some_and(|senders| senders.iter().any(|s| !s.is_closed()))
    }
}

/// Stops the watch when the last [`Cache`] handle goes.
struct Guard {
    state: Arc<State>,
    /// The running watch, and the fields it keeps: the union of what every handle acquired
    /// asked for.
    watching: Mutex<(JoinHandle<()>, CachedFields)>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.watching.lock().0.abort();
        self.state.stop();
        debug!(gvk = %self.state.resolved.gvk, "cache released");
    }
}

/// A handle on the shared cache of one kind; the watch runs while any handle lives.
#[derive(Clone)]
pub struct Cache {
    guard: Arc<Guard>,
}

impl Cache {
    fn state(&self) -> &State {
        &self.guard.state
    }

    /// The cached kind.
    pub fn gvk(&self) -> &Gvk {
        &self.state().resolved.gvk
    }

    /// The cached kind as resolved.
    pub fn resolved(&self) -> &Resolved {
        &self.state().resolved
    }

    /// Where the cache is in its life.
    pub fn status(&self) -> CacheStatus {
        *self.state().status.borrow()
    }

    /// Whether the cache has listed and is watching.
    pub fn is_ready(&self) -> bool {
        self.status() == CacheStatus::Ready
    }

    /// The fields the cached objects hold (see [`CachedFields`]).
    pub fn fields(&self) -> Arc<CachedFields> {
        self.state().held.lock().clone()
    }

    /// Whether the cached objects hold every field of `fields`: whether the cache may serve
    /// a reader that reads those.
    pub fn holds(&self, fields: &CachedFields) -> bool {
        let state = self.state();
        state.holds_whole.load(Ordering::Acquire) || state.held.lock().covers(fields)
    }

    /// Waits for the first list to finish; `false` if the cache stopped first.
    pub async fn wait_until_ready(&self) -> bool {
        let mut status = self.state().status.subscribe();
        let result = status.wait_for(|s| *s != CacheStatus::Starting).await;
        matches!(result.as_deref(), Ok(CacheStatus::Ready))
    }

    /// The cached object with this key.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        self.state().store.get(key)
    }

    /// Notes that this process wrote `object` (as the server returned it) while recording a
    /// reconcile's writes (see [`super::unseen`]); the cache then reports it unseen until it
    /// stores that version.
    pub(super) fn expect_written(&self, object: &DynamicObject) {
        let (Some(version), Ok(key)) = (
            object.metadata.resource_version.clone(),
            ObjectKey::of(object),
        ) else {
            return;
        };
        let state = self.state();
        state
            .unseen
            .expect(key.clone(), version, || state.store.get(&key));
        super::unseen::record(state.unseen.clone(), key);
    }

    /// The cached objects the options cover, in namespace and name order. Served from an
    /// index: the controller's objects with `controlled_by`, else the namespace's with
    /// `namespace`, else every cached object (see [`ListOptions`]).
    pub fn list(&self, options: &ListOptions) -> Vec<Arc<DynamicObject>> {
        self.state().store.list(options)
    }

    /// The cached objects `uid` controls in `namespace` (in every namespace when `None`), in
    /// namespace and name order: `list` with these options, served from the index by
    /// controller.
    pub fn list_controlled(&self, namespace: Option<&str>, uid: &str) -> Vec<Arc<DynamicObject>> {
        let in_namespace = |object: &DynamicObject| {
            namespace.is_none_or(|ns| object.metadata.namespace.as_deref() == Some(ns))
        };
        self.state().store.controlled_by(uid, in_namespace)
    }

    /// Every cached object, in no particular order: for a caller that needs no order, cheaper
    /// than `list` over a large cache, which sorts what it returns.
    pub fn objects(&self) -> Vec<Arc<DynamicObject>> {
        self.state().store.objects()
    }

    /// How many objects are cached.
    pub fn len(&self) -> usize {
        self.state().store.len()
    }

    /// Whether no object is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Changes from now on, every one in order; the subscription ends when the cache stops.
    pub fn subscribe(&self) -> CacheEvents {
        let (sender, receiver) = mpsc::unbounded_channel();
        if let Some(senders) = self.state().events.lock().as_mut() {
            senders.push(sender);
        }
        CacheEvents { receiver }
    }
}

/// A subscription to a cache's changes ([`Cache::subscribe`]).
///
/// No change is dropped: changes wait, without bound, until they are read, as client-go's
/// informers keep a slow handler's notifications. (A bounded channel dropped changes under a
/// burst, and a subscriber that lost some had to re-read the whole cache: at 100,000 objects
/// that took longer than the next thousand changes took to arrive, over and over.) Read it
/// steadily, or drop it.
pub struct CacheEvents {
    receiver: mpsc::UnboundedReceiver<CacheEvent>,
}

impl CacheEvents {
    /// The next change; `None` once the cache has stopped.
    pub async fn recv(&mut self) -> Option<CacheEvent> {
        self.receiver.recv().await
    }

    /// The next change if one is waiting.
    pub fn try_recv(&mut self) -> Option<CacheEvent> {
        self.receiver.try_recv().ok()
    }
}

impl futures::Stream for CacheEvents {
    type Item = CacheEvent;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<CacheEvent>> {
        self.receiver.poll_recv(cx)
    }
}

/// The registry of running caches, one per kind.
#[derive(Clone)]
pub(crate) struct Caches {
    inner: Arc<CachesInner>,
}

struct CachesInner {
    kube: kube::Client,
    kinds: watch::Receiver<Kinds>,
    /// The namespaces a namespaced kind's cache holds; every namespace when empty.
    namespaces: Vec<String>,
    /// Looked up on every read from a cache, hence the fast hasher.
    running: Mutex<HashMap<Gvk, Weak<Guard>, foldhash::fast::RandomState>>,
}

impl Caches {
    pub(crate) fn new(
        kube: kube::Client,
        kinds: watch::Receiver<Kinds>,
        namespaces: Vec<String>,
    ) -> Self {
        Self {
            inner: Arc::new(CachesInner {
                kube,
                kinds,
                namespaces,
                running: Mutex::default(),
            }),
        }
    }

    /// The running cache of a kind, if any.
    pub(crate) fn running(&self, gvk: &Gvk) -> Option<Cache> {
        let running = self.inner.running.lock();
        live(running.get(gvk)).map(|guard| Cache { guard })
    }

    /// The running cache of a kind if it is ready: what [`Caches::running`] and
    /// [`Cache::is_ready`] find together, looking at its status once.
    pub(crate) fn ready(&self, gvk: &Gvk) -> Option<Cache> {
        let guard = self.inner.running.lock().get(gvk)?.upgrade()?;
        let ready = *guard.state.status.borrow() == CacheStatus::Ready;
        ready.then_some(Cache { guard })
    }

    /// The kinds whose cache (one watch each) is running.
    pub(crate) fn kinds(&self) -> Vec<Gvk> {
        let running = self.inner.running.lock();
        running
            .iter()
            .filter(|(_, guard)| live(Some(guard)).is_some())
            .map(|(gvk, _)| gvk.clone())
            .collect()
    }

    /// A handle on the kind's cache keeping at least `fields`, starting its watch unless one
    /// runs; a running cache that keeps less is widened (see the module doc).
    pub(crate) fn acquire(&self, resolved: &Resolved, fields: &CachedFields) -> Cache {
        let mut running = self.inner.running.lock();
        if let Some(guard) = live(running.get(&resolved.gvk)) {
            self.widen(&guard, fields);
            return Cache { guard };
        }
        running.retain(|_, guard| guard.strong_count() > 0);
        let guard = Arc::new(self.start(resolved, fields));
        running.insert(resolved.gvk.clone(), Arc::downgrade(&guard));
        Cache { guard }
    }

    fn start(&self, resolved: &Resolved, fields: &CachedFields) -> Guard {
        info!(gvk = %resolved.gvk, %fields, "starting shared cache");
        let state = Arc::new(State {
            resolved: resolved.clone(),
            store: Store::default(),
            unseen: Arc::default(),
            status: watch::Sender::new(CacheStatus::Starting),
            events: Mutex::new(Some(Vec::new())),
            held: Mutex::new(Arc::new(fields.clone())),
            holds_whole: AtomicBool::new(fields.is_whole()),
            watch: AtomicU64::new(0),
            started: Instant::now(),
        });
        let task = self.spawn_watch(&state, fields.clone());
        Guard {
            state,
            watching: Mutex::new((task, fields.clone())),
        }
    }

    /// Makes the cache keep `fields` too: if it does not yet, stops its watch and lists the
    /// kind again keeping what it kept and `fields`.
    fn widen(&self, guard: &Guard, fields: &CachedFields) {
        let mut watching = guard.watching.lock();
        let (task, kept) = &mut *watching;
        if kept.covers(fields) {
            return;
        }
        kept.union(fields);
        info!(gvk = %guard.state.resolved.gvk, fields = %kept, "widening a shared cache: listing again");
        task.abort();
        *task = self.spawn_watch(&guard.state, kept.clone());
    }

    /// Spawns a watch filling the store with objects keeping `fields`; the store takes only
    /// the events of the watch spawned last.
    fn spawn_watch(&self, state: &Arc<State>, fields: CachedFields) -> JoinHandle<()> {
        let resolved = &state.resolved;
        let watch = Watch {
            number: state.watch.fetch_add(1, Ordering::AcqRel) + 1,
            fields: Arc::new(fields),
        };
        let kube = self.inner.kube.clone();
        let kinds = self.inner.kinds.clone();
        match self.inner.namespaces.as_slice() {
            [namespace] if resolved.namespaced => {
                let api = Api::namespaced_with(kube, namespace, &resolved.resource);
                let events = decoded::watch(api);
                tokio::spawn(run(state.clone(), events, kinds, watch))
            }
            namespaces if resolved.namespaced && !namespaces.is_empty() => {
                let apis = namespaces
                    .iter()
                    .map(|ns| {
                        let api = Api::namespaced_with(kube.clone(), ns, &resolved.resource);
                        (ns.clone(), api)
                    })
                    .collect();
                let held = {
                    let state = Arc::downgrade(state);
                    move |ns: &str| match state.upgrade() {
                        Some(state) => state.store.list(&ListOptions::default().namespace(ns)),
                        None => Vec::new(),
                    }
                };
                let events = watch_namespaces(apis, held);
                tokio::spawn(run(state.clone(), events, kinds, watch))
            }
            _ => {
                let api = Api::all_with(kube, &resolved.resource);
                let events = decoded::watch(api);
                tokio::spawn(run(state.clone(), events, kinds, watch))
            }
        }
    }
}

fn live(guard: Option<&Weak<Guard>>) -> Option<Arc<Guard>> {
    guard
        .and_then(Weak::upgrade)
        .filter(|g| *g.state.status.borrow() != CacheStatus::Stopped)
}

/// One watch of a cache: which it is, and the fields it keeps.
struct Watch {
    number: u64,
    fields: Arc<CachedFields>,
}

/// Watches one kind into the store until the kind is removed from discovery.
async fn run(
    state: Arc<State>,
    events: impl futures::Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>>,
    mut kinds: watch::Receiver<Kinds>,
    watch: Watch,
) {
    let gvk = state.resolved.gvk.clone();
    let types = TypeMeta {
        api_version: gvk.api_version(),
        kind: gvk.kind.clone(),
    };
    let mut events = pin!(events);
    loop {
        tokio::select! {
            changed = kinds.changed() => {
                if changed.is_err() {
                    debug!(%gvk, "client dropped; stopping its cache");
                    break;
                }
                if !kinds.borrow_and_update().contains_key(&gvk) {
                    info!(%gvk, "kind removed; stopping its cache");
                    break;
                }
            }
            event = events.next() => match event {
                Some(Ok(event)) => {
                    let event = event.modify(|o| tidy(o, &types, &watch.fields));
                    if state.watch.load(Ordering::Acquire) != watch.number {
                        // Widened meanwhile: a later watch fills the store.
                        return;
                    }
                    apply(&state, shared(event), &watch.fields);
                }
                Some(Err(err)) => warn!(%gvk, %err, "watch failed; retrying"),
                None => break,
            },
        }
    }
    state.stop();
}

/// Keeps only the managedFields entries of server-side apply and the fields the cache keeps,
/// and fills in apiVersion/kind (list items may lack them). The body is compact as decoded
/// ([`decoded::Decoded`]).
fn tidy(object: &mut DynamicObject, types: &TypeMeta, fields: &CachedFields) {
    fields.project(object);
    keep_applied_fields(&mut object.metadata);
    shrink_lists(&mut object.metadata);
    if object.types.is_none() {
        object.types = Some(types.clone());
    }
}

/// Drops the managedFields entries of updates, which no reader of the cache needs, and keeps
/// those of server-side apply: an `ApplyingObjectManager` reads its own entry to remove the
/// fields it applied before and no longer desires.
fn keep_applied_fields(metadata: &mut ObjectMeta) {
    let applied: Vec<_> = metadata
        .managed_fields
        .take()
        .into_iter()
        .flatten()
        .filter(|entry| entry.operation.as_deref() == Some("Apply"))
        .collect();
    metadata.managed_fields = (!applied.is_empty()).then_some(applied);
}

/// The metadata's lists holding room for their items only: a decoded list keeps the room it
/// grew while being read (four ownerReferences, some 300 bytes more than one needs).
fn shrink_lists(metadata: &mut ObjectMeta) {
    metadata.owner_references.as_mut().map(Vec::shrink_to_fit);
    metadata.finalizers.as_mut().map(Vec::shrink_to_fit);
}

/// Moves the event's object behind an `Arc`, shared by the store and the subscribers.
fn shared(event: watcher::Event<DynamicObject>) -> watcher::Event<Arc<DynamicObject>> {
    use watcher::Event::*;
    match event {
        Apply(o) => Apply(Arc::new(o)),
        Delete(o) => Delete(Arc::new(o)),
        Init => Init,
        InitApply(o) => InitApply(Arc::new(o)),
        InitDone => InitDone,
    }
}

fn apply(state: &State, event: watcher::Event<Arc<DynamicObject>>, fields: &Arc<CachedFields>) {
    state.store.apply(&event);
    if matches!(event, watcher::Event::InitDone) {
        // The store now holds what this watch listed.
        *state.held.lock() = fields.clone();
        state
            .holds_whole
            .store(fields.is_whole(), Ordering::Release);
    }
    match &event {
        watcher::Event::Apply(object) => state.unseen.saw(object),
        watcher::Event::Delete(object) => {
            if let Ok(key) = ObjectKey::of(object.as_ref()) {
                state.unseen.forget(&key);
            }
        }
        watcher::Event::InitDone => state.unseen.clear(),
        watcher::Event::Init | watcher::Event::InitApply(_) => {}
    }
    if matches!(event, watcher::Event::InitDone) {
        state.status.send_if_modified(|status| {
            let starting = *status == CacheStatus::Starting;
            if starting {
                *status = CacheStatus::Ready;
                info!(
                    gvk = %state.resolved.gvk,
                    objects = state.store.len(),
                    seconds = state.started.elapsed().as_secs_f64(),
                    "cache filled"
                );
            }
            starting
        });
    }
    if !state.has_subscribers() {
        return;
    }
    let event = match event {
        watcher::Event::Apply(o) | watcher::Event::InitApply(o) => CacheEvent::Applied(o),
        watcher::Event::Delete(o) => CacheEvent::Deleted(o),
        watcher::Event::InitDone => CacheEvent::Resynced,
        watcher::Event::Init => return,
    };
    state.publish(event);
}
