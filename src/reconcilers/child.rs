//! `ChildReconciler`: keeps zero or one child object of another kind in step with the
//! reconciled resource (the parent), and reflects the child's status (or the reason it
//! could not be written) onto the parent.
//!
//! Deliberate departures from reconciler.io:
//! - with `OnlyReconcileChildStatus` and no existing child, the reflect function sees
//!   `None`, never the blank object reconciler.io passes;
//! - `our_child` is a [`Predicate`] over [`ParentAndChild`], so it can be CEL
//!   (`self.child.metadata.labels.app == self.parent.metadata.name`);
//! - a desired child already controlled by another object is an
//!   [`OwnerReferenceError::AlreadyOwned`] (controller-runtime's `AlreadyOwnedError`), not
//!   created: reconciler.io calls `SetControllerReference` only on a child without any
//!   controller, so it creates such a child, which is then never its own and conflicts by
//!   name on every later reconcile. A controller reference to the parent itself is kept
//!   as-is, as in reconciler.io.

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::DynamicObject;
use serde::Serialize;
use tracing::{Instrument, debug, info, warn};

use crate::trace::debug_span;

use super::known_children::known_children;
use super::object_manager::track;
use super::steps::{AsyncDerive, ChildListOptions, Derivation, Derive, ReflectChild};
use super::{
    ApplyingObjectManager, Context, Draft, ObjectManager, Outcome, Predicate, ReconcileError,
    Setup, SetupStep, SubReconciler, ValidationError,
};
use crate::client::ListOptions;
use crate::object::{Gvk, ObjectKey};

/// Computes the child the parent should have (`None`: no child), as stored.
pub(super) type DesiredChild = Derivation<Option<DynamicObject>>;

/// What an `our_child` predicate sees: `self.parent` and `self.child` in CEL. Both are
/// shared, not copied: the pair is made for every candidate child of every reconcile.
#[derive(Clone, Debug, Serialize)]
pub struct ParentAndChild {
    /// The reconciled resource.
    pub parent: Arc<DynamicObject>,
    /// A candidate child.
    pub child: Arc<DynamicObject>,
}

/// Returned by `desired_child` (or `desired_children`) to leave the children as they are
/// and only reflect their status.
#[derive(Clone, Copy, Debug, thiserror::Error)]
#[error("only reconcile the child's status, do not create, update or delete it")]
pub struct OnlyReconcileChildStatus;

impl From<OnlyReconcileChildStatus> for ReconcileError {
    fn from(marker: OnlyReconcileChildStatus) -> Self {
        ReconcileError::from_error(marker)
    }
}

/// Whether the error asks to only reflect the child's status.
pub(super) fn is_only_reconcile_child_status(error: &ReconcileError) -> bool {
    error.find_cause::<OnlyReconcileChildStatus>().is_some()
}

/// Why an owner reference could not be set on a desired child.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OwnerReferenceError {
    /// A namespaced owner cannot own a cluster-scoped child.
    #[error(
        "cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_namespace}"
    )]
    ClusterScopedChild {
        /// The owner's namespace.
        owner_namespace: String,
    },
    /// Owner and child are in different namespaces.
    #[error(
        "cross-namespace owner references are disallowed, owner's namespace {owner_namespace}, obj's namespace {child_namespace}"
    )]
    CrossNamespace {
        /// The owner's namespace.
        owner_namespace: String,
        /// The child's namespace.
        child_namespace: String,
    },
    /// The child is already controlled by another object (controller-runtime's
    /// `AlreadyOwnedError`).
    #[error(
        "Object {child_namespace}/{child_name} is already owned by another {owner_kind} controller {owner_name}"
    )]
    AlreadyOwned {
        /// The child's namespace (empty when cluster-scoped).
        child_namespace: String,
        /// The child's name.
        child_name: String,
        /// The kind of the child's controller.
        owner_kind: String,
        /// The name of the child's controller.
        owner_name: String,
    },
}

