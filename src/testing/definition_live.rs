//! Runs a definition case end to end on a live API server, where the definition already
//! runs (a manager's controller): the given objects are created in fresh namespaces, each
//! reconcile's expectation is waited for as an end state, each step's edits are made and
//! its expectation waited for in turn, and what the case made is deleted at the end.
//!
//! A live run sees end states, not writes, so an expectation reads as (docs/test-cases.md):
//! an expected create, update or apply is an object that exists and matches the entry (the
//! last entry of each object); a delete is an object that is gone; a status update is the
//! object's status matching (its last one); an event is an Event of the case's namespaces
//! matching `{type, reason, message}`. `tracks` and `error` are not observable and not
//! checked; a case or step with `failures:` cannot run live (nothing induces them).
//!
//! The case's namespaces (`default`...) become fresh ones (`default-<random>`), and the
//! `uid` of each given object becomes the one the server gave it, wherever the case writes
//! them (a `namespace` field, a `uid` string).

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::chainsaw::cluster::{ObjectRef, TestCluster, object_ref};
use super::definition_cases::{DefinitionCase, Expect, Step, reference};
use super::definition_run::{Phase, check_references, edit, refused, step_label};
use super::diff::equate_empty;
use super::expectations::{indent, subset, title};
use super::recorded::Recorded;
use crate::client::Client;
use crate::object::Gvk;

/// How long each reconcile's expectation may take to hold, unless told otherwise.
pub const LIVE_TIMEOUT: Duration = Duration::from_secs(30);

/// How often an expectation that does not hold yet is checked again.
const POLL: Duration = Duration::from_millis(200);

/// Why `case` cannot run on a live server, if it cannot: induced failures.
pub fn live_skip_reason(case: &DefinitionCase) -> Option<&'static str> {
    let induced = !case.failures.is_empty() || case.steps.iter().any(|s| !s.failures.is_empty());
    induced.then_some("its failures: cannot be induced on a live API server")
}

/// Runs `case` on the cluster of `client`, where its definition runs: one [`Phase`] per
/// reconcile (its `recorded` is empty: a live run sees no writes), each failing when its
/// expectation did not hold within `timeout` (with what did not hold, last seen); or why
/// the case could not run to its end. Deletes what it made, last first, then its
/// namespaces; a cleanup that does not finish within `timeout` is a last failing phase.
pub async fn run_case_live(
    client: &Client,
    case: &DefinitionCase,
    timeout: Duration,
) -> Result<Vec<Phase>, String> {
    check_references(case)?;
    let mut run = LiveRun::new(client, case);
    let outcome = run.run(case, timeout).await;
    let cleanup = run.cleanup(timeout).await;
    let mut phases = outcome?;
    if !cleanup.is_empty() {
        phases.push(Phase {
            label: "cleanup".into(),
            recorded: Recorded::default(),
            failures: cleanup,
        });
    }
    Ok(phases)
}

/// One case's run: the cluster as it sees it, the names it gave, what it made.
struct LiveRun {
    cluster: TestCluster,
    names: Localizer,
    /// The namespaces it made, then the objects, in the order made.
    made: Vec<ObjectRef>,
}

