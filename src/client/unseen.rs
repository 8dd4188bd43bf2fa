//! Writes a cache has not seen yet, so that a controller does not reconcile an object from a
//! cache that still lacks what its last reconcile wrote.
//!
//! A reconcile that runs before the shared cache received its own earlier writes reads the
//! old object: it updates the status with an old resourceVersion (refused with 409 Conflict)
//! or creates a child that exists (refused with 409 AlreadyExists). Kubernetes' own
//! controllers avoid this with "expectations"; here a [`Client`](super::Client) write made
//! inside [`record_writes`] registers the resourceVersion it produced with the cache of its
//! kind ([`Unseen`]), the cache crosses it off when it stores that version, and the runtime
//! holds back the next reconcile of the same request until its writes were seen (at most
//! [`MAX_WAIT`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::DynamicObject;
use parking_lot::Mutex;

use crate::object::ObjectKey;

/// How long a write may stay unseen before readers stop waiting for it (a lost event, a
/// watch far behind): the request then reconciles from what the cache holds.
pub const MAX_WAIT: Duration = Duration::from_secs(5);

/// The versions this process wrote that one cache has not stored yet, by object key.
#[derive(Default)]
pub(super) struct Unseen {
    pending: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    by_key: HashMap<ObjectKey, Expected>,
    /// When expired entries are next swept.
    next_sweep: Option<Instant>,
}

struct Expected {
    version: String,
    until: Instant,
}

impl Unseen {
    /// Expects the cache to store `version` of `key`, unless `stored` (what the cache holds
    /// now, read under this registry's lock) already is that version.
    pub(super) fn expect(
        &self,
        key: ObjectKey,
        version: String,
        stored: impl FnOnce() -> Option<Arc<DynamicObject>>,
    ) {
        let mut pending = self.pending.lock();
        let now = Instant::now();
        if pending.next_sweep.is_none_or(|at| at <= now) {
            pending.by_key.retain(|_, expected| expected.until > now);
            pending.next_sweep = Some(now + MAX_WAIT);
        }
        let stored = stored();
        if version_of(stored.as_deref()) == Some(version.as_str()) {
            pending.by_key.remove(&key);
            return;
        }
        let until = now + MAX_WAIT;
        pending.by_key.insert(key, Expected { version, until });
    }

    /// The cache stored `object`: a write of that version is seen.
    pub(super) fn saw(&self, object: &DynamicObject) {
        let Some(version) = version_of(Some(object)) else {
            return;
        };
        let Ok(key) = ObjectKey::of(object) else {
            return;
        };
        let mut pending = self.pending.lock();
        if pending
            .by_key
            .get(&key)
            .is_some_and(|expected| expected.version == version)
        {
            pending.by_key.remove(&key);
        }
    }

    /// The object is gone from the cache: nothing of it is awaited any more.
    pub(super) fn forget(&self, key: &ObjectKey) {
        self.pending.lock().by_key.remove(key);
    }

    /// The cache relisted (everything it holds is at least as new as any write before the
    /// list) or stopped: nothing is awaited any more.
    pub(super) fn clear(&self) {
        self.pending.lock().by_key.clear();
    }

    /// Until when a write of `key` is awaited; `None` when none is (seen, or given up on).
    pub(super) fn awaited_until(&self, key: &ObjectKey) -> Option<Instant> {
        let pending = self.pending.lock();
        let expected = pending.by_key.get(key)?;
        (expected.until > Instant::now()).then_some(expected.until)
    }
}

fn version_of(object: Option<&DynamicObject>) -> Option<&str> {
    object?.metadata.resource_version.as_deref()
}

/// One write of a recorded reconcile: the registry of the cache that should see it.
#[derive(Clone)]
pub struct Written {
    unseen: Arc<Unseen>,
    key: ObjectKey,
}

/// The writes one reconcile made to kinds whose cache runs.
#[derive(Clone, Default)]
pub struct Writes(Vec<Written>);

impl Writes {
    /// Whether the reconcile wrote nothing a cache awaits.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Until when some of these writes may still arrive in their caches; `None` when every
    /// one was seen (or waited for long enough).
    pub fn unseen_until(&self) -> Option<Instant> {
        self.0
            .iter()
            .filter_map(|written| written.unseen.awaited_until(&written.key))
            .max()
    }
}

tokio::task_local! {
    static RECORDED: Mutex<Writes>;
}

/// Runs `work`, recording the writes its `Client` calls make (on this task, not on tasks it
/// spawns) to kinds whose shared cache runs; returns its output and those writes.
pub async fn record_writes<F: Future>(work: F) -> (F::Output, Writes) {
    let (output, recorded) = RECORDED
        .scope(Mutex::new(Writes::default()), async {
            let output = work.await;
            let recorded = RECORDED.with(|writes| std::mem::take(&mut *writes.lock()));
            (output, recorded)
        })
        .await;
    (output, recorded)
}

/// Whether writes are being recorded on this task.
pub(super) fn recording() -> bool {
    RECORDED.try_with(|_| ()).is_ok()
}

/// Records a write whose registry now expects it (no-op outside [`record_writes`]).
pub(super) fn record(unseen: Arc<Unseen>, key: ObjectKey) {
    let _ = RECORDED.try_with(|writes| writes.lock().0.push(Written { unseen, key }));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(name: &str, version: &str) -> Arc<DynamicObject> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "ns", "resourceVersion": version}
            }))
            .unwrap(),
        )
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::namespaced("ns", name)
    }

    #[test]
    fn a_write_is_awaited_until_the_cache_stores_its_version() {
        let unseen = Unseen::default();
        unseen.expect(key("a"), "7".into(), || Some(object("a", "5")));
        assert!(unseen.awaited_until(&key("a")).is_some());
        unseen.saw(&object("a", "6"));
        assert!(
            unseen.awaited_until(&key("a")).is_some(),
            "an older version does not count"
        );
        unseen.saw(&object("a", "7"));
        assert_eq!(unseen.awaited_until(&key("a")), None);
    }

    #[test]
    fn a_version_the_cache_already_holds_is_not_awaited() {
        let unseen = Unseen::default();
        unseen.expect(key("a"), "7".into(), || Some(object("a", "7")));
        assert_eq!(unseen.awaited_until(&key("a")), None);
    }

    #[test]
    fn deletion_and_relist_end_the_wait() {
        let unseen = Unseen::default();
        unseen.expect(key("a"), "7".into(), || None);
        unseen.expect(key("b"), "8".into(), || None);
        unseen.forget(&key("a"));
        assert_eq!(unseen.awaited_until(&key("a")), None);
        assert!(unseen.awaited_until(&key("b")).is_some());
        unseen.clear();
        assert_eq!(unseen.awaited_until(&key("b")), None);
    }

    #[tokio::test]
    async fn only_writes_inside_the_recorded_work_are_recorded() {
        let unseen = Arc::new(Unseen::default());
        assert!(!recording());
        record(unseen.clone(), key("outside"));
        let ((), writes) = record_writes(async {
            assert!(recording());
            unseen.expect(key("a"), "7".into(), || None);
            record(unseen.clone(), key("a"));
        })
        .await;
        assert_eq!(writes.0.len(), 1);
        assert!(writes.unseen_until().is_some());
        unseen.saw(&object("a", "7"));
        assert_eq!(writes.unseen_until(), None);
    }
}
