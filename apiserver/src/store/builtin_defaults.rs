//! The defaults kube-apiserver gives built-in kinds (its `SetDefaults_*` functions and the
//! admission plugins a cluster runs by default) for the fields controllers read: workload
//! replicas and strategies, pod template and pod spec defaults (containers, probes, volume
//! modes), Service type and session affinity, Job completions, parallelism and backoff
//! limit, PersistentVolumeClaim volume mode, the Namespace name label.

use serde_json::{Map, Value, json};

use crate::resources::ResourceInfo;

/// Sets `object[key]` to `value` when it is absent or null.
fn default(object: &mut Value, key: &str, value: Value) {
    if let Some(map) = object.as_object_mut() {
        let slot = map.entry(key.to_string()).or_insert(Value::Null);
        if slot.is_null() {
            *slot = value;
        }
    }
}

/// The object at `object[key]`, created empty when absent; `None` when it is not an object.
fn child<'a>(object: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    default(object, key, Value::Object(Map::new()));
    let child = object.get_mut(key)?;
    child.is_object().then_some(child)
}

/// Applies the defaults of a built-in kind to an object about to be stored.
pub fn apply(info: &ResourceInfo, object: &mut Value) {
    if info.custom || !object.is_object() {
        return;
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "namespaces") => namespace(object),
        ("", "pods") => {
            if let Some(spec) = child(object, "spec") {
                pod_spec(spec);
                pod_only_spec(spec);
            }
        }
        ("", "podtemplates") => template(object, "template"),
        ("", "persistentvolumeclaims") => {
            if let Some(spec) = child(object, "spec") {
                default(spec, "volumeMode", json!("Filesystem"));
            }
        }
        ("", "replicationcontrollers") => {
            if let Some(spec) = child(object, "spec") {
                default(spec, "replicas", json!(1));
                template(spec, "template");
            }
        }
        ("", "services") => {
            if let Some(spec) = child(object, "spec") {
                service_spec(spec);
            }
        }
        ("apps", "deployments") => {
            if let Some(spec) = child(object, "spec") {
                deployment_spec(spec);
            }
        }
        ("apps", "statefulsets") => {
            if let Some(spec) = child(object, "spec") {
                stateful_set_spec(spec);
            }
        }
        ("apps", "replicasets") => {
            if let Some(spec) = child(object, "spec") {
                default(spec, "replicas", json!(1));
                template(spec, "template");
            }
        }
        ("apps", "daemonsets") => {
            if let Some(spec) = child(object, "spec") {
                rolling_update(
                    spec,
                    "updateStrategy",
                    json!({"maxUnavailable": 1, "maxSurge": 0}),
                );
                default(spec, "revisionHistoryLimit", json!(10));
                template(spec, "template");
            }
        }
        ("batch", "jobs") => {
            if let Some(spec) = child(object, "spec") {
                job_spec(spec);
            }
        }
        ("batch", "cronjobs") => {
            if let Some(spec) = child(object, "spec") {
                cron_job_spec(spec);
            }
        }
        ("storage.k8s.io", "storageclasses") => {
            default(object, "reclaimPolicy", json!("Delete"));
            default(object, "volumeBindingMode", json!("Immediate"));
        }
        ("autoscaling", "horizontalpodautoscalers") => {
            if let Some(spec) = child(object, "spec") {
                default(spec, "minReplicas", json!(1));
            }
        }
        ("networking.k8s.io", "networkpolicies") => {
            if let Some(spec) = child(object, "spec") {
                network_policy_spec(spec);
            }
        }
        _ => {}
    }
}

/// `policyTypes` from the rules present, and TCP for ports with no protocol.
fn network_policy_spec(spec: &mut Value) {
    let mut types = vec![json!("Ingress")];
    if spec.get("egress").is_some_and(|e| !e.is_null()) {
        types.push(json!("Egress"));
    }
    default(spec, "policyTypes", Value::from(types));
    for direction in ["ingress", "egress"] {
        for rule in spec
            .get_mut(direction)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            for port in rule
                .get_mut("ports")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if port.is_object() {
                    default(port, "protocol", json!("TCP"));
                }
            }
        }
    }
}

/// Every namespace carries its name as the `kubernetes.io/metadata.name` label.
fn namespace(object: &mut Value) {
    let name = object["metadata"]["name"].clone();
    if let Some(metadata) = child(object, "metadata")
        && let Some(labels) = child(metadata, "labels")
    {
        labels["kubernetes.io/metadata.name"] = name;
    }
}

fn deployment_spec(spec: &mut Value) {
    default(spec, "replicas", json!(1));
    rolling_update(
        spec,
        "strategy",
        json!({"maxUnavailable": "25%", "maxSurge": "25%"}),
    );
    default(spec, "revisionHistoryLimit", json!(10));
    default(spec, "progressDeadlineSeconds", json!(600));
    template(spec, "template");
}

/// A workload's update strategy: `type` defaults to `RollingUpdate`, whose parameters
/// default to `rolling` (an empty `strategy: {}`, as kubectl sends it, is defaulted too).
fn rolling_update(spec: &mut Value, key: &str, rolling: Value) {
    if let Some(strategy) = child(spec, key) {
        default(strategy, "type", json!("RollingUpdate"));
        if strategy["type"] == "RollingUpdate" {
            default(strategy, "rollingUpdate", json!({}));
            if let Some(parameters) = strategy.get_mut("rollingUpdate").filter(|p| p.is_object())
                && let Some(defaults) = rolling.as_object()
            {
                for (field, value) in defaults {
                    default(parameters, field, value.clone());
                }
            }
        }
    }
}

