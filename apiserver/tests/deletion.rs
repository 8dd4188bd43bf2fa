//! Finalizers, deletionTimestamp, propagation policies, delete collection and namespace
//! deletion.

mod support;

use kube::api::{
    DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, Preconditions,
};
use serde_json::{Value, json};
use support::*;

fn owned_configmap(name: &str, owner: &DynamicObject, block: bool) -> DynamicObject {
    object(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name,
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name,
            "uid": owner.metadata.uid, "controller": true, "blockOwnerDeletion": block}]}}),
    )
}

/// A ConfigMap owned by `first` (its controller) and `second`, neither reference
/// blocking (kube allows one controller reference at most).
fn owned_by_both(name: &str, first: &DynamicObject, second: &DynamicObject) -> DynamicObject {
    let mut dependent = owned_configmap(name, first, false);
    let mut refs = dependent.metadata.owner_references.clone().unwrap();
    let mut second_refs = owned_configmap(name, second, false)
        .metadata
        .owner_references
        .unwrap();
    second_refs[0].controller = None;
    refs.extend(second_refs);
    dependent.metadata.owner_references = Some(refs);
    dependent
}

#[tokio::test]
async fn an_object_with_finalizers_waits_for_them() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let body = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/a", "example.com/b"]}}));
    create(&cms, &body).await;
    let deleting = cms.delete("held", &DeleteParams::default()).await.unwrap();
    let deleting = deleting
        .left()
        .expect("the object is returned while it waits");
    assert!(deleting.metadata.deletion_timestamp.is_some());

    // deletionTimestamp cannot be taken back, and no finalizer can be added.
    let mut revived = cms.get("held").await.unwrap();
    revived.metadata.deletion_timestamp = None;
    let kept = cms
        .replace("held", &PostParams::default(), &revived)
        .await
        .unwrap();
    assert!(kept.metadata.deletion_timestamp.is_some());
    let status = status_of(
        cms.patch("held", &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/a", "example.com/b", "example.com/c"]}})))
            .await,
    );
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("no new finalizers"),
        "{}",
        status.message
    );

    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/b"]}})),
    )
    .await
    .unwrap();
    assert!(cms.get_opt("held").await.unwrap().is_some());
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(cms.get_opt("held").await.unwrap().is_none());
}

#[tokio::test]
async fn delete_preconditions_are_checked() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    create_configmap(&cms, "a").await;
    let params = DeleteParams::default().preconditions(Preconditions {
        uid: Some("other".into()),
        resource_version: None,
    });
    let status = status_of(cms.delete("a", &params).await);
    assert_eq!(status.code, 409);
    assert!(
        status.message.contains("Precondition failed: UID"),
        "{}",
        status.message
    );
    assert!(cms.get_opt("a").await.unwrap().is_some());
}

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let owner = create_configmap(&cms, "owner").await;
    let other = create_configmap(&cms, "other").await;
    create(&cms, &owned_configmap("child", &owner, false)).await;
    create(&cms, &owned_by_both("shared", &owner, &other)).await;

    cms.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    assert!(
        cms.get_opt("child").await.unwrap().is_none(),
        "a dependent with no owner left is collected"
    );
    let shared = cms.get("shared").await.unwrap();
    let refs = shared.metadata.owner_references.unwrap();
    assert_eq!(
        refs.len(),
        1,
        "the dangling reference is dropped, the live one kept"
    );
    assert_eq!(refs[0].uid, other.metadata.uid.unwrap());
}

/// A reference to `owner` with its uid replaced by `uid`.
fn reference_with_uid(owner: &DynamicObject, uid: &str) -> DynamicObject {
    let mut gone = owner.clone();
    gone.metadata.uid = Some(uid.to_string());
    gone
}

#[tokio::test]
async fn a_dependent_written_for_an_owner_that_is_gone_is_collected() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let owner = create_configmap(&cms, "owner").await;

    let never = reference_with_uid(&owner, "00000000-0000-0000-0000-000000000000");
    let created = create(&cms, &owned_configmap("orphan", &never, false)).await;
    assert_eq!(
        created.metadata.name.as_deref(),
        Some("orphan"),
        "the create is answered"
    );
    assert!(
        cms.get_opt("orphan").await.unwrap().is_none(),
        "an owner uid that never existed: collected"
    );

    // The owner's name exists, but with another uid: the owner named is gone.
    let recreated = reference_with_uid(&owner, "11111111-1111-1111-1111-111111111111");
    create(&cms, &owned_configmap("stale", &recreated, true)).await;
    assert!(
        cms.get_opt("stale").await.unwrap().is_none(),
        "an owner of the same name with another uid: collected"
    );

    // One live owner and one gone: the dependent stays, without the dangling reference.
    create(&cms, &owned_by_both("shared", &owner, &never)).await;
    let shared = cms.get("shared").await.unwrap();
    let refs = shared.metadata.owner_references.unwrap();
    assert_eq!(refs.len(), 1, "the dangling reference is dropped");
    assert_eq!(refs[0].uid, owner.metadata.uid.clone().unwrap());

    // An update that names an owner that is gone collects the dependent too.
    create_configmap(&cms, "plain").await;
    let refs = owned_configmap("x", &never, false)
        .metadata
        .owner_references;
    cms.patch(
        "plain",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": refs}})),
    )
    .await
    .unwrap();
    assert!(
        cms.get_opt("plain").await.unwrap().is_none(),
        "a dependent changed to name a missing owner: collected"
    );
    assert!(cms.get_opt("owner").await.unwrap().is_some());
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let owner = create_configmap(&cms, "owner").await;
    let mut child = owned_configmap("child", &owner, true);
    child.metadata.finalizers = Some(vec!["example.com/slow".into()]);
    create(&cms, &child).await;

    cms.delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    let waiting = cms.get("owner").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert_eq!(
        waiting.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );
    let child = cms.get("child").await.unwrap();
    assert!(
        child.metadata.deletion_timestamp.is_some(),
        "dependents are deleted first"
    );

    let json_patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/metadata/finalizers"}])).unwrap();
    cms.patch(
        "child",
        &PatchParams::default(),
        &Patch::<()>::Json(json_patch),
    )
    .await
    .unwrap();
    assert!(cms.get_opt("child").await.unwrap().is_none());
    assert!(
        cms.get_opt("owner").await.unwrap().is_none(),
        "the owner goes once its blocking dependent is gone"
    );
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_without_the_reference() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let owner = create_configmap(&cms, "owner").await;
    create(&cms, &owned_configmap("child", &owner, false)).await;
    cms.delete("owner", &DeleteParams::orphan()).await.unwrap();
    assert!(cms.get_opt("owner").await.unwrap().is_none());
    let child = cms.get("child").await.unwrap();
    assert!(child.metadata.owner_references.is_none());
}

