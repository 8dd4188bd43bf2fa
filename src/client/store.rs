//! The object store behind a shared cache: objects by namespace and name, and an index by
//! controller UID, kept consistent under one lock.
//!
//! Watcher events are applied as kube's reflector `Writer` applies them: `Apply` and
//! `Delete` change the live objects; `Init` starts a fresh set that `InitApply` fills and
//! `InitDone` swaps in whole, so an object a relist no longer returns disappears.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use kube::{api::DynamicObject, runtime::watcher::Event};
use parking_lot::{Mutex, RwLock};

use super::ListOptions;
use super::by_key::{self, ByKey, Controlled};
use super::list::controller_uids;
use crate::object::{ObjectKey, prefetch};

/// How many of a controller's objects a list starts loading ahead of reading them.
const PREFETCHED_CHILDREN: usize = 4;

/// The objects of one kind, indexed; see the module doc.
#[derive(Default)]
pub(super) struct Store {
    live: RwLock<Objects>,
    /// The relist being received, between `Init` and `InitDone`.
    relist: Mutex<Option<Objects>>,
}

impl Store {
    /// Applies a watcher event (see the module doc).
    pub(super) fn apply(&self, event: &Event<Arc<DynamicObject>>) {
        match event {
            Event::Apply(object) => self.live.write().insert(object.clone()),
            Event::Delete(object) => self.live.write().remove(by_key::key_of(object)),
            Event::Init => *self.relist.lock() = Some(Objects::default()),
            Event::InitApply(object) => {
                let mut relist = self.relist.lock();
                relist.get_or_insert_default().insert(object.clone());
            }
            Event::InitDone => {
                let listed = self.relist.lock().take().unwrap_or_default();
                let replaced = std::mem::replace(&mut *self.live.write(), listed);
                // The old objects are freed after the lock is released.
                drop(replaced);
            }
        }
    }

    /// The object with this key.
    pub(super) fn get(&self, key: &ObjectKey) -> Option<Arc<DynamicObject>> {
        let live = self.live.read();
        let found = match key.namespace.as_deref() {
            Some(ns) => live.namespaced.get(ns)?.get((Some(ns), &key.name)),
            None => live.cluster.get((None, &key.name)),
        };
        found.cloned()
    }

    /// The objects the options cover, in namespace and name order; see [`ListOptions`] for
    /// what each option costs.
    pub(super) fn list(&self, options: &ListOptions) -> Vec<Arc<DynamicObject>> {
        if let Some(uid) = &options.controlled_by {
            // The index holds only objects this UID controls.
            return self.controlled_by(uid, |object| options.matches_apart_from_controller(object));
        }
        let live = self.live.read();
        let covered = |object: &&Arc<DynamicObject>| options.matches(object);
        let listed: Vec<_> = match &options.namespace {
            Some(ns) => {
                let in_namespace = live.namespaced.get(ns).into_iter();
                let in_namespace = in_namespace.flat_map(ByKey::values).filter(covered);
                in_namespace.cloned().collect()
            }
            None => live.all().filter(covered).cloned().collect(),
        };
        drop(live);
        sorted(listed)
    }

    /// The objects `uid` controls that pass `covered`, in namespace and name order.
    pub(super) fn controlled_by(
        &self,
        uid: &str,
        covered: impl Fn(&DynamicObject) -> bool,
    ) -> Vec<Arc<DynamicObject>> {
        let live = self.live.read();
        let controlled = live.controlled.get(uid).into_iter();
        let controlled = controlled.flat_map(Controlled::values);
        // A controller's objects, about to be read: the first few start loading before
        // `covered` reads their namespace and labels.
        let controlled = controlled.enumerate().map(|(i, object)| {
            if i < PREFETCHED_CHILDREN {
                prefetch::object(object);
            }
            object
        });
        let listed = controlled
            .filter(|object| covered(object))
            .cloned()
            .collect();
        drop(live);
        sorted(listed)
    }

    /// Every object, in no particular order.
    pub(super) fn objects(&self) -> Vec<Arc<DynamicObject>> {
        self.live.read().all().cloned().collect()
    }

    /// How many objects are stored.
    pub(super) fn len(&self) -> usize {
        self.live.read().len
    }
}

