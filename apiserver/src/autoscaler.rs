//! One pass of kube-controller-manager's HorizontalPodAutoscaler controller over an HPA, as
//! far as it goes with no metrics API: the replica count of the target is kept inside
//! `[minReplicas, maxReplicas]`, a target at 0 replicas is left alone (autoscaling
//! disabled), and the HPA's status gets the replica counts and conditions kube writes,
//! in its words (`pkg/controller/podautoscaler/horizontal.go`'s `reconcileAutoscaler`).
//! Every metric fails as it does in a cluster with no metrics server, so nothing scales on
//! load. The store runs it inside writes: [`crate::store`]'s `autoscaling`.

use serde_json::{Map, Value, json};

use crate::selector::format_label_selector;

/// What the controller reads of the target: its Scale's `spec.replicas` and whether the
/// Scale has a `status.selector`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetScale {
    /// The Scale's `spec.replicas` (kube's `currentReplicas`).
    pub replicas: i64,
    /// Whether the Scale names the pods it counts (`status.selector`).
    pub has_selector: bool,
}

impl TargetScale {
    /// The parts of an `autoscaling/v1` Scale the controller reads.
    pub fn of(scale: &Value) -> Self {
        TargetScale {
            replicas: scale["spec"]["replicas"].as_i64().unwrap_or(0),
            has_selector: scale["status"]["selector"]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
        }
    }
}

/// The result of a pass: the replica count to write into the target's scale, if any, and
/// the HPA's new status (as `autoscaling/v2` words it).
#[derive(Clone, Debug, PartialEq)]
pub struct Pass {
    /// The replicas to scale the target to.
    pub rescale: Option<i64>,
    /// The status once the rescale, if any, succeeded.
    pub status: Value,
}

/// One pass over `hpa`, given its target's scale or why it could not be read (kube's
/// message, e.g. `deployments/scale.apps "web" not found`); `now` stamps condition
/// transitions and `lastScaleTime`.
pub fn reconcile(hpa: &Value, target: Result<TargetScale, &str>, now: &str) -> Pass {
    let mut status = Status::from(hpa, now);
    let scale = match target {
        Ok(scale) => scale,
        Err(error) => {
            status.condition(
                "AbleToScale",
                "False",
                "FailedGetScale",
                format!("the HPA controller was unable to get the target's current scale: {error}"),
            );
            return status.finish(None);
        }
    };
    status.condition(
        "AbleToScale",
        "True",
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale".into(),
    );
    let current = scale.replicas;
    let spec = &hpa["spec"];
    let min = spec["minReplicas"].as_i64().unwrap_or(1);
    let max = spec["maxReplicas"].as_i64().unwrap_or(0);
    let desired = if current == 0 && min != 0 {
        status.condition(
            "ScalingActive",
            "False",
            "ScalingDisabled",
            "scaling is disabled since the replica count of the target is zero".into(),
        );
        status.replicas(current, current);
        return status.finish(None);
    } else if current > max {
        max
    } else if current < min {
        min
    } else {
        // In range: kube asks the metrics APIs, which are not served here, so every
        // metric fails and the status records why, keeping the last desired count.
        let metrics = if scale.has_selector {
            let (reason, message) = first_metric_failure(hpa);
            status.condition("ScalingActive", "False", reason, message);
            Some(metric_count(hpa))
        } else {
            status.condition(
                "ScalingActive",
                "False",
                "InvalidSelector",
                "the HPA target's scale is missing a selector".into(),
            );
            None
        };
        let last_desired = status.desired();
        status.replicas(current, last_desired);
        status.metrics(metrics);
        return status.finish(None);
    };
    status.condition(
        "AbleToScale",
        "True",
        "SucceededRescale",
        format!("the HPA controller was able to update the target scale to {desired}"),
    );
    status.replicas(current, desired);
    status.scaled_at(now);
    status.finish(Some(desired))
}

/// The status after a rescale the target refused (`error`, as the API server answered).
pub fn rescale_failed(hpa: &Value, current: i64, error: &str, now: &str) -> Value {
    let mut status = Status::from(hpa, now);
    status.condition(
        "AbleToScale",
        "False",
        "FailedUpdateScale",
        format!("the HPA controller was unable to update the target scale: {error}"),
    );
    let last_desired = status.desired();
    status.replicas(current, last_desired);
    status.finish(None).status
}

/// The HPA's status as a pass rewrites it.
struct Status<'a> {
    hpa: &'a Value,
    now: &'a str,
    last_scale_time: Value,
    current: i64,
    desired: i64,
    metrics: Value,
    conditions: Vec<Value>,
}

impl<'a> Status<'a> {
    fn from(hpa: &'a Value, now: &'a str) -> Self {
        let old = &hpa["status"];
        Status {
            hpa,
            now,
            last_scale_time: old["lastScaleTime"].clone(),
            current: old["currentReplicas"].as_i64().unwrap_or(0),
            desired: old["desiredReplicas"].as_i64().unwrap_or(0),
            metrics: old["currentMetrics"].clone(),
            conditions: old["conditions"].as_array().cloned().unwrap_or_default(),
        }
    }

