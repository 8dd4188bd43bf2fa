//! The `Ready` condition of the `DuckMapping`s this process reads (those of its registered
//! ducks): whether a mapping maps a served kind and, when it does not, why (the field or the
//! path that does not fit).

use std::collections::HashSet;

use k8s_openapi::jiff::Timestamp;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::json;
use tracing::warn;

use super::{DuckMapping, DuckType, Reason, Survey};
use crate::client::Client;
use crate::object::{Condition, ObjectKey, StatusExt};

/// The condition a mapping's status carries.
const READY: &str = "Ready";

/// The `Ready` condition of a mapping object; `None` for a mapping of a duck this process
/// does not run (another process may).
pub(crate) fn readiness(
    object: &DynamicObject,
    ducks: &[DuckType],
    survey: &Survey,
) -> Option<Condition> {
    let duck = object.data["spec"]["duck"].as_str();
    if duck.is_some_and(|d| !ducks.iter().any(|known| known.name() == d)) {
        return None;
    }
    let condition = |status: &str, reason: &str, message: String| {
        let mut condition = Condition::new(READY, status);
        condition.reason = Some(reason.to_string());
        condition.message = Some(message);
        condition.observed_generation = object.metadata.generation;
        condition
    };
    let mapping = match DuckMapping::from_object(object) {
        Ok(mapping) => mapping,
        Err(err) => return Some(condition("False", "Invalid", err.to_string())),
    };
    let mapped = survey
        .matches
        .iter()
        .find(|m| matches!(&m.reason, Reason::Mapping { name, .. } if *name == mapping.name));
    if let Some(found) = mapped {
        let message = format!("{} keeps {} at {}", found.gvk, found.duck, mapping.path);
        return Some(condition("True", "Mapped", message));
    }
    let near = survey
        .near_misses
        .iter()
        .find(|n| n.mapping.as_deref() == Some(mapping.name.as_str()));
    Some(match near {
        Some(near) => condition(
            "False",
            "DoesNotFit",
            format!("{}: {}", near.gvk, near.miss),
        ),
        None => condition(
            "False",
            "NotServed",
            format!(
                "no served version of {} in group {:?} is left to this mapping (not served, or \
                 mapped by another DuckMapping)",
                mapping.kind, mapping.group
            ),
        ),
    })
}

/// Writes the `Ready` condition (and observedGeneration) of each mapping where it changed;
/// a failure is logged once.
pub(crate) async fn write(
    client: &Client,
    objects: &[DynamicObject],
    ducks: &[DuckType],
    survey: &Survey,
    logged: &mut HashSet<String>,
) {
    for object in objects {
        let Some(condition) = readiness(object, ducks, survey) else {
            continue;
        };
        let mut updated = object.clone();
        let changed = updated.set_condition(condition, Timestamp::now());
        let observed = updated.observed_generation().ok().flatten();
        let stale = observed != object.metadata.generation;
        if !matches!(changed, Ok(true)) && !stale {
            continue;
        }
        if updated.observe_generation().is_err() {
            continue;
        }
        let Ok(key) = ObjectKey::of(object) else {
            continue;
        };
        let patch = Patch::Merge(json!({"status": updated.data["status"]}));
        let written = client
            .patch_status(&super::mapping_gvk(), &key, &patch, &PatchParams::default())
            .await;
        if let Err(err) = written
            && logged.insert(format!("status of {key}: {err}"))
        {
            warn!(mapping = %key, %err, "cannot write the DuckMapping's status");
        }
    }
}
