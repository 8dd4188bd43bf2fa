//! Adding and removing a finalizer on the reconciled resource: a merge patch of
//! `metadata.finalizers` guarded by the resourceVersion, exactly as reconciler.io sends it.

use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use tracing::{debug, info};

use super::{Context, Draft, ReconcileError};
use crate::client::reasons;
use crate::object::{Gvk, ObjectKey};

/// Adds `finalizer` to the resource (a no-op when empty or present), through the original
/// config; the server's finalizers, resourceVersion and generation are copied back.
pub async fn add_finalizer(
    ctx: &Context,
    resource: &mut Draft,
    finalizer: &str,
) -> Result<(), ReconcileError> {
    patch_finalizer(ctx, resource, finalizer, true).await
}

/// Removes `finalizer` from the resource (a no-op when empty or absent), as
/// [`add_finalizer`] adds it.
pub async fn clear_finalizer(
    ctx: &Context,
    resource: &mut Draft,
    finalizer: &str,
) -> Result<(), ReconcileError> {
    patch_finalizer(ctx, resource, finalizer, false).await
}

async fn patch_finalizer(
    ctx: &Context,
    resource: &mut Draft,
    finalizer: &str,
    present: bool,
) -> Result<(), ReconcileError> {
    let current = resource.metadata.finalizers.as_deref().unwrap_or_default();
    if finalizer.is_empty() || current.iter().any(|f| f == finalizer) == present {
        return Ok(());
    }
    let current = current.iter().cloned();
    let desired: Vec<String> = if present {
        current.chain([finalizer.to_string()]).collect()
    } else {
        current.filter(|f| f != finalizer).collect()
    };
    // Boxed: a request's future is large, and most calls have nothing to patch.
    Box::pin(patch_finalizers(ctx, resource, finalizer, present, desired)).await
}

/// Patches `metadata.finalizers` to `desired` (`finalizer` was added or removed).
async fn patch_finalizers(
    ctx: &Context,
    resource: &mut Draft,
    finalizer: &str,
    present: bool,
    desired: Vec<String>,
) -> Result<(), ReconcileError> {
    let gvk = Gvk::of(resource.get()).map_err(crate::client::Error::from)?;
    let key = ObjectKey::of(resource.get()).map_err(crate::client::Error::from)?;
    let mut metadata = serde_json::Map::new();
    let finalizers = if desired.is_empty() {
        Value::Null
    } else {
        json!(desired)
    };
    metadata.insert("finalizers".into(), finalizers);
    if let Some(rv) = &resource.metadata.resource_version {
        metadata.insert("resourceVersion".into(), Value::from(rv.clone()));
    }
    let patch = Patch::Merge(json!({ "metadata": metadata }));
    let config = ctx.original_config();
    let patched = config
        .client
        .patch(&gvk, &key, &patch, &PatchParams::default())
        .await;
    match patched {
        Err(err) => {
            debug!(%gvk, object = %key, finalizer, %err, "unable to patch finalizer");
            let message = format!(
                "Failed to patch finalizer {finalizer:?}: {}",
                err.server_message()
            );
            let recorded = config
                .recorder
                .warning(resource, reasons::FINALIZER_PATCH_FAILED, message)
                .await;
            super::events::log_unrecorded(recorded);
            Err(err.into())
        }
        Ok(patched) => {
            info!(%gvk, object = %key, finalizer, present, "patched finalizer");
            let message = format!("Patched finalizer {finalizer:?}");
            let recorded = config
                .recorder
                .normal(resource, reasons::FINALIZER_PATCHED, message)
                .await;
            super::events::log_unrecorded(recorded);
            resource.metadata.finalizers = patched.metadata.finalizers;
            resource.metadata.resource_version = patched.metadata.resource_version;
            resource.metadata.generation = patched.metadata.generation;
            Ok(())
        }
    }
}
