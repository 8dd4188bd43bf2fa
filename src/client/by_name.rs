//! The objects of one namespace (or the cluster-scoped ones) by name: a hash table of the
//! shared objects themselves, hashed by their name. No copy of a name is kept (a B-tree by
//! name kept one per object), and a read hashes the name once and compares it with one
//! stored object's, where a B-tree search compares it with a dozen names, each a load
//! from memory the CPU's caches may have let go of.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;

use hashbrown::HashTable;
use kube::api::DynamicObject;

/// Objects by name; see the module doc. Names come from the objects users create, so
/// they are hashed with SipHash, keyed per table.
#[derive(Default)]
pub(super) struct ByName {
    table: HashTable<Arc<DynamicObject>>,
    hasher: RandomState,
}

impl ByName {
    /// The object named `name`.
    pub(super) fn get(&self, name: &str) -> Option<&Arc<DynamicObject>> {
        self.table.find(self.hasher.hash_one(name), named(name))
    }

    /// Stores `object` under its name; returns the object it replaced.
    pub(super) fn insert(&mut self, object: Arc<DynamicObject>) -> Option<Arc<DynamicObject>> {
        let hasher = &self.hasher;
        let name = name_of(&object);
        let hash = hasher.hash_one(name);
        match self
            .table
            .entry(hash, named(name), |stored| hasher.hash_one(name_of(stored)))
        {
            hashbrown::hash_table::Entry::Occupied(mut stored) => {
                Some(std::mem::replace(stored.get_mut(), object))
            }
            hashbrown::hash_table::Entry::Vacant(vacant) => {
                vacant.insert(object);
                None
            }
        }
    }

    /// Removes the object named `name`; returns it.
    pub(super) fn remove(&mut self, name: &str) -> Option<Arc<DynamicObject>> {
        let found = self
            .table
            .find_entry(self.hasher.hash_one(name), named(name));
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

/// The name an object is stored under (watched objects always have one).
fn name_of(object: &DynamicObject) -> &str {
    object.metadata.name.as_deref().unwrap_or_default()
}

/// Whether a stored object is the one named `name`.
fn named(name: &str) -> impl Fn(&Arc<DynamicObject>) -> bool + '_ {
    move |stored| name_of(stored) == name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, version: &str) -> Arc<DynamicObject> {
        let mut object = crate::object::Gvk::new("", "v1", "ConfigMap").new_object(name);
        object.metadata.resource_version = Some(version.into());
        Arc::new(object)
    }

    fn version(object: Option<&Arc<DynamicObject>>) -> Option<&str> {
        object.and_then(|o| o.metadata.resource_version.as_deref())
    }

    #[test]
    fn stores_replaces_and_removes_by_name() {
        let mut by_name = ByName::default();
        let names: Vec<String> = (0..500).map(|i| format!("object-{i}")).collect();
        for name in &names {
            assert!(by_name.insert(object(name, "1")).is_none());
        }
        let replaced = by_name.insert(object("object-7", "2"));
        assert_eq!(version(replaced.as_ref()), Some("1"));
        assert_eq!(version(by_name.get("object-7")), Some("2"));
        assert_eq!(by_name.values().count(), 500);
        for name in &names[..499] {
            assert!(by_name.remove(name).is_some(), "{name}");
            assert!(by_name.get(name).is_none(), "{name}");
        }
        assert!(by_name.remove("object-0").is_none(), "gone already");
        assert!(by_name.get("object-499").is_some());
        assert!(!by_name.is_empty());
        assert!(by_name.remove("object-499").is_some());
        assert!(by_name.is_empty());
    }
}
