//! Runs one case of a definition: stores its given objects in a fresh embedded server,
//! reconciles the request, records what the reconcile did in the case file's own form
//! ([`Recorded`]), then for each step makes the step's edits (as another actor would, not
//! recorded) and reconciles again. Each reconcile is compared with its `expect`.

use std::sync::Arc;

use jiff::Timestamp;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use serde::Serialize;
use serde_json::{Value, json};

use super::config::{ExpectConfig, StartedConfig};
use super::definition_cases::{DefinitionCase, Expect, Failure, Step, identity, object, reference};
use super::diff::{Compare, normalized};
use super::expectations::compare;
use super::reactor::Reactor;
use super::recording::Observed;
use crate::client::Client;
use crate::definitions::{CompiledDefinition, Inventory, root_reconciler};
use crate::object::{Gvk, ObjectKey};
use crate::reconcilers::{RequestOptions, RootReconciler};

/// The field manager of a step's `apply` edits.
const EDITOR: &str = "dynrec-test";

/// What one reconcile did, in the form of a case's `expect` (what `--update` writes).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    /// Created objects, as sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub creates: Vec<Value>,
    /// Updated objects, without server-kept metadata.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub updates: Vec<Value>,
    /// Applied bodies, as sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub applies: Vec<Value>,
    /// Deleted objects, `{apiVersion, kind, namespace, name}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deletes: Vec<Value>,
    /// Status writes of the reconciled object: kind, name and status.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub status_updates: Vec<Value>,
    /// Events, `{type, reason, message}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
    /// What the reconciled object tracks, `{apiVersion, kind, namespace, name}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tracks: Vec<Value>,
    /// Whether the reconcile returned an error.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
    /// The error, if any.
    #[serde(skip)]
    pub error_message: Option<String>,
}

/// One reconcile of a case: its label (`reconcile` or `steps[i]`), what it did and how that
/// differs from its expectation.
#[derive(Clone, Debug)]
pub struct Phase {
    /// `reconcile` for the case's first reconcile, `steps[i] (name)` for a step's.
    pub label: String,
    /// What the reconcile did.
    pub recorded: Recorded,
    /// Every mismatch with the expectation (empty when it holds).
    pub failures: Vec<String>,
}

/// Runs `case` against `definition`: one [`Phase`] per reconcile, or the error that kept it
/// from running (a bad object, an edit the server refused).
pub async fn run_case(
    definition: &Arc<CompiledDefinition>,
    case: &DefinitionCase,
) -> Result<Vec<Phase>, String> {
    check_references(case)?;
    let given = objects(&case.given, "given")?;
    let mut api_resources = objects(&case.api_resources, "apiResources")?;
    if let Some(crd) = &definition.crd {
        api_resources.push(object(crd)?);
    }
    let request = request_of(definition, case, &given)?;
    let config = ExpectConfig {
        given_api_resources: api_resources,
        given_objects: given,
        with_reactors: reactors(&case.failures),
        ..Default::default()
    };
    let started = config
        .start("default", request.namespace.as_deref())
        .await?;
    let reconciler = root_reconciler(definition, &started.config(), &Inventory::default());
    let mut phases = Vec::new();
    let first = reconcile(&reconciler, &started, &request, case.now.as_deref()).await?;
    let failures = compare(&case.expect, &first);
    phases.push(Phase {
        label: "reconcile".into(),
        recorded: first,
        failures,
    });
    for (i, step) in case.steps.iter().enumerate() {
        let label = match &step.name {
            Some(name) => format!("steps[{i}] ({name})"),
            None => format!("steps[{i}]"),
        };
        edit(started.editor(), step)
            .await
            .map_err(|e| format!("{label}: {e}"))?;
        started.recording().set_reactors(reactors(&step.failures));
        let recorded = reconcile(&reconciler, &started, &request, step.now.as_deref())
            .await
            .map_err(|e| format!("{label}: {e}"))?;
        let failures = compare(&step.expect, &recorded);
        phases.push(Phase {
            label,
            recorded,
            failures,
        });
    }
    Ok(phases)
}

