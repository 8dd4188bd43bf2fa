//! The object store: every object, one global resourceVersion counter, the change history
//! that watches replay, and the watchers themselves. All writes happen under one lock, so
//! every operation is linearizable and changes are seen in resourceVersion order.

mod builtin_defaults;
mod cluster;
mod crd_defaults;
mod delete;
mod events;
mod eviction;
mod gc;
mod kinds;
mod managed;
mod persist;
mod schemas;
mod services;
mod write;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::resources::{Registry, ResourceKey, namespace_resource_key};

pub use delete::DeleteOutcome;
pub use delete::{DeleteOptions, Propagation};
pub use persist::StorageError;
pub use schemas::FieldValidation;
pub use write::{PatchBody, Target, WriteOptions, apply_patch};

/// (namespace, name) of an object within its kind; namespace is "" for cluster-scoped kinds.
pub type ObjectKey = (String, String);

/// Where one object lives.
pub type Location = (ResourceKey, ObjectKey);

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

/// One committed change, as watches see it.
#[derive(Debug)]
pub struct Change {
    /// The resourceVersion the change was committed at.
    pub rv: u64,
    /// The kind of the object.
    pub resource: ResourceKey,
    /// What happened.
    pub kind: ChangeKind,
    /// The object after the change (for a deletion: its last state).
    pub object: Arc<Value>,
    /// The object before the change, for modifications.
    pub previous: Option<Arc<Value>>,
}

/// Tunables of the store.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// How many changes are kept for watches to resume from.
    pub history_limit: usize,
    /// How many undelivered changes a watcher may hold before it is cut off.
    pub watch_buffer: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history_limit: 10_000,
            watch_buffer: 4_096,
        }
    }
}

/// Deferred work that deletion (or a dependent of a missing owner) triggers: garbage
/// collection, namespace and CRD clean-up.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Work {
    /// An object with this uid is gone: its dependents may need collecting.
    OwnerGone(String),
    /// The object with this uid is being deleted in the foreground.
    Foreground(String),
    /// The namespace is terminating: delete its contents, then it.
    Namespace(String),
    /// The CRD is being deleted: delete its instances, then it.
    Crd(String),
}

/// How a watch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchStart {
    /// Replay every change after this resourceVersion.
    After(u64),
    /// Send the current objects as ADDED first.
    Snapshot,
}

/// What a new watch receives: the changes to send first, then the live feed.
pub struct Subscription {
    /// Changes to send before the live ones (replayed history or a snapshot as ADDED).
    pub initial: Vec<Arc<Change>>,
    /// The resourceVersion the initial part is current up to.
    pub initial_rv: u64,
    /// Live changes; ends when the watcher is cut off or its kind goes away.
    pub live: mpsc::Receiver<Arc<Change>>,
}

/// All state of the server.
pub struct State {
    /// The served kinds.
    pub registry: Registry,
    config: StoreConfig,
    rv: u64,
    objects: HashMap<ResourceKey, BTreeMap<ObjectKey, Arc<Value>>>,
    by_uid: HashMap<String, Location>,
    dependents: HashMap<String, BTreeSet<Location>>,
    history: VecDeque<Arc<Change>>,
    compacted_rv: u64,
    watchers: HashMap<ResourceKey, Vec<mpsc::Sender<Arc<Change>>>>,
    pending: VecDeque<Work>,
    persistence: Option<persist::Persistence>,
    storage_failure: Option<String>,
    schemas: HashMap<(String, String, String), Arc<crate::schema::StructuralSchema>>,
    warnings: Vec<String>,
    /// The certificate namespaces' `kube-root-ca.crt` carries, once the server serves TLS.
    root_ca: Option<String>,
}

impl State {
    /// An in-memory store with the built-in kinds and the default namespaces.
    pub fn new(config: StoreConfig) -> Self {
        let mut state = Self::empty(config);
        state.create_default_namespaces();
        state.create_cluster_objects();
        state
    }

