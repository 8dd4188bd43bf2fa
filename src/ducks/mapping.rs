//! `DuckMapping` (`dynrec.dev/v1alpha1`, cluster-scoped): data saying that a kind
//! implements a duck and where it keeps the duck's fields, in the spirit of
//! servicebinding.io's `ClusterWorkloadResourceMapping`.
//!
//! ```yaml
//! apiVersion: dynrec.dev/v1alpha1
//! kind: DuckMapping
//! metadata: {name: cronjobs.batch}
//! spec:
//!   duck: PodSpecable
//!   group: batch
//!   kind: CronJob
//!   versions: [v1]        # left out: every version the cluster serves
//!   path: spec.jobTemplate.spec.template
//! ```

use kube::api::DynamicObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::client::Projection;
use crate::object::{Gvk, structural_schema};

/// The API group of `DuckMapping`.
pub const GROUP: &str = "dynrec.dev";
/// The version of `DuckMapping`.
pub const VERSION: &str = "v1alpha1";
/// The kind.
pub const KIND: &str = "DuckMapping";
/// Its plural.
pub const PLURAL: &str = "duckmappings";

/// The pattern of a dotted field path (`spec.jobTemplate.spec.template`).
const PATH_PATTERN: &str = "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$";

/// The `DuckMapping` kind.
pub fn mapping_gvk() -> Gvk {
    Gvk::new(GROUP, VERSION, KIND)
}

/// A kind declared to implement a duck, with the path where it keeps the duck's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuckMapping {
    /// The mapping's name (`built-in` for the ones dynrec ships).
    pub name: String,
    /// The duck's name, e.g. `PodSpecable`.
    pub duck: String,
    /// The kind's API group ("" for core).
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The versions it applies to; empty for every served version.
    pub versions: Vec<String>,
    /// Where the kind keeps what the duck reads at its own path, dotted.
    pub path: String,
}

/// The `spec` of a `DuckMapping` object, as written (the CRD's schema is generated from it).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DuckMappingSpec {
    /// The duck the kind implements, e.g. `PodSpecable`.
    #[schemars(length(min = 1))]
    pub duck: String,
    /// The kind's API group (empty for core).
    #[serde(default)]
    pub group: String,
    /// The kind that implements the duck, e.g. `CronJob`.
    #[schemars(length(min = 1))]
    pub kind: String,
    /// The versions mapped; every served version when left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// Where the kind keeps what the duck reads at its own path, dotted (e.g.
    /// `spec.jobTemplate.spec.template`).
    #[schemars(pattern(PATH_PATTERN))]
    pub path: String,
}

/// A `DuckMapping` that cannot be used, naming the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("DuckMapping {name}: {field}: {problem}")]
pub struct MappingError {
    /// The mapping's name.
    pub name: String,
    /// The field, e.g. `spec.path`.
    pub field: String,
    /// What is wrong with it.
    pub problem: String,
}

impl DuckMapping {
    /// The mappings dynrec ships: CronJob's pod template at `spec.jobTemplate.spec.template`.
    pub fn builtin() -> Vec<Self> {
        vec![Self {
            name: "built-in".into(),
            duck: "PodSpecable".into(),
            group: "batch".into(),
            kind: "CronJob".into(),
            versions: vec!["v1".into()],
            path: "spec.jobTemplate.spec.template".into(),
        }]
    }

