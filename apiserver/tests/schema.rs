//! Structural schemas of CRDs: validation, pruning, defaulting, field validation.

mod support;

use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use support::*;

fn gadget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["replicas"], "properties": {
                        "replicas": {"type": "integer", "minimum": 1},
                        "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
                        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }}
                }}}}]}
    })
}

fn gadgets(client: &kube::Client) -> kube::Api<DynamicObject> {
    let ar = kube::api::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    );
    kube::Api::namespaced_with(client.clone(), "default", &ar)
}

fn gadget(spec: Value) -> DynamicObject {
    object(
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec}),
    )
}

#[tokio::test]
async fn each_keyword_rejects_a_bad_object_with_kubes_message() {
    let (_server, client) = server_with_crd(gadget_crd()).await;
    let api = gadgets(&client);
    let cases = [
        (
            json!({"replicas": "x"}),
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
        ),
        (json!({}), "spec.replicas: Required value"),
        (
            json!({"replicas": 0}),
            "spec.replicas in body should be greater than or equal to 1",
        ),
        (
            json!({"replicas": 1, "mode": "medium"}),
            "spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\"",
        ),
        (
            json!({"replicas": 1, "name": "Abc"}),
            "spec.name in body should match '^[a-z]+$'",
        ),
        (
            json!({"replicas": 1, "name": "abcdefghij"}),
            "spec.name: Too long: may not be more than 8 bytes",
        ),
    ];
    for (spec, expected) in cases {
        let status = status_of(
            api.create(&PostParams::default(), &gadget(spec.clone()))
                .await,
        );
        assert_eq!(status.code, 422, "{spec}: {}", status.message);
        assert!(
            status.message.contains(expected),
            "{spec}: expected {expected:?} in {:?}",
            status.message
        );
    }
}

#[tokio::test]
async fn unknown_fields_are_pruned_and_defaults_applied() {
    let (_server, client) = server_with_crd(gadget_crd()).await;
    let api = gadgets(&client);
    let created = create(
        &api,
        &gadget(json!({"replicas": 2, "bogus": true, "extra": {"free": 1}})),
    )
    .await;
    assert_eq!(
        created.data["spec"],
        json!({"replicas": 2, "mode": "slow", "extra": {"free": 1}})
    );
    let read = api.get("g").await.unwrap();
    assert_eq!(
        read.data["spec"]["mode"], "slow",
        "defaults are visible on read"
    );
    let patched = api
        .patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"mode": "fast"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["mode"], "fast");
}

#[tokio::test]
async fn field_validation_strict_refuses_and_warn_warns() {
    let (_server, client) = server_with_crd(gadget_crd()).await;
    let body = r#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"replicas":1,"bogus":1}}"#;
    let (code, status) = post_json(
        &client,
        "/apis/example.com/v1/namespaces/default/gadgets?fieldValidation=Strict",
        body,
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        status["message"],
        "strict decoding error: unknown field \"spec.bogus\""
    );

    let request = http::Request::builder()
        .method("POST")
        .uri("/apis/example.com/v1/namespaces/default/gadgets")
        .header("content-type", "application/json")
        .body(kube::client::Body::from(body.as_bytes().to_vec()))
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert_eq!(response.status(), 201);
    let warning = response
        .headers()
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert_eq!(warning, "299 - \"unknown field \\\"spec.bogus\\\"\"");
}

#[tokio::test]
async fn a_crd_with_a_bad_schema_is_refused() {
    let (_server, client) = server();
    let mut crd = gadget_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["name"]
        ["pattern"] = json!("([");
    let status = status_of(
        crds(&client)
            .create(&PostParams::default(), &object(crd))
            .await,
    );
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .contains("spec.versions[0].schema.openAPIV3Schema"),
        "{}",
        status.message
    );
}

/// A kind with a list-map of listeners (keyed by name, or by name and port) and a set of
/// hostnames.
fn router_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "routers.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Router", "plural": "routers"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "listeners": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "properties": {
                                "name": {"type": "string"}, "port": {"type": "integer"}}}},
                        "routes": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["host", "port"],
                            "items": {"type": "object", "properties": {
                                "host": {"type": "string"}, "port": {"type": "integer"}}}},
                        "hostnames": {"type": "array", "x-kubernetes-list-type": "set",
                            "items": {"type": "string"}},
                        "ports": {"type": "array", "x-kubernetes-list-type": "set",
                            "items": {"type": "integer"}}
                    }}
                }}}}]}
    })
}

#[tokio::test]
async fn list_maps_and_sets_refuse_duplicates_in_kubes_words() {
    let (_server, client) = server_with_crd(router_crd()).await;
    let routers = api(&client, "example.com", "v1", "Router", "routers", "default");
    let router = |spec: Value| {
        object(json!({"apiVersion": "example.com/v1", "kind": "Router",
            "metadata": {"name": "r"}, "spec": spec}))
    };
    let cases = [
        (
            json!({"listeners": [{"name": "http", "port": 80}, {"name": "http", "port": 8080}]}),
            r#"spec.listeners[1]: Duplicate value: map[string]interface {}{"name":"http"}"#,
        ),
        (
            json!({"routes": [{"host": "a", "port": 1}, {"host": "a", "port": 2}, {"host": "a", "port": 1}]}),
            r#"spec.routes[2]: Duplicate value: map[string]interface {}{"host":"a", "port":1}"#,
        ),
        (
            json!({"hostnames": ["a.io", "b.io", "a.io", "a.io"]}),
            r#"spec.hostnames[2]: Duplicate value: "a.io""#,
        ),
        (
            json!({"ports": [80, 443, 80]}),
            "spec.ports[2]: Duplicate value: 80",
        ),
    ];
    for (spec, expected) in cases {
        let status = status_of(
            routers
                .create(&PostParams::default(), &router(spec.clone()))
                .await,
        );
        assert_eq!(status.code, 422, "{spec}");
        assert_eq!(
            status.message,
            format!("Router.example.com \"r\" is invalid: {expected}"),
            "{spec}"
        );
        let cause = &status.details.as_ref().unwrap().causes[0];
        assert_eq!(cause.reason, "FieldValueDuplicate");
    }
    let unique = json!({"listeners": [{"name": "http"}, {"name": "https"}],
        "hostnames": ["a.io", "b.io"], "ports": [80, 443]});
    routers
        .create(&PostParams::default(), &router(unique))
        .await
        .expect("unique elements are accepted");
}