    /// A store kept in `dir` (created when missing), holding what was stored there before.
    pub fn open(config: StoreConfig, dir: &std::path::Path) -> Result<Self, StorageError> {
        let (persistence, loaded) = persist::Persistence::open(dir)?;
        let mut state = Self::empty(config);
        state.rv = loaded.resource_version;
        state.compacted_rv = loaded.resource_version;
        for (key, object) in loaded.objects {
            let object_key = (
                meta::namespace(&object).to_string(),
                meta::name(&object).to_string(),
            );
            let object = Arc::new(object);
            state.index(&object, &key, &object_key);
            state
                .objects
                .entry(key.clone())
                .or_default()
                .insert(object_key, object.clone());
            state.after_load_of_kind(&key, &object);
        }
        state.persistence = Some(persistence);
        state.create_default_namespaces();
        state.create_cluster_objects();
        if let Some(failure) = state.flush().err() {
            return Err(StorageError::from_message(failure.message));
        }
        Ok(state)
    }

    fn empty(config: StoreConfig) -> Self {
        State {
            registry: Registry::with_builtins(),
            config,
            rv: 0,
            objects: HashMap::new(),
            by_uid: HashMap::new(),
            dependents: HashMap::new(),
            history: VecDeque::new(),
            compacted_rv: 0,
            watchers: HashMap::new(),
            pending: VecDeque::new(),
            persistence: None,
            storage_failure: None,
            schemas: HashMap::new(),
            warnings: Vec::new(),
            root_ca: None,
        }
    }

    fn create_default_namespaces(&mut self) {
        let Some(info) = self.registry.get("", "v1", "namespaces") else {
            return;
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            if self.namespace(ns).is_some() {
                continue;
            }
            let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            if let Err(err) = self.create(&info, None, body, &WriteOptions::default()) {
                tracing::error!(%err, namespace = ns, "cannot create a default namespace");
            }
        }
    }

    /// Refuses writes once durable storage has failed.
    pub fn check_writable(&self) -> ApiResult<()> {
        match &self.storage_failure {
            Some(failure) => Err(ApiError::storage_unavailable(failure)),
            None => Ok(()),
        }
    }

    /// Makes every change since the last flush durable (a no-op in memory).
    pub fn flush(&mut self) -> ApiResult<()> {
        let rv = self.rv;
        let Some(persistence) = self.persistence.as_mut() else {
            return Ok(());
        };
        if let Err(failure) = persistence.flush(rv) {
            tracing::error!(%failure, "durable storage failed; refusing further writes");
            self.storage_failure = Some(failure.to_string());
            return Err(ApiError::internal(failure.to_string()));
        }
        Ok(())
    }

    /// The latest committed resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// One object.
    pub fn get(&self, key: &ResourceKey, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.get_ref(key, namespace, name).cloned()
    }