    fn desired(&self) -> i64 {
        self.desired
    }

    /// kube's `setStatus`: the replica counts; the metrics are those of this pass (none).
    fn replicas(&mut self, current: i64, desired: i64) {
        self.current = current;
        self.desired = desired;
        self.metrics = Value::Null;
    }

    /// One empty `MetricStatus` per metric, as kube records metrics it could not read.
    fn metrics(&mut self, count: Option<usize>) {
        self.metrics = count.map_or(Value::Null, |n| Value::from(vec![json!({"type": ""}); n]));
    }

    fn scaled_at(&mut self, now: &str) {
        self.last_scale_time = Value::from(now);
    }

    /// kube's `setCondition`: the condition keeps its place and its `lastTransitionTime`
    /// unless its status changes; a new one goes last.
    fn condition(&mut self, kind: &str, status: &str, reason: &str, message: String) {
        let at = self.conditions.iter().position(|c| c["type"] == kind);
        let transition = match at.map(|i| &self.conditions[i]) {
            Some(old) if old["status"] == status => old["lastTransitionTime"].clone(),
            _ => Value::from(self.now),
        };
        let condition = json!({
            "type": kind,
            "status": status,
            "lastTransitionTime": transition,
            "reason": reason,
            "message": message,
        });
        match at {
            Some(i) => self.conditions[i] = condition,
            None => self.conditions.push(condition),
        }
    }

    /// The status in the field order of the HPA's version: `autoscaling/v1` has no
    /// conditions nor metrics (kube converts them into an annotation, which this
    /// one-object store does not).
    fn finish(self, rescale: Option<i64>) -> Pass {
        let v1 = self.hpa["apiVersion"] == "autoscaling/v1";
        let mut status = Map::new();
        if let Some(generation) = self.hpa["metadata"]["generation"].as_i64() {
            status.insert("observedGeneration".into(), Value::from(generation));
        }
        if !self.last_scale_time.is_null() {
            status.insert("lastScaleTime".into(), self.last_scale_time);
        }
        // v2 omits a zero currentReplicas; v1 always has it.
        if self.current != 0 || v1 {
            status.insert("currentReplicas".into(), Value::from(self.current));
        }
        status.insert("desiredReplicas".into(), Value::from(self.desired));
        if !v1 {
            if !self.metrics.is_null() {
                status.insert("currentMetrics".into(), self.metrics);
            }
            if !self.conditions.is_empty() {
                status.insert("conditions".into(), Value::from(self.conditions));
            }
        }
        Pass {
            rescale,
            status: Value::Object(status),
        }
    }
}

/// How many metrics the HPA has: with none listed kube defaults to one (CPU at 80%).
fn metric_count(hpa: &Value) -> usize {
    hpa["spec"]["metrics"]
        .as_array()
        .map_or(1, |metrics| metrics.len().max(1))
}

