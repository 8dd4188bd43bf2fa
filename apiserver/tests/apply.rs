//! Server-side apply and strategic merge patch through `kube::Client`.

mod support;

use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use support::*;

fn deployment(containers: Value, replicas: Option<i64>) -> Value {
    let mut spec = json!({"selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}});
    if let Some(replicas) = replicas {
        spec["replicas"] = json!(replicas);
    }
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec})
}

fn container_names(object: &DynamicObject) -> Vec<String> {
    object.data["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

fn managers(object: &DynamicObject) -> Vec<(String, String)> {
    object
        .metadata
        .managed_fields
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            (
                m.manager.unwrap_or_default(),
                m.operation.unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn apply_creates_then_conflicts_with_another_manager_until_forced() {
    let (_server, client) = server();
    let api = deployments(&client, "default");
    let alice = PatchParams::apply("alice");
    let created = api
        .patch(
            "web",
            &alice,
            &Patch::Apply(deployment(
                json!([{"name": "app", "image": "a:1"}]),
                Some(2),
            )),
        )
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["replicas"], 2);
    assert_eq!(
        managers(&created),
        vec![("alice".to_string(), "Apply".to_string())]
    );

    let bob = PatchParams::apply("bob");
    let status = status_of(
        api.patch(
            "web",
            &bob,
            &Patch::Apply(deployment(
                json!([{"name": "app", "image": "a:1"}]),
                Some(5),
            )),
        )
        .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert!(
        status.message.contains("conflict with \"alice\""),
        "{}",
        status.message
    );
    assert!(
        status.message.contains(".spec.replicas"),
        "{}",
        status.message
    );

    let forced = api
        .patch(
            "web",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(deployment(
                json!([{"name": "app", "image": "a:1"}]),
                Some(5),
            )),
        )
        .await
        .unwrap();
    assert_eq!(forced.data["spec"]["replicas"], 5);
}

#[tokio::test]
async fn reapplying_without_a_field_removes_it_unless_someone_else_owns_it() {
    let (_server, client) = server();
    let api = deployments(&client, "default");
    let alice = PatchParams::apply("alice");
    api.patch(
        "web",
        &alice,
        &Patch::Apply(deployment(
            json!([{"name": "app", "image": "a:1"}]),
            Some(3),
        )),
    )
    .await
    .unwrap();
    let without = api
        .patch(
            "web",
            &alice,
            &Patch::Apply(deployment(json!([{"name": "app", "image": "a:1"}]), None)),
        )
        .await
        .unwrap();
    // Alice no longer applies replicas: her 3 is removed and the default (1) takes its
    // place, as kube-apiserver defaults a Deployment's replicas.
    assert_eq!(
        without.data["spec"]["replicas"], 1,
        "alice no longer applies replicas: {}",
        without.data["spec"]
    );
}

#[tokio::test]
async fn list_items_keyed_by_name_merge_across_managers() {
    let (_server, client) = server();
    let api = deployments(&client, "default");
    api.patch(
        "web",
        &PatchParams::apply("alice"),
        &Patch::Apply(deployment(json!([{"name": "app", "image": "a:1"}]), None)),
    )
    .await
    .unwrap();
    let both = api
        .patch(
            "web",
            &PatchParams::apply("bob"),
            &Patch::Apply(deployment(
                json!([{"name": "sidecar", "image": "s:1"}]),
                None,
            )),
        )
        .await
        .unwrap();
    let mut names = container_names(&both);
    names.sort();
    assert_eq!(names, vec!["app", "sidecar"]);
}

#[tokio::test]
async fn updates_are_recorded_as_update_managers_and_conflict_with_apply() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let pp = PostParams {
        field_manager: Some("editor".into()),
        ..Default::default()
    };
    cms.create(&pp, &configmap("a", json!({}), json!({"k": "v"})))
        .await
        .unwrap();
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "other"}});
    let status = status_of(
        cms.patch("a", &PatchParams::apply("applier"), &Patch::Apply(applied))
            .await,
    );
    assert_eq!(status.code, 409);
    assert!(
        status.message.contains("\"editor\" using v1"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn apply_requires_a_field_manager() {
    let (_server, client) = server();
    let (code, body) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/a",
        "application/apply-patch+yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let (code, body) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/a?fieldManager=yaml",
        "application/apply-patch+yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
    )
    .await;
    assert_eq!(
        (code, body["data"]["k"].as_str()),
        (201, Some("v")),
        "{body}"
    );
}

#[tokio::test]
async fn strategic_merge_patch_merges_containers_by_name_and_deletes_by_directive() {
    let (_server, client) = server();
    let api = deployments(&client, "default");
    let body = object(deployment(
        json!([{"name": "app", "image": "a:1"}, {"name": "old", "image": "o:1"}]),
        Some(1),
    ));
    create(&api, &body).await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "a:2"},
        {"name": "old", "$patch": "delete"},
        {"name": "new", "image": "n:1"}
    ]}}}});
    let patched = api
        .patch("web", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let containers = &patched.data["spec"]["template"]["spec"]["containers"];
    let mut found: Vec<(String, String)> = containers
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().into(),
                c["image"].as_str().unwrap().into(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![("app".into(), "a:2".into()), ("new".into(), "n:1".into())]
    );
}

#[tokio::test]
async fn strategic_merge_patch_on_a_custom_kind_is_unsupported() {
    let (_server, client) = server();
    install_widget_crd(&client).await;
    let widgets = widgets(&client, "default");
    create(&widgets, &widget("w")).await;
    let status = status_of(
        widgets
            .patch(
                "w",
                &PatchParams::default(),
                &Patch::Strategic(json!({"spec": {"a": 1}})),
            )
            .await,
    );
    assert_eq!(status.code, 415);
}

#[tokio::test]
async fn dry_run_apply_stores_nothing() {
    let (_server, client) = server();
    let api = deployments(&client, "default");
    let mut params = PatchParams::apply("alice");
    params.dry_run = true;
    let answered = api
        .patch(
            "web",
            &params,
            &Patch::Apply(deployment(
                json!([{"name": "app", "image": "a:1"}]),
                Some(1),
            )),
        )
        .await
        .unwrap();
    assert_eq!(answered.data["spec"]["replicas"], 1);
    assert!(api.get_opt("web").await.unwrap().is_none());
}
