//! The one log line a failed reconcile gets: the error with its cause chain, at a level that
//! says whether anyone needs to look (a lost optimistic-concurrency race, or a create that
//! found its name taken because a cache was behind, is routine).

use std::error::Error as _;

use tracing::{error, info};

use crate::client;
use crate::reconcilers::ReconcileError;

/// Logs a failed reconcile once (quiet errors are not logged at all): by the manager, or by
/// the root reconciler when a status write replaces the error.
pub(crate) fn log_failed_reconcile(err: &ReconcileError) {
    if err.is_quiet() {
        return;
    }
    let chain = cause_chain(err);
    // A conflict or a create that found the name taken (a cache behind the server): 409.
    let conflict = err
        .find_cause::<client::Error>()
        .is_some_and(|e| e.is_conflict() || e.is_already_exists());
    if conflict {
        info!(error = %chain, "reconcile conflicted; it will run again");
    } else {
        error!(error = %chain, "reconcile failed");
    }
}

/// The error's message followed by each cause that adds something to it.
fn cause_chain(err: &ReconcileError) -> String {
    let mut chain = err.to_string();
    let mut cause = err.source();
    while let Some(current) = cause {
        let text = current.to_string();
        if !chain.contains(&text) {
            chain.push_str(": ");
            chain.push_str(&text);
        }
        cause = current.source();
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("inner cause")]
    struct Inner;

    #[test]
    fn the_chain_names_every_cause_once() {
        let err = ReconcileError::from_error(Outer(Inner)).context("child");
        assert_eq!(cause_chain(&err), "child: outer: inner cause");
    }
}
