//! UpdatingObjectManager table tests (spec section 7), run through the object manager harness,
//! plus the mutation cache against server-side defaulting.

mod harness_common;

use dynrec::client::reasons;
use dynrec::object::Gvk;
use std::sync::Arc;

use async_trait::async_trait;
use dynrec::reconcilers::{
    Context, ObjectManager, ReconcileError, SubReconciler, UpdatingObjectManager, ValidationError,
};
use dynrec::testing::{
    DeleteRef, Event, ExpectConfig, OBJECT_MANAGER_ACTUAL, OBJECT_MANAGER_DESIRED,
    OBJECT_MANAGER_RESULT, ObjectManagerHarness, PatchRef, StashedValue, SubReconcilerTestCase,
    SubReconcilerTestSuite, SubReconcilerTests, TestObject, TrackRequest, induce_failure,
};
use harness_common::*;
use kube::api::DynamicObject;
use serde_json::json;

const CHILD_UID: &str = "3b298fdb-b0b6-4603-9708-939e05daf183";
const FINALIZER: &str = "test.finalizer";

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// The desired child: ConfigMap `test-resource` with data foo=bar.
fn desired() -> TestObject {
    config_map(NAME).field("data", json!({"foo": "bar"}))
}

/// The child as the server holds it.
fn given(object: TestObject) -> TestObject {
    object
        .field("metadata.uid", CHILD_UID)
        .field("metadata.creationTimestamp", "2020-01-01T00:00:00Z")
        .resource_version("999")
}

/// A case managing `actual` (also a given object when persisted) towards `desired`.
fn case(actual: Option<DynamicObject>, desired: Option<DynamicObject>) -> SubReconcilerTestCase {
    let mut stashed = Vec::new();
    let mut config = config();
    if let Some(actual) = actual {
        if actual.metadata.creation_timestamp.is_some() {
            config.given_objects.push(actual.clone());
        }
        stashed.push(StashedValue::new(OBJECT_MANAGER_ACTUAL, actual));
    }
    if let Some(desired) = desired {
        stashed.push(StashedValue::new(OBJECT_MANAGER_DESIRED, desired));
    }
    SubReconcilerTestCase {
        resource: resource().build(),
        given_stashed_values: stashed,
        config,
        ..Default::default()
    }
}

fn result(object: DynamicObject) -> Vec<StashedValue> {
    vec![StashedValue::new(OBJECT_MANAGER_RESULT, object)]
}

fn normal(reason: &str, message: &str) -> Event {
    Event::normal(&resource().build(), reason, message)
}

fn warning(reason: &str, message: &str) -> Event {
    Event::warning(&resource().build(), reason, message)
}

/// Copies data; `spec.immutable` of the current object wins over the desired one's.
fn manager() -> UpdatingObjectManager {
    UpdatingObjectManager::new(config_map_gvk())
        .merge_before_update(|current, desired| {
            current.data["data"] = desired.data["data"].clone();
        })
        .harmonize_immutable_fields(|current, desired| {
            if let Some(immutable) = current.data["data"].get("immutable") {
                desired.data["data"]["immutable"] = immutable.clone();
            }
        })
}