/// Refuses a case whose expected deletes or tracks, or a step's deletes, name no object.
fn check_references(case: &DefinitionCase) -> Result<(), String> {
    let lists = expectations(case).enumerate().flat_map(|(phase, expect)| {
        let at = match phase {
            0 => String::new(),
            n => format!("steps[{}].", n - 1),
        };
        [
            (format!("{at}expect.deletes"), &expect.deletes),
            (format!("{at}expect.tracks"), &expect.tracks),
        ]
    });
    let edits = case
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| (format!("steps[{i}].delete"), &step.delete));
    for (field, values) in lists.chain(edits) {
        for (i, value) in values.iter().enumerate() {
            reference(value).map_err(|e| format!("{field}[{i}]: {e}"))?;
        }
    }
    Ok(())
}

/// The expectation each phase of `case` is compared with, in phase order.
pub fn expectations(case: &DefinitionCase) -> impl Iterator<Item = &Expect> {
    std::iter::once(&case.expect).chain(case.steps.iter().map(|s| &s.expect))
}

fn objects(values: &[Value], field: &str) -> Result<Vec<DynamicObject>, String> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| object(v).map_err(|e| format!("{field}[{i}]: {e}")))
        .collect()
}

/// The request: the case's, or the first given object of the definition's kind.
fn request_of(
    definition: &CompiledDefinition,
    case: &DefinitionCase,
    given: &[DynamicObject],
) -> Result<ObjectKey, String> {
    if let Some(key) = &case.request {
        return Ok(ObjectKey {
            namespace: key.namespace.clone(),
            name: key.name.clone(),
        });
    }
    given
        .iter()
        .find(|o| Gvk::of(o).is_ok_and(|g| g == definition.for_kind))
        .and_then(|o| ObjectKey::of(o).ok())
        .ok_or_else(|| {
            format!(
                "no request and no given {} to reconcile",
                definition.for_kind
            )
        })
}

fn reactors(failures: &[Failure]) -> Vec<Reactor> {
    failures.iter().map(|f| f.induced().into()).collect()
}

/// Reconciles `request` once and records what the reconcile did.
async fn reconcile(
    reconciler: &impl RootReconciler,
    started: &StartedConfig,
    request: &ObjectKey,
    now: Option<&str>,
) -> Result<Recorded, String> {
    let now = match now {
        Some(text) => Some(text.parse::<Timestamp>().map_err(|e| format!("now: {e}"))?),
        None => None,
    };
    let options = RequestOptions {
        now,
        ..Default::default()
    };
    let reconcile = reconciler.reconcile_with(request, options);
    let Ok(outcome) = tokio::time::timeout(super::case::DEADLINE, reconcile).await else {
        return Err(format!(
            "the reconcile did not finish within {:?}",
            super::case::DEADLINE
        ));
    };
    let observed = started.recording().take();
    let client = &started.config().client;
    let mut recorded = record(observed, client);
    recorded.tracks = tracks_of(started, request, client);
    recorded.error = outcome.error.is_some();
    recorded.error_message = outcome.error.map(|e| e.to_string());
    Ok(recorded)
}

/// What was observed, in the case file's form.
fn record(observed: Observed, client: &Client) -> Recorded {
    let write = |v: Value| pasteable(&v, Compare::Write);
    Recorded {
        creates: observed.creates.into_iter().map(write).collect(),
        updates: observed.updates.into_iter().map(write).collect(),
        applies: observed.applies.into_iter().map(|a| a.body).collect(),
        deletes: observed
            .deletes
            .iter()
            .map(|d| flat_reference(client, &d.group, &d.kind, d.namespace.as_deref(), &d.name))
            .collect(),
        status_updates: observed.status_updates.iter().map(status_form).collect(),
        events: observed
            .events
            .iter()
            .map(|e| json!({"type": e.type_, "reason": e.reason, "message": e.message}))
            .collect(),
        ..Default::default()
    }
}

/// A written object as a case expects it: without the fields the comparison ignores, and
/// without the uid and generation the server chose (compared only when expected).
fn pasteable(value: &Value, compare: Compare) -> Value {
    let (_, mut actual) = normalized(&json!({}), value, compare);
    let Some(object) = actual.as_object_mut() else {
        return actual;
    };
    // apiVersion, kind and metadata first, as people write objects.
    let mut ordered = serde_json::Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = value.get(key) {
            ordered.insert(key.into(), v.clone());
        }
    }
    if let Some(metadata) = object.shift_remove("metadata") {
        ordered.insert("metadata".into(), metadata);
    }
    ordered.append(object);
    Value::Object(ordered)
}

