//! `ChildSetReconciler`: keeps N children of one kind, correlated by an id, in step with the
//! reconciled resource: one list per request, shared with a `ChildReconciler` per id (in
//! sorted id order), and one reflection of every child's outcome onto the parent.
//!
//! Deliberate departures from reconciler.io: a finalizer implies skipping owner references
//! everywhere, including the listing and the setup watches (reconciler.io builds its
//! listing before a finalizer turns owner references off, so it still lists and watches by
//! owner); and, as in `ChildReconciler`, a missing child is `None`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use kube::api::DynamicObject;
use parking_lot::Mutex;
use tracing::Instrument;

use crate::trace::debug_span;

use super::child::{DesiredChild, ParentAndChild, is_only_reconcile_child_status};
use super::known_children::{clear_known_children, stash_known_children};
use super::steps::{
    AsyncDerive, ChildListOptions, Derivation, Derive, IdentifyChild, ReflectChildren,
};
use super::{
    ChildReconciler, ChildSetPartialResult, ChildSetResult, Context, Draft, ObjectManager, Outcome,
    Predicate, ReconcileError, Sequence, Setup, SetupStep, SubReconciler, ValidationError,
    WithFinalizer,
};
use crate::object::Gvk;

/// Manages a set of children correlated by id (reconciler.io's `ChildSetReconciler`). As
/// with [`ChildReconciler`], children are written by server-side apply unless
/// `child_object_manager` gives another manager.
pub struct ChildSetReconciler {
    name: String,
    finalizer: String,
    children: ChildReconciler,
    desired_children: Derivation<Vec<DynamicObject>>,
    reflect: Arc<dyn ReflectChildren>,
    identify_child: Arc<dyn IdentifyChild>,
}

impl ChildSetReconciler {
    /// A reconciler of children of `child_type`, named `{Kind}ChildSetReconciler`: `desired`
    /// computes the children the parent should have (`|ctx, parent| Ok(vec![...])`;
    /// returning [`OnlyReconcileChildStatus`](super::OnlyReconcileChildStatus) leaves them as
    /// they are), `identify` gives a child's id (desired ids must be unique and non-empty),
    /// `reflect` writes the children's outcomes onto the parent.
    pub fn new(
        child_type: Gvk,
        desired: impl Derive<Vec<DynamicObject>>,
        identify: impl IdentifyChild,
        reflect: impl ReflectChildren,
    ) -> Self {
        Self::with_desired(child_type, Derivation::plain(desired), identify, reflect)
    }

    /// As [`ChildSetReconciler::new`], with a `desired` that may await:
    /// `|ctx, parent| Box::pin(async move { Ok(vec![...]) })`.
    pub fn new_async(
        child_type: Gvk,
        desired: impl AsyncDerive<Vec<DynamicObject>>,
        identify: impl IdentifyChild,
        reflect: impl ReflectChildren,
    ) -> Self {
        Self::with_desired(child_type, Derivation::of_async(desired), identify, reflect)
    }

    fn with_desired(
        child_type: Gvk,
        desired_children: Derivation<Vec<DynamicObject>>,
        identify: impl IdentifyChild,
        reflect: impl ReflectChildren,
    ) -> Self {
        // The per-id reconcilers replace these callbacks (see `for_id`).
        let no_child: DesiredChild = Derivation::plain(|_: &Context, _: &DynamicObject| Ok(None));
        let no_reflect = Arc::new(
            |_: &Context, _: &mut Draft, _: Option<&DynamicObject>, _: Option<&ReconcileError>| {
                Ok(())
            },
        );
        Self {
            name: format!("{}ChildSetReconciler", child_type.kind),
            finalizer: String::new(),
            children: ChildReconciler::with_desired(child_type, no_child, no_reflect),
            desired_children,
            reflect: Arc::new(reflect),
            identify_child: Arc::new(identify),
        }
    }

    /// Names the reconciler.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Keeps `finalizer` on the parent while it has children; implies skipping owner
    /// references (then `our_child` and `list_options` are required).
    pub fn finalizer(mut self, finalizer: impl Into<String>) -> Self {
        self.finalizer = finalizer.into();
        self.children = self.children.skipping_owner_reference();
        self
    }

    /// Neither sets nor requires controller owner references on the children (see
    /// [`ChildReconciler::without_owner_reference`]): `list_options` lists the candidates,
    /// `our_child` says which belong to the parent.
    pub fn without_owner_reference(
        mut self,
        list_options: impl ChildListOptions,
        our_child: Predicate<ParentAndChild>,
    ) -> Self {
        self.children = self
            .children
            .without_owner_reference(list_options, our_child);
        self
    }

    /// Writes the children with `manager` (see [`ChildReconciler::child_object_manager`]).
    pub fn child_object_manager(mut self, manager: impl ObjectManager + 'static) -> Self {
        self.children = self.children.child_object_manager(manager);
        self
    }

    /// Which objects are listed as candidate children.
    pub fn list_options(mut self, options: impl ChildListOptions) -> Self {
        self.children = self.children.list_options(options);
        self
    }

    /// Narrows the candidate children further (after the owner reference check).
    pub fn our_child(mut self, our_child: Predicate<ParentAndChild>) -> Self {
        self.children = self.children.our_child(our_child);
        self
    }