/// Manages 0..1 child of one kind for the reconciled resource (reconciler.io's
/// `ChildReconciler`). Cheap to clone.
///
/// The child is written by server-side apply ([`ApplyingObjectManager`]) unless
/// [`ChildReconciler::child_object_manager`] gives another manager (an
/// [`UpdatingObjectManager`](super::UpdatingObjectManager) writes by update, as reconciler.io does).
///
/// The desired closure returns the child the parent should have, `Ok(Some(child))`, or
/// `Ok(None)` when it should have none: a child it has is then **deleted**. `Ok(None)` is how
/// a controller removes a child it no longer wants (a feature turned off in the spec); to
/// leave the child alone instead, return the error [`OnlyReconcileChildStatus`]. While the
/// parent is being deleted the closure is not called and the child is left to the garbage
/// collector (it is owned by the parent).
///
/// ```no_run
/// use dynrec::prelude::*;
/// use serde_json::json;
///
/// /// A ConfigMap holding the Widget's greeting while it has one.
/// fn greeting() -> ChildReconciler {
///     let config_map = Gvk::new("", "v1", "ConfigMap");
///     ChildReconciler::new(
///         config_map.clone(),
///         move |_ctx, widget| {
///             let Some(greeting) = widget.data["spec"]["greeting"].as_str() else {
///                 return Ok(None); // no greeting: no ConfigMap (one made before is deleted)
///             };
///             let name = widget.metadata.name.as_deref().unwrap_or_default();
///             let mut child = config_map.new_object(format!("{name}-greeting"));
///             child.metadata.namespace = widget.metadata.namespace.clone();
///             child.data = json!({"data": {"greeting": greeting}});
///             Ok(Some(child))
///         },
///         |ctx, widget, child, error| {
///             let mut conditions = ctx.conditions(widget);
///             match (child, error) {
///                 (_, Some(error)) => conditions.mark_false("ConfigMapReady", "Failed", error.to_string())?,
///                 (Some(_), None) => conditions.mark_true("ConfigMapReady", "Created", "")?,
///                 (None, None) => conditions.mark_true("ConfigMapReady", "NoGreeting", "")?,
///             }
///             Ok(())
///         },
///     )
/// }
/// ```
#[derive(Clone)]
pub struct ChildReconciler {
    name: String,
    child_type: Gvk,
    skip_owner_reference: bool,
    desired_child: DesiredChild,
    reflect: Arc<dyn ReflectChild>,
    reflected_error_reasons: Vec<String>,
    object_manager: Arc<dyn ObjectManager>,
    list_options: Option<Arc<dyn ChildListOptions>>,
    our_child: Option<Predicate<ParentAndChild>>,
    setup: Option<Arc<dyn SetupStep>>,
}

impl ChildReconciler {
    /// A reconciler of children of `child_type`, named `{Kind}ChildReconciler`: `desired`
    /// computes the child the parent should have (`|ctx, parent| Ok(Some(child))`; returning
    /// [`OnlyReconcileChildStatus`] leaves the child as it is), `reflect` writes the child
    /// (or the error that kept it from being written) onto the parent.
    pub fn new(
        child_type: Gvk,
        desired: impl Derive<Option<DynamicObject>>,
        reflect: impl ReflectChild,
    ) -> Self {
        Self::with_desired(child_type, Derivation::plain(desired), Arc::new(reflect))
    }

    /// As [`ChildReconciler::new`], with a `desired` that may await, e.g. to read (and track)
    /// the objects the parent refers to:
    /// `|ctx, parent| Box::pin(async move { Ok(Some(child_of(ctx, parent).await?)) })`.
    pub fn new_async(
        child_type: Gvk,
        desired: impl AsyncDerive<Option<DynamicObject>>,
        reflect: impl ReflectChild,
    ) -> Self {
        Self::with_desired(child_type, Derivation::of_async(desired), Arc::new(reflect))
    }

    /// A reconciler with both callbacks given, writing by server-side apply.
    pub(super) fn with_desired(
        child_type: Gvk,
        desired_child: DesiredChild,
        reflect: Arc<dyn ReflectChild>,
    ) -> Self {
        Self {
            name: format!("{}ChildReconciler", child_type.kind),
            object_manager: Arc::new(ApplyingObjectManager::new(child_type.clone())),
            child_type,
            skip_owner_reference: false,
            desired_child,
            reflect,
            reflected_error_reasons: ["AlreadyExists", "Forbidden", "Invalid"]
                .map(String::from)
                .to_vec(),
            list_options: None,
            our_child: None,
            setup: None,
        }
    }

