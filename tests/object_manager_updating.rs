//! UpdatingObjectManager table tests (reconciler.io's objectmanager_test.go),
//! run through the object manager harness: a ConfigMap child managed for the TestResource,
//! with the manager's result stashed by the harness.
//!
//! Mapping: each of `TestUpdatingObjectManager`'s 14 cases has a case of the same name,
//! asserting the result as Go does (nothing stashed where Go expects `nil`). The 14 duck
//! cases repeat them with a duck type (and `DangerouslyAllowDuckTypes`), which has no
//! counterpart among dynamic objects: the typed cases stand for them. Further cases: the
//! mutation cache replaying server defaults at the captured generation, over additional
//! reconciles of one manager (a departure, see `updating_object_manager.rs`). `TestPatch`
//! is a unit test of the mutation in that file.

mod harness_common;

use std::sync::Arc;

use dynrec::apiserver::ApiServer;
use dynrec::client::{Client, reasons};
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    Config, Context, Draft, ObjectManager, SubReconciler, UpdatingObjectManager,
};
use dynrec::testing::{
    DeleteRef, Event, OBJECT_MANAGER_ACTUAL, OBJECT_MANAGER_DESIRED, OBJECT_MANAGER_RESULT,
    ObjectManagerHarness, PatchRef, StashedValue, SubReconcilerTestCase, TestObject, TrackRequest,
    induce_failure,
};
use harness_common::*;
use kube::api::DynamicObject;
use serde_json::{Value, json};

type Factory = harness_common::Factory<SubReconcilerTestCase>;

const CHILD_UID: &str = "3b298fdb-b0b6-4603-9708-939e05daf183";
const FINALIZER: &str = "test-finalizer";

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// The desired child: ConfigMap `test-resource` with data hello=world.
fn desired() -> TestObject {
    config_map(NAME).field("data", json!({"hello": "world"}))
}

/// The child as the server holds it.
fn given(object: TestObject) -> TestObject {
    object
        .field("metadata.uid", CHILD_UID)
        .field("metadata.creationTimestamp", "2020-01-01T00:00:00Z")
        .resource_version("999")
}

/// The child drifted from the desired one: data foo=bar too.
fn drifted() -> TestObject {
    given(desired().field("data.foo", "bar"))
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

/// `case` whose manager returns `object`.
fn returning(object: DynamicObject, case: SubReconcilerTestCase) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        expect_stashed_values: vec![StashedValue::new(OBJECT_MANAGER_RESULT, object)],
        ..case
    }
}

/// `case` whose manager returns nothing.
fn returning_nothing(case: SubReconcilerTestCase) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        expect_stashed_values: vec![StashedValue::absent(OBJECT_MANAGER_RESULT)],
        ..case
    }
}

/// `case` where every `verb` of ConfigMaps fails with a `reason` event, and nothing returned.
fn failing_to(verb: &str, reason: &str, mut case: SubReconcilerTestCase) -> SubReconcilerTestCase {
    case.should_err = true;
    case.config.with_reactors = vec![induce_failure(verb, "ConfigMap").into()];
    case.config.expect_events = vec![warning(
        reason,
        &format!(
            r#"Failed to {verb} ConfigMap "test-resource": inducing failure for {verb} ConfigMap"#
        ),
    )];
    returning_nothing(case)
}

fn normal(reason: &str, message: &str) -> Event {
    Event::normal(&resource().build(), reason, message)
}

fn warning(reason: &str, message: &str) -> Event {
    Event::warning(&resource().build(), reason, message)
}

fn creating(actual: Option<DynamicObject>) -> SubReconcilerTestCase {
    let mut case = case(actual, Some(desired().build()));
    case.config.expect_creates = vec![desired().build()];
    case.config.expect_events = vec![normal(
        reasons::CREATED,
        r#"Created ConfigMap "test-resource""#,
    )];
    case
}

fn correcting_drift() -> SubReconcilerTestCase {
    let mut case = case(Some(drifted().build()), Some(desired().build()));
    case.config.expect_updates = vec![given(desired()).build()];
    case.config.expect_events = vec![normal(
        reasons::UPDATED,
        r#"Updated ConfigMap "test-resource""#,
    )];
    case
}

fn cleaning_up() -> SubReconcilerTestCase {
    let mut case = case(Some(drifted().build()), None);
    case.config.expect_deletes = vec![DeleteRef::of(&desired().build())];
    case.config.expect_events = vec![normal(
        reasons::DELETED,
        r#"Deleted ConfigMap "test-resource""#,
    )];
    case
}

