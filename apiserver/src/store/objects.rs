//! The stored objects of every kind, the resourceVersion counter, the two indexes that
//! garbage collection reads (objects by uid, and dependents by the uid of their owner), and
//! the addresses and ports Services hold.
//! Objects are kept as their JSON ([`Encoded`]) and parsed where they are read.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::encoded::Encoded;
use super::service_allocations::ServiceAllocations;
use crate::meta;
use crate::resources::ResourceKey;

/// (namespace, name) of an object within its kind; namespace is "" for cluster-scoped kinds.
pub type ObjectKey = (String, String);

/// Where one object lives.
pub type Location = (ResourceKey, ObjectKey);

/// Every stored object, indexed by uid and by owner.
#[derive(Default)]
pub struct Objects {
    rv: u64,
    by_kind: HashMap<ResourceKey, BTreeMap<ObjectKey, Encoded>>,
    by_uid: HashMap<String, Location>,
    dependents: HashMap<String, BTreeSet<Location>>,
    services: ServiceAllocations,
}

/// The (namespace, name) an object is stored under.
fn object_key(object: &Value) -> ObjectKey {
    (
        meta::namespace(object).to_string(),
        meta::name(object).to_string(),
    )
}

/// Whether `key` is the core group's Services.
fn is_services(key: &ResourceKey) -> bool {
    key.group.is_empty() && key.plural == "services"
}

impl Objects {
    /// The latest resourceVersion handed out.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// Hands out the next resourceVersion.
    pub fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    /// Makes later resourceVersions come after `rv`.
    pub fn raise_rv(&mut self, rv: u64) {
        self.rv = self.rv.max(rv);
    }

    /// One object.
    pub fn get(&self, key: &ResourceKey, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.stored(key, namespace, name).map(Encoded::value)
    }

    /// One object, as stored.
    fn stored(&self, key: &ResourceKey, namespace: &str, name: &str) -> Option<&Encoded> {
        self.by_kind
            .get(key)?
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Objects of a kind in one namespace (or all, with `None`), in (namespace, name) order,
    /// starting after `after` when given.
    pub fn list<'a>(
        &'a self,
        key: &ResourceKey,
        namespace: Option<&str>,
        after: Option<&ObjectKey>,
    ) -> impl Iterator<Item = Arc<Value>> + use<'a> {
        self.list_stored(key, namespace, after).map(Encoded::value)
    }

    /// [`Objects::list`], as stored.
    pub fn list_stored<'a>(
        &'a self,
        key: &ResourceKey,
        namespace: Option<&str>,
        after: Option<&ObjectKey>,
    ) -> impl Iterator<Item = &'a Encoded> + use<'a> {
        use std::ops::Bound;
        let start = match (after, namespace) {
            (Some(after), _) => Bound::Excluded(after.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let ns = namespace.map(str::to_string);
        self.by_kind
            .get(key)
            .into_iter()
            .flat_map(move |objects| objects.range((start.clone(), Bound::Unbounded)))
            .take_while(move |((object_ns, _), _)| ns.as_ref().is_none_or(|ns| ns == object_ns))
            .map(|(_, object)| object)
    }

    /// Number of objects of a kind.
    pub fn count(&self, key: &ResourceKey) -> usize {
        self.by_kind.get(key).map_or(0, BTreeMap::len)
    }

    /// The kinds that have (or had) objects.
    pub fn kinds(&self) -> Vec<ResourceKey> {
        self.by_kind.keys().cloned().collect()
    }

    /// Stores `object`, encoded as `encoded` (new or in place of the one of its name),
    /// indexed; returns the one it replaced.
    pub fn put(&mut self, key: &ResourceKey, object: &Value, encoded: Encoded) -> Option<Encoded> {
        let object_key = object_key(object);
        let location = (key.clone(), object_key.clone());
        let previous = self.put_unindexed(key, object_key, encoded);
        if let Some(previous) = &previous {
            self.unindex(&previous.value(), &location);
        }
        self.index(object, location);
        previous
    }

    /// Removes the object of `object`'s name from the store and the indexes.
    pub fn remove(&mut self, key: &ResourceKey, object: &Value) -> Option<Encoded> {
        let object_key = object_key(object);
        let removed = self.by_kind.get_mut(key)?.remove(&object_key)?;
        self.unindex(&removed.value(), &(key.clone(), object_key));
        Some(removed)
    }

    /// Stores an object that shares its uid with another one (a mirror of it), so it enters
    /// neither index; returns the one it replaced.
    pub fn put_mirror(
        &mut self,
        key: &ResourceKey,
        object: &Value,
        encoded: Encoded,
    ) -> Option<Encoded> {
        self.put_unindexed(key, object_key(object), encoded)
    }

    /// Removes a mirror stored with [`Objects::put_mirror`].
    pub fn remove_mirror(&mut self, key: &ResourceKey, object: &Value) -> Option<Encoded> {
        self.by_kind
            .get_mut(key)
            .and_then(|objects| objects.remove(&object_key(object)))
    }

    /// Forgets every object of a kind that is no longer served.
    pub fn remove_kind(&mut self, key: &ResourceKey) {
        self.by_kind.remove(key);
        if is_services(key) {
            self.services = ServiceAllocations::default();
        }
    }

    /// The cluster IPs and node ports the stored Services hold.
    pub fn service_allocations(&self) -> &ServiceAllocations {
        &self.services
    }

    /// Whether an object with this uid is stored.
    pub fn has_uid(&self, uid: &str) -> bool {
        self.by_uid.contains_key(uid)
    }

    /// The object with this uid, and where it lives.
    pub fn by_uid(&self, uid: &str) -> Option<(Location, Arc<Value>)> {
        let location = self.by_uid.get(uid)?;
        let object = self.get(&location.0, &location.1.0, &location.1.1)?;
        Some((location.clone(), object))
    }

    /// Whether any stored object names this uid as an owner.
    pub fn has_dependents(&self, owner_uid: &str) -> bool {
        self.dependents.contains_key(owner_uid)
    }

    /// Where the objects naming this uid as an owner live.
    pub fn dependents_of(&self, owner_uid: &str) -> BTreeSet<Location> {
        self.dependents.get(owner_uid).cloned().unwrap_or_default()
    }

    fn put_unindexed(
        &mut self,
        key: &ResourceKey,
        object_key: ObjectKey,
        object: Encoded,
    ) -> Option<Encoded> {
        self.by_kind
            .entry(key.clone())
            .or_default()
            .insert(object_key, object)
    }

    fn index(&mut self, object: &Value, location: Location) {
        if is_services(&location.0) {
            self.services.add(object);
        }
        for (owner, _) in meta::owner_refs(object) {
            self.dependents
                .entry(owner)
                .or_default()
                .insert(location.clone());
        }
        self.by_uid.insert(meta::uid(object).to_string(), location);
    }

    fn unindex(&mut self, object: &Value, location: &Location) {
        if is_services(&location.0) {
            self.services.remove(object);
        }
        self.by_uid.remove(meta::uid(object));
        for (owner, _) in meta::owner_refs(object) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(location);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
    }
}
