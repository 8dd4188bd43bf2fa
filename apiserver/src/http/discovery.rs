//! Discovery documents: `/version`, `/api`, `/apis`, `/apis/{group}` and resource lists.

use serde_json::{Value, json};

use crate::resources::{Registry, STATUS_VERBS};

/// The Kubernetes version this server imitates.
pub const KUBERNETES_MINOR: &str = "32";

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": KUBERNETES_MINOR,
        "gitVersion": format!("v1.{KUBERNETES_MINOR}.0-dynrec.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

/// `/apis`.
pub fn groups(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .filter_map(|g| group_doc(registry, g))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, or `None` when the group is not served.
pub fn group(registry: &Registry, group: &str) -> Option<Value> {
    let mut doc = group_doc(registry, group)?;
    doc["kind"] = Value::from("APIGroup");
    doc["apiVersion"] = Value::from("v1");
    Some(doc)
}

fn group_doc(registry: &Registry, group: &str) -> Option<Value> {
    let versions = registry.versions_of(group);
    let preferred = versions.first()?;
    let version_doc = |v: &String| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    Some(json!({
        "name": group,
        "versions": versions.iter().map(version_doc).collect::<Vec<_>>(),
        "preferredVersion": version_doc(preferred),
    }))
}

/// `/api/v1` or `/apis/{group}/{version}`, or `None` when nothing is served there.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let infos = registry.in_group_version(group, version);
    if infos.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for info in infos {
        resources.push(json!({
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": info.verbs,
            "shortNames": info.short_names,
            "categories": info.categories,
        }));
        if info.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", info.plural),
                "singularName": "",
                "namespaced": info.namespaced,
                "kind": info.kind,
                "verbs": STATUS_VERBS,
            }));
        }
        for sub in info.subresources {
            let mut doc = json!({
                "name": format!("{}/{}", info.plural, sub.name),
                "singularName": "",
                "namespaced": info.namespaced,
                "kind": info.kind,
                "verbs": sub.verbs,
            });
            if let Some((group, version, kind)) = sub.kind {
                doc["kind"] = Value::from(kind);
                if !group.is_empty() {
                    doc["group"] = Value::from(group);
                    doc["version"] = Value::from(version);
                }
            }
            resources.push(doc);
        }
        if info.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", info.plural),
                "singularName": "",
                "namespaced": info.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": STATUS_VERBS,
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apps_lists_deployments_with_status() {
        let registry = Registry::with_builtins();
        let doc = resource_list(&registry, "apps", "v1").unwrap();
        let names: Vec<&str> = doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"deployments") && names.contains(&"deployments/status"));
        assert!(resource_list(&registry, "apps", "v9").is_none());
    }

    #[test]
    fn groups_name_preferred_versions() {
        let doc = groups(&Registry::with_builtins());
        let apps = doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "apps")
            .unwrap();
        assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
    }
}