/// What was listed, sorted by namespace and name (the tables keep no order); outside the
/// lock.
fn sorted(mut listed: Vec<Arc<DynamicObject>>) -> Vec<Arc<DynamicObject>> {
    listed.sort_unstable_by(|a, b| by_key::key_of(a).cmp(&by_key::key_of(b)));
    listed
}

/// One consistent set of objects and its indexes.
#[derive(Default)]
struct Objects {
    /// Cluster-scoped objects.
    cluster: ByKey,
    /// Namespaced objects by namespace (the index by namespace).
    namespaced: BTreeMap<String, ByKey>,
    /// Objects by the UID in their controller ownerReference. UIDs are the API server's, not
    /// chosen by users, hence the fast hasher.
    controlled: HashMap<Box<str>, Controlled, foldhash::fast::RandomState>,
    len: usize,
}

impl Objects {
    fn all(&self) -> impl Iterator<Item = &Arc<DynamicObject>> {
        let namespaced = self.namespaced.values().flat_map(ByKey::values);
        self.cluster.values().chain(namespaced)
    }

    /// Adds or replaces the object with the key of `object`.
    fn insert(&mut self, object: Arc<DynamicObject>) {
        let objects = match object.metadata.namespace.as_deref() {
            Some(ns) => self.namespaced.entry(ns.to_owned()).or_default(),
            None => &mut self.cluster,
        };
        match objects.insert(object.clone()) {
            Some(previous) => self.unindex(&previous),
            None => self.len += 1,
        }
        for uid in controller_uids(&object) {
            match self.controlled.get_mut(uid) {
                Some(controlled) => controlled.insert(object.clone()),
                None => drop(
                    self.controlled
                        .insert(uid.into(), Controlled::One(object.clone())),
                ),
            }
        }
    }

    /// Removes the object with this key, if stored.
    fn remove(&mut self, key: by_key::Key<'_>) {
        let removed = match key.0 {
            Some(ns) => {
                let Some(objects) = self.namespaced.get_mut(ns) else {
                    return;
                };
                let removed = objects.remove(key);
                if objects.is_empty() {
                    self.namespaced.remove(ns);
                }
                removed
            }
            None => self.cluster.remove(key),
        };
        if let Some(removed) = removed {
            self.len -= 1;
            self.unindex(&removed);
        }
    }

