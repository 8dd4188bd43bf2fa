//! `Sequence`: sub-reconcilers called in order, stopping at the first error.
//!
//! Departures from reconciler.io: a `Sequence` always validates its children (Go's
//! `Validate` has a pointer receiver, so a `Sequence` used by value is not validated).

use async_trait::async_trait;
use kube::api::DynamicObject;
use tracing::Instrument;

use crate::trace::debug_span;

use super::nested::validate_nested;
use super::{Context, Draft, Outcome, ReconcileResult, Setup, SubReconciler, ValidationError};

/// Calls each reconciler in order and aggregates their results; on the first error it
/// returns that reconciler's own result with the error (earlier results are dropped).
pub struct Sequence<R = DynamicObject> {
    reconcilers: Vec<Box<dyn SubReconciler<R>>>,
}

impl<R> Sequence<R> {
    /// A sequence of reconcilers, called in this order.
    pub fn new(reconcilers: Vec<Box<dyn SubReconciler<R>>>) -> Self {
        Self { reconcilers }
    }
}

#[async_trait]
impl<R: Send + Sync + 'static> SubReconciler<R> for Sequence<R> {
    fn name(&self) -> &str {
        "Sequence"
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.reconcilers.iter().try_for_each(|r| r.setup(setup))
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.reconcilers.iter().enumerate().try_for_each(|(i, r)| {
            validate_nested("Sequence", format_args!("Sequence[{i}]"), r.as_ref())
        })
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        let mut aggregate = ReconcileResult::done();
        for (index, reconciler) in self.reconcilers.iter().enumerate() {
            let span = debug_span!("sequence", index, reconciler = reconciler.name());
            let outcome = reconciler.reconcile(ctx, resource).instrument(span).await;
            if outcome.error.is_some() {
                return outcome;
            }
            aggregate = aggregate.aggregate(outcome.result);
        }
        Outcome::ok(aggregate)
    }
}
