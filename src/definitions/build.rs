//! Builds the library's reconcilers from compiled plans: a `ResourceReconciler` over the
//! parent kind whose `Sequence` holds a `ChildReconciler` per child step, a
//! `ChildSetReconciler` per child set, `SyncReconciler`s for sync and ref steps, `IfThen`
//! and `WithFinalizer` for flow, and a last step that deletes the children of steps the
//! definition no longer has. Values flow between steps through the request's stash.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use async_trait::async_trait;
use kube::api::{DeleteParams, DynamicObject};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tracing::{info, warn};

use super::bindings::{BindingReads, Exclusion, Readiness, Shared, child_json, step_error_message};
use super::cached_fields::expressions;
use super::child_permissions::child_permissions;
use super::compile::{
    ChildPlan, ChildSetPlan, CompiledDefinition, Plan, RefPlan, SyncPlan, upper_camel,
};
use super::error::MissingObject;
use super::expr::{Bindings, EvalError, Template, json_type};
use super::model::ManagerKind;
use super::object_template::BuildError;
use crate::client::ListOptions;
use crate::definitions::kro::{ChildGroup, INSTANCE_ID_LABEL, KroInstance, label_collection_item};
use crate::object::{ConditionSet, Gvk, ObjectKey, StatusExt};
use crate::reconcilers::{
    ApplyingObjectManager, ChildReconciler, ChildSetReconciler, ChildSetResult, Config, Context,
    Draft, IfThen, ObjectManager, Outcome, ParentAndChild, Permission, Predicate, ReconcileError,
    ResourceReconciler, Sequence, Setup, StatusPolicy, SubReconciler, SyncReconciler,
    UpdatingObjectManager, ValidationError, WithFinalizer,
};

/// The label naming the definition that made a child.
pub const DEFINITION_LABEL: &str = "dynrec.dev/definition";
/// The label naming the step that made a child.
pub const STEP_LABEL: &str = "dynrec.dev/step";
/// The annotation holding a child-set child's item id.
pub const ITEM_ANNOTATION: &str = "dynrec.dev/item-id";

/// The kinds a definition's children have had (in this process, and as recorded in the
/// definition's status), so children of removed steps can be found.
pub type Inventory = Arc<Mutex<BTreeSet<Gvk>>>;

/// The name of a definition's controller.
pub fn controller_name(definition: &str) -> String {
    format!("definition/{definition}")
}

/// The root reconciler of a compiled definition.
pub fn root_reconciler(
    definition: &CompiledDefinition,
    config: &Config,
    inventory: &Inventory,
) -> ResourceReconciler {
    let dependents: Vec<&str> = definition.conditions.iter().map(String::as_str).collect();
    let conditions = ConditionSet::living(&dependents);
    let shared = Arc::new(Shared {
        definition: definition.name.clone(),
        conditions: conditions.clone(),
        owns_status: definition.owns_status,
        kro: definition.kro.is_some(),
        // A KRO instance's expressions may read what no step's expression names.
        reads: match definition.kro {
            None => BindingReads::of(&expressions(&definition.steps)),
            Some(_) => BindingReads::everything(),
        },
    });
    let current: Vec<(String, Gvk)> = definition.child_steps();
    inventory
        .lock()
        .extend(current.iter().map(|(_, gvk)| gvk.clone()));
    let mut steps = build_steps(&definition.steps, &shared);
    steps.push(Box::new(PruneRemovedSteps {
        shared: shared.clone(),
        current: current.into_iter().map(|(id, _)| id).collect(),
        inventory: inventory.clone(),
    }));
    let steps = Sequence::new(steps);
    let root = match &definition.kro {
        None => ResourceReconciler::new(definition.for_kind.clone(), steps, config.clone()),
        Some(kro) => {
            let groups = definition
                .child_steps()
                .into_iter()
                .map(|(id, gvk)| ChildGroup {
                    labels: [
                        (DEFINITION_LABEL.to_owned(), definition.name.clone()),
                        (STEP_LABEL.to_owned(), id.clone()),
                    ]
                    .into(),
                    id,
                    gvk,
                })
                .collect();
            let instance = KroInstance::new(steps, &kro.resource_graph_definition, groups);
            let instance = match &definition.custom_conditions {
                Some(custom) => instance.with_custom_conditions(custom.clone(), shared.clone()),
                None => instance,
            };
            ResourceReconciler::new(definition.for_kind.clone(), instance, config.clone())
        }
    }
    .named(controller_name(&definition.name));
    // On a kind another controller owns, no conditions and no observedGeneration; KRO
    // writes an instance's status while it is deleted (`DELETING`).
    match (definition.owns_status, definition.kro.is_some()) {
        (true, false) => root.conditions(conditions),
        (true, true) => root
            .conditions(conditions)
            .status_policy(StatusPolicy::OwnedDuringDeletion),
        (false, _) => root.status_policy(StatusPolicy::Shared),
    }
}

