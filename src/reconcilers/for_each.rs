//! `ForEach`: a reconciler called once per item, with a [`Cursor`] in the stash.
//!
//! Departure from reconciler.io: the nested reconciler is always validated (reconciler.io
//! validates nested reconcilers only when asked to validate recursively). As in Go, the
//! stash is request-wide: the last cursor stays stashed after the loop, and nested loops
//! over the same item type share one key.

use std::any::{Any, type_name};

use async_trait::async_trait;
use kube::api::DynamicObject;
use serde::Serialize;
use tracing::Instrument;

use crate::trace::debug_span;

use super::nested::{owner, validate_nested};
use super::steps::{AsyncDerive, Derivation, Derive};
use super::{Context, Draft, Outcome, ReconcileResult, Setup, SubReconciler, ValidationError};

/// Where a `ForEach` loop is: the index, the number of items, and the item. Serializable
/// (when the item is) so that tests can compare a stashed cursor.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cursor<I> {
    /// The index of the current item.
    pub index: usize,
    /// The number of items.
    pub length: usize,
    /// The current item.
    pub item: I,
}

impl<I: Any + Clone + Send + Sync> Cursor<I> {
    /// The stash key of cursors over items of type `I`.
    pub fn key() -> String {
        format!("reconciler.io/runtime:cursor:{}", type_name::<I>())
    }

    /// The cursor of the innermost loop over items of type `I`, if any.
    pub fn retrieve(ctx: &Context) -> Option<Self> {
        ctx.stash().retrieve(&Self::key())
    }

    fn store(self, ctx: &Context) {
        ctx.stash().store(&Self::key(), self);
    }
}

/// Calls the reconciler for each item `items` returns; stops at the first error, returning
/// the aggregate of the earlier iterations only (as Go does).
pub struct ForEach<I, R = DynamicObject> {
    name: String,
    items: Derivation<Vec<I>, R>,
    reconciler: Box<dyn SubReconciler<R>>,
}

impl<I: Send + 'static, R: Send + Sync + 'static> ForEach<I, R> {
    /// Calls `reconciler` for each of the items `items` returns, e.g.
    /// `|_ctx, resource| Ok(vec![..])`.
    pub fn new(items: impl Derive<Vec<I>, R>, reconciler: impl SubReconciler<R> + 'static) -> Self {
        Self::with_items(Derivation::plain(items), reconciler)
    }

    /// As [`ForEach::new`], with items that may await (e.g. list objects):
    /// `|ctx, resource| Box::pin(async move { Ok(vec![..]) })`.
    pub fn new_async(
        items: impl AsyncDerive<Vec<I>, R>,
        reconciler: impl SubReconciler<R> + 'static,
    ) -> Self {
        Self::with_items(Derivation::of_async(items), reconciler)
    }

    fn with_items(
        items: Derivation<Vec<I>, R>,
        reconciler: impl SubReconciler<R> + 'static,
    ) -> Self {
        Self {
            name: "ForEach".into(),
            items,
            reconciler: Box::new(reconciler),
        }
    }

    /// Names the reconciler (default `ForEach`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl<I, R> SubReconciler<R> for ForEach<I, R>
where
    I: Any + Clone + Send + Sync,
    R: Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.reconciler.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("ForEach", &self.name);
        validate_nested(owner, "Reconciler", self.reconciler.as_ref())
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        let items = match self.items.derive(ctx, resource).await {
            Ok(items) => items,
            Err(error) => return Outcome::err(error),
        };
        let length = items.len();
        let mut aggregate = ReconcileResult::done();
        for (index, item) in items.into_iter().enumerate() {
            Cursor {
                index,
                length,
                item,
            }
            .store(ctx);
            let span = debug_span!("for_each", name = %self.name, index);
            let outcome = self
                .reconciler
                .reconcile(ctx, resource)
                .instrument(span)
                .await;
            if outcome.error.is_some() {
                return Outcome::with(aggregate, outcome.error);
            }
            aggregate = aggregate.aggregate(outcome.result);
        }
        Outcome::ok(aggregate)
    }
}
