//! What a `ChildSetReconciler` reflects onto the parent: the outcome of each of its children.

use kube::api::DynamicObject;

use super::ReconcileError;

/// The outcome of one child of a set.
#[derive(Clone, Debug)]
pub struct ChildSetPartialResult {
    /// The child's id.
    pub id: String,
    /// The child as persisted (`None`: there is none).
    pub child: Option<DynamicObject>,
    /// The reflected error that kept it from being written.
    pub error: Option<ReconcileError>,
}

/// The outcomes of the children of a set, in id order.
#[derive(Clone, Debug, Default)]
pub struct ChildSetResult {
    /// One entry per child reconciled.
    pub children: Vec<ChildSetPartialResult>,
}

impl ChildSetResult {
    /// Every child's error joined (`None` when there is none).
    pub fn aggregate_error(&self) -> Option<ReconcileError> {
        ReconcileError::join(self.children.iter().filter_map(|c| c.error.clone()))
    }
}
