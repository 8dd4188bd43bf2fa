//! The schemas expressions and templates are checked against: a CRD version's
//! `openAPIV3Schema`, or a kind's schema in the cluster's OpenAPI v3 documents (built-in
//! kinds and CRDs alike), walked lazily through `$ref`s.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use serde_json::{Value, json};

use crate::object::Gvk;

/// A node of a schema; `$ref`s resolve against the document it came from. Cheap to clone:
/// it points into shared documents and never copies a node.
#[derive(Clone, Debug)]
pub struct Schema {
    components: Arc<Value>,
    node: NodeRef,
    /// Whether this node is an object's root (`apiVersion`, `kind`, `metadata` are implied).
    root: bool,
    /// Whether this node is a stored object's `metadata` (its name, uid, ... are set).
    meta: bool,
}

/// A node of a shared document: the document and the JSON pointer to the node.
#[derive(Clone, Debug)]
struct NodeRef {
    document: Arc<Value>,
    pointer: String,
}

static NULL: Value = Value::Null;

impl NodeRef {
    fn whole(document: Arc<Value>) -> Self {
        Self {
            document,
            pointer: String::new(),
        }
    }

    fn get(&self) -> &Value {
        self.document.pointer(&self.pointer).unwrap_or(&NULL)
    }

    /// The node at `keys` under this one.
    fn under(&self, keys: &[&str]) -> Self {
        let mut pointer = self.pointer.clone();
        for key in keys {
            pointer.push('/');
            pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
        }
        Self {
            document: self.document.clone(),
            pointer,
        }
    }
}

/// Shared synthesized nodes: a string field, and `ObjectMeta` for CRDs that leave it bare.
static STRING: LazyLock<NodeRef> =
    LazyLock::new(|| NodeRef::whole(Arc::new(json!({"type": "string"}))));
static OBJECT_META: LazyLock<NodeRef> = LazyLock::new(|| NodeRef::whole(Arc::new(object_meta())));

/// What a field lookup found.
pub enum Field {
    /// The field's schema.
    Known(Schema),
    /// Any field is allowed here (`x-kubernetes-preserve-unknown-fields`, or a map whose
    /// values have this schema when given).
    Open(Option<Schema>),
    /// No such field; these are the fields there are.
    Unknown(Vec<String>),
}

impl Schema {
    /// The root of a CRD version's `openAPIV3Schema`.
    pub fn of_crd(open_api_v3_schema: Value) -> Self {
        Self {
            components: Arc::new(Value::Null),
            node: NodeRef::whole(Arc::new(open_api_v3_schema)),
            root: true,
            meta: false,
        }
    }

    /// The kind's schema in an OpenAPI v3 document (found by `x-kubernetes-group-version-kind`).
    pub fn of_openapi(document: &Value, gvk: &Gvk) -> Option<Self> {
        let schemas = document.pointer("/components/schemas")?.as_object()?;
        let (name, _) = schemas.iter().find(|(_, schema)| {
            schema["x-kubernetes-group-version-kind"]
                .as_array()
                .is_some_and(|kinds| {
                    kinds.iter().any(|k| {
                        k["group"].as_str() == Some(&gvk.group)
                            && k["version"].as_str() == Some(&gvk.version)
                            && k["kind"].as_str() == Some(&gvk.kind)
                    })
                })
        })?;
        let components = Arc::new(document["components"]["schemas"].clone());
        Some(Self {
            node: NodeRef::whole(components.clone()).under(&[name]),
            components,
            root: true,
            meta: false,
        })
    }

    fn child(&self, node: NodeRef) -> Self {
        Self {
            components: self.components.clone(),
            node,
            root: false,
            meta: false,
        }
    }

    fn metadata(&self, node: NodeRef) -> Self {
        Self {
            meta: true,
            ..self.child(node)
        }
    }

