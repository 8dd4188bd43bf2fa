use std::borrow::Cow;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::api::DynamicObject;
use serde::Deserialize;
use serde_json::Value;

use super::path::SplitPath;
use super::{Condition, PathError};

const CONDITIONS: SplitPath = SplitPath::new(&["status", "conditions"]);
const OBSERVED_GENERATION: SplitPath = SplitPath::new(&["status", "observedGeneration"]);

/// Status conventions (`status.conditions[]`, `status.observedGeneration`) on any object.
///
/// ```
/// use dynrec::object::{Condition, StatusExt};
/// # let mut obj: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({"metadata": {"generation": 2}}))?;
/// let now = k8s_openapi::jiff::Timestamp::now();
/// assert!(obj.set_condition(Condition::new("Ready", "True"), now)?);
/// assert!(!obj.set_condition(Condition::new("Ready", "True"), now)?); // unchanged
/// obj.observe_generation()?;
/// assert_eq!(obj.observed_generation()?, Some(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait StatusExt {
    /// All conditions, in stored order.
    fn conditions(&self) -> Result<Vec<Condition>, PathError>;

    /// Replaces all conditions.
    fn set_conditions(&mut self, conditions: Vec<Condition>) -> Result<(), PathError>;

    /// The condition of this type, if any.
    fn condition(&self, type_: &str) -> Result<Option<Condition>, PathError> {
        Ok(self.conditions()?.into_iter().find(|c| c.type_ == type_))
    }

    /// The fields of the condition of this type that tell whether it changes, read in place
    /// where the object allows (a reconcile compares conditions far more often than it
    /// changes one).
    fn condition_fields(&self, type_: &str) -> Result<Option<ConditionFields<'_>>, PathError> {
        Ok(self.condition(type_)?.map(ConditionFields::from))
    }

    /// Sets a condition, replacing one of the same type; returns whether anything changed.
    ///
    /// A condition equal to the existing one except for lastTransitionTime changes nothing.
    /// Otherwise lastTransitionTime becomes `now` (whole seconds) and the conditions are
    /// sorted by type.
    fn set_condition(
        &mut self,
        mut condition: Condition,
        now: Timestamp,
    ) -> Result<bool, PathError> {
        let mut conditions = self.conditions()?;
        let existing = conditions.iter().position(|c| c.type_ == condition.type_);
        if let Some(i) = existing {
            if ConditionFields::from(&conditions[i]).same_apart_from_time(&condition) {
                return Ok(false);
            }
            conditions.remove(i);
        }
        let seconds = Timestamp::from_second(now.as_second()).unwrap_or(now);
        condition.last_transition_time = Some(Time(seconds));
        conditions.push(condition);
        conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
        self.set_conditions(conditions)?;
        Ok(true)
    }

    /// Removes the condition of this type; returns whether it was there.
    fn remove_condition(&mut self, type_: &str) -> Result<bool, PathError> {
        let mut conditions = self.conditions()?;
        let before = conditions.len();
        conditions.retain(|c| c.type_ != type_);
        let removed = conditions.len() != before;
        if removed {
            self.set_conditions(conditions)?;
        }
        Ok(removed)
    }

    /// `status.observedGeneration`, if set.
    fn observed_generation(&self) -> Result<Option<i64>, PathError>;

    /// Sets `status.observedGeneration`.
    fn set_observed_generation(&mut self, generation: i64) -> Result<(), PathError>;

    /// Copies `metadata.generation` (if set) to `status.observedGeneration`.
    fn observe_generation(&mut self) -> Result<(), PathError>;
}

impl StatusExt for DynamicObject {
    fn conditions(&self) -> Result<Vec<Condition>, PathError> {
        Ok(CONDITIONS.decode(self)?.unwrap_or_default())
    }

    fn set_conditions(&mut self, conditions: Vec<Condition>) -> Result<(), PathError> {
        let value = serde_json::to_value(conditions).map_err(decode_error)?;
        CONDITIONS.set(self, value)
    }

