//! Branches and loops: `IfThen` and `While`.
//!
//! Departures from reconciler.io: both always validate their nested reconcilers (Go
//! validates nested reconcilers only when asked to validate recursively);
//! their conditions and reconcilers are required by the constructors, so the "must
//! implement If/Then/Condition/Reconciler" errors of Go cannot occur.

use async_trait::async_trait;
use kube::api::DynamicObject;
use tracing::{Instrument, debug};

use crate::trace::debug_span;

use super::nested::{owner, validate_nested};
use super::{
    Context, Draft, Outcome, Predicate, ReconcileError, ReconcileResult, Setup, SubReconciler,
    ValidationError,
};

/// Calls `then` when the condition holds, else `otherwise` (if any).
pub struct IfThen<R = DynamicObject> {
    name: String,
    condition: Predicate<R>,
    then: Box<dyn SubReconciler<R>>,
    otherwise: Option<Box<dyn SubReconciler<R>>>,
}

impl<R: Send + Sync + 'static> IfThen<R> {
    /// Calls `then` when `condition` holds.
    pub fn new(condition: Predicate<R>, then: impl SubReconciler<R> + 'static) -> Self {
        Self {
            name: "IfThen".into(),
            condition,
            then: Box::new(then),
            otherwise: None,
        }
    }

    /// Calls `otherwise` when the condition does not hold (Go's `Else`).
    pub fn otherwise(mut self, otherwise: impl SubReconciler<R> + 'static) -> Self {
        self.otherwise = Some(Box::new(otherwise));
        self
    }

    /// Names the reconciler (default `IfThen`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl<R: Send + Sync + 'static> SubReconciler<R> for IfThen<R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.then.setup(setup)?;
        self.otherwise.iter().try_for_each(|r| r.setup(setup))
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("IfThen", &self.name);
        validate_nested(&owner, "Then", self.then.as_ref())?;
        match &self.otherwise {
            Some(otherwise) => validate_nested(&owner, "Else", otherwise.as_ref()),
            None => Ok(()),
        }
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        let span = debug_span!("if_then", name = %self.name);
        let holds = self.condition.test(ctx, resource);
        debug!(name = %self.name, condition = self.condition.description(), holds, "branching");
        let branch = if holds {
            Some(&self.then)
        } else {
            self.otherwise.as_ref()
        };
        match branch {
            Some(branch) => branch.reconcile(ctx, resource).instrument(span).await,
            None => Outcome::done(),
        }
    }
}

/// A `While` loop ran more iterations than allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("exceeded max iterations: {iterations}")]
pub struct MaxIterationsExceeded {
    /// The number of iterations run.
    pub iterations: usize,
}

/// Calls the reconciler as long as the condition holds, at most `max_iterations` times
/// (default 100, 0 for no limit); the context carries the iteration number.
pub struct While<R = DynamicObject> {
    name: String,
    condition: Predicate<R>,
    reconciler: Box<dyn SubReconciler<R>>,
    max_iterations: usize,
}

impl<R: Send + Sync + 'static> While<R> {
    /// Loops over `reconciler` while `condition` holds (evaluated with the iteration's context).
    pub fn new(condition: Predicate<R>, reconciler: impl SubReconciler<R> + 'static) -> Self {
        Self {
            name: "While".into(),
            condition,
            reconciler: Box::new(reconciler),
            max_iterations: 100,
        }
    }

    /// The most iterations allowed before failing; 0 for no limit.
    pub fn max_iterations(mut self, max_iterations: usize) -> Self {
        self.max_iterations = max_iterations;
        self
    }

    /// Names the reconciler (default `While`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl<R: Send + Sync + 'static> SubReconciler<R> for While<R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.reconciler.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("While", &self.name);
        validate_nested(owner, "Reconciler", self.reconciler.as_ref())
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        let mut aggregate = ReconcileResult::done();
        for iteration in 0.. {
            if self.max_iterations != 0 && iteration >= self.max_iterations {
                let exceeded = MaxIterationsExceeded {
                    iterations: iteration,
                };
                return Outcome::with(aggregate, Some(ReconcileError::from_error(exceeded)));
            }
            let ctx = ctx.with_iteration(iteration);
            if !self.condition.test(&ctx, resource) {
                break;
            }
            let span = debug_span!("while", name = %self.name, iteration);
            let outcome = self
                .reconciler
                .reconcile(&ctx, resource)
                .instrument(span)
                .await;
            aggregate = aggregate.aggregate(outcome.result);
            if outcome.error.is_some() {
                return Outcome::with(aggregate, outcome.error);
            }
        }
        Outcome::ok(aggregate)
    }
}
