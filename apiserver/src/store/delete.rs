//! Deletion: preconditions, finalizers and deletionTimestamp, and propagation policies.

use std::sync::Arc;

use serde_json::Value;

use super::gc_queue::Work;
use super::state::State;
use super::watch::ChangeKind;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::resources::{ResourceInfo, ResourceKey, crd_resource_key, namespace_resource_key};

/// The namespaces kube's NamespaceLifecycle admission plugin refuses to delete.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The finalizer that holds an owner until its blocking dependents are gone.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// What happens to an object's dependents when it is deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Propagation {
    /// Delete the owner now; collect dependents afterwards.
    #[default]
    Background,
    /// Keep the owner (with the `foregroundDeletion` finalizer) until blocking dependents are gone.
    Foreground,
    /// Remove the owner's references from its dependents and keep them.
    Orphan,
}

/// Options of a delete request (`DeleteOptions`).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `propagationPolicy` (or the legacy `orphanDependents`).
    pub propagation: Option<Propagation>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_rv: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

/// What a delete did.
#[derive(Clone, Debug)]
pub enum DeleteOutcome {
    /// The object is gone; its last state.
    Removed(Arc<Value>),
    /// The object is being deleted and waits for finalizers; its current state.
    Pending(Arc<Value>),
}

impl DeleteOutcome {
    /// The object the response carries.
    pub fn object(&self) -> &Arc<Value> {
        match self {
            DeleteOutcome::Removed(o) | DeleteOutcome::Pending(o) => o,
        }
    }
}

impl State {
    /// Deletes one object, as `DELETE .../name` does.
    pub fn delete(
        &mut self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> ApiResult<DeleteOutcome> {
        if info.key() == namespace_resource_key() && IMMORTAL_NAMESPACES.contains(&name) {
            return Err(ApiError::forbidden(
                info,
                name,
                "this namespace may not be deleted",
            ));
        }
        let old = self
            .get(&info.key(), namespace, name)
            .ok_or_else(|| ApiError::not_found(info, name))?;
        check_preconditions(info, &old, options)?;
        if options.dry_run {
            let foreground = options.propagation == Some(Propagation::Foreground);
            return Ok(if foreground || lingers(&info.key(), &old) {
                DeleteOutcome::Pending(old)
            } else {
                DeleteOutcome::Removed(old)
            });
        }
        let outcome =
            self.delete_object(&info.key(), &old, options.propagation.unwrap_or_default());
        self.run_pending();
        Ok(outcome)
    }

    /// Starts or completes the deletion of a stored object.
    pub(super) fn delete_object(
        &mut self,
        key: &ResourceKey,
        old: &Arc<Value>,
        propagation: Propagation,
    ) -> DeleteOutcome {
        let uid = meta::uid(old).to_string();
        if propagation == Propagation::Orphan {
            self.orphan_dependents(&uid);
        }
        let mut finalizers = meta::finalizers(old);
        if propagation == Propagation::Foreground
            && !finalizers.iter().any(|f| f == FOREGROUND_FINALIZER)
        {
            finalizers.push(FOREGROUND_FINALIZER.to_string());
        }
        let mut object = (**old).clone();
        meta::set_finalizers(&mut object, &finalizers);
        if !lingers(key, &object) {
            return DeleteOutcome::Removed(self.commit_remove(key, object));
        }
        if meta::is_deleting(old) && finalizers == meta::finalizers(old) {
            return DeleteOutcome::Pending(old.clone());
        }
        if !meta::is_deleting(old) {
            meta::set_meta(
                &mut object,
                "deletionTimestamp",
                Value::from(meta::now_rfc3339()),
            );
            meta::set_meta(&mut object, "deletionGracePeriodSeconds", Value::from(0));
            // As kube's markAsDeleting: a kind that keeps a generation moves to the next.
            if let Some(generation) = object["metadata"]["generation"].as_i64().filter(|g| *g > 0) {
                meta::set_meta(&mut object, "generation", Value::from(generation + 1));
            }
            self.mark_terminating(key, &mut object);
        }
        let rv = self.objects.next_rv();
        meta::set_meta(&mut object, "resourceVersion", Value::from(rv.to_string()));
        let stored = self.commit_put(key, object, ChangeKind::Modified);
        if propagation == Propagation::Foreground {
            self.gc_queue.push(Work::Foreground(uid));
        }
        if *key == namespace_resource_key() {
            self.gc_queue
                .push(Work::Namespace(meta::name(&stored).to_string()));
        }
        if *key == crd_resource_key() {
            self.gc_queue
                .push(Work::Crd(meta::name(&stored).to_string()));
        }
        DeleteOutcome::Pending(stored)
    }

    /// Writes a changed object back; removes it when it is being deleted and nothing holds it.
    pub(super) fn rewrite(&mut self, key: &ResourceKey, mut object: Value) -> Arc<Value> {
        if meta::is_deleting(&object) && !lingers(key, &object) {
            return self.commit_remove(key, object);
        }
        let rv = self.objects.next_rv();
        meta::set_meta(&mut object, "resourceVersion", Value::from(rv.to_string()));
        self.commit_put(key, object, ChangeKind::Modified)
    }

    /// Removes references to `owner_uid` from every dependent.
    fn orphan_dependents(&mut self, owner_uid: &str) {
        let dependents = self.objects.dependents_of(owner_uid);
        for (key, (namespace, name)) in dependents {
            if let Some(dependent) = self.get(&key, &namespace, &name) {
                let mut changed = (*dependent).clone();
                meta::retain_owner_refs(&mut changed, |uid| uid != owner_uid);
                self.rewrite(&key, changed);
            }
        }
    }
}

/// Whether an object must stay (as terminating) instead of being removed.
pub(super) fn lingers(key: &ResourceKey, object: &Value) -> bool {
    !meta::finalizers(object).is_empty()
        || (*key == namespace_resource_key()
            && !meta::string_list(&object["spec"]["finalizers"]).is_empty())
}

fn check_preconditions(info: &ResourceInfo, old: &Value, options: &DeleteOptions) -> ApiResult<()> {
    let name = meta::name(old);
    if let Some(uid) = options.precondition_uid.as_deref()
        && uid != meta::uid(old)
    {
        return Err(ApiError::conflict(
            info,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta::uid(old)
            ),
        ));
    }
    if let Some(rv) = options.precondition_rv.as_deref()
        && rv != meta::resource_version(old)
    {
        return Err(ApiError::conflict(
            info,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                meta::resource_version(old)
            ),
        ));
    }
    Ok(())
}
