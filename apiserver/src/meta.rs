//! Reading and writing `metadata` fields (and reading dotted paths) of objects held as JSON.

use serde_json::{Map, Value};

/// The value at a dotted `path` (`spec.replicas`) of `object`, if there is one.
pub fn at_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(object, |value, key| value.get(key))
}

/// A string field of `metadata`, or "" when absent.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object["metadata"][field].as_str().unwrap_or_default()
}

/// The object's name.
pub fn name(object: &Value) -> &str {
    meta_str(object, "name")
}

/// The object's namespace ("" for cluster-scoped objects).
pub fn namespace(object: &Value) -> &str {
    meta_str(object, "namespace")
}

/// The object's uid.
pub fn uid(object: &Value) -> &str {
    meta_str(object, "uid")
}

/// The object's resourceVersion.
pub fn resource_version(object: &Value) -> &str {
    meta_str(object, "resourceVersion")
}

/// Whether the object carries a deletionTimestamp.
pub fn is_deleting(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}

/// The object's finalizers.
pub fn finalizers(object: &Value) -> Vec<String> {
    string_list(&object["metadata"]["finalizers"])
}

/// A JSON array of strings as a Vec (non-strings are skipped).
pub fn string_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces the object's finalizers (removing the field when empty).
pub fn set_finalizers(object: &mut Value, finalizers: &[String]) {
    if finalizers.is_empty() {
        remove_meta(object, "finalizers");
    } else {
        set_meta(object, "finalizers", Value::from(finalizers.to_vec()));
    }
}

/// Owner uids with whether the reference blocks owner deletion.
pub fn owner_refs(object: &Value) -> Vec<(String, bool)> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .map(|refs| {
            refs.iter()
                .filter_map(|r| {
                    let uid = r["uid"].as_str()?.to_string();
                    Some((uid, r["blockOwnerDeletion"].as_bool().unwrap_or(false)))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Keeps only the ownerReferences whose uid satisfies `keep`.
pub fn retain_owner_refs(object: &mut Value, keep: impl Fn(&str) -> bool) {
    let Some(refs) = object["metadata"]["ownerReferences"].as_array_mut() else {
        return;
    };
    refs.retain(|r| keep(r["uid"].as_str().unwrap_or_default()));
    if refs.is_empty() {
        remove_meta(object, "ownerReferences");
    }
}

/// The object's labels, if any.
pub fn labels(object: &Value) -> Option<&Map<String, Value>> {
    object["metadata"]["labels"].as_object()
}

/// Sets a `metadata` field, creating `metadata` when missing.
pub fn set_meta(object: &mut Value, field: &str, value: Value) {
    if let Some(map) = object.as_object_mut() {
        let metadata = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !metadata.is_object() {
            *metadata = Value::Object(Map::new());
        }
        if let Some(meta) = metadata.as_object_mut() {
            meta.insert(field.to_string(), value);
        }
    }
}

/// Removes a `metadata` field.
pub fn remove_meta(object: &mut Value, field: &str) {
    if let Some(meta) = object["metadata"].as_object_mut() {
        meta.remove(field);
    }
}

/// The current time as kube-apiserver writes it: RFC 3339, to the second, in UTC.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finalizers_are_set_and_removed() {
        let mut obj = json!({"metadata": {"name": "a"}});
        set_finalizers(&mut obj, &["x".to_string()]);
        assert_eq!(finalizers(&obj), vec!["x"]);
        set_finalizers(&mut obj, &[]);
        assert!(obj["metadata"].get("finalizers").is_none());
    }

    #[test]
    fn owner_refs_are_filtered() {
        let mut obj = json!({"metadata": {"ownerReferences": [
            {"uid": "a", "blockOwnerDeletion": true}, {"uid": "b"}]}});
        assert_eq!(
            owner_refs(&obj),
            vec![("a".to_string(), true), ("b".to_string(), false)]
        );
        retain_owner_refs(&mut obj, |uid| uid == "b");
        assert_eq!(owner_refs(&obj), vec![("b".to_string(), false)]);
        retain_owner_refs(&mut obj, |_| false);
        assert!(obj["metadata"].get("ownerReferences").is_none());
    }

    #[test]
    fn timestamps_are_rfc3339_seconds() {
        let now = now_rfc3339();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z'));
    }
}