fn build_steps(plans: &[Plan], shared: &Arc<Shared>) -> Vec<Box<dyn SubReconciler>> {
    plans.iter().map(|plan| build_step(plan, shared)).collect()
}

fn build_step(plan: &Plan, shared: &Arc<Shared>) -> Box<dyn SubReconciler> {
    match plan {
        Plan::Child(child) => Box::new(
            Guarded::new(
                child_reconciler(child.clone(), shared.clone()),
                &child.id,
                &child.path,
                Some(child.condition.clone()),
                shared,
            )
            .requiring(child_permissions(child, &child.path))
            .waiting_for(&child.waits_for),
        ),
        Plan::ChildSet(set) => Box::new(
            Guarded::new(
                child_set_reconciler(set.clone(), shared.clone()),
                &set.child.id,
                &set.child.path,
                Some(set.child.condition.clone()),
                shared,
            )
            .requiring(child_permissions(&set.child, &set.child.path))
            .waiting_for(&set.child.waits_for),
        ),
        Plan::Sync(sync) => Box::new(Guarded::new(
            sync_reconciler(sync.clone(), shared.clone()),
            &sync.id,
            &sync.path,
            Some(sync.condition.clone()),
            shared,
        )),
        Plan::Ref(reference) => Box::new(Guarded::new(
            ref_reconciler(reference.clone(), shared.clone()),
            &reference.id,
            &reference.path,
            Some(reference.condition.clone()),
            shared,
        )),
        Plan::If {
            path,
            condition,
            then,
            otherwise,
        } => {
            let key = format!("dynrec.dev/if/{path}");
            let decide = {
                let key = key.clone();
                let condition = condition.clone();
                let shared = shared.clone();
                SyncReconciler::new(move |ctx: &Context, parent: &mut Draft| {
                    let decided = shared.bindings(ctx, parent).and_then(|b| {
                        condition
                            .test(&b, ctx.now())
                            .map_err(ReconcileError::from_error)
                    });
                    decided.map(|holds| ctx.stash().store(&key, holds))
                })
                .named(format!("{path}.condition"))
            };
            let holds = Predicate::new(move |ctx: &Context, _: &DynamicObject| {
                ctx.stash().retrieve::<bool>(&key).unwrap_or(false)
            });
            let because = format!("the condition {condition} chose the other branch");
            let then_steps = branch(then, otherwise, shared, &because);
            let else_steps = branch(otherwise, then, shared, &because);
            let flow = IfThen::new(holds, Sequence::new(then_steps))
                .otherwise(Sequence::new(else_steps))
                .named(path.clone());
            let id = path.clone();
            Box::new(Sequence::new(vec![
                Box::new(Guarded::new(decide, "if", &id, None, shared)),
                Box::new(flow),
            ]))
        }
        Plan::Finalizer { name, steps } => Box::new(
            WithFinalizer::new(name.clone(), Sequence::new(build_steps(steps, shared)))
                .named(format!("finalizer {name}")),
        ),
    }
}

/// The steps of a taken branch, after marking the other branch's conditions as skipped.
fn branch(
    taken: &[Plan],
    skipped: &[Plan],
    shared: &Arc<Shared>,
    because: &str,
) -> Vec<Box<dyn SubReconciler>> {
    let skipped: Vec<String> = skipped.iter().flat_map(Plan::conditions).collect();
    let shared_mark = shared.clone();
    let because = because.to_owned();
    let mark = SyncReconciler::new(move |ctx: &Context, parent: &mut Draft| {
        for condition in &skipped {
            shared_mark.mark_true(ctx, parent, condition, "Skipped", &because);
        }
        Ok(())
    })
    .named("mark skipped branch");
    let mut steps: Vec<Box<dyn SubReconciler>> = vec![Box::new(mark)];
    steps.extend(build_steps(taken, shared));
    steps
}

/// Runs a step; when it fails, its condition (or, for a step without one, `Ready`) turns
/// False with a reason naming the step and the error as the message.
struct Guarded<S> {
    inner: S,
    reason: String,
    path: String,
    condition: Option<String>,
    shared: Arc<Shared>,
    /// What the step needs besides what its reconciler declares.
    requires: Vec<Permission>,
    /// For an RGD: the steps (and their conditions) that must be ready before it runs.
    waits_for: Vec<(String, String)>,
}