/// The finalizer patch leaving `finalizers` on the resource, which the case then expects
/// at the next resourceVersion.
fn finalizer_patched(
    mut case: SubReconcilerTestCase,
    finalizers: &[&str],
) -> SubReconcilerTestCase {
    let list = match finalizers {
        [] => "null".to_string(),
        some => json!(some).to_string(),
    };
    case.config.expect_patches = vec![PatchRef::merge(
        &resource().build(),
        &format!(r#"{{"metadata":{{"finalizers":{list},"resourceVersion":"999"}}}}"#),
    )];
    case.config.expect_events = vec![normal(
        reasons::FINALIZER_PATCHED,
        r#"Patched finalizer "test-finalizer""#,
    )];
    case.expect_resource = Some(
        resource()
            .finalizers(finalizers)
            .resource_version("1000")
            .build(),
    );
    case
}

/// reconciler.io's manager: labels and data are merged; `adjust` sets its options.
fn manager(adjust: fn(UpdatingObjectManager) -> UpdatingObjectManager) -> Factory {
    Box::new(move |_| {
        let manager = UpdatingObjectManager::new(config_map_gvk(), |current, desired| {
            current.metadata.labels = desired.metadata.labels.clone();
            current.data["data"] = desired.data["data"].clone();
        });
        Box::new(ObjectManagerHarness::new(adjust(manager))) as Box<dyn SubReconciler>
    })
}

fn default_manager() -> Factory {
    manager(|m| m)
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

/// A Defaulted object as the server holds it at `generation`.
fn defaulted(generation: i64, spec: Value) -> DynamicObject {
    TestObject::new(&format!("{GROUP}/v1"), "Defaulted", NAME)
        .namespace(NAMESPACE)
        .field("metadata.uid", CHILD_UID)
        .field("metadata.creationTimestamp", "2020-01-01T00:00:00Z")
        .generation(generation)
        .resource_version("999")
        .spec(spec)
        .build()
}

/// One reconcile of the mutation cache case: the Defaulted `actual` is managed towards
/// spec.message "b"; `update` is the update expected, if any.
fn defaulting_step(
    name: &str,
    actual: DynamicObject,
    update: Option<DynamicObject>,
) -> SubReconcilerTestCase {
    let wanted = TestObject::new(&format!("{GROUP}/v1"), "Defaulted", NAME)
        .namespace(NAMESPACE)
        .spec(json!({"message": "b"}))
        .build();
    let mut case = case(Some(actual), Some(wanted));
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
}

/// A manager of Defaulted objects that copies the spec.
fn spec_manager() -> Factory {
    Box::new(|_| {
        let manager =
            UpdatingObjectManager::new(Gvk::new(GROUP, "v1", "Defaulted"), |current, desired| {
                current.data["spec"] = desired.data["spec"].clone();
            });
        Box::new(ObjectManagerHarness::new(manager)) as Box<dyn SubReconciler>
    })
}

#[tokio::test]
async fn updating_object_manager() {
    let generated = config_map("")
        .field("metadata.generateName", "test-resource-")
        .field("data", json!({"hello": "world"}));
    let immutable = || drifted().field("immutable", true);
    run_cases(vec![
        (
            "in sync",
            returning(
                given(desired()).build(),
                case(Some(given(desired()).build()), Some(desired().build())),
            ),
            default_manager(),
        ),
        (
            "missing and desired",
            returning(desired().build(), creating(None)),
            default_manager(),
        ),
        (
            "missing and desired, blank actual",
            returning(desired().build(), creating(Some(config_map(NAME).build()))),
            default_manager(),
        ),
        (
            "missing and desired, errored",
            failing_to("create", reasons::CREATION_FAILED, creating(None)),
            default_manager(),
        ),
        (
            "correct drift",
            returning(given(desired()).build(), correcting_drift()),
            default_manager(),
        ),
        (
            "correct drift, errored",
            failing_to("update", reasons::UPDATE_FAILED, correcting_drift()),
            default_manager(),
        ),
        (
            "cleanup",
            returning_nothing(cleaning_up()),
            default_manager(),
        ),
        (
            "cleanup, errored",
            failing_to("delete", reasons::DELETE_FAILED, cleaning_up()),
            default_manager(),
        ),
        (
            "in sync with finalizer",
            returning(
                given(desired()).build(),
                SubReconcilerTestCase {
                    resource: resource().finalizers(&[FINALIZER]).build(),
                    ..case(Some(given(desired()).build()), Some(desired().build()))
                },
            ),
            manager(|m| m.finalizer(FINALIZER)),
        ),
        (
            "in sync missing finalizer",
            returning(
                given(desired()).build(),
                finalizer_patched(
                    case(Some(given(desired()).build()), Some(desired().build())),
                    &[FINALIZER],
                ),
            ),
            manager(|m| m.finalizer(FINALIZER)),
        ),
        (
            "cleanup finalizer",
            returning_nothing(finalizer_patched(
                SubReconcilerTestCase {
                    resource: resource().finalizers(&[FINALIZER]).build(),
                    ..case(None, None)
                },
                &[],
            )),
            manager(|m| m.finalizer(FINALIZER)),
        ),
        (
            "track given",
            returning(given(desired()).build(), {
                let mut case = case(Some(given(desired()).build()), Some(desired().build()));
                case.config.expect_tracks =
                    vec![TrackRequest::new(&desired().build(), &resource().build())];
                case
            }),
            manager(|m| m.track_desired(true)),
        ),
        (
            "track generated names",
            returning(
                generated
                    .clone()
                    .field("metadata.name", "test-resource-001")
                    .build(),
                {
                    let mut case = case(None, Some(generated.clone().build()));
                    case.config.expect_creates = vec![generated.clone().build()];
                    case.config.expect_events = vec![normal(
                        reasons::CREATED,
                        r#"Created ConfigMap "test-resource-001""#,
                    )];
                    let named = config_map("test-resource-001").build();
                    case.config.expect_tracks =
                        vec![TrackRequest::new(&named, &resource().build())];
                    case
                },
            ),
            manager(|m| m.track_desired(true)),
        ),
        (
            "ignore drift in immutable fields",
            returning(
                immutable().build(),
                case(Some(immutable().build()), Some(desired().build())),
            ),
            manager(|m| {
                m.harmonize_immutable_fields(|actual, desired| {
                    if actual.data["immutable"] == true {
                        desired.data["data"] = actual.data["data"].clone();
                    }
                })
            }),
        ),
        (
            "the mutation cache replays server defaults at the captured generation",
            SubReconcilerTestCase {
                additional_reconciles: vec![
                    defaulting_step(
                        "the default is replayed at the captured generation",
                        defaulted(2, json!({"message": "b", "replicas": 1})),
                        None,
                    ),
                    defaulting_step(
                        "another generation updates again",
                        defaulted(3, json!({"message": "b", "replicas": 1})),
                        Some(defaulted(3, json!({"message": "b"}))),
                    ),
                ],
                ..defaulting_step(
                    "the first update captures the default",
                    defaulted(1, json!({"message": "a", "replicas": 1})),
                    Some(defaulted(1, json!({"message": "b"}))),
                )
            },
            spec_manager(),
        ),
    ])
    .await;
}

/// With a merge that writes only what differs, a child in sync comes back as the very
/// object passed in (not a copy) and nothing is sent; a drifted one is updated, and the
/// object passed in stays as it was.
#[tokio::test]
async fn a_compare_first_merge_hands_back_a_child_in_sync_uncopied() {
    let server = ApiServer::new();
    let client = Client::new(server.client());
    let ctx = Context::new(
        ObjectKey::namespaced("default", "parent"),
        config_map_gvk(),
        Config::new(client, "test"),
        jiff::Timestamp::now(),
    );
    // The harness's namespace does not exist on a bare server; `default` does.
    let in_default = |name: &str| TestObject::new("v1", "ConfigMap", name).namespace("default");
    let mut parent = Draft::new(in_default("parent").build());
    let manager = UpdatingObjectManager::new(config_map_gvk(), |current, desired| {
        if current.data["data"] != desired.data["data"] {
            current.data["data"] = desired.data["data"].clone();
        }
    });
    let wanted = |data: Value| in_default(NAME).field("data", data).build();
    let mut manage = async |actual: Option<&Arc<DynamicObject>>, data: Value| {
        let wanted = wanted(data);
        let managed = manager.manage(&ctx, &mut parent, actual, Some(&wanted));
        managed.await.expect("managed").expect("a child")
    };
    let updates = || server.request_count("update", "", "configmaps");

    let created = manage(None, json!({"a": "1"})).await;
    let in_sync = manage(Some(&created), json!({"a": "1"})).await;
    assert!(Arc::ptr_eq(&in_sync, &created), "the actual child, shared");
    assert_eq!(updates(), 0);

    let updated = manage(Some(&created), json!({"a": "2"})).await;
    assert_eq!(updated.data["data"], json!({"a": "2"}));
    assert_eq!(created.data["data"], json!({"a": "1"}), "left as it was");
    assert_eq!(updates(), 1);
}
