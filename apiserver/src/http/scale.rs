//! `{plural}/{name}/scale`: get, update and patch (merge, JSON, strategic merge as merge)
//! of an object's `autoscaling/v1` Scale.

use std::sync::Arc;

use axum::body::Body;
use http::{Method, Response};
use serde_json::Value;

use super::body::{patch_body, read_json, read_patch};
use super::call::Call;
use super::negotiate::Representation;
use super::{Shared, respond, table};
use crate::error::{ApiError, ApiResult};
use crate::scale::{scale_of, with_replicas};
use crate::store::{PatchBody, Target, apply_patch};

/// Serves a request on an object's scale subresource.
pub(super) async fn serve(
    shared: &Arc<Shared>,
    call: &Call,
    method: Method,
    name: &str,
    body: Body,
) -> ApiResult<Response<Body>> {
    let namespace = call.object_namespace()?.to_string();
    let info = &call.info;
    let limit = shared.config.max_body_bytes;
    let change = match method {
        Method::GET => {
            let state = shared.state.read();
            let object = state
                .get(&info.key(), &namespace, name)
                .ok_or_else(|| ApiError::not_found(info, name))?;
            let scale = scale_of(info, &object)?;
            if call.representation == Representation::Table {
                return Ok(respond::json(200, &scale_table(&scale)));
            }
            return Ok(respond::json(200, &scale));
        }
        Method::PUT => Change::Replace(read_json(body, limit).await?),
        Method::PATCH => {
            let patch = match patch_body(call, read_patch(call, body, limit).await?)? {
                PatchBody::Strategic(patch) => PatchBody::Merge(patch),
                PatchBody::Apply(_) => {
                    return Err(ApiError::unsupported_media_type(
                        call.content_type.as_deref().unwrap_or_default(),
                    ));
                }
                other => other,
            };
            Change::Patch(patch)
        }
        other => {
            return Err(ApiError::method_not_allowed(format!(
                "{other} is not supported on the scale subresource"
            )));
        }
    };
    let options = call.write_options()?;
    let (stored, warnings) = shared.state.transact(|state| {
        let object = state
            .get(&info.key(), &namespace, name)
            .ok_or_else(|| ApiError::not_found(info, name))?;
        let scale = change.apply(scale_of(info, &object)?)?;
        let updated = with_replicas(info, &object, &scale)?;
        state.update(info, &namespace, name, updated, Target::Main, &options)
    })?;
    Ok(respond::warn(
        respond::json(200, &scale_of(info, &stored)?),
        &warnings,
    ))
}

/// A Scale as kube's printer shows it: NAME, DESIRED and AVAILABLE.
fn scale_table(scale: &Value) -> Value {
    let printer = vec![
        serde_json::json!({"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"}),
        serde_json::json!({"name": "Available", "type": "integer", "jsonPath": ".status.replicas"}),
    ];
    let columns = table::columns(Some(&printer));
    let rv = scale["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    table::table(&columns, &[scale], rv)
}

/// What a write does to the current Scale.
enum Change {
    /// An update: the body replaces it.
    Replace(Value),
    /// A merge or JSON patch of it.
    Patch(PatchBody),
}

impl Change {
    /// The Scale to write, from the current one.
    fn apply(self, mut current: Value) -> ApiResult<Value> {
        match self {
            Change::Replace(scale) => Ok(scale),
            Change::Patch(patch) => {
                apply_patch(&mut current, &patch)?;
                Ok(current)
            }
        }
    }
}
