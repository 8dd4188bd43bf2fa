//! CRDs dynrec installs: the `ReconcilerDefinition` kind itself, and a parent kind a
//! definition defines with `schema:`.

use serde_json::{Value, json};

use super::model::{DefinitionSpec, GROUP, KIND, ParentSchema, VERSION};
use crate::object::{Gvk, structural_schema};

/// The plural of the `ReconcilerDefinition` kind.
pub const PLURAL: &str = "reconcilerdefinitions";

/// The kind of a definition in a cluster.
pub fn definition_gvk() -> Gvk {
    Gvk::new(GROUP, VERSION, KIND)
}

/// The `ReconcilerDefinition` CRD (cluster-scoped): its schema is generated from
/// [`DefinitionSpec`], so the API server refuses unknown fields and wrong types and
/// `kubectl explain` documents every field; dynrec's loader still checks what a schema
/// cannot (expressions, bindings, kinds).
pub fn definition_crd() -> Value {
    let mut spec = structural_schema::<DefinitionSpec>();
    spec["description"] = json!("What to reconcile (for) and the steps that reconcile it.");
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{PLURAL}.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Cluster",
            "names": {"kind": KIND, "plural": PLURAL, "singular": "reconcilerdefinition",
                      "shortNames": ["rd"], "categories": ["dynrec"]},
            "versions": [{"name": VERSION, "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "For", "type": "string", "jsonPath": ".status.for"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Instances", "type": "integer", "jsonPath": ".status.instances"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": spec,
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                               "description": "Written by dynrec: the reconciled kind, conditions and instance count."}}}}}]}
    })
}

/// The CRD of a parent kind defined by a definition's `schema:`: the given schema, a status
/// subresource, printer columns, and `status` kept open for conditions when the schema
/// does not describe it.
pub fn parent_crd(gvk: &Gvk, schema: &ParentSchema) -> Value {
    let plural = schema
        .plural
        .clone()
        .unwrap_or_else(|| format!("{}s", gvk.kind.to_lowercase()));
    let mut open_api = schema.open_api_v3_schema.clone();
    if open_api.get("type").is_none() {
        open_api["type"] = json!("object");
    }
    if open_api.pointer("/properties/status").is_none() {
        open_api["properties"]["status"] =
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    }
    let mut columns = schema.printer_columns.clone();
    if columns.is_empty() {
        columns.push(json!({"name": "Ready", "type": "string",
            "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}));
        columns.push(
            json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
        );
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{}", gvk.group)},
        "spec": {"group": gvk.group, "scope": schema.scope,
            "names": {"kind": gvk.kind, "plural": plural, "singular": gvk.kind.to_lowercase(),
                      "shortNames": schema.short_names, "categories": schema.categories},
            "versions": [{"name": gvk.version, "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": open_api}}]}
    })
}
