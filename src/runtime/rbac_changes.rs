//! When to ask again about a missing permission: when a Role, ClusterRole, RoleBinding or
//! ClusterRoleBinding changes (the Manager watches their metadata), a moment later so that
//! a burst of writes — `kubectl apply` of a Role and its binding — is asked about once; and,
//! as a fallback, on a slow poll (for authorizers other than RBAC, and a missed event), or
//! every [`RECHECK`] while the RBAC objects cannot be watched (dynrec may not list them).

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt, stream};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tracing::{debug, info};

/// How long a controller missing a permission waits before it asks again while the RBAC
/// objects cannot be watched.
pub const RECHECK: Duration = Duration::from_secs(5);
/// How often a missing permission is asked about while the RBAC objects are watched and
/// none changed.
pub const FALLBACK_RECHECK: Duration = Duration::from_secs(60);
/// How long after an RBAC change a check waits: for the rest of a burst of writes, and for
/// the authorizer, which sees a change through its own watch.
pub const DEBOUNCE: Duration = Duration::from_millis(500);

/// The four RBAC kinds, in the order of [`State::watched`].
const KINDS: [&str; 4] = [
    "roles",
    "clusterroles",
    "rolebindings",
    "clusterrolebindings",
];

/// Changes of the RBAC objects, as a counter that grows with each. Cheap to clone.
#[derive(Clone)]
pub struct RbacChanges {
    changes: Arc<watch::Sender<u64>>,
    state: Arc<Mutex<State>>,
}

/// Whether each kind is watched (listed, and no error since; `None` until either).
#[derive(Default)]
struct State {
    watched: [Option<bool>; 4],
}

impl State {
    fn all_watched(&self) -> bool {
        self.watched.iter().all(|w| *w == Some(true))
    }
}

impl Default for RbacChanges {
    fn default() -> Self {
        Self {
            changes: Arc::new(watch::channel(0).0),
            state: Arc::default(),
        }
    }
}

impl RbacChanges {
    /// The number of changes seen so far: a permission checked at one count is still
    /// answered alike while the count stays (up to the fallback poll).
    pub fn count(&self) -> u64 {
        *self.changes.borrow()
    }

    /// Whether every RBAC kind is watched, so that a grant is seen when it is written.
    pub fn watched(&self) -> bool {
        self.state.lock().all_watched()
    }

    /// How long an answer about a missing permission holds when nothing changes:
    /// [`FALLBACK_RECHECK`] while RBAC is watched, [`RECHECK`] while it is not.
    pub fn recheck_after(&self) -> Duration {
        match self.watched() {
            true => FALLBACK_RECHECK,
            false => RECHECK,
        }
    }

    /// Waits until it is time to ask again about a missing permission checked when the
    /// count was `since`: a change after that (and [`DEBOUNCE`] after it), or
    /// [`Self::recheck_after`].
    pub async fn wait(&self, since: u64) {
        let mut changes = self.changes.subscribe();
        let changed = async move { changes.wait_for(|count| *count != since).await.is_ok() };
        tokio::select! {
            changed = changed => {
                if changed {
                    tokio::time::sleep(DEBOUNCE).await;
                }
            }
            () = tokio::time::sleep(self.recheck_after()) => {}
        }
    }

    /// Records a change (an RBAC object written or deleted, or listed again).
    fn changed(&self) {
        self.changes.send_modify(|count| *count += 1);
    }

    /// Watches the metadata of the four RBAC kinds with `kube` until dropped.
    pub(super) async fn watch(self, kube: kube::Client) {
        let events = stream::select_all([
            metadata_events::<Role>(&kube, 0),
            metadata_events::<ClusterRole>(&kube, 1),
            metadata_events::<RoleBinding>(&kube, 2),
            metadata_events::<ClusterRoleBinding>(&kube, 3),
        ]);
        let mut events = std::pin::pin!(events);
        while let Some((kind, event)) = events.next().await {
            match event {
                Ok(Event::Apply(_) | Event::Delete(_)) => self.changed(),
                Ok(Event::InitDone) => {
                    let before = self.state.lock().watched[kind].replace(true);
                    if before != Some(true) && self.watched() {
                        info!("RBAC objects watched: permission checks follow their changes");
                    }
                    // A relist may hide changes the broken watch missed.
                    self.changed();
                }
                Ok(Event::Init | Event::InitApply(_)) => {}
                Err(err) => {
                    let before = self.state.lock().watched[kind].replace(false);
                    match before {
                        Some(false) => {
                            debug!(%err, kind = KINDS[kind], "cannot watch RBAC objects")
                        }
                        _ => {
                            info!(%err, kind = KINDS[kind], "RBAC objects not watched: missing permissions are asked about every 5 s")
                        }
                    }
                }
            }
        }
    }
}

/// The metadata watch events of one RBAC kind, tagged with its index in [`KINDS`].
fn metadata_events<K>(
    kube: &kube::Client,
    index: usize,
) -> std::pin::Pin<Box<dyn Stream<Item = (usize, WatchEvent)> + Send>>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Default,
{
    let api: Api<PartialObjectMeta<K>> = Api::all(kube.clone());
    watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .map(move |event| (index, event.map(erase)))
        .boxed()
}

/// A watch event with the object left out.
type WatchEvent = Result<Event<()>, watcher::Error>;

/// The event without its object.
fn erase<K>(event: Event<K>) -> Event<()> {
    match event {
        Event::Apply(_) => Event::Apply(()),
        Event::Delete(_) => Event::Delete(()),
        Event::Init => Event::Init,
        Event::InitApply(_) => Event::InitApply(()),
        Event::InitDone => Event::InitDone,
    }
}
