//! `ResourceReconciler`: the root reconciler of one kind. It reads the requested resource,
//! runs its sub-reconciler and writes the status back when it changed.
//!
//! Deliberate departures from reconciler.io: a quiet `before_reconcile` error requeues, as
//! in reconciler.io's `AggregateReconciler` (its `ResourceReconciler` returns it as is), and
//! dynamic objects get `status.observedGeneration` (for kinds with a status subresource,
//! unless the root does not own the status: see [`StatusPolicy`]) and
//! kept condition `lastTransitionTime`s, which reconciler.io gives typed resources only.
//! Every status is written with an update of the status subresource: Go merge-patches the
//! status of duck types, which dynamic objects do not distinguish. There is no defaulting
//! step (Go calls the resource's `Default` method).

use std::sync::Arc;

use async_trait::async_trait;
use jiff::Timestamp;
use kube::api::DynamicObject;
use serde_json::Value;
use tracing::{Instrument, debug, info};

use crate::trace::info_span;

use super::events::log_unrecorded;
use super::steps::{AfterReconcile, BeforeReconcile};
use super::{
    Config, Context, Draft, Outcome, Predicate, ReconcileError, ReconcileResult, RequestOptions,
    RootReconciler, Setup, StatusPolicy, SubReconciler, ValidationError, Watch,
};
use crate::client::reasons;
use crate::object::{ConditionSet, Gvk, ObjectKey, StatusExt};

/// The root reconciler of one kind (reconciler.io's `ResourceReconciler`).
///
/// For each request it reads the resource from the cache, runs its sub-reconciler on a
/// [`Draft`] of it and, when the draft's status changed, writes the status back (an update of
/// the status subresource). The status-write rule, as in reconciler.io: **a status write
/// that succeeds replaces the reconcile's outcome, error included** — the write re-enqueues
/// the object, so the outcome is a success (the error is logged, and shows on the conditions
/// the tree wrote). An error reaches the manager (and a test's `should_err`) when the status
/// did not change, when it is marked [`ReconcileError::skip_status_update`], or when the
/// status write fails.
///
/// ```no_run
/// use dynrec::prelude::*;
///
/// fn widgets(config: &Config) -> ResourceReconciler {
///     let observe = SyncReconciler::new(|_ctx: &Context, widget: &mut Draft| {
///         let size = widget.data["spec"]["size"].clone();
///         if widget.data["status"]["size"] != size {
///             widget.data["status"]["size"] = size;
///         }
///         Ok(())
///     });
///     let widget = Gvk::new("example.com", "v1", "Widget");
///     ResourceReconciler::new(widget, observe, config.clone())
///         .conditions(ConditionSet::living(&[]))
/// }
/// ```
pub struct ResourceReconciler {
    name: String,
    resource_type: Arc<Gvk>,
    reconciler: Box<dyn SubReconciler>,
    config: Arc<Config>,
    status_policy: StatusPolicy,
    hooks: RootHooks,
    skip_request: Option<Predicate<ObjectKey>>,
    skip_resource: Option<Predicate<DynamicObject>>,
    conditions: Option<Arc<ConditionSet>>,
}

/// The hooks both roots share.
#[derive(Default)]
pub(super) struct RootHooks {
    pub(super) before: Option<Box<dyn BeforeReconcile>>,
    pub(super) after: Option<Box<dyn AfterReconcile>>,
}

impl ResourceReconciler {
    /// Reconciles objects of `resource_type` with `reconciler`, using `config`'s clients.
    pub fn new(
        resource_type: Gvk,
        reconciler: impl SubReconciler + 'static,
        config: Config,
    ) -> Self {
        Self {
            name: format!("{}ResourceReconciler", resource_type.kind),
            resource_type: Arc::new(resource_type),
            reconciler: Box::new(reconciler),
            config: Arc::new(config),
            status_policy: StatusPolicy::Owned,
            hooks: RootHooks::default(),
            skip_request: None,
            skip_resource: None,
            conditions: None,
        }
    }