    /// Reads a `DuckMapping` object; a missing or malformed field is an error naming it.
    pub fn from_object(object: &DynamicObject) -> Result<Self, MappingError> {
        let name = object.metadata.name.clone().unwrap_or_default();
        let invalid = |field: &str, problem: String| MappingError {
            name: name.clone(),
            field: format!("spec.{field}"),
            problem,
        };
        let spec: DuckMappingSpec = serde_path_to_error::deserialize(&object.data["spec"])
            .map_err(|err| {
                let path = err.path().to_string();
                let problem = err.into_inner().to_string();
                match problem.strip_prefix("missing field `") {
                    Some(rest) => invalid(rest.trim_end_matches('`'), "required".into()),
                    None => invalid(&path, problem),
                }
            })?;
        for (field, value) in [("duck", &spec.duck), ("kind", &spec.kind)] {
            if value.is_empty() {
                return Err(invalid(field, "required".into()));
            }
        }
        if spec.path.split('.').any(str::is_empty) {
            let problem = format!("{:?} is not a dotted field path", spec.path);
            return Err(invalid("path", problem));
        }
        Ok(Self {
            name,
            duck: spec.duck,
            group: spec.group,
            kind: spec.kind,
            versions: spec.versions,
            path: spec.path,
        })
    }

    /// Whether the mapping covers this kind.
    pub fn covers(&self, gvk: &Gvk) -> bool {
        gvk.group == self.group
            && gvk.kind == self.kind
            && (self.versions.is_empty() || self.versions.contains(&gvk.version))
    }

    /// The projection of a duck read at `duck_path` from this mapping's path.
    pub fn projection(&self, duck_path: &str) -> Projection {
        Projection::mapped(duck_path, &self.path)
    }
}

/// The `DuckMapping` CRD (cluster-scoped; a structural schema, so the API server refuses a
/// mapping that lacks a field; a status subresource for its `Ready` condition).
pub fn mapping_crd() -> Value {
    let mut spec = structural_schema::<DuckMappingSpec>();
    spec["description"] =
        json!("The kind, the duck it implements and where it keeps the duck's fields.");
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{PLURAL}.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Cluster",
            "names": {"kind": KIND, "plural": PLURAL, "singular": "duckmapping",
                      "shortNames": ["dm"], "categories": ["dynrec"]},
            "versions": [{"name": VERSION, "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Duck", "type": "string", "jsonPath": ".spec.duck"},
                    {"name": "Group", "type": "string", "jsonPath": ".spec.group"},
                    {"name": "Kind", "type": "string", "jsonPath": ".spec.kind"},
                    {"name": "Path", "type": "string", "jsonPath": ".spec.path"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"}],
                "schema": {"openAPIV3Schema": {"type": "object", "required": ["spec"], "properties": {
                    "status": {"type": "object", "properties": {
                        "observedGeneration": {"type": "integer"},
                        "conditions": {"type": "array", "description":
                            "Ready: whether the mapping maps a served kind, and why not.",
                            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
                    "spec": spec}}}}]}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(spec: Value) -> DynamicObject {
        serde_json::from_value(
            json!({"apiVersion": "dynrec.dev/v1alpha1", "kind": "DuckMapping",
            "metadata": {"name": "m"}, "spec": spec}),
        )
        .unwrap()
    }

    #[test]
    fn a_mapping_is_read_and_bad_fields_are_named() {
        let good = object(
            json!({"duck": "PodSpecable", "group": "batch", "kind": "CronJob",
            "path": "spec.jobTemplate.spec.template"}),
        );
        let mapping = DuckMapping::from_object(&good).unwrap();
        assert!(mapping.covers(&Gvk::new("batch", "v1", "CronJob")));
        assert!(!mapping.covers(&Gvk::new("batch", "v1", "Job")));
        let cases = [
            (
                json!({"duck": "PodSpecable", "kind": "CronJob"}),
                "spec.path: required",
            ),
            (
                json!({"duck": "PodSpecable", "kind": "CronJob", "path": "spec..template"}),
                "spec.path: \"spec..template\" is not a dotted field path",
            ),
            (
                json!({"duck": "PodSpecable", "kind": "CronJob", "path": "spec", "versions": "v1"}),
                "spec.versions: invalid type: string \"v1\", expected a sequence",
            ),
            (
                json!({"kind": "CronJob", "path": "spec"}),
                "spec.duck: required",
            ),
        ];
        for (spec, expected) in cases {
            let err = DuckMapping::from_object(&object(spec)).unwrap_err();
            assert_eq!(err.to_string(), format!("DuckMapping m: {expected}"));
        }
    }
}
