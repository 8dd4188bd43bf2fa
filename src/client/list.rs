use kube::{
    api::{DynamicObject, ListParams},
    core::{Selector, SelectorExt},
};

/// Which objects a list (or delete-collection) covers: a namespace, a label selector and a
/// controller.
///
/// What a list costs depends on where it is served from. From a ready shared cache (see
/// [`Client::list`](super::Client::list)), with `controlled_by` it reads only the objects
/// that controller owns; else with `namespace` only that namespace's objects; else every
/// cached object of the kind. The label selector is checked on each object read, and each
/// object returned is cloned. From the API server, the namespace and the selector go to the
/// server; `controlled_by` is applied to what the server returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Only this namespace; all namespaces when `None`.
    pub namespace: Option<String>,
    /// Only objects whose labels match; all when `None`.
    pub selector: Option<Selector>,
    /// Only objects with a controller ownerReference to this UID; all when `None`.
    pub controlled_by: Option<String>,
}

impl ListOptions {
    /// Restricts the list to a namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Restricts the list to objects whose labels match.
    pub fn selector(mut self, selector: Selector) -> Self {
        self.selector = Some(selector);
        self
    }

    /// Restricts the list to objects whose controller ownerReference has this UID. A cache
    /// serves it from an index; the API server cannot select by owner, so a list from it
    /// returns everything else the options cover, and the client drops the rest.
    pub fn controlled_by(mut self, uid: impl Into<String>) -> Self {
        self.controlled_by = Some(uid.into());
        self
    }

    /// Whether a (cached) object is covered.
    pub fn matches(&self, object: &DynamicObject) -> bool {
        self.controller_matches(object) && self.matches_apart_from_controller(object)
    }

    /// Whether the object passes the namespace and the selector (what an index by
    /// controller leaves to check).
    pub(super) fn matches_apart_from_controller(&self, object: &DynamicObject) -> bool {
        if let Some(ns) = &self.namespace
            && object.metadata.namespace.as_deref() != Some(ns.as_str())
        {
            return false;
        }
        let Some(selector) = &self.selector else {
            return true;
        };
        match &object.metadata.labels {
            Some(labels) => selector.matches(labels),
            None => selector.matches(&Default::default()),
        }
    }

    /// Whether the object passes `controlled_by` (the part the API server cannot check).
    pub(super) fn controller_matches(&self, object: &DynamicObject) -> bool {
        self.controlled_by
            .as_deref()
            .is_none_or(|uid| controller_uids(object).any(|u| u == uid))
    }

    pub(super) fn list_params(&self) -> ListParams {
        match &self.selector {
            Some(selector) => ListParams::default().labels_from(selector),
            None => ListParams::default(),
        }
    }
}

/// The UIDs of an object's controller ownerReferences (the API server allows one).
pub(super) fn controller_uids(object: &DynamicObject) -> impl Iterator<Item = &str> {
    let references = object.metadata.owner_references.iter().flatten();
    references
        .filter(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}