    /// The API error reasons reflected instead of failing (see `ChildReconciler`).
    pub fn reflected_child_error_reasons<S: Into<String>>(
        mut self,
        reasons: impl IntoIterator<Item = S>,
    ) -> Self {
        self.children = self.children.reflected_child_error_reasons(reasons);
        self
    }

    /// Declares further watches at setup.
    pub fn with_setup(mut self, setup: impl SetupStep) -> Self {
        self.children = self.children.with_setup(setup);
        self
    }

    /// The desired children by id, checked for empty and duplicate ids.
    fn by_id(
        identify: &Arc<dyn IdentifyChild>,
        desired: Vec<DynamicObject>,
    ) -> Result<BTreeMap<String, DynamicObject>, ReconcileError> {
        let mut by_id = BTreeMap::new();
        for child in desired {
            let id = identify(&child);
            if id.is_empty() {
                return Err(ReconcileError::msg("desired child id may not be empty"));
            }
            if by_id.contains_key(&id) {
                return Err(ReconcileError::msg(format!(
                    "duplicate child id found: {id}"
                )));
            }
            by_id.insert(id, child);
        }
        Ok(by_id)
    }

    /// The reconciler of the child with `id`: desired is `desired` (or the status-only
    /// marker), ours are the children with that id, and its outcome lands in `results`.
    fn for_id(
        &self,
        id: &str,
        identify: &Arc<dyn IdentifyChild>,
        desired: Result<Option<DynamicObject>, ReconcileError>,
        results: &Arc<Mutex<Vec<ChildSetPartialResult>>>,
    ) -> ChildReconciler {
        let user = self.children.our_child_predicate().cloned();
        let (owned_id, identify) = (id.to_string(), identify.clone());
        let description = format!("child id {id:?}");
        let our_child = Predicate::described(description, move |ctx, pair: &ParentAndChild| {
            user.as_ref().is_none_or(|p| p.test(ctx, pair)) && identify(&pair.child) == owned_id
        });
        let (results, owned_id) = (results.clone(), id.to_string());
        let desired: DesiredChild =
            Derivation::plain(move |_: &Context, _: &DynamicObject| desired.clone());
        let reflect = move |_: &Context,
                            _: &mut Draft,
                            child: Option<&DynamicObject>,
                            error: Option<&ReconcileError>| {
            results.lock().push(ChildSetPartialResult {
                id: owned_id.clone(),
                child: child.cloned(),
                error: error.cloned(),
            });
            Ok(())
        };
        self.children
            .clone()
            .named(id)
            .our_child(our_child)
            .replacing(desired, Arc::new(reflect))
    }

    /// Lists once (stashing what it found), builds a reconciler per id and runs them in id
    /// order; an error before any child is reconciled is not reflected.
    async fn reconcile_children(
        &self,
        ctx: &Context,
        parent: &mut Draft,
        identify: &Arc<dyn IdentifyChild>,
        desired_children: &Derivation<Vec<DynamicObject>>,
        results: &Arc<Mutex<Vec<ChildSetPartialResult>>>,
    ) -> Result<Outcome, ReconcileError> {
        let known = self.children.list_our_children(ctx, parent).await?;
        let known_ids: BTreeSet<String> = known.iter().map(|c| identify(c)).collect();
        let child_type = self.children.child_type().clone();
        stash_known_children(ctx, child_type, known);
        let (desired, status_only) = match desired_children.derive(ctx, parent).await {
            Ok(desired) => (desired, None),
            Err(err) if is_only_reconcile_child_status(&err) => (Vec::new(), Some(err)),
            Err(err) => return Err(err),
        };
        let mut by_id = Self::by_id(identify, desired)?;
        let ids: BTreeSet<String> = by_id.keys().cloned().chain(known_ids).collect();
        let reconcilers = ids.iter().map(|id| {
            let desired = match &status_only {
                Some(err) => Err(err.clone()),
                None => Ok(by_id.remove(id)),
            };
            Box::new(self.for_id(id, identify, desired, results)) as Box<dyn SubReconciler>
        });
        let sequence = Sequence::new(reconcilers.collect());
        Ok(match self.finalizer.as_str() {
            "" => sequence.reconcile(ctx, parent).await,
            finalizer => {
                let with_finalizer = WithFinalizer::new(finalizer, sequence);
                with_finalizer.reconcile(ctx, parent).await
            }
        })
    }
}

#[async_trait]
impl SubReconciler<DynamicObject> for ChildSetReconciler {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.children.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.children
            .validate_shared(&format!("ChildSetReconciler {:?}", self.name))
    }

    async fn reconcile(&self, ctx: &Context, parent: &mut Draft) -> Outcome {
        let (identify, desired, reflect) =
            (&self.identify_child, &self.desired_children, &self.reflect);
        let span =
            debug_span!("child_set", name = %self.name, child_type = %self.children.child_type());
        async {
            let results = Arc::new(Mutex::new(Vec::new()));
            let outcome = self
                .reconcile_children(ctx, parent, identify, desired, &results)
                .await;
            clear_known_children(ctx);
            let outcome = match outcome {
                Ok(outcome) => outcome,
                Err(err) => return Outcome::err(err),
            };
            let result = ChildSetResult {
                children: std::mem::take(&mut *results.lock()),
            };
            let reflected = reflect(ctx, parent, &result).err();
            Outcome::with(
                outcome.result,
                ReconcileError::join(outcome.error.into_iter().chain(reflected)),
            )
        }
        .instrument(span)
        .await
    }
}
