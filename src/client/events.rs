//! Kubernetes Events about objects of any kind.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    api::DynamicObject,
    runtime::events::{Event, EventType, Recorder, Reporter},
};
use tracing::debug;

use super::{ApiError, Client, Error};
use crate::object::{Gvk, ObjectKey};

/// Event reasons the library itself records.
pub mod reasons {
    /// A child object was created.
    pub const CREATED: &str = "Created";
    /// Creating a child object failed.
    pub const CREATION_FAILED: &str = "CreationFailed";
    /// A child object was updated.
    pub const UPDATED: &str = "Updated";
    /// Updating a child object failed.
    pub const UPDATE_FAILED: &str = "UpdateFailed";
    /// A child object was deleted.
    pub const DELETED: &str = "Deleted";
    /// Deleting a child object failed.
    pub const DELETE_FAILED: &str = "DeleteFailed";
    /// The reconciled object's status was updated.
    pub const STATUS_UPDATED: &str = "StatusUpdated";
    /// Updating the reconciled object's status failed.
    pub const STATUS_UPDATE_FAILED: &str = "StatusUpdateFailed";
    /// The reconciled (duck) object's status was patched.
    pub const STATUS_PATCHED: &str = "StatusPatched";
    /// Patching the reconciled (duck) object's status failed.
    pub const STATUS_PATCH_FAILED: &str = "StatusPatchFailed";
    /// A finalizer was added or removed.
    pub const FINALIZER_PATCHED: &str = "FinalizerPatched";
    /// Adding or removing a finalizer failed.
    pub const FINALIZER_PATCH_FAILED: &str = "FinalizerPatchFailed";
}

/// Records `events.k8s.io/v1` Events about objects of any kind.
///
/// Repeats (same object, type and reason within six minutes) are merged into one Event
/// whose `series.count` grows, as kube-runtime's `Recorder` does: this wraps it.
#[derive(Clone)]
pub struct EventRecorder {
    recorder: Recorder,
}

impl EventRecorder {
    /// A recorder reporting as `controller`.
    pub fn new(client: &Client, controller: impl Into<String>) -> Self {
        let reporter = Reporter {
            controller: controller.into(),
            instance: None,
        };
        Self {
            recorder: Recorder::new(client.kube().clone(), reporter),
        }
    }

    /// Records a Normal event.
    pub async fn normal(
        &self,
        object: &DynamicObject,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<(), Error> {
        self.record(object, EventType::Normal, reason, message.into())
            .await
    }

    /// Records a Warning event.
    pub async fn warning(
        &self,
        object: &DynamicObject,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<(), Error> {
        self.record(object, EventType::Warning, reason, message.into())
            .await
    }

    /// Records an event of either type. Repeats of the same reason *and* message about the
    /// same object are merged into one Event (as core/v1 event aggregation does); a new
    /// message is a new Event.
    pub async fn record(
        &self,
        object: &DynamicObject,
        type_: EventType,
        reason: &str,
        message: String,
    ) -> Result<(), Error> {
        let gvk = Gvk::of(object)?;
        let key = ObjectKey::of(object)?;
        debug!(%gvk, object = %key, reason, ?type_, "recording event");
        let event = Event {
            type_,
            reason: reason.to_string(),
            action: action_for(reason, &message),
            note: Some(message),
            secondary: None,
        };
        let reference = ObjectReference {
            api_version: Some(gvk.api_version()),
            kind: Some(gvk.kind.clone()),
            name: Some(key.name.clone()),
            namespace: key.namespace.clone(),
            uid: object.metadata.uid.clone(),
            resource_version: object.metadata.resource_version.clone(),
            field_path: None,
        };
        self.recorder
            .publish(&event, &reference)
            .await
            .map_err(|source| {
                ApiError {
                    verb: "record event",
                    gvk,
                    key: Some(key),
                    source,
                }
                .into()
            })
    }
}

/// The Event's `action`: the reason plus a digest of the message, so that kube-runtime's
/// `Recorder`, which merges repeats by action and reason, merges only identical messages.
fn action_for(reason: &str, message: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    message.hash(&mut hasher);
    format!("{reason}-{:016x}", hasher.finish())
}
