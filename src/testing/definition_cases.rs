//! Table tests of definitions written in YAML (`dynrec test -f DIR CASES`): given objects,
//! the reconciled request, induced failures and the expected writes, status, events and
//! tracks, run on the same harness (and embedded server) as Rust table tests.
//!
//! ```yaml
//! definition: widgets            # optional when the directory holds one definition
//! cases:
//! - name: creates its ConfigMap
//!   given: [{apiVersion: example.com/v1, kind: Widget, metadata: {...}, spec: {...}}]
//!   request: {namespace: default, name: w1}   # default: the first given of the kind
//!   failures: [{verb: create, kind: ConfigMap}]
//!   expect:
//!     creates: [...]           # objects, compared as the Rust harness compares them
//!     updates: [...]
//!     applies: [...]           # applied bodies, exactly
//!     deletes: [{apiVersion: v1, kind: ConfigMap, namespace: default, name: old}]   # or objects
//!     statusUpdates: [...]     # objects; only their status is compared
//!     events: [{type: Normal, reason: Created, message: "..."}]
//!     tracks: [{apiVersion: v1, kind: ConfigMap, namespace: default, name: settings}]
//!     error: false
//! ```

use std::sync::Arc;

use jiff::Timestamp;
use kube::api::DynamicObject;
use serde::Deserialize;
use serde_json::Value;

use super::{
    ApplyRef, DeleteRef, Event, ExpectConfig, InduceFailure, ReconcilerTestCase,
    ReconcilerTestSuite, TrackRequest, induce_failure,
};
use crate::definitions::{CompiledDefinition, Inventory, root_reconciler};
use crate::object::{Gvk, ObjectKey};
use crate::reconcilers::RootReconciler;
use crate::tracker::Reference;

/// A file of test cases.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefinitionCases {
    /// The definition under test (optional when there is one).
    #[serde(default)]
    pub definition: Option<String>,
    /// The cases, run in order.
    pub cases: Vec<DefinitionCase>,
}

/// One case.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefinitionCase {
    /// The case's name.
    pub name: String,
    /// Skips the case.
    #[serde(default)]
    pub skip: bool,
    /// The request's time (RFC 3339; default: now).
    #[serde(default)]
    pub now: Option<String>,
    /// CRDs the server serves (a definition's own `schema:` is added).
    #[serde(default)]
    pub api_resources: Vec<Value>,
    /// Objects in the cluster.
    #[serde(default)]
    pub given: Vec<Value>,
    /// The reconciled object (default: the first given object of the definition's kind).
    #[serde(default)]
    pub request: Option<RequestKey>,
    /// Requests the server fails.
    #[serde(default)]
    pub failures: Vec<Failure>,
    /// What the reconcile should do.
    #[serde(default)]
    pub expect: Expect,
}

/// A namespace and name.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestKey {
    /// The namespace (absent: cluster-scoped).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

/// A request the server fails.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Failure {
    /// `create`, `update`, `patch`, `delete`, `get`, `list`.
    pub verb: String,
    /// The kind.
    pub kind: String,
    /// Only this object.
    #[serde(default)]
    pub name: Option<String>,
    /// Only this subresource (`status`).
    #[serde(default)]
    pub subresource: Option<String>,
}

/// What a case expects.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// Created objects, in order.
    #[serde(default)]
    pub creates: Vec<Value>,
    /// Updated objects, in order.
    #[serde(default)]
    pub updates: Vec<Value>,
    /// Applied bodies, in order.
    #[serde(default)]
    pub applies: Vec<Value>,
    /// Deleted objects (`apiVersion`, `kind`, `namespace`, `name`), in order.
    #[serde(default)]
    pub deletes: Vec<Value>,
    /// Status updates (only status is compared), in order.
    #[serde(default)]
    pub status_updates: Vec<Value>,
    /// Events about the reconciled object, in order.
    #[serde(default)]
    pub events: Vec<ExpectedEvent>,
    /// Objects the reconciled object tracks.
    #[serde(default)]
    pub tracks: Vec<Value>,
    /// Whether the reconcile fails.
    #[serde(default)]
    pub error: bool,
}

/// An expected event.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectedEvent {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// A case file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct CaseError {
    /// The file.
    pub source_name: String,
    /// What is wrong.
    pub message: String,
}

/// Parses a case file (YAML or JSON); an unknown field names its path.
pub fn parse_cases(text: &str, source: &str) -> Result<DefinitionCases, CaseError> {
    let error = |message: String| CaseError {
        source_name: source.to_owned(),
        message,
    };
    let value: Value = serde_saphyr::from_str(text).map_err(|e| error(format!("not YAML: {e}")))?;
    serde_path_to_error::deserialize(value)
        .map_err(|e| error(format!("{}: {}", e.path(), e.inner())))
}