#[tokio::test]
async fn delete_collection_deletes_what_the_selector_matches() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    for (name, app) in [("a", "x"), ("b", "x"), ("c", "y")] {
        create(&cms, &configmap(name, json!({"app": app}), json!({}))).await;
    }
    let deleted = cms
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("app=x"),
        )
        .await
        .unwrap();
    let deleted = deleted.left().expect("a list of what was deleted");
    assert_eq!(deleted.items.len(), 2);
    let left: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect();
    assert_eq!(
        left,
        vec!["c", "kube-root-ca.crt"],
        "what the selector missed stays"
    );
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_contents_then_itself() {
    let (_server, client) = server();
    create_namespace(&client, "demo").await;
    let cms = configmaps(&client, "demo");
    create_configmap(&cms, "plain").await;
    let held = object(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/x"]}}),
    );
    create(&cms, &held).await;
    create_configmap(&configmaps(&client, "default"), "elsewhere").await;

    namespaces(&client)
        .delete("demo", &DeleteParams::default())
        .await
        .unwrap();
    let ns = namespaces(&client).get("demo").await.unwrap();
    assert_eq!(ns.data["status"]["phase"], "Terminating");
    assert!(cms.get_opt("plain").await.unwrap().is_none());
    assert!(
        cms.get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );

    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(namespaces(&client).get_opt("demo").await.unwrap().is_none());
    assert!(
        configmaps(&client, "default")
            .get_opt("elsewhere")
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn deleting_a_crd_removes_the_kind_and_its_objects() {
    let (_server, client) = server();
    install_widget_crd(&client).await;
    let widgets = widgets(&client, "default");
    create(&widgets, &widget("w")).await;
    let crds = crds(&client);
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    assert!(crds.get_opt("widgets.example.com").await.unwrap().is_none());
    let status = status_of(widgets.list(&ListParams::default()).await);
    assert_eq!(status.code, 404);
    let (_, apis) = get_json(&client, "/apis").await;
    let groups: Vec<&Value> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["name"] == "example.com")
        .collect();
    assert!(groups.is_empty(), "the group is gone from discovery");
}

#[tokio::test]
async fn an_immediate_delete_answers_a_success_status_naming_the_plural_resource() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let body =
        object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gone"}}));
    let created = create(&cms, &body).await;
    let answer = cms.delete("gone", &DeleteParams::default()).await.unwrap();
    let status = answer.right().expect("a Status, as kube-apiserver answers");
    assert_eq!(
        status.status,
        Some(kube::core::response::StatusSummary::Success)
    );
    let details = status.details.expect("details name the deleted object");
    assert_eq!(details.name, "gone");
    assert_eq!(details.group, "");
    // kube-apiserver puts the plural resource name in details.kind.
    assert_eq!(details.kind, "configmaps");
    assert_eq!(Some(details.uid), created.metadata.uid);

    let deployments = deployments(&client, "default");
    let body = object(
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    );
    create(&deployments, &body).await;
    let details = deployments
        .delete("d", &DeleteParams::default())
        .await
        .unwrap()
        .right()
        .and_then(|s| s.details)
        .expect("a Status with details");
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("apps", "deployments")
    );
}

#[tokio::test]
async fn an_immediate_delete_of_a_pod_answers_the_pod_as_its_registry_does() {
    let (_server, client) = server();
    let pods = api(&client, "", "v1", "Pod", "pods", "default");
    let body = object(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    );
    create(&pods, &body).await;
    let pod = pods
        .delete("p", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("pods answer the deleted pod (ReturnDeletedObject)");
    assert_eq!(pod.metadata.name.as_deref(), Some("p"));
    assert!(pods.get_opt("p").await.unwrap().is_none());
}

#[tokio::test]
async fn marking_an_object_with_a_generation_for_deletion_moves_it_to_the_next() {
    let (_server, client) = server();
    let deployments = deployments(&client, "default");
    let body = object(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}));
    let created = create(&deployments, &body).await;
    assert_eq!(created.metadata.generation, Some(1));
    let deleting = deployments
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("the object, still held by its finalizer");
    assert_eq!(deleting.metadata.generation, Some(2));
    let cms = configmaps(&client, "default");
    let held = object(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}));
    create(&cms, &held).await;
    let deleting = cms
        .delete("held", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(deleting.metadata.generation, None, "no generation appears");
}
