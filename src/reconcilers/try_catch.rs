//! `TryCatch`: try, catch and finally, in that order.
//!
//! Departure from reconciler.io: `Try` and `Finally` are always validated (reconciler.io
//! validates nested reconcilers only when asked to validate recursively).

use async_trait::async_trait;
use kube::api::DynamicObject;
use tracing::Instrument;

use crate::trace::debug_span;

use super::nested::{OutcomeHook, owner, validate_nested};
use super::steps::OutcomeStep;
use super::{Context, Draft, Outcome, Setup, SubReconciler, ValidationError};

/// Calls `try`, hands its outcome to `catch` (which may replace it), then calls `finally`,
/// whose error (if any) overrides; the results of try/catch and finally are aggregated.
pub struct TryCatch<R = DynamicObject> {
    name: String,
    try_: Box<dyn SubReconciler<R>>,
    catch: Option<OutcomeHook<R>>,
    finally: Option<Box<dyn SubReconciler<R>>>,
}

impl<R: Send + Sync + 'static> TryCatch<R> {
    /// Calls `try_`; its outcome is returned unless a catch or finally changes it.
    pub fn new(try_: impl SubReconciler<R> + 'static) -> Self {
        Self {
            name: "TryCatch".into(),
            try_: Box::new(try_),
            catch: None,
            finally: None,
        }
    }

    /// Sees the outcome of `try` and returns the one to keep (async, e.g.
    /// `|_ctx, _resource, outcome| Box::pin(async move { outcome })`).
    pub fn catch(mut self, catch: impl OutcomeStep<R>) -> Self {
        self.catch = Some(Box::new(catch));
        self
    }

    /// Always called last; its error overrides the one before.
    pub fn finally(mut self, finally: impl SubReconciler<R> + 'static) -> Self {
        self.finally = Some(Box::new(finally));
        self
    }

    /// Names the reconciler (default `TryCatch`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl<R: Send + Sync + 'static> SubReconciler<R> for TryCatch<R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.try_.setup(setup)?;
        self.finally.iter().try_for_each(|r| r.setup(setup))
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("TryCatch", &self.name);
        validate_nested(&owner, "Try", self.try_.as_ref())?;
        match &self.finally {
            Some(finally) => validate_nested(&owner, "Finally", finally.as_ref()),
            None => Ok(()),
        }
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        let span = debug_span!("try_catch", name = %self.name);
        async {
            let mut outcome = self.try_.reconcile(ctx, resource).await;
            if let Some(catch) = &self.catch {
                outcome = catch(ctx, resource, outcome).await;
            }
            let Some(finally) = &self.finally else {
                return outcome;
            };
            let last = finally.reconcile(ctx, resource).await;
            let result = outcome.result.aggregate(last.result);
            Outcome::with(result, last.error.or(outcome.error))
        }
        .instrument(span)
        .await
    }
}
