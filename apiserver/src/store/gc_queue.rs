//! The queue of work that deletion leaves to do after the write that set it off.

use std::collections::VecDeque;

/// Deferred work that deletion (or a dependent of a missing owner) triggers: garbage
/// collection, namespace and CRD clean-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// An object with this uid is gone: its dependents may need collecting.
    OwnerGone(String),
    /// The object with this uid is being deleted in the foreground.
    Foreground(String),
    /// The namespace is terminating: delete its contents, then it.
    Namespace(String),
    /// The CRD is being deleted: delete its instances, then it.
    Crd(String),
}

/// Work waiting to run, in the order it was queued, each item once.
#[derive(Default)]
pub struct GcQueue {
    pending: VecDeque<Work>,
}

impl GcQueue {
    /// Queues work, unless the same work is already queued.
    pub fn push(&mut self, work: Work) {
        if !self.pending.contains(&work) {
            self.pending.push_back(work);
        }
    }

    /// The work queued first, taken off the queue.
    pub fn pop(&mut self) -> Option<Work> {
        self.pending.pop_front()
    }
}
