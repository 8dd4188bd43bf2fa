use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
    time::Duration,
};

use dashmap::DashMap;
use kube::{
    api::DynamicObject,
    core::{Selector, SelectorExt},
};
use tokio::time::Instant;
use tracing::{debug, warn};

use super::{InvalidReference, Reference};
use crate::{
    client::{Client, Error, ListOptions},
    object::{GroupKind, Gvk, GvkError, ObjectKey},
};

/// One object, by group, kind, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ExactKey {
    group_kind: GroupKind,
    key: ObjectKey,
}

/// Observers of a group and kind by selector: observer → (selector, namespace) → (selector, expiry).
type SelectorLeases = HashMap<ObjectKey, HashMap<(String, Option<String>), (Selector, Instant)>>;

/// Records which observers (reconciled objects, by namespace/name) watch which objects, so
/// that a change to a watched object can requeue its observers.
///
/// Each track is a lease: it expires `lease` after it was last recorded (by default twice the
/// resync period, so a live observer renews it on every reconcile). Safe to share across tasks.
///
/// ```
/// use dynrec::{object::{GroupKind, ObjectKey}, tracker::{Reference, Tracker}};
/// use std::{collections::BTreeMap, time::Duration};
///
/// let tracker = Tracker::for_resync(Duration::from_secs(600));
/// let secret = GroupKind::new("", "Secret");
/// let observer = ObjectKey::namespaced("default", "my-app");
/// tracker.track_reference(&Reference::named(&secret, &ObjectKey::namespaced("default", "creds")), &observer)?;
/// let observers = tracker.observers_of(&secret, Some("default"), "creds", &BTreeMap::new());
/// assert_eq!(observers, [observer]);
/// # Ok::<(), dynrec::tracker::InvalidReference>(())
/// ```
pub struct Tracker {
    lease: Duration,
    exact: DashMap<ExactKey, HashMap<ObjectKey, Instant>>,
    inexact: DashMap<GroupKind, SelectorLeases>,
}

impl Tracker {
    /// A tracker whose tracks expire `lease` after they were recorded.
    pub fn new(lease: Duration) -> Self {
        Self {
            lease,
            exact: DashMap::new(),
            inexact: DashMap::new(),
        }
    }

    /// A tracker whose lease is twice the resync period.
    pub fn for_resync(resync: Duration) -> Self {
        Self::new(resync * 2)
    }

    /// How long a track lasts.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Records that `observer` watches the referenced object(s), renewing the lease.
    pub fn track_reference(
        &self,
        reference: &Reference,
        observer: &ObjectKey,
    ) -> Result<(), InvalidReference> {
        reference.validate()?;
        let expiry = Instant::now() + self.lease;
        let group_kind = reference.group_kind();
        if let Some(name) = &reference.name {
            let key = ObjectKey {
                namespace: reference.namespace.clone(),
                name: name.clone(),
            };
            debug!(%group_kind, object = %key, %observer, "tracking by name");
            let exact = ExactKey {
                group_kind: group_kind.clone(),
                key,
            };
            self.exact
                .entry(exact)
                .or_default()
                .insert(observer.clone(), expiry);
        }
        if let Some(selector) = &reference.selector {
            debug!(%group_kind, %selector, namespace = reference.namespace.as_deref(), %observer, "tracking by selector");
            let mut by_observer = self.inexact.entry(group_kind).or_default();
            let leases = by_observer.entry(observer.clone()).or_default();
            let key = (selector.to_string(), reference.namespace.clone());
            leases.insert(key, (selector.clone(), expiry));
        }
        Ok(())
    }

    /// Records that `observer` watches `object` (named by its kind, namespace and name).
    pub fn track_object(
        &self,
        object: &DynamicObject,
        observer: &ObjectKey,
    ) -> Result<(), InvalidReference> {
        let invalid = |problem: String| InvalidReference {
            problems: vec![problem],
        };
        let gvk = Gvk::of(object).map_err(|e| invalid(e.to_string()))?;
        let key = ObjectKey::of(object).map_err(|e| invalid(e.to_string()))?;
        self.track_reference(&Reference::named(&gvk.group_kind(), &key), observer)
    }

