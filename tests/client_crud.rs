//! Client writes of any kind against the embedded server.

mod client_common;

use std::time::Duration;

use client_common::{config_map, crd_gvk, eventually, object, start};
use dynrec::testing::crd;
use dynrec::{
    client::{EventRecorder, ListOptions, reasons},
    object::{Fields, Gvk, ObjectKey, StatusExt},
};
use kube::{
    api::{DeleteParams, Patch, PatchParams, Preconditions, PropagationPolicy},
    core::Selector,
};
use serde_json::json;

fn config_maps() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

#[tokio::test]
async fn create_update_patch_and_delete() {
    let (_server, client) = start();
    let key = ObjectKey::namespaced("default", "cm");
    let mut created = client
        .create(&config_map("cm", json!({"a": "1"})))
        .await
        .unwrap();
    let taken = client
        .create(&config_map("cm", json!({})))
        .await
        .unwrap_err();
    assert!(taken.is_already_exists());
    // What was attempted and the server's message and reason, no Rust `Debug` of a Status.
    assert_eq!(
        taken.to_string(),
        r#"create v1/ConfigMap: configmaps "cm" already exists (AlreadyExists)"#
    );

    created.set_field("data.key", "changed").unwrap();
    let updated = client.update(&created).await.unwrap();
    assert_eq!(updated.field_str("data.key").unwrap(), Some("changed"));
    let err = client.update(&created).await.unwrap_err();
    assert!(err.is_conflict(), "a stale update conflicts: {err}");

    let merge = Patch::Merge(json!({"data": {"merged": "yes"}}));
    let merged = client
        .patch(&config_maps(), &key, &merge, &PatchParams::default())
        .await
        .unwrap();
    assert_eq!(merged.field_str("data.merged").unwrap(), Some("yes"));

    let ops = serde_json::from_value(json!([
        {"op": "test", "path": "/data/merged", "value": "yes"},
        {"op": "remove", "path": "/data/merged"}
    ]))
    .unwrap();
    let patched = client
        .patch(
            &config_maps(),
            &key,
            &Patch::Json(ops),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.field("data.merged").unwrap(), None);

    let stale = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: created.metadata.resource_version.clone(),
            uid: None,
        }),
        ..DeleteParams::default()
    };
    assert!(
        client
            .delete(&config_maps(), &key, &stale)
            .await
            .unwrap_err()
            .is_conflict()
    );
    let foreground = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..DeleteParams::default()
    };
    client
        .delete(&config_maps(), &key, &foreground)
        .await
        .unwrap();
    eventually(Duration::from_secs(2), "the config map to go", || async {
        client
            .get(&config_maps(), &key)
            .await
            .err()
            .filter(|e| e.is_not_found())
    })
    .await;
    let err = client
        .delete(&config_maps(), &key, &DeleteParams::default())
        .await
        .unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.to_string(), "v1/ConfigMap default/cm not found");
}

