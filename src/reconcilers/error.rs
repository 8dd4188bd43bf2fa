//! Reconcile errors: a cause chain plus markers (quiet, halt, skip status update, durable)
//! that change how the reconciler tree and the roots treat the error.

use std::fmt;
use std::sync::Arc;

/// How an error is to be treated; several can hold at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Markers {
    /// Not logged and not recorded as a Warning event; a root turns it into a requeue.
    pub quiet: bool,
    /// Stop the remaining sub-reconcilers of a Sequence, without failing (implies quiet).
    pub halt: bool,
    /// The root must not write status even if it changed.
    pub skip_status_update: bool,
    /// The state is already captured on status: do not retry until something changes
    /// (implies quiet and halt).
    pub durable: bool,
}

impl Markers {
    fn merge(self, other: Markers) -> Markers {
        Markers {
            quiet: self.quiet || other.quiet,
            halt: self.halt || other.halt,
            skip_status_update: self.skip_status_update || other.skip_status_update,
            durable: self.durable || other.durable,
        }
    }
}

/// An error from a reconciler.
#[derive(Clone)]
pub struct ReconcileError {
    message: String,
    markers: Markers,
    causes: Vec<Arc<dyn std::error::Error + Send + Sync>>,
}

impl ReconcileError {
    /// An error with a message and no markers.
    pub fn msg(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            markers: Markers::default(),
            causes: Vec::new(),
        }
    }

    /// An error caused by another error (kept in the cause chain).
    pub fn from_error(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self {
            message: error.to_string(),
            markers: Markers::default(),
            causes: vec![Arc::new(error)],
        }
    }

    /// A quiet error: not logged, not recorded; a root requeues instead of failing.
    pub fn quiet() -> Self {
        Self::msg("quiet errors are returned as errors, but not logged or recorded").with_quiet()
    }

    /// Stops the remaining sub-reconcilers without an error (quiet).
    pub fn halt() -> Self {
        Self::msg("stop processing SubReconcilers, without returning an error").with_halt()
    }

    /// Asks the root not to write status.
    pub fn skip_status_update() -> Self {
        Self::msg("skip status update").with_skip_status_update()
    }

    /// A durable error: already reflected on status; quiet and halting.
    pub fn durable() -> Self {
        Self::msg("durable error").with_durable()
    }

    /// Adds the quiet marker.
    pub fn with_quiet(mut self) -> Self {
        self.markers.quiet = true;
        self
    }

    /// Adds the halt marker (and quiet).
    pub fn with_halt(mut self) -> Self {
        self.markers.halt = true;
        self.markers.quiet = true;
        self
    }

    /// Adds the skip-status-update marker.
    pub fn with_skip_status_update(mut self) -> Self {
        self.markers.skip_status_update = true;
        self
    }

    /// Adds the durable marker (and quiet and halt).
    pub fn with_durable(mut self) -> Self {
        self.markers.durable = true;
        self.markers.halt = true;
        self.markers.quiet = true;
        self
    }

    /// Prefixes the message with context, keeping markers and causes.
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// Joins errors (Go's `errors.Join`): messages on separate lines, markers and causes united.
    pub fn join(errors: impl IntoIterator<Item = ReconcileError>) -> Option<ReconcileError> {
        errors.into_iter().reduce(|mut joined, next| {
            joined.message = format!("{}\n{}", joined.message, next.message);
            joined.markers = joined.markers.merge(next.markers);
            joined.causes.extend(next.causes);
            joined
        })
    }

    /// The markers this error carries.
    pub fn markers(&self) -> Markers {
        self.markers
    }

    /// Whether it is quiet (also true for halt and durable).
    pub fn is_quiet(&self) -> bool {
        self.markers.quiet
    }

    /// Whether it halts the remaining sub-reconcilers.
    pub fn is_halt(&self) -> bool {
        self.markers.halt
    }

    /// Whether the root must skip the status write.
    pub fn is_skip_status_update(&self) -> bool {
        self.markers.skip_status_update
    }

    /// Whether it is durable.
    pub fn is_durable(&self) -> bool {
        self.markers.durable
    }

    /// The first cause of type `E` in the chain, e.g. a `crate::client::Error`.
    pub fn find_cause<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.causes.iter().find_map(|cause| {
            let mut current: Option<&(dyn std::error::Error + 'static)> = Some(cause.as_ref());
            while let Some(error) = current {
                if let Some(found) = error.downcast_ref::<E>() {
                    return Some(found);
                }
                current = error.source();
            }
            None
        })
    }
}

impl fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for ReconcileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileError")
            .field("message", &self.message)
            .field("markers", &self.markers)
            .finish()
    }
}

impl std::error::Error for ReconcileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.causes
            .first()
            .map(|c| c.as_ref() as &(dyn std::error::Error + 'static))
    }
}

/// Errors a step commonly meets, for `?`: API calls, (de)serialising objects, conditions.
macro_rules! from_cause {
    ($($cause:ty),*) => {$(
        impl From<$cause> for ReconcileError {
            fn from(error: $cause) -> Self {
                Self::from_error(error)
            }
        }
    )*};
}

from_cause!(
    crate::client::Error,
    serde_json::Error,
    crate::object::ConditionError
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_imply_each_other_as_in_reconciler_io() {
        assert!(ReconcileError::halt().is_quiet());
        let durable = ReconcileError::durable();
        assert!(durable.is_quiet() && durable.is_halt() && durable.is_durable());
        assert!(!ReconcileError::skip_status_update().is_quiet());
    }

    #[test]
    fn joined_errors_carry_every_marker_and_message() {
        let joined = ReconcileError::join([
            ReconcileError::msg("boom"),
            ReconcileError::skip_status_update(),
            ReconcileError::quiet(),
        ])
        .unwrap();
        assert!(joined.is_quiet() && joined.is_skip_status_update() && !joined.is_halt());
        assert!(joined.to_string().starts_with("boom\n"));
        assert!(ReconcileError::join([]).is_none());
    }

    #[test]
    fn causes_are_found_by_type() {
        let io = std::io::Error::other("disk");
        let error = ReconcileError::from_error(io).context("saving");
        assert_eq!(error.to_string(), "saving: disk");
        assert!(error.find_cause::<std::io::Error>().is_some());
        assert!(error.find_cause::<std::fmt::Error>().is_none());
    }
}
