//! `UpdatingObjectManager`: creates, updates (when `merge_before_update` changed something)
//! and deletes a managed object, with events on the resource it is managed for, an optional
//! finalizer on that resource, and a mutation cache that replays what the server changed on
//! the last update (defaults, admission mutations) onto the next desired object.
//!
//! Deliberate departures from reconciler.io:
//! - the mutation cache's generation guard compares the cached entry's generation with the
//!   actual object's, so it takes effect for kinds with a generation too (reconciler.io
//!   compares the desired object's generation with the server's, which rarely match);
//! - there is no `DangerouslyAllowDuckTypes`: every object is a `DynamicObject`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use kube::api::DynamicObject;
use parking_lot::Mutex;
use serde_json::Value;
use tracing::{debug, info};

use super::object_manager::{
    Write, child_name, prepare, present, record, report_write, require_for_children, track,
};
use super::steps::{Harmonize, Merge, Sanitize};
use super::{Context, Draft, ObjectManager, ReconcileError, Setup, ValidationError};
use crate::object::Gvk;

/// How long a captured mutation is replayed.
const MUTATION_TTL: Duration = Duration::from_secs(3600);

/// Creates, updates and deletes objects of one kind (reconciler.io's `UpdatingObjectManager`).
pub struct UpdatingObjectManager {
    name: String,
    child_type: Gvk,
    finalizer: String,
    track_desired: bool,
    merge_before_update: Box<dyn Merge>,
    harmonize_immutable_fields: Option<Box<dyn Harmonize>>,
    sanitize: Option<Box<dyn Sanitize>>,
    mutations: MutationCache,
}

impl UpdatingObjectManager {
    /// A manager of objects of `child_type` that, before an update, merges the desired object
    /// into a [`Draft`] of the current one with `merge_before_update` (`current`, `desired`);
    /// no change, no update (see [`Merge`] for a merge that copies nothing when in sync).
    pub fn new(child_type: Gvk, merge_before_update: impl Merge) -> Self {
        Self {
            name: format!("{}UpdatingObjectManager", child_type.kind),
            child_type,
            finalizer: String::new(),
            track_desired: false,
            merge_before_update: Box::new(merge_before_update),
            harmonize_immutable_fields: None,
            sanitize: None,
            mutations: MutationCache::default(),
        }
    }

    /// Names the manager (default `{Kind}UpdatingObjectManager`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Keeps `finalizer` on the resource while it has a managed object.
    pub fn finalizer(mut self, finalizer: impl Into<String>) -> Self {
        self.finalizer = finalizer.into();
        self
    }

    /// Tracks the managed object for the resource (for objects without owner references).
    pub fn track_desired(mut self, track: bool) -> Self {
        self.track_desired = track;
        self
    }

    /// Copies immutable fields of the current object onto the desired one before merging.
    pub fn harmonize_immutable_fields(mut self, harmonize: impl Harmonize) -> Self {
        self.harmonize_immutable_fields = Some(Box::new(harmonize));
        self
    }

    /// Logs objects through this projection (default: the whole object).
    pub fn sanitize(mut self, sanitize: impl Sanitize) -> Self {
        self.sanitize = Some(Box::new(sanitize));
        self
    }

    /// The loggable form of an object.
    fn loggable(&self, object: &DynamicObject) -> Value {
        match &self.sanitize {
            Some(sanitize) => sanitize(object),
            None => serde_json::to_value(object).unwrap_or_default(),
        }
    }

    /// `desired` with the mutation the server made on the last update of `actual` replayed.
    fn replay<'d>(
        &self,
        actual: &DynamicObject,
        desired: &'d DynamicObject,
    ) -> Cow<'d, DynamicObject> {
        let Some(uid) = actual.metadata.uid.as_deref() else {
            return Cow::Borrowed(desired);
        };
        let Some(mutation) = self.mutations.get(uid) else {
            return Cow::Borrowed(desired);
        };
        match mutation.apply(actual, desired) {
            Ok(patched) => Cow::Owned(patched),
            Err(err) => {
                debug!(manager = %self.name, %err, "unable to patch desired child from mutation cache, this error is usually benign");
                Cow::Borrowed(desired)
            }
        }
    }

    /// Remembers how the server changed `updated` compared with merging `desired` into it.
    fn capture(&self, merge: &dyn Merge, updated: &DynamicObject, desired: &DynamicObject) {
        let Some(uid) = updated.metadata.uid.clone() else {
            return;
        };
        let mut base = Draft::new(updated.clone());
        merge(&mut base, desired);
        match Mutation::between(&base, updated) {
            Ok(mutation) => self.mutations.put(uid, mutation),
            Err(err) => {
                debug!(manager = %self.name, %err, "unable to capture the server's mutation")
            }
        }
    }
}

