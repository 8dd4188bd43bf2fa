//! Condition sets (reconciler.io `apis.ConditionSet`): a happy condition (`Ready` or
//! `Succeeded`) that summarizes dependent conditions, managed on `status.conditions[]` of
//! any object.
//!
//! Unlike reconciler.io, which skips unstructured objects, this works on every
//! `DynamicObject`: an object without `status` gets one, and other status fields are left
//! alone.

use jiff::Timestamp;

use super::{Condition, ConditionFields, PathError, StatusExt};

/// The happy condition type of long-running resources.
pub const READY: &str = "Ready";
/// The happy condition type of resources that run to completion.
pub const SUCCEEDED: &str = "Succeeded";
/// The reason of conditions added by [`ConditionManager::initialize`].
pub const INITIALIZING: &str = "Initializing";

const TRUE: &str = "True";
const FALSE: &str = "False";
const UNKNOWN: &str = "Unknown";

/// Conditions could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum ConditionError {
    /// `status.conditions` is malformed or could not be written.
    #[error(transparent)]
    Path(#[from] PathError),
    /// The happy condition and its dependents cannot be cleared.
    #[error("clearing terminal condition {0:?} is not implemented")]
    ClearTerminal(String),
}

/// The condition types a kind exposes: a happy condition and the dependents it summarizes.
///
/// ```
/// use dynrec::object::{ConditionSet, StatusExt};
/// # let mut obj: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({"spec": {}}))?;
/// let set = ConditionSet::living(&["Deployment"]);
/// let mut conditions = set.manage(&mut obj, jiff::Timestamp::now());
/// conditions.initialize()?;
/// conditions.mark_true("Deployment", "Available", "")?;
/// assert!(conditions.is_happy()?);
/// assert_eq!(obj.condition("Ready")?.map(|c| c.status), Some("True".to_string()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionSet {
    happy: String,
    happy_reason: String,
    dependents: Vec<String>,
}

impl ConditionSet {
    /// A set whose happy condition is `happy` (with reason `happy`), summarizing `dependents`.
    ///
    /// Dependents are deduplicated and the happy type is left out of them.
    pub fn new(happy: &str, dependents: &[&str]) -> Self {
        let mut deps: Vec<String> = Vec::with_capacity(dependents.len());
        for &dep in dependents {
            if dep != happy && !deps.iter().any(|d| d == dep) {
                deps.push(dep.to_owned());
            }
        }
        Self {
            happy: happy.to_owned(),
            happy_reason: happy.to_owned(),
            dependents: deps,
        }
    }

    /// A set for long-running resources: happy condition and reason `Ready`.
    pub fn living(dependents: &[&str]) -> Self {
        Self::new(READY, dependents)
    }

    /// A set for resources that run to completion: happy condition and reason `Succeeded`.
    pub fn batch(dependents: &[&str]) -> Self {
        Self::new(SUCCEEDED, dependents)
    }

    /// The same set, with `reason` on the happy condition when every dependent is true.
    pub fn with_happy_reason(self, reason: impl Into<String>) -> Self {
        Self {
            happy_reason: reason.into(),
            ..self
        }
    }

    /// The happy condition type.
    pub fn happy(&self) -> &str {
        &self.happy
    }

    /// The reason set on the happy condition when every dependent is true.
    pub fn happy_reason(&self) -> &str {
        &self.happy_reason
    }

    /// The dependent condition types, in declaration order.
    pub fn dependents(&self) -> &[String] {
        &self.dependents
    }

    /// Manages the conditions of `object`, stamping transitions with `now`.
    pub fn manage<'a, S: StatusExt + ?Sized>(
        &'a self,
        object: &'a mut S,
        now: Timestamp,
    ) -> ConditionManager<'a, S> {
        ConditionManager {
            set: self,
            object,
            now,
        }
    }

    fn is_terminal(&self, type_: &str) -> bool {
        type_ == self.happy || self.is_dependent(type_)
    }

    fn is_dependent(&self, type_: &str) -> bool {
        self.dependents.iter().any(|d| d == type_)
    }
}

/// Higher-order operations on an object's conditions (reconciler.io `ConditionManager`).
pub struct ConditionManager<'a, S: ?Sized> {
    set: &'a ConditionSet,
    object: &'a mut S,
    now: Timestamp,
}

