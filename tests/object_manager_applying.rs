//! ApplyingObjectManager: server-side apply under its own field manager, no request when
//! nothing would change, deletes of children no longer desired.

mod harness_common;

use std::sync::Arc;

use dynrec::apiserver::ApiServer;
use dynrec::client::{Client, reasons};
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    ApplyingObjectManager, Config, Context, Draft, ObjectManager, SubReconciler,
};
use dynrec::testing::{
    ApplyRef, Event, OBJECT_MANAGER_DESIRED, OBJECT_MANAGER_RESULT, ObjectManagerHarness,
    StashedValue, SubReconcilerTestCase, SubReconcilerTests, TestObject, induce_failure,
};
use harness_common::*;
use kube::api::DynamicObject;
use serde_json::{Value, json};

const MANAGER: &str = "test-controller";

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

fn child(data: Value) -> DynamicObject {
    config_map(NAME).field("data", data).build()
}

fn applied(data: Value) -> ApplyRef {
    ApplyRef::of(&child(data), MANAGER)
}

fn manager() -> ApplyingObjectManager {
    ApplyingObjectManager::new(config_map_gvk()).field_manager(MANAGER)
}

#[tokio::test]
async fn applies_with_events() {
    let res = resource().build();
    let wanted = || {
        vec![StashedValue::new(
            OBJECT_MANAGER_DESIRED,
            child(json!({"foo": "bar"})),
        )]
    };
    let mut create = SubReconcilerTestCase {
        resource: res.clone(),
        given_stashed_values: wanted(),
        expect_stashed_values: vec![StashedValue::new(
            OBJECT_MANAGER_RESULT,
            child(json!({"foo": "bar"})),
        )],
        config: config(),
        ..Default::default()
    };
    create.config.expect_applies = vec![applied(json!({"foo": "bar"}))];
    create.config.expect_events = vec![Event::normal(
        &res,
        reasons::CREATED,
        r#"Created ConfigMap "test-resource""#,
    )];
    let mut failing = SubReconcilerTestCase {
        resource: res.clone(),
        given_stashed_values: wanted(),
        should_err: true,
        config: config(),
        ..Default::default()
    };
    failing.config.with_reactors = vec![induce_failure("patch", "ConfigMap").into()];
    failing.config.expect_applies = vec![applied(json!({"foo": "bar"}))];
    failing.config.expect_events = vec![Event::warning(
        &res,
        reasons::CREATION_FAILED,
        r#"Failed to create ConfigMap "test-resource": inducing failure for patch ConfigMap"#,
    )];
    SubReconcilerTests::from([("create", create), ("apply error", failing)])
        .run(|_, _| Box::new(ObjectManagerHarness::new(manager())) as Box<dyn SubReconciler>)
        .await;
}

/// Counts the writes the server answered for ConfigMaps.
fn writes(server: &ApiServer, verb: &str) -> u64 {
    server.request_count(verb, "", "configmaps")
}

/// A parent ConfigMap in `default` and the context of reconciling it with `client`.
fn parent_and_context(client: &Client) -> (DynamicObject, Context) {
    let parent = TestObject::new("v1", "ConfigMap", "parent")
        .namespace("default")
        .build();
    let ctx = Context::new(
        ObjectKey::namespaced("default", "parent"),
        config_map_gvk(),
        Config::new(client.clone(), "test"),
        jiff::Timestamp::now(),
    );
    (parent, ctx)
}

/// The desired child ConfigMap `default/child` holding `data`.
fn desired(data: Value) -> DynamicObject {
    TestObject::new("v1", "ConfigMap", "child")
        .namespace("default")
        .label("app", "child")
        .field("data", data)
        .build()
}

#[tokio::test]
async fn creates_changes_and_deletes_with_no_request_when_nothing_changes() {
    let server = ApiServer::new();
    let client = Client::new(server.client());
    let (parent, ctx) = parent_and_context(&client);
    let manager = manager();
    let manage = |actual: Option<Arc<DynamicObject>>, wanted: Option<DynamicObject>| {
        let (ctx, parent, manager) = (&ctx, &parent, &manager);
        async move {
            let mut parent = Draft::new(parent.clone());
            manager
                .manage(ctx, &mut parent, actual.as_ref(), wanted.as_ref())
                .await
                .expect("managed")
        }
    };

    let created = manage(None, Some(desired(json!({"a": "1", "b": "2"})))).await;
    let created = created.expect("created");
    assert_eq!(created.data["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(writes(&server, "patch"), 1);

    let unchanged = manage(
        Some(created.clone()),
        Some(desired(json!({"a": "1", "b": "2"}))),
    )
    .await;
    assert!(
        unchanged.is_some_and(|unchanged| Arc::ptr_eq(&unchanged, &created)),
        "the actual object is returned, not a copy"
    );
    assert_eq!(writes(&server, "patch"), 1, "nothing changed, nothing sent");

    let changed = manage(Some(created), Some(desired(json!({"a": "3", "b": "2"})))).await;
    let changed = changed.expect("changed");
    assert_eq!(changed.data["data"], json!({"a": "3", "b": "2"}));
    assert_eq!(writes(&server, "patch"), 2);

    let dropped = manage(Some(changed), Some(desired(json!({"a": "3"})))).await;
    let dropped = dropped.expect("dropped");
    assert_eq!(
        dropped.data["data"],
        json!({"a": "3"}),
        "a field no longer applied is removed"
    );
    assert_eq!(writes(&server, "patch"), 3);

    let deleted = manage(Some(dropped), None).await;
    assert!(deleted.is_none());
    assert_eq!(writes(&server, "delete"), 1);
    let gone = client
        .get(
            &config_map_gvk(),
            &ObjectKey::namespaced("default", "child"),
        )
        .await;
    assert!(gone.is_err_and(|e| e.is_not_found()));
    assert_eq!(writes(&server, "update"), 0);
    assert_eq!(writes(&server, "create"), 0);
}

/// Under a controller the actual child comes from the shared cache: the manager must still
/// see what it applied before, so that a field dropped from the desired child is removed.
#[tokio::test]
async fn a_field_dropped_from_the_desired_child_is_removed_when_the_child_is_read_from_the_cache() {
    let server = ApiServer::new();
    let client = Client::new(server.client());
    let (owner, ctx) = parent_and_context(&client);
    let mut owner = Draft::new(owner);
    let manager = manager();
    manager
        .manage(
            &ctx,
            &mut owner,
            None,
            Some(&desired(json!({"a": "1", "b": "2"}))),
        )
        .await
        .expect("created");
    let cache = client.cache(&config_map_gvk()).await.expect("a cache");
    assert!(cache.wait_until_ready().await);
    let key = ObjectKey::namespaced("default", "child");
    let cached = client.get(&config_map_gvk(), &key).await.expect("cached");
    assert_eq!(cached.data["data"], json!({"a": "1", "b": "2"}));

    let dropped = manager
        .manage(
            &ctx,
            &mut owner,
            Some(&cached),
            Some(&desired(json!({"a": "1"}))),
        )
        .await
        .expect("applied")
        .expect("the child");
    assert_eq!(
        dropped.data["data"],
        json!({"a": "1"}),
        "b, no longer desired, is removed"
    );
    assert_eq!(writes(&server, "patch"), 2, "created, then applied again");
}