impl LiveRun {
    fn new(client: &Client, case: &DefinitionCase) -> Self {
        let names = Localizer::of(case);
        let cluster = TestCluster {
            client: client.clone(),
            namespace: names.localize(&json!({"namespace": "default"}))["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        };
        Self {
            cluster,
            names,
            made: Vec::new(),
        }
    }

    /// The given objects, then each reconcile's expectation and each step.
    async fn run(
        &mut self,
        case: &DefinitionCase,
        timeout: Duration,
    ) -> Result<Vec<Phase>, String> {
        let deadline = Instant::now() + timeout;
        for namespace in self.names.namespaces() {
            let object =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
            self.create(&object, &deadline)
                .await
                .map_err(|e| format!("namespace {namespace}: {e}"))?;
        }
        for resource in &case.api_resources {
            if let Err(error) = self.create(resource, &deadline).await
                && !error.contains("already exists")
            {
                return Err(format!("apiResources: {error}"));
            }
        }
        for (i, given) in case.given.iter().enumerate() {
            self.give(given, &deadline)
                .await
                .map_err(|e| format!("given[{i}]: {e}"))?;
        }
        let mut phases = vec![self.phase("reconcile".into(), &case.expect, timeout).await];
        for (i, step) in case.steps.iter().enumerate() {
            if phases.iter().any(|p| !p.failures.is_empty()) {
                break;
            }
            let label = step_label(i, step);
            let step = self.localized_step(step);
            for value in &step.apply {
                if let Ok(made) = self.target(value).await {
                    self.made.push(made);
                }
            }
            edit(&self.cluster.client, &step)
                .await
                .map_err(|e| refused(&label, i, &e))?;
            phases.push(self.phase(label, &step.expect, timeout).await);
        }
        Ok(phases)
    }

    /// Waits until `expect` holds; the phase fails with what did not hold when it times out.
    async fn phase(&self, label: String, expect: &Expect, timeout: Duration) -> Phase {
        let expected = end_state(expect, &self.names);
        let unfindable: Vec<String> = expected.iter().filter_map(EndState::unfindable).collect();
        if !unfindable.is_empty() {
            return Phase {
                label,
                recorded: Recorded::default(),
                failures: unfindable,
            };
        }
        let deadline = Instant::now() + timeout;
        let failures = loop {
            let mut failing = Vec::new();
            for expectation in &expected {
                if let Err(failure) = self.holds(expectation).await {
                    failing.push(failure);
                }
            }
            if failing.is_empty() {
                break failing;
            }
            if Instant::now() + POLL > deadline {
                failing.insert(
                    0,
                    format!("did not hold within {timeout:?}; what did not, as last seen:"),
                );
                break failing;
            }
            tokio::time::sleep(POLL).await;
        };
        Phase {
            label,
            recorded: Recorded::default(),
            failures,
        }
    }

    /// Whether one expectation holds now, or what does not.
    async fn holds(&self, expectation: &EndState) -> Result<(), String> {
        match expectation {
            EndState::Matches { at, tree } => {
                let found = self.find(tree).await.map_err(|e| format!("{at}: {e}"))?;
                let mut reports = Vec::new();
                for candidate in &found {
                    match subset(tree, candidate).as_slice() {
                        [] => return Ok(()),
                        lines => reports.push(lines.to_vec()),
                    }
                }
                match reports.into_iter().next() {
                    None => Err(format!("{at}: not found")),
                    Some(lines) => Err(format!("{at} differs:\n{}", indent(&lines))),
                }
            }
            EndState::Gone { at, target } => match self.cluster.exists(target).await {
                Ok(false) => Ok(()),
                Ok(true) => Err(format!("{at}: still exists")),
                Err(error) => Err(format!("{at}: {error}")),
            },
            EndState::Event { at, tree } => {
                let events = self.events().await.map_err(|e| format!("{at}: {e}"))?;
                match events.iter().any(|event| subset(tree, event).is_empty()) {
                    true => Ok(()),
                    false => Err(format!(
                        "{at}: no such Event; the Events are:\n{}",
                        super::value_diff::yaml_list(&events, 1)
                    )),
                }
            }
        }
    }

    /// The objects an expected entry names: by name, or those of its kind in its namespace.
    async fn find(&self, tree: &Value) -> Result<Vec<Value>, String> {
        let mut lookup = json!({
            "apiVersion": tree["apiVersion"],
            "kind": tree["kind"],
            "metadata": {"name": tree["metadata"]["name"], "namespace": tree["metadata"]["namespace"]},
        });
        if lookup["metadata"]["name"].is_null() {
            lookup["metadata"] = json!({"namespace": tree["metadata"]["namespace"]});
        }
        let gvk = self.cluster.place(&mut lookup).await?;
        self.cluster
            .read(&gvk, &lookup)
            .await
            .map_err(|e| e.to_string())
    }

    /// The Events of the case's namespaces, as `{type, reason, message}`.
    async fn events(&self) -> Result<Vec<Value>, String> {
        let mut events = Vec::new();
        for namespace in self.names.namespaces() {
            let lookup = json!({"metadata": {"namespace": namespace}});
            let gvk = Gvk::new("events.k8s.io", "v1", "Event");
            let found = self
                .cluster
                .read(&gvk, &lookup)
                .await
                .map_err(|e| e.to_string())?;
            events.extend(found.iter().map(|event| {
                json!({"type": event["type"], "reason": event["reason"], "message": event["note"]})
            }));
        }
        Ok(events)
    }

    /// Creates a given object as the case gives it: under the server's uid (noted), with its
    /// status set, and deleted if it is deleting.
    async fn give(&mut self, given: &Value, deadline: &Instant) -> Result<(), String> {
        let mut object = self.names.localize(given);
        let given_uid = given["metadata"]["uid"].as_str().map(str::to_owned);
        let status = object.as_object_mut().and_then(|o| o.remove("status"));
        let deleting = !object["metadata"]["deletionTimestamp"].is_null();
        if let Some(metadata) = object["metadata"].as_object_mut() {
            for server_kept in [
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "managedFields",
            ] {
                metadata.remove(server_kept);
            }
        }
        let (target, created) = match self.create(&object, deadline).await {
            Err(error) if error.contains("already exists") => self.replace(&object).await?,
            made => made?,
        };
        self.names.note_generation(given, &created);
        if let (Some(given), Some(live)) = (given_uid, created["metadata"]["uid"].as_str()) {
            self.names.uids.insert(given, live.to_owned());
        }
        if let Some(status) = status {
            let patch = Patch::Merge(json!({ "status": status }));
            self.cluster
                .client
                .patch_status(&target.gvk, &target.key, &patch, &PatchParams::default())
                .await
                .map_err(|e| format!("setting its status: {e}"))?;
        }
        if deleting {
            self.cluster
                .delete(&target)
                .await
                .map_err(|e| format!("deleting it: {e}"))?;
        }
        Ok(())
    }

    /// Creates `object`, retrying until `deadline` while its kind is not served yet (a CRD
    /// just made); the object is noted as made.
    async fn create(
        &mut self,
        object: &Value,
        deadline: &Instant,
    ) -> Result<(ObjectRef, Value), String> {
        loop {
            let attempt = async {
                let mut object = object.clone();
                let gvk = self.cluster.place(&mut object).await?;
                let target = object_ref(&gvk, &object)?;
                let created = self
                    .cluster
                    .create(&object)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>((target, created))
            };
            match attempt.await {
                Ok((target, created)) => {
                    self.made.push(target.clone());
                    return Ok((target, created));
                }
                Err(error)
                    if error.contains("already exists") || Instant::now() + POLL > *deadline =>
                {
                    return Err(error);
                }
                Err(_) => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// Replaces an object the definition made before the case could give it (a child of a
    /// given parent) with the given one, as an edit by hand would.
    async fn replace(&mut self, object: &Value) -> Result<(ObjectRef, Value), String> {
        let mut object = object.clone();
        let gvk = self.cluster.place(&mut object).await?;
        let target = object_ref(&gvk, &object)?;
        let existing = self
            .cluster
            .read(&gvk, &object)
            .await
            .map_err(|e| e.to_string())?;
        let version = existing
            .first()
            .map(|e| e["metadata"]["resourceVersion"].clone());
        object["metadata"]["resourceVersion"] = version.unwrap_or_default();
        let replaced = self
            .cluster
            .update(&object)
            .await
            .map_err(|e| e.to_string())?;
        self.made.push(target.clone());
        Ok((target, replaced))
    }

    /// The kind and key of an object a step names.
    async fn target(&self, value: &Value) -> Result<ObjectRef, String> {
        let mut object = value.clone();
        let gvk = self.cluster.place(&mut object).await?;
        object_ref(&gvk, &object)
    }

    /// `step` with the case's namespaces and uids replaced by the live ones.
    fn localized_step(&self, step: &Step) -> Step {
        let all = |values: &[Value]| values.iter().map(|v| self.names.localize(v)).collect();
        let mut localized = step.clone();
        localized.apply = all(&step.apply);
        localized.patch = all(&step.patch);
        localized.set_status = all(&step.set_status);
        localized.delete = all(&step.delete);
        localized
    }

    /// Deletes what the run made, last first (its namespaces last), then waits until each
    /// is gone (a child deleted before its parent may be made again meanwhile: its
    /// namespace's deletion takes it); what is left.
    async fn cleanup(&mut self, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut left = Vec::new();
        let made = std::mem::take(&mut self.made);
        for target in made.iter().rev() {
            if let Err(error) = self.cluster.delete(target).await {
                left.push(format!("deleting {target}: {error}"));
            }
        }
        for target in made.iter().rev() {
            loop {
                match self.cluster.exists(target).await {
                    Ok(false) => break,
                    Ok(true) if Instant::now() + POLL > deadline => {
                        left.push(format!(
                            "{target} was not gone within {timeout:?} of the cleanup's start"
                        ));
                        break;
                    }
                    Ok(true) => tokio::time::sleep(POLL).await,
                    Err(error) => {
                        left.push(format!("reading {target}: {error}"));
                        break;
                    }
                }
            }
        }
        left
    }
}

/// What a live run waits for: an object that matches, one that is gone, an Event.
enum EndState {
    Matches { at: String, tree: Value },
    Gone { at: String, target: ObjectRef },
    Event { at: String, tree: Value },
}

impl EndState {
    /// Why a live run cannot look for the object an entry expects: it does not give its
    /// `apiVersion` and `kind`.
    fn unfindable(&self) -> Option<String> {
        match self {
            EndState::Matches { at, tree }
                if tree["apiVersion"].is_null() || tree["kind"].is_null() =>
            {
                Some(format!(
                    "{at}: a live run finds the object by apiVersion and kind: give both"
                ))
            }
            _ => None,
        }
    }
}

/// The end state `expect` describes, localized: the last entry of each object among the
/// creates, updates and applies, and among the status updates; every delete and event.
fn end_state(expect: &Expect, names: &Localizer) -> Vec<EndState> {
    let mut states = Vec::new();
    let writes = [
        ("creates", &expect.creates),
        ("updates", &expect.updates),
        ("applies", &expect.applies),
    ];
    let mut last: BTreeMap<String, (String, Value)> = BTreeMap::new();
    let mut unnamed = Vec::new();
    for (key, entries) in writes {
        for (i, entry) in entries.iter().flatten().enumerate() {
            let at = format!("expect.{key}[{i}] ({})", title(entry));
            let tree = names.localize(&tree_of(entry, expect.exact));
            match identity_of(&tree) {
                Some(id) => drop(last.insert(id, (at, tree))),
                None => unnamed.push((at, tree)),
            }
        }
    }
    let mut statuses: BTreeMap<String, (String, Value)> = BTreeMap::new();
    for (i, entry) in expect.status_updates.iter().flatten().enumerate() {
        let at = format!("expect.statusUpdates[{i}] ({})", title(entry));
        let mut tree = names.localize(&tree_of(entry, expect.exact));
        names.shift_generations(&mut tree);
        if expect.exact
            && let Some(map) = tree.as_object_mut()
        {
            map.retain(|key, _| {
                matches!(key.as_str(), "apiVersion" | "kind" | "metadata" | "status")
            });
        }
        let id = identity_of(&tree).unwrap_or_else(|| at.clone());
        statuses.insert(id, (at, tree));
    }
    for (at, tree) in last
        .into_values()
        .chain(unnamed)
        .chain(statuses.into_values())
    {
        states.push(EndState::Matches { at, tree });
    }
    for (i, entry) in expect.deletes.iter().flatten().enumerate() {
        let at = format!("expect.deletes[{i}] ({})", title(entry));
        if let Ok((gvk, key)) = reference(&names.localize(entry)) {
            states.push(EndState::Gone {
                at,
                target: ObjectRef { gvk, key },
            });
        }
    }
    for (i, entry) in expect.events.iter().flatten().enumerate() {
        let at = format!("expect.events[{i}] ({})", title(entry));
        states.push(EndState::Event {
            at,
            tree: tree_of(entry, expect.exact),
        });
    }
    states
}

/// An entry as an assertion tree: as written, or (exact) without the empty values an exact
/// comparison takes as absent.
fn tree_of(entry: &Value, exact: bool) -> Value {
    let mut tree = entry.clone();
    if exact {
        equate_empty(&mut tree);
    }
    tree
}

/// `apiVersion kind namespace/name` of an entry that names its object.
fn identity_of(tree: &Value) -> Option<String> {
    let name = tree["metadata"]["name"].as_str()?;
    Some(format!(
        "{} {} {}/{name}",
        tree["apiVersion"].as_str().unwrap_or_default(),
        tree["kind"].as_str().unwrap_or_default(),
        tree["metadata"]["namespace"].as_str().unwrap_or_default(),
    ))
}

/// The live names of a case's namespaces and given uids, and how far the live generation
/// of each given object is from the given one.
struct Localizer {
    namespaces: BTreeMap<String, String>,
    uids: BTreeMap<String, String>,
    /// By [`identity_of`] the live object: its live generation less the given one.
    generations: BTreeMap<String, i64>,
}

impl Localizer {
    /// Fresh namespaces for `default` and every namespace the case's given objects and
    /// request name.
    fn of(case: &DefinitionCase) -> Self {
        let suffix = super::chainsaw::random_suffix();
        let named = case
            .given
            .iter()
            .filter_map(|given| given["metadata"]["namespace"].as_str())
            .chain(case.request.iter().filter_map(|r| r.namespace.as_deref()));
        let namespaces = std::iter::once("default")
            .chain(named)
            .map(|namespace| {
                let prefix: String = namespace.chars().take(50).collect();
                (namespace.to_owned(), format!("{prefix}-{suffix}"))
            })
            .collect();
        Self {
            namespaces,
            uids: BTreeMap::new(),
            generations: BTreeMap::new(),
        }
    }

    /// Notes how far `live`'s generation is from the one `given` states (a server starts
    /// every object at 1).
    fn note_generation(&mut self, given: &Value, live: &Value) {
        let (Some(given_generation), Some(live_generation), Some(id)) = (
            given["metadata"]["generation"].as_i64(),
            live["metadata"]["generation"].as_i64(),
            identity_of(live),
        ) else {
            return;
        };
        if given_generation != live_generation {
            self.generations
                .insert(id, live_generation - given_generation);
        }
    }

    /// Shifts each `observedGeneration` in the status of an expected status write by how far
    /// its object's live generation is from the given one.
    fn shift_generations(&self, tree: &mut Value) {
        let Some(offset) = identity_of(tree).and_then(|id| self.generations.get(&id)) else {
            return;
        };
        fn shift(value: &mut Value, offset: i64) {
            match value {
                Value::Object(map) => {
                    for (key, item) in map.iter_mut() {
                        match (key.as_str(), item.as_i64()) {
                            ("observedGeneration", Some(n)) => *item = Value::from(n + offset),
                            _ => shift(item, offset),
                        }
                    }
                }
                Value::Array(items) => items.iter_mut().for_each(|item| shift(item, offset)),
                _ => {}
            }
        }
        shift(&mut tree["status"], *offset);
    }

    /// The live namespaces, each once.
    fn namespaces(&self) -> Vec<String> {
        let mut live: Vec<String> = self.namespaces.values().cloned().collect();
        live.dedup();
        live
    }

    /// `value` with each `namespace` field naming a case's namespace, and each string that
    /// is a given uid, replaced by the live one.
    fn localize(&self, value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, item)| {
                        let live = match (key.as_str(), item.as_str()) {
                            ("namespace", Some(ns)) => {
                                self.namespaces.get(ns).map(|l| Value::from(l.as_str()))
                            }
                            _ => None,
                        };
                        (key.clone(), live.unwrap_or_else(|| self.localize(item)))
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.localize(v)).collect()),
            Value::String(text) => match self.uids.get(text) {
                Some(live) => Value::from(live.as_str()),
                None => value.clone(),
            },
            _ => value.clone(),
        }
    }
}
