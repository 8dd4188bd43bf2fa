//! What a reconcile asks of the work queue, and how results combine.

use std::time::Duration;

/// The outcome of a successful reconcile: whether and when to reconcile again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReconcileResult {
    /// Reconcile again soon (with backoff).
    pub requeue: bool,
    /// Reconcile again after this long.
    pub requeue_after: Option<Duration>,
}

impl ReconcileResult {
    /// Nothing more to do until something changes.
    pub fn done() -> Self {
        Self::default()
    }

    /// Reconcile again soon.
    pub fn requeue() -> Self {
        Self {
            requeue: true,
            requeue_after: None,
        }
    }

    /// Reconcile again after `delay`.
    pub fn requeue_after(delay: Duration) -> Self {
        Self {
            requeue: false,
            requeue_after: Some(delay),
        }
    }

    /// Combines two results: `requeue` is or-ed and the shortest non-zero delay wins
    /// (reconciler.io's `AggregateResults`).
    pub fn aggregate(self, other: ReconcileResult) -> ReconcileResult {
        let requeue_after = match (self.requeue_after, other.requeue_after) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .filter(|d| !d.is_zero());
        ReconcileResult {
            requeue: self.requeue || other.requeue,
            requeue_after,
        }
    }

    /// Combines any number of results.
    pub fn aggregate_all(results: impl IntoIterator<Item = ReconcileResult>) -> ReconcileResult {
        results
            .into_iter()
            .fold(ReconcileResult::done(), ReconcileResult::aggregate)
    }

    /// The form the test harness compares: a delay makes `requeue` redundant.
    pub fn normalized(self) -> ReconcileResult {
        if self.requeue_after.is_some() {
            ReconcileResult {
                requeue: false,
                ..self
            }
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_delay_wins_and_requeue_is_ored() {
        let a = ReconcileResult::requeue_after(Duration::from_secs(60));
        let b = ReconcileResult::requeue_after(Duration::from_secs(10));
        assert_eq!(
            a.aggregate(b),
            ReconcileResult::requeue_after(Duration::from_secs(10))
        );
        let both = ReconcileResult::requeue().aggregate(a);
        assert!(both.requeue && both.requeue_after == Some(Duration::from_secs(60)));
        assert_eq!(both.normalized(), a);
        assert_eq!(
            ReconcileResult::aggregate_all([ReconcileResult::done(), ReconcileResult::done()]),
            ReconcileResult::done()
        );
    }
}