impl<S> Guarded<S> {
    fn new(
        inner: S,
        id: &str,
        path: &str,
        condition: Option<String>,
        shared: &Arc<Shared>,
    ) -> Self {
        Self {
            inner,
            reason: format!("{}Failed", upper_camel(id)),
            path: path.to_owned(),
            condition,
            shared: shared.clone(),
            requires: Vec::new(),
            waits_for: Vec::new(),
        }
    }

    /// Also declares `permissions` at setup.
    fn requiring(mut self, permissions: Vec<Permission>) -> Self {
        self.requires = permissions;
        self
    }

    /// For an RGD, runs only once `steps` are ready (their conditions True).
    fn waiting_for(mut self, steps: &[(String, String)]) -> Self {
        if self.shared.kro {
            self.waits_for = steps.to_vec();
        }
        self
    }

    /// The first step it waits for that is not ready yet.
    fn waiting(&self, parent: &Draft) -> Option<&str> {
        self.waits_for
            .iter()
            .find(
                |(_, condition)| !matches!(parent.condition(condition), Ok(Some(c)) if c.is_true()),
            )
            .map(|(id, _)| id.as_str())
    }
}

#[async_trait]
impl<S: SubReconciler> SubReconciler for Guarded<S> {
    fn name(&self) -> &str {
        &self.path
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        for permission in &self.requires {
            setup.require_permission(permission.clone());
        }
        self.inner.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.inner.validate()
    }

    async fn reconcile(&self, ctx: &Context, parent: &mut Draft) -> Outcome {
        if let (Some(waiting), Some(condition)) = (self.waiting(parent), &self.condition) {
            // As KRO: a resource is not applied (nor deleted) until what it reads is ready.
            let message = format!("waiting for {waiting} to be ready");
            self.shared
                .mark_false(ctx, parent, condition, "Waiting", &message);
            return Outcome::done();
        }
        let outcome = self.inner.reconcile(ctx, parent).await;
        if let (Some(error), Some(condition)) = (&outcome.error, &self.condition)
            && self.shared.kro
            && is_pending(error)
        {
            // As KRO: data not there yet (an object, a field) is waited for, and the
            // resources not reading it go on.
            let message = step_error_message(&self.path, error);
            let reason = self.reason.replace("Failed", "Pending");
            self.shared
                .mark_false(ctx, parent, condition, &reason, &message);
            return Outcome::done();
        }
        if let Some(error) = &outcome.error
            && parent.metadata.deletion_timestamp.is_none()
        {
            let message = step_error_message(&self.path, error);
            let condition = self
                .condition
                .clone()
                .unwrap_or_else(|| self.shared.conditions.happy().to_owned());
            self.shared
                .mark_false(ctx, parent, &condition, &self.reason, &message);
        }
        outcome
    }
}

/// Whether `error` is only data not there yet: an object a ref reads, or what an
/// expression reads (KRO's "data pending").
fn is_pending(error: &ReconcileError) -> bool {
    error.find_cause::<MissingObject>().is_some()
        || error
            .find_cause::<EvalError>()
            .is_some_and(EvalError::is_data_pending)
}

/// The `ChildReconciler` of a child step.
fn child_reconciler(plan: Arc<ChildPlan>, shared: Arc<Shared>) -> ChildReconciler {
    let desired_plan = (plan.clone(), shared.clone());
    let reflect = {
        let (plan, shared) = (plan.clone(), shared.clone());
        move |ctx: &Context,
              parent: &mut Draft,
              child: Option<&DynamicObject>,
              error: Option<&ReconcileError>| {
            shared.bind(ctx, &plan.id, || child.map_or(Value::Null, child_json));
            let excluded = ctx.stash().clear::<Exclusion>(&excluded_key(&plan.id));
            let state = match (error, excluded, child) {
                (Some(error), _, _) => Err(step_error_message(&plan.path, error)),
                (None, Some(because), _) => Ok(Readiness::Excluded(because)),
                (None, None, None) => Ok(Readiness::Missing),
                (None, None, Some(child)) => {
                    readiness(ctx, &shared, parent, &plan, std::slice::from_ref(child))
                }
            };
            shared.reflect(ctx, parent, &plan, state);
            Ok(())
        }
    };
    let reconciler = ChildReconciler::new_async(
        plan.gvk.clone(),
        move |ctx, parent| {
            let (plan, shared) = desired_plan.clone();
            Box::pin(async move { desired_child(ctx, &shared, &plan, parent).await })
        },
        reflect,
    )
    .named(format!("{} (child {})", plan.path, plan.id))
    .our_child(ours(&shared, &plan.id))
    .child_object_manager(object_manager(&plan, &shared));
    match shared.kro {
        true => reconciler.without_owner_reference(kro_children, ours(&shared, &plan.id)),
        false => reconciler,
    }
}