    /// Decodes only the condition asked for.
    fn condition(&self, type_: &str) -> Result<Option<Condition>, PathError> {
        stored_condition(self, type_)?.map(decode).transpose()
    }

    /// Reads the stored condition in place; decodes it when a field is not of its type (to
    /// report that as decoding would).
    fn condition_fields(&self, type_: &str) -> Result<Option<ConditionFields<'_>>, PathError> {
        let Some(stored) = stored_condition(self, type_)? else {
            return Ok(None);
        };
        match ConditionFields::read(stored) {
            Some(fields) => Ok(Some(fields)),
            None => decode(stored).map(|c| Some(c.into())),
        }
    }

    /// Changes the stored conditions in place: only the new condition is encoded, the
    /// others are kept as they are.
    fn set_condition(
        &mut self,
        mut condition: Condition,
        now: Timestamp,
    ) -> Result<bool, PathError> {
        if let Some(existing) = self.condition_fields(&condition.type_)?
            && existing.same_apart_from_time(&condition)
        {
            return Ok(false);
        }
        let seconds = Timestamp::from_second(now.as_second()).unwrap_or(now);
        condition.last_transition_time = Some(Time(seconds));
        let value = serde_json::to_value(&condition).map_err(decode_error)?;
        let stored = stored_conditions_mut(self)?;
        if let Some(i) = stored
            .iter()
            .position(|c| type_of(c) == Some(&condition.type_))
        {
            stored.remove(i);
        }
        stored.push(value);
        stored.sort_by(|a, b| type_of(a).cmp(&type_of(b)));
        Ok(true)
    }

    fn observed_generation(&self) -> Result<Option<i64>, PathError> {
        OBSERVED_GENERATION.i64(self)
    }

    fn set_observed_generation(&mut self, generation: i64) -> Result<(), PathError> {
        OBSERVED_GENERATION.set(self, generation.into())
    }

    fn observe_generation(&mut self) -> Result<(), PathError> {
        match self.metadata.generation {
            Some(generation) => self.set_observed_generation(generation),
            None => Ok(()),
        }
    }
}

/// What tells whether a condition changes: its status, reason, message and
/// observedGeneration (not its lastTransitionTime); see [`StatusExt::condition_fields`].
#[derive(Clone, Debug, PartialEq)]
pub struct ConditionFields<'a> {
    status: Cow<'a, str>,
    reason: Option<Cow<'a, str>>,
    message: Option<Cow<'a, str>>,
    observed_generation: Option<i64>,
}

impl<'a> ConditionFields<'a> {
    /// Reads a stored condition in place; `None` when a field is not of its type. One pass
    /// over its few fields, hashing none of them.
    fn read(stored: &'a Value) -> Option<Self> {
        let text = |value: &'a Value| value.as_str().map(Cow::Borrowed);
        let (mut status, mut reason, mut message, mut observed_generation) =
            (None, None, None, None);
        let fields = stored.as_object()?;
        super::prefetch::entries(fields);
        for (key, value) in fields {
            match (key.as_str(), value) {
                (_, Value::Null) => {}
                ("status", value) => status = Some(text(value)?),
                ("reason", value) => reason = Some(text(value)?),
                ("message", value) => message = Some(text(value)?),
                ("observedGeneration", number) => observed_generation = Some(number.as_i64()?),
                ("lastTransitionTime", time) => is_timestamp(time.as_str()?).then_some(())?,
                _ => {}
            }
        }
        Some(ConditionFields {
            status: status?,
            reason,
            message,
            observed_generation,
        })
    }

    /// `True`, `False` or `Unknown`.
    pub fn status(&self) -> &str {
        &self.status
    }

