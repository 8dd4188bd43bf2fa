//! kube-apiserver stores an Event once and serves it both as `events.k8s.io/v1` and as
//! `core/v1` (which `kubectl describe` reads). This store keeps the two kinds apart, so every
//! write of an `events.k8s.io/v1` Event is mirrored, converted, into the core kind.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::encoded::Encoded;
use super::state::State;
use super::watch::ChangeKind;
use crate::resources::ResourceKey;

/// The storage of `events.k8s.io/v1` Events.
pub(super) fn events_v1_key() -> ResourceKey {
    ResourceKey {
        group: "events.k8s.io".into(),
        plural: "events".into(),
    }
}

fn core_events_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        plural: "events".into(),
    }
}

/// An `events.k8s.io/v1` Event as the `core/v1` Event kube-apiserver serves for it.
fn to_core(event: &Value) -> Value {
    let mut core = Map::new();
    core.insert("apiVersion".into(), json!("v1"));
    core.insert("kind".into(), json!("Event"));
    core.insert("metadata".into(), event["metadata"].clone());
    let mut copy = |to: &str, value: &Value| {
        if !value.is_null() {
            core.insert(to.to_string(), value.clone());
        }
    };
    copy("involvedObject", &event["regarding"]);
    copy("related", &event["related"]);
    copy("reason", &event["reason"]);
    copy("message", &event["note"]);
    copy("type", &event["type"]);
    copy("action", &event["action"]);
    copy("eventTime", &event["eventTime"]);
    copy("reportingComponent", &event["reportingController"]);
    copy("reportingInstance", &event["reportingInstance"]);
    copy("series", &event["series"]);
    copy(
        "source",
        &json!({"component": event["reportingController"]}),
    );
    let first = first_of(&[&event["deprecatedFirstTimestamp"], &event["eventTime"]]);
    let last = first_of(&[
        &event["series"]["lastObservedTime"],
        &event["deprecatedLastTimestamp"],
        &event["eventTime"],
    ]);
    copy("firstTimestamp", &seconds(&first));
    copy("lastTimestamp", &seconds(&last));
    let count = first_of(&[&event["series"]["count"], &event["deprecatedCount"]]);
    copy(
        "count",
        if count.is_null() {
            &Value::Null
        } else {
            &count
        },
    );
    if !core.contains_key("count") {
        core.insert("count".into(), json!(1));
    }
    Value::Object(core)
}

fn first_of(values: &[&Value]) -> Value {
    values
        .iter()
        .find(|v| !v.is_null())
        .map_or(Value::Null, |v| (*v).clone())
}

/// A MicroTime cut to whole seconds, as core/v1 timestamps are.
fn seconds(time: &Value) -> Value {
    match time.as_str() {
        Some(text) => match text.split_once('.') {
            Some((whole, _)) => json!(format!("{whole}Z")),
            None => time.clone(),
        },
        None => Value::Null,
    }
}

impl State {
    /// Mirrors a written `events.k8s.io/v1` Event into the core kind.
    pub(super) fn mirror_event(&mut self, event: &Arc<Value>) {
        let key = core_events_key();
        let core = to_core(event);
        let encoded = Encoded::new(&key, &core);
        let previous = self.objects.put_mirror(&key, &core, encoded.clone());
        self.storage.record_put(&key, &core);
        let kind = if previous.is_some() {
            ChangeKind::Modified
        } else {
            ChangeKind::Added
        };
        self.publish(&key, kind, encoded, previous);
    }

    /// Removes the core mirror of a removed `events.k8s.io/v1` Event.
    pub(super) fn remove_event_mirror(&mut self, event: &Value) {
        let key = core_events_key();
        let Some(removed) = self.objects.remove_mirror(&key, event) else {
            return;
        };
        self.storage.record_remove(&key, &removed.value());
        self.publish(&key, ChangeKind::Deleted, removed.clone(), Some(removed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_events_v1_event_reads_as_a_core_event() {
        let event = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "w1.1", "namespace": "default"},
            "regarding": {"kind": "Widget", "name": "w1", "namespace": "default"},
            "reason": "Created", "note": "Created ConfigMap \"w1\"", "type": "Normal",
            "reportingController": "widgets", "action": "Created",
            "eventTime": "2026-01-01T00:00:00.123456Z",
            "series": {"count": 3, "lastObservedTime": "2026-01-01T00:05:00.000001Z"}
        });
        let core = to_core(&event);
        assert_eq!(core["involvedObject"]["name"], "w1");
        assert_eq!(core["message"], "Created ConfigMap \"w1\"");
        assert_eq!(core["count"], 3);
        assert_eq!(core["firstTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(core["lastTimestamp"], "2026-01-01T00:05:00Z");
        assert_eq!(core["source"]["component"], "widgets");
        assert_eq!(core["apiVersion"], "v1");
    }
}