    /// Names the reconciler (default `{Kind}ResourceReconciler`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Whose the resource's status is, and so when it is written (default
    /// [`StatusPolicy::Owned`]): [`StatusPolicy::Shared`] for a kind another controller owns,
    /// [`StatusPolicy::NeverWritten`] for a secondary controller,
    /// [`StatusPolicy::OwnedDuringDeletion`] to write it while the resource is deleted.
    pub fn status_policy(mut self, policy: StatusPolicy) -> Self {
        self.status_policy = policy;
        self
    }

    /// Runs `hook` before each request, e.g.
    /// `|ctx| Box::pin(async move { (ctx, Outcome::done()) })`.
    pub fn before_reconcile(mut self, hook: impl BeforeReconcile) -> Self {
        self.hooks.before = Some(Box::new(hook));
        self
    }

    /// Runs `hook` on the outcome of each request, e.g.
    /// `|_ctx, outcome| Box::pin(async move { outcome })`.
    pub fn after_reconcile(mut self, hook: impl AfterReconcile) -> Self {
        self.hooks.after = Some(Box::new(hook));
        self
    }

    /// Ignores requests the predicate holds for (no hooks run).
    pub fn skip_request(mut self, predicate: Predicate<ObjectKey>) -> Self {
        self.skip_request = Some(predicate);
        self
    }

    /// Ignores resources the predicate holds for (no status work).
    pub fn skip_resource(mut self, predicate: Predicate<DynamicObject>) -> Self {
        self.skip_resource = Some(predicate);
        self
    }

    /// Initializes these conditions on the resource before each reconcile.
    pub fn conditions(mut self, conditions: ConditionSet) -> Self {
        self.conditions = Some(Arc::new(conditions));
        self
    }

    /// Reads the resource, reconciles it and writes its status (reconciler.io's reconcileOuter).
    async fn reconcile_outer(&self, ctx: &Context) -> Outcome {
        let client = &ctx.original_config().client;
        let original = match client.get(&self.resource_type, ctx.request()).await {
            Ok(found) => found,
            Err(err) if err.is_not_found() => return Outcome::done(),
            // Acting as a ServiceAccount, an object it may not read is not its to reconcile
            // (the shared watch, opened with the manager's identity, saw it change).
            Err(err) if err.code() == Some(403) && client.identity().is_some() => {
                debug!(%err, "resource its identity may not read: skipped");
                return Outcome::done();
            }
            Err(err) => {
                debug!(%err, "unable to fetch resource");
                return Outcome::err(err);
            }
        };
        // Shared with the cache until a reconciler writes to it.
        let mut resource = Draft::shared(original.clone());
        if let Some(skip) = &self.skip_resource
            && skip.test(ctx, &resource)
        {
            debug!(predicate = skip.description(), "resource skipped");
            return Outcome::done();
        }
        if let Some(conditions) = &self.conditions
            && self.status_policy.owns()
            && let Err(err) = conditions.manage(&mut resource, ctx.now()).initialize()
        {
            return Outcome::err(ReconcileError::from_error(err));
        }
        let outcome = self.reconcile_inner(ctx, &mut resource).await;
        if !self.status_policy.writes() || !resource.is_changed() {
            return outcome;
        }
        // The draft was written, so it holds its own copy. Boxed: kept across the status
        // write's await, an object (480 bytes) would grow every request's future.
        let mut resource = Box::new(resource.into_inner());
        sync_last_transition_times(&mut resource, &original);
        let skip_marked = outcome
            .error
            .as_ref()
            .is_some_and(|e| e.is_skip_status_update());
        let terminating = resource.metadata.deletion_timestamp.is_some();
        if skip_marked
            || status_of(&resource) == status_of(&original)
            || (terminating && !self.status_policy.writes_during_deletion())
        {
            return outcome;
        }
        // Boxed, as a request's future is large: most reconciles do not write the status.
        Box::pin(self.update_status(ctx, &resource, outcome)).await
    }

