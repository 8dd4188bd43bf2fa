//! The body of a write: checked to be an object of the endpoint's kind, patched (merge and
//! JSON patches), and measured against the largest object etcd stores.

use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceInfo;

/// A patch body, by content type.
#[derive(Clone, Debug)]
pub enum PatchBody {
    /// `application/merge-patch+json` (RFC 7386).
    Merge(Value),
    /// `application/json-patch+json` (RFC 6902).
    Json(Value),
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    Strategic(Value),
    /// `application/apply-patch+yaml`: server-side apply of this configuration.
    Apply(Value),
}

/// etcd's default `--max-request-bytes` (1.5 MiB): a larger object is never stored.
const MAX_STORED_BYTES: usize = 1536 * 1024;

/// Refuses an object too large to store, as kube-apiserver relays etcd's refusal (500,
/// `etcdserver: request is too large`); the stored form is measured as JSON.
pub(super) fn check_stored_size(object: &Value) -> ApiResult<()> {
    let mut counter = ByteCounter(0);
    // Writing into a counter cannot fail; a failure would only under-count.
    let _ = serde_json::to_writer(&mut counter, object);
    if counter.0 > MAX_STORED_BYTES {
        return Err(ApiError::internal("etcdserver: request is too large"));
    }
    Ok(())
}

/// An `io::Write` that only counts bytes.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Checks that a body is an object of the endpoint's kind, and fills in apiVersion and kind.
pub(super) fn check_body(info: &ResourceInfo, body: Value) -> ApiResult<Value> {
    let Value::Object(mut map) = body else {
        return Err(ApiError::bad_request(format!(
            "the body of a {} must be a JSON object",
            info.kind
        )));
    };
    let api_version = info.api_version();
    match map.get("kind").and_then(Value::as_str) {
        Some(kind) if kind != info.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind of the object ({kind}) does not match the kind of the endpoint ({})",
                info.kind
            )));
        }
        _ => {}
    }
    match map.get("apiVersion").and_then(Value::as_str) {
        Some(v) if group_of(v) != info.group => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )));
        }
        _ => {}
    }
    match map.get("metadata") {
        None | Some(Value::Null) => {
            map.insert("metadata".into(), Value::Object(Map::new()));
        }
        Some(Value::Object(_)) => {}
        Some(_) => return Err(ApiError::bad_request("metadata must be a JSON object")),
    }
    map.insert("apiVersion".into(), Value::from(api_version));
    map.insert("kind".into(), Value::from(info.kind.clone()));
    Ok(Value::Object(map))
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Applies a merge or JSON patch to a document (the other patch types need the store).
pub fn apply_patch(doc: &mut Value, patch: &PatchBody) -> ApiResult<()> {
    match patch {
        PatchBody::Merge(patch) => {
            if !patch.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            json_patch::merge(doc, patch);
            Ok(())
        }
        PatchBody::Json(patch) => {
            let operations: json_patch::Patch = serde_json::from_value(patch.clone())
                .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
            json_patch::patch(doc, &operations.0).map_err(|e| ApiError {
                code: 422,
                reason: "Invalid".into(),
                message: format!("the JSON patch could not be applied: {e}"),
                details: None,
            })
        }
        PatchBody::Strategic(_) | PatchBody::Apply(_) => Err(ApiError::internal(
            "strategic merge and apply patches need the kind's merge schema",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use serde_json::json;

    fn configmaps() -> std::sync::Arc<ResourceInfo> {
        Registry::with_builtins()
            .get("", "v1", "configmaps")
            .unwrap()
    }

    #[test]
    fn a_body_of_another_kind_is_refused() {
        let err =
            check_body(&configmaps(), json!({"kind": "Secret", "apiVersion": "v1"})).unwrap_err();
        assert_eq!(err.code, 400);
        assert!(err.message.contains("Secret"), "{}", err.message);
    }

    #[test]
    fn a_json_patch_test_failure_is_invalid() {
        let mut doc = json!({"a": 1});
        let err = apply_patch(
            &mut doc,
            &PatchBody::Json(json!([{"op": "test", "path": "/a", "value": 2}])),
        )
        .unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            doc,
            json!({"a": 1}),
            "a failed patch leaves the document alone"
        );
    }
}
