//! What of an object a write may change and what the server keeps: server-owned metadata,
//! status behind a status subresource, the one field a part subresource writes; and whether
//! a write changed anything, or the spec.

use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::resources::ResourceInfo;

/// Fields of `metadata` that only the server sets.
pub(super) const SERVER_OWNED_META: &[&str] = &[
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
    "selfLink",
];

/// Removes a top-level field.
pub(super) fn remove_field(object: &mut Value, field: &str) {
    if let Some(map) = object.as_object_mut() {
        map.remove(field);
    }
}

/// A status write: the old object with only `status` taken from the new one.
pub(super) fn status_only(old: &Value, new: &Value) -> Value {
    let mut result = old.clone();
    match new.get("status") {
        Some(status) => result["status"] = status.clone(),
        None => remove_field(&mut result, "status"),
    }
    // managedFields track what the status write changed, as kube-apiserver keeps them.
    match new["metadata"].get("managedFields") {
        Some(managed) => meta::set_meta(&mut result, "managedFields", managed.clone()),
        None => meta::remove_meta(&mut result, "managedFields"),
    }
    result
}

/// A one-field subresource write: the old object with only the field at `path` taken from
/// the new one.
pub(super) fn part_only(old: &Value, new: &Value, path: &[&str]) -> Value {
    let mut result = old.clone();
    let Some((last, parents)) = path.split_last() else {
        return result;
    };
    let found = parents
        .iter()
        .try_fold(new, |v, key| v.get(*key))
        .and_then(|v| v.get(*last));
    let mut slot = &mut result;
    for key in parents {
        if !slot[*key].is_object() {
            slot[*key] = Value::Object(Map::new());
        }
        slot = &mut slot[*key];
    }
    match (found, slot.as_object_mut()) {
        (Some(value), Some(map)) => {
            map.insert(last.to_string(), value.clone());
        }
        (None, Some(map)) => {
            map.remove(*last);
        }
        _ => {}
    }
    result
}

/// A main-endpoint write: the new object with server-owned metadata (and status, where a
/// status subresource exists) kept from the old one.
pub(super) fn keep_server_fields(info: &ResourceInfo, old: &Value, mut new: Value) -> Value {
    for field in SERVER_OWNED_META.iter().chain(["name", "namespace"].iter()) {
        match old["metadata"].get(*field) {
            Some(value) => meta::set_meta(&mut new, field, value.clone()),
            None => meta::remove_meta(&mut new, field),
        }
    }
    if info.status_subresource {
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => remove_field(&mut new, "status"),
        }
    }
    new
}

/// New finalizers may not be added to an object that is being deleted.
pub(super) fn check_finalizers_while_deleting(
    info: &ResourceInfo,
    old: &Value,
    new: &Value,
) -> ApiResult<()> {
    if !meta::is_deleting(old) {
        return Ok(());
    }
    let before = meta::finalizers(old);
    let added: Vec<String> = meta::finalizers(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(
        info,
        meta::name(old),
        vec![Cause::forbidden(
            "metadata.finalizers",
            &format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
            ),
        )],
    ))
}

/// Whether nothing but server bookkeeping differs.
pub(super) fn unchanged(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        meta::remove_meta(&mut v, "resourceVersion");
        meta::remove_meta(&mut v, "managedFields");
        v
    };
    strip(old) == strip(new)
}

/// Whether anything outside metadata (and status, with a status subresource) changed.
pub(super) fn spec_changed(info: &ResourceInfo, old: &Value, new: &Value) -> bool {
    let ignored = |key: &str| key == "metadata" || (info.status_subresource && key == "status");
    let visible = |v: &Value| -> Map<String, Value> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| !ignored(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    visible(old) != visible(new)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use serde_json::json;

    #[test]
    fn status_changes_do_not_count_as_spec_changes_with_a_status_subresource() {
        let deployments = Registry::with_builtins()
            .get("apps", "v1", "deployments")
            .unwrap();
        let old = json!({"spec": {"replicas": 1}, "status": {"a": 1}});
        let new = json!({"spec": {"replicas": 1}, "status": {"a": 2}});
        assert!(!spec_changed(&deployments, &old, &new));
        assert!(spec_changed(
            &Registry::with_builtins()
                .get("", "v1", "configmaps")
                .unwrap(),
            &json!({"data": {}}),
            &json!({"data": {"a": "b"}})
        ));
    }
}
