//! The validations of built-in workloads that controllers trip over most, in
//! kube-apiserver's words: a workload's `spec.selector` must select its pod template's
//! labels, containers must have unique names and an image, and the pod template's
//! `restartPolicy` must be one the kind allows (updates: [`crate::workload_updates`]).

use std::collections::HashSet;

use serde_json::Value;

use crate::error::{ApiError, ApiResult, Cause};
use crate::meta::{self, at_path};
use crate::resources::ResourceInfo;
use crate::selector::LabelSelector;
use crate::selector::format_label_selector;

/// Where a kind keeps its pod spec, whether it has a selector to check, and the restart
/// policies its pods may have (kube lists them in this order).
fn pod_spec_path(info: &ResourceInfo) -> Option<(&'static str, bool, &'static [&'static str])> {
    const CONTROLLED: &[&str] = &["Always"];
    const RUN_ONCE: &[&str] = &["OnFailure", "Never"];
    match (info.group.as_str(), info.kind.as_str()) {
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet" | "DaemonSet") => {
            Some(("spec.template.spec", true, CONTROLLED))
        }
        ("batch", "Job") => Some(("spec.template.spec", false, RUN_ONCE)),
        ("batch", "CronJob") => Some(("spec.jobTemplate.spec.template.spec", false, RUN_ONCE)),
        ("", "Pod") => Some(("spec", false, &["Always", "OnFailure", "Never"])),
        _ => None,
    }
}

/// Refuses (422) a workload whose selector or containers kube-apiserver would refuse.
pub fn validate(info: &ResourceInfo, object: &Value) -> ApiResult<()> {
    let Some((pod_spec, has_selector, restart_policies)) = pod_spec_path(info) else {
        return Ok(());
    };
    let mut causes = Vec::new();
    if has_selector {
        check_selector(info, object, &mut causes);
    }
    let spec = at_path(object, pod_spec).unwrap_or(&Value::Null);
    check_containers(spec, pod_spec, &mut causes);
    // kube defaults an absent restartPolicy to Always before validating.
    let restart_policy = spec["restartPolicy"].as_str().unwrap_or("Always");
    if !restart_policies.contains(&restart_policy) {
        causes.push(Cause::not_supported(
            &format!("{pod_spec}.restartPolicy"),
            &Value::from(restart_policy),
            restart_policies,
        ));
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(info, meta::name(object), causes))
}

/// `spec.selector` is required and must select `spec.template.metadata.labels`.
fn check_selector(info: &ResourceInfo, object: &Value, causes: &mut Vec<Cause>) {
    let selector = &object["spec"]["selector"];
    if !selector.is_object() {
        causes.push(Cause::required("spec.selector", ""));
        return;
    }
    let labels = &object["spec"]["template"]["metadata"]["labels"];
    let empty = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.is_empty())
        && selector["matchExpressions"]
            .as_array()
            .is_none_or(|e| e.is_empty());
    if empty && info.kind == "Deployment" {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            field: "spec.selector".into(),
            message: "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment".into(),
        });
        return;
    }
    if !selects(selector, labels) {
        causes.push(Cause {
            reason: "FieldValueInvalid",
            field: "spec.template.metadata.labels".into(),
            message: format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                go_string_map(labels)
            ),
        });
    }
}

/// Whether a `LabelSelector` selects `labels` (a selector that does not parse selects nothing).
fn selects(selector: &Value, labels: &Value) -> bool {
    LabelSelector::parse(&format_label_selector(selector))
        .is_ok_and(|parsed| parsed.matches(labels.as_object()))
}

/// Labels as Go's `%#v` prints a `map[string]string`.
pub(crate) fn go_string_map(labels: &Value) -> String {
    let Some(map) = labels.as_object() else {
        return "map[string]string(nil)".into();
    };
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let entries: Vec<String> = entries
        .into_iter()
        .map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or_default()))
        .collect();
    format!("map[string]string{{{}}}", entries.join(", "))
}

/// Containers: at least one, each with a unique name and an image.
fn check_containers(pod_spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let containers = pod_spec["containers"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if containers.is_empty() {
        causes.push(Cause::required(&format!("{path}.containers"), ""));
        return;
    }
    let mut names = HashSet::new();
    for (i, container) in containers.iter().enumerate() {
        let at = format!("{path}.containers[{i}]");
        match container["name"].as_str().unwrap_or_default() {
            "" => causes.push(Cause::required(&format!("{at}.name"), "")),
            name if !names.insert(name) => {
                causes.push(Cause::duplicate(&format!("{at}.name"), &Value::from(name)))
            }
            _ => {}
        }
        if container["image"].as_str().unwrap_or_default().is_empty() {
            causes.push(Cause::required(&format!("{at}.image"), ""));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_select_labels() {
        let labels = json!({"app": "web", "tier": "front"});
        assert!(selects(&json!({"matchLabels": {"app": "web"}}), &labels));
        assert!(!selects(&json!({"matchLabels": {"app": "db"}}), &labels));
        let expression = |op: &str| json!({"matchExpressions": [{"key": "tier", "operator": op, "values": ["front"]}]});
        assert!(selects(&expression("In"), &labels));
        assert!(!selects(&expression("NotIn"), &labels));
        assert!(selects(&expression("Exists"), &labels));
        assert!(!selects(&expression("DoesNotExist"), &labels));
        assert_eq!(
            go_string_map(&labels),
            r#"map[string]string{"app":"web", "tier":"front"}"#
        );
        assert_eq!(go_string_map(&Value::Null), "map[string]string(nil)");
    }
}
