//! OpenAPI v3: `/openapi/v3` (an index whose URLs carry a content hash) and one document per
//! group/version, with the paths, operations and schemas of every served kind.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Map, Value, json};

use super::discovery::KUBERNETES_MINOR;
use crate::kind_schemas;
use crate::resources::{ResourceInfo, crd_resource_key};
use crate::store::State;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";

/// Query parameters of create, update and patch.
const WRITE_PARAMS: &[(&str, &str)] = &[
    (
        "dryRun",
        "When present, the change is validated but not persisted (\"All\").",
    ),
    ("fieldManager", "The name of the actor making the change."),
    (
        "fieldValidation",
        "How unknown and duplicate fields are treated: Ignore, Warn (the default) or Strict.",
    ),
];

/// Query parameters of list and watch.
const LIST_PARAMS: &[(&str, &str)] = &[
    ("labelSelector", "Selects objects by their labels."),
    ("fieldSelector", "Selects objects by their fields."),
    ("limit", "The most objects to return in one page."),
    ("continue", "The token of the next page."),
    ("resourceVersion", "Where a list or watch starts."),
    ("watch", "Streams changes instead of listing."),
];

/// `/openapi/v3`: every served group/version with the URL of its document.
pub fn index(state: &State) -> Value {
    let registry = state.registry();
    let mut paths = Map::new();
    let core = registry
        .versions_of("")
        .into_iter()
        .map(|v| (String::new(), v));
    let named = registry.groups().into_iter().flat_map(|g| {
        registry
            .versions_of(&g)
            .into_iter()
            .map(move |v| (g.clone(), v))
    });
    for (group, version) in core.chain(named) {
        let path = prefix(&group, &version).trim_start_matches('/').to_string();
        let url = format!(
            "/openapi/v3/{path}?hash={}",
            fingerprint(state, &group, &version)
        );
        paths.insert(path, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/{version}`; `None` when not served.
pub fn group_version(state: &State, group: &str, version: &str) -> Option<Value> {
    let infos = state.registry().in_group_version(group, version);
    if infos.is_empty() {
        return None;
    }
    let mut schemas = kind_schemas::meta_schemas().clone();
    let mut kinds = Vec::new();
    for info in &infos {
        let name = match kind_schemas::kind_schemas(&info.api_version(), &info.kind) {
            Some(builtin) => {
                schemas.extend(builtin.components.clone());
                builtin.name.clone()
            }
            None => {
                let name = custom_schema_name(info);
                schemas.insert(name.clone(), custom_schema(state, info));
                name
            }
        };
        kinds.push((info, name));
    }
    let mut paths = Map::new();
    for (info, name) in kinds {
        if let Some(schema) = schemas.get_mut(&name) {
            schema["x-kubernetes-group-version-kind"] = json!([gvk(info)]);
        }
        schemas.insert(format!("{name}List"), list_schema(info, &name));
        resource_paths(info, &name, &mut paths);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{KUBERNETES_MINOR}.0")},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// A hash of what a group/version's document is made from (its kinds, their CRD schemas
/// and this server's version), so it changes when the document does.
fn fingerprint(state: &State, group: &str, version: &str) -> String {
    let mut hasher = DefaultHasher::new();
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    for info in state.registry().in_group_version(group, version) {
        format!("{info:?}").hash(&mut hasher);
        crd_schema(state, &info)
            .map(|s| s.to_string())
            .hash(&mut hasher);
    }
    format!("{:016X}", hasher.finish())
}

/// `/api/v1` or `/apis/{group}/{version}`.
fn prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// The component name of a custom kind, as kube-apiserver names it: `com.example.v1.Widget`.
fn custom_schema_name(info: &ResourceInfo) -> String {
    let reversed: Vec<&str> = info.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), info.version, info.kind)
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn gvk(info: &ResourceInfo) -> Value {
    json!({"group": info.group, "version": info.version, "kind": info.kind})
}

/// The schema of a custom kind: its CRD version's structural schema (an open object when
/// the CRD has none), with `apiVersion`, `kind` and `metadata` as kube-apiserver adds them.
fn custom_schema(state: &State, info: &ResourceInfo) -> Value {
    let mut schema = crd_schema(state, info)
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if !schema["properties"].is_object() {
        schema["properties"] = json!({});
    }
    let properties = &mut schema["properties"];
    properties["apiVersion"] = json!({"type": "string", "description": "The versioned schema of this representation of an object."});
    properties["kind"] =
        json!({"type": "string", "description": "The REST resource this object represents."});
    properties["metadata"] = json!({
        "allOf": [reference(OBJECT_META)],
        "description": "Standard object's metadata.",
    });
    schema
}

/// The `openAPIV3Schema` of the CRD version that defines a custom kind.
fn crd_schema(state: &State, info: &ResourceInfo) -> Option<Value> {
    let crd = state.get(&crd_resource_key(), "", &info.qualified_plural())?;
    let version = crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == info.version.as_str())?;
    Some(version["schema"]["openAPIV3Schema"].clone()).filter(Value::is_object)
}

fn list_schema(info: &ResourceInfo, item: &str) -> Value {
    json!({
        "type": "object",
        "description": format!("A list of {}.", info.kind),
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"allOf": [reference(LIST_META)]},
            "items": {"type": "array", "items": reference(item)},
        },
        "x-kubernetes-group-version-kind": [{"group": info.group, "version": info.version, "kind": info.list_kind}],
    })
}

/// Adds the collection, object and status paths of one kind.
fn resource_paths(info: &ResourceInfo, schema: &str, paths: &mut Map<String, Value>) {
    let base = prefix(&info.group, &info.version);
    let list = format!("{schema}List");
    let scoped = if info.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", info.plural)
    } else {
        format!("{base}/{}", info.plural)
    };
    let item = format!("{scoped}/{{name}}");
    let object = schema.to_string();
    let status = STATUS.to_string();
    let mut ops: Vec<(String, &str, &str, String)> = vec![
        (scoped.clone(), "get", "list", list.clone()),
        (scoped.clone(), "post", "post", object.clone()),
        (scoped, "delete", "deletecollection", status.clone()),
        (item.clone(), "get", "get", object.clone()),
        (item.clone(), "put", "put", object.clone()),
        (item.clone(), "patch", "patch", object.clone()),
        (item.clone(), "delete", "delete", status),
    ];
    if info.namespaced {
        ops.push((format!("{base}/{}", info.plural), "get", "list", list));
    }
    // Only the verbs the kind has (a review is create-only, componentstatuses read-only).
    ops.retain(|(_, _, action, _)| {
        info.allows(match *action {
            "post" => "create",
            "put" => "update",
            other => other,
        })
    });
    if info.status_subresource {
        for (method, action) in [("get", "get"), ("put", "put"), ("patch", "patch")] {
            ops.push((format!("{item}/status"), method, action, object.clone()));
        }
    }
    for (path, method, action, body) in ops {
        let entry = paths.entry(path.clone()).or_insert_with(|| json!({}));
        entry["parameters"] = path_parameters(&path);
        entry[method] = operation(info, action, &body);
    }
}

fn path_parameters(path: &str) -> Value {
    let parameters: Vec<Value> = ["name", "namespace"]
        .into_iter()
        .filter(|p| path.contains(&format!("{{{p}}}")))
        .map(|p| json!({"name": p, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}}))
        .collect();
    Value::from(parameters)
}

/// One operation, tagged with the kind it acts on (kubectl finds it by that tag).
fn operation(info: &ResourceInfo, action: &str, response: &str) -> Value {
    let query = match action {
        "post" | "put" | "patch" => WRITE_PARAMS,
        "list" => LIST_PARAMS,
        _ => &[],
    };
    let parameters: Vec<Value> = query
        .iter()
        .map(|(name, description)| json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}}))
        .collect();
    let mut op = json!({
        "description": format!("{action} {}", info.kind),
        "operationId": format!("{action}{}{}", capitalized(&info.group), info.kind),
        "parameters": parameters,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": reference(response)}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(info),
    });
    let body = match action {
        "post" | "put" => Some(("application/json", reference(response))),
        "patch" => Some(("application/merge-patch+json", reference(PATCH))),
        _ => None,
    };
    if let Some((media, schema)) = body {
        op["requestBody"] = json!({"content": {media: {"schema": schema}}, "required": true});
    }
    op
}

fn capitalized(group: &str) -> String {
    group
        .split(['.', '-'])
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{StoreConfig, Target, WriteOptions};

    fn widget_crd(size_description: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer", "description": size_description}}}}}}}]},
        })
    }

    fn widget_url(state: &State) -> Value {
        index(state)["paths"]["apis/example.com/v1"]["serverRelativeURL"].clone()
    }

    #[test]
    fn a_crd_schema_is_published_and_its_hash_follows_it() {
        let mut state = State::new(StoreConfig::default());
        let crds = state
            .registry()
            .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .unwrap();
        let options = WriteOptions::default();
        state
            .create(&crds, None, widget_crd("How many parts."), &options)
            .unwrap();
        let doc = group_version(&state, "example.com", "v1").unwrap();
        let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
        assert_eq!(
            widget["properties"]["spec"]["properties"]["size"]["description"],
            "How many parts."
        );
        assert_eq!(
            widget["x-kubernetes-group-version-kind"][0]["kind"],
            "Widget"
        );
        let patch =
            &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Widget");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query"),
            "{patch}"
        );

        let before = widget_url(&state);
        let changed = widget_crd("How many parts, at most ten.");
        state
            .update(
                &crds,
                "",
                "widgets.example.com",
                changed,
                Target::Main,
                &options,
            )
            .unwrap();
        assert_ne!(widget_url(&state), before);
        assert!(widget_url(&state).is_string());
    }

    #[test]
    fn built_in_kinds_have_their_real_schemas() {
        let state = State::new(StoreConfig::default());
        let doc = group_version(&state, "apps", "v1").unwrap();
        let deployment = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deployment["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
        );
        assert!(doc["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"].is_object());
        assert!(group_version(&state, "apps", "v9").is_none());
    }

    #[test]
    fn kinds_added_for_the_whole_api_have_schemas_and_only_their_verbs() {
        let state = State::new(StoreConfig::default());
        let doc = group_version(&state, "networking.k8s.io", "v1").unwrap();
        assert!(doc["components"]["schemas"]["io.k8s.api.networking.v1.IngressSpec"].is_object());
        let doc = group_version(&state, "authentication.k8s.io", "v1").unwrap();
        let reviews = &doc["paths"]["/apis/authentication.k8s.io/v1/tokenreviews"];
        assert!(reviews["post"].is_object(), "{reviews}");
        assert!(
            reviews.get("get").is_none(),
            "a TokenReview cannot be listed: {reviews}"
        );
    }
}