    /// Runs the sub-reconciler unless the resource is already going away.
    async fn reconcile_inner(&self, ctx: &Context, resource: &mut Draft) -> Outcome {
        let finalizers = resource.metadata.finalizers.as_deref().unwrap_or_default();
        if resource.metadata.deletion_timestamp.is_some() && finalizers.is_empty() {
            return Outcome::done();
        }
        let outcome = self.reconciler.reconcile(ctx, resource).await;
        if !self.status_policy.owns() || outcome.error.as_ref().is_some_and(|e| !e.is_halt()) {
            return outcome;
        }
        let client = &ctx.original_config().client;
        match client.has_subresource(&self.resource_type, "status").await {
            Ok(true) => {
                if let Err(err) = resource.observe_generation() {
                    return Outcome::with(outcome.result, Some(ReconcileError::from_error(err)));
                }
            }
            Ok(false) => {}
            Err(err) => debug!(%err, "kind not resolved, observedGeneration not set"),
        }
        outcome
    }

    /// Writes the status; a successful write replaces the outcome (the change requeues).
    async fn update_status(
        &self,
        ctx: &Context,
        resource: &DynamicObject,
        outcome: Outcome,
    ) -> Outcome {
        let config = ctx.original_config();
        match config.client.update_status(resource).await {
            Ok(_) => {
                let recorded = config
                    .recorder
                    .normal(resource, reasons::STATUS_UPDATED, "Updated status")
                    .await;
                log_unrecorded(recorded);
                log_replaced(&outcome);
                Outcome::done()
            }
            Err(err) if err.is_conflict() => {
                info!(%err, "status update conflicted, the change will requeue");
                log_replaced(&outcome);
                Outcome::done()
            }
            // The reconcile cleared the last finalizer of a resource being deleted: it is gone,
            // and so is the status there was to write.
            Err(err) if err.is_not_found() && resource.metadata.deletion_timestamp.is_some() => {
                debug!(%err, "the deleted resource is gone, its status with it");
                outcome
            }
            Err(err) => {
                debug!(%err, "unable to update status");
                let message = format!("Failed to update status: {}", err.server_message());
                let recorded = config
                    .recorder
                    .warning(resource, reasons::STATUS_UPDATE_FAILED, message)
                    .await;
                log_unrecorded(recorded);
                Outcome::with(outcome.result, Some(err.into()))
            }
        }
    }
}

#[async_trait]
impl RootReconciler for ResourceReconciler {
    fn name(&self) -> &str {
        &self.name
    }

    fn resource_type(&self) -> &Gvk {
        &self.resource_type
    }

    fn config(&self) -> &Config {
        &self.config
    }

