//! The closure shapes reconcilers take: one named trait per shape, each implemented by every
//! closure (or function) of that shape, so a signature says `impl Merge` instead of spelling
//! out the `Fn` bound.
//!
//! A step that never awaits is a plain closure (`|ctx, widget| { ...; Ok(()) }`). A step that
//! may await (read or track another object, call an API) returns a boxed future:
//! `|ctx, widget| Box::pin(async move { ... })`, and its method ends in `_async` when a plain
//! form exists too. Async closures (`async |ctx, widget| ...`) are not accepted: on stable
//! Rust an async closure that captures anything does not implement `Fn`, and the future of an
//! `AsyncFn` cannot be required to be `Send`, which a multi-threaded runtime needs.

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::api::DynamicObject;
use serde_json::Value;

use super::{ChildSetResult, Config, Context, Draft, Outcome, ReconcileError, SubReconciler};
use crate::client::ListOptions;

/// Declares a named trait for a closure shape and implements it for every closure of it.
macro_rules! closure_shape {
    ($(#[$doc:meta])* $name:ident $(<$($param:ident $(= $default:ty)?),*>)? : $($bound:tt)+) => {
        $(#[$doc])*
        pub trait $name $(<$($param $(= $default)?),*>)?: $($bound)+ + Send + Sync + 'static {}

        impl<$($($param,)*)? F> $name $(<$($param),*>)? for F where F: $($bound)+ + Send + Sync + 'static {}
    };
}

closure_shape! {
    /// Changes the resource in place without awaiting: `|ctx, resource| { ...; Ok(()) }`.
    /// `T` is `Result<(), ReconcileError>`, or an [`Outcome`] to also say when to reconcile
    /// again.
    Mutate<R, T = Result<(), ReconcileError>>: Fn(&Context, &mut Draft<R>) -> T
}

closure_shape! {
    /// Changes the resource in place and may await:
    /// `|ctx, resource| Box::pin(async move { ...; Ok(()) })`.
    AsyncMutate<R, T = Result<(), ReconcileError>>:
        for<'a> Fn(&'a Context, &'a mut Draft<R>) -> BoxFuture<'a, T>
}

closure_shape! {
    /// Computes a value from the resource without awaiting (a desired child, the desired
    /// children, the desired aggregate, the items of a loop).
    Derive<T, R = DynamicObject>: Fn(&Context, &R) -> Result<T, ReconcileError>
}

closure_shape! {
    /// Computes a value from the resource and may await, e.g. to read (and track) the objects
    /// it refers to: `|ctx, parent| Box::pin(async move { ... })`.
    AsyncDerive<T, R = DynamicObject>:
        for<'a> Fn(&'a Context, &'a R) -> BoxFuture<'a, Result<T, ReconcileError>>
}

closure_shape! {
    /// Sees (and may replace) the outcome of what ran before: `Advice`'s after and
    /// `TryCatch`'s catch (`ctx`, `resource`, `outcome`).
    OutcomeStep<R>: for<'a> Fn(&'a Context, &'a mut Draft<R>, Outcome) -> BoxFuture<'a, Outcome>
}

closure_shape! {
    /// Runs in place of a reconciler, calling into it as often as it likes (`Advice`'s
    /// around: `ctx`, `resource`, the reconciler).
    AroundStep<R>:
        for<'a> Fn(&'a Context, &'a mut Draft<R>, &'a dyn SubReconciler<R>) -> BoxFuture<'a, Outcome>
}

closure_shape! {
    /// Whether something holds for the resource (a [`Predicate`](super::Predicate) written
    /// in Rust): `|ctx, resource| resource.data["spec"]["enabled"] == true`.
    Check<R>: Fn(&Context, &R) -> bool
}

closure_shape! {
    /// Writes the child (`None` when there is none) or the error that kept it from being
    /// written onto the parent (`ctx`, `parent`, `child`, `error`); an error returned here is
    /// the reconciler's error.
    ReflectChild: Fn(
        &Context,
        &mut Draft,
        Option<&DynamicObject>,
        Option<&ReconcileError>,
    ) -> Result<(), ReconcileError>
}

closure_shape! {
    /// Writes the outcome of every child of a set onto the parent (`ctx`, `parent`, `result`).
    ReflectChildren: Fn(&Context, &mut Draft, &ChildSetResult) -> Result<(), ReconcileError>
}

closure_shape! {
    /// The id that pairs a desired child with an actual one.
    IdentifyChild: Fn(&DynamicObject) -> String
}

closure_shape! {
    /// Which objects are listed as candidate children of the parent.
    ChildListOptions: Fn(&Context, &DynamicObject) -> ListOptions
}

closure_shape! {
    /// Merges the desired object into the current one before an update (`current`,
    /// `desired`); no change, no update. `current` is a [`Draft`] of the actual object: a
    /// merge that writes only what differs
    /// (`if current.data["data"] != desired.data["data"] { current.data["data"] = ... }`)
    /// leaves an object in sync uncopied and uncompared; one that always writes copies it
    /// and compares the copy with the actual object.
    Merge: Fn(&mut Draft, &DynamicObject)
}

closure_shape! {
    /// Copies immutable fields of the current object onto the desired one (`current`,
    /// `desired`).
    Harmonize: Fn(&DynamicObject, &mut DynamicObject)
}

closure_shape! {
    /// The projection of an object that is logged (e.g. without secret data).
    Sanitize: Fn(&DynamicObject) -> Value
}

closure_shape! {
    /// Runs before a root reads the resource and may await; returns the context to continue
    /// with and an outcome whose error ends the request.
    BeforeReconcile: Fn(Context) -> BoxFuture<'static, (Context, Outcome)>
}

closure_shape! {
    /// Sees (and may replace) the outcome of a root's request; it may await.
    AfterReconcile: for<'a> Fn(&'a Context, Outcome) -> BoxFuture<'a, Outcome>
}

