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
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use serde_json::{Map, Value};
use tracing::{debug, info};

use super::object_manager::{
    Write, child_name, prepare, present, record, report_write, require_for_children, track,
};
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
        require_for_children(
            setup,
            &self.name,
            &self.child_type,
            &self.finalizer,
            self.track_desired,
        );
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
        let Some(desired) = prepare(ctx, resource, &self.finalizer, actual, desired).await? else {
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
        info!(manager = %self.name, field_manager = self.manager(), ?write, child = %child_name(desired), "applying child");
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
    let Ok(configuration) = serde_json::to_value(configuration) else {
        return false;
    };
    if !holds(&configuration, actual) {
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

/// Whether `actual` holds the configuration, as [`is_subset`] of the two objects' JSON would
/// say, read in place: the body as stored and, of the metadata, only the fields the
/// configuration names (not `managedFields`, often the larger part), so that an object in
/// sync is not serialized whole on every reconcile.
fn holds(configuration: &Value, actual: &DynamicObject) -> bool {
    let Some(wanted) = configuration.as_object() else {
        return false;
    };
    let body = match &actual.data {
        Value::Object(body) => Some(body),
        Value::Null => None,
        _ => return false,
    };
    let types = actual.types.as_ref();
    wanted.iter().all(|(key, value)| match key.as_str() {
        "apiVersion" => {
            let api_version = types.map(|t| Value::from(t.api_version.as_str()));
            field_holds(value, api_version.as_ref())
        }
        "kind" => field_holds(value, types.map(|t| Value::from(t.kind.as_str())).as_ref()),
        "metadata" => metadata_holds(value, &actual.metadata),
        _ => field_holds(value, body.and_then(|body| body.get(key))),
    })
}

/// [`is_subset`] for one field of the actual object (`None`: absent).
fn field_holds(wanted: &Value, found: Option<&Value>) -> bool {
    match found {
        Some(found) => is_subset(wanted, found),
        None => wanted.is_null() || is_empty_object(wanted),
    }
}

/// [`holds`] for the metadata: serializes only the fields `wanted` names (all of them for a
/// field not named here).
fn metadata_holds(wanted: &Value, actual: &ObjectMeta) -> bool {
    let Some(wanted) = wanted.as_object() else {
        return field_holds(wanted, serde_json::to_value(actual).ok().as_ref());
    };
    wanted.iter().all(|(key, value)| {
        let found = match key.as_str() {
            "name" => json_of(&actual.name),
            "namespace" => json_of(&actual.namespace),
            "generateName" => json_of(&actual.generate_name),
            "labels" => json_of(&actual.labels),
            "annotations" => json_of(&actual.annotations),
            "ownerReferences" => json_of(&actual.owner_references),
            "finalizers" => json_of(&actual.finalizers),
            _ => serde_json::to_value(actual)
                .ok()
                .and_then(|mut all| all.get_mut(key).map(Value::take)),
        };
        field_holds(value, found.as_ref())
    })
}

/// A metadata field as its JSON (`None` when absent, as serializing the metadata omits it).
fn json_of<T: serde::Serialize>(field: &Option<T>) -> Option<Value> {
    field.as_ref().and_then(|f| serde_json::to_value(f).ok())
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

    /// `holds` answers as `is_subset` of the whole objects' JSON, over configurations and
    /// actual objects of many shapes.
    #[test]
    fn holds_reads_in_place_what_comparing_the_whole_json_would_say() {
        let object = |value: Value| -> DynamicObject { serde_json::from_value(value).unwrap() };
        let actual = || {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
                "namespace": "ns", "uid": "u", "resourceVersion": "5",
                "labels": {"app": "a", "extra": "x"}, "annotations": {"note": "n"},
                "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Widget",
                    "name": "w", "uid": "wu", "controller": true, "blockOwnerDeletion": true}],
                "managedFields": [{"manager": "m", "operation": "Apply", "apiVersion": "v1",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]},
                "data": {"a": "1", "b": "2"}, "status": {"x": 1}})
        };
        let actuals = [
            object(actual()),
            object(json!({"metadata": {"name": "c"}, "data": {"a": "1"}})),
            object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})),
        ];
        let configurations = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
                "namespace": "ns", "labels": {"app": "a"}}, "data": {"a": "1"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
                "labels": {"app": "b"}}, "data": {"a": "1"}}),
            json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            json!({"kind": "Secret", "metadata": {"name": "c"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}),
            json!({"metadata": {"name": "c", "annotations": {"note": "n"}, "uid": "u"}}),
            json!({"metadata": {"name": "c", "uid": "other"}}),
            json!({"metadata": {"name": "c", "finalizers": ["f"], "generateName": "c-"}}),
            json!({"metadata": {"name": "c", "ownerReferences": [{"apiVersion":
                "example.com/v1", "kind": "Widget", "name": "w", "uid": "wu",
                "controller": true, "blockOwnerDeletion": true}]}}),
            json!({"metadata": {"name": "c", "ownerReferences": []}}),
            json!({"metadata": {"name": "c"}, "data": {"a": "1", "c": null}, "spec": {}}),
            json!({"metadata": {"name": "c"}, "data": {"b": "3"}}),
            json!({"metadata": {"name": "c"}, "data": "text"}),
            json!({"metadata": {}, "status": {"x": 1}}),
        ];
        let mut in_sync = 0;
        for actual in &actuals {
            let whole = serde_json::to_value(actual).unwrap();
            for configuration in &configurations {
                let expected = is_subset(configuration, &whole);
                in_sync += usize::from(expected);
                assert_eq!(
                    holds(configuration, actual),
                    expected,
                    "{configuration} in {whole}"
                );
            }
        }
        let cases = actuals.len() * configurations.len();
        assert!(
            in_sync > 3 && in_sync < cases - 3,
            "{in_sync} of {cases} in sync"
        );
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
