//! Kubernetes Events about objects of any kind.
//!
//! The recorder publishes and merges Events as kube-runtime's `Recorder` does, with its own
//! cache: kube's sweeps every cached Event on each publish, so recording cost grew with the
//! square of the number of distinct Events (about 40% of the converge benchmark's CPU at
//! 10,000 objects). This one expires Events through a time-ordered queue instead.

use std::{
    collections::{HashMap, VecDeque},
    hash::{Hash, Hasher},
    sync::Arc,
};

use k8s_openapi::{
    api::{
        core::v1::ObjectReference,
        events::v1::{Event as K8sEvent, EventSeries},
    },
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::{SignedDuration, Timestamp},
};
use kube::{
    Api, ResourceExt,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    runtime::events::EventType,
};
use parking_lot::Mutex;
use tracing::debug;

use super::{Client, Error, RequestFailure};
use crate::object::{Gvk, ObjectKey};

/// Event reasons the library itself records.
pub mod reasons {
    /// A child object was created.
    pub const CREATED: &str = "Created";
    /// Creating a child object failed.
    pub const CREATION_FAILED: &str = "CreationFailed";
    /// A child object was updated.
    pub const UPDATED: &str = "Updated";
    /// Updating a child object failed.
    pub const UPDATE_FAILED: &str = "UpdateFailed";
    /// A child object was deleted.
    pub const DELETED: &str = "Deleted";
    /// Deleting a child object failed.
    pub const DELETE_FAILED: &str = "DeleteFailed";
    /// The reconciled object's status was updated.
    pub const STATUS_UPDATED: &str = "StatusUpdated";
    /// Updating the reconciled object's status failed.
    pub const STATUS_UPDATE_FAILED: &str = "StatusUpdateFailed";
    /// The reconciled (duck) object's status was patched.
    pub const STATUS_PATCHED: &str = "StatusPatched";
    /// Patching the reconciled (duck) object's status failed.
    pub const STATUS_PATCH_FAILED: &str = "StatusPatchFailed";
    /// A finalizer was added or removed.
    pub const FINALIZER_PATCHED: &str = "FinalizerPatched";
    /// Adding or removing a finalizer failed.
    pub const FINALIZER_PATCH_FAILED: &str = "FinalizerPatchFailed";
}

/// How long after its last observation an Event still merges repeats (kube-runtime's
/// `Recorder` uses the same six minutes).
const MERGE_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// The recorder's source of the current time (tests move it by hand).
type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// Records `events.k8s.io/v1` Events about objects of any kind.
///
/// Repeats (same object at the same resourceVersion, type, reason and message within six
/// minutes of the last one) are merged into one Event whose `series.count` grows, as
/// kube-runtime's `Recorder` does. Clones share the cache of recent Events.
#[derive(Clone)]
pub struct EventRecorder {
    /// Where Events go; `None` for a [disabled](EventRecorder::disabled) recorder.
    client: Option<kube::Client>,
    controller: String,
    cache: Arc<Mutex<EventCache>>,
    clock: Clock,
}

impl EventRecorder {
    /// A recorder reporting as `controller`.
    pub fn new(client: &Client, controller: impl Into<String>) -> Self {
        Self::with_clock(client, controller, Arc::new(Timestamp::now))
    }

    /// The same recorder (controller name, clock) writing its Events through `client`
    /// (one acting as another identity, say); a disabled recorder stays disabled.
    pub fn through(&self, client: &Client) -> Self {
        Self {
            client: self.client.as_ref().map(|_| client.kube().clone()),
            controller: self.controller.clone(),
            cache: Arc::default(),
            clock: self.clock.clone(),
        }
    }

    /// A recorder that records nothing: [`normal`](Self::normal), [`warning`](Self::warning)
    /// and [`record`](Self::record) return `Ok` without a request or any work. For
    /// measurements that compare a controller with one that records no Events (the converge
    /// and steady-state benchmarks set `Config::recorder` to it), and for controllers whose
    /// Events nobody reads. Events are how a cluster's users see what a controller did, so
    /// leave them on otherwise.
    pub fn disabled() -> Self {
        Self {
            client: None,
            controller: String::new(),
            cache: Arc::default(),
            clock: Arc::new(Timestamp::now),
        }
    }

