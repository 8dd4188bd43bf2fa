//! What a [`ResourceReconciler`](super::ResourceReconciler) does with its resource's status.

/// Whose the reconciled resource's status is, and so when the root writes it. One setting
/// instead of reconciler.io's three flags (`SkipStatusUpdate`, `SyncStatusDuringFinalization`
/// and, dynrec's own, whether the root owns the status), which only make sense in these
/// combinations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StatusPolicy {
    /// The root owns the status (the default): it initializes the declared conditions, sets
    /// `status.observedGeneration` and writes the status when the tree changed it, except
    /// while the resource is being deleted.
    #[default]
    Owned,
    /// As [`StatusPolicy::Owned`], and the status is written while the resource is being
    /// deleted too (reconciler.io's `SyncStatusDuringFinalization`).
    OwnedDuringDeletion,
    /// Another controller owns the status (a duck reconciler over Deployments, say): no
    /// conditions initialized, no `observedGeneration`; the status is written only when the
    /// root's own steps changed status fields.
    Shared,
    /// The status is never written (a secondary controller of a kind; reconciler.io's
    /// `SkipStatusUpdate`). The tree still sees the conditions initialized.
    NeverWritten,
}

impl StatusPolicy {
    /// Whether the root prepares the status as its owner (conditions, observedGeneration).
    pub(super) fn owns(self) -> bool {
        self != StatusPolicy::Shared
    }

    /// Whether a changed status is written at all.
    pub(super) fn writes(self) -> bool {
        self != StatusPolicy::NeverWritten
    }

    /// Whether a changed status is written while the resource is being deleted.
    pub(super) fn writes_during_deletion(self) -> bool {
        self == StatusPolicy::OwnedDuringDeletion
    }
}
