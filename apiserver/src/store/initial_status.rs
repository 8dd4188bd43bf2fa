//! The status a built-in object has right after create, as kube-apiserver's registries
//! write it: their `PrepareForCreate` resets the status to the Go zero value (Nodes alone
//! keep the status they are created with), the versioned defaults set a phase, and
//! encoding/json writes every struct and every field without `omitempty` — so a new Service
//! reads `status: {loadBalancer: {}}` and a new ReplicaSet `status: {replicas: 0}`.

use serde_json::{Map, Value, json};

use crate::meta;
use crate::resources::ResourceInfo;

/// Whether create keeps the status the client sent: kube's node strategy allows "all
/// fields, including status" on create; other kinds with a status subresource drop it.
pub fn kept_on_create(info: &ResourceInfo) -> bool {
    !info.custom && info.group.is_empty() && info.plural == "nodes"
}

/// The zero status of a kind as Go writes it, or `None` where the server keeps none (custom
/// kinds, kinds with no status, and the Pod, Namespace and CRD, whose status is set apart).
fn zero_status(info: &ResourceInfo) -> Option<Value> {
    if info.custom {
        return None;
    }
    let status = match (info.group.as_str(), info.plural.as_str()) {
        ("", "services") | ("networking.k8s.io", "ingresses") => json!({"loadBalancer": {}}),
        ("", "persistentvolumeclaims") => json!({"phase": "Pending"}),
        ("", "persistentvolumes") => {
            json!({"phase": "Pending", "lastPhaseTransitionTime": meta::now_rfc3339()})
        }
        ("", "nodes") => json!({
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {
                "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                "kubeProxyVersion": "", "operatingSystem": "", "architecture": "",
            },
        }),
        ("", "replicationcontrollers") | ("apps", "replicasets") => json!({"replicas": 0}),
        ("apps", "statefulsets") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "daemonsets") => json!({
            "currentNumberScheduled": 0, "numberMisscheduled": 0,
            "desiredNumberScheduled": 0, "numberReady": 0,
        }),
        ("policy", "poddisruptionbudgets") => json!({
            "disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0,
        }),
        ("", "resourcequotas")
        | ("apps", "deployments")
        | ("batch", "jobs")
        | ("batch", "cronjobs")
        | ("certificates.k8s.io", "certificatesigningrequests")
        | ("apiregistration.k8s.io", "apiservices") => json!({}),
        _ => return None,
    };
    Some(status)
}

/// Fills a new object's status with its kind's zero status: fields the object's status
/// (a Node's, sent by the client) leaves out, at every depth.
pub fn apply(info: &ResourceInfo, object: &mut Value) {
    let Some(zero) = zero_status(info) else {
        return;
    };
    let Some(map) = object.as_object_mut() else {
        return;
    };
    let status = map
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    fill(status, zero);
}

/// Sets each field of `zero` that `value` lacks (or has as null), recursing into objects.
fn fill(value: &mut Value, zero: Value) {
    if value.is_null() {
        *value = zero;
        return;
    }
    let (Some(map), Value::Object(zero)) = (value.as_object_mut(), zero) else {
        return;
    };
    for (key, zero_field) in zero {
        fill(map.entry(key).or_insert(Value::Null), zero_field);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;

    #[test]
    fn a_node_keeps_its_status_and_gets_the_zero_fields_it_lacks() {
        let registry = Registry::with_builtins();
        let info = registry.get("", "v1", "nodes").unwrap();
        let mut node = json!({"status": {"nodeInfo": {"architecture": "arm64"}}});
        apply(&info, &mut node);
        assert_eq!(node["status"]["nodeInfo"]["architecture"], "arm64");
        assert_eq!(node["status"]["nodeInfo"]["bootID"], "");
        assert_eq!(
            node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"],
            0
        );
    }
}
