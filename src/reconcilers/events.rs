//! Helpers for the events reconcilers record on the resources they reconcile.

use tracing::debug;

use crate::client::Error;

/// The message of an API error as the server wrote it (else the error itself), for events.
pub(super) fn api_message(err: &Error) -> String {
    match err {
        Error::Api(api) => match &api.source {
            kube::Error::Api(status) => status.message.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    }
}

/// Logs an event that could not be recorded (events are best effort).
pub(super) fn log_unrecorded(recorded: Result<(), Error>) {
    if let Err(err) = recorded {
        debug!(%err, "event not recorded");
    }
}
