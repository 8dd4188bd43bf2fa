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
        let in_namespace = match &self.namespace {
            Some(ns) => object.metadata.namespace.as_deref() == Some(ns.as_str()),
            None => true,
        };
        let labels = object.metadata.labels.clone().unwrap_or_default();
        in_namespace && self.selector.as_ref().is_none_or(|s| s.matches(&labels))
    }

    pub(super) fn list_params(&self) -> ListParams {
        match &self.selector {
            Some(selector) => ListParams::default().labels_from(selector),
            None => ListParams::default(),
        }
    }
}