#[tokio::test]
async fn namespaced_kinds_need_a_namespace() {
    let (_server, client) = start();
    let err = client
        .get(&config_maps(), &ObjectKey::cluster("cm"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "v1/ConfigMap is namespaced: cm needs a namespace"
    );
    let mut unnamespaced = config_map("cm", json!({}));
    unnamespaced.metadata.namespace = None;
    assert!(client.create(&unnamespaced).await.is_err());
}

#[tokio::test]
async fn delete_collection_by_selector() {
    let (_server, client) = start();
    client
        .create(&config_map("keep", json!({"tier": "front"})))
        .await
        .unwrap();
    client
        .create(&config_map("drop1", json!({"tier": "back"})))
        .await
        .unwrap();
    client
        .create(&config_map("drop2", json!({"tier": "back"})))
        .await
        .unwrap();
    let back: Selector = [("tier", "back")].into_iter().collect();
    let options = ListOptions::default().namespace("default").selector(back);
    client
        .delete_collection(&config_maps(), &options, &DeleteParams::default())
        .await
        .unwrap();
    let left = client
        .list(&config_maps(), &ListOptions::default().namespace("default"))
        .await
        .unwrap();
    let names: Vec<_> = left
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    assert!(
        names.contains(&"keep".to_string()) && !names.iter().any(|n| n.starts_with("drop")),
        "{names:?}"
    );
}

#[tokio::test]
async fn status_update_and_patch_on_a_custom_kind() {
    let (_server, client) = start();
    client
        .create(&crd("status.example.com", "Gadget", "gadgets"))
        .await
        .unwrap();
    let gvk = crd_gvk("status.example.com", "Gadget");
    client.resolver().wait_for(&gvk).await.unwrap();
    let key = ObjectKey::namespaced("default", "g");
    let mut gadget = client
        .create(&object(json!({
            "apiVersion": "status.example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {"size": 1}
        })))
        .await
        .unwrap();
    gadget.observe_generation().unwrap();
    let now = k8s_openapi::jiff::Timestamp::now();
    gadget
        .set_condition(dynrec::object::Condition::new("Ready", "True"), now)
        .unwrap();
    gadget.set_field("spec.size", 2).unwrap();
    let updated = client.update_status(&gadget).await.unwrap();
    assert_eq!(updated.observed_generation().unwrap(), Some(1));
    assert!(updated.condition("Ready").unwrap().unwrap().is_true());
    assert_eq!(
        updated.field_i64("spec.size").unwrap(),
        Some(1),
        "a status update keeps the spec"
    );

    let patch = Patch::Merge(json!({"status": {"phase": "Running"}}));
    let patched = client
        .patch_status(&gvk, &key, &patch, &PatchParams::default())
        .await
        .unwrap();
    assert_eq!(patched.field_str("status.phase").unwrap(), Some("Running"));
    assert_eq!(patched.observed_generation().unwrap(), Some(1));
}

#[tokio::test]
async fn apply_with_field_manager_and_force() {
    let (_server, client) = start();
    let key = ObjectKey::namespaced("default", "applied");
    let desired = config_map("applied", json!({"a": "1"}));
    let applied = client.apply(&desired, "dynrec-test", false).await.unwrap();
    assert_eq!(applied.field_str("data.key").unwrap(), Some("value"));
    let mut other = desired.clone();
    other.set_field("data.key", "theirs").unwrap();
    assert!(
        client
            .apply(&other, "someone-else", false)
            .await
            .unwrap_err()
            .is_conflict()
    );
    let forced = client.apply(&other, "someone-else", true).await.unwrap();
    assert_eq!(forced.field_str("data.key").unwrap(), Some("theirs"));
    assert!(client.get(&config_maps(), &key).await.is_ok());
}

#[tokio::test]
async fn recorder_merges_repeated_events() {
    let (_server, client) = start();
    let cm = client
        .create(&config_map("noisy", json!({})))
        .await
        .unwrap();
    let recorder = EventRecorder::new(&client, "dynrec-test");
    recorder
        .normal(&cm, reasons::UPDATED, "Updated child")
        .await
        .unwrap();
    recorder
        .normal(&cm, reasons::UPDATED, "Updated child")
        .await
        .unwrap();
    recorder
        .warning(&cm, reasons::UPDATE_FAILED, "Failed to update: boom")
        .await
        .unwrap();

    let events_gvk = Gvk::new("events.k8s.io", "v1", "Event");
    let events = client
        .list(&events_gvk, &ListOptions::default().namespace("default"))
        .await
        .unwrap();
    assert_eq!(events.len(), 2, "the repeat merged into the first event");
    let updated = events
        .iter()
        .find(|e| e.data["reason"] == "Updated")
        .unwrap();
    assert_eq!(updated.data["series"]["count"], 2);
    assert_eq!(updated.data["type"], "Normal");
    assert_eq!(updated.data["regarding"]["kind"], "ConfigMap");
    assert_eq!(updated.data["regarding"]["name"], "noisy");
    let failed = events
        .iter()
        .find(|e| e.data["reason"] == "UpdateFailed")
        .unwrap();
    assert_eq!(failed.data["type"], "Warning");
    assert_eq!(failed.data["note"], "Failed to update: boom");
}
