//! How KRO finds an instance's children: by the `kro.run/instance-id` label, in every
//! namespace, and not by ownerReferences — a child may be in another namespace than its
//! instance, or cluster-scoped, where an ownerReference to the instance is not valid.

use kube::core::Selector;

use super::translate::INSTANCE_ID_LABEL;
use crate::client::ListOptions;

/// The objects (of one kind) that are children of the instance with UID `instance_uid`.
pub fn children_of(instance_uid: &str) -> ListOptions {
    ListOptions::default().selector(Selector::from_iter([(
        INSTANCE_ID_LABEL.to_owned(),
        instance_uid.to_owned(),
    )]))
}

#[cfg(test)]
mod tests {
    use kube::api::DynamicObject;
    use serde_json::json;

    use super::*;

    fn labelled(namespace: Option<&str>, uid: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": namespace,
                         "labels": {"kro.run/instance-id": uid}},
        }))
        .unwrap()
    }

    #[test]
    fn children_are_found_by_label_in_any_namespace() {
        let options = children_of("u1");
        assert!(options.matches(&labelled(Some("default"), "u1")));
        assert!(options.matches(&labelled(Some("other"), "u1")));
        assert!(options.matches(&labelled(None, "u1")));
        assert!(!options.matches(&labelled(Some("default"), "u2")));
    }
}