/// The candidates for an RGD instance's children: labelled with its UID, in any namespace.
fn kro_children(_ctx: &Context, parent: &DynamicObject) -> ListOptions {
    crate::definitions::kro::children_of(parent.metadata.uid.as_deref().unwrap_or_default())
}

async fn desired_child(
    ctx: &Context,
    shared: &Shared,
    plan: &ChildPlan,
    parent: &DynamicObject,
) -> Result<Option<DynamicObject>, ReconcileError> {
    let b = shared.bindings(ctx, parent)?;
    if !included(ctx, plan, &b)? {
        return Ok(None);
    }
    finish_child(ctx, shared, plan, parent, &b, None)
        .await
        .map(Some)
}

/// The `ChildSetReconciler` of a child-set step.
fn child_set_reconciler(plan: Arc<ChildSetPlan>, shared: Arc<Shared>) -> ChildSetReconciler {
    let desired_plan = (plan.clone(), shared.clone());
    let reflect = {
        let (plan, shared) = (plan.clone(), shared.clone());
        move |ctx: &Context, parent: &mut Draft, result: &ChildSetResult| {
            let order = ctx.stash().clear::<Vec<String>>(&order_key(&plan.child.id));
            let children = in_for_each_order(result, &order.unwrap_or_default());
            shared.bind(ctx, &plan.child.id, || {
                Value::Array(children.iter().map(child_json).collect())
            });
            let excluded = ctx
                .stash()
                .clear::<Exclusion>(&excluded_key(&plan.child.id));
            let state = match (result.aggregate_error(), excluded) {
                (Some(error), _) => Err(step_error_message(&plan.child.path, &error)),
                (None, Some(because)) => Ok(Readiness::Excluded(because)),
                (None, None) => readiness(ctx, &shared, parent, &plan.child, &children),
            };
            shared.reflect(ctx, parent, &plan.child, state);
            Ok(())
        }
    };
    let identify = |child: &DynamicObject| {
        child
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ITEM_ANNOTATION).cloned())
            .unwrap_or_default()
    };
    let reconciler = ChildSetReconciler::new_async(
        plan.child.gvk.clone(),
        move |ctx, parent| {
            let (plan, shared) = desired_plan.clone();
            Box::pin(async move { desired_children(ctx, &shared, &plan, parent).await })
        },
        identify,
        reflect,
    )
    .named(format!("{} (childSet {})", plan.child.path, plan.child.id))
    .our_child(ours(&shared, &plan.child.id))
    .child_object_manager(object_manager(&plan.child, &shared));
    match shared.kro {
        true => reconciler.without_owner_reference(kro_children, ours(&shared, &plan.child.id)),
        false => reconciler,
    }
}

async fn desired_children(
    ctx: &Context,
    shared: &Shared,
    plan: &ChildSetPlan,
    parent: &DynamicObject,
) -> Result<Vec<DynamicObject>, ReconcileError> {
    let b = shared.bindings(ctx, parent)?;
    if !included(ctx, &plan.child, &b)? {
        return Ok(Vec::new());
    }
    let items = match plan
        .for_each
        .evaluate(&b, ctx.now())
        .map_err(ReconcileError::from_error)?
    {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        other => {
            return Err(ReconcileError::from_error(plan.for_each.error(format!(
                "expected a list, the result is {}",
                json_type(&other)
            ))));
        }
    };
    let (size, mut children, mut order) = (items.len(), Vec::new(), Vec::new());
    for (index, item) in items.into_iter().enumerate() {
        let mut b = b.clone();
        b.insert("each".into(), Arc::new(item));
        let id = plan
            .item_id
            .evaluate_string(&b, ctx.now())
            .map_err(ReconcileError::from_error)?;
        let mut child = finish_child(ctx, shared, &plan.child, parent, &b, Some(&id)).await?;
        if shared.kro {
            label_collection_item(&mut child, index, size);
        }
        children.push(child);
        order.push(id);
    }
    ctx.stash().store(&order_key(&plan.child.id), order);
    Ok(children)
}

/// Where the item ids of a child-set step are kept, in `forEach` order, for its binding.
fn order_key(id: &str) -> String {
    format!("dynrec.dev/order/{id}")
}

/// The children of a set in `forEach` order (`order`, their item ids), as KRO lists a
/// collection; those no longer desired (being deleted) last.
fn in_for_each_order(result: &ChildSetResult, order: &[String]) -> Vec<DynamicObject> {
    let positions: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut children: Vec<(usize, DynamicObject)> = result
        .children
        .iter()
        .filter_map(|c| {
            let position = positions.get(c.id.as_str()).copied();
            Some((position.unwrap_or(order.len()), c.child.clone()?))
        })
        .collect();
    children.sort_by_key(|(position, _)| *position);
    children.into_iter().map(|(_, child)| child).collect()
}

