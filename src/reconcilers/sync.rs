//! `SyncReconciler`: the simplest sub-reconciler, a function that syncs the resource, and an
//! optional one that finalizes it while it is being deleted.

use async_trait::async_trait;
use futures::future::BoxFuture;
use kube::api::{DynamicObject, ObjectMeta};
use tracing::debug;

use super::nested::SetupHook;
use super::steps;
use super::steps::{AsyncMutate, Mutate};
use super::{
    Context, Draft, Outcome, ReconcileError, ReconcileResult, Setup, SetupStep, SubReconciler,
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

/// A sync or finalize step as stored: it says whether to requeue.
type StoredStep<R> = steps::StoredStep<R, Outcome>;

/// Calls a function to sync the resource (reconciler.io's `SyncReconciler`).
///
/// The function changes the resource in place through its [`Draft`]; what it writes under
/// `status` is written back by the root (see [`ResourceReconciler`](super::ResourceReconciler)
/// for the status-write rule: a status write that succeeds replaces the error returned
/// here). Name the resource's type in the closure (`widget: &mut Draft`, or
/// `&mut Draft<MyDuck>` inside a `CastResource`): nothing else tells the compiler what `R` is.
///
/// ```no_run
/// use dynrec::prelude::*;
///
/// let count_parts = SyncReconciler::new(|_ctx: &Context, widget: &mut Draft| {
///     let parts = widget.data["spec"]["parts"].as_array().map_or(0, Vec::len);
///     if widget.data["status"]["partCount"] != parts {
///         widget.data["status"]["partCount"] = parts.into();
///     }
///     Ok(())
/// })
/// .named("CountParts");
/// # let _: SyncReconciler = count_parts;
/// ```
pub struct SyncReconciler<R = DynamicObject> {
    name: String,
    sync: StoredStep<R>,
    finalize: Option<StoredStep<R>>,
    sync_during_finalization: bool,
    setup: Option<SetupHook>,
}

/// Lifts a step that returns no result into one that does.
fn with_done_result<R: Send + 'static>(step: impl Mutate<R>) -> StoredStep<R> {
    let step = move |ctx: &Context, resource: &mut Draft<R>| {
        Outcome::from(step(ctx, resource).map(|()| ReconcileResult::done()))
    };
    StoredStep::Plain(Box::new(step))
}

/// Lifts a step that may await and returns no result into one that does.
fn with_done_result_async<R: Send + 'static>(
    step: impl AsyncMutate<R, Result<(), ReconcileError>>,
) -> StoredStep<R> {
    StoredStep::Async(Box::new(
        move |ctx: &Context, resource: &mut Draft<R>| -> BoxFuture<'_, Outcome> {
            let step = step(ctx, resource);
            Box::pin(async move { Outcome::from(step.await.map(|()| ReconcileResult::done())) })
        },
    ))
}

impl<R: Send + 'static> SyncReconciler<R> {
    /// Syncs with `sync` (reconciler.io's `Sync`):
    /// `SyncReconciler::new(|ctx, resource| { ...; Ok(()) })`.
    pub fn new(sync: impl Mutate<R>) -> Self {
        Self::storing(with_done_result(sync))
    }

    /// Syncs with `sync`, which may await:
    /// `SyncReconciler::new_async(|ctx, resource| Box::pin(async move { ...; Ok(()) }))`.
    pub fn new_async(sync: impl AsyncMutate<R>) -> Self {
        Self::storing(with_done_result_async(sync))
    }

    /// Syncs with `sync`, which also says when to reconcile again (`SyncWithResult`).
    pub fn with_result(sync: impl Mutate<R, Outcome>) -> Self {
        Self::storing(StoredStep::Plain(Box::new(sync)))
    }

    /// As [`SyncReconciler::with_result`], with a step that may await.
    pub fn with_result_async(sync: impl AsyncMutate<R, Outcome>) -> Self {
        Self::storing(StoredStep::Async(Box::new(sync)))
    }

    fn storing(sync: StoredStep<R>) -> Self {
        Self {
            name: "SyncReconciler".into(),
            sync,
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
    pub fn finalize(mut self, finalize: impl Mutate<R>) -> Self {
        self.finalize = Some(with_done_result(finalize));
        self
    }

    /// As [`SyncReconciler::finalize`], with a step that may await.
    pub fn finalize_async(mut self, finalize: impl AsyncMutate<R>) -> Self {
        self.finalize = Some(with_done_result_async(finalize));
        self
    }

    /// Finalizes with `finalize`, which also says when to reconcile again.
    pub fn finalize_with_result(mut self, finalize: impl Mutate<R, Outcome>) -> Self {
        self.finalize = Some(StoredStep::Plain(Box::new(finalize)));
        self
    }

    /// As [`SyncReconciler::finalize_with_result`], with a step that may await.
    pub fn finalize_with_result_async(mut self, finalize: impl AsyncMutate<R, Outcome>) -> Self {
        self.finalize = Some(StoredStep::Async(Box::new(finalize)));
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

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        let terminating = resource.is_terminating();
        let mut result = ReconcileResult::done();
        if !terminating || self.sync_during_finalization {
            let synced = self.sync.run(ctx, resource).await;
            result = synced.result;
            if let Some(err) = synced.error {
                if !err.is_quiet() {
                    debug!(reconciler = %self.name, %err, "unable to sync");
                }
                return Outcome::with(result, Some(err));
            }
        }
        if let (true, Some(finalize)) = (terminating, &self.finalize) {
            let finalized = finalize.run(ctx, resource).await;
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