    fn setup(&self) -> Result<Setup, ValidationError> {
        self.validate()?;
        let mut setup = Setup::for_config(Config::clone(&self.config));
        setup.watch(Watch::For(Gvk::clone(&self.resource_type)));
        if self.status_policy.owns() {
            setup.require(&self.name, &self.resource_type, "status", &["update"]);
        }
        setup.require(&self.name, &super::events_gvk(), "", &["create", "patch"]);
        self.reconciler.setup(&mut setup)?;
        Ok(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.reconciler.validate().map_err(|err| {
            ValidationError(format!(
                "ResourceReconciler {:?} must have a valid Reconciler: {err}",
                self.name
            ))
        })
    }

    async fn reconcile_with(&self, request: &ObjectKey, options: RequestOptions) -> Outcome {
        let span = info_span!("reconcile", controller = %self.name, kind = %self.resource_type, object = %request);
        let ctx = request_context(
            request,
            &self.resource_type,
            &self.config,
            self.conditions.clone(),
            options,
        );
        async {
            if let Some(skip) = &self.skip_request
                && skip.test(&ctx, request)
            {
                debug!("request skipped");
                return Outcome::done();
            }
            self.hooks
                .run(ctx, |ctx| async move { self.reconcile_outer(&ctx).await })
                .await
        }
        .instrument(span)
        .await
    }
}

/// The context of a new request.
pub(super) fn request_context(
    request: &ObjectKey,
    resource_type: &Arc<Gvk>,
    config: &Arc<Config>,
    conditions: Option<Arc<ConditionSet>>,
    options: RequestOptions,
) -> Context {
    let now = options.now.unwrap_or_else(Timestamp::now);
    let ctx = Context::shared(
        request.clone(),
        resource_type.clone(),
        config.clone(),
        now,
        conditions,
    );
    match options.additional_configs.is_empty() {
        true => ctx,
        false => ctx.with_additional_configs(options.additional_configs),
    }
}

impl RootHooks {
    /// BeforeReconcile, `inner`, AfterReconcile; a quiet error at either end becomes a requeue.
    pub(super) async fn run<F, Fut>(&self, ctx: Context, inner: F) -> Outcome
    where
        F: FnOnce(Context) -> Fut,
        Fut: Future<Output = Outcome>,
    {
        let (ctx, before) = match &self.before {
            Some(hook) => hook(ctx).await,
            None => (ctx, Outcome::done()),
        };
        if let Some(err) = before.error {
            return requeue_if_quiet(Outcome::with(before.result, Some(err)));
        }
        let outcome = inner(ctx.clone()).await;
        let outcome = Outcome::with(before.result.aggregate(outcome.result), outcome.error);
        let outcome = match &self.after {
            Some(hook) => hook(&ctx, outcome).await,
            None => outcome,
        };
        requeue_if_quiet(outcome)
    }
}

/// Logs the error of an outcome a status write replaces (the manager never sees it).
fn log_replaced(outcome: &Outcome) {
    if let Some(err) = &outcome.error {
        super::failure::log_failed_reconcile(err);
    }
}

/// A quiet error ends as a requeue without error; anything else is kept.
fn requeue_if_quiet(outcome: Outcome) -> Outcome {
    match &outcome.error {
        Some(err) if err.is_quiet() => {
            // Not logged (quiet), but not a success either.
            super::failure::log_failed_reconcile(err);
            Outcome::ok(ReconcileResult::requeue())
        }
        // Not logged here: the manager logs each failed reconcile once.
        _ => outcome,
    }
}

/// The status of an object; absent and `null` are the same.
fn status_of(object: &DynamicObject) -> Option<&Value> {
    object.data.get("status").filter(|s| !s.is_null())
}

/// Keeps a condition's lastTransitionTime when its status, reason, message and
/// observedGeneration are those of the same condition in `original`.
fn sync_last_transition_times(resource: &mut DynamicObject, original: &DynamicObject) {
    let Some(old) = original.data["status"]["conditions"].as_array() else {
        return;
    };
    let Some(proposed) = resource
        .data
        .get_mut("status")
        .and_then(|s| s.get_mut("conditions"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    const COMPARED: [&str; 4] = ["status", "reason", "message", "observedGeneration"];
    for o in old {
        let Some(p) = proposed.iter_mut().find(|p| p["type"] == o["type"]) else {
            continue;
        };
        if COMPARED.iter().all(|field| p.get(field) == o.get(field))
            && p.get("lastTransitionTime") != o.get("lastTransitionTime")
            && let Some(fields) = p.as_object_mut()
        {
            match o.get("lastTransitionTime") {
                Some(time) => fields.insert("lastTransitionTime".into(), time.clone()),
                None => fields.remove("lastTransitionTime"),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn unchanged_conditions_keep_their_transition_time() {
        let original = object(json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "Done", "lastTransitionTime": "2020-01-01T00:00:00Z"},
            {"type": "Other", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}
        ]}}));
        let mut resource = object(json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "Done", "lastTransitionTime": "2024-01-01T00:00:00Z"},
            {"type": "Other", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z"}
        ]}}));
        sync_last_transition_times(&mut resource, &original);
        let conditions = &resource.data["status"]["conditions"];
        assert_eq!(conditions[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(conditions[1]["lastTransitionTime"], "2024-01-01T00:00:00Z");
    }
}