    /// Drops a stored object from the controller index.
    fn unindex(&mut self, object: &DynamicObject) {
        for uid in controller_uids(object) {
            if let Some(controlled) = self.controlled.get_mut(uid)
                && controlled.remove(by_key::key_of(object))
            {
                self.controlled.remove(uid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key_of(object: &DynamicObject) -> ObjectKey {
        ObjectKey::of(object).expect("test objects are named")
    }

    fn object(namespace: &str, name: &str, controller: Option<&str>) -> Arc<DynamicObject> {
        let owners: Vec<_> = controller
            .map(|uid| {
                json!({"apiVersion": "v1", "kind": "Owner", "name": "owner", "uid": uid,
                    "controller": true})
            })
            .into_iter()
            .collect();
        let object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"namespace": namespace, "name": name, "ownerReferences": owners},
        });
        Arc::new(serde_json::from_value(object).unwrap())
    }

    /// `namespace/name` of each listed object.
    fn keys(store: &Store, options: &ListOptions) -> Vec<String> {
        let listed = store.list(options);
        listed.iter().map(|o| key_of(o).to_string()).collect()
    }

    fn in_namespace(namespace: &str) -> ListOptions {
        ListOptions::default().namespace(namespace)
    }

    fn controlled_by(uid: &str) -> ListOptions {
        ListOptions::default().controlled_by(uid)
    }

    fn applied(objects: &[Arc<DynamicObject>]) -> Store {
        let store = Store::default();
        for object in objects {
            store.apply(&Event::Apply(object.clone()));
        }
        store
    }

    #[test]
    fn lists_through_the_namespace_and_controller_indexes() {
        let store = applied(&[
            object("a", "x", Some("u1")),
            object("a", "y", Some("u2")),
            object("b", "x", Some("u1")),
            object("b", "z", None),
        ]);
        assert_eq!(keys(&store, &in_namespace("a")), ["a/x", "a/y"]);
        assert_eq!(keys(&store, &controlled_by("u1")), ["a/x", "b/x"]);
        let both = controlled_by("u1").namespace("b");
        assert_eq!(keys(&store, &both), ["b/x"]);
        assert_eq!(keys(&store, &in_namespace("c")), Vec::<String>::new());
        assert_eq!(keys(&store, &controlled_by("u3")), Vec::<String>::new());
        let all = keys(&store, &ListOptions::default());
        assert_eq!(all, ["a/x", "a/y", "b/x", "b/z"]);
        let mut unordered: Vec<String> = store
            .objects()
            .iter()
            .map(|o| key_of(o).to_string())
            .collect();
        unordered.sort();
        assert_eq!(unordered, all, "every object, in some order");
        assert_eq!(store.len(), 4);
        let found = store.get(&ObjectKey::namespaced("b", "z"));
        assert_eq!(
            found.map(|o| key_of(&o)),
            Some(ObjectKey::namespaced("b", "z"))
        );
    }

    #[test]
    fn an_update_that_changes_the_controller_moves_the_object_between_indexes() {
        let store = applied(&[object("a", "x", Some("u1"))]);
        store.apply(&Event::Apply(object("a", "x", Some("u2"))));
        assert_eq!(keys(&store, &controlled_by("u1")), Vec::<String>::new());
        assert_eq!(keys(&store, &controlled_by("u2")), ["a/x"]);

        store.apply(&Event::Apply(object("a", "x", None)));
        assert_eq!(keys(&store, &controlled_by("u2")), Vec::<String>::new());
        assert_eq!(keys(&store, &in_namespace("a")), ["a/x"]);
        assert_eq!(store.len(), 1);
        let live = store.live.read();
        assert!(
            live.controlled.is_empty(),
            "no index entry for a gone controller"
        );
    }

    #[test]
    fn the_same_name_in_another_namespace_is_another_object() {
        // The namespace is part of an object's key (and immutable in Kubernetes): an
        // object "moves" by a delete in one namespace and an apply in the other.
        let store = applied(&[object("a", "x", Some("u1"))]);
        store.apply(&Event::Apply(object("b", "x", Some("u1"))));
        assert_eq!(keys(&store, &controlled_by("u1")), ["a/x", "b/x"]);
        store.apply(&Event::Delete(object("a", "x", Some("u1"))));
        assert_eq!(keys(&store, &in_namespace("a")), Vec::<String>::new());
        assert_eq!(keys(&store, &in_namespace("b")), ["b/x"]);
        assert_eq!(keys(&store, &controlled_by("u1")), ["b/x"]);
        assert!(!store.live.read().namespaced.contains_key("a"));
    }

    #[test]
    fn delete_uses_the_stored_object_to_unindex() {
        let store = applied(&[object("a", "x", Some("u1")), object("a", "y", None)]);
        // A delete event may carry a different last state than the one stored.
        store.apply(&Event::Delete(object("a", "x", None)));
        assert_eq!(keys(&store, &controlled_by("u1")), Vec::<String>::new());
        assert_eq!(keys(&store, &in_namespace("a")), ["a/y"]);
        assert_eq!(store.get(&ObjectKey::namespaced("a", "x")), None);
        store.apply(&Event::Delete(object("a", "gone", None)));
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn a_relist_replaces_everything_when_done() {
        let store = applied(&[
            object("a", "stays", Some("u1")),
            object("a", "vanishes", Some("u1")),
        ]);
        store.apply(&Event::Init);
        store.apply(&Event::InitApply(object("a", "stays", Some("u2"))));
        store.apply(&Event::InitApply(object("b", "new", Some("u1"))));
        assert_eq!(
            keys(&store, &ListOptions::default()),
            ["a/stays", "a/vanishes"],
            "readers see the old set until the relist is done"
        );

        store.apply(&Event::InitDone);
        assert_eq!(keys(&store, &ListOptions::default()), ["a/stays", "b/new"]);
        assert_eq!(keys(&store, &controlled_by("u1")), ["b/new"]);
        assert_eq!(keys(&store, &controlled_by("u2")), ["a/stays"]);
        assert_eq!(store.get(&ObjectKey::namespaced("a", "vanishes")), None);
        assert_eq!(store.len(), 2);

        store.apply(&Event::Init);
        store.apply(&Event::InitDone);
        assert_eq!(store.len(), 0, "an empty relist empties the store");
    }
}
