//! KRO's conventions on an instance, around the reconcilers of its definition: the
//! `kro.run/finalizer` and KRO's labels on the instance, KRO's conditions and
//! `status.state` (`ACTIVE`, `IN_PROGRESS`, `ERROR`, `DELETING`), `observedGeneration` on
//! each condition, and, when the instance is deleted, its children deleted in reverse
//! dependency order — each step's children gone before the previous step's are deleted —
//! without evaluating a template.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use tracing::{info, warn};

use super::conditions::{RESOURCES_READY, is_ready, mark_deleting, mark_not_managed, summarize};
use super::custom_conditions::{CustomConditions, stamp};
use super::ownership::children_of;
use super::translate::{FINALIZER, OWNED_LABEL, RGD_NAME_LABEL};
use crate::definitions::EvalError;
use crate::definitions::bindings::Shared;
use crate::definitions::error::MissingObject;
use crate::object::{Condition, Gvk, INITIALIZING, ObjectKey, StatusExt};
use crate::reconcilers::{
    Context, Draft, Outcome, ReconcileError, ReconcileResult, Setup, SubReconciler,
    ValidationError, clear_finalizer,
};

/// How often a deletion checks whether a step's children are gone.
const DELETION_POLL: Duration = Duration::from_secs(1);

/// The children of one step: their kind and the labels that tell them apart.
#[derive(Clone, Debug)]
pub struct ChildGroup {
    /// The step's id.
    pub id: String,
    /// The children's kind.
    pub gvk: Gvk,
    /// Labels every child of the step has.
    pub labels: BTreeMap<String, String>,
}

/// A definition's reconcilers with KRO's conventions around them.
pub struct KroInstance {
    inner: Box<dyn SubReconciler>,
    rgd: String,
    /// The steps' children, in the order the steps run.
    groups: Vec<ChildGroup>,
    /// The RGD's custom conditions (written instead of KRO's), and the bindings of the
    /// steps they read.
    custom: Option<(Arc<CustomConditions>, Arc<Shared>)>,
}

impl KroInstance {
    /// `inner` for the instances of the RGD `rgd`, whose steps make `groups` (in run order).
    pub fn new(inner: impl SubReconciler + 'static, rgd: &str, groups: Vec<ChildGroup>) -> Self {
        Self {
            inner: Box::new(inner),
            rgd: rgd.to_owned(),
            groups,
            custom: None,
        }
    }

    /// Writes the RGD's custom `conditions` instead of KRO's, evaluated over the steps'
    /// bindings in `shared`.
    pub fn with_custom_conditions(
        mut self,
        conditions: Arc<CustomConditions>,
        shared: Arc<Shared>,
    ) -> Self {
        self.custom = Some((conditions, shared));
        self
    }

    /// Evaluates the custom conditions over the steps' bindings, `self` the instance with
    /// KRO's built-in conditions (just computed) as its conditions, and writes them in
    /// place of the built-ins; returns whether evaluating them failed (KRO's `ERROR`).
    fn write_custom_conditions(
        &self,
        ctx: &Context,
        instance: &mut Draft,
        previous: &[Condition],
    ) -> Result<bool, ReconcileError> {
        let Some((conditions, shared)) = &self.custom else {
            return Ok(false);
        };
        let mut bindings = shared.bindings(ctx, instance)?;
        let mut schema = bindings
            .get("self")
            .map(|s| (**s).clone())
            .unwrap_or_default();
        let built_in = instance.conditions().map_err(ReconcileError::from_error)?;
        schema["status"] = json!({"conditions": built_in});
        bindings.insert("self".into(), Arc::new(schema));
        let evaluation = conditions.evaluate(&bindings, ctx.now());
        let failed = !evaluation.failures.is_empty();
        if failed {
            warn!(failures = %evaluation.failures.join("; "), "custom conditions degraded; setting state ERROR");
        }
        let written = stamp(
            evaluation,
            previous,
            instance.metadata.generation,
            ctx.now(),
        );
        instance
            .set_conditions(written)
            .map_err(ReconcileError::from_error)?;
        Ok(failed)
    }

    /// The custom conditions on the wire while the instance is deleted, as KRO keeps them:
    /// unchanged, with KRO's `ResourcesReady` (deleting) over them.
    fn deletion_conditions(
        &self,
        instance: &mut Draft,
        previous: Option<Vec<Condition>>,
    ) -> Result<(), ReconcileError> {
        let Some(previous) = previous else {
            return Ok(());
        };
        let mut deleting: Vec<Condition> = instance
            .condition(RESOURCES_READY)
            .map_err(ReconcileError::from_error)?
            .into_iter()
            .collect();
        for condition in &mut deleting {
            condition.observed_generation = instance.metadata.generation;
        }
        deleting.extend(previous.into_iter().filter(|c| c.type_ != RESOURCES_READY));
        instance
            .set_conditions(deleting)
            .map_err(ReconcileError::from_error)
    }

