//! Object managers: how a reconciler writes an object it manages (create, update, delete),
//! and the steps every object manager shares (finalizer, delete, write events, tracking).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use kube::api::{DeleteParams, DynamicObject};
use tracing::{debug, info};

use super::events::log_unrecorded;
use super::{
    Context, Draft, ReconcileError, Setup, ValidationError, add_finalizer, clear_finalizer,
};
use crate::client::{self, EventType, reasons};
use crate::object::{Gvk, ObjectKey};

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
    /// persisted, `None` when there is none. `actual` is shared (e.g. with a cache): a
    /// manager that finds it in sync hands it back without copying it.
    async fn manage(
        &self,
        ctx: &Context,
        resource: &mut Draft,
        actual: Option<&Arc<DynamicObject>>,
        desired: Option<&DynamicObject>,
    ) -> Result<Option<Arc<DynamicObject>>, ReconcileError>;
}

/// A shared manager manages as the manager it shares. Written out, not with
/// `#[async_trait]`: the macro would box a second future around the shared manager's own.
impl ObjectManager for Arc<dyn ObjectManager> {
    fn name(&self) -> &str {
        self.as_ref().name()
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.as_ref().setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        self.as_ref().validate()
    }

    fn manage<'s, 'c, 'r, 'a, 'd, 'f>(
        &'s self,
        ctx: &'c Context,
        resource: &'r mut Draft,
        actual: Option<&'a Arc<DynamicObject>>,
        desired: Option<&'d DynamicObject>,
    ) -> Pin<Box<dyn Future<Output = Managed> + Send + 'f>>
    where
        's: 'f,
        'c: 'f,
        'r: 'f,
        'a: 'f,
        'd: 'f,
        Self: 'f,
    {
        self.as_ref().manage(ctx, resource, actual, desired)
    }
}

/// What [`ObjectManager::manage`] returns.
type Managed = Result<Option<Arc<DynamicObject>>, ReconcileError>;

/// What a manager of `child_type` objects needs: write them, patch the resource's
/// finalizer when it adds one, and watch what it tracks (objects without owner references).
pub(super) fn require_for_children(
    setup: &mut Setup,
    manager: &str,
    child_type: &Gvk,
    finalizer: &str,
    track_desired: bool,
) {
    setup.require(manager, child_type, "", super::WRITE);
    if !finalizer.is_empty()
        && let Some(resource) = setup.resource_type().cloned()
    {
        setup.require(manager, &resource, "", &["patch"]);
    }
    if track_desired {
        setup.watch_tracked(child_type.clone());
    }
}

/// The actual object, unless it is absent (none, or never persisted).
pub(super) fn present(actual: Option<&Arc<DynamicObject>>) -> Option<&Arc<DynamicObject>> {
    actual.filter(|a| a.metadata.creation_timestamp.is_some())
}

/// The steps every manager takes before writing: with nothing desired, deletes the actual
/// object (or, once it is gone, clears the finalizer); otherwise adds the finalizer and
/// returns the desired object.
pub(super) async fn prepare<'d>(
    ctx: &Context,
    resource: &mut Draft,
    finalizer: &str,
    actual: Option<&Arc<DynamicObject>>,
    desired: Option<&'d DynamicObject>,
) -> Result<Option<&'d DynamicObject>, ReconcileError> {
    match (actual, desired) {
        (None, None) => {
            clear_finalizer(ctx, resource, finalizer).await?;
            Ok(None)
        }
        (Some(actual), None) => {
            // Boxed: a request's future is large, and most calls delete nothing.
            Box::pin(delete(ctx, resource, actual)).await?;
            Ok(None)
        }
        (_, Some(desired)) => {
            add_finalizer(ctx, resource, finalizer).await?;
            Ok(Some(desired))
        }
    }
}

