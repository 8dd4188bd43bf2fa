//! The kinds the server serves: built-in kinds and kinds defined by CRDs at run time.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

pub use crate::catalog::{ALL as ALL_VERBS, GET_PATCH_UPDATE as STATUS_VERBS, Subresource};
use crate::catalog::{BUILTIN_KINDS, BuiltinKind};

/// Where objects of one kind are stored: one key per (group, plural), whatever the version.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceKey {
    /// API group ("" for the core group).
    pub group: String,
    /// Plural resource name.
    pub plural: String,
}

/// One served kind at one group/version, as discovery describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceInfo {
    /// API group ("" for the core group).
    pub group: String,
    /// API version, e.g. "v1".
    pub version: String,
    /// Kind, e.g. "ConfigMap".
    pub kind: String,
    /// Kind of the list, e.g. "ConfigMapList".
    pub list_kind: String,
    /// Plural resource name, e.g. "configmaps".
    pub plural: String,
    /// Singular resource name, e.g. "configmap".
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names for kubectl, e.g. "cm".
    pub short_names: Vec<String>,
    /// Categories, e.g. "all".
    pub categories: Vec<String>,
    /// Whether the kind has a `status` subresource.
    pub status_subresource: bool,
    /// The kind's `scale` subresource, if it has one.
    pub scale: Option<ScalePaths>,
    /// The `Warning` every request at this version gets, for a deprecated CRD version.
    pub deprecation_warning: Option<String>,
    /// Whether the kind is defined by a CustomResourceDefinition.
    pub custom: bool,
    /// Field paths accepted in field selectors besides metadata.name and metadata.namespace.
    pub extra_selectable_fields: Vec<String>,
    /// The verbs of the kind's own endpoint.
    pub verbs: &'static [&'static str],
    /// Subresources other than `status` (built-in kinds only).
    pub subresources: &'static [Subresource],
    /// Whether objects carry a `metadata.generation` (kinds with a spec, and every custom kind).
    pub generation: bool,
}

impl ResourceInfo {
    /// The storage key of this kind.
    pub fn key(&self) -> ResourceKey {
        ResourceKey {
            group: self.group.clone(),
            plural: self.plural.clone(),
        }
    }

    /// `apiVersion` as written in objects: "v1" or "apps/v1".
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The resource name as kube-apiserver prints it in messages: "configmaps" or "deployments.apps".
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Field paths this kind accepts in a field selector.
    pub fn selectable_fields(&self) -> Vec<&str> {
        let mut fields = vec!["metadata.name", "metadata.namespace"];
        fields.extend(self.extra_selectable_fields.iter().map(String::as_str));
        fields
    }

    /// Whether the kind's endpoint supports a verb.
    pub fn allows(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// A subresource other than `status`, by name.
    pub fn subresource(&self, name: &str) -> Option<&'static Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// Whether objects of the kind are answers computed on create and never stored.
    pub fn is_virtual(&self) -> bool {
        !self.custom && crate::catalog::is_virtual(&self.group, &self.plural)
    }

    /// Whether this is the core `componentstatuses`, computed on every read, never stored.
    pub fn is_component_statuses(&self) -> bool {
        !self.custom && self.group.is_empty() && self.plural == "componentstatuses"
    }

    /// Whether an update may omit `metadata.resourceVersion` (true for built-in kinds, false for CRDs).
    pub fn allows_unconditional_update(&self) -> bool {
        !self.custom
    }
}

/// Where a kind keeps what its `scale` subresource (`autoscaling/v1` Scale) shows.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalePaths {
    /// The desired replicas, e.g. `spec.replicas` (a CRD's `specReplicasPath` without the dot).
    pub spec_replicas: String,
    /// The observed replicas, e.g. `status.replicas`.
    pub status_replicas: String,
    /// Where `status.selector` of the Scale comes from.
    pub selector: ScaleSelector,
}

/// The source of a Scale's `status.selector`.
#[derive(Clone, Debug, PartialEq)]
pub enum ScaleSelector {
    /// None: the Scale has no selector.
    None,
    /// A string field of the object (a CRD's `labelSelectorPath`).
    Path(String),
    /// The object's `spec.selector`, a `LabelSelector` written as a string (built-in kinds).
    SpecSelector,
}

/// The built-in kinds with a `scale` subresource.
const SCALABLE: &[(&str, &str)] = &[
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "ReplicaSet"),
];

/// The scale subresource of a built-in kind.
fn builtin_scale(group: &str, kind: &str) -> Option<ScalePaths> {
    SCALABLE
        .iter()
        .any(|(g, k)| *g == group && *k == kind)
        .then(|| ScalePaths {
            spec_replicas: "spec.replicas".into(),
            status_replicas: "status.replicas".into(),
            selector: ScaleSelector::SpecSelector,
        })
}

