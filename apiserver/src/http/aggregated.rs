//! Aggregated discovery (`apidiscovery.k8s.io` `APIGroupDiscoveryList`) on `/api` and `/apis`.

use axum::body::Body;
use http::Response;
use serde_json::{Value, json};

use super::negotiate::media_ranges;
use super::respond;
use crate::resources::{Registry, ResourceInfo, STATUS_VERBS};

/// The aggregated discovery version (`v2` or `v2beta1`) an `Accept` header asks for before
/// any plain JSON; `None` when the client wants the legacy documents.
pub fn requested(accept: Option<&str>) -> Option<&'static str> {
    for range in media_ranges(accept?) {
        if !range.is_json() {
            continue;
        }
        match range.param("as") {
            None => return None,
            Some("APIGroupDiscoveryList") if range.param("g") == Some("apidiscovery.k8s.io") => {
                match range.param("v") {
                    Some("v2") => return Some("v2"),
                    Some("v2beta1") => return Some("v2beta1"),
                    _ => continue,
                }
            }
            Some(_) => continue,
        }
    }
    None
}

/// The aggregated document of the core group (`/api`) or of every other group (`/apis`),
/// with the Content-Type that names its version.
pub fn respond(registry: &Registry, core: bool, version: &str) -> Response<Body> {
    let doc = document(registry, core, version);
    respond::with_type(
        200,
        &format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"),
        Body::from(doc.to_string()),
    )
}

/// The `APIGroupDiscoveryList` of the core group or of the named groups.
pub fn document(registry: &Registry, core: bool, version: &str) -> Value {
    let groups = if core {
        vec![String::new()]
    } else {
        registry.groups()
    };
    let items: Vec<Value> = groups
        .iter()
        .map(|group| group_item(registry, group))
        .filter(|item| item["versions"].as_array().is_some_and(|v| !v.is_empty()))
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

/// One group, its versions preferred first.
fn group_item(registry: &Registry, group: &str) -> Value {
    let versions: Vec<Value> = registry
        .versions_of(group)
        .iter()
        .map(|version| {
            let resources: Vec<Value> = registry
                .in_group_version(group, version)
                .iter()
                .map(|info| resource(info))
                .collect();
            json!({"version": version, "resources": resources, "freshness": "Current"})
        })
        .collect();
    json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions})
}

/// One resource with its subresources.
fn resource(info: &ResourceInfo) -> Value {
    let kind = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let mut doc = json!({
        "resource": info.plural,
        "responseKind": kind,
        "scope": if info.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": info.singular,
        "verbs": info.verbs,
    });
    if !info.short_names.is_empty() {
        doc["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        doc["categories"] = json!(info.categories);
    }
    let mut subresources = Vec::new();
    if info.status_subresource {
        subresources.push(json!({
            "subresource": "status",
            "responseKind": kind,
            "verbs": STATUS_VERBS,
        }));
    }
    for sub in info.subresources {
        let response_kind = match sub.kind {
            Some((group, version, kind)) => {
                json!({"group": group, "version": version, "kind": kind})
            }
            None => kind.clone(),
        };
        subresources.push(json!({
            "subresource": sub.name,
            "responseKind": response_kind,
            "verbs": sub.verbs,
        }));
    }
    if info.scale.is_some() {
        subresources.push(json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": STATUS_VERBS,
        }));
    }
    if !subresources.is_empty() {
        doc["subresources"] = Value::from(subresources);
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{ResourceKey, infos_from_crd};

    const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

    fn find<'a>(doc: &'a Value, group: &str, plural: &str) -> Option<&'a Value> {
        doc["items"]
            .as_array()?
            .iter()
            .find(|item| item["metadata"]["name"] == group)?["versions"][0]["resources"]
            .as_array()?
            .iter()
            .find(|r| r["resource"] == plural)
    }

    #[test]
    fn kubectl_gets_v2_and_plain_json_clients_get_legacy_documents() {
        assert_eq!(requested(Some(KUBECTL_ACCEPT)), Some("v2"));
        let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        assert_eq!(requested(Some(beta)), Some("v2beta1"));
        assert_eq!(requested(Some("application/json")), None);
        assert_eq!(requested(None), None);
        let later = "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        assert_eq!(requested(Some(later)), None);
    }

    #[test]
    fn resources_carry_short_names_categories_and_status() {
        let registry = Registry::with_builtins();
        let apis = document(&registry, false, "v2");
        assert_eq!(apis["apiVersion"], "apidiscovery.k8s.io/v2");
        let deployments = find(&apis, "apps", "deployments").unwrap();
        assert_eq!(deployments["shortNames"], json!(["deploy"]));
        assert_eq!(deployments["categories"], json!(["all"]));
        assert_eq!(deployments["scope"], "Namespaced");
        assert_eq!(deployments["subresources"][0]["subresource"], "status");
        assert_eq!(deployments["responseKind"]["kind"], "Deployment");
        let core = document(&registry, true, "v2");
        assert_eq!(core["items"].as_array().unwrap().len(), 1);
        assert_eq!(
            find(&core, "", "namespaces").unwrap()["scope"],
            json!("Cluster")
        );
        assert!(find(&apis, "", "configmaps").is_none());
    }

    #[test]
    fn a_crd_kind_comes_and_goes() {
        let mut registry = Registry::with_builtins();
        let key = ResourceKey {
            group: "example.com".into(),
            plural: "widgets".into(),
        };
        let crd = json!({"spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{"name": "v1", "served": true}]}});
        registry.set_custom(&key, infos_from_crd(&crd));
        let widgets = document(&registry, false, "v2");
        let widget = find(&widgets, "example.com", "widgets").unwrap();
        assert_eq!(widget["shortNames"], json!(["wd"]));
        assert_eq!(widget["categories"], json!(["all"]));
        assert!(widget.get("subresources").is_none());
        registry.remove_custom(&key);
        let gone = document(&registry, false, "v2");
        assert!(find(&gone, "example.com", "widgets").is_none());
    }
}
