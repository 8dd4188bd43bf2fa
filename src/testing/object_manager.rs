//! `ObjectManagerHarness`: runs an object manager as a sub-reconciler, so the table tests of
//! sub-reconcilers test object managers too (reconciler.io's
//! `ObjectManagerReconcilerTestHarness`).

use std::sync::Arc;

use async_trait::async_trait;
use kube::api::DynamicObject;

use crate::reconcilers::{Context, Draft, ObjectManager, Outcome, SubReconciler, ValidationError};

/// The stash key of the actual object the harness passes to the manager (absent: none).
pub const OBJECT_MANAGER_ACTUAL: &str = "dynrec.io/object-manager-harness-actual";
/// The stash key of the desired object the harness passes to the manager (absent: none).
pub const OBJECT_MANAGER_DESIRED: &str = "dynrec.io/object-manager-harness-desired";
/// The stash key under which the harness stores the manager's result (when there is one).
pub const OBJECT_MANAGER_RESULT: &str = "dynrec.io/object-manager-harness-result";

/// A sub-reconciler that calls `manage` with the stashed actual and desired objects on
/// behalf of the reconciled resource, and stashes the result.
pub struct ObjectManagerHarness<M> {
    manager: M,
}

impl<M: ObjectManager> ObjectManagerHarness<M> {
    /// A harness around `manager`.
    pub fn new(manager: M) -> Self {
        Self { manager }
    }
}

#[async_trait]
impl<M: ObjectManager> SubReconciler for ObjectManagerHarness<M> {
    fn name(&self) -> &str {
        self.manager.name()
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.manager.validate()
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft) -> Outcome {
        let actual: Option<DynamicObject> = ctx.stash().retrieve(OBJECT_MANAGER_ACTUAL);
        let actual = actual.map(Arc::new);
        let desired: Option<DynamicObject> = ctx.stash().retrieve(OBJECT_MANAGER_DESIRED);
        let managed = self
            .manager
            .manage(ctx, resource, actual.as_ref(), desired.as_ref())
            .await;
        match managed {
            Ok(Some(result)) => {
                ctx.stash()
                    .store(OBJECT_MANAGER_RESULT, Arc::unwrap_or_clone(result));
                Outcome::done()
            }
            Ok(None) => Outcome::done(),
            Err(err) => Outcome::err(err),
        }
    }
}
