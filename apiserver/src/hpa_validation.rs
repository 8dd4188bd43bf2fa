//! What kube-apiserver refuses in a HorizontalPodAutoscaler's spec (`ValidateHorizontalPodAutoscaler`):
//! replica bounds below 1 or crossed, and a `scaleTargetRef` without a kind or a name.

use serde_json::Value;

use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::resources::ResourceInfo;

/// Refuses (422) an HPA whose spec kube would refuse; other kinds pass.
pub fn validate(info: &ResourceInfo, object: &Value) -> ApiResult<()> {
    if info.custom || info.group != "autoscaling" || info.kind != "HorizontalPodAutoscaler" {
        return Ok(());
    }
    let spec = &object["spec"];
    let mut causes = Vec::new();
    let min = spec["minReplicas"].as_i64();
    let max = spec["maxReplicas"].as_i64().unwrap_or(0);
    if let Some(min) = min.filter(|min| *min < 1) {
        causes.push(Cause::invalid(
            "spec.minReplicas",
            &Value::from(min),
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        causes.push(Cause::invalid(
            "spec.maxReplicas",
            &Value::from(max),
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|min| max < min) {
        causes.push(Cause::invalid(
            "spec.maxReplicas",
            &Value::from(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    for field in ["kind", "name"] {
        if spec["scaleTargetRef"][field]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            causes.push(Cause::required(&format!("spec.scaleTargetRef.{field}"), ""));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(info, meta::name(object), causes))
}
