//! The `ReconcilerDefinition` as written (YAML or JSON): a kind to reconcile and a tree of
//! steps. Unknown fields are refused, so a typo is an error that names its path.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The group of the `ReconcilerDefinition` kind.
pub const GROUP: &str = "dynrec.dev";
/// The version of the `ReconcilerDefinition` kind.
pub const VERSION: &str = "v1alpha1";
/// The kind of a definition.
pub const KIND: &str = "ReconcilerDefinition";

/// A controller described as data.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconcilerDefinition {
    /// `dynrec.dev/v1alpha1`.
    pub api_version: String,
    /// `ReconcilerDefinition`.
    pub kind: String,
    /// Its name (which names the controller) and, in a cluster, the rest of its metadata.
    pub metadata: DefinitionMeta,
    /// What to reconcile and how.
    pub spec: DefinitionSpec,
    /// Written by dynrec in a cluster; ignored when loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
}

/// The metadata a definition needs (others a cluster adds are kept but not used).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionMeta {
    /// The definition's name.
    #[serde(default)]
    pub name: String,
    /// Changes with every change of the spec (in a cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// Everything else (labels, uid, resourceVersion, ...).
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// What a definition reconciles and the steps it takes.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefinitionSpec {
    /// The reconciled kind (the parent of every child).
    #[serde(rename = "for")]
    pub for_kind: KindRef,
    /// When set, dynrec creates and keeps the parent's CRD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<ParentSchema>,
    /// Whether dynrec writes conditions and `observedGeneration` on the parent. Default:
    /// true when `schema:` defines the kind, false otherwise (the kind's own controller owns
    /// its status; `sync` steps still write the fields they name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owns_status: Option<bool>,
    /// Further condition types `Ready` waits for (set by no step of this definition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<String>,
    /// The steps, run in order of their bindings (a step after the steps it reads).
    pub steps: Vec<Step>,
    /// Whether reads the checker cannot prove present (its warnings) are errors.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
    /// The identity the steps act as: every read, write and watch goes through a client
    /// impersonating this ServiceAccount (default: dynrec's own identity, or the one
    /// `--default-service-account` names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccountRef>,
    /// KRO's conventions on instances (set for a definition read from a
    /// ResourceGraphDefinition): its finalizer and labels, `status.state`, conditions
    /// carrying `observedGeneration`, and deletion of the children in reverse order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kro: Option<KroConventions>,
}

/// KRO's conventions on the instances of a definition.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KroConventions {
    /// The ResourceGraphDefinition's name, on each instance as the label
    /// `kro.run/resource-graph-definition-name`.
    pub resource_graph_definition: String,
    /// KRO's custom status conditions (an RGD's `spec.schema.status.conditions`): each a
    /// `${...}` returning `runtime.newCondition(...)` or a list of them. When given, only
    /// they are written to `status.conditions` (KRO's four are still computed, and read
    /// with `runtime.condition(self, 'Ready')`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<String>,
}

/// A ServiceAccount, by namespace and name (definitions are cluster-scoped).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceAccountRef {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
}

impl std::fmt::Display for ServiceAccountRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl std::str::FromStr for ServiceAccountRef {
    type Err = String;

    /// `NAMESPACE/NAME`.
    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok(Self {
                    name: name.into(),
                    namespace: namespace.into(),
                })
            }
            _ => Err(format!("{text:?} is not NAMESPACE/NAME")),
        }
    }
}

/// A kind by `apiVersion` and `kind`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KindRef {
    /// `group/version`, or `version` for the core group.
    pub api_version: String,
    /// The kind.
    pub kind: String,
}

/// The parent's CRD, when the definition defines the API too.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParentSchema {
    /// `Namespaced` (default) or `Cluster`.
    #[serde(default = "namespaced")]
    pub scope: String,
    /// The plural (default: the lowercased kind plus `s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plural: Option<String>,
    /// Short names for kubectl.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Categories for kubectl (`kubectl get all` takes `all`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// `additionalPrinterColumns`, as in a CRD.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub printer_columns: Vec<Value>,
    /// The structural schema of the whole object, as in a CRD version.
    #[serde(rename = "openAPIV3Schema")]
    pub open_api_v3_schema: Value,
}

fn namespaced() -> String {
    "Namespaced".into()
}

/// The key naming each kind of [`Step`], as written.
pub const STEP_KINDS: [&str; 6] = ["child", "childSet", "sync", "ref", "if", "finalizer"];

