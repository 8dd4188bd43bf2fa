//! What follows a deletion: garbage collection of dependents (also of a dependent written
//! with an owner that is already gone), foreground deletion,
//! namespace termination and CRD clean-up. It runs synchronously, inside the write that
//! triggered it, so its effects are visible as soon as that write is answered.

use std::sync::Arc;

use serde_json::Value;

use super::aggregation::cluster_roles_key;
use super::crd::{self, CRD_CLEANUP_FINALIZER};
use super::delete::{FOREGROUND_FINALIZER, Propagation};
use super::events::events_v1_key;
use super::gc_queue::Work;
use super::kind_rules::NAMESPACE_FINALIZER;
use super::objects::Location;
use super::state::State;
use crate::meta;
use crate::resources::{ResourceKey, crd_resource_key, namespace_resource_key};

impl State {
    /// Queues what the removal of `last` (of kind `key`) may set off.
    pub(super) fn after_removal(&mut self, key: &ResourceKey, last: &Arc<Value>) {
        if *key == cluster_roles_key() {
            self.aggregate_cluster_roles();
        }
        self.queue_autoscalers_after_removal(key, last);
        let uid = meta::uid(last).to_string();
        if self.objects.has_dependents(&uid) {
            self.gc_queue.push(Work::OwnerGone(uid));
        }
        for (owner, _) in meta::owner_refs(last) {
            if self.objects.has_uid(&owner) {
                self.gc_queue.push(Work::Foreground(owner));
            }
        }
        let namespace = meta::namespace(last);
        if !namespace.is_empty()
            && self
                .namespace(namespace)
                .is_some_and(|ns| meta::is_deleting(&ns))
        {
            self.gc_queue.push(Work::Namespace(namespace.to_string()));
        }
        let crd_name = format!("{}.{}", key.plural, key.group);
        if self
            .get(&crd_resource_key(), "", &crd_name)
            .is_some_and(|crd| meta::is_deleting(&crd))
        {
            self.gc_queue.push(Work::Crd(crd_name));
        }
        if *key == crd_resource_key() {
            self.crd_removed(last);
        }
        if *key == events_v1_key() {
            self.remove_event_mirror(last);
        }
    }

    /// Queues the collection of a written dependent when an owner it newly names does not
    /// exist (by uid: an owner of that name with another uid is gone too), as kube's
    /// collector checks every owner a dependent gains, not only owners being deleted. The
    /// references `previous` (the dependent before the write) already had were checked then.
    pub(super) fn check_new_owners(&mut self, previous: Option<&Value>, written: &Value) {
        let known: Vec<String> = previous
            .map(|p| {
                meta::owner_refs(p)
                    .into_iter()
                    .map(|(uid, _)| uid)
                    .collect()
            })
            .unwrap_or_default();
        for (owner, _) in meta::owner_refs(written) {
            if !known.contains(&owner) && !self.objects.has_uid(&owner) {
                self.gc_queue.push(Work::OwnerGone(owner));
            }
        }
    }

    /// Runs queued follow-up work until none is left: garbage collection, then the
    /// autoscalers.
    pub(super) fn run_pending(&mut self) {
        while let Some(work) = self.gc_queue.pop() {
            match work {
                Work::OwnerGone(uid) => self.collect_dependents_of(&uid),
                Work::Foreground(uid) => self.advance_foreground(&uid),
                Work::Namespace(name) => self.advance_namespace(&name),
                Work::Crd(name) => self.advance_crd(&name),
            }
        }
        self.run_autoscalers();
    }

    fn live_object(&self, location: &Location) -> Option<Arc<Value>> {
        self.get(&location.0, &location.1.0, &location.1.1)
    }

    /// Deletes dependents whose owners are all gone; drops dangling references from the rest.
    fn collect_dependents_of(&mut self, owner_uid: &str) {
        let dependents = self.objects.dependents_of(owner_uid);
        for location in dependents {
            let Some(dependent) = self.live_object(&location) else {
                continue;
            };
            let has_live_owner = meta::owner_refs(&dependent)
                .iter()
                .any(|(uid, _)| self.objects.has_uid(uid));
            if has_live_owner {
                let mut changed = (*dependent).clone();
                meta::retain_owner_refs(&mut changed, |uid| self.objects.has_uid(uid));
                self.rewrite(&location.0, changed);
            } else if !meta::is_deleting(&dependent) {
                self.delete_object(&location.0, &dependent, Propagation::Background);
            }
        }
    }