    /// One object, borrowed.
    pub fn get_ref(&self, key: &ResourceKey, namespace: &str, name: &str) -> Option<&Arc<Value>> {
        self.objects
            .get(key)?
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Objects of a kind in one namespace (or all, with `None`), in (namespace, name) order,
    /// starting after `after` when given.
    pub fn list<'a>(
        &'a self,
        key: &ResourceKey,
        namespace: Option<&str>,
        after: Option<&ObjectKey>,
    ) -> impl Iterator<Item = &'a Arc<Value>> + use<'a> {
        use std::ops::Bound;
        let start = match (after, namespace) {
            (Some(after), _) => Bound::Excluded(after.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let ns = namespace.map(str::to_string);
        self.objects
            .get(key)
            .into_iter()
            .flat_map(move |objects| objects.range((start.clone(), Bound::Unbounded)))
            .take_while(move |((object_ns, _), _)| ns.as_ref().is_none_or(|ns| ns == object_ns))
            .map(|(_, object)| object)
    }

    /// Number of objects of a kind.
    pub fn count(&self, key: &ResourceKey) -> usize {
        self.objects.get(key).map_or(0, BTreeMap::len)
    }

    /// Registers a watcher of a kind.
    pub fn subscribe(&mut self, key: &ResourceKey, start: WatchStart) -> ApiResult<Subscription> {
        let initial = match start {
            WatchStart::After(rv) if rv < self.compacted_rv => {
                return Err(ApiError::expired(format!(
                    "too old resource version: {rv} ({})",
                    self.compacted_rv
                )));
            }
            WatchStart::After(rv) => self
                .history
                .iter()
                .filter(|change| change.rv > rv && &change.resource == key)
                .cloned()
                .collect(),
            WatchStart::Snapshot => self
                .list(key, None, None)
                .map(|object| {
                    Arc::new(Change {
                        rv: meta::resource_version(object).parse().unwrap_or(0),
                        resource: key.clone(),
                        kind: ChangeKind::Added,
                        object: object.clone(),
                        previous: None,
                    })
                })
                .collect(),
        };
        let (sender, live) = mpsc::channel(self.config.watch_buffer);
        self.watchers.entry(key.clone()).or_default().push(sender);
        Ok(Subscription {
            initial,
            initial_rv: self.rv,
            live,
        })
    }

    /// Number of open watches per kind.
    pub fn open_watches(&self) -> BTreeMap<ResourceKey, usize> {
        self.watchers
            .iter()
            .map(|(key, senders)| {
                let open = senders.iter().filter(|s| !s.is_closed()).count();
                (key.clone(), open)
            })
            .filter(|(_, open)| *open > 0)
            .collect()
    }

    /// Cuts off every open watch (clients must resume or re-list).
    pub fn close_all_watches(&mut self) {
        self.watchers.clear();
    }

    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    /// Stores an object (new or changed) and publishes the change.
    fn commit_put(&mut self, key: &ResourceKey, object: Value, kind: ChangeKind) -> Arc<Value> {
        let object_key = (
            meta::namespace(&object).to_string(),
            meta::name(&object).to_string(),
        );
        let object = Arc::new(object);
        let previous = self
            .objects
            .entry(key.clone())
            .or_default()
            .insert(object_key.clone(), object.clone());
        if let Some(previous) = &previous {
            self.unindex(previous, key, &object_key);
        }
        self.index(&object, key, &object_key);
        if let Some(persistence) = self.persistence.as_mut() {
            persistence.record_put(key, &object);
        }
        self.publish(key, kind, object.clone(), previous);
        object
    }

    /// Removes an object; `last` is its final state, which the DELETED change carries
    /// (with a new resourceVersion).
    fn commit_remove(&mut self, key: &ResourceKey, mut last: Value) -> Arc<Value> {
        let object_key = (
            meta::namespace(&last).to_string(),
            meta::name(&last).to_string(),
        );
        let removed = self
            .objects
            .get_mut(key)
            .and_then(|objects| objects.remove(&object_key));
        if let Some(removed) = &removed {
            self.unindex(removed, key, &object_key);
        }
        let rv = self.next_rv();
        meta::set_meta(&mut last, "resourceVersion", Value::from(rv.to_string()));
        let last = Arc::new(last);
        if let Some(persistence) = self.persistence.as_mut() {
            persistence.record_remove(key, &last);
        }
        self.publish(key, ChangeKind::Deleted, last.clone(), removed);
        self.after_removal(key, &last);
        last
    }

    fn index(&mut self, object: &Value, key: &ResourceKey, object_key: &ObjectKey) {
        let location = (key.clone(), object_key.clone());
        self.by_uid
            .insert(meta::uid(object).to_string(), location.clone());
        for (owner, _) in meta::owner_refs(object) {
            self.dependents
                .entry(owner)
                .or_default()
                .insert(location.clone());
        }
    }

    fn unindex(&mut self, object: &Value, key: &ResourceKey, object_key: &ObjectKey) {
        self.by_uid.remove(meta::uid(object));
        let location = (key.clone(), object_key.clone());
        for (owner, _) in meta::owner_refs(object) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(&location);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
    }

    fn publish(
        &mut self,
        key: &ResourceKey,
        kind: ChangeKind,
        object: Arc<Value>,
        previous: Option<Arc<Value>>,
    ) {
        let change = Arc::new(Change {
            rv: self.rv,
            resource: key.clone(),
            kind,
            object,
            previous,
        });
        self.history.push_back(change.clone());
        while self.history.len() > self.config.history_limit {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted_rv = dropped.rv;
            }
        }
        if let Some(senders) = self.watchers.get_mut(key) {
            // A watcher that cannot take the change (too slow, or gone) is cut off.
            senders.retain(|sender| sender.try_send(change.clone()).is_ok());
        }
    }

    /// The object with this uid.
    fn by_uid(&self, uid: &str) -> Option<(Location, Arc<Value>)> {
        let location = self.by_uid.get(uid)?;
        let object = self.get(&location.0, &location.1.0, &location.1.1)?;
        Some((location.clone(), object))
    }

    /// The namespace object, when it exists.
    fn namespace(&self, name: &str) -> Option<Arc<Value>> {
        self.get(&namespace_resource_key(), "", name)
    }
}
