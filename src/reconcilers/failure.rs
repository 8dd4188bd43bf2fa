//! The one log line a failed reconcile gets: the error with its cause chain, at a level that
//! says whether anyone needs to look (a lost optimistic-concurrency race, or a create that
//! found its name taken because a cache was behind, is routine).
//!
//! A request that fails again with the same error (the watch event of the status write that
//! recorded the failure, each retry of the backoff) is logged at DEBUG: the ERROR line is
//! written when a failure starts or changes, and an INFO line when the request succeeds again.

use std::collections::HashMap;
use std::error::Error as _;
use std::future::Future;

use parking_lot::Mutex;
use tracing::{debug, error, info};

use crate::client;
use crate::object::ObjectKey;
use crate::reconcilers::ReconcileError;

/// The error each failing request of one controller last failed with.
#[derive(Default)]
pub(crate) struct FailingRequests {
    last: Mutex<HashMap<ObjectKey, String>>,
}

/// What one reconcile reported: the failure it started with, and what it logged.
struct Report {
    previous: Option<String>,
    logged: Mutex<Logged>,
}

/// What a reconcile logged of its failure.
#[derive(Default)]
enum Logged {
    /// Nothing: it succeeded.
    #[default]
    Nothing,
    /// A routine failure (a quiet error, a conflict): it says nothing of the last failure.
    Routine,
    /// This failure.
    Failure(String),
}

tokio::task_local! {
    static REPORT: Report;
}

impl FailingRequests {
    /// Runs the reconcile of `request` (`work`, which logs its failure through
    /// [`log_failed_reconcile`] on this task): a failure with the error of the request's last
    /// failure is logged at DEBUG, and the first success after failures at INFO.
    pub(crate) async fn reconcile<F: Future>(&self, request: &ObjectKey, work: F) -> F::Output {
        let report = Report {
            previous: self.last.lock().get(request).cloned(),
            logged: Mutex::new(Logged::Nothing),
        };
        let (output, logged) = REPORT
            .scope(report, async {
                let output = work.await;
                let logged = REPORT.with(|report| std::mem::take(&mut *report.logged.lock()));
                (output, logged)
            })
            .await;
        let mut last = self.last.lock();
        match logged {
            Logged::Failure(failure) => {
                last.insert(request.clone(), failure);
            }
            Logged::Routine => {}
            Logged::Nothing => {
                if last.remove(request).is_some() {
                    info!("reconcile succeeded after failing");
                }
            }
        }
        output
    }
}

/// Records what the current reconcile logged; true when it is the request's last failure.
fn report(logged: Logged) -> bool {
    REPORT
        .try_with(|report| {
            let repeated = match &logged {
                Logged::Failure(failure) => report.previous.as_ref() == Some(failure),
                _ => false,
            };
            *report.logged.lock() = logged;
            repeated
        })
        .unwrap_or(false)
}

/// Logs a failed reconcile once (quiet errors are not logged at all): by the manager, or by
/// the root reconciler when a status write replaces the error.
pub(crate) fn log_failed_reconcile(err: &ReconcileError) {
    if err.is_quiet() {
        report(Logged::Routine);
        return;
    }
    let chain = cause_chain(err);
    // A conflict or a create that found the name taken (a cache behind the server): 409.
    let conflict = err
        .find_cause::<client::Error>()
        .is_some_and(|e| e.is_conflict() || e.is_already_exists());
    if conflict {
        report(Logged::Routine);
        info!(error = %chain, "reconcile conflicted; it will run again");
    } else if report(Logged::Failure(chain.clone())) {
        debug!(error = %chain, "reconcile failed again with the same error");
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
