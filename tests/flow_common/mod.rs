//! `TestReconciler`, a reconciler made from a closure, shared by the higher-order
//! reconciler tests (for validation and setup checks, and for reconciling types that
//! `SyncReconciler` cannot wrap, such as metadata-less duck projections).
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::Arc;

use async_trait::async_trait;
use dynrec::object::Gvk;
use dynrec::reconcilers::{Context, Draft, Outcome, Setup, SubReconciler, ValidationError, Watch};
use jiff::Timestamp;
use kube::api::DynamicObject;

/// A fixed "now" for requests.
pub fn now() -> Timestamp {
    "2024-01-01T00:00:00Z".parse().unwrap()
}

type SyncBody<R> = dyn Fn(&Context, &mut Draft<R>) -> Outcome + Send + Sync;

/// A reconciler made from a synchronous closure; it can be made invalid and can declare a
/// watch, to test how composites validate and set up their children.
pub struct TestReconciler<R = DynamicObject> {
    name: String,
    body: Arc<SyncBody<R>>,
    invalid: Option<String>,
    watch: Option<Gvk>,
}

impl<R> TestReconciler<R> {
    /// A reconciler running `body`.
    pub fn new(body: impl Fn(&Context, &mut Draft<R>) -> Outcome + Send + Sync + 'static) -> Self {
        Self {
            name: "TestReconciler".into(),
            body: Arc::new(body),
            invalid: None,
            watch: None,
        }
    }

    /// Fails validation with `message`.
    pub fn invalid(mut self, message: &str) -> Self {
        self.invalid = Some(message.into());
        self
    }

    /// Declares a tracked watch of `gvk` at setup.
    pub fn watching(mut self, gvk: Gvk) -> Self {
        self.watch = Some(gvk);
        self
    }
}

#[async_trait]
impl<R: Send + Sync> SubReconciler<R> for TestReconciler<R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        if let Some(gvk) = &self.watch {
            setup.watch(Watch::Tracked(gvk.clone()));
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ValidationError> {
        match &self.invalid {
            Some(message) => Err(ValidationError(message.clone())),
            None => Ok(()),
        }
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        (self.body)(ctx, resource)
    }
}
