//! KRO's conditions on an instance, as KRO writes them: `InstanceManaged`,
//! `GraphResolved` and `ResourcesReady`, and `Ready` summarizing them, with KRO's reasons
//! and messages. They replace the per-step conditions a definition's steps set, which KRO
//! does not show: the first step that is not ready is named in `ResourcesReady`'s message.

use jiff::Timestamp;

use crate::object::{ConditionError, ConditionSet, StatusExt};

/// The finalizer and labels are on the instance.
pub const INSTANCE_MANAGED: &str = "InstanceManaged";
/// The graph's expressions were resolved for the instance.
pub const GRAPH_RESOLVED: &str = "GraphResolved";
/// Every resource of the graph is created and ready.
pub const RESOURCES_READY: &str = "ResourcesReady";
/// KRO's built-in conditions, in the order KRO lists them (`Ready` last).
pub const BUILT_IN: [&str; 4] = [INSTANCE_MANAGED, GRAPH_RESOLVED, RESOURCES_READY, "Ready"];

fn kro_set() -> ConditionSet {
    ConditionSet::living(&[INSTANCE_MANAGED, GRAPH_RESOLVED, RESOURCES_READY])
}

/// Marks `InstanceManaged` False: the finalizer or labels could not be set (`error`).
pub fn mark_not_managed<S: StatusExt + ?Sized>(
    object: &mut S,
    now: Timestamp,
    error: &str,
) -> Result<(), ConditionError> {
    keep_only_kro_conditions(object)?;
    kro_set().manage(object, now).mark_false(
        INSTANCE_MANAGED,
        "ManagementFailed",
        format!("finalizer/labeling failed: {error}"),
    )?;
    sort(object)
}

/// Replaces the steps' conditions with KRO's, once the steps ran; `failure` is the error
/// the steps ended with, if any (named when no step's condition says what is not ready),
/// and `missing` whether it is only an external reference not found yet (waited for, as
/// KRO does). Returns whether reconciling failed (KRO's `ERROR`): a step's condition
/// says it failed (`<Id>Failed`), or the steps ended with an error.
pub fn summarize<S: StatusExt + ?Sized>(
    object: &mut S,
    now: Timestamp,
    failure: Option<&str>,
    missing: bool,
) -> Result<bool, ConditionError> {
    // As KRO names the most unhealthy condition: a False one before an Unknown one.
    let mut waiting: Vec<_> = object
        .conditions()?
        .into_iter()
        .filter(|c| !BUILT_IN.contains(&c.type_.as_str()) && !c.is_true())
        .collect();
    // A resource waiting for another is not the cause: the one it waits for is named.
    waiting.sort_by_key(|c| (c.status != "False", c.reason.as_deref() == Some("Waiting")));
    let waiting = waiting.into_iter().next();
    keep_only_kro_conditions(object)?;
    let set = kro_set();
    let mut conditions = set.manage(object, now);
    conditions.mark_true(
        INSTANCE_MANAGED,
        "Managed",
        "instance is properly managed with finalizers and labels",
    )?;
    conditions.mark_true(
        GRAPH_RESOLVED,
        "Resolved",
        "runtime graph created and all resources resolved",
    )?;
    let step_failed = !missing
        && waiting.as_ref().is_some_and(|c| {
            c.status == "False" && c.reason.as_deref().is_some_and(|r| r.ends_with("Failed"))
        });
    match (waiting, failure) {
        (Some(step), _) if step_failed => conditions.mark_false(
            RESOURCES_READY,
            "NotReady",
            format!(
                "resource reconciliation failed: {}",
                step.message.or(step.reason).unwrap_or_default()
            ),
        )?,
        (Some(step), _) => conditions.mark_false(
            RESOURCES_READY,
            "NotReady",
            format!(
                "awaiting resource readiness: {}: {}",
                step.type_,
                step.message.or(step.reason).unwrap_or_default()
            ),
        )?,
        (None, Some(error)) => conditions.mark_false(
            RESOURCES_READY,
            "NotReady",
            format!("resource reconciliation failed: {error}"),
        )?,
        (None, None) => conditions.mark_true(
            RESOURCES_READY,
            "AllResourcesReady",
            "all resources are created and ready",
        )?,
    }
    sort(object)?;
    Ok(step_failed || (failure.is_some() && !missing))
}

/// Marks `ResourcesReady` (and so `Ready`) Unknown while the instance's resources are
/// deleted, as KRO does: `UnderDeletion`, `deleting resources` or, when a deletion
/// failed, `deletion blocked: <error>`.
pub fn mark_deleting<S: StatusExt + ?Sized>(
    object: &mut S,
    now: Timestamp,
    blocked: Option<&str>,
) -> Result<(), ConditionError> {
    let message = match blocked {
        Some(error) => format!("deletion blocked: {error}"),
        None => "deleting resources".to_owned(),
    };
    keep_only_kro_conditions(object)?;
    kro_set()
        .manage(object, now)
        .mark_unknown(RESOURCES_READY, "UnderDeletion", message)?;
    sort(object)
}

/// Whether the instance's `Ready` condition is True.
pub fn is_ready<S: StatusExt + ?Sized>(object: &S) -> bool {
    matches!(object.condition("Ready"), Ok(Some(ready)) if ready.is_true())
}

