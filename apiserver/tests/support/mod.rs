//! Helpers shared by the API server's integration tests.
#![allow(dead_code)]

pub mod rbac;

use dynrec_apiserver::ApiServer;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A fresh server and an in-process client for it.
pub fn server() -> (ApiServer, kube::Client) {
    let server = ApiServer::new();
    let client = server.client();
    (server, client)
}

/// A fresh server, its client, and a CRD installed in it.
pub async fn server_with_crd(crd: Value) -> (ApiServer, kube::Client) {
    let (server, client) = server();
    install_crd(&client, crd).await;
    (server, client)
}

/// The ApiResource of the test CRD kind `Widget` (example.com/v1, plural widgets).
pub fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

/// The Widget API in a namespace.
pub fn widgets(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &widget_resource())
}

/// A Widget with no spec.
pub fn widget(name: &str) -> DynamicObject {
    object(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}}))
}

/// A CRD for `widgets.example.com`, namespaced, with a status subresource.
pub fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

/// The ApiResource of CustomResourceDefinition.
pub fn crd_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    )
}

/// The CustomResourceDefinition API.
pub fn crds(client: &kube::Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &crd_resource())
}

/// Creates a CRD, which must be accepted.
pub async fn install_crd(client: &kube::Client, crd: Value) -> DynamicObject {
    create(&crds(client), &object(crd)).await
}

/// Creates the Widget CRD.
pub async fn install_widget_crd(client: &kube::Client) -> DynamicObject {
    install_crd(client, widget_crd()).await
}

/// A typed object from JSON.
pub fn typed<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

/// A DynamicObject from JSON.
pub fn object(value: Value) -> DynamicObject {
    typed(value)
}

/// Creates an object, which must succeed; returns it as stored.
pub async fn create<K>(api: &Api<K>, object: &K) -> K
where
    K: Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    api.create(&PostParams::default(), object)
        .await
        .expect("the object is created")
}

/// A namespaced DynamicObject API for a built-in kind.
pub fn api(
    client: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    ns: &str,
) -> Api<DynamicObject> {
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// A cluster-wide DynamicObject API (all namespaces, or a cluster-scoped kind).
pub fn cluster_api(
    client: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    Api::all_with(client.clone(), &ar)
}

/// The Namespace API.
pub fn namespaces(client: &kube::Client) -> Api<DynamicObject> {
    cluster_api(client, "", "v1", "Namespace", "namespaces")
}

/// Creates a namespace.
pub async fn create_namespace(client: &kube::Client, name: &str) {
    let body = object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}));
    namespaces(client)
        .create(&PostParams::default(), &body)
        .await
        .expect("namespace created");
}

/// The Deployment API in a namespace.
pub fn deployments(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    api(client, "apps", "v1", "Deployment", "deployments", ns)
}

/// A ConfigMap API in a namespace.
pub fn configmaps(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    api(client, "", "v1", "ConfigMap", "configmaps", ns)
}

/// A ConfigMap body.
pub fn configmap(name: &str, labels: Value, data: Value) -> DynamicObject {
    object(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels}, "data": data}))
}

/// Creates an empty ConfigMap with no labels.
pub async fn create_configmap(api: &Api<DynamicObject>, name: &str) -> DynamicObject {
    create(api, &configmap(name, json!({}), json!({}))).await
}

/// The `kube::Error::Api` status of a failed call.
pub fn status_of<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Sends a raw request and returns (status code, parsed JSON body).
pub async fn raw(
    client: &kube::Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: &str,
) -> (u16, Value) {
    let (code, text) = raw_text(client, method, uri, content_type, body).await;
    let value = serde_json::from_str(&text).unwrap_or(Value::Null);
    (code, value)
}

/// Sends a raw request and returns (status code, the body's bytes as text).
pub async fn raw_text(
    client: &kube::Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: &str,
) -> (u16, String) {
    let request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(kube::client::Body::from(body.as_bytes().to_vec()))
        .expect("a valid request");
    let response = client.send(request).await.expect("the server answers");
    let code = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("a body")
        .to_bytes();
    (code, String::from_utf8_lossy(&bytes).into_owned())
}

/// GETs a path; returns (status code, parsed JSON body).
pub async fn get_json(client: &kube::Client, uri: &str) -> (u16, Value) {
    raw(client, "GET", uri, "application/json", "").await
}

/// GETs a path as a `meta.k8s.io/v1` Table, as kubectl asks; returns the Table.
pub async fn get_table(client: &kube::Client, uri: &str) -> Value {
    let request = http::Request::builder()
        .uri(uri)
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(kube::client::Body::empty())
        .expect("a valid request");
    let response = client.send(request).await.expect("the server answers");
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("a body")
        .to_bytes();
    serde_json::from_slice(&bytes).expect("a JSON Table")
}

/// The names of a Table's columns.
pub fn column_names(table: &Value) -> Vec<&str> {
    let columns = table["columnDefinitions"].as_array().expect("columns");
    columns.iter().filter_map(|c| c["name"].as_str()).collect()
}

/// POSTs a JSON body; returns (status code, parsed JSON body).
pub async fn post_json(client: &kube::Client, uri: &str, body: &str) -> (u16, Value) {
    raw(client, "POST", uri, "application/json", body).await
}

/// Sends a JSON merge patch; returns (status code, parsed JSON body).
pub async fn merge_patch(client: &kube::Client, uri: &str, patch: &str) -> (u16, Value) {
    raw(client, "PATCH", uri, "application/merge-patch+json", patch).await
}

/// Sends a request; returns its status code and the texts of its `Warning` headers.
pub async fn send_for_warnings(
    client: &kube::Client,
    request: http::Request<kube::client::Body>,
) -> (u16, Vec<String>) {
    let response = client.send(request).await.expect("the server answers");
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    (response.status().as_u16(), warnings)
}