closure_shape! {
    /// Chooses the config nested reconcilers use (`ctx` is `None` at setup), from the
    /// current one.
    SelectConfig: Fn(Option<&Context>, &Config) -> Result<Config, ReconcileError>
}

/// A step as reconcilers store it. A plain one is called as is: made async, it would box a
/// future (and copy its result into it) for a result ready at once.
pub(super) enum StoredStep<R, T> {
    Plain(Box<dyn Mutate<R, T>>),
    Async(Box<dyn AsyncMutate<R, T>>),
}

impl<R: Send + Sync, T> StoredStep<R, T> {
    /// Runs the step on `resource`.
    pub(super) async fn run(&self, ctx: &Context, resource: &mut Draft<R>) -> T {
        match self {
            StoredStep::Plain(step) => step(ctx, resource),
            StoredStep::Async(step) => step(ctx, resource).await,
        }
    }
}

/// A derivation as reconcilers store it (shared: a child set hands its children's to the
/// reconciler of each). A plain one is called as is: made async, it would box a future (and
/// copy its value, a whole desired object, into it) for a value ready at once.
pub(super) enum Derivation<T, R = DynamicObject> {
    Plain(Arc<dyn Derive<T, R>>),
    Async(Arc<dyn AsyncDerive<T, R>>),
}

impl<T, R> Clone for Derivation<T, R> {
    fn clone(&self) -> Self {
        match self {
            Derivation::Plain(derive) => Derivation::Plain(derive.clone()),
            Derivation::Async(derive) => Derivation::Async(derive.clone()),
        }
    }
}

impl<T, R: Sync> Derivation<T, R> {
    /// A plain derivation.
    pub(super) fn plain(derive: impl Derive<T, R>) -> Self {
        Derivation::Plain(Arc::new(derive))
    }

    /// A derivation that may await.
    pub(super) fn of_async(derive: impl AsyncDerive<T, R>) -> Self {
        Derivation::Async(Arc::new(derive))
    }

    /// Derives the value from `resource`.
    pub(super) async fn derive(&self, ctx: &Context, resource: &R) -> Result<T, ReconcileError> {
        match self {
            Derivation::Plain(derive) => derive(ctx, resource),
            Derivation::Async(derive) => derive(ctx, resource).await,
        }
    }
}