/// The harness suite of `cases` for `definition`; an expectation that cannot be built is an
/// error naming the case and field.
pub fn suite(
    definition: &CompiledDefinition,
    cases: &DefinitionCases,
    source: &str,
) -> Result<ReconcilerTestSuite, CaseError> {
    let error = |case: &str, message: String| CaseError {
        source_name: source.to_owned(),
        message: format!("case {case:?}: {message}"),
    };
    let mut built = Vec::new();
    for case in &cases.cases {
        let objects = |values: &[Value], field: &str| -> Result<Vec<DynamicObject>, CaseError> {
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    object(v).map_err(|e| error(&case.name, format!("{field}[{i}]: {e}")))
                })
                .collect()
        };
        let given = objects(&case.given, "given")?;
        let mut api_resources = objects(&case.api_resources, "apiResources")?;
        if let Some(crd) = &definition.crd {
            api_resources.push(object(crd).map_err(|e| error(&case.name, e))?);
        }
        let request = match &case.request {
            Some(key) => ObjectKey {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            },
            None => given
                .iter()
                .find(|o| Gvk::of(o).is_ok_and(|g| g == definition.for_kind))
                .and_then(|o| ObjectKey::of(o).ok())
                .ok_or_else(|| {
                    error(
                        &case.name,
                        format!(
                            "no request and no given {} to reconcile",
                            definition.for_kind
                        ),
                    )
                })?,
        };
        let parent = given
            .iter()
            .find(|o| {
                Gvk::of(o).is_ok_and(|g| g == definition.for_kind)
                    && ObjectKey::of(*o).is_ok_and(|k| k == request)
            })
            .cloned();
        let events = case
            .expect
            .events
            .iter()
            .map(|e| match &parent {
                Some(parent) => Ok(Event::new(parent, &e.type_, &e.reason, e.message.clone())),
                None => Err(error(
                    &case.name,
                    "events need the reconciled object among given".into(),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tracks = case
            .expect
            .tracks
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let (gvk, key) = reference(v)
                    .map_err(|e| error(&case.name, format!("expect.tracks[{i}]: {e}")))?;
                Ok(TrackRequest {
                    tracker: request.clone(),
                    reference: Reference::named(&gvk.group_kind(), &key),
                })
            })
            .collect::<Result<Vec<_>, CaseError>>()?;
        let applies = objects(&case.expect.applies, "expect.applies")?
            .iter()
            .zip(&case.expect.applies)
            .map(|(o, body)| {
                let (gvk, key) = identity(o).map_err(|e| error(&case.name, e))?;
                Ok(ApplyRef {
                    group: gvk.group,
                    kind: gvk.kind,
                    namespace: key.namespace,
                    name: key.name,
                    field_manager: Some(format!("dynrec-{}", definition.name)),
                    body: body.clone(),
                })
            })
            .collect::<Result<Vec<_>, CaseError>>()?;
        let deletes = case
            .expect
            .deletes
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let (gvk, key) = reference(v)
                    .map_err(|e| error(&case.name, format!("expect.deletes[{i}]: {e}")))?;
                Ok(DeleteRef {
                    group: gvk.group,
                    kind: gvk.kind,
                    namespace: key.namespace,
                    name: key.name,
                })
            })
            .collect::<Result<Vec<_>, CaseError>>()?;
        let reactors = case.failures.iter().map(|f| failure(f).into()).collect();
        let now = match &case.now {
            Some(text) => Some(
                text.parse::<Timestamp>()
                    .map_err(|e| error(&case.name, format!("now: {e}")))?,
            ),
            None => None,
        };
        built.push(ReconcilerTestCase {
            name: case.name.clone(),
            skip: case.skip,
            request,
            now,
            config: ExpectConfig {
                given_api_resources: api_resources,
                given_objects: given,
                with_reactors: reactors,
                expect_creates: objects(&case.expect.creates, "expect.creates")?,
                expect_updates: objects(&case.expect.updates, "expect.updates")?,
                expect_applies: applies,
                expect_deletes: deletes,
                expect_status_updates: objects(
                    &case.expect.status_updates,
                    "expect.statusUpdates",
                )?,
                expect_events: events,
                expect_tracks: tracks,
                ..Default::default()
            },
            should_err: case.expect.error,
            ..Default::default()
        });
    }
    Ok(super::TestSuite(built))
}

/// Runs `cases` against `definition`; the failures of every case, diffs included.
pub async fn run_cases(
    definition: Arc<CompiledDefinition>,
    cases: &DefinitionCases,
    source: &str,
) -> Result<Result<(), super::Failures>, CaseError> {
    let suite = suite(&definition, cases, source)?;
    let inventory = Inventory::default();
    Ok(suite
        .try_run(move |_case, config| {
            Box::new(root_reconciler(&definition, config, &inventory)) as Box<dyn RootReconciler>
        })
        .await)
}

fn object(value: &Value) -> Result<DynamicObject, String> {
    serde_json::from_value(value.clone()).map_err(|e| format!("not an object: {e}"))
}

/// The kind and key an expected delete or track names: either the flat form
/// `{apiVersion, kind, namespace, name}` or an object with `metadata.name` (and namespace).
fn reference(value: &Value) -> Result<(Gvk, ObjectKey), String> {
    let flat_name = value.get("name").and_then(Value::as_str);
    let named = match (flat_name, value.get("metadata")) {
        (Some(_), Some(_)) => {
            return Err("give either name (and namespace) or metadata, not both".into());
        }
        (Some(name), None) => {
            let mut metadata = serde_json::json!({ "name": name });
            if let Some(namespace) = value.get("namespace") {
                metadata["namespace"] = namespace.clone();
            }
            serde_json::json!({
                "apiVersion": value.get("apiVersion"),
                "kind": value.get("kind"),
                "metadata": metadata,
            })
        }
        (None, _) => value.clone(),
    };
    let object = object(&named)?;
    if object.metadata.name.is_none() {
        return Err("no name: give name (flat) or metadata.name".into());
    }
    identity(&object)
}

fn identity(object: &DynamicObject) -> Result<(Gvk, ObjectKey), String> {
    let gvk = Gvk::of(object).map_err(|e| e.to_string())?;
    let key = ObjectKey::of(object).map_err(|e| e.to_string())?;
    Ok((gvk, key))
}

fn failure(failure: &Failure) -> InduceFailure {
    let mut induced = induce_failure(&failure.verb, &failure.kind);
    if let Some(name) = &failure.name {
        induced = induced.name(name);
    }
    if let Some(subresource) = &failure.subresource {
        induced = induced.subresource(subresource);
    }
    induced
}
