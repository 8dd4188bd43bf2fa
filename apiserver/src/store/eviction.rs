//! `pods/eviction`: deleting a pod unless a PodDisruptionBudget forbids it, as the
//! eviction subresource does (the budget's healthy and desired counts are computed here,
//! since no disruption controller runs).

use std::sync::Arc;

use serde_json::{Value, json};

use super::delete::DeleteOptions;
use super::state::State;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::resources::{ResourceInfo, ResourceKey};
use crate::selector::{LabelSelector, format_label_selector};

const BUDGET_VIOLATED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

fn budgets_key() -> ResourceKey {
    ResourceKey {
        group: "policy".into(),
        plural: "poddisruptionbudgets".into(),
    }
}

impl State {
    /// Evicts a pod: deletes it unless a disruption budget covering it has no disruption
    /// left (429 TooManyRequests, in kube's words).
    pub fn evict(
        &mut self,
        pods: &ResourceInfo,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> ApiResult<()> {
        let pod = self
            .get(&pods.key(), namespace, name)
            .ok_or_else(|| ApiError::not_found(pods, name))?;
        if !ignores_budgets(&pod) {
            let budgets: Vec<Value> = self
                .objects
                .list(&budgets_key(), Some(namespace), None)
                .filter(|budget| selects(budget, &pod))
                .map(|budget| (*budget).clone())
                .collect();
            if budgets.len() > 1 {
                return Err(ApiError::internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
            if let Some(budget) = budgets.first() {
                self.check_budget(budget, namespace)?;
            }
        }
        self.delete(pods, namespace, name, options).map(drop)
    }

    /// Refuses a disruption the budget does not allow.
    fn check_budget(&self, budget: &Value, namespace: &str) -> ApiResult<()> {
        let pods_key = ResourceKey {
            group: String::new(),
            plural: "pods".into(),
        };
        let covered: Vec<Arc<Value>> = self
            .objects
            .list(&pods_key, Some(namespace), None)
            .filter(|p| selects(budget, p))
            .collect();
        let expected = covered.len() as i64;
        let healthy = covered.iter().filter(|p| is_healthy(p)).count() as i64;
        let spec = &budget["spec"];
        let desired = if !spec["minAvailable"].is_null() {
            scaled(&spec["minAvailable"], expected)
        } else if !spec["maxUnavailable"].is_null() {
            expected - scaled(&spec["maxUnavailable"], expected)
        } else {
            expected
        };
        if healthy - desired > 0 {
            return Ok(());
        }
        let cause = json!({"reason": "DisruptionBudget", "message": format!(
            "The disruption budget {} needs {desired} healthy pods and has {healthy} currently",
            meta::name(budget)
        )});
        Err(ApiError::too_many_requests(BUDGET_VIOLATED, vec![cause]))
    }
}

/// A pod that is pending, finished or already terminating is evicted whatever the budget.
fn ignores_budgets(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Pending" | "Succeeded" | "Failed") | None
    ) || meta::is_deleting(pod)
}

/// A pod counts as healthy when it is Ready and not terminating.
fn is_healthy(pod: &Value) -> bool {
    !meta::is_deleting(pod)
        && pod["status"]["conditions"]
            .as_array()
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
}

/// An int-or-percent of `total`, percentages rounded up.
fn scaled(value: &Value, total: i64) -> i64 {
    if let Some(n) = value.as_i64() {
        return n;
    }
    let percent = value
        .as_str()
        .and_then(|s| s.strip_suffix('%'))
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(0);
    (percent * total + 99) / 100
}

/// Whether a budget's selector selects a pod (policy/v1: an empty selector selects all).
fn selects(budget: &Value, pod: &Value) -> bool {
    let selector = &budget["spec"]["selector"];
    if selector.is_null() {
        return false;
    }
    LabelSelector::parse(&format_label_selector(selector))
        .is_ok_and(|parsed| parsed.matches(meta::labels(pod)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up() {
        assert_eq!(scaled(&json!("50%"), 3), 2);
        assert_eq!(scaled(&json!(1), 3), 1);
    }
}