    fn with_clock(client: &Client, controller: impl Into<String>, clock: Clock) -> Self {
        Self {
            client: Some(client.kube().clone()),
            controller: controller.into(),
            cache: Arc::default(),
            clock,
        }
    }

    /// Records a Normal event.
    pub async fn normal(
        &self,
        object: &DynamicObject,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<(), Error> {
        self.record(object, EventType::Normal, reason, message.into())
            .await
    }

    /// Records a Warning event.
    pub async fn warning(
        &self,
        object: &DynamicObject,
        reason: &str,
        message: impl Into<String>,
    ) -> Result<(), Error> {
        self.record(object, EventType::Warning, reason, message.into())
            .await
    }

    /// Records an event of either type. Repeats of the same reason *and* message about the
    /// same object are merged into one Event (as core/v1 event aggregation does); a new
    /// message is a new Event. A disabled recorder returns `Ok` at once.
    pub async fn record(
        &self,
        object: &DynamicObject,
        type_: EventType,
        reason: &str,
        message: String,
    ) -> Result<(), Error> {
        let Some(client) = &self.client else {
            return Ok(());
        };
        let gvk = Gvk::of(object)?;
        let key = ObjectKey::of(object)?;
        debug!(%gvk, object = %key, reason, ?type_, "recording event");
        let regarding = ObjectReference {
            api_version: Some(gvk.api_version()),
            kind: Some(gvk.kind.clone()),
            name: Some(key.name.clone()),
            namespace: key.namespace.clone(),
            uid: object.metadata.uid.clone(),
            resource_version: object.metadata.resource_version.clone(),
            field_path: None,
        };
        let cache_key = EventKey {
            type_,
            reason: reason.to_string(),
            action: action_for(reason, &message),
            regarding: Reference(regarding),
        };
        let now = (self.clock)();
        let merged = self.cache.lock().merge(&cache_key, now);
        let event = merged.unwrap_or_else(|| self.new_event(&cache_key, message, now));
        Self::publish(client, &event).await.map_err(|source| {
            Error::from(RequestFailure {
                verb: "record event",
                gvk,
                key: Some(key),
                source,
            })
        })?;
        self.cache.lock().insert(cache_key, event, now);
        Ok(())
    }

    /// A first Event, named `{object name}.{nanoseconds since the epoch, hex}` as kube's.
    fn new_event(&self, key: &EventKey, message: String, now: Timestamp) -> K8sEvent {
        let regarding = &key.regarding.0;
        let name = regarding.name.as_deref().unwrap_or(&self.controller);
        K8sEvent {
            action: Some(key.action.clone()),
            reason: Some(key.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            note: Some(message),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.controller.clone()),
            type_: Some(
                match key.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_string(),
            ),
            ..K8sEvent::default()
        }
    }

    /// Creates a first Event, or merge-patches a repeat (one with a `series`). Cluster-scoped
    /// objects' Events go to the `default` namespace.
    async fn publish(client: &kube::Client, event: &K8sEvent) -> Result<(), kube::Error> {
        let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
        let events: Api<K8sEvent> = Api::namespaced(client.clone(), namespace);
        if event.series.is_some() {
            let params = PatchParams::default();
            events
                .patch(&event.name_any(), &params, &Patch::Merge(event))
                .await?;
        } else {
            events.create(&PostParams::default(), event).await?;
        }
        Ok(())
    }
}

/// What makes two recordings one Event. The whole reference is compared, resourceVersion
/// included, as kube-runtime's `Recorder` does; the reporter is the same for all.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct EventKey {
    type_: EventType,
    reason: String,
    action: String,
    regarding: Reference,
}

/// An object reference as a key: every field counts.
#[derive(Clone, Debug, PartialEq)]
struct Reference(ObjectReference);

impl Eq for Reference {}