    /// Whether every object this schema admits has the field (after the API server's
    /// defaulting): required, or defaulted, or set on every stored object.
    pub fn always_has(&self, name: &str) -> bool {
        let resolved = self.resolved();
        let node = resolved.get();
        let required = node["required"]
            .as_array()
            .is_some_and(|r| r.iter().any(|f| f == name));
        let defaulted = node["properties"][name].get("default").is_some();
        let stored = match (self.root, self.meta) {
            (true, _) => matches!(name, "apiVersion" | "kind" | "metadata"),
            (_, true) => matches!(
                name,
                "name" | "uid" | "resourceVersion" | "creationTimestamp"
            ),
            _ => false,
        };
        required || defaulted || stored
    }

    /// The node with `$ref` (also inside a single `allOf`) followed.
    fn resolved(&self) -> NodeRef {
        let mut node = self.node.clone();
        for _ in 0..32 {
            let value = node.get();
            let reference = value["$ref"].as_str().or_else(|| {
                value["allOf"]
                    .as_array()
                    .filter(|all| all.len() == 1)
                    .and_then(|all| all[0]["$ref"].as_str())
            });
            let Some(reference) = reference else { break };
            let name = reference.rsplit('/').next().unwrap_or_default();
            node = NodeRef::whole(self.components.clone()).under(&[name]);
        }
        node
    }

    /// The schema's `type` (`object`, `array`, `string`, `integer`, `number`, `boolean`),
    /// or `None` when any type is allowed.
    pub fn type_name(&self) -> Option<String> {
        let resolved = self.resolved();
        let node = resolved.get();
        if node["x-kubernetes-int-or-string"] == json!(true) {
            return None;
        }
        node["type"].as_str().map(str::to_owned).or_else(|| {
            (node.get("properties").is_some() || node.get("additionalProperties").is_some())
                .then(|| "object".to_owned())
        })
    }

    /// Whether any value (or any field) is allowed here.
    pub fn is_open(&self) -> bool {
        is_open(self.resolved().get())
    }

    /// The schema of a field of this object.
    pub fn field(&self, name: &str) -> Field {
        let resolved = self.resolved();
        let node = resolved.get();
        if let Some(property) = node["properties"].get(name) {
            if name == "metadata" && self.root {
                return Field::Known(match property.get("properties") {
                    None => self.metadata(OBJECT_META.clone()),
                    Some(_) => self.metadata(resolved.under(&["properties", name])),
                });
            }
            return Field::Known(self.child(resolved.under(&["properties", name])));
        }
        if self.root {
            match name {
                "apiVersion" | "kind" => return Field::Known(self.child(STRING.clone())),
                "metadata" => return Field::Known(self.metadata(OBJECT_META.clone())),
                _ => {}
            }
        }
        match node.get("additionalProperties") {
            Some(Value::Bool(true)) => return Field::Open(None),
            Some(Value::Object(_)) => {
                return Field::Open(Some(self.child(resolved.under(&["additionalProperties"]))));
            }
            _ => {}
        }
        if is_open(node) {
            return Field::Open(None);
        }
        let mut known: Vec<String> = node["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        if self.root {
            known.extend(["apiVersion", "kind", "metadata"].map(String::from));
        }
        known.sort();
        known.dedup();
        Field::Unknown(known)
    }

    /// The schema of this list's items.
    pub fn items(&self) -> Option<Schema> {
        let resolved = self.resolved();
        let has_items = resolved.get().get("items").is_some();
        has_items.then(|| self.child(resolved.under(&["items"])))
    }

    /// This node as a CRD's structural schema, `$ref`s inlined, as KRO copies a resource's
    /// schema into an inferred status field: `type`, `format`, `properties`, `items`,
    /// `additionalProperties` and the `x-kubernetes` markers of values. Past `budget`
    /// nodes (a recursive schema, as a CRD's own), the rest admits any value.
    pub fn structural(&self, budget: &mut usize) -> Value {
        let resolved = self.resolved();
        let node = resolved.get();
        if *budget == 0 || is_open(node) {
            return json!({"x-kubernetes-preserve-unknown-fields": true});
        }
        *budget -= 1;
        let mut out = serde_json::Map::new();
        for key in [
            "type",
            "format",
            "x-kubernetes-int-or-string",
            "x-kubernetes-preserve-unknown-fields",
        ] {
            if let Some(value) = node.get(key) {
                out.insert(key.to_owned(), value.clone());
            }
        }
        if let Some(properties) = node["properties"].as_object() {
            let mut copied = serde_json::Map::new();
            for name in properties.keys() {
                let field = self.child(resolved.under(&["properties", name]));
                copied.insert(name.clone(), field.structural(budget));
            }
            out.insert("properties".to_owned(), Value::Object(copied));
            out.entry("type").or_insert(json!("object"));
        }
        if let Some(items) = self.items() {
            out.insert("items".to_owned(), items.structural(budget));
        }
        match (self.map_values(), node.get("additionalProperties")) {
            (Some(values), _) => {
                out.insert("additionalProperties".to_owned(), values.structural(budget));
            }
            (None, Some(Value::Bool(true))) => {
                out.insert("additionalProperties".to_owned(), json!(true));
            }
            _ => {}
        }
        Value::Object(out)
    }

