use kube::{
    api::{DynamicObject, ListParams},
    core::{Selector, SelectorExt},
};

/// Which objects a list (or delete-collection) covers: a namespace and a label selector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Only this namespace; all namespaces when `None`.
    pub namespace: Option<String>,
    /// Only objects whose labels match; all when `None`.
    pub selector: Option<Selector>,
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

    /// Whether a (cached) object is covered.
    pub fn matches(&self, object: &DynamicObject) -> bool {
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

    pub(super) fn list_params(&self) -> ListParams {
        match &self.selector {
            Some(selector) => ListParams::default().labels_from(selector),
            None => ListParams::default(),
        }
    }
}
