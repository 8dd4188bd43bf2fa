//! `ExpectConfig`: the given state of a cluster and the writes, events and tracks a test
//! expects there, checked against an embedded API server behind a recording layer.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::DynamicObject;
use serde::Serialize;
use serde_json::{Value, json};

use super::diff::{Compare, diff, normalized, pretty, yaml};
use super::reactor::Reactor;
use super::recording::Recording;
use super::refs::{ApplyRef, DeleteCollectionRef, DeleteRef, Event, PatchRef, TrackRequest};
use crate::apiserver::ApiServer;
use crate::client::{Client, EventRecorder};
use crate::reconcilers::Config;
use crate::tracker::Tracker;

/// How long the test tracker's tracks last (as in reconciler.io's harness).
pub(super) const TRACK_LEASE: Duration = Duration::from_secs(24 * 3600);

/// The namespaces every embedded server starts with.
const BUILT_IN_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The given state of one cluster and what the code under test is expected to do there.
#[derive(Clone, Default)]
pub struct ExpectConfig {
    /// CRDs whose kinds the servers serve (seeded into both servers).
    pub given_api_resources: Vec<DynamicObject>,
    /// Objects the client sees (resourceVersion "999" unless set).
    pub given_objects: Vec<DynamicObject>,
    /// Objects only the uncached API reader sees.
    pub api_given_objects: Vec<DynamicObject>,
    /// Tracks recorded before the test.
    pub given_tracks: Vec<TrackRequest>,
    /// Reactors, first match wins; they see requests before the server does.
    pub with_reactors: Vec<Reactor>,
    /// Expected creates, in order.
    pub expect_creates: Vec<DynamicObject>,
    /// Expected updates, in order.
    pub expect_updates: Vec<DynamicObject>,
    /// Expected patches (exact bodies), in order.
    pub expect_patches: Vec<PatchRef>,
    /// Expected deletes, in order.
    pub expect_deletes: Vec<DeleteRef>,
    /// Expected delete-collections, in order.
    pub expect_delete_collections: Vec<DeleteCollectionRef>,
    /// Expected status updates (only the status is compared), in order.
    pub expect_status_updates: Vec<DynamicObject>,
    /// Expected status patches, in order.
    pub expect_status_patches: Vec<PatchRef>,
    /// Expected server-side applies, in order.
    pub expect_applies: Vec<ApplyRef>,
    /// Expected server-side applies of status, in order.
    pub expect_status_applies: Vec<ApplyRef>,
    /// Expected events, in order.
    pub expect_events: Vec<Event>,
    /// Expected tracks.
    pub expect_tracks: Vec<TrackRequest>,
}

/// An [`ExpectConfig`] in use: its servers, its recording and the [`Config`] over them.
pub struct StartedConfig {
    name: String,
    config: Config,
    recording: Arc<Recording>,
    editor: Client,
}

impl ExpectConfig {
    /// Starts the servers, seeds them (and the request's `namespace`) and builds the config
    /// named `name`.
    pub async fn start(
        &self,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<StartedConfig, String> {
        let server = ApiServer::new();
        let api_server = ApiServer::new();
        for (which, target, objects) in [
            ("given objects", &server, &self.given_objects),
            ("API given objects", &api_server, &self.api_given_objects),
        ] {
            let seeds = self.given_api_resources.iter().chain(objects.iter());
            let values = seeds
                .map(serde_json::to_value)
                .collect::<Result<Vec<Value>, _>>();
            let mut values = values.map_err(|err| format!("{which} of config {name:?}: {err}"))?;
            if let Some(ns) = namespace.filter(|ns| !BUILT_IN_NAMESPACES.contains(ns)) {
                let namespace =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                values.insert(0, namespace);
            }
            target
                .seed(values)
                .map_err(|err| format!("{which} of config {name:?}: {err}"))?;
        }
        let recording = Recording::new(self.with_reactors.clone());
        let client = Client::new(recording.client(server.router()));
        let editor = Client::new(server.client());
        let api_client = Client::new(api_server.client());
        let tracker = Tracker::new(TRACK_LEASE);
        for track in &self.given_tracks {
            tracker
                .track_reference(&track.reference, &track.tracker)
                .map_err(|err| format!("given track of config {name:?}: {err}"))?;
        }
        let config = Config {
            api_reader: api_client.api_reader(),
            recorder: EventRecorder::new(&client, "dynrec-test"),
            tracker: Arc::new(tracker),
            client,
        };
        Ok(StartedConfig {
            name: name.to_string(),
            config,
            recording,
            editor,
        })
    }
}

impl StartedConfig {
    /// The config the code under test uses.
    pub fn config(&self) -> Config {
        self.config.clone()
    }