    /// The values of this map, when it is a map (`additionalProperties`).
    pub fn map_values(&self) -> Option<Schema> {
        let resolved = self.resolved();
        match resolved.get().get("additionalProperties") {
            Some(Value::Object(_)) => Some(self.child(resolved.under(&["additionalProperties"]))),
            _ => None,
        }
    }
}

/// Whether any value (or any field) is allowed at `node`.
fn is_open(node: &Value) -> bool {
    node["x-kubernetes-preserve-unknown-fields"] == json!(true)
        || node.is_null()
        || (node["type"].is_null()
            && node.get("properties").is_none()
            && node.get("items").is_none()
            && node.get("additionalProperties").is_none())
}

/// `ObjectMeta`'s fields, for CRD schemas that leave `metadata` as a bare object.
fn object_meta() -> Value {
    let string = json!({"type": "string"});
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({"type": "object", "properties": {
        "name": string, "generateName": string, "namespace": string, "uid": string,
        "resourceVersion": string, "generation": {"type": "integer"},
        "creationTimestamp": string, "deletionTimestamp": string,
        "labels": strings, "annotations": strings,
        "finalizers": {"type": "array", "items": string},
        "ownerReferences": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "managedFields": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
    }})
}

/// What the cluster said of a kind.
#[derive(Clone, Debug)]
pub enum Lookup {
    /// The kind's schema.
    Found(Schema),
    /// Its group/version is served, without this kind; these are the kinds it has.
    NoSuchKind(Vec<String>),
    /// Its group/version is not served (yet: a CRD still to come).
    NotServed,
    /// Nothing is known (no OpenAPI documents to read).
    Unknown,
}

/// Schemas found so far, by kind.
#[derive(Clone, Default)]
pub struct Schemas {
    known: BTreeMap<Gvk, Lookup>,
}

impl Schemas {
    /// Records a kind's schema (e.g. from a definition's own `schema:`).
    pub fn insert(&mut self, gvk: Gvk, schema: Schema) {
        self.known.insert(gvk, Lookup::Found(schema));
    }

    /// The kind's schema, if known.
    pub fn get(&self, gvk: &Gvk) -> Option<&Schema> {
        match self.known.get(gvk) {
            Some(Lookup::Found(schema)) => Some(schema),
            _ => None,
        }
    }

    /// What the cluster said of the kind (`Unknown` when it was not asked).
    pub fn lookup(&self, gvk: &Gvk) -> &Lookup {
        self.known.get(gvk).unwrap_or(&Lookup::Unknown)
    }

    /// Fetches the schemas of `kinds` not yet known from the cluster's OpenAPI v3 documents.
    pub async fn fetch(&mut self, client: &kube::Client, kinds: impl IntoIterator<Item = Gvk>) {
        let mut index = None;
        let mut documents: BTreeMap<String, Document> = BTreeMap::new();
        for gvk in kinds {
            if self.known.contains_key(&gvk) {
                continue;
            }
            let path = match gvk.group.as_str() {
                "" => format!("api/{}", gvk.version),
                group => format!("apis/{group}/{}", gvk.version),
            };
            if !documents.contains_key(&path) {
                if index.is_none() {
                    index = Some(get_json(client, "/openapi/v3").await);
                }
                let document =
                    fetch_document(client, index.as_ref().and_then(Option::as_ref), &path).await;
                documents.insert(path.clone(), document);
            }
            let lookup = match &documents[&path] {
                Document::Served(document) => match Schema::of_openapi(document, &gvk) {
                    Some(schema) => Lookup::Found(schema),
                    None => Lookup::NoSuchKind(kinds_in(document, &gvk)),
                },
                Document::NotServed => Lookup::NotServed,
                Document::Unknown => Lookup::Unknown,
            };
            self.known.insert(gvk, lookup);
        }
    }
}