fn keep_only_kro_conditions<S: StatusExt + ?Sized>(object: &mut S) -> Result<(), ConditionError> {
    let conditions = object.conditions()?;
    if conditions
        .iter()
        .all(|c| BUILT_IN.contains(&c.type_.as_str()))
    {
        return Ok(());
    }
    let kept = conditions
        .into_iter()
        .filter(|c| BUILT_IN.contains(&c.type_.as_str()))
        .collect();
    Ok(object.set_conditions(kept)?)
}

fn sort<S: StatusExt + ?Sized>(object: &mut S) -> Result<(), ConditionError> {
    let mut conditions = object.conditions()?;
    let position = |type_: &str| BUILT_IN.iter().position(|t| *t == type_);
    if conditions.is_sorted_by_key(|c| position(&c.type_)) {
        return Ok(());
    }
    conditions.sort_by_key(|c| position(&c.type_));
    Ok(object.set_conditions(conditions)?)
}

#[cfg(test)]
mod tests {
    use kube::api::DynamicObject;
    use serde_json::{Value, json};

    use super::*;

    fn instance(conditions: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "kro.run/v1alpha1", "kind": "App",
            "metadata": {"name": "a", "generation": 1},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    /// (type, status, reason, message) of each condition, in order.
    fn listed(object: &DynamicObject) -> Vec<Row> {
        object
            .conditions()
            .unwrap()
            .into_iter()
            .map(|c| {
                let (reason, message) =
                    (c.reason.unwrap_or_default(), c.message.unwrap_or_default());
                (c.type_, c.status, reason, message)
            })
            .collect()
    }

    /// (type, status, reason, message) of a condition.
    type Row = (String, String, String, String);
    /// A case's name, conditions before, failure, and `ResourcesReady` and `Ready` after
    /// (status, reason, message).
    type Case = (
        &'static str,
        Value,
        Option<&'static str>,
        [&'static str; 3],
        [&'static str; 3],
    );

    fn row(t: &str, s: &str, r: &str, m: &str) -> Row {
        (t.into(), s.into(), r.into(), m.into())
    }

    #[test]
    fn conditions_as_kro_writes_them() {
        let now = Timestamp::now();
        let ready_step = json!({"type": "DeploymentReady", "status": "True", "reason": "Ready"});
        let waiting_step = json!({"type": "ServiceReady", "status": "Unknown",
                                  "reason": "Waiting", "message": "readyWhen not met"});
        let not_found =
            "awaiting resource readiness: ConfigResolved: ConfigMap default/c does not exist";
        let forbidden = "resource reconciliation failed: apply Service: forbidden";
        let cases: [Case; 3] = [
            (
                "every step ready",
                json!([{"type": "Ready", "status": "Unknown"}, ready_step.clone()]),
                None,
                [
                    "True",
                    "AllResourcesReady",
                    "all resources are created and ready",
                ],
                ["True", "Ready", ""],
            ),
            (
                "a step waiting, another failed",
                json!([ready_step.clone(), waiting_step,
                       {"type": "ConfigResolved", "status": "False", "reason": "NotFound",
                        "message": "ConfigMap default/c does not exist"}]),
                None,
                ["False", "NotReady", not_found],
                ["False", "NotReady", not_found],
            ),
            (
                "the steps failed",
                json!([ready_step]),
                Some("apply Service: forbidden"),
                ["False", "NotReady", forbidden],
                ["False", "NotReady", forbidden],
            ),
        ];
        for (name, conditions, failure, [rs, rr, rm], [s, r, m]) in cases {
            let mut object = instance(conditions);
            summarize(&mut object, now, failure, false).unwrap();
            let want = [
                row(
                    "InstanceManaged",
                    "True",
                    "Managed",
                    "instance is properly managed with finalizers and labels",
                ),
                row(
                    "GraphResolved",
                    "True",
                    "Resolved",
                    "runtime graph created and all resources resolved",
                ),
                row("ResourcesReady", rs, rr, rm),
                row("Ready", s, r, m),
            ];
            assert_eq!(listed(&object), want, "{name}");
            assert_eq!(is_ready(&object), name == "every step ready", "{name}");
        }
    }

    #[test]
    fn a_failed_step_is_a_failure_and_a_missing_reference_is_waited_for() {
        let now = Timestamp::now();
        let failed = json!([{"type": "ConfigReady", "status": "False", "reason": "ConfigFailed",
                             "message": "spec.resources[0] (id config): invalid"}]);
        let mut object = instance(failed.clone());
        assert!(summarize(&mut object, now, None, false).unwrap());
        let resources = &listed(&object)[2];
        assert_eq!(
            resources.3,
            "resource reconciliation failed: spec.resources[0] (id config): invalid"
        );
        let mut object = instance(failed);
        assert!(!summarize(&mut object, now, Some("not there"), true).unwrap());
        assert!(
            listed(&object)[2]
                .3
                .starts_with("awaiting resource readiness: ")
        );
    }

    #[test]
    fn a_failed_claim_is_instance_managed_false() {
        let mut object = instance(json!([{"type": "AReady", "status": "True"}]));
        mark_not_managed(&mut object, Timestamp::now(), "conflict").unwrap();
        assert_eq!(
            listed(&object),
            [
                row(
                    "InstanceManaged",
                    "False",
                    "ManagementFailed",
                    "finalizer/labeling failed: conflict"
                ),
                row(
                    "Ready",
                    "False",
                    "ManagementFailed",
                    "finalizer/labeling failed: conflict"
                ),
            ]
        );
    }
}
