//! `OverrideSetup`: replaces the nested reconciler's setup with its own.
//!
//! Departures from reconciler.io: the nested reconciler is always validated (reconciler.io
//! validates nested reconcilers only when asked to validate recursively), though its setup
//! is still not called, which is the point of this type.

use async_trait::async_trait;
use kube::api::DynamicObject;

use super::nested::{SetupHook, owner, validate_nested};
use super::{Context, Draft, Outcome, Setup, SetupStep, SubReconciler, ValidationError};

/// Runs only its own setup (not the nested reconciler's) and delegates reconciles; with no
/// reconciler a reconcile does nothing.
pub struct OverrideSetup<R = DynamicObject> {
    name: String,
    setup: Option<SetupHook>,
    reconciler: Option<Box<dyn SubReconciler<R>>>,
}

impl<R> Default for OverrideSetup<R> {
    fn default() -> Self {
        Self {
            name: "SkipSetup".into(),
            setup: None,
            reconciler: None,
        }
    }
}

impl<R: Send + Sync + 'static> OverrideSetup<R> {
    /// An empty override; set at least one of `with_setup` or `reconciler`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The setup run instead of the nested reconciler's.
    pub fn with_setup(mut self, setup: impl SetupStep) -> Self {
        self.setup = Some(Box::new(setup));
        self
    }

    /// The reconciler that reconciles (its setup is not called).
    pub fn reconciler(mut self, reconciler: impl SubReconciler<R> + 'static) -> Self {
        self.reconciler = Some(Box::new(reconciler));
        self
    }

    /// Names the reconciler (default `SkipSetup`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl<R: Send + Sync + 'static> SubReconciler<R> for OverrideSetup<R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        match &self.setup {
            Some(own) => own(setup),
            None => Ok(()),
        }
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("OverrideSetup", &self.name);
        match &self.reconciler {
            Some(reconciler) => validate_nested(owner, "Reconciler", reconciler.as_ref()),
            None if self.setup.is_some() => Ok(()),
            None => Err(ValidationError(format!(
                "{owner} must implement at least one of Setup or Reconciler"
            ))),
        }
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        match &self.reconciler {
            Some(reconciler) => reconciler.reconcile(ctx, resource).await,
            None => Outcome::done(),
        }
    }
}
