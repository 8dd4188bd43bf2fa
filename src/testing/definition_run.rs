//! Runs one case of a definition: stores its given objects in a fresh embedded server,
//! reconciles the request, records what the reconcile did in the case file's own form
//! ([`Recorded`]), then for each step makes the step's edits (as another actor would, not
//! recorded) and reconciles again. Each reconcile is compared with its `expect`.

use std::sync::Arc;

use jiff::Timestamp;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::config::{ExpectConfig, StartedConfig};
use super::definition_cases::{DefinitionCase, Expect, Failure, Step, identity, object, reference};
use super::expectations::compare;
use super::reactor::Reactor;
use super::recorded::{Recorded, flat_reference, record};
use crate::client::Client;
use crate::definitions::{CompiledDefinition, Inventory, root_reconciler};
use crate::object::{Gvk, ObjectKey};
use crate::reconcilers::{RequestOptions, RootReconciler};

/// The field manager of a step's `apply` edits.
const EDITOR: &str = "dynrec-test";

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
/// from running to its end (a bad object, a step's edit the server refused: with the
/// step's path and the server's message), which fails the case.
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
        let label = step_label(i, step);
        edit(started.editor(), step)
            .await
            .map_err(|e| refused(&label, i, &e))?;
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

/// `steps[i] (name)`, as a step's failures are headed.
pub(super) fn step_label(i: usize, step: &Step) -> String {
    match &step.name {
        Some(name) => format!("steps[{i}] ({name})"),
        None => format!("steps[{i}]"),
    }
}

/// Why a case stops at step `i`: one of its edits (`error`, headed by the edit's field)
/// failed.
pub(super) fn refused(label: &str, i: usize, error: &str) -> String {
    format!("{label}: an edit failed, so the case stops here:\n  steps[{i}].{error}")
}

/// Refuses a case whose expected deletes or tracks, or a step's deletes, name no object.
pub(super) fn check_references(case: &DefinitionCase) -> Result<(), String> {
    let lists = expectations(case).enumerate().flat_map(|(phase, expect)| {
        let at = match phase {
            0 => String::new(),
            n => format!("steps[{}].", n - 1),
        };
        [
            (format!("{at}expect.deletes"), expect.deletes.as_deref()),
            (format!("{at}expect.tracks"), expect.tracks.as_deref()),
        ]
    });
    let edits = case
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| (format!("steps[{i}].delete"), Some(step.delete.as_slice())));
    for (field, values) in lists.chain(edits) {
        for (i, value) in values.unwrap_or_default().iter().enumerate() {
            reference(value).map_err(|e| format!("{field}[{i}]: {e}"))?;
        }
    }
    Ok(())
}

/// The expectation each phase of `case` is compared with, in phase order.
pub fn expectations(case: &DefinitionCase) -> impl Iterator<Item = &Expect> {
    std::iter::once(&case.expect).chain(case.steps.iter().map(|s| &s.expect))
}

pub(super) fn objects(values: &[Value], field: &str) -> Result<Vec<DynamicObject>, String> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| object(v).map_err(|e| format!("{field}[{i}]: {e}")))
        .collect()
}

/// The request: the case's, or the first given object of the definition's kind.
pub(super) fn request_of(
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

pub(super) fn reactors(failures: &[Failure]) -> Vec<Reactor> {
    failures.iter().map(|f| f.induced().into()).collect()
}

/// Reconciles `request` once and records what the reconcile did.
async fn reconcile(
    reconciler: &impl RootReconciler,
    started: &StartedConfig,
    request: &ObjectKey,
    now: Option<&str>,
) -> Result<Recorded, String> {
    let options = RequestOptions {
        now: parse_now(now)?,
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

/// A case's or step's `now`, parsed (RFC 3339).
pub(super) fn parse_now(now: Option<&str>) -> Result<Option<Timestamp>, String> {
    now.map(|text| text.parse::<Timestamp>().map_err(|e| format!("now: {e}")))
        .transpose()
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
pub(super) async fn edit(editor: &Client, step: &Step) -> Result<(), String> {
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
