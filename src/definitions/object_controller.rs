//! The controller of cluster objects that start something in this process (a
//! `ReconcilerDefinition` starts its controller, a KRO `ResourceGraphDefinition` its
//! definition's): a sync step that starts it and writes the object's status, and a finalizer
//! held until what it started is stopped. One builder, for both.

use async_trait::async_trait;

use crate::object::{ConditionSet, Gvk};
use crate::reconcilers::{
    Config, Context, Draft, Outcome, ResourceReconciler, SyncReconciler, WithFinalizer,
};

/// What a controller of starting objects does with each object.
#[async_trait]
pub(crate) trait StartsFromObjects: Clone + Send + Sync + 'static {
    /// Starts (or restarts, or keeps) what `object` describes, and writes its status.
    async fn sync_object(&self, ctx: &Context, object: &mut Draft) -> Outcome;

    /// Stops what the object `name` started: the object is being deleted.
    fn stop_object(&self, name: &str);
}

/// The names of such a controller.
pub(crate) struct ObjectController {
    /// The kind of the objects.
    pub(crate) kind: Gvk,
    /// The name of its sync step (in logs).
    pub(crate) step: &'static str,
    /// The controller's name.
    pub(crate) controller: &'static str,
    /// The finalizer held on each object until what it started is stopped.
    pub(crate) finalizer: &'static str,
    /// The conditions `Ready` follows.
    pub(crate) conditions: &'static [&'static str],
}

impl ObjectController {
    /// The root reconciler running `starter` on every object of the kind.
    pub(crate) fn reconciler(
        self,
        starter: &impl StartsFromObjects,
        config: &Config,
    ) -> ResourceReconciler {
        let sync_starter = starter.clone();
        let stop_starter = starter.clone();
        let sync = SyncReconciler::with_result_async(move |ctx: &Context, object: &mut Draft| {
            let starter = sync_starter.clone();
            Box::pin(async move { starter.sync_object(ctx, object).await })
        })
        .finalize(move |_ctx: &Context, object: &mut Draft| {
            stop_starter.stop_object(object.metadata.name.as_deref().unwrap_or_default());
            Ok(())
        })
        .named(self.step);
        ResourceReconciler::new(
            self.kind,
            WithFinalizer::new(self.finalizer, sync),
            config.clone(),
        )
        .named(self.controller)
        .conditions(ConditionSet::living(self.conditions))
    }
}
