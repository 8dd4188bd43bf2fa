//! GVK → API resource, from discovery, kept current by watching CustomResourceDefinitions.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use kube::{
    api::DynamicObject,
    discovery::{self, ApiGroup},
};
use parking_lot::Mutex;
use tokio::{sync::watch, task::JoinHandle};
use tracing::{debug, info};

use super::resolved::Kinds;
use super::{
    Cache, CacheEvent, CachedFields, ResolveError, Resolved, cache::Caches, crd::served_kinds,
};
use crate::object::Gvk;

/// How long a group's discovery answer is trusted before a miss asks again.
const DISCOVERY_TTL: Duration = Duration::from_secs(2);

/// Resolves GVKs to API resources through discovery, learning of CRDs as they come and go.
#[derive(Clone)]
pub struct Resolver {
    inner: Arc<Inner>,
}

struct Inner {
    kube: kube::Client,
    kinds: watch::Sender<Kinds>,
    caches: Caches,
    /// When each group was last discovered.
    discovered: Mutex<HashMap<String, Instant>>,
    crd_follower: OnceLock<AbortOnDrop>,
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Resolver {
    /// A resolver and the registry of the caches it stops when kinds go, whose caches of
    /// namespaced kinds hold `namespaces` (every namespace when empty).
    pub(crate) fn new(kube: kube::Client, namespaces: Vec<String>) -> (Self, Caches) {
        let crd = Resolved::crd();
        let kinds: Kinds = Arc::new([(crd.gvk.clone(), crd)].into_iter().collect());
        let kinds = watch::Sender::new(kinds);
        let caches = Caches::new(kube.clone(), kinds.subscribe(), namespaces);
        let inner = Inner {
            kube,
            kinds,
            caches: caches.clone(),
            discovered: Mutex::default(),
            crd_follower: OnceLock::new(),
        };
        (
            Self {
                inner: Arc::new(inner),
            },
            caches,
        )
    }

    /// The kind as the API server serves it, discovering its group on a miss.
    pub async fn resolve(&self, gvk: &Gvk) -> Result<Resolved, ResolveError> {
        self.follow_crds();
        if let Some(resolved) = self.known(gvk) {
            return Ok(resolved);
        }
        self.discover(&gvk.group).await?;
        self.known(gvk).ok_or_else(|| ResolveError::UnknownKind {
            gvk: gvk.clone(),
            available: self.served_in(&gvk.group),
        })
    }

    /// Waits until the kind is served (e.g. until its CRD is established).
    pub async fn wait_for(&self, gvk: &Gvk) -> Result<Resolved, ResolveError> {
        let mut kinds = self.inner.kinds.subscribe();
        match self.resolve(gvk).await {
            Err(ResolveError::UnknownKind { .. }) => {}
            result => return result,
        }
        debug!(%gvk, "waiting for the kind to be served");
        let kinds = kinds.wait_for(|kinds| kinds.contains_key(gvk)).await;
        let resolved = kinds.ok().and_then(|kinds| kinds.get(gvk).cloned());
        resolved.ok_or_else(|| ResolveError::UnknownKind {
            gvk: gvk.clone(),
            available: Vec::new(),
        })
    }

    /// Whether the kind is known to be served (no request is made, nothing is copied).
    pub fn serves(&self, gvk: &Gvk) -> bool {
        self.inner.kinds.borrow().contains_key(gvk)
    }

    /// Whether a known kind has the subresource (no request is made, nothing is copied);
    /// `None` when the kind is not known yet.
    pub fn known_subresource(&self, gvk: &Gvk, name: &str) -> Option<bool> {
        let kinds = self.inner.kinds.borrow();
        kinds
            .get(gvk)
            .map(|resolved| resolved.has_subresource(name))
    }

    /// The kind, if already known (no request is made).
    pub fn known(&self, gvk: &Gvk) -> Option<Resolved> {
        self.inner.kinds.borrow().get(gvk).cloned()
    }

    /// Every kind known so far, by group, version and kind.
    pub fn kinds(&self) -> Vec<Resolved> {
        let mut kinds: Vec<Resolved> = self.inner.kinds.borrow().values().cloned().collect();
        kinds.sort_by(|a, b| a.gvk.cmp(&b.gvk));
        kinds
    }

    /// Known kinds of a group as `version/Kind`.
    fn served_in(&self, group: &str) -> Vec<String> {
        let kinds = self.inner.kinds.borrow();
        let mut in_group: Vec<&Gvk> = kinds.keys().filter(|k| k.group == group).collect();
        in_group.sort();
        in_group
            .into_iter()
            .map(|k| format!("{}/{}", k.version, k.kind))
            .collect()
    }

    /// Asks discovery for a group's kinds, unless it answered very recently.
    async fn discover(&self, group: &str) -> Result<(), ResolveError> {
        let recent = self.inner.discovered.lock().get(group).copied();
        if recent.is_some_and(|at| at.elapsed() < DISCOVERY_TTL) {
            return Ok(());
        }
        debug!(group, "discovering group");
        let found = match discovery::group(&self.inner.kube, group).await {
            Ok(api_group) => group_kinds(&api_group),
            Err(kube::Error::Discovery(_)) => Vec::new(),
            Err(source) => {
                return Err(ResolveError::Discovery {
                    group: group.to_string(),
                    source,
                });
            }
        };
        self.inner
            .discovered
            .lock()
            .insert(group.to_string(), Instant::now());
        self.inner.kinds.send_if_modified(|kinds| {
            let mut changed = false;
            for resolved in found {
                if kinds.get(&resolved.gvk) != Some(&resolved) {
                    Arc::make_mut(kinds).insert(resolved.gvk.clone(), resolved);
                    changed = true;
                }
            }
            changed
        });
        Ok(())
    }

    /// Starts following CRDs (once): their kinds are added when established, removed when gone.
    fn follow_crds(&self) {
        self.inner.crd_follower.get_or_init(|| {
            let cache = self
                .inner
                .caches
                .acquire(&Resolved::crd(), &CachedFields::Whole);
            let kinds = self.inner.kinds.clone();
            AbortOnDrop(tokio::spawn(follow(cache, kinds)))
        });
    }
}

fn group_kinds(group: &ApiGroup) -> Vec<Resolved> {
    group
        .versions()
        .flat_map(|version| group.versioned_resources(version))
        .map(|(resource, caps)| Resolved::from_discovery(resource, &caps))
        .collect()
}

/// Keeps the kinds of CRDs in `kinds` as the CRD cache changes.
async fn follow(cache: Cache, kinds: watch::Sender<Kinds>) {
    let mut events = cache.subscribe();
    let mut learnt: HashMap<String, Vec<Resolved>> = HashMap::new();
    if cache.is_ready() {
        resync(&cache, &kinds, &mut learnt);
    }
    while let Some(event) = events.recv().await {
        match event {
            CacheEvent::Applied(crd) => learn(&kinds, &mut learnt, &crd, served_kinds(&crd)),
            CacheEvent::Deleted(crd) => learn(&kinds, &mut learnt, &crd, Vec::new()),
            CacheEvent::Resynced => resync(&cache, &kinds, &mut learnt),
        }
    }
}

fn resync(
    cache: &Cache,
    kinds: &watch::Sender<Kinds>,
    learnt: &mut HashMap<String, Vec<Resolved>>,
) {
    let crds = cache.list(&Default::default());
    let names: Vec<String> = crds
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    let gone: Vec<String> = learnt
        .keys()
        .filter(|n| !names.contains(n))
        .cloned()
        .collect();
    for name in gone {
        record(kinds, learnt, &name, Vec::new());
    }
    for crd in crds {
        learn(kinds, learnt, &crd, served_kinds(&crd));
    }
}

fn learn(
    kinds: &watch::Sender<Kinds>,
    learnt: &mut HashMap<String, Vec<Resolved>>,
    crd: &DynamicObject,
    served: Vec<Resolved>,
) {
    if let Some(name) = &crd.metadata.name {
        record(kinds, learnt, name, served);
    }
}

/// Records what one CRD serves now, removing the kinds it no longer serves.
fn record(
    kinds: &watch::Sender<Kinds>,
    learnt: &mut HashMap<String, Vec<Resolved>>,
    name: &str,
    served: Vec<Resolved>,
) {
    let before = learnt.remove(name).unwrap_or_default();
    kinds.send_if_modified(|kinds| {
        let mut changed = false;
        for old in before.iter().filter(|old| !served.contains(old)) {
            info!(gvk = %old.gvk, crd = name, "kind no longer served");
            changed |= Arc::make_mut(kinds).remove(&old.gvk).is_some();
        }
        for new in &served {
            if kinds.get(&new.gvk) != Some(new) {
                info!(gvk = %new.gvk, crd = name, "kind served");
                Arc::make_mut(kinds).insert(new.gvk.clone(), new.clone());
                changed = true;
            }
        }
        changed
    });
    if !served.is_empty() {
        learnt.insert(name.to_string(), served);
    }
}
