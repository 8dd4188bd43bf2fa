//! `Always`: every sub-reconciler is called, even after errors.
//!
//! Departures from reconciler.io: `Always` always validates its children (Go's `Validate`
//! has a pointer receiver, so an `Always` used by value is not validated).

use async_trait::async_trait;
use kube::api::DynamicObject;
use tracing::Instrument;

use crate::trace::debug_span;

use super::nested::validate_nested;
use super::{
    Context, Draft, Outcome, ReconcileError, ReconcileResult, Setup, SubReconciler, ValidationError,
};

/// Calls every reconciler in order and aggregates all results. The error joins the non-quiet
/// errors when there are any (quiet ones are then dropped), otherwise all the (quiet) errors.
pub struct Always<R = DynamicObject> {
    reconcilers: Vec<Box<dyn SubReconciler<R>>>,
}

impl<R> Always<R> {
    /// Reconcilers that are all called, in this order.
    pub fn new(reconcilers: Vec<Box<dyn SubReconciler<R>>>) -> Self {
        Self { reconcilers }
    }
}

#[async_trait]
impl<R: Send + Sync + 'static> SubReconciler<R> for Always<R> {
    fn name(&self) -> &str {
        "Always"
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.reconcilers.iter().try_for_each(|r| r.setup(setup))
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.reconcilers.iter().enumerate().try_for_each(|(i, r)| {
            validate_nested("Always", format_args!("Always[{i}]"), r.as_ref())
        })
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        let mut aggregate = ReconcileResult::done();
        let mut errors = Vec::new();
        for (index, reconciler) in self.reconcilers.iter().enumerate() {
            let span = debug_span!("always", index, reconciler = reconciler.name());
            let outcome = reconciler.reconcile(ctx, resource).instrument(span).await;
            aggregate = aggregate.aggregate(outcome.result);
            errors.extend(outcome.error);
        }
        let (loud, quiet): (Vec<_>, Vec<_>) = errors.into_iter().partition(|e| !e.is_quiet());
        let error = if loud.is_empty() {
            ReconcileError::join(quiet)
        } else {
            ReconcileError::join(loud)
        };
        Outcome::with(aggregate, error)
    }
}