/// Whether every step it depends on is there and every `includeWhen` holds; when not,
/// says why (for the condition).
fn included(ctx: &Context, plan: &ChildPlan, b: &Bindings) -> Result<bool, ReconcileError> {
    let exclude = |exclusion: Exclusion| {
        ctx.stash().store(&excluded_key(&plan.id), exclusion);
        Ok(false)
    };
    for step in &plan.depends_on {
        if b.get(step).is_none_or(|value| value.is_null()) {
            return exclude(Exclusion {
                reason: "DependencyExcluded",
                message: format!("it reads {step}, which is excluded"),
            });
        }
    }
    for expression in &plan.include_when {
        if !expression
            .test(b, ctx.now())
            .map_err(ReconcileError::from_error)?
        {
            return exclude(Exclusion {
                reason: "NotIncluded",
                message: format!("includeWhen {expression} is false"),
            });
        }
    }
    Ok(true)
}

fn excluded_key(id: &str) -> String {
    format!("dynrec.dev/excluded/{id}")
}

/// A child built from its template over `b`, with the definition's labels, its item id
/// and a default namespace.
async fn finish_child(
    ctx: &Context,
    shared: &Shared,
    plan: &ChildPlan,
    parent: &DynamicObject,
    b: &Bindings,
    item_id: Option<&str>,
) -> Result<DynamicObject, ReconcileError> {
    let resolved = ctx.config().client.resolve(&plan.gvk).await?;
    let mut child = plan.object.build(b, ctx.now()).map_err(|err| match err {
        BuildError::Eval(err) => ReconcileError::from_error(err),
        BuildError::Object(_) => ReconcileError::msg(format!("{}.template {err}", plan.path)),
    })?;
    if resolved.namespaced && child.metadata.namespace.is_none() {
        child.metadata.namespace = parent.metadata.namespace.clone();
    }
    let labels = child.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(DEFINITION_LABEL.into(), shared.definition.clone());
    labels.insert(STEP_LABEL.into(), plan.id.clone());
    if let Some(id) = item_id {
        child
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(ITEM_ANNOTATION.into(), id.to_owned());
    }
    Ok(child)
}

/// Children made by this definition's step `id`.
fn ours(shared: &Arc<Shared>, id: &str) -> Predicate<ParentAndChild> {
    let definition = shared.definition.clone();
    let id = id.to_owned();
    let kro = shared.kro;
    Predicate::new(move |_ctx: &Context, pair: &ParentAndChild| {
        let labels = pair.child.metadata.labels.as_ref();
        let label = |key: &str| labels.and_then(|l| l.get(key)).map(String::as_str);
        label(DEFINITION_LABEL) == Some(definition.as_str())
            && label(STEP_LABEL) == Some(id.as_str())
            && (!kro || label(INSTANCE_ID_LABEL) == pair.parent.metadata.uid.as_deref())
    })
}

/// How a step's children are written: server-side apply or update, renaming as the name
/// template says.
fn object_manager(plan: &ChildPlan, shared: &Shared) -> Arc<dyn ObjectManager> {
    let field_manager = format!("dynrec-{}", shared.definition);
    match plan.manager {
        // Without ownerReferences (an RGD's children), a change to a child is mapped to
        // its instance by tracking it.
        ManagerKind::Apply => Arc::new(Renaming(
            ApplyingObjectManager::new(plan.gvk.clone())
                .field_manager(field_manager)
                .track_desired(shared.kro),
        )),
        ManagerKind::Update => Arc::new(Renaming(
            UpdatingObjectManager::new(plan.gvk.clone(), merge_template).track_desired(shared.kro),
        )),
    }
}

/// Copies what a template sets onto the current object: its labels and annotations (added
/// to the current ones) and every top-level field but metadata and status. An object that
/// already holds all of it is left as it is (not copied).
fn merge_template(current: &mut Draft, desired: &DynamicObject) {
    if !holds_template(current, desired) {
        apply_template(current.to_mut(), desired);
    }
}

