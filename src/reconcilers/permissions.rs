//! The permissions a reconciler tree needs on the API server, declared at setup next to its
//! watches, each naming the reconciler that needs it: what `dynrec rbac` prints and what the
//! Manager checks before it starts a controller.

use crate::object::Gvk;

/// Verbs that read a kind: what a watch (list, then watch) and a cached get need.
pub const READ: &[&str] = &["get", "list", "watch"];

/// Verbs an object manager writes its objects with.
pub const WRITE: &[&str] = &["create", "delete", "patch", "update"];

/// Access a reconciler needs: `verbs` on a kind (or one of its subresources).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Permission {
    /// The kind.
    pub gvk: Gvk,
    /// The subresource, e.g. `status`; empty for the kind itself.
    pub subresource: String,
    /// The verbs, e.g. `get`, `create`.
    pub verbs: Vec<String>,
    /// The reconciler (or controller) that needs it, and what for.
    pub by: String,
    /// The objects it is limited to (RBAC's `resourceNames`); empty for every object.
    pub resource_names: Vec<String>,
    /// The namespace it is needed in, when a namespaced kind's objects are known to be
    /// there (a child template naming its namespace); `None` where the objects are.
    pub namespace: Option<String>,
}

impl Permission {
    /// `verbs` on `gvk` (its `subresource` when not empty), needed by `by`.
    pub fn new(gvk: &Gvk, subresource: &str, verbs: &[&str], by: impl Into<String>) -> Self {
        Self {
            gvk: gvk.clone(),
            subresource: subresource.to_string(),
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            by: by.into(),
            resource_names: Vec::new(),
            namespace: None,
        }
    }

    /// The same access needed in `namespace` only.
    pub fn in_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// The same access limited to the objects named `names` (RBAC's `resourceNames`).
    pub fn named(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.resource_names = names.into_iter().collect();
        self
    }

    /// The resource as RBAC names it: the kind's plural (`plural`, the one the server
    /// serves it under, when known; else kube's guess from the kind, e.g. `configmaps`),
    /// then `/subresource` when there is one.
    pub fn resource(&self, plural: Option<&str>) -> String {
        let plural = plural.map_or_else(
            || {
                let gvk = &self.gvk;
                let gvk = kube::core::GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
                kube::api::ApiResource::from_gvk(&gvk).plural
            },
            str::to_string,
        );
        match self.subresource.as_str() {
            "" => plural,
            sub => format!("{plural}/{sub}"),
        }
    }
}

/// The kind the event recorder writes.
pub(super) fn events_gvk() -> Gvk {
    Gvk::new("events.k8s.io", "v1", "Event")
}
