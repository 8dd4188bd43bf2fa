//! `AggregateReconciler`: the root reconciler of one specific object, which it reconciles and
//! then writes itself (create, update or delete) through an [`ObjectManager`].
//!
//! Departure from reconciler.io: none beyond the shared root hooks (a quiet
//! `before_reconcile` error requeues, as in the Go original).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kube::api::{DynamicObject, ObjectMeta, TypeMeta};
use tracing::{Instrument, debug};

use crate::trace::info_span;

use super::resource::{RootHooks, request_context};
use super::steps::{AfterReconcile, AsyncDerive, BeforeReconcile, Derivation, Derive};
use super::{
    Config, Context, Draft, ObjectManager, Outcome, RequestOptions, RootReconciler, Setup,
    SubReconciler, ValidationError, Watch,
};
use crate::object::{Gvk, ObjectKey};

/// The root reconciler of one object (reconciler.io's `AggregateReconciler`).
pub struct AggregateReconciler {
    name: String,
    resource_type: Arc<Gvk>,
    request: ObjectKey,
    reconciler: Option<Box<dyn SubReconciler>>,
    desired_resource: Option<Derivation<Option<DynamicObject>>>,
    object_manager: Box<dyn ObjectManager>,
    config: Arc<Config>,
    hooks: RootHooks,
}

impl AggregateReconciler {
    /// Reconciles the object `request` of `resource_type`, writing it with `object_manager`.
    pub fn new(
        resource_type: Gvk,
        request: ObjectKey,
        object_manager: impl ObjectManager + 'static,
        config: Config,
    ) -> Self {
        Self {
            name: format!("{}AggregateReconciler", resource_type.kind),
            resource_type: Arc::new(resource_type),
            request,
            reconciler: None,
            desired_resource: None,
            object_manager: Box::new(object_manager),
            config: Arc::new(config),
            hooks: RootHooks::default(),
        }
    }

    /// Names the reconciler (default `{Kind}AggregateReconciler`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Runs `reconciler` on the object before its desired state is computed.
    pub fn reconciler(mut self, reconciler: impl SubReconciler + 'static) -> Self {
        self.reconciler = Some(Box::new(reconciler));
        self
    }

    /// Computes the desired object (default: the reconciled object as it is; `None`: it
    /// should not exist), e.g. `|_ctx, resource| Ok(Some(resource.clone()))`. As in
    /// reconciler.io, it runs with a throwaway tracker, so objects it reads are not tracked:
    /// read and track them in the `reconciler`.
    pub fn desired_resource(mut self, desired: impl Derive<Option<DynamicObject>>) -> Self {
        self.desired_resource = Some(Derivation::plain(desired));
        self
    }

    /// As [`AggregateReconciler::desired_resource`], with a step that may await:
    /// `|ctx, resource| Box::pin(async move { ... })`.
    pub fn desired_resource_async(
        mut self,
        desired: impl AsyncDerive<Option<DynamicObject>>,
    ) -> Self {
        self.desired_resource = Some(Derivation::of_async(desired));
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

    /// Reads, reconciles and writes the object.
    async fn reconcile_inner(&self, ctx: &Context) -> Outcome {
        let client = &ctx.original_config().client;
        let mut resource = match client.get(&self.resource_type, &self.request).await {
            Ok(found) => Draft::shared(found),
            Err(err) if err.is_not_found() => Draft::new(self.blank()),
            Err(err) => {
                debug!(%err, "unable to fetch resource");
                return Outcome::err(err);
            }
        };
        if resource.metadata.deletion_timestamp.is_some() {
            return Outcome::done();
        }
        let mut result = super::ReconcileResult::done();
        if let Some(reconciler) = &self.reconciler {
            let outcome = reconciler.reconcile(ctx, &mut resource).await;
            if outcome.error.as_ref().is_some_and(|e| !e.is_halt()) {
                return outcome;
            }
            result = outcome.result;
        }
        // Tracks requested by the object manager are not wanted on the aggregate itself.
        let ctx = ctx.with_config(ctx.config().with_new_tracker(Duration::ZERO));
        let desired = match &self.desired_resource {
            Some(desired) => desired.derive(&ctx, &resource).await,
            None => Ok(Some(DynamicObject::clone(&resource))),
        };
        let desired = match desired {
            Ok(desired) => desired,
            Err(err) => return Outcome::err(err),
        };
        // The resource is its own actual object, as it was before the manager ran.
        let actual = resource
            .metadata
            .creation_timestamp
            .is_some()
            .then(|| resource.snapshot());
        let managed = self
            .object_manager
            .manage(&ctx, &mut resource, actual.as_ref(), desired.as_ref())
            .await;
        Outcome::with(result, managed.err())
    }

    /// The object as it is when it does not exist yet.
    fn blank(&self) -> DynamicObject {
        DynamicObject {
            types: Some(TypeMeta {
                api_version: self.resource_type.api_version(),
                kind: self.resource_type.kind.clone(),
            }),
            metadata: ObjectMeta {
                name: Some(self.request.name.clone()),
                namespace: self.request.namespace.clone(),
                ..ObjectMeta::default()
            },
            data: serde_json::Value::Object(Default::default()),
        }
    }
}

#[async_trait]
impl RootReconciler for AggregateReconciler {
    fn name(&self) -> &str {
        &self.name
    }

    fn resource_type(&self) -> &Gvk {
        &self.resource_type
    }

    fn config(&self) -> &Config {
        &self.config
    }

    fn initial_requests(&self) -> Vec<ObjectKey> {
        vec![self.request.clone()]
    }

    fn setup(&self) -> Result<Setup, ValidationError> {
        self.validate()?;
        let mut setup = Setup::for_config(Config::clone(&self.config));
        setup.watch(Watch::For(Gvk::clone(&self.resource_type)));
        setup.require(&self.name, &super::events_gvk(), "", &["create", "patch"]);
        if let Some(reconciler) = &self.reconciler {
            reconciler.setup(&mut setup)?;
        }
        self.object_manager.setup(&mut setup)?;
        Ok(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let name = &self.name;
        if self.request.name.is_empty() {
            return Err(ValidationError(format!(
                "AggregateReconciler {name:?} must define Request"
            )));
        }
        if let Some(reconciler) = &self.reconciler {
            reconciler.validate().map_err(|err| {
                ValidationError(format!(
                    "AggregateReconciler {name:?} must have a valid Reconciler: {err}"
                ))
            })?;
        }
        self.object_manager.validate().map_err(|err| {
            ValidationError(format!(
                "AggregateReconciler {name:?} must have a valid AggregateObjectManager: {err}"
            ))
        })
    }

    async fn reconcile_with(&self, request: &ObjectKey, options: RequestOptions) -> Outcome {
        if *request != self.request {
            debug!(%request, "not the aggregate's request, ignored");
            return Outcome::done();
        }
        let span = info_span!("reconcile", controller = %self.name, kind = %self.resource_type, object = %request);
        let ctx = request_context(request, &self.resource_type, &self.config, None, options);
        self.hooks
            .run(ctx, |ctx| async move { self.reconcile_inner(&ctx).await })
            .instrument(span)
            .await
    }
}