    /// Deletes the dependents of a foreground-deleted owner, and releases the owner once no
    /// dependent that blocks owner deletion is left.
    fn advance_foreground(&mut self, owner_uid: &str) {
        let Some((owner_location, owner)) = self.objects.by_uid(owner_uid) else {
            return;
        };
        let waiting = meta::finalizers(&owner)
            .iter()
            .any(|f| f == FOREGROUND_FINALIZER);
        if !meta::is_deleting(&owner) || !waiting {
            return;
        }
        let dependents = self.objects.dependents_of(owner_uid);
        let mut blocked = false;
        for location in dependents {
            if let Some(dependent) = self.live_object(&location)
                && !meta::is_deleting(&dependent)
            {
                self.delete_object(&location.0, &dependent, Propagation::Foreground);
            }
            if let Some(dependent) = self.live_object(&location) {
                blocked |= meta::owner_refs(&dependent)
                    .iter()
                    .any(|(uid, blocks)| uid == owner_uid && *blocks);
            }
        }
        if blocked {
            return;
        }
        if let Some(owner) = self.live_object(&owner_location) {
            let mut released = (*owner).clone();
            let remaining: Vec<String> = meta::finalizers(&owner)
                .into_iter()
                .filter(|f| f != FOREGROUND_FINALIZER)
                .collect();
            meta::set_finalizers(&mut released, &remaining);
            self.rewrite(&owner_location.0, released);
        }
    }

    /// Deletes everything in a terminating namespace, then the namespace itself.
    fn advance_namespace(&mut self, name: &str) {
        let Some(namespace) = self.namespace(name) else {
            return;
        };
        if !meta::is_deleting(&namespace) {
            return;
        }
        let mut empty = true;
        for key in self.objects.kinds() {
            let contents: Vec<Arc<Value>> = self.objects.list(&key, Some(name), None).collect();
            for object in contents {
                if !meta::is_deleting(&object) {
                    self.delete_object(&key, &object, Propagation::Background);
                }
            }
            empty &= self.objects.list(&key, Some(name), None).next().is_none();
        }
        if !empty {
            return;
        }
        if let Some(namespace) = self.namespace(name) {
            let mut finished = (*namespace).clone();
            let spec_finalizers: Vec<String> = meta::string_list(&finished["spec"]["finalizers"])
                .into_iter()
                .filter(|f| f != NAMESPACE_FINALIZER)
                .collect();
            finished["spec"]["finalizers"] = Value::from(spec_finalizers);
            self.rewrite(&namespace_resource_key(), finished);
        }
    }

    /// Deletes every instance of a CRD being deleted, then releases the CRD.
    fn advance_crd(&mut self, name: &str) {
        let Some(crd) = self.get(&crd_resource_key(), "", name) else {
            return;
        };
        if !meta::is_deleting(&crd) {
            return;
        }
        let key = crd::custom_key(&crd);
        // A CRD whose names clashed never served its kind: what is stored there is not its.
        let instances: Vec<Arc<Value>> = if crd::names_accepted(&crd) {
            self.objects.list(&key, None, None).collect()
        } else {
            Vec::new()
        };
        for object in instances {
            if !meta::is_deleting(&object) {
                self.delete_object(&key, &object, Propagation::Background);
            }
        }
        if crd::names_accepted(&crd) && self.objects.count(&key) > 0 {
            return;
        }
        if let Some(crd) = self.get(&crd_resource_key(), "", name) {
            let mut released = (*crd).clone();
            let remaining: Vec<String> = meta::finalizers(&crd)
                .into_iter()
                .filter(|f| f != CRD_CLEANUP_FINALIZER)
                .collect();
            meta::set_finalizers(&mut released, &remaining);
            self.rewrite(&crd_resource_key(), released);
        }
    }
}
