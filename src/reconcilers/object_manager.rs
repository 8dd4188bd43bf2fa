//! Object managers: how a reconciler writes an object it manages (create, update, delete).

use async_trait::async_trait;
use kube::api::DynamicObject;

use super::{Context, ReconcileError, Setup, ValidationError};

/// Brings a managed object from what exists (`actual`) to what should exist (`desired`).
#[async_trait]
pub trait ObjectManager: Send + Sync {
    /// The name used in logs and validation messages.
    fn name(&self) -> &str;

    /// Declares the watches the manager needs.
    fn setup(&self, _setup: &mut Setup) -> Result<(), ValidationError> {
        Ok(())
    }

    /// Checks that the manager is complete.
    fn validate(&self) -> Result<(), ValidationError> {
        Ok(())
    }

    /// Creates, updates or deletes (`desired` is `None`) the object on behalf of `resource`,
    /// which receives the events (and, when the manager keeps a finalizer, the finalizers,
    /// resourceVersion and generation of its finalizer patch); returns the object as
    /// persisted, `None` when there is none.
    async fn manage(
        &self,
        ctx: &Context,
        resource: &mut DynamicObject,
        actual: Option<&DynamicObject>,
        desired: Option<&DynamicObject>,
    ) -> Result<Option<DynamicObject>, ReconcileError>;
}

/// A shared manager manages as the manager it shares.
#[async_trait]
impl ObjectManager for std::sync::Arc<dyn ObjectManager> {
    fn name(&self) -> &str {
        self.as_ref().name()
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.as_ref().setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.as_ref().validate()
    }

    async fn manage(
        &self,
        ctx: &Context,
        resource: &mut DynamicObject,
        actual: Option<&DynamicObject>,
        desired: Option<&DynamicObject>,
    ) -> Result<Option<DynamicObject>, ReconcileError> {
        self.as_ref().manage(ctx, resource, actual, desired).await
    }
}