#[tokio::test]
async fn creates_updates_and_deletes() {
    let drifted = || given(config_map(NAME).field("data", json!({"foo": "baz"})));
    SubReconcilerTests::from([
        ("in sync", SubReconcilerTestCase {
            expect_stashed_values: result(given(desired()).build()),
            ..case(Some(given(desired()).build()), Some(desired().build()))
        }),
        ("create when missing", {
            let mut case = case(None, Some(desired().build()));
            case.config.expect_creates = vec![desired().build()];
            case.config.expect_events = vec![normal(reasons::CREATED, r#"Created ConfigMap "test-resource""#)];
            case.expect_stashed_values = result(desired().build());
            case
        }),
        ("create when the actual object is blank", {
            let blank = config_map(NAME).build();
            let mut case = case(Some(blank), Some(desired().build()));
            case.config.expect_creates = vec![desired().build()];
            case.config.expect_events = vec![normal(reasons::CREATED, r#"Created ConfigMap "test-resource""#)];
            case
        }),
        ("create error", {
            let mut case = case(None, Some(desired().build()));
            case.should_err = true;
            case.config.with_reactors = vec![induce_failure("create", "ConfigMap").into()];
            case.config.expect_creates = vec![desired().build()];
            case.config.expect_events = vec![warning(
                reasons::CREATION_FAILED,
                r#"Failed to create ConfigMap "test-resource": inducing failure for create ConfigMap"#,
            )];
            case
        }),
        ("update drift", {
            let mut case = case(Some(drifted().build()), Some(desired().build()));
            case.config.expect_updates = vec![given(desired()).build()];
            case.config.expect_events = vec![normal(reasons::UPDATED, r#"Updated ConfigMap "test-resource""#)];
            case.expect_stashed_values = result(given(desired()).build());
            case
        }),
        ("update error", {
            let mut case = case(Some(drifted().build()), Some(desired().build()));
            case.should_err = true;
            case.config.with_reactors = vec![induce_failure("update", "ConfigMap").into()];
            case.config.expect_updates = vec![given(desired()).build()];
            case.config.expect_events = vec![warning(
                reasons::UPDATE_FAILED,
                r#"Failed to update ConfigMap "test-resource": inducing failure for update ConfigMap"#,
            )];
            case
        }),
        ("delete when no longer desired", {
            let mut case = case(Some(given(desired()).build()), None);
            case.config.expect_deletes = vec![DeleteRef::of(&desired().build())];
            case.config.expect_events = vec![normal(reasons::DELETED, r#"Deleted ConfigMap "test-resource""#)];
            case
        }),
        ("delete error", {
            let mut case = case(Some(given(desired()).build()), None);
            case.should_err = true;
            case.config.with_reactors = vec![induce_failure("delete", "ConfigMap").into()];
            case.config.expect_deletes = vec![DeleteRef::of(&desired().build())];
            case.config.expect_events = vec![warning(
                reasons::DELETE_FAILED,
                r#"Failed to delete ConfigMap "test-resource": inducing failure for delete ConfigMap"#,
            )];
            case
        }),
        ("harmonized immutable drift is no change", {
            let actual = given(desired().field("data.immutable", "original")).build();
            let wanted = desired().field("data.immutable", "changed").build();
            case(Some(actual), Some(wanted))
        }),
    ])
    .run(|_, _| Box::new(ObjectManagerHarness::new(manager())) as Box<dyn SubReconciler>)
    .await;
}

#[tokio::test]
async fn keeps_a_finalizer_on_the_resource() {
    let res = resource().build();
    SubReconcilerTests::from([
        (
            "in sync with finalizer",
            SubReconcilerTestCase {
                resource: resource().finalizers(&[FINALIZER]).build(),
                ..case(Some(given(desired()).build()), Some(desired().build()))
            },
        ),
        ("missing finalizer is added", {
            let mut case = case(Some(given(desired()).build()), Some(desired().build()));
            case.expect_resource = Some(
                resource()
                    .finalizers(&[FINALIZER])
                    .resource_version("1000")
                    .build(),
            );
            case.config.expect_patches = vec![PatchRef::merge(
                &res,
                r#"{"metadata":{"finalizers":["test.finalizer"],"resourceVersion":"999"}}"#,
            )];
            case.config.expect_events = vec![normal(
                reasons::FINALIZER_PATCHED,
                r#"Patched finalizer "test.finalizer""#,
            )];
            case
        }),
        (
            "finalizer cleared once the child is gone",
            SubReconcilerTestCase {
                resource: resource().finalizers(&[FINALIZER]).build(),
                expect_resource: Some(resource().resource_version("1000").build()),
                config: ExpectConfig {
                    expect_patches: vec![PatchRef::merge(
                        &res,
                        r#"{"metadata":{"finalizers":null,"resourceVersion":"999"}}"#,
                    )],
                    expect_events: vec![normal(
                        reasons::FINALIZER_PATCHED,
                        r#"Patched finalizer "test.finalizer""#,
                    )],
                    ..config()
                },
                ..case(None, None)
            },
        ),
    ])
    .run(|_, _| {
        Box::new(ObjectManagerHarness::new(manager().finalizer(FINALIZER)))
            as Box<dyn SubReconciler>
    })
    .await;
}

#[tokio::test]
async fn tracks_desired_objects() {
    let res = resource().build();
    let generated = config_map("")
        .field("metadata.generateName", "test-resource-")
        .field("data", json!({"foo": "bar"}));
    let named = config_map("test-resource-001").field("data", json!({"foo": "bar"}));
    SubReconcilerTests::from([
        (
            "track given",
            SubReconcilerTestCase {
                config: ExpectConfig {
                    given_objects: vec![given(desired()).build()],
                    expect_tracks: vec![TrackRequest::new(&desired().build(), &res)],
                    ..config()
                },
                ..case(Some(given(desired()).build()), Some(desired().build()))
            },
        ),
        ("track generated name", {
            let mut case = case(None, Some(generated.clone().build()));
            case.config.expect_creates = vec![generated.build()];
            case.config.expect_events = vec![normal(
                reasons::CREATED,
                r#"Created ConfigMap "test-resource-001""#,
            )];
            case.config.expect_tracks = vec![TrackRequest::new(&named.build(), &res)];
            case
        }),
    ])
    .run(|_, _| {
        Box::new(ObjectManagerHarness::new(manager().track_desired(true))) as Box<dyn SubReconciler>
    })
    .await;
}

/// A manager shared by the cases of a suite (the mutation cache outlives a request).
struct Shared(Arc<UpdatingObjectManager>);

#[async_trait]
impl ObjectManager for Shared {
    fn name(&self) -> &str {
        self.0.name()
    }

    async fn manage(
        &self,
        ctx: &Context,
        resource: &mut DynamicObject,
        actual: Option<&DynamicObject>,
        desired: Option<&DynamicObject>,
    ) -> Result<Option<DynamicObject>, ReconcileError> {
        self.0.manage(ctx, resource, actual, desired).await
    }
}

/// A kind whose `spec.replicas` the server defaults to 1.
fn defaulted_crd() -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("defaulteds.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": "Defaulted", "plural": "defaulteds", "singular": "defaulted", "listKind": "DefaultedList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {
                        "message": {"type": "string"},
                        "replicas": {"type": "integer", "default": 1}
                    }
                }}}}
            }]
        }
    }))
    .expect("a CRD")
}

