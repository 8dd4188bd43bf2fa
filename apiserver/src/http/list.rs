//! Lists: selectors, pagination with continue tokens, and list rendering.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::negotiate::Representation;
use super::query::Query;
use super::table;
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::resources::ResourceInfo;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{ObjectKey, State};

/// The label and field selectors of a list, watch or delete-collection request.
pub struct Selectors {
    label: LabelSelector,
    field: FieldSelector,
}

impl Selectors {
    /// Reads `labelSelector` and `fieldSelector`, checking fields against the kind.
    pub fn from_query(query: &Query, info: &ResourceInfo) -> ApiResult<Self> {
        let label = LabelSelector::parse(query.get("labelSelector").unwrap_or_default())
            .map_err(|e| ApiError::bad_request(format!("invalid labelSelector: {e}")))?;
        let field = FieldSelector::parse(
            query.get("fieldSelector").unwrap_or_default(),
            &info.selectable_fields(),
        )
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let field = if info.custom {
            field
        } else {
            field.for_builtin_kind()
        };
        Ok(Selectors { label, field })
    }

    /// The name the field selector pins with `metadata.name=`, if any.
    pub fn exact_name(&self) -> Option<&str> {
        self.field.exact("metadata.name")
    }

    /// Whether an object matches both selectors.
    pub fn matches(&self, object: &Value) -> bool {
        self.label.matches(meta::labels(object)) && self.field.matches(object)
    }
}

/// Where a paginated list continues.
struct Continue {
    rv: u64,
    after: ObjectKey,
}

fn encode_continue(rv: u64, after: &ObjectKey) -> String {
    let token = json!({"rv": rv, "ns": after.0, "name": after.1});
    URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str) -> ApiResult<Continue> {
    let invalid = || ApiError::bad_request(format!("invalid continue token {token:?}"));
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| invalid())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    Ok(Continue {
        rv: value["rv"].as_u64().ok_or_else(invalid)?,
        after: (
            value["ns"].as_str().ok_or_else(invalid)?.to_string(),
            value["name"].as_str().ok_or_else(invalid)?.to_string(),
        ),
    })
}

/// Serves a list request.
pub fn list(
    state: &State,
    info: &ResourceInfo,
    namespace: Option<&str>,
    query: &Query,
    representation: Representation,
) -> ApiResult<Value> {
    let selectors = Selectors::from_query(query, info)?;
    let limit = query.number("limit")?.filter(|l| *l > 0);
    let resume = query.get("continue").map(decode_continue).transpose()?;
    let list_rv = resume.as_ref().map_or(state.resource_version(), |c| c.rv);
    let candidates: Box<dyn Iterator<Item = Arc<Value>>> =
        match (selectors.exact_name(), namespace, info.namespaced) {
            // A list pinned to one name (as `kubectl wait` sends) is a single lookup.
            (Some(name), Some(ns), true) => {
                Box::new(state.objects().get(&info.key(), ns, name).into_iter())
            }
            (Some(name), _, false) => {
                Box::new(state.objects().get(&info.key(), "", name).into_iter())
            }
            _ => Box::new(state.objects().list(
                &info.key(),
                namespace,
                resume.as_ref().map(|c| &c.after),
            )),
        };
    let mut matching = candidates.filter(|object| selectors.matches(object));
    let items: Vec<Arc<Value>> = match limit {
        Some(limit) => matching.by_ref().take(limit as usize).collect(),
        None => matching.by_ref().collect(),
    };
    let next = match (limit, items.last()) {
        (Some(_), Some(last)) if matching.next().is_some() => {
            let key = (
                meta::namespace(last).to_string(),
                meta::name(last).to_string(),
            );
            Some(encode_continue(list_rv, &key))
        }
        _ => None,
    };
    let mut metadata = json!({"resourceVersion": list_rv.to_string()});
    if let Some(token) = next {
        metadata["continue"] = Value::from(token);
    }
    if representation == Representation::Table {
        let objects: Vec<&Value> = items.iter().map(|o| o.as_ref()).collect();
        let columns = table::columns(state.printer_columns(info).as_ref());
        let mut doc = table::table(&columns, &objects, &list_rv.to_string());
        doc["metadata"] = metadata;
        return Ok(doc);
    }
    let items: Vec<Value> = items
        .into_iter()
        .map(|o| render(&o, info, representation))
        .collect();
    Ok(list_body(info, representation, metadata, items))
}

/// A list document of the kind (or `PartialObjectMetadataList`).
pub fn list_body(
    info: &ResourceInfo,
    representation: Representation,
    metadata: Value,
    items: Vec<Value>,
) -> Value {
    let (api_version, kind) = match representation {
        Representation::Full | Representation::Table => {
            (info.api_version(), info.list_kind.clone())
        }
        Representation::Metadata => ("meta.k8s.io/v1".into(), "PartialObjectMetadataList".into()),
    };
    json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "items": items})
}

/// An object as the client asked for it: at the requested version, whole or metadata only.
pub fn render(object: &Value, info: &ResourceInfo, representation: Representation) -> Value {
    match representation {
        Representation::Full | Representation::Table => {
            let mut object = object.clone();
            let api_version = info.api_version();
            if object["apiVersion"] != api_version.as_str() {
                object["apiVersion"] = Value::from(api_version);
            }
            object
        }
        Representation::Metadata => json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": object["metadata"],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let token = encode_continue(42, &("ns".into(), "a".into()));
        let decoded = decode_continue(&token).unwrap();
        assert_eq!(
            (decoded.rv, decoded.after),
            (42, ("ns".to_string(), "a".to_string()))
        );
        assert_eq!(
            decode_continue("not-a-token!").err().map(|e| e.code),
            Some(400)
        );
    }
}
