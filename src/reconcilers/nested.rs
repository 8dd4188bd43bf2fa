//! Helpers shared by the higher-order reconcilers: boxed reconcilers are reconcilers, and a
//! nested reconciler's validation error is reported with its place in the tree.

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;

use super::steps::OutcomeStep;
use super::{Context, Draft, Outcome, Setup, SetupStep, SubReconciler, ValidationError};

/// A hook that sees (and may replace) an outcome, e.g. Advice's After or TryCatch's Catch.
pub(super) type OutcomeHook<R> = Box<dyn OutcomeStep<R>>;

/// A setup step of a reconciler's own (e.g. declaring watches), as `Advice`,
/// `OverrideSetup` and `SyncReconciler` take it.
pub(super) type SetupHook = Box<dyn SetupStep>;

/// Forwards to the boxed reconciler. Written out, not with `#[async_trait]`: the macro would
/// box a second future around the boxed reconciler's own on every call.
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

    fn reconcile<'s, 'c, 'r, 'f>(
        &'s self,
        ctx: &'c Context,
        resource: &'r mut Draft<R>,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'f>>
    where
        's: 'f,
        'c: 'f,
        'r: 'f,
        Self: 'f,
    {
        (**self).reconcile(ctx, resource)
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
