use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Condition, Duck};

/// Any object whose status carries `conditions` and `observedGeneration`.
///
/// ```
/// use dynrec_duck::{Duck, KResource};
///
/// let object = serde_json::json!({
///     "metadata": {"generation": 4},
///     "status": {"observedGeneration": 4, "conditions": [{"type": "Ready", "status": "True"}]}
/// });
/// let duck = KResource::project(&object)?;
/// assert_eq!(duck.status.observed_generation, Some(4));
/// assert!(duck.status.condition("Ready").is_some_and(|c| c.is_true()));
/// # Ok::<(), dynrec_duck::ProjectionError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KResource {
    /// The object's status, as far as the duck knows it.
    #[serde(default)]
    pub status: KResourceStatus,
}

/// Conditions and observed generation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KResourceStatus {
    /// The metadata.generation last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The status conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl KResourceStatus {
    /// The condition of this type, if any.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

impl Duck for KResource {
    const NAME: &'static str = "KResource";
}
