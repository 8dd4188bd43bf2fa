//! Reconcilers: the `SubReconciler` contract and the reconciler types built on it, in the
//! style of reconciler.io runtime (`reconciler.io/runtime/reconcilers`); each module
//! describes where it departs from it.
//!
//! A sub-reconciler changes the resource in place, through a [`Draft`] that copies the
//! cached object only when first written; the root reconciler persists status changes. Results aggregate ([`ReconcileResult::aggregate`]) and errors carry markers
//! ([`ReconcileError`]: quiet, halt, skip status update, durable).

mod advice;
mod aggregate;
mod always;
mod applying_object_manager;
mod cast;
pub(crate) mod cel;
mod cel_direct;
pub(crate) mod cel_errors;
mod cel_kro;
mod cel_random;
pub(crate) mod cel_reads;
mod cel_view;
mod child;
mod child_set;
mod child_set_result;
mod config;
mod context;
mod draft;
mod error;
mod events;
pub(crate) mod failure;
mod finalizers;
mod flow;
mod for_each;
mod known_children;
mod nested;
mod object_manager;
mod override_setup;
mod permissions;
use permissions::events_gvk;
mod predicate;
mod resource;
mod result;
mod sequence;
mod setup;
mod stash;
mod steps;
mod suppress;
mod sync;
mod try_catch;
mod updating_object_manager;
mod validation;
mod with_config;
mod with_finalizer;

pub use advice::Advice;
pub use aggregate::AggregateReconciler;
pub use always::Always;
pub use applying_object_manager::ApplyingObjectManager;
pub use cast::{CastError, CastResource};
pub use cel::CelError;
pub use child::{
    ChildReconciler, OnlyReconcileChildStatus, OwnerReferenceError, ParentAndChild, api_reason,
    api_status,
};
pub use child_set::ChildSetReconciler;
pub use child_set_result::{ChildSetPartialResult, ChildSetResult};
pub use config::{Config, DEFAULT_RESYNC};
pub use context::Context;
pub use draft::Draft;
pub use error::{Markers, ReconcileError};
pub use finalizers::{add_finalizer, clear_finalizer};
pub use flow::{IfThen, MaxIterationsExceeded, While};
pub use for_each::{Cursor, ForEach};
pub use object_manager::ObjectManager;
pub use override_setup::OverrideSetup;
pub use permissions::{Permission, READ, WRITE};
pub use predicate::Predicate;
pub use resource::{RequestOptions, ResourceReconciler, RootReconciler};
pub use result::ReconcileResult;
pub use sequence::Sequence;
pub use setup::{ScopedWatch, Setup, SetupStep, Watch};
pub use stash::{Stash, Stasher};
pub use steps::{
    AfterReconcile, AroundStep, AsyncDerive, AsyncStep, BeforeReconcile, Check, ChildListOptions,
    Derive, Harmonize, IdentifyChild, Merge, OutcomeStep, ReflectChild, ReflectChildren, Sanitize,
    SelectConfig, Step,
};
pub use suppress::SuppressTransientErrors;
pub use sync::{HasMetadata, SyncReconciler};
pub use try_catch::TryCatch;
pub use updating_object_manager::UpdatingObjectManager;
pub use validation::ValidationError;
pub use with_config::WithConfig;
pub use with_finalizer::WithFinalizer;

use async_trait::async_trait;
use kube::api::DynamicObject;

/// The outcome of a reconcile: a result, and an error that may come with it (Go returns
/// both: e.g. a requeue together with a halt).
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Whether and when to reconcile again.
    pub result: ReconcileResult,
    /// The error, if any.
    pub error: Option<ReconcileError>,
}

impl Outcome {
    /// Success with `result`.
    pub fn ok(result: ReconcileResult) -> Self {
        Self {
            result,
            error: None,
        }
    }

    /// Success with nothing more to do.
    pub fn done() -> Self {
        Self::default()
    }

    /// Failure with an empty result.
    pub fn err(error: impl Into<ReconcileError>) -> Self {
        Self {
            result: ReconcileResult::done(),
            error: Some(error.into()),
        }
    }

    /// A result together with an error.
    pub fn with(result: ReconcileResult, error: Option<ReconcileError>) -> Self {
        Self { result, error }
    }

    /// Whether there is no error.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }
}

impl From<Result<ReconcileResult, ReconcileError>> for Outcome {
    fn from(result: Result<ReconcileResult, ReconcileError>) -> Self {
        match result {
            Ok(result) => Outcome::ok(result),
            Err(error) => Outcome::err(error),
        }
    }
}

/// A reconciler that changes `resource` in place. `R` is the resource type: a
/// `DynamicObject`, or a duck type inside `CastResource`. The resource comes as a [`Draft`]:
/// it reads as `R`, and the first write copies it out of the cache.
#[async_trait]
pub trait SubReconciler<R: Send + Sync = DynamicObject>: Send + Sync {
    /// The name used in logs and validation messages.
    fn name(&self) -> &str;

    /// Declares the watches this reconciler (and those it nests) needs.
    fn setup(&self, _setup: &mut Setup) -> Result<(), ValidationError> {
        Ok(())
    }

    /// Checks that this reconciler (and those it nests) is complete.
    fn validate(&self) -> Result<(), ValidationError> {
        Ok(())
    }

    /// Reconciles `resource`, changing it in place.
    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome;
}
