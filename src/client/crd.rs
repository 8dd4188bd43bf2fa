//! The kinds a CustomResourceDefinition object makes the API server serve.

use kube::api::DynamicObject;

use super::Resolved;
use crate::object::{Fields, Gvk};

/// The served kinds of an established CRD; none while it is not established.
pub(crate) fn served_kinds(crd: &DynamicObject) -> Vec<Resolved> {
    if !is_established(crd) || crd.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    declared_kinds(crd)
}

/// The kinds a CRD declares served, whether or not it is established.
pub(super) fn declared_kinds(crd: &DynamicObject) -> Vec<Resolved> {
    let text = |path| crd.field_str(path).ok().flatten().unwrap_or_default();
    let (group, kind, plural) = (
        text("spec.group"),
        text("spec.names.kind"),
        text("spec.names.plural"),
    );
    if kind.is_empty() || plural.is_empty() {
        return Vec::new();
    }
    let namespaced = text("spec.scope") == "Namespaced";
    let versions = crd.field_array("spec.versions").ok().flatten();
    versions
        .into_iter()
        .flatten()
        .filter(|v| v["served"].as_bool().unwrap_or(false))
        .filter_map(|v| {
            let version = v["name"].as_str()?;
            let subresources = v["subresources"]
                .as_object()
                .map(|s| s.keys().cloned().collect())
                .unwrap_or_default();
            Some(Resolved::new(
                Gvk::new(group, version, kind),
                plural,
                namespaced,
                subresources,
            ))
        })
        .collect()
}

fn is_established(crd: &DynamicObject) -> bool {
    let conditions = crd.field_array("status.conditions").ok().flatten();
    conditions
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(established: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                    {"name": "v1beta1", "served": false, "storage": false}
                ]
            },
            "status": {"conditions": [{"type": "Established", "status": established}]}
        }))
        .unwrap()
    }

    #[test]
    fn established_crd_serves_its_served_versions() {
        let kinds = served_kinds(&crd("True"));
        assert_eq!(kinds.len(), 1);
        assert_eq!(kinds[0].gvk, Gvk::new("example.com", "v1", "Widget"));
        assert_eq!(kinds[0].resource.plural, "widgets");
        assert!(kinds[0].namespaced);
        assert!(kinds[0].has_subresource("status"));
    }

    #[test]
    fn unestablished_crd_serves_nothing() {
        assert!(served_kinds(&crd("False")).is_empty());
    }
}
