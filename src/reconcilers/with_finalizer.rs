//! `WithFinalizer`: keeps a finalizer on the resource while the nested reconciler has state
//! to clean up, and clears it once the resource is terminating and cleanup is done.
//!
//! Departures from reconciler.io: the nested reconciler is always validated (reconciler.io
//! validates nested reconcilers only when asked to validate recursively).

use async_trait::async_trait;
use kube::api::DynamicObject;
use tracing::{Instrument, debug};

use crate::trace::debug_span;

use super::nested::{owner, validate_nested};
use super::{
    Context, Draft, Outcome, Predicate, Setup, SubReconciler, ValidationError, add_finalizer,
    clear_finalizer,
};

/// Adds `finalizer` before the nested reconciler runs (unless terminating); when the
/// resource is terminating, the nested reconciler succeeded and `ready_to_clear` holds,
/// clears it.
pub struct WithFinalizer {
    name: String,
    finalizer: String,
    ready_to_clear: Option<Predicate<DynamicObject>>,
    reconciler: Box<dyn SubReconciler<DynamicObject>>,
}

impl WithFinalizer {
    /// Keeps `finalizer` on the resource around `reconciler`.
    pub fn new(
        finalizer: impl Into<String>,
        reconciler: impl SubReconciler<DynamicObject> + 'static,
    ) -> Self {
        Self {
            name: "WithFinalizer".into(),
            finalizer: finalizer.into(),
            ready_to_clear: None,
            reconciler: Box::new(reconciler),
        }
    }

    /// Keeps the finalizer of a terminating resource until this holds (default: always).
    pub fn ready_to_clear_finalizer(mut self, ready: Predicate<DynamicObject>) -> Self {
        self.ready_to_clear = Some(ready);
        self
    }

    /// Names the reconciler (default `WithFinalizer`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl SubReconciler<DynamicObject> for WithFinalizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        if let Some(resource) = setup.resource_type().cloned() {
            setup.require(&self.name, &resource, "", &["patch"]);
        }
        self.reconciler.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("WithFinalizer", &self.name);
        if self.finalizer.is_empty() {
            return Err(ValidationError(format!("{owner} must define Finalizer")));
        }
        validate_nested(owner, "Reconciler", self.reconciler.as_ref())
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft) -> Outcome {
        let span = debug_span!("with_finalizer", name = %self.name, finalizer = %self.finalizer);
        async {
            let terminating = resource.metadata.deletion_timestamp.is_some();
            if !terminating && let Err(error) = add_finalizer(ctx, resource, &self.finalizer).await
            {
                return Outcome::err(error);
            }
            let outcome = self.reconciler.reconcile(ctx, resource).await;
            if outcome.error.is_some() || resource.metadata.deletion_timestamp.is_none() {
                return outcome;
            }
            let ready = self
                .ready_to_clear
                .as_ref()
                .is_none_or(|p| p.test(ctx, resource));
            if !ready {
                debug!(name = %self.name, "keeping the finalizer until ready to clear it");
                return outcome;
            }
            match clear_finalizer(ctx, resource, &self.finalizer).await {
                Ok(()) => outcome,
                Err(error) => Outcome::err(error),
            }
        }
        .instrument(span)
        .await
    }
}