impl Hash for Reference {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let r = &self.0;
        (&r.api_version, &r.kind, &r.name, &r.namespace).hash(state);
        (&r.uid, &r.resource_version, &r.field_path).hash(state);
    }
}

/// The Events published within the merge window, with a queue of observations in time order
/// that expires them: each recording costs O(1) amortized, and an Event is dropped at the
/// first recording after its window closes.
#[derive(Default)]
struct EventCache {
    events: HashMap<Arc<EventKey>, Recent>,
    /// One entry per recording, oldest first; it expires its Event unless a later recording
    /// of that Event (a later entry) refreshed it.
    observed: VecDeque<(Timestamp, Arc<EventKey>)>,
}

/// An Event as last published, and when.
struct Recent {
    event: K8sEvent,
    seen: Timestamp,
}

impl EventCache {
    /// Drops what expired by `now`, then the repeat of `key`'s Event to publish, with its
    /// `series` counted on, if it is still within its window.
    fn merge(&mut self, key: &EventKey, now: Timestamp) -> Option<K8sEvent> {
        self.expire(now);
        let recent = self
            .events
            .get(key)
            .filter(|recent| recent.seen + MERGE_WINDOW > now)?;
        let count = recent.event.series.as_ref().map_or(2, |s| s.count + 1);
        let mut event = recent.event.clone();
        event.series = Some(EventSeries {
            count,
            last_observed_time: MicroTime(now),
        });
        Some(event)
    }

    /// Remembers `event` as published at `now`.
    fn insert(&mut self, key: EventKey, event: K8sEvent, now: Timestamp) {
        let key = match self.events.get_key_value(&key) {
            Some((shared, _)) => shared.clone(),
            None => Arc::new(key),
        };
        self.observed.push_back((now, key.clone()));
        self.events.insert(key, Recent { event, seen: now });
    }

    fn expire(&mut self, now: Timestamp) {
        while let Some((seen, key)) = self.observed.front()
            && *seen + MERGE_WINDOW <= now
        {
            if self
                .events
                .get(key)
                .is_some_and(|recent| recent.seen + MERGE_WINDOW <= now)
            {
                self.events.remove(key);
            }
            self.observed.pop_front();
        }
    }
}

