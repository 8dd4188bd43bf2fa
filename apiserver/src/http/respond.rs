//! Building HTTP responses.

use axum::body::Body;
use http::{Response, StatusCode, header};
use serde_json::Value;

use crate::error::ApiError;
use crate::{go_order, json_order};

/// Keys written first, in this order, as Go's struct order puts them in every object.
const LEADING_KEYS: [&str; 3] = ["kind", "apiVersion", "metadata"];

/// A JSON value written with `kind`, `apiVersion` and `metadata` first in every object,
/// then the other keys sorted; objects whose Go struct order the server knows (built-in kinds)
/// in that order.
pub fn ordered(value: &Value) -> json_order::Ordered<'_> {
    json_order::Ordered::leading(value, &LEADING_KEYS).with_shapes(go_order::shape_of)
}

/// `value` as JSON ending with a newline, as Go's `json.Encoder` writes kube's bodies.
fn encoded(value: &Value) -> serde_json::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec(&ordered(value))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// A JSON response.
pub fn json(code: u16, body: &Value) -> Response<Body> {
    match encoded(body) {
        Ok(bytes) => with_type(code, "application/json", Body::from(bytes)),
        Err(err) => error(&ApiError::internal(format!(
            "could not encode the response: {err}"
        ))),
    }
}

/// A plain-text response.
pub fn text(code: u16, body: &'static str) -> Response<Body> {
    with_type(code, "text/plain; charset=utf-8", Body::from(body))
}

/// The `Status` response of an error.
pub fn error(error: &ApiError) -> Response<Body> {
    let bytes = encoded(&error.to_status()).unwrap_or_default();
    with_type(error.code, "application/json", Body::from(bytes))
}

/// Adds `Warning` headers (`299 - "text"`), as kube-apiserver sends them.
pub fn warn(mut response: Response<Body>, warnings: &[String]) -> Response<Body> {
    for warning in warnings {
        let text = format!("299 - {:?}", warning);
        if let Ok(value) = header::HeaderValue::from_str(&text) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// A response with a body and content type.
pub fn with_type(code: u16, content_type: &str, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(value) = header::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}