    /// Names the reconciler.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The API error reasons reflected onto the parent instead of failing (default
    /// `AlreadyExists`, `Forbidden`, `Invalid`; empty: none).
    pub fn reflected_child_error_reasons<S: Into<String>>(
        mut self,
        reasons: impl IntoIterator<Item = S>,
    ) -> Self {
        self.reflected_error_reasons = reasons.into_iter().map(Into::into).collect();
        self
    }

    /// Writes the child with `manager` instead of by server-side apply: e.g. by update, as
    /// reconciler.io does, with an [`UpdatingObjectManager`](super::UpdatingObjectManager) that merges the desired child into
    /// a [`Draft`] of the current one (`current`, `desired`; no change, no update; a merge
    /// that writes only what differs copies nothing when the child is in sync, see
    /// [`Merge`](super::steps::Merge)), perhaps with a finalizer or a `sanitize`; or a manager
    /// shared with other reconcilers (an `Arc<dyn ObjectManager>`).
    pub fn child_object_manager(mut self, manager: impl ObjectManager + 'static) -> Self {
        self.object_manager = Arc::new(manager);
        self
    }

    /// Neither sets nor requires a controller owner reference on the child (e.g. a child in
    /// another namespace, which an owner reference cannot point out of). Without one the
    /// children are found by what is left: `list_options` says which objects are listed as
    /// candidates, and `our_child` which of them belong to the parent.
    pub fn without_owner_reference(
        self,
        list_options: impl ChildListOptions,
        our_child: Predicate<ParentAndChild>,
    ) -> Self {
        self.skipping_owner_reference()
            .list_options(list_options)
            .our_child(our_child)
    }

    /// Neither sets nor requires owner references, leaving `list_options` and `our_child` to
    /// be given (a child set holding a finalizer: it checks them when validated).
    pub(super) fn skipping_owner_reference(mut self) -> Self {
        self.skip_owner_reference = true;
        self
    }

    /// Which objects are listed as candidate children.
    pub fn list_options(mut self, options: impl ChildListOptions) -> Self {
        self.list_options = Some(Arc::new(options));
        self
    }

    /// Narrows the candidate children further (after the owner reference check).
    pub fn our_child(mut self, our_child: Predicate<ParentAndChild>) -> Self {
        self.our_child = Some(our_child);
        self
    }

    /// Declares further watches at setup.
    pub fn with_setup(mut self, setup: impl SetupStep) -> Self {
        self.setup = Some(Arc::new(setup));
        self
    }

    /// The same reconciler with other callbacks (a child set's reconciler of one id).
    pub(super) fn replacing(
        mut self,
        desired_child: DesiredChild,
        reflect: Arc<dyn ReflectChild>,
    ) -> Self {
        self.desired_child = desired_child;
        self.reflect = reflect;
        self
    }

    /// The kind of the children.
    pub(super) fn child_type(&self) -> &Gvk {
        &self.child_type
    }

    /// The user's `our_child` predicate, if any.
    pub(super) fn our_child_predicate(&self) -> Option<&Predicate<ParentAndChild>> {
        self.our_child.as_ref()
    }

    /// Checks what a child set shares with its per-id child reconcilers; `owner` introduces
    /// the reconciler in messages (`ChildReconciler "name"`).
    pub(super) fn validate_shared(&self, owner: &str) -> Result<(), ValidationError> {
        let missing = |what: &str| Err(ValidationError(format!("{owner} must implement {what}")));
        if self.skip_owner_reference && self.our_child.is_none() {
            return missing("OurChild since owner references are not used");
        }
        if self.skip_owner_reference && self.list_options.is_none() {
            return missing("ListOptions since owner references are not used");
        }
        self.object_manager.validate().map_err(|err| {
            ValidationError(format!(
                "{owner} must have a valid ChildObjectManager: {err}"
            ))
        })
    }

