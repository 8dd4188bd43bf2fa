use std::collections::HashMap;
use std::sync::Arc;

use kube::{
    api::ApiResource,
    discovery::{ApiCapabilities, Scope},
};

use crate::object::Gvk;

/// Every kind the resolver knows, shared copy-on-write with the caches. Hashed (with a fast
/// hasher): every read from a cache looks its kind up here.
pub(crate) type Kinds = Arc<HashMap<Gvk, Resolved, foldhash::fast::RandomState>>;

/// A kind as the API server serves it: its resource (plural), scope and subresources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The kind.
    pub gvk: Gvk,
    /// The REST resource (group, version, plural) serving the kind.
    pub resource: ApiResource,
    /// Whether objects of the kind live in namespaces.
    pub namespaced: bool,
    /// The subresources, e.g. `status`, `scale`.
    pub subresources: Vec<String>,
}

impl Resolved {
    /// A resolved kind from its parts.
    pub fn new(gvk: Gvk, plural: &str, namespaced: bool, subresources: Vec<String>) -> Self {
        let resource = ApiResource::from_gvk_with_plural(&(&gvk).into(), plural);
        Self {
            gvk,
            resource,
            namespaced,
            subresources,
        }
    }

    /// A resolved kind from kube's discovery output.
    pub fn from_discovery(resource: ApiResource, caps: &ApiCapabilities) -> Self {
        Self {
            gvk: Gvk::new(&resource.group, &resource.version, &resource.kind),
            namespaced: caps.scope == Scope::Namespaced,
            subresources: caps
                .subresources
                .iter()
                .map(|(sub, _)| sub.plural.clone())
                .collect(),
            resource,
        }
    }

    /// Whether the kind has this subresource (e.g. `status`).
    pub fn has_subresource(&self, name: &str) -> bool {
        self.subresources.iter().any(|s| s == name)
    }

    /// The CustomResourceDefinition kind, which the resolver watches to learn of new kinds.
    pub fn crd() -> Self {
        Self::new(
            Gvk::new("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
            false,
            vec!["status".into()],
        )
    }
}