#[async_trait]
impl ObjectManager for UpdatingObjectManager {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        require_for_children(
            setup,
            &self.name,
            &self.child_type,
            &self.finalizer,
            self.track_desired,
        );
        Ok(())
    }

    async fn manage(
        &self,
        ctx: &Context,
        resource: &mut Draft,
        actual: Option<&Arc<DynamicObject>>,
        desired: Option<&DynamicObject>,
    ) -> Result<Option<Arc<DynamicObject>>, ReconcileError> {
        let actual = present(actual);
        let Some(desired) = prepare(ctx, resource, &self.finalizer, actual, desired).await? else {
            return Ok(None);
        };
        let Some(actual) = actual else {
            // The writes are boxed: a request's future is large, and most calls write nothing.
            let created = Box::pin(self.create(ctx, resource, desired)).await?;
            return Ok(Some(Arc::new(created)));
        };
        // In a block: `merged` (half a kilobyte) would otherwise be kept in this future across
        // the update's await, after it moved into the update.
        let update = {
            let Some(merged) = self.merge(ctx, resource, actual, desired)? else {
                debug!(manager = %self.name, child = %self.loggable(actual), "resource is in sync, no update required");
                return Ok(Some(actual.clone()));
            };
            if ctx.config().client.reads(&self.child_type).is_whole() {
                Box::pin(self.update(ctx, resource, merged))
            } else {
                drop(merged);
                // Read from a projected cache: an update sends the whole object, so it is
                // merged into the whole object as the server has it.
                let whole = Box::pin(self.read_whole(ctx, actual)).await?;
                let Some(merged) = self.merge(ctx, resource, &whole, desired)? else {
                    return Ok(Some(whole));
                };
                Box::pin(self.update(ctx, resource, merged))
            }
        };
        Ok(Some(Arc::new(update.await?)))
    }
}

impl UpdatingObjectManager {
    /// The object `actual` is (read from a projected cache) as the API server has it.
    async fn read_whole(
        &self,
        ctx: &Context,
        actual: &DynamicObject,
    ) -> Result<Arc<DynamicObject>, ReconcileError> {
        let key = crate::object::ObjectKey::of(actual).map_err(ReconcileError::from_error)?;
        let api_reader = &ctx.config().api_reader;
        Ok(Arc::new(api_reader.get(&self.child_type, &key).await?))
    }
}

/// The actual child with the desired one merged into it, and the desired child as merged.
struct Merged<'d> {
    current: Draft,
    desired: Cow<'d, DynamicObject>,
}

impl UpdatingObjectManager {
    /// Creates the desired child.
    async fn create(
        &self,
        ctx: &Context,
        resource: &mut Draft,
        desired: &DynamicObject,
    ) -> Result<DynamicObject, ReconcileError> {
        info!(manager = %self.name, child = %child_name(desired), "creating child");
        debug!(manager = %self.name, body = %self.loggable(desired), "child to create");
        let created = ctx.config().client.create(desired).await;
        let created = report_write(ctx, resource, Write::Create, desired, created).await?;
        if self.track_desired {
            track(ctx, resource, &created)?;
        }
        record(ctx, resource, Write::Create.done(), &created).await;
        Ok(created)
    }

    /// Merges `desired` (its immutable fields harmonized, the server's last mutation
    /// replayed) into a draft of `actual`, which copies it on the merge's first write;
    /// `None` when the merge left `actual` as it is (in sync: nothing to return or copy). Not
    /// async: what it keeps would otherwise grow the future of every call.
    fn merge<'d>(
        &self,
        ctx: &Context,
        resource: &mut Draft,
        actual: &Arc<DynamicObject>,
        desired: &'d DynamicObject,
    ) -> Result<Option<Merged<'d>>, ReconcileError> {
        let desired = match &self.harmonize_immutable_fields {
            Some(harmonize) => {
                let mut copy = desired.clone();
                harmonize(actual, &mut copy);
                Cow::Owned(copy)
            }
            None => Cow::Borrowed(desired),
        };
        let patched = self.replay(actual, &desired);
        let mut current = Draft::shared(actual.clone());
        if self.track_desired {
            track(ctx, resource, &current)?;
        }
        (self.merge_before_update)(&mut current, &patched);
        drop(patched);
        // A merge that wrote nothing left the actual object as it was, uncopied.
        if !current.is_changed() || *current == **actual {
            return Ok(None);
        }
        Ok(Some(Merged { current, desired }))
    }

    /// Updates the child to the merged one.
    async fn update(
        &self,
        ctx: &Context,
        resource: &mut Draft,
        merged: Merged<'_>,
    ) -> Result<DynamicObject, ReconcileError> {
        let Merged { current, desired } = merged;
        let current = current.into_inner();
        info!(manager = %self.name, child = %child_name(&current), "updating child");
        debug!(manager = %self.name, body = %self.loggable(&current), "child to update");
        let updated = ctx.config().client.update(&current).await;
        let updated = report_write(ctx, resource, Write::Update, &current, updated).await?;
        self.capture(&self.merge_before_update, &updated, &desired);
        record(ctx, resource, Write::Update.done(), &updated).await;
        Ok(updated)
    }
}