/// The copy [`merge_template`] makes when something differs.
fn apply_template(current: &mut DynamicObject, desired: &DynamicObject) {
    for (from, to) in [
        (&desired.metadata.labels, &mut current.metadata.labels),
        (
            &desired.metadata.annotations,
            &mut current.metadata.annotations,
        ),
    ] {
        if let Some(from) = from {
            to.get_or_insert_with(Default::default)
                .extend(from.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    if let (Value::Object(current), Value::Object(desired)) = (&mut current.data, &desired.data) {
        for (key, value) in desired {
            if key != "status" {
                current.insert(key.clone(), value.clone());
            }
        }
    }
}

/// Whether merging the template `desired` into `current` would change nothing.
fn holds_template(current: &DynamicObject, desired: &DynamicObject) -> bool {
    let contains = |to: &Option<BTreeMap<String, String>>,
                    from: &Option<BTreeMap<String, String>>| {
        from.iter()
            .flatten()
            .all(|(k, v)| to.as_ref().and_then(|to| to.get(k)) == Some(v))
    };
    let fields_hold = match (&current.data, &desired.data) {
        (Value::Object(current), Value::Object(desired)) => desired
            .iter()
            .filter(|(key, _)| *key != "status")
            .all(|(key, value)| current.get(key) == Some(value)),
        _ => true,
    };
    fields_hold
        && contains(&current.metadata.labels, &desired.metadata.labels)
        && contains(&current.metadata.annotations, &desired.metadata.annotations)
}

/// Names are identity: a child whose desired name differs from the existing one is created
/// under the new name and the old one deleted (the Go `ChildReconciler` would keep the
/// old name).
struct Renaming<M>(M);

#[async_trait]
impl<M: ObjectManager> ObjectManager for Renaming<M> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.0.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.0.validate()
    }

    async fn manage(
        &self,
        ctx: &Context,
        resource: &mut Draft,
        actual: Option<&Arc<DynamicObject>>,
        desired: Option<&DynamicObject>,
    ) -> Result<Option<Arc<DynamicObject>>, ReconcileError> {
        if let (Some(old), Some(new)) = (actual, desired)
            && old.metadata.name != new.metadata.name
        {
            info!(old = ?old.metadata.name, new = ?new.metadata.name, "child renamed: creating the new one, deleting the old one");
            let created = self.0.manage(ctx, resource, None, desired).await?;
            self.0.manage(ctx, resource, actual, None).await?;
            return Ok(created);
        }
        self.0.manage(ctx, resource, actual, desired).await
    }
}

/// Evaluates `readyWhen` over each child (bound as `child` and by the step's id). For an
/// RGD, an expression whose data is not there yet (a status field not written) means not
/// ready, as KRO waits for it, rather than failed.
fn readiness(
    ctx: &Context,
    shared: &Shared,
    parent: &DynamicObject,
    plan: &ChildPlan,
    children: &[DynamicObject],
) -> Result<Readiness, String> {
    if plan.ready_when.is_empty() {
        let names = children
            .iter()
            .map(|c| c.metadata.name.clone().unwrap_or_default());
        return Ok(Readiness::Ready(names.collect()));
    }
    let b = shared.bindings(ctx, parent).map_err(|e| e.to_string())?;
    let mut names = Vec::new();
    for child in children {
        let name = child.metadata.name.clone().unwrap_or_default();
        let mut b = b.clone();
        let json = Arc::new(child_json(child));
        b.insert("child".into(), json.clone());
        b.insert(plan.id.clone(), json);
        for expression in &plan.ready_when {
            match expression.test(&b, ctx.now()) {
                Ok(true) => {}
                Ok(false) => {
                    return Ok(Readiness::NotReady(format!(
                        "{} {name}: readyWhen {expression} is false",
                        plan.gvk.kind
                    )));
                }
                Err(err) if shared.kro && err.is_data_pending() => {
                    return Ok(Readiness::NotReady(format!(
                        "{} {name}: readyWhen {expression} waits for its data: {}",
                        plan.gvk.kind, err.message
                    )));
                }
                Err(err) => return Err(err.to_string()),
            }
        }
        names.push(name);
    }
    Ok(Readiness::Ready(names))
}

/// The `SyncReconciler` of a sync step: merges the evaluated status into the parent's.
fn sync_reconciler(plan: Arc<SyncPlan>, shared: Arc<Shared>) -> SyncReconciler {
    let name = plan.path.clone();
    SyncReconciler::new(move |ctx: &Context, parent: &mut Draft| {
        shared.bindings(ctx, parent).and_then(|b| {
            let (status, missing) = match shared.kro {
                false => (plan.status.evaluate(&b, ctx.now()), Vec::new()),
                true => match plan.status.evaluate_available(&b, ctx.now()) {
                    (Some(status), missing) => (Ok(status), missing),
                    (None, missing) => (Ok(json!({})), missing),
                },
            };
            let status = status.map_err(ReconcileError::from_error)?;
            let message = match missing.is_empty() {
                true => String::new(),
                false => format!(
                    "not computed yet: {}",
                    missing
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            };
            if !parent.data.is_object() {
                return Err(ReconcileError::msg("the parent is not an object"));
            }
            match shared.kro {
                true => replace_kro_fields(parent, &plan.status, status),
                // Compared first: writing through the draft copies the parent.
                false => {
                    if merge_changes(parent.data.get("status"), &status)
                        && let Some(fields) = parent.data.as_object_mut()
                    {
                        merge_into(fields.entry("status").or_insert(json!({})), status);
                    }
                }
            }
            shared.mark_true(ctx, parent, &plan.condition, "Synced", &message);
            Ok(())
        })
    })
    .named(name)
}

/// Writes an RGD's status fields as KRO does, from this evaluation alone: each field of
/// `template` replaced whole by its value in `computed`, or removed when it could not be
/// computed (not left at an earlier value). Other status fields are kept.
fn replace_kro_fields(parent: &mut Draft, template: &Template, computed: Value) {
    let Template::Map(fields) = template else {
        return;
    };
    let Value::Object(mut computed) = computed else {
        return;
    };
    let mut status = match parent.data.get("status") {
        Some(Value::Object(status)) => status.clone(),
        _ => Map::new(),
    };
    for (name, _) in fields {
        match computed.remove(name) {
            Some(value) => status.insert(name.clone(), value),
            None => status.remove(name),
        };
    }
    let status = Value::Object(status);
    // Compared first: writing through the draft copies the parent.
    if parent.data.get("status") != Some(&status) {
        parent.data["status"] = status;
    }
}

/// Whether merging `from` into `into` (absent: a new field) would change anything.
fn merge_changes(into: Option<&Value>, from: &Value) -> bool {
    match (into, from) {
        (Some(Value::Object(into)), Value::Object(from)) => from
            .iter()
            .any(|(key, value)| merge_changes(into.get(key), value)),
        (Some(into), from) => into != from,
        (None, _) => true,
    }
}

/// Merges `from` into `into`: maps field by field, anything else replaced.
fn merge_into(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (key, value) in from {
                merge_into(into.entry(key).or_insert(Value::Null), value);
            }
        }
        (into, from) => *into = from,
    }
}

