//! The request context every reconciler receives: the request, its clients, the stash,
//! "now", and the resource type, as reconciler.io keeps them in Go's `context.Context`.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use jiff::Timestamp;
use kube::api::DynamicObject;

use super::config::Config;
use super::stash::Stash;
use crate::client::{Error, ListOptions};
use crate::object::{ConditionManager, ConditionSet, Gvk, ObjectKey, StatusExt};

/// What is fixed for the whole request.
struct Request {
    key: ObjectKey,
    now: Timestamp,
    stash: Stash,
    original_config: Arc<Config>,
    original_resource_type: Arc<Gvk>,
    additional_configs: BTreeMap<String, Config>,
    conditions: Option<Arc<ConditionSet>>,
}

/// The context of one reconcile request. Cheap to clone (configs and kinds are shared);
/// clones share the stash.
#[derive(Clone)]
pub struct Context {
    request: Arc<Request>,
    config: Arc<Config>,
    resource_type: Arc<Gvk>,
    iteration: Option<usize>,
}

impl Context {
    /// A context for reconciling `request` of kind `resource_type` with `config`, at `now`.
    pub fn new(request: ObjectKey, resource_type: Gvk, config: Config, now: Timestamp) -> Self {
        Self::shared(
            request,
            Arc::new(resource_type),
            Arc::new(config),
            now,
            None,
        )
    }

    /// A context over a root's shared kind, config and condition set (nothing is copied).
    pub(crate) fn shared(
        request: ObjectKey,
        resource_type: Arc<Gvk>,
        config: Arc<Config>,
        now: Timestamp,
        conditions: Option<Arc<ConditionSet>>,
    ) -> Self {
        Self {
            request: Arc::new(Request {
                key: request,
                now,
                stash: Stash::default(),
                original_config: config.clone(),
                original_resource_type: resource_type.clone(),
                additional_configs: BTreeMap::new(),
                conditions,
            }),
            config,
            resource_type,
            iteration: None,
        }
    }

    /// The same context with named configs for other clusters (used by tests of `WithConfig`).
    pub fn with_additional_configs(self, configs: BTreeMap<String, Config>) -> Self {
        self.with_request(|request| request.additional_configs = configs)
    }

    /// The same context with the root's condition set, which [`Context::conditions`] manages
    /// (`None`: the root declares none).
    pub fn with_conditions(self, conditions: Option<Arc<ConditionSet>>) -> Self {
        match conditions {
            None => self,
            Some(set) => self.with_request(|request| request.conditions = Some(set)),
        }
    }

    /// The same context with a changed copy of the request.
    fn with_request(self, change: impl FnOnce(&mut Request)) -> Self {
        let mut request = Request {
            key: self.request.key.clone(),
            now: self.request.now,
            stash: self.request.stash.clone(),
            original_config: self.request.original_config.clone(),
            original_resource_type: self.request.original_resource_type.clone(),
            additional_configs: self.request.additional_configs.clone(),
            conditions: self.request.conditions.clone(),
        };
        change(&mut request);
        Self {
            request: Arc::new(request),
            ..self
        }
    }

    /// The conditions of `resource`, as the root's condition set (`ResourceReconciler::
    /// conditions`) defines them, stamped with the request's "now": marking a dependent
    /// condition updates the happy one (`Ready`). Without a set on the root, conditions are
    /// set as given and none is happy-derived. On a [`Draft`](super::Draft), a condition
    /// set to what it already is copies nothing.
    pub fn conditions<'a, S: StatusExt + ?Sized>(
        &'a self,
        resource: &'a mut S,
    ) -> ConditionManager<'a, S> {
        static NO_SET: LazyLock<ConditionSet> = LazyLock::new(|| ConditionSet::living(&[]));
        let set = self.request.conditions.as_deref().unwrap_or(&NO_SET);
        set.manage(resource, self.request.now)
    }

    /// The object this request is for.
    pub fn request(&self) -> &ObjectKey {
        &self.request.key
    }

    /// The time the request started (fixed per request; tests set it).
    pub fn now(&self) -> Timestamp {
        self.request.now
    }

    /// The per-request stash.
    pub fn stash(&self) -> &Stash {
        &self.request.stash
    }

    /// The config nested reconcilers use (changed by `WithConfig`).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The config that loaded the reconciled resource (for writes on the resource itself).
    pub fn original_config(&self) -> &Config {
        &self.request.original_config
    }

    /// Named configs for other clusters.
    pub fn additional_configs(&self) -> &BTreeMap<String, Config> {
        &self.request.additional_configs
    }

    /// The kind of the resource as nested reconcilers see it (changed by `CastResource`).
    pub fn resource_type(&self) -> &Gvk {
        &self.resource_type
    }

    /// The kind of the reconciled resource.
    pub fn original_resource_type(&self) -> &Gvk {
        &self.request.original_resource_type
    }

    /// The iteration of the innermost `While` loop, if inside one.
    pub fn iteration(&self) -> Option<usize> {
        self.iteration
    }

    /// A context whose nested reconcilers use `config`.
    pub fn with_config(&self, config: Config) -> Self {
        Self {
            config: Arc::new(config),
            ..self.clone()
        }
    }

    /// A context whose nested reconcilers see the resource as `resource_type`.
    pub fn with_resource_type(&self, resource_type: Gvk) -> Self {
        Self {
            resource_type: Arc::new(resource_type),
            ..self.clone()
        }
    }

    /// A context inside iteration `iteration` of a loop.
    pub fn with_iteration(&self, iteration: usize) -> Self {
        Self {
            iteration: Some(iteration),
            ..self.clone()
        }
    }

    /// Tracks the object for the request (so its changes re-reconcile the request), then
    /// reads it (shared with the cache, not copied); a failed read (not found) still leaves
    /// the track.
    pub async fn track_and_get(
        &self,
        gvk: &Gvk,
        key: &ObjectKey,
    ) -> Result<Arc<DynamicObject>, Error> {
        let config = &self.config;
        config
            .tracker
            .track_and_get(&config.client, self.request(), gvk, key)
            .await
    }

    /// Tracks the objects the options select for the request, then lists them.
    pub async fn track_and_list(
        &self,
        gvk: &Gvk,
        options: &ListOptions,
    ) -> Result<Vec<Arc<DynamicObject>>, Error> {
        let config = &self.config;
        config
            .tracker
            .track_and_list(&config.client, self.request(), gvk, options)
            .await
    }
}
