//! Validation of a reconciler tree before it runs.

/// Why a reconciler tree is not complete (missing callbacks, contradictory options).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValidationError(pub String);