    /// The reason, if set.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The message, if set.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// Whether the status is `True`.
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }

    /// Whether `condition` (of the same type) equals this one once transition times are
    /// ignored; an absent reason or message equals an empty one, as in Go's
    /// `metav1.Condition`.
    pub fn same_apart_from_time(&self, condition: &Condition) -> bool {
        self.same_as(
            &condition.status,
            condition.reason.as_deref(),
            condition.message.as_deref(),
            condition.observed_generation,
        )
    }

    /// Whether a condition of the same type with these fields equals this one once
    /// transition times are ignored (see [`ConditionFields::same_apart_from_time`]).
    pub fn same_as(
        &self,
        status: &str,
        reason: Option<&str>,
        message: Option<&str>,
        observed_generation: Option<i64>,
    ) -> bool {
        self.status == status
            && text(self.reason()) == text(reason)
            && text(self.message()) == text(message)
            && self.observed_generation == observed_generation
    }
}

impl From<Condition> for ConditionFields<'_> {
    fn from(condition: Condition) -> Self {
        ConditionFields {
            status: Cow::Owned(condition.status),
            reason: condition.reason.map(Cow::Owned),
            message: condition.message.map(Cow::Owned),
            observed_generation: condition.observed_generation,
        }
    }
}

impl<'a> From<&'a Condition> for ConditionFields<'a> {
    fn from(condition: &'a Condition) -> Self {
        ConditionFields {
            status: Cow::Borrowed(&condition.status),
            reason: condition.reason.as_deref().map(Cow::Borrowed),
            message: condition.message.as_deref().map(Cow::Borrowed),
            observed_generation: condition.observed_generation,
        }
    }
}

/// Whether `text` parses as a `Timestamp`. The form the API server writes
/// (`2026-01-02T03:04:05Z`) is checked by hand, in a fraction of a general parse; anything
/// else is parsed.
fn is_timestamp(text: &str) -> bool {
    is_plain_utc_time(text.as_bytes()) || text.parse::<Timestamp>().is_ok()
}

/// Whether `text` is a valid `YYYY-MM-DDTHH:MM:SSZ` of the years 1000 to 9998 (well within
/// what a `Timestamp` holds).
fn is_plain_utc_time(text: &[u8]) -> bool {
    let [
        y0,
        y1,
        y2,
        y3,
        b'-',
        m0,
        m1,
        b'-',
        d0,
        d1,
        b'T',
        h0,
        h1,
        b':',
        i0,
        i1,
        b':',
        s0,
        s1,
        b'Z',
    ] = *text
    else {
        return false;
    };
    let digits = [y0, y1, y2, y3, m0, m1, d0, d1, h0, h1, i0, i1, s0, s1];
    if !digits.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let number = |high: u8, low: u8| u32::from(high - b'0') * 10 + u32::from(low - b'0');
    let year = number(y0, y1) * 100 + number(y2, y3);
    let (month, day) = (number(m0, m1), number(d0, d1));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return false,
    };
    (1000..=9998).contains(&year)
        && (1..=days).contains(&day)
        && number(h0, h1) < 24
        && number(i0, i1) < 60
        && number(s0, s1) < 60
}

/// An absent text, as the empty one.
fn text(value: Option<&str>) -> &str {
    value.unwrap_or_default()
}

/// The stored condition of this type, as JSON.
fn stored_condition<'a>(
    object: &'a DynamicObject,
    type_: &str,
) -> Result<Option<&'a Value>, PathError> {
    let Some(stored) = stored_conditions(object)? else {
        return Ok(None);
    };
    Ok(stored.iter().find(|c| type_of(c) == Some(type_)))
}

/// A stored condition, decoded.
fn decode(stored: &Value) -> Result<Condition, PathError> {
    Condition::deserialize(stored).map_err(decode_error)
}

/// The stored `status.conditions` as JSON (`None` when absent or null).
fn stored_conditions(object: &DynamicObject) -> Result<Option<&Vec<Value>>, PathError> {
    CONDITIONS.array(object)
}

/// The stored `status.conditions`, created empty when absent or null.
fn stored_conditions_mut(object: &mut DynamicObject) -> Result<&mut Vec<Value>, PathError> {
    if stored_conditions(object)?.is_none() {
        CONDITIONS.set(object, Value::Array(Vec::new()))?;
    }
    let stored = object.data.pointer_mut("/status/conditions");
    stored
        .and_then(Value::as_array_mut)
        .ok_or_else(|| PathError::WrongType {
            path: CONDITIONS.to_string(),
            expected: "an array",
            found: "something else",
        })
}

