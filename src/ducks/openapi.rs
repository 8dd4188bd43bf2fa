//! The schemas of the kinds the cluster serves without a CRD (built-in and aggregated
//! kinds), read once from its OpenAPI v3 documents.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;
use tracing::debug;

use crate::object::Gvk;

/// One kind's schema in its group-version's OpenAPI v3 document.
#[derive(Clone, Debug)]
pub(crate) struct OpenApiKind {
    /// The kind.
    pub gvk: Gvk,
    /// The document's `components.schemas`, shared by the kinds of the group-version.
    pub defs: Arc<Value>,
    /// The kind's schema name among `defs`.
    pub name: String,
}

impl OpenApiKind {
    /// The kind's schema node.
    pub fn node(&self) -> &Value {
        &self.defs[self.name.as_str()]
    }
}

/// The kinds of the group-versions whose documents could be read.
#[derive(Clone, Debug, Default)]
pub(crate) struct OpenApiKinds {
    /// The kinds found, in document order.
    pub kinds: Vec<OpenApiKind>,
    /// The group-versions (`apps/v1`, `v1`) whose document was read.
    pub read: HashSet<String>,
}

/// Reads the OpenAPI v3 document of every group-version the cluster lists at `/openapi/v3`
/// but those `skip` names (the CRDs' group-versions, matched through their CRD).
pub(crate) async fn fetch(client: &kube::Client, skip: &HashSet<String>) -> OpenApiKinds {
    let mut found = OpenApiKinds::default();
    let Some(index) = get_json(client, "/openapi/v3").await else {
        return found;
    };
    let Some(paths) = index["paths"].as_object() else {
        return found;
    };
    for (path, entry) in paths {
        let group_version = match path.split('/').collect::<Vec<_>>().as_slice() {
            ["api", version] => (*version).to_string(),
            ["apis", group, version] => format!("{group}/{version}"),
            _ => continue,
        };
        if skip.contains(&group_version) {
            continue;
        }
        let url = entry["serverRelativeURL"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("/openapi/v3/{path}"));
        let Some(mut document) = get_json(client, &url).await else {
            continue;
        };
        let mut defs = document["components"]["schemas"].take();
        strip_descriptions(&mut defs);
        let defs = Arc::new(defs);
        for (name, schema) in defs.as_object().into_iter().flatten() {
            for gvk in schema["x-kubernetes-group-version-kind"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let gvk = Gvk::new(
                    gvk["group"].as_str().unwrap_or_default(),
                    gvk["version"].as_str().unwrap_or_default(),
                    gvk["kind"].as_str().unwrap_or_default(),
                );
                if gvk.api_version() == group_version && !gvk.kind.ends_with("List") {
                    found.kinds.push(OpenApiKind {
                        gvk,
                        defs: defs.clone(),
                        name: name.clone(),
                    });
                }
            }
        }
        found.read.insert(group_version);
    }
    found
}

/// Drops the prose (`description` texts, most of a document's bytes) from schemas kept for
/// the follower's life; a field named `description` (a schema, not a text) stays.
fn strip_descriptions(node: &mut Value) {
    match node {
        Value::Object(map) => {
            if map.get("description").is_some_and(Value::is_string) {
                map.remove("description");
            }
            map.values_mut().for_each(strip_descriptions);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

async fn get_json(client: &kube::Client, url: &str) -> Option<Value> {
    let request = http::Request::get(url).body(Vec::new()).ok()?;
    match client.request::<Value>(request).await {
        Ok(value) => Some(value),
        Err(err) => {
            debug!(%url, %err, "no OpenAPI document; built-in kinds there match by the known list");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn descriptions_go_and_a_field_named_description_stays() {
        let mut schema = json!({"description": "A class.", "properties": {
            "description": {"type": "string", "description": "What it is for."},
            "value": {"type": "integer", "description": "Its value."}}});
        strip_descriptions(&mut schema);
        assert_eq!(
            schema,
            json!({"properties": {"description": {"type": "string"}, "value": {"type": "integer"}}})
        );
    }
}