    /// Whether `child` belongs to `parent`: controlled by it (unless owner references are
    /// skipped) and accepted by `our_child`.
    pub(super) fn is_our_child(
        &self,
        ctx: &Context,
        parent: &Draft,
        child: &Arc<DynamicObject>,
    ) -> bool {
        if !self.skip_owner_reference && !is_controlled_by(child, parent) {
            return false;
        }
        self.passes_our_child(ctx, parent, child)
    }

    /// Whether `child` passes the user's `our_child` predicate (if any).
    fn passes_our_child(&self, ctx: &Context, parent: &Draft, child: &Arc<DynamicObject>) -> bool {
        self.our_child.as_ref().is_none_or(|predicate| {
            // Dropped before the draft's next write, so the snapshot copies nothing.
            let pair = ParentAndChild {
                parent: parent.snapshot(),
                child: child.clone(),
            };
            predicate.test(ctx, &pair)
        })
    }

    /// The parent's children: listed (or known to an enclosing child set), then filtered.
    pub(super) async fn list_our_children(
        &self,
        ctx: &Context,
        parent: &Draft,
    ) -> Result<Vec<Arc<DynamicObject>>, ReconcileError> {
        let children = match known_children(ctx, &self.child_type) {
            Some(children) => children
                .into_iter()
                .filter(|child| self.is_our_child(ctx, parent, child))
                .collect(),
            None => {
                let listed = self.list_children(ctx, parent).await?;
                // Children listed by the parent's UID are only those it controls: then only
                // `our_child` is left to check.
                let controller_checked = self.listed_by_controller(parent);
                listed
                    .into_iter()
                    .filter(|child| match controller_checked {
                        true => self.passes_our_child(ctx, parent, child),
                        false => self.is_our_child(ctx, parent, child),
                    })
                    .collect()
            }
        };
        Ok(children)
    }

    /// Whether the children are listed by the parent's UID (the client then lists only what
    /// the UID controls).
    fn listed_by_controller(&self, parent: &DynamicObject) -> bool {
        !self.skip_owner_reference && parent.metadata.uid.is_some()
    }

    /// The objects of the child type that may be the parent's children: with the user's
    /// list options, else those in the parent's namespace; only those the parent controls
    /// unless owner references are skipped.
    async fn list_children(
        &self,
        ctx: &Context,
        parent: &DynamicObject,
    ) -> Result<Vec<Arc<DynamicObject>>, ReconcileError> {
        let client = &ctx.config().client;
        let uid = parent
            .metadata
            .uid
            .as_deref()
            .filter(|_| !self.skip_owner_reference);
        let listed = match (&self.list_options, uid) {
            // The common case, answered without building list options.
            (None, Some(uid)) => {
                let namespace = parent.metadata.namespace.as_deref();
                client
                    .list_controlled(&self.child_type, namespace, uid)
                    .await?
            }
            (options, uid) => {
                let mut options = match options {
                    Some(options) => options(ctx, parent),
                    None => ListOptions {
                        namespace: parent.metadata.namespace.clone(),
                        ..ListOptions::default()
                    },
                };
                // `is_our_child` requires it; a cache then reads only the parent's children.
                if !self.skip_owner_reference {
                    options.controlled_by = uid.map(str::to_owned);
                }
                client.list(&self.child_type, &options).await?
            }
        };
        Ok(listed)
    }

