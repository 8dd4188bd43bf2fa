//! What an update may not change in a workload, as kube's apps and batch strategies refuse
//! it: the `spec.selector` of a Deployment, ReplicaSet, DaemonSet or Job (`field is
//! immutable`), and a StatefulSet's spec beyond the fields kube lets change.

use serde_json::Value;

use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::resources::ResourceInfo;
use crate::workloads::go_string_map;

/// The StatefulSet spec fields an update may change (kube's `ValidateStatefulSetUpdate`).
const STATEFUL_SET_MUTABLE: [&str; 6] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

/// Refuses (422) an update of a workload that changes what kube keeps.
pub fn validate(info: &ResourceInfo, object: &Value, old: &Value) -> ApiResult<()> {
    let cause = match (info.group.as_str(), info.kind.as_str()) {
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") | ("batch", "Job") => {
            selector_change(object, old)
        }
        ("apps", "StatefulSet") => stateful_set_change(object, old),
        _ => None,
    };
    match cause {
        Some(cause) => Err(ApiError::invalid(info, meta::name(object), vec![cause])),
        None => Ok(()),
    }
}

fn selector_change(object: &Value, old: &Value) -> Option<Cause> {
    let selector = &object["spec"]["selector"];
    if semantically_equal(selector, &old["spec"]["selector"]) {
        return None;
    }
    let shown = go_label_selector(selector);
    Some(Cause::invalid_go(
        "spec.selector",
        &shown,
        "field is immutable",
    ))
}

fn stateful_set_change(object: &Value, old: &Value) -> Option<Cause> {
    let fixed = |spec: &Value| {
        let mut spec = spec.as_object().cloned().unwrap_or_default();
        spec.retain(|key, _| !STATEFUL_SET_MUTABLE.contains(&key.as_str()));
        Value::Object(spec)
    };
    if semantically_equal(&fixed(&object["spec"]), &fixed(&old["spec"])) {
        return None;
    }
    Some(Cause::forbidden(
        "spec",
        "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', \
         'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    ))
}

/// Equal as apimachinery's `Semantic.DeepEqual` compares: an empty map or list is the same
/// as an absent one.
fn semantically_equal(a: &Value, b: &Value) -> bool {
    without_empties(a) == without_empties(b)
}

fn without_empties(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), without_empties(value)))
                .filter(|(_, value)| !is_empty(value))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_empties).collect()),
        other => other.clone(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// A `LabelSelector` as Go's `%#v` prints `v1.LabelSelector`.
fn go_label_selector(selector: &Value) -> String {
    let expressions = match selector["matchExpressions"].as_array() {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(items) => {
            let items: Vec<String> = items.iter().map(go_requirement).collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{expressions}}}",
        go_string_map(&selector["matchLabels"])
    )
}

fn go_requirement(requirement: &Value) -> String {
    let text = |field: &str| format!("{:?}", requirement[field].as_str().unwrap_or_default());
    let values = match requirement["values"].as_array() {
        None => "[]string(nil)".to_string(),
        Some(values) => {
            let values: Vec<String> = values
                .iter()
                .map(|v| format!("{:?}", v.as_str().unwrap_or_default()))
                .collect();
            format!("[]string{{{}}}", values.join(", "))
        }
    };
    format!(
        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
        text("key"),
        text("operator")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_print_as_go_prints_them() {
        assert_eq!(
            go_label_selector(&json!({"matchLabels": {"app": "web"}})),
            r#"v1.LabelSelector{MatchLabels:map[string]string{"app":"web"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        );
        let expression =
            json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]});
        assert_eq!(
            go_label_selector(&expression),
            r#"v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"tier", Operator:"In", Values:[]string{"a", "b"}}}}"#
        );
    }

    #[test]
    fn empty_and_absent_are_the_same_selector() {
        assert!(semantically_equal(
            &json!({"matchLabels": {"a": "b"}, "matchExpressions": []}),
            &json!({"matchLabels": {"a": "b"}})
        ));
        assert!(!semantically_equal(
            &json!({"matchLabels": {"a": "b"}}),
            &json!({"matchLabels": {"a": "c"}})
        ));
    }
}
