//! The clients a reconciler works with: one `Config` per cluster (see `WithConfig`).

use std::sync::Arc;
use std::time::Duration;

use crate::client::{ApiReader, Client, EventRecorder, Identity};
use crate::tracker::Tracker;

/// How often a queue re-adds every key it knows unless configured otherwise (10 hours,
/// controller-runtime's default sync period). It lives here, not in `runtime`, because a
/// [`Config`]'s tracker lease follows it; `runtime` re-exports it.
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(10 * 60 * 60);

/// A client, an uncached reader, an event recorder and a tracker, for one cluster.
/// Cheap to clone.
#[derive(Clone)]
pub struct Config {
    /// Reads (cache-backed where a cache runs) and writes.
    pub client: Client,
    /// Reads that always go to the API server.
    pub api_reader: ApiReader,
    /// Records Kubernetes Events on reconciled objects.
    pub recorder: EventRecorder,
    /// Records which objects each reconciled object watches.
    pub tracker: Arc<Tracker>,
}

impl Config {
    /// A config over `client`, recording events as `controller`, with a tracker whose lease
    /// is twice the default resync period. A manager's [`Manager::config`] follows the
    /// manager's own resync setting instead.
    ///
    /// [`Manager::config`]: crate::runtime::Manager::config
    pub fn new(client: Client, controller: &str) -> Self {
        Self::with_resync(client, controller, DEFAULT_RESYNC)
    }

    /// A config whose tracker's lease is twice `resync`, the period at which the queue
    /// re-adds every object (so a live observer renews its tracks before they expire).
    pub(crate) fn with_resync(client: Client, controller: &str, resync: Duration) -> Self {
        Self {
            api_reader: client.api_reader(),
            recorder: EventRecorder::new(&client, controller),
            tracker: Arc::new(Tracker::for_resync(resync)),
            client,
        }
    }

    /// Whether `other` is a clone of this config: the same client (caches) and tracker.
    pub fn is_same(&self, other: &Config) -> bool {
        self.client.is_same(&other.client) && Arc::ptr_eq(&self.tracker, &other.tracker)
    }

    /// The same config acting as `identity`: reads, writes and Events go through a client
    /// impersonating it (sharing this config's caches, see [`Client::acting_as`]); the
    /// tracker stays shared.
    pub fn acting_as(&self, identity: Identity) -> Self {
        let client = self.client.acting_as(identity);
        Self {
            api_reader: client.api_reader(),
            recorder: self.recorder.through(&client),
            tracker: self.tracker.clone(),
            client,
        }
    }

    /// The same clients with a new, empty tracker whose tracks last `lease`.
    pub fn with_new_tracker(&self, lease: Duration) -> Self {
        Self {
            tracker: Arc::new(Tracker::new(lease)),
            ..self.clone()
        }
    }
}