    /// Lists, deletes duplicates, computes the desired child and lets the manager write it;
    /// returns the child as persisted (`None`: there is none).
    async fn reconcile_child(
        &self,
        ctx: &Context,
        manager: &dyn ObjectManager,
        desired_child: &DesiredChild,
        parent: &mut Draft,
    ) -> Result<Option<Arc<DynamicObject>>, ReconcileError> {
        let mut children = self.list_our_children(ctx, parent).await?;
        let actual = match children.len() {
            1 => children.pop(),
            _ => {
                for extra in &children {
                    info!(child = ?ObjectKey::of(extra.as_ref()).ok(), "extra child detected");
                    manager.manage(ctx, parent, Some(extra), None).await?;
                }
                None
            }
        };
        // In a block: the child as derived (an object, about 500 bytes) would otherwise be
        // kept in this future across the manager's call, after it moved into its box.
        let desired = {
            let derived = match parent.metadata.deletion_timestamp {
                Some(_) => None,
                None => match desired_child.derive(ctx, parent).await {
                    Ok(derived) => derived,
                    Err(err) if is_only_reconcile_child_status(&err) => return Ok(actual),
                    Err(err) => return Err(err),
                },
            };
            match derived {
                Some(derived) => Some(self.controlled_child(ctx, parent, derived)?),
                None => None,
            }
        };
        manager
            .manage(ctx, parent, actual.as_ref(), desired.as_deref())
            .await
    }

    /// The desired child, on the heap (kept across the manager's call, an object would grow
    /// the reconcile's future; shared, so `our_child` sees it without a copy), with the
    /// parent as its controller unless owner references are skipped.
    fn controlled_child(
        &self,
        ctx: &Context,
        parent: &Draft,
        mut desired: DynamicObject,
    ) -> Result<Arc<DynamicObject>, ReconcileError> {
        if !self.skip_owner_reference {
            set_controller_reference(ctx, parent, &mut desired)
                .map_err(ReconcileError::from_error)?;
        }
        let desired = Arc::new(desired);
        if !self.is_our_child(ctx, parent, &desired) {
            warn!(child = ?ObjectKey::of(desired.as_ref()).ok(), "object returned from DesiredChild does not match OurChild, this can result in orphaned children");
        }
        Ok(desired)
    }

    /// Reflects an error of a reflected reason; an `AlreadyExists` on our own child (a stale
    /// cache) is returned instead, and a conflicting object that is not ours is tracked.
    async fn reflect_error(
        &self,
        ctx: &Context,
        reflect: &Arc<dyn ReflectChild>,
        parent: &mut Draft,
        err: ReconcileError,
    ) -> Outcome {
        if err.api_reason() == Some("AlreadyExists") {
            let name = err
                .api_status()
                .and_then(|status| status.details.as_ref())
                .map(|details| details.name.clone())
                .unwrap_or_default();
            let key = ObjectKey {
                namespace: parent.metadata.namespace.clone(),
                name,
            };
            let conflicted = ctx
                .config()
                .api_reader
                .get(&self.child_type, &key)
                .await
                .ok()
                .map(Arc::new);
            if let Some(conflicted) = &conflicted {
                if self.is_our_child(ctx, parent, conflicted) {
                    return Outcome::err(err);
                }
                info!(child = %key, "unable to reconcile child, not owned");
                if !self.skip_owner_reference
                    && let Err(track_err) = track(ctx, parent, conflicted)
                {
                    return Outcome::err(track_err);
                }
            }
        }
        Outcome::from(reflect(ctx, parent, None, Some(&err)).map(|()| Default::default()))
    }
}

#[async_trait]
impl SubReconciler<DynamicObject> for ChildReconciler {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        if !self.skip_owner_reference {
            setup.owns(self.child_type.clone());
            setup.watch_tracked(self.child_type.clone());
            // Owner references that block the owner's deletion need this (kube's
            // OwnerReferencesPermissionEnforcement admission).
            if let Some(owner) = setup.resource_type().cloned() {
                setup.require(&self.name, &owner, "finalizers", &["update"]);
            }
        }
        self.object_manager.setup(setup)?;
        match &self.setup {
            Some(user) => user(setup),
            None => Ok(()),
        }
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.validate_shared(&format!("ChildReconciler {:?}", self.name))
    }

    async fn reconcile(&self, ctx: &Context, parent: &mut Draft) -> Outcome {
        let (manager, desired, reflect) =
            (&self.object_manager, &self.desired_child, &self.reflect);
        let span = debug_span!("child", name = %self.name, child_type = %self.child_type);
        async {
            // The child does not outlive this block: kept across the await below, it would
            // grow this future past what the allocator serves from its per-thread cache.
            let err = {
                let managed = self
                    .reconcile_child(ctx, manager.as_ref(), desired, parent)
                    .await;
                if parent.metadata.deletion_timestamp.is_some() {
                    return Outcome::with(Default::default(), managed.err());
                }
                match managed {
                    Ok(child) => {
                        let reflected = reflect(ctx, parent, child.as_deref(), None);
                        return Outcome::from(reflected.map(|()| Default::default()));
                    }
                    Err(err) => err,
                }
            };
            let reflected = err
                .api_reason()
                .is_some_and(|r| self.reflected_error_reasons.iter().any(|x| x == r));
            if reflected {
                return Box::pin(self.reflect_error(ctx, reflect, parent, err)).await;
            }
            if !err.is_quiet() {
                debug!(%err, "unable to reconcile child");
            }
            Outcome::err(err)
        }
        .instrument(span)
        .await
    }
}

