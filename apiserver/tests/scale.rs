//! The `scale` subresource (`autoscaling/v1` Scale) of Deployments, StatefulSets,
//! ReplicaSets and CRDs declaring `subresources.scale`.

mod support;

use serde_json::{Value, json};
use support::*;

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
        "status": {"replicas": 1}})
}

const DEPLOYMENT_SCALE: &str = "/apis/apps/v1/namespaces/default/deployments/web/scale";

#[tokio::test]
async fn a_deployments_scale_is_read_updated_and_patched() {
    let (_server, client) = server();
    let (code, _) = post_json(
        &client,
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment().to_string(),
    )
    .await;
    assert_eq!(code, 201);
    let (code, scale) = get_json(&client, DEPLOYMENT_SCALE).await;
    assert_eq!(code, 200, "{scale}");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["metadata"]["name"], "web");
    assert_eq!(scale["metadata"]["namespace"], "default");
    assert_eq!(scale["spec"], json!({"replicas": 1}));
    assert_eq!(scale["status"]["selector"], "app=web");

    let mut body = scale.clone();
    body["spec"]["replicas"] = json!(3);
    let (code, updated) = raw(
        &client,
        "PUT",
        DEPLOYMENT_SCALE,
        "application/json",
        &body.to_string(),
    )
    .await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["replicas"], 3);
    // The stale resourceVersion of the first read is a conflict now.
    let (code, status) = raw(
        &client,
        "PUT",
        DEPLOYMENT_SCALE,
        "application/json",
        &body.to_string(),
    )
    .await;
    assert_eq!(code, 409, "{status}");

    let (code, patched) =
        merge_patch(&client, DEPLOYMENT_SCALE, r#"{"spec":{"replicas":4}}"#).await;
    assert_eq!(
        (code, &patched["spec"]["replicas"]),
        (200, &json!(4)),
        "{patched}"
    );
    let (code, patched) = raw(
        &client,
        "PATCH",
        DEPLOYMENT_SCALE,
        "application/json-patch+json",
        r#"[{"op":"replace","path":"/spec/replicas","value":5}]"#,
    )
    .await;
    assert_eq!(
        (code, &patched["spec"]["replicas"]),
        (200, &json!(5)),
        "{patched}"
    );

    let (_, stored) = get_json(&client, "/apis/apps/v1/namespaces/default/deployments/web").await;
    assert_eq!(stored["spec"]["replicas"], 5);
    assert_eq!(stored["metadata"]["generation"], 4);

    let (code, status) =
        merge_patch(&client, DEPLOYMENT_SCALE, r#"{"spec":{"replicas":-1}}"#).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    let (code, _) = get_json(
        &client,
        "/apis/apps/v1/namespaces/default/deployments/nope/scale",
    )
    .await;
    assert_eq!(code, 404);
    let (code, _) = get_json(&client, "/api/v1/namespaces/default/configmaps/x/scale").await;
    assert_eq!(code, 404);
}

fn scalable_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "pools.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Pool", "plural": "pools"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size",
                    "statusReplicasPath": ".status.ready", "labelSelectorPath": ".status.selector"}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer", "maximum": 10}}},
                    "status": {"type": "object", "properties": {
                        "ready": {"type": "integer"}, "selector": {"type": "string"}}}
                }}}}]}
    })
}

#[tokio::test]
async fn a_crd_declaring_scale_serves_it_at_its_paths_and_validates_the_result() {
    let (_server, client) = server();
    let (code, _) = post_json(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &scalable_crd().to_string(),
    )
    .await;
    assert_eq!(code, 201);
    let pool = json!({"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "p"},
        "spec": {"size": 2}});
    let (code, _) = post_json(
        &client,
        "/apis/example.com/v1/namespaces/default/pools",
        &pool.to_string(),
    )
    .await;
    assert_eq!(code, 201);
    let (code, _) = merge_patch(
        &client,
        "/apis/example.com/v1/namespaces/default/pools/p/status",
        r#"{"status":{"ready":2,"selector":"app=p"}}"#,
    )
    .await;
    assert_eq!(code, 200);
    let path = "/apis/example.com/v1/namespaces/default/pools/p/scale";
    let (code, scale) = get_json(&client, path).await;
    assert_eq!(code, 200, "{scale}");
    assert_eq!(scale["spec"]["replicas"], 2);
    assert_eq!(scale["status"], json!({"replicas": 2, "selector": "app=p"}));
    let (code, scale) = merge_patch(&client, path, r#"{"spec":{"replicas":7}}"#).await;
    assert_eq!(
        (code, &scale["spec"]["replicas"]),
        (200, &json!(7)),
        "{scale}"
    );
    let (_, stored) = get_json(&client, "/apis/example.com/v1/namespaces/default/pools/p").await;
    assert_eq!(stored["spec"]["size"], 7);
    // The object's schema still applies.
    let (code, status) = merge_patch(&client, path, r#"{"spec":{"replicas":11}}"#).await;
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or_default()
            .contains("spec.size: Invalid value: 11"),
        "{status}"
    );
}

#[tokio::test]
async fn discovery_lists_scale_subresources_as_autoscaling_v1_scale() {
    let (_server, client) = server();
    let (_, apps) = get_json(&client, "/apis/apps/v1").await;
    let resources = apps["resources"].as_array().unwrap();
    for plural in ["deployments", "statefulsets", "replicasets"] {
        let scale = resources
            .iter()
            .find(|r| r["name"] == format!("{plural}/scale"))
            .unwrap_or_else(|| panic!("no {plural}/scale in {apps}"));
        assert_eq!(
            (&scale["group"], &scale["version"], &scale["kind"]),
            (&json!("autoscaling"), &json!("v1"), &json!("Scale"))
        );
        assert_eq!(scale["verbs"], json!(["get", "patch", "update"]));
    }
    assert!(!resources.iter().any(|r| r["name"] == "daemonsets/scale"));

    let request = http::Request::builder()
        .uri("/apis")
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let apps = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "apps")
        .unwrap();
    let deployments = apps["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "deployments")
        .unwrap();
    let scale = deployments["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["subresource"] == "scale")
        .unwrap();
    assert_eq!(
        scale["responseKind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
}

#[tokio::test]
async fn a_scale_as_a_table_has_kubes_desired_and_available_columns() {
    let (_server, client) = server();
    let (code, _) = post_json(
        &client,
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment().to_string(),
    )
    .await;
    assert_eq!(code, 201);
    let table = get_table(&client, DEPLOYMENT_SCALE).await;
    assert_eq!(column_names(&table), ["Name", "Desired", "Available"]);
    assert_eq!(table["rows"][0]["cells"], json!(["web", 1, 0]));
}