fn defaulted(generation: i64, spec: serde_json::Value) -> DynamicObject {
    TestObject::new(&format!("{GROUP}/v1"), "Defaulted", NAME)
        .namespace(NAMESPACE)
        .field("metadata.uid", CHILD_UID)
        .field("metadata.creationTimestamp", "2020-01-01T00:00:00Z")
        .generation(generation)
        .resource_version("999")
        .spec(spec)
        .build()
}

#[tokio::test]
async fn the_mutation_cache_replays_server_defaults_at_the_same_generation() {
    let wanted = || {
        TestObject::new(&format!("{GROUP}/v1"), "Defaulted", NAME)
            .namespace(NAMESPACE)
            .spec(json!({"message": "b"}))
            .build()
    };
    let step = |name: &str, actual: DynamicObject, update: Option<DynamicObject>| {
        let mut case = case(Some(actual), Some(wanted()));
        case.name = name.into();
        case.config.given_api_resources.push(defaulted_crd());
        if let Some(update) = update {
            case.config.expect_events = vec![normal(
                reasons::UPDATED,
                r#"Updated Defaulted "test-resource""#,
            )];
            case.config.expect_updates = vec![update];
        }
        case
    };
    let manager = Arc::new(
        UpdatingObjectManager::new(Gvk::new(GROUP, "v1", "Defaulted")).merge_before_update(
            |current, desired| current.data["spec"] = desired.data["spec"].clone(),
        ),
    );
    SubReconcilerTestSuite::from(vec![
        step(
            "the first update captures the default",
            defaulted(1, json!({"message": "a", "replicas": 1})),
            Some(defaulted(1, json!({"message": "b"}))),
        ),
        step(
            "the default is replayed at the captured generation",
            defaulted(2, json!({"message": "b", "replicas": 1})),
            None,
        ),
        step(
            "another generation updates again",
            defaulted(3, json!({"message": "b", "replicas": 1})),
            Some(defaulted(3, json!({"message": "b"}))),
        ),
    ])
    .run(|_, _| {
        Box::new(ObjectManagerHarness::new(Shared(manager.clone()))) as Box<dyn SubReconciler>
    })
    .await;
}

#[tokio::test]
async fn merge_before_update_is_required() {
    let manager = UpdatingObjectManager::new(config_map_gvk()).named("incomplete");
    assert_eq!(
        ObjectManagerHarness::new(manager).validate(),
        Err(ValidationError(
            r#"UpdatingObjectManager "incomplete" must define MergeBeforeUpdate"#.into()
        ))
    );
}
