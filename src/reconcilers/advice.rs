//! `Advice`: before / around / after hooks wrapped around a reconciler.
//!
//! Departures from reconciler.io:
//! - Setup always cascades to the nested reconciler (Go cascades only when Advice's own
//!   Setup is set), and validation always recurses into it.
//! - "at least one of Before, Around or After" is checked (it is dead code in Go, whose
//!   defaults are filled in before the check).

use async_trait::async_trait;
use kube::api::DynamicObject;
use tracing::Instrument;

use crate::trace::debug_span;

use super::nested::{OutcomeHook, SetupHook, owner, validate_nested};
use super::steps::{AroundStep, AsyncMutate, OutcomeStep};
use super::{Context, Draft, Outcome, Setup, SetupStep, SubReconciler, ValidationError};

type BeforeHook<R> = Box<dyn AsyncMutate<R, (Option<Context>, Outcome)>>;
type AroundHook<R> = Box<dyn AroundStep<R>>;

/// Wraps a reconciler with Before (may replace the context, or stop with an error), Around
/// (calls the reconciler once by default; may skip it or call it several times) and After
/// (sees and may replace the final outcome).
pub struct Advice<R = DynamicObject> {
    name: String,
    setup: Option<SetupHook>,
    reconciler: Box<dyn SubReconciler<R>>,
    before: Option<BeforeHook<R>>,
    around: Option<AroundHook<R>>,
    after: Option<OutcomeHook<R>>,
}

impl<R: Send + Sync + 'static> Advice<R> {
    /// Advice around `reconciler`; add at least one of `before`, `around` or `after`.
    pub fn new(reconciler: impl SubReconciler<R> + 'static) -> Self {
        Self {
            name: "Advice".into(),
            setup: None,
            reconciler: Box::new(reconciler),
            before: None,
            around: None,
            after: None,
        }
    }

    /// Names the reconciler (default `Advice`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// A setup step of its own, run before the nested reconciler's.
    pub fn with_setup(mut self, setup: impl SetupStep) -> Self {
        self.setup = Some(Box::new(setup));
        self
    }

    /// Runs first: a returned context replaces the current one; an error stops here. Async,
    /// e.g. `|_ctx, _resource| Box::pin(async { (None, Outcome::done()) })`.
    pub fn before(mut self, before: impl AsyncMutate<R, (Option<Context>, Outcome)>) -> Self {
        self.before = Some(Box::new(before));
        self
    }

    /// Calls the reconciler (or not, or several times) and returns its outcome.
    pub fn around(mut self, around: impl AroundStep<R>) -> Self {
        self.around = Some(Box::new(around));
        self
    }

    /// Runs last with the aggregated outcome, and may replace it (async, as `before`).
    pub fn after(mut self, after: impl OutcomeStep<R>) -> Self {
        self.after = Some(Box::new(after));
        self
    }
}

#[async_trait]
impl<R: Send + Sync + 'static> SubReconciler<R> for Advice<R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        if let Some(own) = &self.setup {
            own(setup)?;
        }
        self.reconciler.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("Advice", &self.name);
        if self.before.is_none() && self.around.is_none() && self.after.is_none() {
            return Err(ValidationError(format!(
                "{owner} must implement at least one of Before, Around or After"
            )));
        }
        validate_nested(owner, "Reconciler", self.reconciler.as_ref())
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        let span = debug_span!("advice", name = %self.name);
        async {
            let (replaced, before) = match &self.before {
                Some(before) => before(ctx, resource).await,
                None => (None, Outcome::done()),
            };
            if before.error.is_some() {
                return before;
            }
            let ctx = replaced.as_ref().unwrap_or(ctx);
            let around = match &self.around {
                Some(around) => around(ctx, resource, self.reconciler.as_ref()).await,
                None => self.reconciler.reconcile(ctx, resource).await,
            };
            let outcome = Outcome::with(before.result.aggregate(around.result), around.error);
            match &self.after {
                Some(after) => after(ctx, resource, outcome).await,
                None => outcome,
            }
        }
        .instrument(span)
        .await
    }
}
