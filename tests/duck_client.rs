//! DuckClient<PodSpecable> against the embedded server: patch-only writes of any kind.

mod client_common;

use std::time::Duration;

use client_common::{crd_gvk, object, pod_template, start};
use dynrec::testing::crd;
use dynrec::{
    client::{Client, DuckEvent, Ducked, Error},
    duck_types::{KResource, PodSpecable},
    object::{Gvk, ObjectKey},
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::EnvVar;
use kube::api::DynamicObject;
use serde_json::{Value, json};

fn with_template(gvk: &Gvk, name: &str, spec: Value) -> DynamicObject {
    let mut spec = spec;
    spec["template"] = pod_template();
    object(json!({
        "apiVersion": gvk.api_version(), "kind": gvk.kind,
        "metadata": {"name": name, "namespace": "default", "labels": {"keep": "me"}},
        "spec": spec
    }))
}

/// The object without the fields a write legitimately changes.
fn comparable(object: &DynamicObject) -> Value {
    let mut value = serde_json::to_value(object).unwrap();
    for field in ["resourceVersion", "generation", "managedFields"] {
        value["metadata"].as_object_mut().unwrap().remove(field);
    }
    value
}

/// Adds env var B=2 through the duck and checks that nothing else changed.
async fn patch_env_var(client: &Client, gvk: &Gvk, created: DynamicObject) {
    let key = ObjectKey::of(&created).unwrap();
    let ducks = client.duck::<PodSpecable>();
    let mut duck = ducks.get(gvk, &key).await.unwrap();
    let pod = duck.spec.template.spec.as_mut().unwrap();
    pod.containers[0].env.get_or_insert_default().push(EnvVar {
        name: "B".into(),
        value: Some("2".into()),
        ..EnvVar::default()
    });
    // A merge patch replaces the whole list: the container as stored (for a Deployment or
    // StatefulSet with the defaults the server gave it, as a cluster does) plus B.
    let mut container = created.data["spec"]["template"]["spec"]["containers"][0].clone();
    container["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "B", "value": "2"}));
    assert_eq!(
        duck.merge_patch().unwrap(),
        json!({"spec": {"template": {"spec": {"containers": [container]}}}})
    );
    let patched = ducks.patch(&duck).await.unwrap();
    assert_ne!(
        patched.metadata.resource_version,
        duck.metadata.resource_version
    );

    let after = client.api_reader().get(gvk, &key).await.unwrap();
    let mut expected = comparable(&created);
    expected["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "B", "value": "2"}));
    assert_eq!(
        comparable(&after),
        expected,
        "{gvk}: only the env var changed"
    );

    let err = ducks.patch(&duck).await.unwrap_err();
    assert!(
        err.is_conflict(),
        "{gvk}: a stale resourceVersion is a conflict, got {err}"
    );
}

#[tokio::test]
async fn patches_an_env_var_into_a_deployment() {
    let (_server, client) = start();
    let gvk: Gvk = "apps/v1/Deployment".parse().unwrap();
    let spec = json!({"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "strategy": {"type": "Recreate"}});
    let created = client
        .create(&with_template(&gvk, "web", spec))
        .await
        .unwrap();
    patch_env_var(&client, &gvk, created).await;
}

#[tokio::test]
async fn patches_an_env_var_into_a_stateful_set() {
    let (_server, client) = start();
    let gvk: Gvk = "apps/v1/StatefulSet".parse().unwrap();
    let spec =
        json!({"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "web"}}});
    let created = client
        .create(&with_template(&gvk, "db", spec))
        .await
        .unwrap();
    patch_env_var(&client, &gvk, created).await;
}

#[tokio::test]
async fn patches_an_env_var_into_a_custom_kind() {
    let (_server, client) = start();
    client
        .create(&crd("apps.example.com", "Service", "services"))
        .await
        .unwrap();
    let gvk = crd_gvk("apps.example.com", "Service");
    client.resolver().wait_for(&gvk).await.unwrap();
    let spec = json!({"routes": [{"path": "/", "weight": 100}], "unknownToTheDuck": {"x": true}});
    let created = client
        .create(&with_template(&gvk, "svc", spec))
        .await
        .unwrap();
    patch_env_var(&client, &gvk, created).await;
}

#[tokio::test]
async fn unchanged_duck_sends_nothing_and_wrong_shapes_name_the_path() {
    let (server, client) = start();
    let gvk: Gvk = "v1/ConfigMap".parse().unwrap();
    let created = client
        .create(&object(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "plain", "namespace": "default"},
            "data": {"a": "b"}
        })))
        .await
        .unwrap();
    let key = ObjectKey::of(&created).unwrap();
    let duck = client.duck::<KResource>().get(&gvk, &key).await.unwrap();
    assert_eq!(
        duck.status,
        Default::default(),
        "missing fields project to defaults"
    );
    let patches = server.request_count("patch", "", "configmaps");
    client.duck::<KResource>().patch(&duck).await.unwrap();
    assert_eq!(server.request_count("patch", "", "configmaps"), patches);

    let mut malformed = created.clone();
    malformed.data["status"] = json!({"conditions": "nope"});
    let err = Ducked::<KResource>::project(&gvk, &malformed).unwrap_err();
    let Error::Projection(failure) = &err else {
        panic!("{err}")
    };
    assert_eq!(failure.source.path, "status.conditions");
    assert!(
        err.to_string()
            .contains("default/plain: object is not a KResource: at status.conditions"),
        "{err}"
    );
}

#[tokio::test]
async fn watch_projects_changes_through_the_shared_cache() {
    let (server, client) = start();
    let gvk: Gvk = "apps/v1/Deployment".parse().unwrap();
    let mut watch = client.duck::<PodSpecable>().watch(&gvk).await.unwrap();
    let spec = json!({"selector": {"matchLabels": {"app": "web"}}});
    client
        .create(&with_template(&gvk, "watched", spec))
        .await
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(2), watch.next())
        .await
        .expect("an event arrives")
        .expect("the stream is open")
        .unwrap();
    let DuckEvent::Applied(duck) = event else {
        panic!("expected an apply")
    };
    assert_eq!(duck.metadata.name.as_deref(), Some("watched"));
    assert_eq!(
        duck.spec.template.spec.as_ref().unwrap().containers[0].name,
        "app"
    );
    assert_eq!(server.request_count("watch", "apps", "deployments"), 1);
}
