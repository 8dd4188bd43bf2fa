//! A set of cached objects by key (namespace and name): a hash table of the shared objects
//! themselves, hashed by their key. No copy of a key is kept (a B-tree kept one per object,
//! a leaf of some 600 bytes per controller in the index by controller), and a read hashes
//! the key once and compares it with one stored object's, where a B-tree search compares
//! it with a dozen, each a load from memory the CPU's caches may have let go of.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use kube::api::DynamicObject;

use crate::object::prefetch;

/// Objects by key; see the module doc. Keys come from the objects users create, so they
/// are hashed with SipHash, keyed per table. The whole key is hashed: a controller's table
/// may hold objects of one name in many namespaces (a cluster-scoped parent's children).
#[derive(Default)]
pub(super) struct ByKey {
    table: HashTable<Arc<DynamicObject>>,
    hasher: RandomState,
}

/// An object's key as stored: its namespace (`None`: cluster-scoped) and name.
pub(super) type Key<'a> = (Option<&'a str>, &'a str);

impl ByKey {
    /// The object with this key, which its reader is about to read: the object the hash
    /// finds (nearly always the one) starts loading while its key is compared.
    pub(super) fn get(&self, key: Key<'_>) -> Option<&Arc<DynamicObject>> {
        let found = |stored: &Arc<DynamicObject>| {
            prefetch::object(stored);
            key_of(stored) == key
        };
        self.table.find(self.hasher.hash_one(key), found)
    }

    /// Stores `object` under its key; returns the object it replaced.
    pub(super) fn insert(&mut self, object: Arc<DynamicObject>) -> Option<Arc<DynamicObject>> {
        let hasher = &self.hasher;
        let key = key_of(&object);
        let rehash = |stored: &Arc<DynamicObject>| hasher.hash_one(key_of(stored));
        match self.table.entry(hasher.hash_one(key), keyed(key), rehash) {
            Entry::Occupied(mut stored) => Some(std::mem::replace(stored.get_mut(), object)),
            Entry::Vacant(vacant) => {
                vacant.insert(object);
                None
            }
        }
    }

    /// Removes the object with this key; returns it.
    pub(super) fn remove(&mut self, key: Key<'_>) -> Option<Arc<DynamicObject>> {
        let found = self.table.find_entry(self.hasher.hash_one(key), keyed(key));
        found.ok().map(|stored| stored.remove().0)
    }

    /// The objects, in no particular order.
    pub(super) fn values(&self) -> impl Iterator<Item = &Arc<DynamicObject>> {
        self.table.iter()
    }

    /// Whether no object is stored.
    pub(super) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// The objects one controller controls. Most control one object of a kind: that one is
/// kept without a table (a table and its hasher are some 110 bytes more a controller).
pub(super) enum Controlled {
    /// The one object.
    One(Arc<DynamicObject>),
    /// More than one, in a table (kept until none is left).
    Many(Box<ByKey>),
}

impl Controlled {
    /// Stores `object` under its key, replacing the one with the same key.
    pub(super) fn insert(&mut self, object: Arc<DynamicObject>) {
        match self {
            Controlled::One(stored) if key_of(stored) == key_of(&object) => *stored = object,
            Controlled::One(stored) => {
                let mut many = Box::<ByKey>::default();
                many.insert(stored.clone());
                many.insert(object);
                *self = Controlled::Many(many);
            }
            Controlled::Many(many) => drop(many.insert(object)),
        }
    }

    /// Removes the object with this key; returns whether none is left.
    pub(super) fn remove(&mut self, key: Key<'_>) -> bool {
        match self {
            Controlled::One(stored) => key_of(stored) == key,
            Controlled::Many(many) => {
                many.remove(key);
                many.is_empty()
            }
        }
    }

