//! `SyncReconciler`: the simplest sub-reconciler, a function that syncs the resource, and an
//! optional one that finalizes it while it is being deleted.

use async_trait::async_trait;
use futures::future::BoxFuture;
use kube::api::{DynamicObject, ObjectMeta};
use tracing::debug;

use super::nested::SetupHook;
use super::{
    Context, Outcome, ReconcileError, ReconcileResult, Setup, SetupStep, SubReconciler,
    ValidationError,
};
use crate::client::Ducked;

/// Access to the metadata of a resource, whatever its representation.
pub trait HasMetadata {
    /// The resource's metadata.
    fn object_meta(&self) -> &ObjectMeta;

    /// Whether the resource is being deleted.
    fn is_terminating(&self) -> bool {
        self.object_meta().deletion_timestamp.is_some()
    }
}

impl HasMetadata for DynamicObject {
    fn object_meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

impl<T> HasMetadata for Ducked<T> {
    fn object_meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

/// A sync or finalize step: changes the resource in place and says whether to requeue.
pub type SyncFn<R> =
    Box<dyn for<'a> Fn(&'a Context, &'a mut R) -> BoxFuture<'a, Outcome> + Send + Sync>;

/// Calls a function to sync the resource (reconciler.io's `SyncReconciler`).
pub struct SyncReconciler<R = DynamicObject> {
    name: String,
    sync: SyncFn<R>,
    finalize: Option<SyncFn<R>>,
    sync_during_finalization: bool,
    setup: Option<SetupHook>,
}

/// Lifts a step that returns no result into one that does.
fn without_result<R, F>(step: F) -> SyncFn<R>
where
    R: Send + 'static,
    F: for<'a> Fn(&'a Context, &'a mut R) -> BoxFuture<'a, Result<(), ReconcileError>>
        + Send
        + Sync
        + 'static,
{
    Box::new(move |ctx, resource| {
        let step = step(ctx, resource);
        Box::pin(async move { Outcome::from(step.await.map(|()| ReconcileResult::done())) })
    })
}

impl<R: Send + 'static> SyncReconciler<R> {
    /// Syncs with `sync` (reconciler.io's `Sync`).
    pub fn new<F>(sync: F) -> Self
    where
        F: for<'a> Fn(&'a Context, &'a mut R) -> BoxFuture<'a, Result<(), ReconcileError>>
            + Send
            + Sync
            + 'static,
    {
        Self::with_result(without_result(sync))
    }

    /// Syncs with `sync`, which also says when to reconcile again (`SyncWithResult`).
    pub fn with_result<F>(sync: F) -> Self
    where
        F: for<'a> Fn(&'a Context, &'a mut R) -> BoxFuture<'a, Outcome> + Send + Sync + 'static,
    {
        Self {
            name: "SyncReconciler".into(),
            sync: Box::new(sync),
            finalize: None,
            sync_during_finalization: false,
            setup: None,
        }
    }

    /// Names the reconciler (default `SyncReconciler`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Finalizes with `finalize` while the resource is being deleted (`Finalize`).
    pub fn finalize<F>(self, finalize: F) -> Self
    where
        F: for<'a> Fn(&'a Context, &'a mut R) -> BoxFuture<'a, Result<(), ReconcileError>>
            + Send
            + Sync
            + 'static,
    {
        self.finalize_with_result(without_result(finalize))
    }

    /// Finalizes with `finalize`, which also says when to reconcile again.
    pub fn finalize_with_result<F>(mut self, finalize: F) -> Self
    where
        F: for<'a> Fn(&'a Context, &'a mut R) -> BoxFuture<'a, Outcome> + Send + Sync + 'static,
    {
        self.finalize = Some(Box::new(finalize));
        self
    }

    /// Declares watches at setup with `setup` (reconciler.io's `Setup`), e.g. the kinds the
    /// sync step tracks.
    pub fn with_setup(mut self, setup: impl SetupStep) -> Self {
        self.setup = Some(Box::new(setup));
        self
    }

    /// Also syncs while the resource is being deleted (before finalizing).
    pub fn sync_during_finalization(mut self, sync: bool) -> Self {
        self.sync_during_finalization = sync;
        self
    }
}

#[async_trait]
impl<R: HasMetadata + Send + Sync + 'static> SubReconciler<R> for SyncReconciler<R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.setup.as_ref().map_or(Ok(()), |declare| declare(setup))
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut R) -> Outcome {
        let terminating = resource.is_terminating();
        let mut result = ReconcileResult::done();
        if !terminating || self.sync_during_finalization {
            let synced = (self.sync)(ctx, resource).await;
            result = synced.result;
            if let Some(err) = synced.error {
                if !err.is_quiet() {
                    debug!(reconciler = %self.name, %err, "unable to sync");
                }
                return Outcome::with(result, Some(err));
            }
        }
        if let (true, Some(finalize)) = (terminating, &self.finalize) {
            let finalized = finalize(ctx, resource).await;
            result = result.aggregate(finalized.result);
            if let Some(err) = &finalized.error
                && !err.is_quiet()
            {
                debug!(reconciler = %self.name, %err, "unable to finalize");
            }
            return Outcome::with(result, finalized.error);
        }
        Outcome::ok(result)
    }
}
