//! The reconciler contract: what a reconciler is given, what it answers, and how the answers
//! combine — the whole of it on one page, as controller-runtime's `reconcile.go` has it.
//!
//! - A [`SubReconciler`] changes the resource in place (through a [`Draft`]) and answers an
//!   [`Outcome`]: a [`ReconcileResult`] (whether and when to reconcile again) and, perhaps,
//!   a [`ReconcileError`] whose [`Markers`] say how the tree and the root treat it.
//! - A [`RootReconciler`] is what the runtime calls with a request: it reads the resource,
//!   runs its sub-reconcilers and writes the status back.
//! - Results aggregate ([`ReconcileResult::aggregate`]): `requeue` is or-ed and the shortest
//!   delay wins.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use kube::api::DynamicObject;

use super::{Config, Context, Draft, Setup, ValidationError};
use crate::object::{Gvk, ObjectKey};

/// A reconciler that changes `resource` in place. `R` is the resource type: a
/// `DynamicObject`, or a duck type inside `CastResource`. The resource comes as a [`Draft`]:
/// it reads as `R`, and the first write copies it out of the cache.
#[async_trait]
pub trait SubReconciler<R: Send + Sync = DynamicObject>: Send + Sync {
    /// The name used in logs and validation messages.
    fn name(&self) -> &str;

    /// Declares the watches this reconciler (and those it nests) needs.
    fn setup(&self, _setup: &mut Setup) -> Result<(), ValidationError> {
        Ok(())
    }

    /// Checks that this reconciler (and those it nests) is complete.
    fn validate(&self) -> Result<(), ValidationError> {
        Ok(())
    }

    /// Reconciles `resource`, changing it in place.
    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome;
}

/// Per-request settings a caller (the runtime, or a test) may choose.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// The request's "now" (default: the wall clock).
    pub now: Option<Timestamp>,
    /// Named configs for other clusters, available to `WithConfig`.
    pub additional_configs: BTreeMap<String, Config>,
}

/// A reconciler the runtime calls with requests: `ResourceReconciler` or `AggregateReconciler`.
#[async_trait]
pub trait RootReconciler: Send + Sync {
    /// The name used in logs and validation messages.
    fn name(&self) -> &str;

    /// The kind of the reconciled resources.
    fn resource_type(&self) -> &Gvk;

    /// The config the reconciler was built with: its client opens the tree's watches, its
    /// tracker maps tracked objects to requests.
    fn config(&self) -> &Config;

    /// The watches the reconciler tree needs (after validating it).
    fn setup(&self) -> Result<Setup, ValidationError>;

    /// Checks that the reconciler tree is complete.
    fn validate(&self) -> Result<(), ValidationError>;

    /// Requests to reconcile as soon as the controller starts, before any event (the
    /// AggregateReconciler's one object, which may not exist yet).
    fn initial_requests(&self) -> Vec<ObjectKey> {
        Vec::new()
    }

    /// Reconciles one request with the given options.
    async fn reconcile_with(&self, request: &ObjectKey, options: RequestOptions) -> Outcome;

    /// Reconciles one request now.
    async fn reconcile(&self, request: &ObjectKey) -> Outcome {
        self.reconcile_with(request, RequestOptions::default())
            .await
    }
}

/// The outcome of a reconcile: a result, and an error that may come with it (Go returns
/// both: e.g. a requeue together with a halt).
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Whether and when to reconcile again.
    pub result: ReconcileResult,
    /// The error, if any.
    pub error: Option<ReconcileError>,
}

impl Outcome {
    /// Success with `result`.
    pub fn ok(result: ReconcileResult) -> Self {
        Self {
            result,
            error: None,
        }
    }

    /// Success with nothing more to do.
    pub fn done() -> Self {
        Self::default()
    }

    /// Failure with an empty result.
    pub fn err(error: impl Into<ReconcileError>) -> Self {
        Self {
            result: ReconcileResult::done(),
            error: Some(error.into()),
        }
    }

    /// A result together with an error.
    pub fn with(result: ReconcileResult, error: Option<ReconcileError>) -> Self {
        Self { result, error }
    }

    /// Whether there is no error.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }
}

impl From<Result<ReconcileResult, ReconcileError>> for Outcome {
    fn from(result: Result<ReconcileResult, ReconcileError>) -> Self {
        match result {
            Ok(result) => Outcome::ok(result),
            Err(error) => Outcome::err(error),
        }
    }
}

/// The outcome of a successful reconcile: whether and when to reconcile again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReconcileResult {
    /// Reconcile again soon (with backoff).
    pub requeue: bool,
    /// Reconcile again after this long.
    pub requeue_after: Option<Duration>,
}

impl ReconcileResult {
    /// Nothing more to do until something changes.
    pub fn done() -> Self {
        Self::default()
    }

    /// Reconcile again soon.
    pub fn requeue() -> Self {
        Self {
            requeue: true,
            requeue_after: None,
        }
    }

    /// Reconcile again after `delay`.
    pub fn requeue_after(delay: Duration) -> Self {
        Self {
            requeue: false,
            requeue_after: Some(delay),
        }
    }

    /// Combines two results: `requeue` is or-ed and the shortest non-zero delay wins
    /// (reconciler.io's `AggregateResults`).
    pub fn aggregate(self, other: ReconcileResult) -> ReconcileResult {
        let requeue_after = match (self.requeue_after, other.requeue_after) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .filter(|d| !d.is_zero());
        ReconcileResult {
            requeue: self.requeue || other.requeue,
            requeue_after,
        }
    }

    /// Combines any number of results.
    pub fn aggregate_all(results: impl IntoIterator<Item = ReconcileResult>) -> ReconcileResult {
        results
            .into_iter()
            .fold(ReconcileResult::done(), ReconcileResult::aggregate)
    }

    /// The form the test harness compares: a delay makes `requeue` redundant.
    pub fn normalized(self) -> ReconcileResult {
        if self.requeue_after.is_some() {
            ReconcileResult {
                requeue: false,
                ..self
            }
        } else {
            self
        }
    }
}

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

    /// The API server's `Status` of a failed request among the causes: its reason, message
    /// and details (such as the name that was taken).
    pub fn api_status(&self) -> Option<&kube::core::Status> {
        self.find_cause::<crate::client::Error>()?.status()
    }

    /// The reason the API server gave for a failed request among the causes
    /// (`AlreadyExists`, `Invalid`, ...).
    pub fn api_reason(&self) -> Option<&str> {
        self.api_status().map(|status| status.reason.as_str())
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
    fn the_shortest_delay_wins_and_requeue_is_ored() {
        let a = ReconcileResult::requeue_after(Duration::from_secs(60));
        let b = ReconcileResult::requeue_after(Duration::from_secs(10));
        assert_eq!(
            a.aggregate(b),
            ReconcileResult::requeue_after(Duration::from_secs(10))
        );
        let both = ReconcileResult::requeue().aggregate(a);
        assert!(both.requeue && both.requeue_after == Some(Duration::from_secs(60)));
        assert_eq!(both.normalized(), a);
        assert_eq!(
            ReconcileResult::aggregate_all([ReconcileResult::done(), ReconcileResult::done()]),
            ReconcileResult::done()
        );
    }

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