fn stateful_set_spec(spec: &mut Value) {
    default(spec, "replicas", json!(1));
    default(spec, "podManagementPolicy", json!("OrderedReady"));
    rolling_update(spec, "updateStrategy", json!({"partition": 0}));
    default(spec, "revisionHistoryLimit", json!(10));
    default(
        spec,
        "persistentVolumeClaimRetentionPolicy",
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
    );
    template(spec, "template");
}

fn job_spec(spec: &mut Value) {
    if spec["completions"].is_null() && spec["parallelism"].is_null() {
        spec["completions"] = json!(1);
        spec["parallelism"] = json!(1);
    }
    default(spec, "parallelism", json!(1));
    default(spec, "backoffLimit", json!(6));
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    template(spec, "template");
}

fn cron_job_spec(spec: &mut Value) {
    default(spec, "concurrencyPolicy", json!("Allow"));
    default(spec, "suspend", json!(false));
    default(spec, "successfulJobsHistoryLimit", json!(3));
    default(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(job) = spec.get_mut("jobTemplate").filter(|j| j.is_object())
        && let Some(job_spec) = job.get_mut("spec").filter(|s| s.is_object())
    {
        template(job_spec, "template");
    }
}

/// The defaults of a pod template's spec (a workload's `spec.template`).
fn template(parent: &mut Value, key: &str) {
    if let Some(template) = parent.get_mut(key).filter(|t| t.is_object())
        && let Some(spec) = child(template, "spec")
    {
        pod_spec(spec);
    }
}

/// `SetDefaults_PodSpec` and the container defaults, shared by pods and pod templates.
fn pod_spec(spec: &mut Value) {
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "securityContext", json!({}));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            containers.iter_mut().for_each(container);
        }
    }
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        volumes.iter_mut().for_each(volume);
    }
}

/// Volume sources with file modes get `defaultMode: 420` (0644).
fn volume(volume: &mut Value) {
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(source) = volume.get_mut(source).filter(|s| s.is_object()) {
            default(source, "defaultMode", json!(420));
        }
    }
}

/// What a Pod gets beyond a template: `SetDefaults_Pod` and the default admission plugins
/// (ServiceAccount, Priority, DefaultTolerationSeconds).
fn pod_only_spec(spec: &mut Value) {
    default(spec, "enableServiceLinks", json!(true));
    default(spec, "serviceAccountName", json!("default"));
    let account = spec["serviceAccountName"].clone();
    default(spec, "serviceAccount", account);
    default(spec, "priority", json!(0));
    default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    default(spec, "tolerations", json!([]));
    if let Some(tolerations) = spec["tolerations"].as_array_mut() {
        for taint in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tolerated = tolerations.iter().any(|t| {
                t["key"] == taint && (t["effect"].is_null() || t["effect"] == "NoExecute")
            });
            if !tolerated {
                tolerations.push(json!({"key": taint, "operator": "Exists",
                    "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
}

fn container(container: &mut Value) {
    if !container.is_object() {
        return;
    }
    let policy = image_pull_policy(container["image"].as_str().unwrap_or_default());
    default(container, "imagePullPolicy", json!(policy));
    default(
        container,
        "terminationMessagePath",
        json!("/dev/termination-log"),
    );
    default(container, "terminationMessagePolicy", json!("File"));
    default(container, "resources", json!({}));
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = container.get_mut(probe).filter(|p| p.is_object()) {
            default(probe, "timeoutSeconds", json!(1));
            default(probe, "periodSeconds", json!(10));
            default(probe, "successThreshold", json!(1));
            default(probe, "failureThreshold", json!(3));
        }
    }
    if let Some(ports) = container.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter(|p| p.is_object()) {
            default(port, "protocol", json!("TCP"));
        }
    }
}

/// `Always` for an image tagged `:latest` or not tagged (and not pinned by digest), else
/// `IfNotPresent`.
pub fn image_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

fn service_spec(spec: &mut Value) {
    default(spec, "type", json!("ClusterIP"));
    let external_name = spec["type"] == "ExternalName";
    if !external_name {
        default(spec, "sessionAffinity", json!("None"));
        default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if matches!(spec["type"].as_str(), Some("NodePort" | "LoadBalancer")) {
        default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter(|p| p.is_object()) {
            default(port, "protocol", json!("TCP"));
            let number = port["port"].clone();
            default(port, "targetPort", number);
        }
    }
}

/// The QoS class kube-apiserver records for a pod: `Guaranteed` when every container has
/// cpu and memory limits equal to its requests, `BestEffort` when none has any, else
/// `Burstable`.
pub fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|list| spec[*list].as_array())
        .flatten()
        .collect();
    let empty = |v: &Value| v.as_object().is_none_or(Map::is_empty);
    if containers
        .iter()
        .all(|c| empty(&c["resources"]["requests"]) && empty(&c["resources"]["limits"]))
    {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = &c["resources"]["limits"];
        let requests = &c["resources"]["requests"];
        ["cpu", "memory"].iter().all(|resource| {
            !limits[*resource].is_null()
                && (requests[*resource].is_null() || requests[*resource] == limits[*resource])
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policy_follows_the_tag() {
        assert_eq!(image_pull_policy("nginx"), "Always");
        assert_eq!(image_pull_policy("nginx:latest"), "Always");
        assert_eq!(image_pull_policy("nginx:1.27"), "IfNotPresent");
        assert_eq!(image_pull_policy("localhost:5000/app"), "Always");
        assert_eq!(image_pull_policy("app@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn qos_classes() {
        let spec =
            |resources: Value| json!({"containers": [{"name": "c", "resources": resources}]});
        assert_eq!(qos_class(&spec(json!({}))), "BestEffort");
        assert_eq!(
            qos_class(&spec(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&spec(json!({"requests": {"cpu": "1"}}))),
            "Burstable"
        );
    }
}
