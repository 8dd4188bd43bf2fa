//! `WithConfig`: nested reconcilers use another config (client, cluster, tracker).
//!
//! As in reconciler.io the config function is evaluated at setup (with no request: its
//! context argument is `None`) and at each reconcile, each time from the current config.
//! The watches the nested reconcilers declare at setup are opened through the config of
//! setup, so a child or tracked object on another cluster triggers reconciles of the
//! resource. The nested reconciler is always validated (reconciler.io validates nested
//! reconcilers only when asked to validate recursively).

use async_trait::async_trait;
use kube::api::DynamicObject;
use tracing::Instrument;

use crate::trace::debug_span;

use super::nested::{owner, validate_nested};
use super::steps::SelectConfig;
use super::{Context, Draft, Outcome, Setup, SubReconciler, ValidationError};

/// Runs the nested reconciler with the config `config` derives from the current one; the
/// original config (used for writes on the reconciled resource) does not change.
pub struct WithConfig<R = DynamicObject> {
    name: String,
    config: Box<dyn SelectConfig>,
    reconciler: Box<dyn SubReconciler<R>>,
}

impl<R: Send + Sync + 'static> WithConfig<R> {
    /// Runs `reconciler` with the config `config` returns for the current one; `config` is
    /// called at setup (context `None`) and at each reconcile (the request's context).
    pub fn new(config: impl SelectConfig, reconciler: impl SubReconciler<R> + 'static) -> Self {
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
        let Some(current) = setup.config() else {
            return self.reconciler.setup(setup);
        };
        let config = (self.config)(None, current).map_err(|err| {
            ValidationError(format!(
                "{} could not make its config at setup: {err}",
                owner("WithConfig", &self.name)
            ))
        })?;
        setup.scoped(config, |setup| self.reconciler.setup(setup))
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("WithConfig", &self.name);
        validate_nested(owner, "Reconciler", self.reconciler.as_ref())
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft<R>) -> Outcome {
        let config = match (self.config)(Some(ctx), ctx.config()) {
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