    /// Every unexpired track, as (what is watched, who watches it), in a stable order.
    pub fn tracks(&self) -> Vec<(Reference, ObjectKey)> {
        let now = Instant::now();
        let mut tracks = Vec::new();
        for entry in self.exact.iter() {
            let reference = Reference::named(&entry.key().group_kind, &entry.key().key);
            for (observer, expiry) in entry.value() {
                if *expiry > now {
                    tracks.push((reference.clone(), observer.clone()));
                }
            }
        }
        for entry in self.inexact.iter() {
            for (observer, leases) in entry.value() {
                for ((_, namespace), (selector, expiry)) in leases {
                    if *expiry > now {
                        let reference = Reference::selected(
                            entry.key(),
                            namespace.as_deref(),
                            selector.clone(),
                        );
                        tracks.push((reference, observer.clone()));
                    }
                }
            }
        }
        tracks.sort_by_key(|(reference, observer)| format!("{reference:?} {observer}"));
        tracks
    }

    /// The observers of an object (unexpired tracks by name, or by a matching selector).
    pub fn observers(&self, object: &DynamicObject) -> Result<Vec<ObjectKey>, GvkError> {
        let gvk = Gvk::of(object)?;
        let labels = object.metadata.labels.clone().unwrap_or_default();
        let name = object.metadata.name.as_deref().unwrap_or_default();
        Ok(self.observers_of(
            &gvk.group_kind(),
            object.metadata.namespace.as_deref(),
            name,
            &labels,
        ))
    }

    /// The observers of the object of this kind, namespace, name and labels; sorted.
    ///
    /// Expired tracks are dropped as they are found.
    pub fn observers_of(
        &self,
        group_kind: &GroupKind,
        namespace: Option<&str>,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<ObjectKey> {
        let now = Instant::now();
        let mut observers = BTreeSet::new();
        let exact = ExactKey {
            group_kind: group_kind.clone(),
            key: ObjectKey {
                namespace: namespace.map(str::to_string),
                name: name.to_string(),
            },
        };
        if let Some(mut leases) = self.exact.get_mut(&exact) {
            leases.retain(|_, expiry| *expiry > now);
            observers.extend(leases.keys().cloned());
        }
        self.exact.remove_if(&exact, |_, leases| leases.is_empty());
        if let Some(mut by_observer) = self.inexact.get_mut(group_kind) {
            for (observer, leases) in by_observer.iter_mut() {
                leases.retain(|_, (_, expiry)| *expiry > now);
                let matches = leases.iter().any(|((_, ns), (selector, _))| {
                    ns.as_deref().is_none_or(|ns| Some(ns) == namespace) && selector.matches(labels)
                });
                if matches {
                    observers.insert(observer.clone());
                }
            }
            by_observer.retain(|_, leases| !leases.is_empty());
        }
        self.inexact
            .remove_if(group_kind, |_, by_observer| by_observer.is_empty());
        observers.into_iter().collect()
    }

    /// Tracks the object, then reads it: a failed read (e.g. not found) still leaves the track.
    pub async fn track_and_get(
        &self,
        client: &Client,
        observer: &ObjectKey,
        gvk: &Gvk,
        key: &ObjectKey,
    ) -> Result<Arc<DynamicObject>, Error> {
        self.track_or_warn(&Reference::named(&gvk.group_kind(), key), observer);
        client.get(gvk, key).await
    }

    /// Tracks the objects the options select (all when no selector), then lists them;
    /// a failed list still leaves the track.
    pub async fn track_and_list(
        &self,
        client: &Client,
        observer: &ObjectKey,
        gvk: &Gvk,
        options: &ListOptions,
    ) -> Result<Vec<Arc<DynamicObject>>, Error> {
        let selector = options.selector.clone().unwrap_or_default();
        let reference =
            Reference::selected(&gvk.group_kind(), options.namespace.as_deref(), selector);
        self.track_or_warn(&reference, observer);
        client.list(gvk, options).await
    }

    /// Tracks, logging (not failing on) an invalid reference, as the read reports the real problem.
    fn track_or_warn(&self, reference: &Reference, observer: &ObjectKey) {
        if let Err(err) = self.track_reference(reference, observer) {
            warn!(%observer, %err, "not tracking");
        }
    }
}
