//! `Draft`: the resource a reconcile works on, shared with the cache until first changed.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use kube::api::DynamicObject;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::object::{Condition, ConditionFields, Fields, PathError, StatusExt};

/// The resource a reconciler works on: the object the root read, shared with the cache
/// until a reconciler first changes it (copy on write).
///
/// A `Draft` reads as the resource itself (`Deref`): `parent.metadata.name`,
/// `parent.data["spec"]`. The first write through it (`DerefMut`: an assignment, a `&mut`
/// method, passing `&mut *parent` on) copies the object once; later writes change the copy.
/// A reconcile that changes nothing copies nothing, and the root then knows without
/// comparing that there is no status to write. Conditions and `observedGeneration` set
/// through [`StatusExt`](crate::object::StatusExt), and fields set or removed through
/// [`Fields`](crate::object::Fields), on a draft copy only when they change.
///
/// ```
/// use dynrec::reconcilers::Draft;
/// # let widget: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({"spec": {"size": 3}}))?;
/// let cached = std::sync::Arc::new(widget);
/// let mut draft = Draft::shared(cached.clone());
/// assert_eq!(draft.data["spec"]["size"], 3); // a read: still the cached object
/// assert!(!draft.is_changed());
/// draft.data["spec"]["size"] = 4.into(); // the first write copies
/// assert!(draft.is_changed());
/// assert_eq!(cached.data["spec"]["size"], 3);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub struct Draft<R = DynamicObject> {
    object: Arc<R>,
    changed: bool,
}

impl<R> Draft<R> {
    /// A draft of an object of its own (changing it copies nothing).
    pub fn new(object: R) -> Self {
        Self {
            object: Arc::new(object),
            changed: false,
        }
    }

    /// A draft of a shared object (e.g. from a cache), copied on the first write.
    pub fn shared(object: Arc<R>) -> Self {
        Self {
            object,
            changed: false,
        }
    }

    /// Whether anything was written through this draft since it was made. A write that
    /// left the value as it was still counts.
    pub fn is_changed(&self) -> bool {
        self.changed
    }

    /// The object as it is now.
    pub fn get(&self) -> &R {
        &self.object
    }

    /// The object, to change: copies it first if it is still shared.
    pub fn to_mut(&mut self) -> &mut R
    where
        R: Clone,
    {
        self.changed = true;
        Arc::make_mut(&mut self.object)
    }

    /// The object as it is now, shared: the draft's next write copies it first, so the
    /// snapshot stays as it is.
    pub fn snapshot(&self) -> Arc<R> {
        self.object.clone()
    }

    /// The object, copied if still shared.
    pub fn into_inner(self) -> R
    where
        R: Clone,
    {
        Arc::unwrap_or_clone(self.object)
    }
}

impl<R> Deref for Draft<R> {
    type Target = R;

    fn deref(&self) -> &R {
        &self.object
    }
}

impl<R: Clone> DerefMut for Draft<R> {
    fn deref_mut(&mut self) -> &mut R {
        self.to_mut()
    }
}

impl<R> From<R> for Draft<R> {
    fn from(object: R) -> Self {
        Self::new(object)
    }
}

/// Serializes as the object it drafts.
impl<R: Serialize> Serialize for Draft<R> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.object.serialize(serializer)
    }
}

impl<R: fmt::Debug> fmt::Debug for Draft<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.object, f)
    }
}

/// Reads in place; a write copies the object only when it changes something.
impl StatusExt for Draft<DynamicObject> {
    fn conditions(&self) -> Result<Vec<Condition>, PathError> {
        self.get().conditions()
    }

    fn set_conditions(&mut self, conditions: Vec<Condition>) -> Result<(), PathError> {
        self.to_mut().set_conditions(conditions)
    }

    fn condition(&self, type_: &str) -> Result<Option<Condition>, PathError> {
        self.get().condition(type_)
    }

    fn condition_fields(&self, type_: &str) -> Result<Option<ConditionFields<'_>>, PathError> {
        self.get().condition_fields(type_)
    }

    fn set_condition(&mut self, condition: Condition, now: Timestamp) -> Result<bool, PathError> {
        if let Some(existing) = self.get().condition_fields(&condition.type_)?
            && existing.same_apart_from_time(&condition)
        {
            return Ok(false);
        }
        self.to_mut().set_condition(condition, now)
    }

    fn observed_generation(&self) -> Result<Option<i64>, PathError> {
        self.get().observed_generation()
    }

    fn set_observed_generation(&mut self, generation: i64) -> Result<(), PathError> {
        match self.get().observed_generation() {
            Ok(Some(observed)) if observed == generation => Ok(()),
            _ => self.to_mut().set_observed_generation(generation),
        }
    }

    fn observe_generation(&mut self) -> Result<(), PathError> {
        match self.metadata.generation {
            Some(generation) => self.set_observed_generation(generation),
            None => Ok(()),
        }
    }
}