    /// A client of the same server that is not recorded and meets no reactor: edits
    /// between reconciles, made as another actor would.
    pub(super) fn editor(&self) -> &Client {
        &self.editor
    }

    /// The recording of the code under test's requests.
    pub(super) fn recording(&self) -> &Recording {
        &self.recording
    }

    /// Every mismatch between `expect` and what was observed; order and count matter.
    pub fn assert(&self, expect: &ExpectConfig) -> Vec<String> {
        let observed = self.recording.observed();
        let mut check = Checker {
            config: &self.name,
            failures: Vec::new(),
        };
        check.refs(
            ("Applies", "apply"),
            &expect.expect_applies,
            &observed.applies,
        );
        check.objects(
            ("Creates", "create"),
            &expect.expect_creates,
            &observed.creates,
            Compare::Write,
        );
        check.objects(
            ("Updates", "update"),
            &expect.expect_updates,
            &observed.updates,
            Compare::Write,
        );
        check.refs(
            ("Patches", "patch"),
            &expect.expect_patches,
            &observed.patches,
        );
        check.refs(
            ("Deletes", "delete"),
            &expect.expect_deletes,
            &observed.deletes,
        );
        check.refs(
            ("DeleteCollections", "delete collection"),
            &expect.expect_delete_collections,
            &observed.delete_collections,
        );
        check.objects(
            ("StatusUpdates", "status update"),
            &expect.expect_status_updates,
            &observed.status_updates,
            Compare::Status,
        );
        check.refs(
            ("StatusPatches", "status patch"),
            &expect.expect_status_patches,
            &observed.status_patches,
        );
        check.refs(
            ("StatusApplies", "status apply"),
            &expect.expect_status_applies,
            &observed.status_applies,
        );
        check.refs(("Events", "event"), &expect.expect_events, &observed.events);
        check.tracks(&self.config.tracker, &expect.expect_tracks);
        check.failures
    }
}

/// Collects mismatches for one config.
struct Checker<'a> {
    config: &'a str,
    failures: Vec<String>,
}