/// Whether `child` has a controller owner reference to `parent` (by UID).
fn is_controlled_by(child: &DynamicObject, parent: &DynamicObject) -> bool {
    let Some(uid) = parent.metadata.uid.as_deref() else {
        return false;
    };
    child
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

/// Makes `parent` the controller of `child`. A controller reference the child already has
/// is kept as-is when it names the parent (same group, kind and name), and is an
/// [`OwnerReferenceError::AlreadyOwned`] when it names another object.
fn set_controller_reference(
    ctx: &Context,
    parent: &DynamicObject,
    child: &mut DynamicObject,
) -> Result<(), OwnerReferenceError> {
    let (api_version, kind) = owner_type(ctx, parent);
    let name = parent.metadata.name.as_deref().unwrap_or_default();
    let same = |r: &OwnerReference| {
        group_of(&r.api_version) == group_of(&api_version) && r.kind == kind && r.name == name
    };
    let references = child.metadata.owner_references.iter().flatten();
    if let Some(controller) = references.clone().find(|r| r.controller == Some(true)) {
        return match same(controller) {
            true => Ok(()),
            false => Err(OwnerReferenceError::AlreadyOwned {
                child_namespace: child.metadata.namespace.clone().unwrap_or_default(),
                child_name: child.metadata.name.clone().unwrap_or_default(),
                owner_kind: controller.kind.clone(),
                owner_name: controller.name.clone(),
            }),
        };
    }
    if let Some(owner_namespace) = parent
        .metadata
        .namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
    {
        match child
            .metadata
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
        {
            None => {
                return Err(OwnerReferenceError::ClusterScopedChild {
                    owner_namespace: owner_namespace.into(),
                });
            }
            Some(child_namespace) if child_namespace != owner_namespace => {
                return Err(OwnerReferenceError::CrossNamespace {
                    owner_namespace: owner_namespace.into(),
                    child_namespace: child_namespace.into(),
                });
            }
            Some(_) => {}
        }
    }
    let reference = OwnerReference {
        api_version: api_version.clone().into_owned(),
        kind: kind.clone().into_owned(),
        name: name.to_owned(),
        uid: parent.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    // A child's first reference gets a list with room for it alone (pushed onto an empty
    // list, it would get room for four).
    let Some(references) = &mut child.metadata.owner_references else {
        child.metadata.owner_references = Some(vec![reference]);
        return Ok(());
    };
    match references.iter_mut().find(|r| same(r)) {
        Some(existing) => *existing = reference,
        None => references.push(reference),
    }
    Ok(())
}

/// The apiVersion and kind a controller reference to `parent` names: the parent's own, or
/// the reconciled kind's when the parent does not say.
fn owner_type<'p>(ctx: &Context, parent: &'p DynamicObject) -> (Cow<'p, str>, Cow<'p, str>) {
    match &parent.types {
        Some(types) if !types.api_version.is_empty() && !types.kind.is_empty() => (
            types.api_version.as_str().into(),
            types.kind.as_str().into(),
        ),
        _ => {
            let gvk = ctx.resource_type();
            (gvk.api_version().into(), gvk.kind.clone().into())
        }
    }
}

/// The group of an `apiVersion` (empty for the core group).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}