/// The `SyncReconciler` of a ref step: reads (and tracks) the object and binds it; runs
/// while the parent is deleted too, and then never fails on a missing object, so deletion
/// is never blocked by a ref that went away.
fn ref_reconciler(plan: Arc<RefPlan>, shared: Arc<Shared>) -> SyncReconciler {
    let gvk = plan.gvk.clone();
    let name = plan.path.clone();
    SyncReconciler::new_async(move |ctx: &Context, parent: &mut Draft| {
        let (plan, shared) = (plan.clone(), shared.clone());
        Box::pin(async move {
            let deleting = parent.metadata.deletion_timestamp.is_some();
            match resolve_ref(ctx, &shared, parent, &plan).await {
                Ok((value, message)) => {
                    shared.bind(ctx, &plan.id, || value);
                    shared.mark_true(ctx, parent, &plan.condition, "Resolved", &message);
                    Ok(())
                }
                Err(_) if deleting => {
                    shared.bind(ctx, &plan.id, || Value::Null);
                    Ok(())
                }
                Err(err) => Err(err),
            }
        })
    })
    .sync_during_finalization(true)
    .with_setup(move |setup: &mut Setup| {
        setup.watch_tracked(gvk.clone());
        Ok(())
    })
    .named(name)
}

async fn resolve_ref(
    ctx: &Context,
    shared: &Shared,
    parent: &DynamicObject,
    plan: &RefPlan,
) -> Result<(Value, String), ReconcileError> {
    let b = shared.bindings(ctx, parent)?;
    let eval = |text: &super::expr::Text| {
        text.evaluate_string(&b, ctx.now())
            .map_err(ReconcileError::from_error)
    };
    let namespace = match &plan.namespace {
        Some(ns) => Some(eval(ns)?),
        None => parent.metadata.namespace.clone(),
    };
    let resolved = ctx.config().client.resolve(&plan.gvk).await?;
    let namespace = namespace.filter(|_| resolved.namespaced);
    if plan.selects {
        let mut selector = kube::core::Selector::default();
        for (key, value) in &plan.match_labels {
            let value = eval(value)?;
            selector.extend(kube::core::Selector::from_iter([(key.clone(), value)]));
        }
        let options = ListOptions {
            namespace,
            selector: Some(selector),
            ..Default::default()
        };
        let objects = ctx.track_and_list(&plan.gvk, &options).await?;
        let message = format!("{} {} selected", objects.len(), plan.gvk.kind);
        return Ok((
            Value::Array(objects.iter().map(|o| child_json(o)).collect()),
            message,
        ));
    }
    let name = match &plan.name {
        Some(name) => eval(name)?,
        None => String::new(),
    };
    let key = ObjectKey { namespace, name };
    match ctx.track_and_get(&plan.gvk, &key).await {
        Ok(object) => Ok((
            child_json(&object),
            format!("{} {key} found", plan.gvk.kind),
        )),
        Err(err) if err.is_not_found() && plan.optional => Ok((
            Value::Null,
            format!("{} {key} does not exist (optional)", plan.gvk.kind),
        )),
        Err(err) if err.is_not_found() => Err(ReconcileError::from_error(MissingObject(format!(
            "{} {key}",
            plan.gvk.kind
        )))),
        Err(err) => Err(err.into()),
    }
}

