//! Helpers shared by the higher-order reconcilers: boxed reconcilers are reconcilers, and a
//! nested reconciler's validation error is reported with its place in the tree.

use std::fmt::Display;

use async_trait::async_trait;

use super::{
    Context, Draft, Outcome, OutcomeStep, Setup, SetupStep, SubReconciler, ValidationError,
};

/// A hook that sees (and may replace) an outcome, e.g. Advice's After or TryCatch's Catch.
pub(super) type OutcomeHook<R> = Box<dyn OutcomeStep<R>>;

/// A setup step of a reconciler's own (e.g. declaring watches), as `Advice`,
/// `OverrideSetup` and `SyncReconciler` take it.
pub(super) type SetupHook = Box<dyn SetupStep>;

#[async_trait]
impl<R, T> SubReconciler<R> for Box<T>
where
    R: Send + Sync,
    T: SubReconciler<R> + ?Sized,
{
    fn name(&self) -> &str {
        (**self).name()
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        (**self).setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        (**self).validate()
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        (**self).reconcile(ctx, resource).await
    }
}

/// Validates a nested reconciler, reporting a failure as
/// `"{owner} must have a valid {field}: {cause}"`.
pub(super) fn validate_nested<R: Send + Sync>(
    owner: impl Display,
    field: impl Display,
    nested: &dyn SubReconciler<R>,
) -> Result<(), ValidationError> {
    nested
        .validate()
        .map_err(|err| ValidationError(format!("{owner} must have a valid {field}: {err}")))
}

/// How a named composite introduces itself in validation messages: `IfThen "name"`.
pub(super) fn owner(kind: &str, name: &str) -> String {
    format!("{kind} {name:?}")
}
