//! `WithConfig`: nested reconcilers use another config (client, cluster, tracker).
//!
//! Departures from reconciler.io: the config function is evaluated at each reconcile only.
//! This crate's `Setup` carries no `Config` (setup declares watches by GVK), so there is
//! nothing to evaluate it against at setup. The nested reconciler is always validated
//! (quirk 11).

use async_trait::async_trait;
use kube::api::DynamicObject;
use tracing::{Instrument, debug_span};

use super::nested::{owner, validate_nested};
use super::{Config, Context, Outcome, ReconcileError, Setup, SubReconciler, ValidationError};

type ConfigFn = Box<dyn Fn(&Context, &Config) -> Result<Config, ReconcileError> + Send + Sync>;

/// Runs the nested reconciler with the config `config` derives from the current one; the
/// original config (used for writes on the reconciled resource) does not change.
pub struct WithConfig<R = DynamicObject> {
    name: String,
    config: ConfigFn,
    reconciler: Box<dyn SubReconciler<R>>,
}

impl<R: Send + Sync + 'static> WithConfig<R> {
    /// Runs `reconciler` with the config `config` returns for the current one.
    pub fn new(
        config: impl Fn(&Context, &Config) -> Result<Config, ReconcileError> + Send + Sync + 'static,
        reconciler: impl SubReconciler<R> + 'static,
    ) -> Self {
        Self {
            name: "WithConfig".into(),
            config: Box::new(config),
            reconciler: Box::new(reconciler),
        }
    }

    /// Names the reconciler (default `WithConfig`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl<R: Send + Sync + 'static> SubReconciler<R> for WithConfig<R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.reconciler.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("WithConfig", &self.name);
        validate_nested(owner, "Reconciler", self.reconciler.as_ref())
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut R) -> Outcome {
        let config = match (self.config)(ctx, ctx.config()) {
            Ok(config) => config,
            Err(error) => return Outcome::err(error),
        };
        let ctx = ctx.with_config(config);
        let span = debug_span!("with_config", name = %self.name);
        self.reconciler
            .reconcile(&ctx, resource)
            .instrument(span)
            .await
    }
}