/// A group-version's OpenAPI document, or why there is none.
enum Document {
    Served(Value),
    NotServed,
    Unknown,
}

/// One group-version's OpenAPI v3 document, found through the `/openapi/v3` index: a
/// group/version the index does not list is not served.
async fn fetch_document(client: &kube::Client, index: Option<&Value>, path: &str) -> Document {
    let Some(index) = index else {
        return Document::Unknown;
    };
    let Some(url) = index["paths"][path]["serverRelativeURL"].as_str() else {
        return Document::NotServed;
    };
    match get_json(client, url).await {
        Some(document) => Document::Served(document),
        None => Document::Unknown,
    }
}

/// The kinds an OpenAPI document has in the group/version of `gvk`, sorted.
fn kinds_in(document: &Value, gvk: &Gvk) -> Vec<String> {
    let mut kinds: Vec<String> = document
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|schemas| schemas.values())
        .filter_map(|schema| schema["x-kubernetes-group-version-kind"].as_array())
        .flatten()
        .filter(|k| {
            k["group"].as_str() == Some(&gvk.group) && k["version"].as_str() == Some(&gvk.version)
        })
        .filter_map(|k| k["kind"].as_str().map(str::to_owned))
        .filter(|kind| {
            !kind.ends_with("List")
                && !matches!(
                    kind.as_str(),
                    "WatchEvent"
                        | "DeleteOptions"
                        | "Status"
                        | "APIResourceList"
                        | "APIGroup"
                        | "APIGroupList"
                        | "APIVersions"
                )
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

async fn get_json(client: &kube::Client, url: &str) -> Option<Value> {
    let request = http::Request::get(url).body(Vec::new()).ok()?;
    match client.request::<Value>(request).await {
        Ok(value) => Some(value),
        Err(err) => {
            tracing::debug!(%url, %err, "no OpenAPI document; expressions over it are not checked");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget() -> Schema {
        Schema::of_crd(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"greeting": {"type": "string"}, "size": {"type": "integer"},
                     "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                     "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}))
    }

    fn known(field: Field) -> Schema {
        match field {
            Field::Known(s) => s,
            _ => panic!("not known"),
        }
    }

    #[test]
    fn fields_types_and_open_places() {
        let spec = known(widget().field("spec"));
        assert_eq!(
            known(spec.field("size")).type_name().as_deref(),
            Some("integer")
        );
        match spec.field("greting") {
            Field::Unknown(fields) => assert_eq!(fields, ["extra", "greeting", "labels", "size"]),
            _ => panic!("greting was found"),
        }
        assert!(matches!(
            known(spec.field("extra")).field("anything"),
            Field::Open(None)
        ));
        assert!(matches!(
            known(spec.field("labels")).field("a"),
            Field::Open(Some(_))
        ));
        let meta = known(widget().field("metadata"));
        assert_eq!(
            known(meta.field("name")).type_name().as_deref(),
            Some("string")
        );
    }

    #[test]
    fn openapi_refs_are_followed() {
        let document = json!({"components": {"schemas": {
            "io.k8s.api.core.v1.ConfigMap": {"type": "object",
                "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}],
                "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}},
                               "metadata": {"allOf": [{"$ref": "#/components/schemas/meta"}]}}},
            "meta": {"type": "object", "properties": {"name": {"type": "string"}}}}}});
        let schema = Schema::of_openapi(&document, &Gvk::new("", "v1", "ConfigMap")).unwrap();
        let meta = known(schema.field("metadata"));
        assert_eq!(
            known(meta.field("name")).type_name().as_deref(),
            Some("string")
        );
        assert!(matches!(meta.field("nam"), Field::Unknown(_)));
    }
}
