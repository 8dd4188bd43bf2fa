//! `ApplyingObjectManager`: writes managed objects with server-side apply under its own field
//! manager (taking over conflicting fields), skips the request when applying would change
//! nothing, and deletes objects that are no longer desired.
//!
//! reconciler.io has no such strategy. "Nothing would change" is decided without a dry
//! run: every field of the desired object already has that value on the actual object, and
//! every field the manager applied before (its `managedFields` entry) is still desired, so
//! that dropping a field from the desired object removes it from the server.

use std::sync::Arc;

use async_trait::async_trait;
use kube::api::DynamicObject;
use serde_json::{Map, Value};
use tracing::{debug, info};

use super::object_manager::{Write, prepare, present, record, report_write, track};
use super::{Context, Draft, ObjectManager, ReconcileError, Setup, ValidationError};
use crate::object::Gvk;

/// Creates and changes objects of one kind by server-side apply, and deletes them.
pub struct ApplyingObjectManager {
    name: String,
    child_type: Gvk,
    field_manager: Option<String>,
    finalizer: String,
    track_desired: bool,
}

impl ApplyingObjectManager {
    /// A manager of objects of `child_type`, applying as `{Kind}ApplyingObjectManager`.
    pub fn new(child_type: Gvk) -> Self {
        Self {
            name: format!("{}ApplyingObjectManager", child_type.kind),
            child_type,
            field_manager: None,
            finalizer: String::new(),
            track_desired: false,
        }
    }

    /// Names the manager (and, unless set apart, its field manager).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Applies as this field manager (default: the manager's name).
    pub fn field_manager(mut self, field_manager: impl Into<String>) -> Self {
        self.field_manager = Some(field_manager.into());
        self
    }

    /// Keeps `finalizer` on the resource while it has a managed object.
    pub fn finalizer(mut self, finalizer: impl Into<String>) -> Self {
        self.finalizer = finalizer.into();
        self
    }

    /// Tracks the managed object for the resource (for objects without owner references).
    pub fn track_desired(mut self, track: bool) -> Self {
        self.track_desired = track;
        self
    }

    fn manager(&self) -> &str {
        self.field_manager.as_deref().unwrap_or(&self.name)
    }
}

#[async_trait]
impl ObjectManager for ApplyingObjectManager {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        setup.require(&self.name, &self.child_type, "", super::WRITE);
        if !self.finalizer.is_empty()
            && let Some(resource) = setup.resource_type().cloned()
        {
            setup.require(&self.name, &resource, "", &["patch"]);
        }
        if self.track_desired {
            setup.watch_tracked(self.child_type.clone());
        }
        Ok(())
    }

    async fn manage(
        &self,
        ctx: &Context,
        resource: &mut Draft,
        actual: Option<&Arc<DynamicObject>>,
        desired: Option<&DynamicObject>,
    ) -> Result<Option<Arc<DynamicObject>>, ReconcileError> {
        let actual = present(actual);
        let current = actual.map(|actual| &**actual);
        let Some(desired) = prepare(ctx, resource, &self.finalizer, current, desired).await? else {
            return Ok(None);
        };
        let configuration = applied_configuration(desired);
        let write = match actual {
            Some(actual) if in_sync(&configuration, actual, self.manager()) => {
                debug!(manager = %self.name, "resource is in sync, no apply required");
                return Ok(Some(actual.clone()));
            }
            Some(_) => Write::Update,
            None => Write::Create,
        };
        info!(manager = %self.name, field_manager = self.manager(), ?write, "applying child");
        let applied = ctx
            .config()
            .client
            .apply(&configuration, self.manager(), true)
            .await;
        let applied = report_write(ctx, resource, write, desired, applied).await?;
        if self.track_desired {
            track(ctx, resource, &applied)?;
        }
        record(ctx, resource, write.done(), &applied).await;
        Ok(Some(Arc::new(applied)))
    }
}