/// The Event's `action`: the reason plus a digest of the message, so that repeats, merged by
/// action and reason, merge only when the message is the same.
fn action_for(reason: &str, message: &str) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    message.hash(&mut hasher);
    format!("{reason}-{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{apiserver::ApiServer, client::ListOptions};

    /// A recorder on a fresh embedded server, with a clock the test moves.
    struct Fixture {
        _server: ApiServer,
        client: Client,
        recorder: EventRecorder,
        now: Arc<Mutex<Timestamp>>,
    }

    impl Fixture {
        fn new() -> Self {
            let server = ApiServer::new();
            let client = Client::new(server.client());
            let now = Arc::new(Mutex::new(Timestamp::from_second(1_800_000_000).unwrap()));
            let clock = now.clone();
            let recorder =
                EventRecorder::with_clock(&client, "dynrec-test", Arc::new(move || *clock.lock()));
            Self {
                _server: server,
                client,
                recorder,
                now,
            }
        }

        fn advance(&self, by: SignedDuration) {
            let mut now = self.now.lock();
            *now += by;
        }

        async fn updated(&self, object: &DynamicObject, message: &str) {
            self.recorder
                .normal(object, reasons::UPDATED, message)
                .await
                .unwrap();
        }

        /// The server's Events, as `(name, note, series.count)`, in name (time) order.
        async fn events(&self) -> Vec<(String, String, Value)> {
            let gvk = Gvk::new("events.k8s.io", "v1", "Event");
            let options = ListOptions::default().namespace("default");
            let mut events: Vec<_> = (self.client.list(&gvk, &options).await.unwrap())
                .into_iter()
                .map(|e| {
                    let note = e.data["note"].as_str().unwrap().to_string();
                    (e.name_any(), note, e.data["series"]["count"].clone())
                })
                .collect();
            events.sort_by(|a, b| a.0.cmp(&b.0));
            events
        }

        /// How many Events the cache holds, and how many recordings its queue.
        fn cached(&self) -> (usize, usize) {
            let cache = self.recorder.cache.lock();
            (cache.events.len(), cache.observed.len())
        }
    }

    fn config_map(name: &str, resource_version: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name, "namespace": "default", "uid": format!("uid-{name}"),
                "resourceVersion": resource_version,
            },
        }))
        .unwrap()
    }

    fn minutes(n: i64) -> SignedDuration {
        SignedDuration::from_mins(n)
    }

    #[tokio::test]
    async fn repeats_merge_until_six_minutes_after_the_last() {
        let f = Fixture::new();
        let cm = config_map("noisy", "1");
        f.updated(&cm, "Updated child").await;
        let first = f.events().await;
        assert_eq!(first.len(), 1);
        assert_eq!(
            (first[0].1.as_str(), &first[0].2),
            ("Updated child", &Value::Null)
        );
        let name = first[0].0.clone();

        f.advance(minutes(5));
        f.updated(&cm, "Updated child").await;
        assert_eq!(
            f.events().await,
            [(name.clone(), "Updated child".into(), json!(2))]
        );
        f.advance(minutes(5));
        f.updated(&cm, "Updated child").await;
        assert_eq!(
            f.events().await,
            [(name.clone(), "Updated child".into(), json!(3))],
            "the window runs from the last repeat"
        );

        f.advance(minutes(6));
        f.updated(&cm, "Updated child").await;
        let events = f.events().await;
        assert_eq!(events.len(), 2, "a repeat after the window is a new Event");
        assert_eq!(events[0], (name, "Updated child".into(), json!(3)));
        assert_eq!(events[1].2, Value::Null);
    }

    #[tokio::test]
    async fn a_new_message_or_object_version_is_a_new_event() {
        let f = Fixture::new();
        f.updated(&config_map("noisy", "1"), "Updated child").await;
        f.advance(SignedDuration::from_secs(1));
        f.updated(&config_map("noisy", "1"), "Updated child again")
            .await;
        f.advance(SignedDuration::from_secs(1));
        // kube-runtime's Recorder compares whole references, resourceVersion included.
        f.updated(&config_map("noisy", "2"), "Updated child").await;
        let events = f.events().await;
        let notes: Vec<_> = events.iter().map(|e| (e.1.as_str(), &e.2)).collect();
        assert_eq!(
            notes,
            [
                ("Updated child", &Value::Null),
                ("Updated child again", &Value::Null),
                ("Updated child", &Value::Null),
            ]
        );
    }

    #[tokio::test]
    async fn expired_events_leave_the_cache() {
        let f = Fixture::new();
        for name in ["a", "b", "c"] {
            f.updated(&config_map(name, "1"), "Updated child").await;
            f.updated(&config_map(name, "1"), "Updated child").await;
        }
        assert_eq!(f.cached(), (3, 6));
        f.advance(minutes(6));
        f.updated(&config_map("d", "1"), "Updated child").await;
        assert_eq!(f.cached(), (1, 1));
    }

    #[tokio::test]
    async fn a_disabled_recorder_sends_no_event() {
        let server = ApiServer::new();
        let client = Client::new(server.client());
        let cm = config_map("quiet", "1");
        let disabled = EventRecorder::disabled();
        disabled
            .normal(&cm, reasons::CREATED, "Created child")
            .await
            .unwrap();
        disabled
            .warning(&cm, reasons::UPDATE_FAILED, "Failed to update child")
            .await
            .unwrap();
        let writes = |verb| server.request_count(verb, "events.k8s.io", "events");
        assert_eq!((writes("create"), writes("patch")), (0, 0));

        // The same recordings through a recorder that is on reach the server under that key.
        let enabled = EventRecorder::new(&client, "dynrec-test");
        enabled
            .normal(&cm, reasons::CREATED, "Created child")
            .await
            .unwrap();
        enabled
            .normal(&cm, reasons::CREATED, "Created child")
            .await
            .unwrap();
        assert_eq!((writes("create"), writes("patch")), (1, 1));
    }
}