    /// Adds the finalizer and the labels KRO puts on an instance, in one patch.
    async fn claim(&self, ctx: &Context, instance: &mut Draft) -> Result<(), ReconcileError> {
        let labels = instance.metadata.labels.clone().unwrap_or_default();
        let finalizers = instance.metadata.finalizers.clone().unwrap_or_default();
        let wanted = [(OWNED_LABEL, "true"), (RGD_NAME_LABEL, self.rgd.as_str())];
        let missing_label = wanted
            .iter()
            .any(|(k, v)| labels.get(*k).map(String::as_str) != Some(*v));
        let missing_finalizer = !finalizers.iter().any(|f| f == FINALIZER);
        if !missing_label && !missing_finalizer {
            return Ok(());
        }
        let mut finalizers = finalizers;
        if missing_finalizer {
            finalizers.push(FINALIZER.to_owned());
        }
        let labels: BTreeMap<&str, &str> = wanted.into_iter().collect();
        let patch = Patch::Merge(json!({"metadata": {
            "labels": labels, "finalizers": finalizers,
            "resourceVersion": instance.metadata.resource_version}}));
        let gvk = Gvk::of(instance.get()).map_err(crate::client::Error::from)?;
        let key = ObjectKey::of(instance.get()).map_err(crate::client::Error::from)?;
        let patched = ctx
            .original_config()
            .client
            .patch(&gvk, &key, &patch, &PatchParams::default())
            .await?;
        instance.metadata.labels = patched.metadata.labels;
        instance.metadata.finalizers = patched.metadata.finalizers;
        instance.metadata.resource_version = patched.metadata.resource_version;
        instance.metadata.generation = patched.metadata.generation;
        Ok(())
    }

    /// Deletes the children of the last step that still has some; `true` once none is
    /// left.
    async fn delete_in_reverse(
        &self,
        ctx: &Context,
        instance: &Draft,
    ) -> Result<bool, ReconcileError> {
        let Some(uid) = instance.metadata.uid.clone() else {
            return Ok(true);
        };
        let client = &ctx.config().client;
        for group in self.groups.iter().rev() {
            let children = match client.list(&group.gvk, &children_of(&uid)).await {
                Ok(children) => children,
                Err(err) if err.is_not_found() => continue,
                Err(err) => return Err(err.into()),
            };
            let ours: Vec<_> = children
                .iter()
                .filter(|child| {
                    let labels = child.metadata.labels.clone().unwrap_or_default();
                    group.labels.iter().all(|(k, v)| labels.get(k) == Some(v))
                })
                .collect();
            if ours.is_empty() {
                continue;
            }
            for child in ours {
                if child.metadata.deletion_timestamp.is_some() {
                    continue;
                }
                let key = ObjectKey::of(child.as_ref()).map_err(crate::client::Error::from)?;
                info!(gvk = %group.gvk, child = %key, step = %group.id, "deleting a child of a deleted instance (reverse dependency order)");
                match client
                    .delete(&group.gvk, &key, &DeleteParams::background())
                    .await
                {
                    Ok(_) => {}
                    Err(err) if err.is_not_found() => {}
                    Err(err) => return Err(err.into()),
                }
            }
            return Ok(false);
        }
        Ok(true)
    }
}

#[async_trait]
impl SubReconciler for KroInstance {
    fn name(&self) -> &str {
        "KRO instance"
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        if let Some(resource) = setup.resource_type().cloned() {
            setup.require(self.name(), &resource, "", &["patch"]);
        }
        for group in &self.groups {
            setup.require(self.name(), &group.gvk, "", &["list", "delete"]);
        }
        self.inner.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.inner.validate()
    }