/// A status write as a case expects it: the kind, name and status (each condition's
/// fields in the order people write them).
fn status_form(value: &Value) -> Value {
    let mut status = normalized(value, value, Compare::Status).1;
    let conditions = status.get_mut("conditions").and_then(Value::as_array_mut);
    for condition in conditions.into_iter().flatten() {
        if let Some(fields) = condition.as_object_mut() {
            let mut ordered = serde_json::Map::new();
            for key in ["type", "status", "reason", "message"] {
                if let Some(value) = fields.shift_remove(key) {
                    ordered.insert(key.into(), value);
                }
            }
            ordered.append(fields);
            *fields = ordered;
        }
    }
    let mut metadata = json!({"name": value["metadata"]["name"]});
    if let Some(namespace) = value["metadata"].get("namespace") {
        metadata["namespace"] = namespace.clone();
    }
    json!({
        "apiVersion": value["apiVersion"],
        "kind": value["kind"],
        "metadata": metadata,
        "status": status,
    })
}

/// `{apiVersion, kind, namespace, name}` of an object the client resolved (its version is
/// the one the client used; the group alone if it never resolved the kind).
fn flat_reference(
    client: &Client,
    group: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> Value {
    let api_version = client
        .resolver()
        .kinds()
        .into_iter()
        .find(|r| r.gvk.group == group && r.gvk.kind == kind)
        .map(|r| r.gvk.api_version())
        .unwrap_or_else(|| group.to_string());
    let mut flat = json!({"apiVersion": api_version, "kind": kind});
    if let Some(namespace) = namespace {
        flat["namespace"] = Value::from(namespace);
    }
    flat["name"] = Value::from(name);
    flat
}

/// The objects `request` tracks by name, in a stable order.
fn tracks_of(started: &StartedConfig, request: &ObjectKey, client: &Client) -> Vec<Value> {
    let mut tracks: Vec<Value> = started
        .config()
        .tracker
        .tracks()
        .into_iter()
        .filter(|(_, observer)| observer == request)
        .filter_map(|(reference, _)| {
            let name = reference.name.as_deref()?;
            Some(flat_reference(
                client,
                &reference.group,
                &reference.kind,
                reference.namespace.as_deref(),
                name,
            ))
        })
        .collect();
    tracks.sort_by_key(|t| t.to_string());
    tracks.dedup();
    tracks
}

/// A step's edits, in order: applies, patches, status settings, deletes.
async fn edit(editor: &Client, step: &Step) -> Result<(), String> {
    for (i, value) in step.apply.iter().enumerate() {
        let at = |e: String| format!("apply[{i}]: {e}");
        let desired = object(value).map_err(at)?;
        editor
            .apply(&desired, EDITOR, true)
            .await
            .map_err(|e| at(e.to_string()))?;
    }
    for (i, value) in step.patch.iter().enumerate() {
        let at = |e: String| format!("patch[{i}]: {e}");
        let (gvk, key) = object(value).and_then(|o| identity(&o)).map_err(at)?;
        let patch = Patch::Merge(value.clone());
        editor
            .patch(&gvk, &key, &patch, &PatchParams::default())
            .await
            .map_err(|e| at(e.to_string()))?;
    }
    for (i, value) in step.set_status.iter().enumerate() {
        let at = |e: String| format!("setStatus[{i}]: {e}");
        let (gvk, key) = object(value).and_then(|o| identity(&o)).map_err(at)?;
        let patch = Patch::Merge(json!({"status": value.get("status")}));
        editor
            .patch_status(&gvk, &key, &patch, &PatchParams::default())
            .await
            .map_err(|e| at(e.to_string()))?;
    }
    for (i, value) in step.delete.iter().enumerate() {
        let at = |e: String| format!("delete[{i}]: {e}");
        let (gvk, key) = reference(value).map_err(at)?;
        editor
            .delete(&gvk, &key, &DeleteParams::default())
            .await
            .map_err(|e| at(e.to_string()))?;
    }
    Ok(())
}
