//! Holds a request back while the caches have not seen what its last reconcile wrote (see
//! [`crate::client::unseen`]): its next reconcile would read the old objects and write from
//! them (a status update refused for its old resourceVersion, a child created twice).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::client::unseen::{MAX_WAIT, Writes};
use crate::object::ObjectKey;

/// How soon a held-back request looks again. The event of the write it waits for usually
/// queues it sooner (its own object, or a child it controls); this bounds the wait after a
/// write whose event does not lead back to it, without requeuing every held-back request
/// many times while a cache catches up.
const RECHECK: Duration = Duration::from_millis(250);

/// Each request's writes from its last reconcile, while a cache may not have seen them.
#[derive(Default)]
pub(super) struct UnseenWrites {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_request: HashMap<ObjectKey, Writes>,
    /// When requests whose writes were all seen are next dropped.
    next_sweep: Option<Instant>,
}

impl UnseenWrites {
    /// How long to hold `request` back before looking again; `None`: reconcile it now.
    pub(super) fn hold_back(&self, request: &ObjectKey) -> Option<Duration> {
        let mut inner = self.inner.lock();
        let writes = inner.by_request.get(request)?;
        match writes.unseen_until() {
            Some(until) => Some(until.saturating_duration_since(Instant::now()).min(RECHECK)),
            None => {
                inner.by_request.remove(request);
                None
            }
        }
    }

    /// Remembers what the last reconcile of `request` wrote.
    pub(super) fn remember(&self, request: ObjectKey, writes: Writes) {
        let mut inner = self.inner.lock();
        let now = Instant::now();
        if inner.next_sweep.is_none_or(|at| at <= now) {
            inner
                .by_request
                .retain(|_, writes| writes.unseen_until().is_some());
            inner.next_sweep = Some(now + MAX_WAIT);
        }
        match writes.is_empty() {
            true => inner.by_request.remove(&request),
            false => inner.by_request.insert(request, writes),
        };
    }
}