/// Deletes the parent's children that a step of this definition made and that no step of
/// it makes any more (a removed or renamed step), by kind from the inventory.
struct PruneRemovedSteps {
    shared: Arc<Shared>,
    current: BTreeSet<String>,
    inventory: Inventory,
}

#[async_trait]
impl SubReconciler for PruneRemovedSteps {
    fn name(&self) -> &str {
        "prune removed steps"
    }

    async fn reconcile(&self, ctx: &Context, parent: &mut Draft) -> Outcome {
        if parent.metadata.deletion_timestamp.is_some() {
            return Outcome::done();
        }
        let Some(options) = self.shared.children_of(parent) else {
            return Outcome::done();
        };
        let kinds: Vec<Gvk> = self.inventory.lock().iter().cloned().collect();
        for gvk in kinds {
            let children = match ctx.config().client.list(&gvk, &options).await {
                Ok(children) => children,
                Err(err) if err.is_not_found() => continue,
                Err(err) => {
                    warn!(%gvk, %err, "cannot list children to prune");
                    continue;
                }
            };
            for child in children {
                let label = |key| child.metadata.labels.as_ref().and_then(|l| l.get(key));
                if label(DEFINITION_LABEL) != Some(&self.shared.definition) {
                    continue;
                }
                let step = label(STEP_LABEL).map_or("", String::as_str);
                if self.current.contains(step) {
                    continue;
                }
                let Ok(key) = ObjectKey::of(child.as_ref()) else {
                    continue;
                };
                info!(%gvk, child = %key, %step, "deleting a child of a step the definition no longer has");
                match ctx
                    .config()
                    .client
                    .delete(&gvk, &key, &DeleteParams::background())
                    .await
                {
                    Ok(_) => {}
                    Err(err) if err.is_not_found() => {}
                    Err(err) => return Outcome::err(err),
                }
            }
        }
        Outcome::done()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_changes_tells_whether_merging_would_change_the_status() {
        let cases = [
            (json!({"a": 1, "b": {"c": 2}}), json!({"b": {"c": 2}})),
            (json!({"a": 1, "b": {"c": 2}}), json!({"b": {"c": 3}})),
            (json!({"a": 1}), json!({"b": null})),
            (json!({"a": {"x": 1}}), json!({"a": 5})),
            (json!({"a": [1, 2]}), json!({"a": [1, 2]})),
            (json!({}), json!({})),
        ];
        for (current, from) in cases {
            let mut merged = current.clone();
            merge_into(&mut merged, from.clone());
            assert_eq!(
                merge_changes(Some(&current), &from),
                merged != current,
                "{current} <- {from}"
            );
        }
        assert!(merge_changes(None, &json!({})), "a missing status is added");
    }

    #[test]
    fn holds_template_tells_whether_applying_the_template_would_change_the_child() {
        let object = |value: Value| -> DynamicObject { serde_json::from_value(value).unwrap() };
        let current = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}, "annotations": {"n": "x"}},
            "data": {"k": "v", "extra": "e"}, "status": {"s": 1}}));
        let templates = [
            json!({"metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"k": "v"}}),
            json!({"metadata": {"name": "c", "labels": {"a": "2"}}, "data": {"k": "v"}}),
            json!({"metadata": {"name": "c", "labels": {"z": "1"}}}),
            json!({"metadata": {"name": "c", "annotations": {"n": "x"}}, "status": {"s": 2}}),
            json!({"metadata": {"name": "c", "annotations": {"n": "y"}}}),
            json!({"metadata": {"name": "c"}, "data": {"k": "w"}}),
            json!({"metadata": {"name": "c"}, "data": {"k": "v", "extra": "e"}}),
            json!({"metadata": {"name": "c"}, "spec": {"new": true}}),
            json!({"metadata": {"name": "c"}, "data": null}),
        ];
        let mut changing = 0;
        for template in templates {
            let desired = object(template.clone());
            let mut applied = current.clone();
            apply_template(&mut applied, &desired);
            let changes = applied != current;
            changing += usize::from(changes);
            assert_eq!(holds_template(&current, &desired), !changes, "{template}");
        }
        assert!(
            (3..9).contains(&changing),
            "{changing} of 9 templates change the child"
        );
    }
}
