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
mod cel_predicate;
mod child;
mod child_set;
mod child_set_result;
mod config;
mod context;
mod contract;
mod draft;
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
mod sequence;
mod setup;
mod stash;
mod status_policy;
pub mod steps;
mod suppress;
mod sync;
mod try_catch;
mod updating_object_manager;
mod validation;
mod with_config;
mod with_finalizer;

pub use crate::cel::CelError;
pub use advice::Advice;
pub use aggregate::AggregateReconciler;
pub use always::Always;
pub use applying_object_manager::ApplyingObjectManager;
pub use cast::{CastError, CastResource};
pub use child::{ChildReconciler, OnlyReconcileChildStatus, OwnerReferenceError, ParentAndChild};
pub use child_set::ChildSetReconciler;
pub use child_set_result::{ChildSetPartialResult, ChildSetResult};
pub use config::{Config, DEFAULT_RESYNC};
pub use context::Context;
pub use contract::{
    Markers, Outcome, ReconcileError, ReconcileResult, RequestOptions, RootReconciler,
    SubReconciler,
};
pub use draft::Draft;
pub use finalizers::{add_finalizer, clear_finalizer};
pub use flow::{IfThen, MaxIterationsExceeded, While};
pub use for_each::{Cursor, ForEach};
pub use object_manager::ObjectManager;
pub use override_setup::OverrideSetup;
pub use permissions::{Permission, READ, WRITE};
pub use predicate::Predicate;
pub use resource::ResourceReconciler;
pub use sequence::Sequence;
pub use setup::{ScopedWatch, Setup, SetupStep, Watch};
pub use stash::{Stash, Stasher};
pub use status_policy::StatusPolicy;
pub use suppress::SuppressTransientErrors;
pub use sync::{HasMetadata, SyncReconciler};
pub use try_catch::TryCatch;
pub use updating_object_manager::UpdatingObjectManager;
pub use validation::ValidationError;
pub use with_config::WithConfig;
pub use with_finalizer::WithFinalizer;