/// Reads in place; `set_field` with the value already there and `remove_field` of an
/// absent field copy nothing.
impl Fields for Draft<DynamicObject> {
    fn field(&self, path: &str) -> Result<Option<&Value>, PathError> {
        self.get().field(path)
    }

    fn set_field(&mut self, path: &str, value: impl Into<Value>) -> Result<(), PathError> {
        let value = value.into();
        if self.get().field(path)? == Some(&value) {
            return Ok(());
        }
        self.to_mut().set_field(path, value)
    }

    fn remove_field(&mut self, path: &str) -> Result<Option<Value>, PathError> {
        match self.get().field(path)? {
            Some(_) => self.to_mut().remove_field(path),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_shares_and_the_first_write_copies_once() {
        let cached = Arc::new(vec![1, 2]);
        let mut draft = Draft::shared(cached.clone());
        assert_eq!(draft.len(), 2);
        assert!(Arc::ptr_eq(&draft.object, &cached));
        draft.push(3);
        let copy = Arc::as_ptr(&draft.object);
        draft.push(4);
        assert_eq!(
            Arc::as_ptr(&draft.object),
            copy,
            "the second write reuses the copy"
        );
        assert_eq!(*cached, vec![1, 2]);
        assert_eq!(draft.into_inner(), vec![1, 2, 3, 4]);
    }

    #[test]
    fn an_owned_draft_is_changed_in_place() {
        let mut draft = Draft::new(String::from("a"));
        let before = Arc::as_ptr(&draft.object);
        draft.push('b');
        assert_eq!(Arc::as_ptr(&draft.object), before);
        assert!(draft.is_changed());
    }

    fn widget() -> Arc<DynamicObject> {
        let widget = serde_json::json!({
            "metadata": {"name": "w", "generation": 2},
            "status": {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "True",
                "reason": "Ready", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
        });
        Arc::new(serde_json::from_value(widget).unwrap())
    }

    #[test]
    fn conditions_and_generation_as_they_are_copy_nothing() {
        let cached = widget();
        let mut draft = Draft::shared(cached.clone());
        let now = Timestamp::now();
        let ready = Condition {
            reason: Some("Ready".into()),
            ..Condition::new("Ready", "True")
        };
        assert!(!draft.set_condition(ready, now).unwrap());
        draft.observe_generation().unwrap();
        assert!(!draft.is_changed());
        assert!(Arc::ptr_eq(&draft.object, &cached));
    }

    #[test]
    fn fields_set_to_what_they_hold_copy_nothing() {
        let cached = widget();
        let mut draft = Draft::shared(cached.clone());
        draft.set_field("status.observedGeneration", 2).unwrap();
        assert_eq!(draft.remove_field("spec.absent").unwrap(), None);
        assert!(!draft.is_changed());
        assert!(Arc::ptr_eq(&draft.object, &cached));

        draft.set_field("status.observedGeneration", 3).unwrap();
        assert!(draft.is_changed());
        assert_eq!(
            draft.field_i64("status.observedGeneration").unwrap(),
            Some(3)
        );
        assert_eq!(
            cached.field_i64("status.observedGeneration").unwrap(),
            Some(2)
        );
        let mut draft = Draft::shared(cached.clone());
        assert!(
            draft
                .remove_field("status.observedGeneration")
                .unwrap()
                .is_some()
        );
        assert!(draft.is_changed() && cached.field("status.observedGeneration").unwrap().is_some());
    }

    #[test]
    fn a_changed_condition_or_generation_copies_and_leaves_the_cache_alone() {
        let cached = widget();
        let mut draft = Draft::shared(cached.clone());
        assert!(
            draft
                .set_condition(Condition::new("Ready", "False"), Timestamp::now())
                .unwrap()
        );
        assert!(draft.is_changed());
        assert_eq!(draft.condition("Ready").unwrap().unwrap().status, "False");
        assert_eq!(cached.condition("Ready").unwrap().unwrap().status, "True");

        let mut draft = Draft::shared(cached.clone());
        draft.set_observed_generation(3).unwrap();
        assert!(draft.is_changed());
        assert_eq!(draft.observed_generation().unwrap(), Some(3));
        assert_eq!(cached.observed_generation().unwrap(), Some(2));
    }
}
