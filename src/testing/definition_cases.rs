//! The case file format of `dynrec test -f DIR CASES` (docs/test-cases.md): given objects,
//! the reconciled request, induced failures, the expected writes, status, events and
//! tracks, and steps that edit the cluster and reconcile again.
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
//!   steps:                     # edits, then one more reconcile each
//!   - {patch: [...], apply: [...], setStatus: [...], delete: [...], expect: {...}}
//! ```

use kube::api::DynamicObject;
use serde::Deserialize;
use serde_json::Value;

use super::{InduceFailure, induce_failure};
use crate::object::{Gvk, ObjectKey};

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
    /// Edits and reconciles after the first, in order.
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// A step of a case: edits made as another actor would (a user, another controller), then
/// one more reconcile of the same request, and what it should do.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// Printed with the step's failures.
    #[serde(default)]
    pub name: Option<String>,
    /// The reconcile's time (RFC 3339; default: now).
    #[serde(default)]
    pub now: Option<String>,
    /// Objects server-side applied (created or changed) by the field manager `dynrec-test`.
    #[serde(default)]
    pub apply: Vec<Value>,
    /// JSON merge patches, each naming its object by apiVersion, kind and metadata.
    #[serde(default)]
    pub patch: Vec<Value>,
    /// Statuses set (merged into the status subresource) as the object's controller would.
    #[serde(default)]
    pub set_status: Vec<Value>,
    /// Objects deleted (`{apiVersion, kind, namespace, name}` or objects).
    #[serde(default)]
    pub delete: Vec<Value>,
    /// Requests the server fails during this step's reconcile.
    #[serde(default)]
    pub failures: Vec<Failure>,
    /// What this step's reconcile should do.
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

/// What a case expects. A list left out is not checked, unless `exact` is set (then it
/// means none); a list given is compared whole and in order.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// Each entry compared whole (as the Rust harness compares), every list left out
    /// meaning none; otherwise each entry is an assertion tree (a subset of the write).
    #[serde(default)]
    pub exact: bool,
    /// Created objects, in order.
    #[serde(default)]
    pub creates: Option<Vec<Value>>,
    /// Updated objects, in order.
    #[serde(default)]
    pub updates: Option<Vec<Value>>,
    /// Applied bodies, in order.
    #[serde(default)]
    pub applies: Option<Vec<Value>>,
    /// Deleted objects (`apiVersion`, `kind`, `namespace`, `name`), in order.
    #[serde(default)]
    pub deletes: Option<Vec<Value>>,
    /// Status updates (only status is compared), in order.
    #[serde(default)]
    pub status_updates: Option<Vec<Value>>,
    /// Events, in order.
    #[serde(default)]
    pub events: Option<Vec<Value>>,
    /// Objects the reconciled object tracks.
    #[serde(default)]
    pub tracks: Option<Vec<Value>>,
    /// Whether the reconcile fails.
    #[serde(default)]
    pub error: bool,
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

/// A given or expected object.
pub(super) fn object(value: &Value) -> Result<DynamicObject, String> {
    serde_json::from_value(value.clone()).map_err(|e| format!("not an object: {e}"))
}

/// The kind and key an expected delete or track names: either the flat form
/// `{apiVersion, kind, namespace, name}` or an object with `metadata.name` (and namespace).
pub(super) fn reference(value: &Value) -> Result<(Gvk, ObjectKey), String> {
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

/// The kind and key of an object.
pub(super) fn identity(object: &DynamicObject) -> Result<(Gvk, ObjectKey), String> {
    let gvk = Gvk::of(object).map_err(|e| e.to_string())?;
    let key = ObjectKey::of(object).map_err(|e| e.to_string())?;
    Ok((gvk, key))
}

impl Failure {
    /// The reactor that fails the request.
    pub(super) fn induced(&self) -> InduceFailure {
        let mut induced = induce_failure(&self.verb, &self.kind);
        if let Some(name) = &self.name {
            induced = induced.name(name);
        }
        if let Some(subresource) = &self.subresource {
            induced = induced.subresource(subresource);
        }
        induced
    }
}