    /// The objects, in no particular order.
    pub(super) fn values(&self) -> impl Iterator<Item = &Arc<DynamicObject>> {
        let (one, many) = match self {
            Controlled::One(object) => (Some(object), None),
            Controlled::Many(many) => (None, Some(many.values())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

/// The key an object is stored under (watched objects always have a name).
pub(super) fn key_of(object: &DynamicObject) -> Key<'_> {
    let metadata = &object.metadata;
    let name = metadata.name.as_deref().unwrap_or_default();
    (metadata.namespace.as_deref(), name)
}

/// Whether a stored object is the one with this key.
fn keyed(key: Key<'_>) -> impl Fn(&Arc<DynamicObject>) -> bool + '_ {
    move |stored| key_of(stored) == key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(namespace: Option<&str>, name: &str, version: &str) -> Arc<DynamicObject> {
        let mut object = crate::object::Gvk::new("", "v1", "ConfigMap").new_object(name);
        object.metadata.namespace = namespace.map(str::to_owned);
        object.metadata.resource_version = Some(version.into());
        Arc::new(object)
    }

    fn version(object: Option<&Arc<DynamicObject>>) -> Option<&str> {
        object.and_then(|o| o.metadata.resource_version.as_deref())
    }

    #[test]
    fn a_controller_keeps_one_object_without_a_table_and_more_in_one() {
        let names = |controlled: &Controlled| {
            let mut names: Vec<_> = controlled
                .values()
                .map(|o| key_of(o).1.to_owned())
                .collect();
            names.sort();
            names
        };
        let mut controlled = Controlled::One(object(Some("a"), "x", "1"));
        controlled.insert(object(Some("a"), "x", "2"));
        assert!(matches!(controlled, Controlled::One(ref o) if version(Some(o)) == Some("2")));
        assert!(!controlled.remove((Some("a"), "y")), "not there: x is left");
        controlled.insert(object(Some("a"), "y", "1"));
        controlled.insert(object(Some("b"), "x", "1"));
        assert!(matches!(controlled, Controlled::Many(_)));
        assert_eq!(names(&controlled), ["x", "x", "y"]);
        assert!(!controlled.remove((Some("a"), "x")));
        assert!(!controlled.remove((Some("a"), "y")));
        assert_eq!(names(&controlled), ["x"]);
        assert!(controlled.remove((Some("b"), "x")), "none left");
        let one = Controlled::One(object(Some("a"), "x", "1"));
        assert_eq!(names(&one), ["x"]);
        assert!(Controlled::One(object(Some("a"), "x", "1")).remove((Some("a"), "x")));
    }

    #[test]
    fn stores_replaces_and_removes_by_key() {
        let mut by_key = ByKey::default();
        let names: Vec<String> = (0..500).map(|i| format!("object-{i}")).collect();
        for name in &names {
            assert!(by_key.insert(object(Some("a"), name, "1")).is_none());
        }
        assert!(by_key.insert(object(Some("b"), "object-7", "1")).is_none());
        assert!(by_key.insert(object(None, "object-7", "1")).is_none());
        let replaced = by_key.insert(object(Some("a"), "object-7", "2"));
        assert_eq!(version(replaced.as_ref()), Some("1"));
        assert_eq!(version(by_key.get((Some("a"), "object-7"))), Some("2"));
        assert_eq!(version(by_key.get((Some("b"), "object-7"))), Some("1"));
        assert_eq!(by_key.values().count(), 502);
        for name in &names {
            assert!(by_key.remove((Some("a"), name)).is_some(), "{name}");
            assert!(by_key.get((Some("a"), name)).is_none(), "{name}");
        }
        assert!(
            by_key.remove((Some("a"), "object-0")).is_none(),
            "gone already"
        );
        assert!(by_key.get((None, "object-7")).is_some());
        assert!(by_key.remove((Some("b"), "object-7")).is_some());
        assert!(!by_key.is_empty());
        assert!(by_key.remove((None, "object-7")).is_some());
        assert!(by_key.is_empty());
    }
}