/// Deletes `actual` unless it is already terminating; the finalizer stays until it is gone.
async fn delete(
    ctx: &Context,
    resource: &DynamicObject,
    actual: &DynamicObject,
) -> Result<(), ReconcileError> {
    if actual.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let gvk = Gvk::of(actual).map_err(client::Error::from)?;
    let key = ObjectKey::of(actual).map_err(client::Error::from)?;
    info!(%gvk, child = %key, "deleting child");
    let deleted = ctx
        .config()
        .client
        .delete(&gvk, &key, &DeleteParams::default())
        .await;
    match deleted {
        Ok(_) => {
            record(ctx, resource, Done::Deleted, actual).await;
            Ok(())
        }
        Err(err) => {
            failed(
                ctx,
                resource,
                "delete",
                reasons::DELETE_FAILED,
                actual,
                &err,
            )
            .await;
            Err(err.into())
        }
    }
}

/// A write of a managed object.
#[derive(Clone, Copy, Debug)]
pub(super) enum Write {
    /// The object did not exist.
    Create,
    /// The object existed.
    Update,
}

/// A write that succeeded, as its event says it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Done {
    Created,
    Updated,
    Deleted,
}

impl Write {
    /// The event of the write's success.
    pub(super) fn done(self) -> Done {
        match self {
            Write::Create => Done::Created,
            Write::Update => Done::Updated,
        }
    }
}

/// Records the Warning event of a failed write (`Failed to <verb> <Kind> "<name>": ...`)
/// and returns the error; passes a success through.
pub(super) async fn report_write(
    ctx: &Context,
    resource: &DynamicObject,
    write: Write,
    object: &DynamicObject,
    result: Result<DynamicObject, client::Error>,
) -> Result<DynamicObject, ReconcileError> {
    let (verb, reason) = match write {
        Write::Create => ("create", reasons::CREATION_FAILED),
        Write::Update => ("update", reasons::UPDATE_FAILED),
    };
    match result {
        Ok(written) => Ok(written),
        Err(err) => {
            failed(ctx, resource, verb, reason, object, &err).await;
            Err(err.into())
        }
    }
}

/// The kind and name of an object as events show them (the name may be empty).
fn describe(object: &DynamicObject) -> (String, String) {
    let kind = object.types.as_ref().map(|t| t.kind.clone());
    let name = object.metadata.name.clone();
    (kind.unwrap_or_default(), name.unwrap_or_default())
}

/// Logs a failed write and records its Warning event on the resource.
async fn failed(
    ctx: &Context,
    resource: &DynamicObject,
    verb: &str,
    reason: &str,
    object: &DynamicObject,
    err: &client::Error,
) {
    let (kind, name) = describe(object);
    debug!(%kind, %name, %err, "unable to {verb} child");
    let message = format!("Failed to {verb} {kind} {name:?}: {}", err.server_message());
    let recorded = ctx
        .original_config()
        .recorder
        .record(resource, EventType::Warning, reason, message)
        .await;
    log_unrecorded(recorded);
}

/// Records the Normal event of a successful write on the resource.
pub(super) async fn record(
    ctx: &Context,
    resource: &DynamicObject,
    done: Done,
    object: &DynamicObject,
) {
    let (kind, name) = describe(object);
    let (reason, verb) = match done {
        Done::Created => (reasons::CREATED, "Created"),
        Done::Updated => (reasons::UPDATED, "Updated"),
        Done::Deleted => (reasons::DELETED, "Deleted"),
    };
    let recorded = ctx
        .original_config()
        .recorder
        .record(
            resource,
            EventType::Normal,
            reason,
            format!("{verb} {kind} {name:?}"),
        )
        .await;
    log_unrecorded(recorded);
}

/// Tracks `object` for the resource, so that its changes requeue the resource.
pub(super) fn track(
    ctx: &Context,
    resource: &DynamicObject,
    object: &DynamicObject,
) -> Result<(), ReconcileError> {
    let observer = ObjectKey::of(resource).map_err(client::Error::from)?;
    ctx.config()
        .tracker
        .track_object(object, &observer)
        .map_err(ReconcileError::from_error)
}

/// A child as INFO log lines name it (kind and key, never its body): `ConfigMap ns/name`.
pub(super) fn child_name(child: &DynamicObject) -> String {
    let kind = child.types.as_ref().map_or("", |t| t.kind.as_str());
    match ObjectKey::of(child) {
        Ok(key) => format!("{kind} {key}"),
        Err(_) => kind.to_string(),
    }
}
