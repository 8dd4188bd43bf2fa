//! Helpers for the events reconcilers record on the resources they reconcile.

use tracing::debug;

use crate::client::Error;

/// Logs an event that could not be recorded (events are best effort).
pub(super) fn log_unrecorded(recorded: Result<(), Error>) {
    if let Err(err) = recorded {
        debug!(%err, "event not recorded");
    }
}