/// The desired object as applied: without status and server-owned metadata.
fn applied_configuration(desired: &DynamicObject) -> DynamicObject {
    let mut configuration = desired.clone();
    let meta = &mut configuration.metadata;
    meta.resource_version = None;
    meta.uid = None;
    meta.generation = None;
    meta.creation_timestamp = None;
    meta.managed_fields = None;
    meta.self_link = None;
    if let Some(data) = configuration.data.as_object_mut() {
        data.remove("status");
    }
    configuration
}

/// Whether applying `configuration` as `manager` would leave `actual` as it is.
fn in_sync(configuration: &DynamicObject, actual: &DynamicObject, manager: &str) -> bool {
    let (Ok(configuration), Ok(actual_json)) = (
        serde_json::to_value(configuration),
        serde_json::to_value(actual),
    ) else {
        return false;
    };
    if !is_subset(&configuration, &actual_json) {
        return false;
    }
    let mut owned = actual
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.manager.as_deref() == Some(manager))
        .filter(|entry| entry.operation.as_deref() == Some("Apply"))
        .filter_map(|entry| entry.fields_v1.as_ref());
    owned.all(|fields| still_desired(&fields.0, &configuration))
}

/// Whether every field of `wanted` has the same value in `actual` (objects field by field,
/// lists of the same length item by item, so that fields the server defaults inside list
/// items, such as a container's `imagePullPolicy`, do not count as a difference; anything
/// else as a whole; `null` means absent).
fn is_subset(wanted: &Value, actual: &Value) -> bool {
    match (wanted, actual) {
        (Value::Array(wanted), Value::Array(actual)) => {
            wanted.len() == actual.len() && wanted.iter().zip(actual).all(|(w, a)| is_subset(w, a))
        }
        (Value::Object(wanted), Value::Object(actual)) => {
            wanted.iter().all(|(key, value)| match actual.get(key) {
                Some(found) => is_subset(value, found),
                None => value.is_null() || is_empty_object(value),
            })
        }
        (Value::Null, Value::Null) => true,
        (wanted, actual) => wanted == actual,
    }
}

fn is_empty_object(value: &Value) -> bool {
    value.as_object().is_some_and(Map::is_empty)
}

/// Whether every field named in a `fieldsV1` set (`f:` keys; list items are not descended
/// into) is present in `configuration`.
fn still_desired(fields: &Value, configuration: &Value) -> bool {
    let Some(fields) = fields.as_object() else {
        return true;
    };
    fields
        .iter()
        .all(|(key, nested)| match key.strip_prefix("f:") {
            Some(name) => match configuration.get(name) {
                Some(value) if !value.is_null() => still_desired(nested, value),
                _ => false,
            },
            None => true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn list_items_may_carry_fields_the_server_defaulted() {
        let actual = json!({"containers": [{"name": "app", "image": "nginx", "imagePullPolicy": "IfNotPresent"}]});
        assert!(is_subset(
            &json!({"containers": [{"name": "app", "image": "nginx"}]}),
            &actual
        ));
        assert!(!is_subset(
            &json!({"containers": [{"name": "app", "image": "httpd"}]}),
            &actual
        ));
        assert!(!is_subset(&json!({"containers": []}), &actual));
        assert!(!is_subset(
            &json!({"args": ["a"]}),
            &json!({"args": ["a", "b"]})
        ));
    }

    #[test]
    fn a_subset_with_equal_values_is_in_sync() {
        let actual = json!({"data": {"a": "1", "b": "2"}, "metadata": {"name": "x"}});
        assert!(is_subset(&json!({"data": {"a": "1"}}), &actual));
        assert!(!is_subset(&json!({"data": {"a": "2"}}), &actual));
        assert!(!is_subset(&json!({"data": {"c": "3"}}), &actual));
        assert!(is_subset(&json!({"data": {"c": null}}), &actual));
    }

    #[test]
    fn a_field_applied_before_but_no_longer_desired_is_not_in_sync() {
        let owned = json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}});
        assert!(still_desired(
            &owned,
            &json!({"data": {"a": "1", "b": "2"}})
        ));
        assert!(!still_desired(&owned, &json!({"data": {"a": "1"}})));
        let list = json!({"f:spec": {"f:items": {"k:{\"name\":\"x\"}": {}}}});
        assert!(still_desired(&list, &json!({"spec": {"items": []}})));
    }
}