/// The scale subresource a CRD version declares (`subresources.scale`).
fn crd_scale(version: &Value) -> Option<ScalePaths> {
    let scale = version["subresources"]["scale"].as_object()?;
    let path = |key: &str| {
        scale
            .get(key)
            .and_then(Value::as_str)
            .map(|p| p.trim_start_matches('.').to_string())
    };
    Some(ScalePaths {
        spec_replicas: path("specReplicasPath")?,
        status_replicas: path("statusReplicasPath")?,
        selector: path("labelSelectorPath").map_or(ScaleSelector::None, ScaleSelector::Path),
    })
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

impl From<&BuiltinKind> for ResourceInfo {
    fn from(b: &BuiltinKind) -> Self {
        ResourceInfo {
            group: b.group.into(),
            version: b.version.into(),
            kind: b.kind.into(),
            list_kind: format!("{}List", b.kind),
            plural: b.plural.into(),
            singular: b.kind.to_lowercase(),
            namespaced: b.namespaced,
            short_names: strings(b.short_names),
            categories: strings(b.categories),
            status_subresource: b.status,
            scale: builtin_scale(b.group, b.kind),
            deprecation_warning: None,
            custom: false,
            extra_selectable_fields: strings(b.selectable),
            verbs: b.verbs,
            subresources: b.subresources,
            generation: b.generation,
        }
    }
}

/// The kind of CustomResourceDefinition objects themselves.
pub fn crd_resource_key() -> ResourceKey {
    ResourceKey {
        group: "apiextensions.k8s.io".into(),
        plural: "customresourcedefinitions".into(),
    }
}

/// The kind of Namespace objects.
pub fn namespace_resource_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "namespaces".into(),
    }
}

/// Every kind the server serves, indexed by group, version and plural.
#[derive(Clone, Debug)]
pub struct Registry {
    by_gvr: BTreeMap<(String, String, String), Arc<ResourceInfo>>,
}

impl Registry {
    /// A registry of the built-in kinds.
    pub fn with_builtins() -> Self {
        let mut registry = Registry {
            by_gvr: BTreeMap::new(),
        };
        for builtin in BUILTIN_KINDS {
            registry.insert(ResourceInfo::from(builtin));
        }
        registry
    }

    fn insert(&mut self, info: ResourceInfo) {
        let key = (
            info.group.clone(),
            info.version.clone(),
            info.plural.clone(),
        );
        self.by_gvr.insert(key, Arc::new(info));
    }

    /// The kind served at `group/version/plural`.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.by_gvr
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Every served kind in one group/version.
    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        self.by_gvr
            .values()
            .filter(|info| info.group == group && info.version == version)
            .cloned()
            .collect()
    }

    /// The served versions of a group, preferred first.
    pub fn versions_of(&self, group: &str) -> Vec<String> {
        let mut versions: Vec<String> = self
            .by_gvr
            .keys()
            .filter(|(g, _, _)| g == group)
            .map(|(_, v, _)| v.clone())
            .collect();
        versions.dedup();
        versions.sort_by(|a, b| compare_versions(b, a));
        versions
    }

    /// Every non-core group, in a stable order.
    pub fn groups(&self) -> Vec<String> {
        let mut groups: Vec<String> = self
            .by_gvr
            .keys()
            .map(|(g, _, _)| g.clone())
            .filter(|g| !g.is_empty())
            .collect();
        groups.dedup();
        groups
    }

    /// The kinds a CRD serves (one per served version), replacing what it served before.
    pub fn set_custom(&mut self, key: &ResourceKey, infos: Vec<ResourceInfo>) {
        self.remove_custom(key);
        for info in infos {
            self.insert(info);
        }
    }

    /// Stops serving every version of a custom kind.
    pub fn remove_custom(&mut self, key: &ResourceKey) {
        self.by_gvr.retain(|_, info| {
            !(info.custom && info.group == key.group && info.plural == key.plural)
        });
    }

    /// Whether a kind defined by a CRD with these names would clash with a served kind: a
    /// built-in with the same plural, or another kind of the group with the same kind name.
    pub fn names_clash(&self, key: &ResourceKey, kind: &str) -> bool {
        self.by_gvr.values().any(|info| {
            info.group == key.group
                && ((!info.custom && info.plural == key.plural)
                    || (info.plural != key.plural && info.kind == kind))
        })
    }
}

/// Orders Kubernetes versions by priority: GA > beta > alpha, higher numbers first; others last.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    version_rank(a).cmp(&version_rank(b)).then_with(|| b.cmp(a))
}

