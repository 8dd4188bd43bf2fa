//! What a DELETE of one object answers, as kube-apiserver's registry answers it.

use serde_json::{Value, json};

use crate::resources::ResourceInfo;

/// Kinds whose registry sets `ReturnDeletedObject`: their immediate delete answers the
/// deleted object instead of a `Status` (pods, services, serviceaccounts, storageclasses).
const RETURN_DELETED_OBJECT: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "services"),
    ("", "serviceaccounts"),
    ("storage.k8s.io", "storageclasses"),
];

/// Whether an immediate delete of this kind answers the deleted object.
pub fn returns_deleted_object(info: &ResourceInfo) -> bool {
    !info.custom
        && RETURN_DELETED_OBJECT
            .iter()
            .any(|(group, plural)| info.group == *group && info.plural == *plural)
}

/// The `Status` an immediate delete answers: `details.kind` is the plural resource name, as
/// kube-apiserver's generic registry sets it ("Yes we set Kind field to resource").
pub fn success_status(info: &ResourceInfo, object: &Value) -> Value {
    let metadata = &object["metadata"];
    let name = metadata["name"].as_str().unwrap_or_default();
    let mut details = crate::error::details(name, &info.group, &info.plural);
    details["uid"] = metadata["uid"].clone();
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

/// The HTTP code of a delete's answer: 202 only when the object lingers and the client
/// asked for cascading deletion with the legacy `orphanDependents: false`, else 200.
pub fn code(removed: bool, orphan_dependents: Option<bool>) -> u16 {
    if !removed && orphan_dependents == Some(false) {
        202
    } else {
        200
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lingering_delete_with_orphan_dependents_false_is_accepted() {
        assert_eq!(code(false, Some(false)), 202);
        assert_eq!(code(false, None), 200);
        assert_eq!(code(true, Some(false)), 200);
    }
}
