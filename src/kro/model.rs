//! The `kro.run/v1alpha1` ResourceGraphDefinition as KRO defines it (its `api/v1alpha1`):
//! unknown fields are refused, so a typo is an error naming its path.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The API group of KRO's kinds.
pub const GROUP: &str = "kro.run";
/// The version of the ResourceGraphDefinition kind.
pub const VERSION: &str = "v1alpha1";
/// The kind.
pub const KIND: &str = "ResourceGraphDefinition";

/// A ResourceGraphDefinition: an instance kind (`schema`) and the resources each instance
/// gets.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceGraphDefinition {
    /// `kro.run/v1alpha1`.
    pub api_version: String,
    /// `ResourceGraphDefinition`.
    pub kind: String,
    /// Its name (the definition's) and, in a cluster, the rest of its metadata.
    #[serde(default)]
    pub metadata: BTreeMap<String, Value>,
    /// The instance kind and its resources.
    pub spec: GraphSpec,
    /// Written by the controller; ignored when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
}

/// `spec` of a ResourceGraphDefinition.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GraphSpec {
    /// The instance kind.
    pub schema: InstanceSchema,
    /// The resources of each instance.
    #[serde(default)]
    pub resources: Vec<Resource>,
}

/// `spec.schema`: the instance kind, its SimpleSchema and its status fields.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceSchema {
    /// The kind.
    pub kind: String,
    /// The version (`v1alpha1`), without the group.
    pub api_version: String,
    /// The group (default `kro.run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The fields of `spec`, in SimpleSchema.
    #[serde(default)]
    pub spec: Value,
    /// Custom types the fields may name.
    #[serde(default)]
    pub types: Value,
    /// Status fields, each a `${...}` expression (or text with some).
    #[serde(default)]
    pub status: Value,
    /// `Namespaced` (default) or `Cluster`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The CRD's `additionalPrinterColumns` (default: State, Ready, Age).
    #[serde(default)]
    pub additional_printer_columns: Vec<Value>,
    /// kubectl short names.
    #[serde(default)]
    pub short_names: Vec<String>,
    /// kubectl categories.
    #[serde(default)]
    pub categories: Vec<String>,
    /// Labels and annotations of the generated CRD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// One resource of the graph: a template, or a reference to an existing object.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resource {
    /// Its id, by which other expressions read it.
    pub id: String,
    /// The object to create (`${...}` in strings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Value>,
    /// An object to read instead of creating one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_ref: Option<ExternalRef>,
    /// Expressions over the resource that must all be true for it to be ready.
    #[serde(default)]
    pub ready_when: Vec<String>,
    /// Expressions over the instance that must all be true for the resource to exist.
    #[serde(default)]
    pub include_when: Vec<String>,
    /// The collection's dimensions: each a map of one iterator name to a list expression.
    #[serde(default)]
    pub for_each: Vec<BTreeMap<String, String>>,
}

/// `externalRef`: an object the graph reads but does not own.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExternalRef {
    /// Its `apiVersion`.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its name and namespace, or a label selector.
    pub metadata: ExternalRefMetadata,
}

/// `externalRef.metadata`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExternalRefMetadata {
    /// The object's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its namespace (default: the instance's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A label selector instead of a name: the resource is the list it selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// A label selector of an external reference.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Labels every selected object has.
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
}

impl ResourceGraphDefinition {
    /// Its name.
    pub fn name(&self) -> &str {
        self.metadata
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}
