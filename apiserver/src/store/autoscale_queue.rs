//! The HPAs a write leaves for the autoscaler to pass over (see `autoscaling`).

use std::collections::{BTreeSet, VecDeque};

/// An HPA: namespace and name.
type Hpa = (String, String);

/// HPAs waiting for a pass, each once, and what the current run has done.
#[derive(Default)]
pub struct AutoscaleQueue {
    pending: VecDeque<Hpa>,
    /// Whether a run is going on (writes it makes queue HPAs, and do not start another).
    running: bool,
    /// The HPAs that rescaled their target in this run: each does at most once, so that
    /// a run ends even if a target does not keep the replicas written into it.
    rescaled: BTreeSet<Hpa>,
}

impl AutoscaleQueue {
    /// Queues an HPA, unless it is already queued.
    pub fn push(&mut self, namespace: &str, name: &str) {
        let hpa = (namespace.to_string(), name.to_string());
        if !self.pending.contains(&hpa) {
            self.pending.push_back(hpa);
        }
    }

    /// The HPA queued first, taken off the queue.
    pub fn pop(&mut self) -> Option<Hpa> {
        self.pending.pop_front()
    }

    /// Starts a run; false when one is already going on.
    pub fn start(&mut self) -> bool {
        !std::mem::replace(&mut self.running, true)
    }

    /// Ends the run.
    pub fn finish(&mut self) {
        self.running = false;
        self.rescaled.clear();
    }

    /// Records that an HPA rescales in this run; false when it already has.
    pub fn first_rescale(&mut self, namespace: &str, name: &str) -> bool {
        self.rescaled
            .insert((namespace.to_string(), name.to_string()))
    }
}