/// The mutation cache: what the server changed on the last update, per object UID.
/// A read looks at one entry; expired entries are swept at most once a minute, when a new
/// one is put, so neither costs more as more children were updated within the hour.
#[derive(Default)]
struct MutationCache {
    entries: Mutex<Mutations>,
}

#[derive(Default)]
struct Mutations {
    by_uid: HashMap<String, Arc<Mutation>>,
    /// When expired entries are next swept (`None`: at the next put).
    next_sweep: Option<Instant>,
}

impl MutationCache {
    /// The unexpired mutation captured for `uid`.
    fn get(&self, uid: &str) -> Option<Arc<Mutation>> {
        let entries = self.entries.lock();
        let found = entries.by_uid.get(uid)?;
        (found.expires > Instant::now()).then(|| found.clone())
    }

    /// Remembers a mutation for `uid` for an hour.
    fn put(&self, uid: String, mutation: Mutation) {
        let mut entries = self.entries.lock();
        let now = Instant::now();
        if entries.next_sweep.is_none_or(|at| at <= now) {
            entries.by_uid.retain(|_, m| m.expires > now);
            entries.next_sweep = Some(now + SWEEP_INTERVAL);
        }
        entries.by_uid.insert(uid, Arc::new(mutation));
    }
}

/// How often expired mutations are swept from the cache.
const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// Why a captured mutation could not be replayed or captured.
#[derive(Debug, thiserror::Error)]
enum MutationError {
    /// The object changed generation since the mutation was captured.
    #[error("patch generation did not match target: captured at {captured}, object at {actual}")]
    GenerationMismatch { captured: i64, actual: i64 },
    /// An object could not be turned into JSON or back.
    #[error("cannot convert the object: {0}")]
    Json(#[from] serde_json::Error),
    /// An operation of the JSON Patch did not apply.
    #[error(transparent)]
    Patch(#[from] json_patch::PatchError),
}

/// An RFC 6902 JSON Patch from what was sent to what the server stored, and the generation
/// of the object it was captured on.
struct Mutation {
    generation: i64,
    patch: json_patch::Patch,
    expires: Instant,
}

impl Mutation {
    /// The patch that turns `base` into `updated`.
    fn between(base: &DynamicObject, updated: &DynamicObject) -> Result<Self, MutationError> {
        let patch = json_patch::diff(
            &serde_json::to_value(base)?,
            &serde_json::to_value(updated)?,
        );
        Ok(Self {
            generation: updated.metadata.generation.unwrap_or_default(),
            patch,
            expires: Instant::now() + MUTATION_TTL,
        })
    }

    /// `desired` with the patch applied, if `actual` is still at the captured generation.
    fn apply(
        &self,
        actual: &DynamicObject,
        desired: &DynamicObject,
    ) -> Result<DynamicObject, MutationError> {
        let actual_generation = actual.metadata.generation.unwrap_or_default();
        if actual_generation != self.generation {
            return Err(MutationError::GenerationMismatch {
                captured: self.generation,
                actual: actual_generation,
            });
        }
        let mut doc = serde_json::to_value(desired)?;
        json_patch::patch(&mut doc, &self.patch)?;
        Ok(crate::object::from_json(doc)?)
    }
}

/// reconciler.io's `TestPatch` (its marshal-error cases have no counterpart: a
/// `DynamicObject` always converts to JSON).
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(generation: i64, data: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "generation": generation},
            "data": data,
        }))
        .unwrap()
    }

    #[test]
    fn identity_changes_nothing() {
        let base = object(1, json!({"a": "1"}));
        let mutation = Mutation::between(&base, &base).unwrap();
        assert!(mutation.patch.0.is_empty());
        let desired = object(0, json!({"b": "2"}));
        assert_eq!(mutation.apply(&base, &desired).unwrap(), desired);
    }

    #[test]
    fn rebase_keeps_the_desired_fields_and_adds_the_servers() {
        let sent = object(1, json!({"a": "1"}));
        let stored = object(1, json!({"a": "1", "server": "default"}));
        let mutation = Mutation::between(&sent, &stored).unwrap();
        let desired = object(0, json!({"a": "1", "c": "3"}));
        let patched = mutation.apply(&stored, &desired).unwrap();
        assert_eq!(
            patched.data["data"],
            json!({"a": "1", "c": "3", "server": "default"})
        );
    }

    #[test]
    fn another_generation_is_a_mismatch() {
        let stored = object(2, json!({"a": "1"}));
        let mutation = Mutation::between(&object(2, json!({})), &stored).unwrap();
        let err = mutation.apply(&object(3, json!({})), &stored).unwrap_err();
        assert_eq!(
            err.to_string(),
            "patch generation did not match target: captured at 2, object at 3"
        );
    }

    #[test]
    fn an_operation_on_a_missing_path_fails() {
        let mutation =
            Mutation::between(&object(1, json!({"x": "1"})), &object(1, json!({"x": "2"})))
                .unwrap();
        let desired = object(0, json!({}));
        let err = mutation.apply(&object(1, json!({})), &desired).unwrap_err();
        assert!(matches!(err, MutationError::Patch(_)), "{err}");
    }
}