/// (stability, major, minor): larger is preferred.
fn version_rank(v: &str) -> (u8, u64, u64) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let Ok(major) = digits.parse::<u64>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits.len()..];
    if tail.is_empty() {
        return (3, major, 0);
    }
    let (stability, minor) = if let Some(m) = tail.strip_prefix("beta") {
        (2, m)
    } else if let Some(m) = tail.strip_prefix("alpha") {
        (1, m)
    } else {
        return (0, 0, 0);
    };
    match minor.parse::<u64>() {
        Ok(minor) => (stability, major, minor),
        Err(_) => (0, 0, 0),
    }
}

/// The warning of a deprecated CRD version: its `deprecationWarning`, or kube's
/// `<group>/<version> <Kind> is deprecated; use <group>/<version> <Kind>`, naming the
/// preferred served version that is not deprecated and ranks above it.
fn deprecation_warning(spec: &Value, version: &Value) -> Option<String> {
    if version["deprecated"].as_bool() != Some(true) {
        return None;
    }
    if let Some(warning) = version["deprecationWarning"].as_str() {
        return Some(warning.to_string());
    }
    let group = spec["group"].as_str().unwrap_or_default();
    let kind = spec["names"]["kind"].as_str().unwrap_or_default();
    let name = version["name"].as_str().unwrap_or_default();
    let mut message = format!("{group}/{name} {kind} is deprecated");
    let versions = spec["versions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let replacement = versions
        .iter()
        .filter(|v| v["served"].as_bool() == Some(true) && v["deprecated"].as_bool() != Some(true))
        .filter_map(|v| v["name"].as_str())
        .filter(|v| compare_versions(name, v).is_lt())
        .max_by(|a, b| compare_versions(a, b));
    if let Some(replacement) = replacement {
        message.push_str(&format!("; use {group}/{replacement} {kind}"));
    }
    Some(message)
}

/// The kinds a CustomResourceDefinition object defines, one per served version.
pub fn infos_from_crd(crd: &Value) -> Vec<ResourceInfo> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let kind = names["kind"].as_str().unwrap_or_default().to_string();
    let plural = names["plural"].as_str().unwrap_or_default().to_string();
    let list_kind = names["listKind"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("{kind}List"));
    let singular = names["singular"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let string_list = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    versions
        .iter()
        .filter(|v| v["served"].as_bool().unwrap_or(false))
        .map(|v| ResourceInfo {
            group: spec["group"].as_str().unwrap_or_default().to_string(),
            version: v["name"].as_str().unwrap_or_default().to_string(),
            kind: kind.clone(),
            list_kind: list_kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            namespaced: spec["scope"].as_str() == Some("Namespaced"),
            short_names: string_list(&names["shortNames"]),
            categories: string_list(&names["categories"]),
            status_subresource: v["subresources"]["status"].is_object(),
            scale: crd_scale(v),
            deprecation_warning: deprecation_warning(spec, v),
            custom: true,
            extra_selectable_fields: v["selectableFields"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f["jsonPath"].as_str())
                        .map(|p| p.trim_start_matches('.').to_string())
                        .collect()
                })
                .unwrap_or_default(),
            verbs: ALL_VERBS,
            subresources: &[],
            generation: true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_are_ordered_by_kubernetes_priority() {
        let mut v = vec!["v1alpha1", "v2", "v1beta2", "v1", "foo", "v1beta1", "v10"];
        v.sort_by(|a, b| compare_versions(b, a));
        assert_eq!(
            v,
            vec!["v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
        );
    }

    #[test]
    fn a_crd_serves_each_served_version() {
        let crd = json!({"spec": {"group": "example.com", "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
        "versions": [
            {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
            {"name": "v1beta1", "served": false, "storage": false}
        ]}});
        let infos = infos_from_crd(&crd);
        assert_eq!(infos.len(), 1);
        assert_eq!(infos[0].list_kind, "WidgetList");
        assert_eq!(infos[0].singular, "widget");
        assert!(infos[0].status_subresource && infos[0].namespaced && infos[0].custom);
        assert_eq!(infos[0].short_names, vec!["wd"]);
    }

    #[test]
    fn registry_adds_and_removes_custom_kinds() {
        let mut registry = Registry::with_builtins();
        let key = ResourceKey {
            group: "example.com".into(),
            plural: "widgets".into(),
        };
        assert!(registry.get("example.com", "v1", "widgets").is_none());
        let crd = json!({"spec": {"group": "example.com", "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true}, {"name": "v2", "served": true}]}});
        registry.set_custom(&key, infos_from_crd(&crd));
        assert!(registry.get("example.com", "v2", "widgets").is_some());
        assert_eq!(registry.versions_of("example.com"), vec!["v2", "v1"]);
        registry.remove_custom(&key);
        assert!(registry.get("example.com", "v1", "widgets").is_none());
        assert!(registry.get("apps", "v1", "deployments").is_some());
    }
}