impl Checker<'_> {
    /// Compares two lists pairwise, in order; `differ` returns a diff when a pair differs.
    fn lists<E, A>(
        &mut self,
        (list, one): (&str, &str),
        expected: &[E],
        actual: &[A],
        differ: impl Fn(&E, &A) -> Option<String>,
        show_expected: impl Fn(&E) -> String,
        show_actual: impl Fn(&A) -> String,
    ) {
        let config = self.config;
        for (i, e) in expected.iter().enumerate() {
            match actual.get(i) {
                None => self.failures.push(format!(
                    "Expect{list}[{i}] not observed for config {config:?}: {}",
                    show_expected(e)
                )),
                Some(a) => {
                    if let Some(diff) = differ(e, a) {
                        self.failures.push(format!(
                            "Expect{list}[{i}] differs for config {config:?} (-expected, +actual):\n{diff}"
                        ));
                    }
                }
            }
        }
        for a in actual.iter().skip(expected.len()) {
            self.failures.push(format!(
                "Unexpected {one} observed for config {config:?}: {}",
                show_actual(a)
            ));
        }
    }

    /// Compares refs as the JSON values they serialize to (a patch body as the JSON it
    /// holds), and shows them as YAML.
    fn refs<T: Serialize>(&mut self, label: (&str, &str), expected: &[T], actual: &[T]) {
        let value = |t: &T| serde_json::to_value(t).unwrap_or_default();
        let show = |t: &T| yaml(&value(t));
        let differ = |e: &T, a: &T| {
            let (e, a) = (value(e), value(a));
            (e != a).then(|| diff(&yaml(&e), &yaml(&a)))
        };
        self.lists(label, expected, actual, differ, show, show);
    }

    fn objects(
        &mut self,
        label: (&str, &str),
        expected: &[DynamicObject],
        actual: &[Value],
        compare: Compare,
    ) {
        let json = |o: &DynamicObject| serde_json::to_value(o).unwrap_or_default();
        let differ = |e: &DynamicObject, a: &Value| {
            let (e, a) = normalized(&json(e), a, compare);
            (e != a).then(|| diff(&pretty(&e), &pretty(&a)))
        };
        self.lists(
            label,
            expected,
            actual,
            differ,
            |e| pretty(&json(e)),
            pretty,
        );
    }

    /// Expected tracks must be held by the tracker (it cannot list what else it holds).
    fn tracks(&mut self, tracker: &Tracker, expected: &[TrackRequest]) {
        for (i, track) in expected.iter().enumerate() {
            let reference = &track.reference;
            let labels = reference
                .selector
                .as_ref()
                .map(|s| equality_labels(&s.to_string()))
                .unwrap_or_default();
            let name = reference.name.as_deref().unwrap_or_default();
            let observers = tracker.observers_of(
                &reference.group_kind(),
                reference.namespace.as_deref(),
                name,
                &labels,
            );
            if !observers.contains(&track.tracker) {
                self.failures.push(format!(
                    "ExpectTracks[{i}] not observed for config {:?}: {track:#?}",
                    self.config
                ));
            }
        }
        for (reference, observer) in tracker.tracks() {
            let expected = expected
                .iter()
                .any(|t| t.tracker == observer && t.reference == reference);
            if !expected {
                self.failures.push(format!(
                    "Unexpected track observed for config {:?}: {observer} watches {reference:#?}",
                    self.config
                ));
            }
        }
    }
}

/// Labels that satisfy the equality terms (`k=v`, `k==v`) of a selector.
fn equality_labels(selector: &str) -> BTreeMap<String, String> {
    selector
        .split(',')
        .filter_map(|term| {
            let (key, value) = term.split_once("==").or_else(|| term.split_once('='))?;
            (!key.ends_with('!')).then(|| (key.trim().to_string(), value.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_patches(expected: &str, actual: &str) -> Vec<String> {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default"}});
        let object: DynamicObject = serde_json::from_value(object).unwrap();
        let mut check = Checker {
            config: "the config",
            failures: Vec::new(),
        };
        check.refs(
            ("Patches", "patch"),
            &[PatchRef::merge(&object, expected)],
            &[PatchRef::merge(&object, actual)],
        );
        check.failures
    }

    #[test]
    fn patches_compare_as_json_whatever_their_key_order() {
        let failures = check_patches(r#"{"a": 1, "b": {"c": 2}}"#, r#"{"b":{"c":2},"a":1}"#);
        assert!(failures.is_empty(), "{failures:?}");
    }

    #[test]
    fn refs_that_differ_show_as_yaml_not_rust_debug() {
        let failures = check_patches(r#"{"data": {"a": "1"}}"#, r#"{"data": {"a": "2"}}"#);
        let [failure] = failures.as_slice() else {
            panic!("one failure expected: {failures:?}");
        };
        let line = |sign: char, text: &str| {
            failure
                .lines()
                .any(|l| l.starts_with(sign) && l[1..].trim() == text)
        };
        assert!(line('-', "a: \"1\"") && line('+', "a: \"2\""), "{failure}");
        assert!(
            failure.contains("patchType: application/merge-patch+json"),
            "{failure}"
        );
        assert!(
            !failure.contains("PatchRef {") && !failure.contains("Some("),
            "{failure}"
        );
    }
}
