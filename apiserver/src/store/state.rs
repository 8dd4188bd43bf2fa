//! The state of the server, composed of parts that each own their data: the objects and
//! their indexes, the watch hub, the garbage-collection and autoscaler queues, the served kinds and the
//! durable storage. Its methods here read objects and commit changes, which every write
//! goes through; the writes themselves are in the sibling files.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::autoscale_queue::AutoscaleQueue;
use super::encoded::Encoded;
use super::gc_queue::GcQueue;
use super::kinds::Kinds;
use super::objects::Objects;
use super::persist::Storage;
use super::watch::{Change, ChangeKind, StoreConfig, Subscription, WatchHub, WatchStart};
use crate::error::ApiResult;
use crate::meta;
use crate::resources::{Registry, ResourceKey, namespace_resource_key};

/// All state of the server.
pub struct State {
    pub(super) kinds: Kinds,
    pub(super) objects: Objects,
    pub(super) watch: WatchHub,
    pub(super) gc_queue: GcQueue,
    pub(super) autoscale_queue: AutoscaleQueue,
    pub(super) storage: Storage,
    /// The warnings gathered by the current write.
    pub(super) warnings: Vec<String>,
    /// The certificate namespaces' `kube-root-ca.crt` carries, once the server serves TLS.
    pub(super) root_ca: Option<String>,
}

impl State {
    /// A store with the built-in kinds and nothing stored.
    pub(super) fn empty(config: StoreConfig, storage: Storage) -> Self {
        State {
            kinds: Kinds::builtin(),
            objects: Objects::default(),
            watch: WatchHub::new(config),
            gc_queue: GcQueue::default(),
            autoscale_queue: AutoscaleQueue::default(),
            storage,
            warnings: Vec::new(),
            root_ca: None,
        }
    }

    /// The served kinds.
    pub fn registry(&self) -> &Registry {
        self.kinds.registry()
    }

    /// Refuses writes once durable storage has failed.
    pub fn check_writable(&self) -> ApiResult<()> {
        self.storage.check_writable()
    }

    /// Makes every change since the last flush durable (a no-op in memory).
    pub fn flush(&mut self) -> ApiResult<()> {
        self.storage.flush(self.objects.resource_version())
    }

    /// The latest committed resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.objects.resource_version()
    }

    /// One object.
    pub fn get(&self, key: &ResourceKey, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.objects.get(key, namespace, name)
    }

    /// The stored objects, to read.
    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    /// Registers a watcher of a kind.
    pub fn subscribe(&mut self, key: &ResourceKey, start: WatchStart) -> ApiResult<Subscription> {
        let initial = match start {
            WatchStart::After(rv) => self.watch.replay(key, rv)?,
            WatchStart::Snapshot => self
                .objects
                .list_stored(key, None, None)
                .map(|object| {
                    Arc::new(Change {
                        rv: meta::resource_version(&object.value()).parse().unwrap_or(0),
                        resource: key.clone(),
                        kind: ChangeKind::Added,
                        object: object.clone(),
                        previous: None,
                    })
                })
                .collect(),
        };
        Ok(Subscription {
            initial,
            initial_rv: self.objects.resource_version(),
            live: self.watch.watch(key),
        })
    }

    /// Number of open watches per kind.
    pub fn open_watches(&self) -> BTreeMap<ResourceKey, usize> {
        self.watch.open_watches()
    }

    /// Cuts off every open watch (clients must resume or re-list).
    pub fn close_all_watches(&mut self) {
        self.watch.close_all();
    }

    /// Cuts off every open watch and ends every watch opened after (the server is stopping).
    pub fn stop_watches(&mut self) {
        self.watch.stop();
    }

    /// The warnings gathered by the current write, emptied.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Stores an object (new or changed) and publishes the change.
    pub(super) fn commit_put(
        &mut self,
        key: &ResourceKey,
        object: Value,
        kind: ChangeKind,
    ) -> Arc<Value> {
        let encoded = Encoded::new(key, &object);
        let previous = self.objects.put(key, &object, encoded.clone());
        self.storage.record_put(key, &object);
        self.publish(key, kind, encoded, previous);
        Arc::new(object)
    }

    /// Removes an object; `last` is its final state, which the DELETED change carries
    /// (with a new resourceVersion).
    pub(super) fn commit_remove(&mut self, key: &ResourceKey, mut last: Value) -> Arc<Value> {
        let removed = self.objects.remove(key, &last);
        let rv = self.objects.next_rv();
        meta::set_meta(&mut last, "resourceVersion", Value::from(rv.to_string()));
        self.storage.record_remove(key, &last);
        self.publish(key, ChangeKind::Deleted, Encoded::new(key, &last), removed);
        let last = Arc::new(last);
        self.after_removal(key, &last);
        last
    }

    /// Publishes a change committed at the latest resourceVersion.
    pub(super) fn publish(
        &mut self,
        key: &ResourceKey,
        kind: ChangeKind,
        object: Encoded,
        previous: Option<Encoded>,
    ) {
        self.watch.publish(Change {
            rv: self.objects.resource_version(),
            resource: key.clone(),
            kind,
            object,
            previous,
        });
    }

    /// The namespace object, when it exists.
    pub(super) fn namespace(&self, name: &str) -> Option<Arc<Value>> {
        self.get(&namespace_resource_key(), "", name)
    }
}