/// The `type` of a stored condition (found by comparing keys: a condition has a handful, and
/// `type` usually comes first).
fn type_of(condition: &Value) -> Option<&str> {
    let fields = condition.as_object()?;
    super::prefetch::entries(fields);
    let mut fields = fields.iter();
    fields.find(|(key, _)| *key == "type")?.1.as_str()
}

/// A condition that cannot be encoded or decoded, at `status.conditions`.
fn decode_error(source: serde_json::Error) -> PathError {
    PathError::Decode {
        path: CONDITIONS.to_string(),
        type_name: "Condition",
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_status_paths_are_split_as_they_parse() {
        assert!(CONDITIONS.is_split_as_parsed());
        assert!(OBSERVED_GENERATION.is_split_as_parsed());
    }

    #[test]
    fn a_status_path_through_a_wrong_type_is_an_error_naming_it() {
        let not_a_list =
            object(json!({"status": {"conditions": "Ready", "observedGeneration": "2"}}));
        let err = not_a_list.condition_fields("Ready").unwrap_err();
        assert!(err.to_string().contains("status.conditions"), "{err}");
        let err = not_a_list.observed_generation().unwrap_err();
        assert!(
            err.to_string().contains("status.observedGeneration"),
            "{err}"
        );
    }

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn an_absent_message_equals_an_empty_one() {
        let mut obj = object(
            json!({"status": {"conditions": [{"type": "Ready", "status": "True",
            "lastTransitionTime": "2020-01-01T00:00:00Z"}]}}),
        );
        let mut same = Condition::new("Ready", "True");
        same.reason = Some(String::new());
        same.message = Some(String::new());
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        assert!(!obj.set_condition(same, now).unwrap(), "nothing changed");
        let kept = obj.condition("Ready").unwrap().unwrap();
        assert_eq!(
            kept.last_transition_time.unwrap().0.as_second(),
            1_577_836_800
        );
    }

    #[test]
    fn set_condition_sorts_and_stamps_whole_seconds() {
        let mut obj =
            object(json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}));
        let now = Timestamp::from_millisecond(1_700_000_000_750).unwrap();
        assert!(
            obj.set_condition(Condition::new("Alpha", "True"), now)
                .unwrap()
        );
        let conditions = obj.conditions().unwrap();
        assert_eq!(
            conditions
                .iter()
                .map(|c| c.type_.as_str())
                .collect::<Vec<_>>(),
            ["Alpha", "Ready"]
        );
        assert_eq!(
            obj.data["status"]["conditions"][0]["lastTransitionTime"],
            "2023-11-14T22:13:20Z"
        );
    }

    #[test]
    fn equal_condition_keeps_its_transition_time() {
        let mut obj = object(json!({}));
        let t1 = Timestamp::from_second(100).unwrap();
        let t2 = Timestamp::from_second(200).unwrap();
        let mut ready = Condition::new("Ready", "False");
        ready.reason = Some("Waiting".into());
        assert!(obj.set_condition(ready.clone(), t1).unwrap());
        assert!(!obj.set_condition(ready.clone(), t2).unwrap());
        ready.status = "True".into();
        assert!(obj.set_condition(ready, t2).unwrap());
        let stored = obj.condition("Ready").unwrap().unwrap();
        assert_eq!(stored.last_transition_time, Some(Time(t2)));
        assert!(obj.remove_condition("Ready").unwrap());
        assert!(!obj.remove_condition("Ready").unwrap());
    }

    #[test]
    fn setting_a_condition_leaves_the_others_as_stored() {
        let foreign = json!({"type": "Synced", "status": "True", "extra": "kept",
                             "lastTransitionTime": "2026-01-01T00:00:00.123Z"});
        let mut obj = object(json!({"status": {"conditions": [foreign.clone()]}}));
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        assert!(
            obj.set_condition(Condition::new("Ready", "True"), now)
                .unwrap()
        );
        let stored = obj.data["status"]["conditions"].as_array().unwrap();
        assert_eq!(stored.len(), 2);
        assert_eq!(stored[0]["type"], "Ready");
        assert_eq!(stored[1], foreign);
        assert!(
            !obj.set_condition(Condition::new("Ready", "True"), now)
                .unwrap()
        );
    }

    #[test]
    fn malformed_conditions_name_the_path() {
        let obj = object(json!({"status": {"conditions": {"type": "Ready"}}}));
        let err = obj.conditions().unwrap_err();
        assert!(
            err.to_string()
                .starts_with("field status.conditions cannot be read as"),
            "{err}"
        );
        let obj = object(json!({"status": {"observedGeneration": "1"}}));
        assert!(obj.observed_generation().is_err());
    }

    #[test]
    fn condition_fields_read_in_place_are_the_decoded_ones() {
        let stored = [
            json!({"type": "Ready", "status": "True", "reason": "Done", "message": "all set",
                   "observedGeneration": 3, "lastTransitionTime": "2026-01-01T00:00:00Z"}),
            json!({"type": "Ready", "status": "False", "reason": null}),
        ];
        for condition in stored {
            let obj = object(json!({"status": {"conditions": [condition.clone()]}}));
            let decoded: Condition = serde_json::from_value(condition).unwrap();
            let in_place = obj.condition_fields("Ready").unwrap().unwrap();
            assert!(matches!(in_place.status, Cow::Borrowed(_)), "read in place");
            assert_eq!(in_place, ConditionFields::from(&decoded));
            assert!(in_place.same_apart_from_time(&decoded));
        }
        assert_eq!(object(json!({})).condition_fields("Ready").unwrap(), None);
    }

    #[test]
    fn plain_utc_times_are_the_ones_a_timestamp_parses() {
        let mut checked = 0;
        for year in [1000, 1900, 2000, 2023, 2024, 2100, 9998] {
            for month in 0..=13 {
                for day in [0, 1, 28, 29, 30, 31, 32] {
                    for (hour, minute, second) in
                        [(0, 0, 0), (23, 59, 59), (24, 0, 0), (0, 60, 0), (0, 0, 60)]
                    {
                        let text = format!(
                            "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z"
                        );
                        if is_plain_utc_time(text.as_bytes()) {
                            checked += 1;
                            assert!(text.parse::<Timestamp>().is_ok(), "{text}");
                        }
                    }
                }
            }
        }
        assert!(checked > 500, "{checked}");
        let refused = [
            "2024-02-30T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T00:00:00+00:00",
            "2024-1-01T00:00:00Z",
            "yesterday",
            "0999-01-01T00:00:00Z",
        ];
        for text in refused {
            assert!(!is_plain_utc_time(text.as_bytes()), "{text}");
        }
        for text in [
            "2024-02-29T00:00:00Z",
            "2024-01-01T00:00:00.5Z",
            "2024-01-01T00:00:00+01:00",
        ] {
            assert!(is_timestamp(text), "{text}");
        }
        assert!(!is_timestamp("2023-02-29T00:00:00Z"));
    }

    #[test]
    fn a_condition_field_of_the_wrong_type_is_reported_as_decoding_reports_it() {
        let malformed = [
            json!({"type": "Ready", "status": "True", "reason": 5}),
            json!({"type": "Ready", "status": "True", "observedGeneration": "3"}),
            json!({"type": "Ready", "status": "True", "lastTransitionTime": "yesterday"}),
        ];
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        for condition in malformed {
            let mut obj = object(json!({"status": {"conditions": [condition.clone()]}}));
            let decoding = obj.condition("Ready").unwrap_err().to_string();
            let fields = obj.condition_fields("Ready").unwrap_err().to_string();
            assert_eq!(fields, decoding, "{condition}");
            let set = obj.set_condition(Condition::new("Ready", "True"), now);
            assert_eq!(set.unwrap_err().to_string(), decoding, "{condition}");
        }
    }
}