/// One step of a definition.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Step {
    /// Zero or one child object (a `ChildReconciler`).
    Child(ChildStep),
    /// One child per item of a list (a `ChildSetReconciler`).
    ChildSet(ChildSetStep),
    /// Status fields computed from expressions.
    Sync(SyncStep),
    /// Another object, read (and tracked) for later expressions.
    Ref(RefStep),
    /// Steps run only when a condition holds (an `IfThen`).
    If(IfStep),
    /// Steps run with a finalizer held on the parent (a `WithFinalizer`).
    Finalizer(FinalizerStep),
}

/// How a child is written.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ManagerKind {
    /// Server-side apply (the default).
    #[default]
    Apply,
    /// Create, then update what the template sets.
    Update,
}

/// A child object.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChildStep {
    /// The binding later expressions read the child by (a CEL identifier).
    pub id: String,
    /// The child; string values may hold `${...}` expressions.
    pub template: Value,
    /// Expressions that must all be true for the child to exist (else it is deleted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_when: Vec<String>,
    /// Expressions over `child` that must all be true for the child to be ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ready_when: Vec<String>,
    /// The condition set on the parent (default `{Id}Ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// How the child is written.
    #[serde(default)]
    pub manager: ManagerKind,
}

/// One child per item of a list.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChildSetStep {
    /// The binding later expressions read the children by (a list).
    pub id: String,
    /// The list (`${expr}`); each item is bound as `each`.
    pub for_each: String,
    /// The id of an item's child (`${expr}` over `each`), unique in the set.
    pub item_id: String,
    /// The child of one item.
    pub template: Value,
    /// Expressions that must all be true for the set to exist (else its children go).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_when: Vec<String>,
    /// Expressions over `child` that must be true for every child.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ready_when: Vec<String>,
    /// The condition set on the parent (default `{Id}Ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// How the children are written.
    #[serde(default)]
    pub manager: ManagerKind,
}

/// Status fields computed from expressions.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SyncStep {
    /// Names the step (default `status`); its condition is `{Id}Synced`.
    #[serde(default = "status_id")]
    pub id: String,
    /// Merged into the parent's status; string values may hold `${...}`.
    pub status: Value,
    /// The condition set on the parent (default `{Id}Synced`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

fn status_id() -> String {
    "status".into()
}

/// Another object read for later expressions.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RefStep {
    /// The binding: the object, or a list when a selector is given.
    pub id: String,
    /// The referenced kind's `apiVersion`.
    pub api_version: String,
    /// The referenced kind.
    pub kind: String,
    /// Its name (may hold `${...}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its namespace (default: the parent's; may hold `${...}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A label selector (`matchLabels`) instead of a name; binds a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<RefSelector>,
    /// A missing object binds `null` instead of failing.
    #[serde(default)]
    pub optional: bool,
    /// The condition set on the parent (default `{Id}Resolved`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

/// A label selector of a ref.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RefSelector {
    /// Labels every selected object has (values may hold `${...}`).
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
}

/// Steps that run only when a condition holds.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IfStep {
    /// A bool expression over the parent and earlier bindings.
    pub condition: String,
    /// Run when it is true.
    #[serde(default)]
    pub then: Vec<Step>,
    /// Run when it is false.
    #[serde(default, rename = "else", skip_serializing_if = "Vec::is_empty")]
    pub otherwise: Vec<Step>,
}

/// Steps run with a finalizer held on the parent.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FinalizerStep {
    /// The finalizer (e.g. `example.com/cleanup`).
    pub name: String,
    /// The steps; they also run while the parent is deleted, before the finalizer goes.
    pub steps: Vec<Step>,
}

impl Step {
    /// The step's kind as written (`child`, `childSet`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Child(_) => "child",
            Step::ChildSet(_) => "childSet",
            Step::Sync(_) => "sync",
            Step::Ref(_) => "ref",
            Step::If(_) => "if",
            Step::Finalizer(_) => "finalizer",
        }
    }

    /// The binding the step declares, if any.
    pub fn id(&self) -> Option<&str> {
        match self {
            Step::Child(s) => Some(&s.id),
            Step::ChildSet(s) => Some(&s.id),
            Step::Sync(s) => Some(&s.id),
            Step::Ref(s) => Some(&s.id),
            Step::If(_) | Step::Finalizer(_) => None,
        }
    }
}
