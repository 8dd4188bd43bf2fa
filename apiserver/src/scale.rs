//! The `scale` subresource: an object seen as an `autoscaling/v1` Scale, and a Scale's
//! `spec.replicas` written back into the object, as kube-apiserver does for Deployments,
//! StatefulSets, ReplicaSets and CRDs declaring `subresources.scale`.

use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult, Cause};
use crate::meta::{self, at_path};
use crate::resources::{ResourceInfo, ScalePaths, ScaleSelector};
use crate::selector;

/// Sets the value at a dotted `path` of `object`, creating objects on the way.
fn set(object: &mut Value, path: &str, value: Value) {
    let mut current = object;
    for key in path.split('.') {
        if !current.is_object() {
            *current = Value::Object(Map::new());
        }
        let Value::Object(map) = current else { return };
        current = map.entry(key.to_string()).or_insert(Value::Null);
    }
    *current = value;
}

/// The paths of `info`'s scale subresource, or 404.
fn paths<'a>(info: &'a ResourceInfo, name: &str) -> ApiResult<&'a ScalePaths> {
    info.scale
        .as_ref()
        .ok_or_else(|| ApiError::not_found(info, name))
}

/// `object` as an `autoscaling/v1` Scale.
pub fn scale_of(info: &ResourceInfo, object: &Value) -> ApiResult<Value> {
    let name = meta::name(object);
    let paths = paths(info, name)?;
    let replicas = |path: &str| at_path(object, path).and_then(Value::as_i64).unwrap_or(0);
    let mut metadata = Map::new();
    for key in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = object["metadata"].get(key) {
            metadata.insert(key.to_string(), value.clone());
        }
    }
    let mut status = json!({"replicas": replicas(&paths.status_replicas)});
    let selector = match &paths.selector {
        ScaleSelector::None => None,
        ScaleSelector::Path(path) => at_path(object, path.as_str())
            .and_then(Value::as_str)
            .map(str::to_string),
        ScaleSelector::SpecSelector => {
            Some(selector::format_label_selector(&object["spec"]["selector"]))
        }
    };
    if let Some(selector) = selector.filter(|s| !s.is_empty()) {
        status["selector"] = Value::from(selector);
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": replicas(&paths.spec_replicas)},
        "status": status,
    }))
}

/// `object` with the replicas of `scale` (an `autoscaling/v1` Scale body) written into it;
/// the Scale's resourceVersion, if any, becomes the update's precondition.
pub fn with_replicas(info: &ResourceInfo, object: &Value, scale: &Value) -> ApiResult<Value> {
    let name = meta::name(object);
    let paths = paths(info, name)?;
    if let Some(kind) = scale["kind"].as_str().filter(|k| *k != "Scale") {
        return Err(ApiError::bad_request(format!(
            "expected a Scale, got a {kind}"
        )));
    }
    let replicas = &scale["spec"]["replicas"];
    let invalid = |detail: &str| {
        ApiError::invalid_kind(
            "autoscaling",
            "Scale",
            name,
            vec![Cause::invalid("spec.replicas", replicas, detail)],
        )
    };
    let count = match replicas {
        Value::Null => 0,
        Value::Number(n) => n
            .as_i64()
            .filter(|r| i32::try_from(*r).is_ok())
            .ok_or_else(|| invalid("must be a 32-bit integer"))?,
        _ => return Err(invalid("must be an integer")),
    };
    if count < 0 {
        return Err(invalid("must be greater than or equal to 0"));
    }
    let mut updated = object.clone();
    set(&mut updated, &paths.spec_replicas, Value::from(count));
    if let Some(rv) = scale["metadata"]["resourceVersion"]
        .as_str()
        .filter(|rv| !rv.is_empty())
    {
        updated["metadata"]["resourceVersion"] = Value::from(rv);
    }
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_creates_the_path() {
        let mut object = json!({"spec": 5});
        set(&mut object, "spec.replicas", json!(3));
        assert_eq!(object, json!({"spec": {"replicas": 3}}));
    }
}