/// The ScalingActive reason and message of the HPA's first metric, which cannot be read.
fn first_metric_failure(hpa: &Value) -> (&'static str, String) {
    const RESOURCE_API: &str = "unable to fetch metrics from resource metrics API: the server \
         could not find the requested resource (get pods.metrics.k8s.io)";
    const CUSTOM_API: &str = "unable to fetch metrics from custom metrics API: no custom \
         metrics API (custom.metrics.k8s.io) registered";
    const EXTERNAL_API: &str = "unable to fetch metrics from external metrics API: no \
         external metrics API (external.metrics.k8s.io) registered";
    // What kube defaults an empty list to (and reads a v1 HPA's CPU target as).
    let default_cpu = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"averageUtilization": 80}}});
    let metric = hpa["spec"]["metrics"]
        .as_array()
        .and_then(|m| m.first())
        .unwrap_or(&default_cpu);
    let kind = metric["type"].as_str().unwrap_or_default();
    let (reason, error) = match kind {
        "Resource" | "ContainerResource" => {
            let source = if kind == "Resource" {
                &metric["resource"]
            } else {
                &metric["containerResource"]
            };
            let name = source["name"].as_str().unwrap_or_default();
            let target = &source["target"];
            let measure = if target["averageValue"].is_null() {
                "utilization"
            } else {
                "usage"
            };
            let reason = if kind == "Resource" {
                "FailedGetResourceMetric"
            } else {
                "FailedGetContainerResourceMetric"
            };
            let error = if target["averageValue"].is_null()
                && target["averageUtilization"].is_null()
            {
                "invalid resource metric source: neither an average utilization target nor an \
                 average value (usage) target was set"
                    .to_string()
            } else {
                format!(
                    "failed to get {name} {measure}: unable to get metrics for resource {name}: {RESOURCE_API}"
                )
            };
            (reason, error)
        }
        "Pods" => {
            let name = metric["pods"]["metric"]["name"]
                .as_str()
                .unwrap_or_default();
            (
                "FailedGetPodsMetric",
                format!("unable to get metric {name}: {CUSTOM_API}"),
            )
        }
        "Object" => {
            let object = &metric["object"];
            let name = object["metric"]["name"].as_str().unwrap_or_default();
            let described = &object["describedObject"];
            (
                "FailedGetObjectMetric",
                format!(
                    "unable to get metric {name}: {} on {} {}/{CUSTOM_API}",
                    described["kind"].as_str().unwrap_or_default(),
                    hpa["metadata"]["namespace"].as_str().unwrap_or_default(),
                    described["name"].as_str().unwrap_or_default(),
                ),
            )
        }
        "External" => {
            let source = &metric["external"]["metric"];
            (
                "FailedGetExternalMetric",
                format!(
                    "unable to get external metric {}/{}/{}: {EXTERNAL_API}",
                    hpa["metadata"]["namespace"].as_str().unwrap_or_default(),
                    source["name"].as_str().unwrap_or_default(),
                    format_label_selector(&source["selector"]),
                ),
            )
        }
        other => (
            "InvalidMetricSourceType",
            format!("unknown metric source type {other:?}"),
        ),
    };
    (
        reason,
        format!("the HPA was unable to compute the replica count: {error}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-01-01T00:00:00Z";

    fn hpa(min: i64, max: i64) -> Value {
        json!({
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default", "generation": 1},
            "spec": {
                "minReplicas": min, "maxReplicas": max,
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
            },
        })
    }

    fn scale(replicas: i64) -> Result<TargetScale, &'static str> {
        Ok(TargetScale {
            replicas,
            has_selector: true,
        })
    }

    fn reasons(status: &Value) -> Vec<(String, String)> {
        status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["type"].as_str().unwrap().into(),
                    c["reason"].as_str().unwrap().into(),
                )
            })
            .collect()
    }

    #[test]
    fn below_min_scales_up_and_records_the_scale() {
        let pass = reconcile(&hpa(2, 5), scale(1), NOW);
        assert_eq!(pass.rescale, Some(2));
        assert_eq!(pass.status["lastScaleTime"], NOW);
        assert_eq!(pass.status["currentReplicas"], 1);
        assert_eq!(pass.status["desiredReplicas"], 2);
        assert_eq!(
            reasons(&pass.status),
            [("AbleToScale".into(), "SucceededRescale".into())]
        );
    }

    #[test]
    fn above_max_scales_down() {
        assert_eq!(reconcile(&hpa(1, 3), scale(7), NOW).rescale, Some(3));
    }

    #[test]
    fn in_range_keeps_the_count_and_says_metrics_failed() {
        let pass = reconcile(&hpa(1, 5), scale(2), NOW);
        assert_eq!(pass.rescale, None);
        assert_eq!(pass.status["currentReplicas"], 2);
        assert_eq!(pass.status["desiredReplicas"], 0);
        assert_eq!(pass.status["currentMetrics"], json!([{"type": ""}]));
        let active = &pass.status["conditions"][1];
        assert_eq!(active["reason"], "FailedGetResourceMetric");
        assert_eq!(
            active["message"],
            "the HPA was unable to compute the replica count: failed to get cpu utilization: \
             unable to get metrics for resource cpu: unable to fetch metrics from resource \
             metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)"
        );
    }

    #[test]
    fn zero_replicas_disable_scaling() {
        let pass = reconcile(&hpa(2, 5), scale(0), NOW);
        assert_eq!(pass.rescale, None);
        assert_eq!(pass.status["desiredReplicas"], 0);
        assert!(pass.status.get("currentReplicas").is_none());
        assert_eq!(pass.status["conditions"][1]["reason"], "ScalingDisabled");
    }

    #[test]
    fn a_missing_target_is_reported_and_nothing_scales() {
        let pass = reconcile(
            &hpa(2, 5),
            Err("deployments/scale.apps \"web\" not found"),
            NOW,
        );
        assert_eq!(pass.rescale, None);
        assert_eq!(
            pass.status["conditions"][0]["message"],
            "the HPA controller was unable to get the target's current scale: \
             deployments/scale.apps \"web\" not found"
        );
    }

    #[test]
    fn a_condition_keeps_its_transition_time_while_its_status_holds() {
        let mut first = hpa(1, 5);
        first["status"] = reconcile(&first, scale(2), "2026-01-01T00:00:00Z").status;
        let second = reconcile(&first, scale(3), "2026-01-01T00:05:00Z").status;
        assert_eq!(
            second["conditions"][0]["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(second["currentReplicas"], 3);
    }

    #[test]
    fn v1_status_has_no_conditions() {
        let mut v1 = hpa(2, 5);
        v1["apiVersion"] = json!("autoscaling/v1");
        let status = reconcile(&v1, scale(2), NOW).status;
        assert_eq!(
            status,
            json!({"observedGeneration": 1, "currentReplicas": 2, "desiredReplicas": 0})
        );
    }
}
