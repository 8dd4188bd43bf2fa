use k8s_openapi::api::core::v1::PodTemplateSpec;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Duck;

/// Any object with a pod template at `spec.template`: Deployment, StatefulSet, DaemonSet,
/// ReplicaSet, Job, and any custom kind of that shape.
///
/// ```
/// use dynrec_duck::{Duck, PodSpecable};
///
/// let deployment = serde_json::json!({
///     "apiVersion": "apps/v1", "kind": "Deployment",
///     "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "app", "image": "nginx"}]}}}
/// });
/// let duck = PodSpecable::project(&deployment)?;
/// let containers = &duck.spec.template.spec.as_ref().unwrap().containers;
/// assert_eq!(containers[0].image.as_deref(), Some("nginx"));
/// # Ok::<(), dynrec_duck::ProjectionError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PodSpecable {
    /// The object's spec, as far as the duck knows it.
    #[serde(default)]
    pub spec: PodSpecableSpec,
}

/// The part of a PodSpecable's spec the duck knows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PodSpecableSpec {
    /// The pod template.
    #[serde(default)]
    pub template: PodTemplateSpec,
}

impl Duck for PodSpecable {
    const NAME: &'static str = "PodSpecable";
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wrong_typed_field_names_its_path() {
        let object =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "env": "x"}]}}}});
        let err = PodSpecable::project(&object).unwrap_err();
        assert_eq!(err.path, "spec.template.spec.containers[0].env");
        assert!(
            err.to_string()
                .starts_with("object is not a PodSpecable: at spec.template")
        );
    }

    #[test]
    fn unknown_fields_are_ignored_and_not_written_back() {
        let object = json!({"spec": {"replicas": 2, "selector": {}, "template": {"metadata": {"labels": {"a": "b"}}}}});
        let duck = PodSpecable::project(&object).unwrap();
        assert_eq!(
            serde_json::to_value(&duck).unwrap(),
            json!({"spec": {"template": {"metadata": {"labels": {"a": "b"}}}}})
        );
    }
}
