//! The watch hub: the history of committed changes that watches resume from, and the open
//! watchers of each kind, to which every change is published as it is committed.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use super::encoded::Encoded;
use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceKey;

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

/// One committed change, as watches see it. The objects are the store's own encoded
/// versions, shared with it.
#[derive(Debug)]
pub struct Change {
    /// The resourceVersion the change was committed at.
    pub rv: u64,
    /// The kind of the object.
    pub resource: ResourceKey,
    /// What happened.
    pub kind: ChangeKind,
    /// The object after the change (for a deletion: its last state).
    pub(crate) object: Encoded,
    /// The object before the change, for modifications.
    pub(crate) previous: Option<Encoded>,
}

impl Change {
    /// The object after the change (for a deletion: its last state).
    pub fn object(&self) -> Arc<Value> {
        self.object.value()
    }

    /// The object before the change, for modifications.
    pub fn previous(&self) -> Option<Arc<Value>> {
        self.previous.as_ref().map(Encoded::value)
    }
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

/// The change history and the watchers of every kind.
pub struct WatchHub {
    config: StoreConfig,
    history: VecDeque<Arc<Change>>,
    /// The newest resourceVersion no longer in the history.
    compacted_rv: u64,
    watchers: HashMap<ResourceKey, Vec<mpsc::Sender<Arc<Change>>>>,
    /// Set when the server stops: a watch opened after that ends at once.
    stopped: bool,
}

impl WatchHub {
    /// A hub with no history and no watchers.
    pub fn new(config: StoreConfig) -> Self {
        WatchHub {
            config,
            history: VecDeque::new(),
            compacted_rv: 0,
            watchers: HashMap::new(),
            stopped: false,
        }
    }

    /// Starts the history at `rv`: watches from an older resourceVersion have expired.
    pub fn start_history_at(&mut self, rv: u64) {
        self.compacted_rv = rv;
    }

    /// The changes of a kind after `rv`, or 410 Gone when the history no longer reaches back
    /// that far.
    pub fn replay(&self, key: &ResourceKey, rv: u64) -> ApiResult<Vec<Arc<Change>>> {
        if rv < self.compacted_rv {
            return Err(ApiError::expired(format!(
                "too old resource version: {rv} ({})",
                self.compacted_rv
            )));
        }
        Ok(self
            .history
            .iter()
            .filter(|change| change.rv > rv && &change.resource == key)
            .cloned()
            .collect())
    }

    /// Opens a watch of a kind: the receiver of its live changes (already ended once the
    /// hub is stopped).
    pub fn watch(&mut self, key: &ResourceKey) -> mpsc::Receiver<Arc<Change>> {
        let (sender, live) = mpsc::channel(self.config.watch_buffer);
        if !self.stopped {
            self.watchers.entry(key.clone()).or_default().push(sender);
        }
        live
    }

    /// Records a change and sends it to the watchers of its kind.
    pub fn publish(&mut self, change: Change) {
        let change = Arc::new(change);
        self.history.push_back(change.clone());
        while self.history.len() > self.config.history_limit {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted_rv = dropped.rv;
            }
        }
        if let Some(senders) = self.watchers.get_mut(&change.resource) {
            // A watcher that cannot take the change (too slow, or gone) is cut off.
            senders.retain(|sender| sender.try_send(change.clone()).is_ok());
        }
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

    /// Cuts off the watches of a kind that is no longer served.
    pub fn close_kind(&mut self, key: &ResourceKey) {
        self.watchers.remove(key);
    }

    /// Cuts off every open watch (clients must resume or re-list).
    pub fn close_all(&mut self) {
        self.watchers.clear();
    }

    /// Cuts off every open watch and ends every watch opened from now on: the server is
    /// stopping, and a graceful shutdown waits for every request, so a client that resumes
    /// its cut watch must not hold the shutdown for the watch's timeout.
    pub fn stop(&mut self) {
        self.stopped = true;
        self.close_all();
    }
}