impl<S: StatusExt + ?Sized> ConditionManager<'_, S> {
    /// Whether the happy condition is `True`.
    pub fn is_happy(&self) -> Result<bool, ConditionError> {
        Ok(is_true(self.get_condition(&self.set.happy)?.as_ref()))
    }

    /// The condition of this type, if any.
    pub fn get_condition(&self, type_: &str) -> Result<Option<Condition>, ConditionError> {
        Ok(self.object.condition(type_)?)
    }

    /// Sets a condition (see [`StatusExt::set_condition`]); returns whether anything changed.
    ///
    /// An absent reason or message and an empty one are the same, as in Go.
    pub fn set_condition(&mut self, mut condition: Condition) -> Result<bool, ConditionError> {
        if let Some(old) = self.object.condition_fields(&condition.type_)? {
            adopt_empty(&mut condition.reason, old.reason());
            adopt_empty(&mut condition.message, old.message());
            // What `StatusExt::set_condition` would find, without reading the old one again.
            if old.same_apart_from_time(&condition) {
                return Ok(false);
            }
        }
        Ok(self.object.set_condition(condition, self.now)?)
    }

    /// Removes a condition that is neither the happy condition nor a dependent.
    ///
    /// Returns whether it was there; the remaining conditions are sorted by type.
    pub fn clear_condition(&mut self, type_: &str) -> Result<bool, ConditionError> {
        if self.set.is_terminal(type_) {
            return Err(ConditionError::ClearTerminal(type_.to_owned()));
        }
        let mut conditions = self.object.conditions()?;
        let before = conditions.len();
        conditions.retain(|c| c.type_ != type_);
        if conditions.len() == before {
            return Ok(false);
        }
        conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
        self.object.set_conditions(conditions)?;
        Ok(true)
    }

    /// Sets `type_` to `True`; then, if the set has dependents and all are `True`, so is
    /// the happy condition (with the happy reason and no message).
    pub fn mark_true(
        &mut self,
        type_: &str,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<(), ConditionError> {
        let set = self.set;
        self.mark(type_, TRUE, reason, message.into())?;
        if set.dependents.is_empty() {
            return Ok(());
        }
        for dep in &set.dependents {
            if !is_true(self.get_condition(dep)?.as_ref()) {
                return Ok(());
            }
        }
        self.mark(&set.happy, TRUE, &set.happy_reason, String::new())?;
        Ok(())
    }

    /// Sets `type_` to `False`; if it is a dependent, the happy condition too.
    pub fn mark_false(
        &mut self,
        type_: &str,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<(), ConditionError> {
        let set = self.set;
        let message = message.into();
        if set.is_dependent(type_) {
            self.mark(type_, FALSE, reason, message.clone())?;
            self.mark(&set.happy, FALSE, reason, message)?;
        } else {
            self.mark(type_, FALSE, reason, message)?;
        }
        Ok(())
    }

    /// Sets `type_` to `Unknown`; then the happy condition becomes `False` if a dependent
    /// is `False`, else `Unknown` if `type_` is a dependent (with `type_`'s reason and message).
    pub fn mark_unknown(
        &mut self,
        type_: &str,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<(), ConditionError> {
        let set = self.set;
        let message = message.into();
        self.mark(type_, UNKNOWN, reason, message.clone())?;
        if set.dependents.is_empty() {
            return Ok(());
        }
        for dep in &set.dependents {
            if is_false(self.get_condition(dep)?.as_ref()) {
                if !is_false(self.get_condition(&set.happy)?.as_ref()) {
                    self.mark_false(&set.happy, reason, message)?;
                }
                return Ok(());
            }
        }
        if set.is_dependent(type_) {
            self.mark(&set.happy, UNKNOWN, reason, message)?;
        }
        Ok(())
    }

    /// Adds the happy condition (`Unknown`) if missing, then each missing dependent, `True`
    /// if the happy condition is `True` and `Unknown` otherwise; all with reason
    /// `Initializing`.
    pub fn initialize(&mut self) -> Result<(), ConditionError> {
        let set = self.set;
        let happy = self.object.condition_fields(&set.happy)?;
        let happy = happy.as_ref().map(ConditionFields::is_true);
        if happy.is_none() {
            self.set_condition(condition(&set.happy, UNKNOWN, INITIALIZING, ""))?;
        }
        let status = if happy == Some(true) { TRUE } else { UNKNOWN };
        for dep in &set.dependents {
            if self.object.condition_fields(dep)?.is_none() {
                self.set_condition(condition(dep, status, INITIALIZING, ""))?;
            }
        }
        Ok(())
    }

    /// Sets the condition `type_` to these fields, comparing them with the stored ones before
    /// building it: a condition already so (the common case) costs no copy of its fields.
    fn mark(
        &mut self,
        type_: &str,
        status: &str,
        reason: &str,
        message: String,
    ) -> Result<bool, ConditionError> {
        if let Some(old) = self.object.condition_fields(type_)?
            && old.same_as(status, Some(reason), Some(&message), None)
        {
            return Ok(false);
        }
        self.set_condition(condition(type_, status, reason, message))
    }
}

/// A condition in Go's `metav1.Condition` shape: reason and message always present.
fn condition(type_: &str, status: &str, reason: &str, message: impl Into<String>) -> Condition {
    Condition {
        reason: Some(reason.to_owned()),
        message: Some(message.into()),
        ..Condition::new(type_, status)
    }
}

/// Keeps an absent `old` field absent when `new` is empty, so neither counts as a change.
fn adopt_empty(new: &mut Option<String>, old: Option<&str>) {
    if old.is_none() && new.as_deref() == Some("") {
        *new = None;
    }
}

fn is_true(condition: Option<&Condition>) -> bool {
    condition.is_some_and(Condition::is_true)
}

fn is_false(condition: Option<&Condition>) -> bool {
    condition.is_some_and(Condition::is_false)
}
