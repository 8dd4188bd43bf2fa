//! Request bodies: objects (JSON, or protobuf for built-in kinds), patches (JSON, or YAML
//! for apply) and optional bodies, read up to the server's size limit.

use axum::body::Body;
use serde_json::Value;

use super::call::Call;
use super::negotiate::{self, BodyType};
use super::protobuf;
use crate::error::{ApiError, ApiResult};
use crate::store::PatchBody;

/// The patch a body is, by the request's content type.
pub(super) fn patch_body(call: &Call, body: Value) -> ApiResult<PatchBody> {
    match negotiate::body_type(call.content_type.as_deref())? {
        BodyType::MergePatch => Ok(PatchBody::Merge(body)),
        BodyType::JsonPatch => Ok(PatchBody::Json(body)),
        BodyType::StrategicMergePatch => Ok(PatchBody::Strategic(body)),
        BodyType::ApplyPatch => Ok(PatchBody::Apply(body)),
        BodyType::Json => Err(ApiError::unsupported_media_type(
            call.content_type.as_deref().unwrap_or("application/json"),
        )),
    }
}

/// Refuses a body that is not JSON.
fn expect_json(content_type: &Option<String>) -> ApiResult<()> {
    match negotiate::body_type(content_type.as_deref())? {
        BodyType::Json => Ok(()),
        _ => Err(ApiError::unsupported_media_type(
            content_type.as_deref().unwrap_or_default(),
        )),
    }
}

/// The bytes of a body, up to `limit`.
async fn read_bytes(body: Body, limit: usize) -> ApiResult<bytes::Bytes> {
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| ApiError::too_large(limit))
}

/// Reads the object of a create or update: JSON, or protobuf for a built-in kind.
pub(super) async fn read_object(call: &Call, body: Body, limit: usize) -> ApiResult<Value> {
    if protobuf::is_protobuf(call.content_type.as_deref()) {
        return protobuf::decode(&read_bytes(body, limit).await?);
    }
    expect_json(&call.content_type)?;
    read_json(body, limit).await
}

/// Reads the optional body of an acting subresource: JSON, or protobuf (kubectl sends its
/// Evictions, TokenRequests and Bindings as protobuf).
pub(super) async fn read_optional_body(
    call: &Call,
    body: Body,
    limit: usize,
) -> ApiResult<Option<Value>> {
    if protobuf::is_protobuf(call.content_type.as_deref()) {
        return protobuf::decode(&read_bytes(body, limit).await?).map(Some);
    }
    read_optional_json(body, limit).await
}

/// Reads a JSON body, with a clear error for malformed JSON.
pub(super) async fn read_json(body: Body, limit: usize) -> ApiResult<Value> {
    let bytes = read_bytes(body, limit).await?;
    if bytes.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    decode(&bytes)
}

/// Reads a JSON body that may be empty.
pub(super) async fn read_optional_json(body: Body, limit: usize) -> ApiResult<Option<Value>> {
    let bytes = read_bytes(body, limit).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    decode(&bytes).map(Some)
}

/// Reads a patch body; an apply configuration may be YAML.
pub(super) async fn read_patch(call: &Call, body: Body, limit: usize) -> ApiResult<Value> {
    let apply = negotiate::body_type(call.content_type.as_deref())? == BodyType::ApplyPatch;
    let bytes = read_bytes(body, limit).await?;
    if !apply {
        return decode(&bytes);
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| ApiError::bad_request("the apply configuration is not UTF-8"))?;
    serde_json::from_str(text).or_else(|_| {
        serde_saphyr::from_str(text).map_err(|e| {
            ApiError::bad_request(format!(
                "the apply configuration is neither JSON nor YAML: {e}"
            ))
        })
    })
}

/// Parses JSON, with a clear error for malformed JSON.
fn decode(bytes: &[u8]) -> ApiResult<Value> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
}
