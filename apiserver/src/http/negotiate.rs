//! Content negotiation: what a client accepts, and what a request body is.

use crate::error::{ApiError, ApiResult};

/// How objects are rendered in a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Representation {
    /// The whole object as JSON.
    Full,
    /// `PartialObjectMetadata`: apiVersion, kind and metadata only.
    Metadata,
    /// A `meta.k8s.io/v1 Table`, as `kubectl get` prints it.
    Table,
}

/// Picks the representation from an `Accept` header: the first entry the server can serve.
pub fn representation(accept: Option<&str>) -> ApiResult<Representation> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Representation::Full);
    };
    for range in media_ranges(accept) {
        let param = |name: &str| range.param(name);
        if !range.is_json() {
            continue;
        }
        match param("as") {
            None => return Ok(Representation::Full),
            Some("PartialObjectMetadata" | "PartialObjectMetadataList")
                if param("g") == Some("meta.k8s.io") =>
            {
                return Ok(Representation::Metadata);
            }
            Some("Table") if param("g") == Some("meta.k8s.io") && param("v") == Some("v1") => {
                return Ok(Representation::Table);
            }
            Some(_) => continue,
        }
    }
    Err(ApiError::not_acceptable(accept))
}

/// One entry of an `Accept` header: a media type and its parameters.
pub struct MediaRange<'a> {
    /// The media type, e.g. `application/json`.
    pub media: &'a str,
    params: Vec<(&'a str, &'a str)>,
}

impl MediaRange<'_> {
    /// A parameter's value, e.g. `as` in `application/json;as=Table`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
    }

    /// Whether the entry accepts JSON (`application/json`, `application/*` or `*/*`).
    pub fn is_json(&self) -> bool {
        matches!(self.media, "application/json" | "application/*" | "*/*")
    }
}

/// The entries of an `Accept` header, in the order the client gave them.
pub fn media_ranges(accept: &str) -> impl Iterator<Item = MediaRange<'_>> {
    accept.split(',').map(|entry| {
        let mut parts = entry.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default();
        MediaRange {
            media,
            params: parts.filter_map(|p| p.split_once('=')).collect(),
        }
    })
}

/// The kind of a request body, from its `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyType {
    /// `application/json` (or no content type).
    Json,
    /// `application/merge-patch+json`.
    MergePatch,
    /// `application/json-patch+json`.
    JsonPatch,
    /// `application/strategic-merge-patch+json`.
    StrategicMergePatch,
    /// `application/apply-patch+yaml`.
    ApplyPatch,
}

/// Classifies a `Content-Type`; anything else is 415.
pub fn body_type(content_type: Option<&str>) -> ApiResult<BodyType> {
    let raw = content_type.unwrap_or("application/json");
    let media = raw.split(';').next().unwrap_or_default().trim();
    match media {
        "" | "application/json" => Ok(BodyType::Json),
        "application/merge-patch+json" => Ok(BodyType::MergePatch),
        "application/json-patch+json" => Ok(BodyType::JsonPatch),
        "application/strategic-merge-patch+json" => Ok(BodyType::StrategicMergePatch),
        "application/apply-patch+yaml" => Ok(BodyType::ApplyPatch),
        _ => Err(ApiError::unsupported_media_type(raw)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_table_request_gets_a_table() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(representation(Some(accept)).unwrap(), Representation::Table);
        let old = "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(representation(Some(old)).unwrap(), Representation::Full);
    }

    #[test]
    fn metadata_only_is_recognised() {
        let accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(
            representation(Some(accept)).unwrap(),
            Representation::Metadata
        );
        assert_eq!(
            representation(Some("application/yaml")).unwrap_err().code,
            406
        );
        assert_eq!(
            representation(Some(
                "application/vnd.kubernetes.protobuf, application/json"
            ))
            .unwrap(),
            Representation::Full
        );
    }

    #[test]
    fn body_types() {
        assert_eq!(body_type(None).unwrap(), BodyType::Json);
        assert_eq!(
            body_type(Some("application/json; charset=utf-8")).unwrap(),
            BodyType::Json
        );
        assert_eq!(
            body_type(Some("application/merge-patch+json")).unwrap(),
            BodyType::MergePatch
        );
        assert_eq!(body_type(Some("text/plain")).unwrap_err().code, 415);
    }
}