    async fn reconcile(&self, ctx: &Context, instance: &mut Draft) -> Outcome {
        // With custom conditions, the wire holds the author's: KRO's are computed afresh.
        let previous = match &self.custom {
            None => None,
            Some(_) => match take_conditions(ctx, instance) {
                Ok(previous) => Some(previous),
                Err(error) => return Outcome::err(error),
            },
        };
        let custom = previous.is_some();
        if instance.metadata.deletion_timestamp.is_some() {
            let blocked = match self.delete_in_reverse(ctx, instance).await {
                Ok(true) => {
                    return match clear_finalizer(ctx, instance, FINALIZER).await {
                        Ok(()) => Outcome::done(),
                        Err(error) => Outcome::err(error),
                    };
                }
                Ok(false) => None,
                Err(error) => Some(error),
            };
            let message = blocked.as_ref().map(ToString::to_string);
            mark_deleting(instance, ctx.now(), message.as_deref()).ok();
            stamp_status(instance, State::Deleting, !custom);
            if let Err(error) = self.deletion_conditions(instance, previous) {
                return Outcome::err(error);
            }
            return match blocked {
                None => Outcome::ok(ReconcileResult::requeue_after(DELETION_POLL)),
                Some(error) => Outcome::err(error),
            };
        }
        if let Err(error) = self.claim(ctx, instance).await {
            let marked = match previous {
                // As KRO: the author's conditions stay as they were, the state is ERROR.
                Some(previous) => instance
                    .set_conditions(previous)
                    .map_err(ReconcileError::from_error),
                None => mark_not_managed(instance, ctx.now(), &error.to_string())
                    .map_err(ReconcileError::from_error),
            };
            stamp_status(instance, State::Error, !custom);
            return match marked {
                Ok(()) => Outcome::err(error),
                Err(marking) => Outcome::err(marking),
            };
        }
        let outcome = self.inner.reconcile(ctx, instance).await;
        let error = outcome.error.as_ref().filter(|e| !e.is_halt());
        let failure = error.map(ToString::to_string);
        // As KRO: an external reference not found yet, or an expression whose data is not
        // there yet (a status field not written), is waited for, not an error.
        let missing = error.is_some_and(|e| {
            e.find_cause::<MissingObject>().is_some()
                || e.find_cause::<EvalError>()
                    .is_some_and(EvalError::is_data_pending)
        });
        let failed = match summarize(instance, ctx.now(), failure.as_deref(), missing) {
            Ok(failed) => failed,
            Err(error) => return Outcome::err(ReconcileError::from_error(error)),
        };
        let state = match (is_ready(instance), failed) {
            (true, _) => State::Active,
            (false, true) => State::Error,
            (false, false) => State::InProgress,
        };
        let degraded = match &previous {
            Some(previous) => match self.write_custom_conditions(ctx, instance, previous) {
                Ok(degraded) => degraded,
                Err(error) => return Outcome::err(error),
            },
            None => false,
        };
        let state = if degraded { State::Error } else { state };
        stamp_status(instance, state, !custom);
        outcome
    }
}

/// KRO's `status.state` of an instance (its `api/v1alpha1/instance_state.go`; its
/// deprecated `FAILED` is never written, as by KRO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// `Ready` is True.
    Active,
    /// Waiting for a resource (to exist, be ready, or for data it reads).
    InProgress,
    /// Reconciling failed (an expression, a write, the finalizer or labels).
    Error,
    /// The instance is deleted and its resources are being deleted.
    Deleting,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            State::Active => "ACTIVE",
            State::InProgress => "IN_PROGRESS",
            State::Error => "ERROR",
            State::Deleting => "DELETING",
        }
    }
}

/// The instance's conditions (the author's custom ones on the wire, without those the
/// root initialized for this request), taken off it, and the root's conditions initialized
/// again in their place (as on an instance without any).
fn take_conditions(ctx: &Context, instance: &mut Draft) -> Result<Vec<Condition>, ReconcileError> {
    // Times are stored to the second.
    let now = Some(ctx.now().as_second());
    let initialized_now = |c: &Condition| {
        c.reason.as_deref() == Some(INITIALIZING)
            && c.last_transition_time.as_ref().map(|t| t.0.as_second()) == now
    };
    let previous = instance
        .conditions()
        .map_err(ReconcileError::from_error)?
        .into_iter()
        .filter(|c| !initialized_now(c))
        .collect();
    instance
        .set_conditions(Vec::new())
        .map_err(ReconcileError::from_error)?;
    ctx.conditions(instance)
        .initialize()
        .map_err(ReconcileError::from_error)?;
    Ok(previous)
}

/// Writes KRO's `status.state`, and, with `generations`, the instance's generation on each
/// condition (custom conditions carry their own).
fn stamp_status(instance: &mut Draft, state: State, generations: bool) {
    let generation = instance.metadata.generation.filter(|_| generations);
    let status = &mut instance.to_mut().data["status"];
    if !status.is_object() {
        *status = json!({});
    }
    status["state"] = json!(state.as_str());
    if let (Some(generation), Some(conditions)) = (generation, status["conditions"].as_array_mut())
    {
        for condition in conditions {
            condition["observedGeneration"] = Value::from(generation);
        }
    }
}
