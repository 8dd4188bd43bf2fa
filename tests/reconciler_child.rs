//! ChildReconciler table tests (reconciler.io's child_test.go): a
//! TestResource parent whose `spec.fields` become the data of a ConfigMap child, reflected
//! back as `status.fields` and Ready. The child object manager is the UpdatingObjectManager
//! (Go's suite uses the stub), so the events are asserted too.
//!
//! Mapping: each of `TestChildReconciler`'s 21 cases has a case of the same name. The 17 of
//! `_Unstructured` and the 2 of `_Duck` repeat typed cases with other Go types; every object
//! here is a `DynamicObject`, so the typed case stands for them. "delete child during
//! finalization" uses the reconciler without owner references that also keeps a finalizer.
//! Further cases: a desired child made from a referenced ConfigMap it tracks (found or
//! missing), children without owner references (in sync, finalizer cleared), a status-only
//! reconcile without a child (`None`, not reconciler.io's blank child), a child owned by
//! another controller (an error, see `child.rs`), a cluster-scoped parent and refused owner
//! references.

mod harness_common;

use dynrec::client::{ListOptions, reasons};
use dynrec::object::{ConditionSet, Gvk, ObjectKey, READY};
use dynrec::reconcilers::{
    ChildReconciler, Context, Draft, OnlyReconcileChildStatus, ParentAndChild, Predicate,
    ReconcileError, ResourceReconciler, RootReconciler, Setup, SubReconciler,
    UpdatingObjectManager, Watch,
};
use dynrec::testing::{
    ApiStatus, DeleteRef, Event, ExpectConfig, PatchRef, ReconcilerTestCase, ReconcilerTests,
    SubReconcilerTestCase, TestObject, TrackRequest, VerifyResource, induce_failure,
};
use futures::future::BoxFuture;
use harness_common::*;
use kube::api::DynamicObject;
use kube::core::Selector;
use serde_json::{Value, json};

const PARENT_UID: &str = "a0e91ff9-bf42-4bc7-9253-2a6581b07e4d";
const FINALIZER: &str = "test.finalizer";

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

fn owner_reference() -> Value {
    json!([{
        "apiVersion": format!("{GROUP}/v1"), "kind": "TestResource", "name": NAME,
        "uid": PARENT_UID, "controller": true, "blockOwnerDeletion": true
    }])
}

/// The parent, with a uid its children's owner references name.
fn parent() -> TestObject {
    resource().field("metadata.uid", PARENT_UID)
}

/// `object` with Ready True (as the reflect function marks it).
fn ready(object: TestObject) -> DynamicObject {
    let mut object = object.build();
    let set = ConditionSet::living(&[]);
    let mut conditions = set.manage(&mut object, jiff::Timestamp::now());
    conditions.mark_true(READY, READY, "").expect("conditions");
    object
}

/// `object` with Ready False for `reason`.
fn not_ready(object: TestObject, reason: &str, message: &str) -> DynamicObject {
    let mut object = object.build();
    let set = ConditionSet::living(&[]);
    let mut conditions = set.manage(&mut object, jiff::Timestamp::now());
    conditions
        .mark_false(READY, reason, message)
        .expect("conditions");
    object
}

/// The parent asking for a child with `fields`, its status already showing them.
fn with_fields(fields: Value) -> TestObject {
    parent()
        .spec(json!({"fields": fields.clone()}))
        .field("status.fields", fields)
}

/// The parent asking for a child with `fields`, its status not showing them yet.
fn asking(fields: Value) -> TestObject {
    parent().spec(json!({"fields": fields}))
}

/// The child as created: data and the parent's controller reference.
fn child(data: Value) -> TestObject {
    config_map(NAME)
        .field("data", data)
        .field("metadata.ownerReferences", owner_reference())
}

/// A child as the server holds it.
fn given(object: TestObject, uid: &str) -> DynamicObject {
    object
        .field("metadata.uid", uid)
        .field("metadata.creationTimestamp", "2020-01-01T00:00:00Z")
        .resource_version("999")
        .build()
}

fn normal(reason: &str, message: &str) -> Event {
    Event::normal(&parent().build(), reason, message)
}

fn warning(reason: &str, message: &str) -> Event {
    Event::warning(&parent().build(), reason, message)
}

/// `status.fields` = the child's data and Ready; a conflict or invalid child is Ready False.
fn reflect(
    ctx: &Context,
    parent: &mut Draft,
    child: Option<&DynamicObject>,
    err: Option<&ReconcileError>,
) -> Result<(), ReconcileError> {
    let set = ConditionSet::living(&[]);
    if let Some(err) = err {
        let name = err
            .api_status()
            .and_then(|s| s.details.as_ref())
            .map(|d| d.name.clone())
            .unwrap_or_default();
        let mut conditions = set.manage(parent, ctx.now());
        let marked = match err.api_reason() {
            Some("AlreadyExists") => {
                conditions.mark_false(READY, "NameConflict", format!("{name:?} already exists"))
            }
            Some("Invalid") => conditions.mark_false(
                READY,
                "InvalidChild",
                "child was rejected by the api server",
            ),
            _ => Ok(()),
        };
        marked.expect("conditions");
        return Ok(());
    }
    match child {
        Some(child) => parent.data["status"]["fields"] = child.data["data"].clone(),
        None => {
            if let Some(status) = parent.data["status"].as_object_mut() {
                status.remove("fields");
            }
        }
    }
    let mut conditions = set.manage(parent, ctx.now());
    conditions.mark_true(READY, READY, "").expect("conditions");
    Ok(())
}

/// The desired child: none without `spec.fields`; `spec.fieldsFrom` names a ConfigMap
/// (tracked) whose data are the fields, `spec.fail` fails, `spec.statusOnly` only reflects,
/// `spec.customOwner` brings its own controller reference, `spec.foreignOwner` one to another
/// controller, `spec.label` labels it.
fn desired_child<'a>(
    ctx: &'a Context,
    parent: &'a DynamicObject,
) -> BoxFuture<'a, Result<Option<DynamicObject>, ReconcileError>> {
    Box::pin(async move {
        let spec = &parent.data["spec"];
        if spec["fail"] == true {
            return Err(ReconcileError::msg("desired child failed"));
        }
        if spec["statusOnly"] == true {
            return Err(OnlyReconcileChildStatus.into());
        }
        let fields = match spec["fieldsFrom"].as_str() {
            Some(name) => {
                let key = ObjectKey::namespaced(NAMESPACE, name);
                ctx.track_and_get(&config_map_gvk(), &key).await?.data["data"].clone()
            }
            None => spec["fields"].clone(),
        };
        if fields.as_object().is_none_or(|f| f.is_empty()) {
            return Ok(None);
        }
        let mut child = config_map(NAME).field("data", fields);
        if spec["customOwner"] == true {
            let mut reference = owner_reference();
            reference[0]["blockOwnerDeletion"] = json!(false);
            child = child.field("metadata.ownerReferences", reference);
        }
        if spec["foreignOwner"] == true {
            let foreign = json!([{
                "apiVersion": format!("{GROUP}/v1"), "kind": "OtherResource", "name": "other",
                "uid": EXTRA_UID, "controller": true
            }]);
            child = child.field("metadata.ownerReferences", foreign);
        }
        if spec["label"] == true {
            child = child.label("app", "child");
        }
        Ok(Some(child.build()))
    })
}

/// Children labelled `extraneous` are not ours.
fn not_extraneous() -> Predicate<ParentAndChild> {
    Predicate::new(|_, pair: &ParentAndChild| {
        let labels = pair.child.metadata.labels.as_ref();
        labels.is_none_or(|l| !l.contains_key("extraneous"))
    })
}

fn manager() -> UpdatingObjectManager {
    UpdatingObjectManager::new(config_map_gvk(), |current, desired| {
        current.data["data"] = desired.data["data"].clone();
    })
}

fn child_reconciler() -> ChildReconciler {
    ChildReconciler::new_async(config_map_gvk(), desired_child, reflect)
        .child_object_manager(manager())
        .our_child(not_extraneous())
}

fn case(resource: TestObject) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        resource: resource.build(),
        config: config(),
        ..Default::default()
    }
}

fn expecting(resource: TestObject, expect: DynamicObject) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        expect_resource: Some(expect),
        ..case(resource)
    }
}

/// A failing case: every `verb` of ConfigMaps fails, recording `reason` on the parent.
fn failing(
    resource: TestObject,
    verb: &str,
    reason: &str,
    given_objects: Vec<DynamicObject>,
) -> SubReconcilerTestCase {
    let message = format!(
        r#"Failed to {verb} ConfigMap "test-resource": inducing failure for {verb} ConfigMap"#
    );
    SubReconcilerTestCase {
        should_err: true,
        verify: error_containing(format!("inducing failure for {verb} ConfigMap")),
        config: ExpectConfig {
            given_objects,
            with_reactors: vec![induce_failure(verb, "ConfigMap").into()],
            expect_events: vec![warning(reason, &message)],
            ..config()
        },
        ..case(resource)
    }
}

/// Checks that the reconcile failed with an error whose message contains `part`.
fn error_containing(part: impl Into<String>) -> Option<VerifyResource> {
    let part = part.into();
    Some(Box::new(move |_, outcome| {
        let error = outcome.error.as_ref().map(ToString::to_string);
        error
            .as_deref()
            .is_some_and(|e| e.contains(part.as_str()))
            .then_some(())
            .ok_or(format!(
                "expected an error containing {part:?}, got {error:?}"
            ))
    }))
}

/// Checks that the reconcile failed with exactly `expected`.
fn error_is(expected: impl Into<String>) -> Option<VerifyResource> {
    let expected = expected.into();
    Some(Box::new(move |_, outcome| {
        let error = outcome.error.as_ref().map(ToString::to_string);
        (error.as_deref() == Some(expected.as_str()))
            .then_some(())
            .ok_or(format!("unexpected error {error:?}"))
    }))
}

const CHILD_UID: &str = "3b298fdb-b0b6-4603-9708-939e05daf183";
const SETTINGS_UID: &str = "5f0c7e2a-6a51-4a0e-9d3b-1c2d3e4f5a6b";

/// The parent asking for a child with the data of ConfigMap `settings`.
fn referencing_settings() -> TestObject {
    asking(json!({})).field("spec.fieldsFrom", "settings")
}
const EXTRA_UID: &str = "62af4b9a-767a-4f32-b62c-e4bccbfa8ef0";

fn bar() -> Value {
    json!({"foo": "bar"})
}

type Factory = harness_common::Factory<SubReconcilerTestCase>;

fn factory(build: impl Fn() -> ChildReconciler + 'static) -> Factory {
    Box::new(move |_| Box::new(build()) as Box<dyn SubReconciler>)
}

fn default_child() -> Factory {
    factory(child_reconciler)
}

/// Children without owner references, found by name in `other-namespace`.
fn unowned_reconciler() -> ChildReconciler {
    let our_child =
        Predicate::cel("self.child.metadata.name == self.parent.metadata.name").expect("valid CEL");
    let desired = |_: &Context, parent: &DynamicObject| {
        let fields = &parent.data["spec"]["fields"];
        Ok(fields
            .as_object()
            .filter(|f| !f.is_empty())
            .map(|_| other_namespace(fields.clone()).build()))
    };
    ChildReconciler::new(config_map_gvk(), desired, reflect)
        .child_object_manager(manager().finalizer(FINALIZER))
        .without_owner_reference(
            |_, _| ListOptions::default().namespace("other-namespace"),
            our_child,
        )
}

/// ConfigMap `test-resource` in `other-namespace`, without owner reference.
fn other_namespace(data: Value) -> TestObject {
    TestObject::new("v1", "ConfigMap", NAME)
        .namespace("other-namespace")
        .field("data", data)
}

/// A reconciler whose desired child (without data) is in `namespace`, or cluster-scoped.
fn placing_child_in(namespace: Option<&'static str>) -> Factory {
    factory(move || {
        let desired = move |_: &Context, _: &DynamicObject| {
            let mut child = TestObject::new("v1", "ConfigMap", NAME);
            if let Some(namespace) = namespace {
                child = child.namespace(namespace);
            }
            Ok(Some(child.build()))
        };
        ChildReconciler::new(config_map_gvk(), desired, reflect).child_object_manager(manager())
    })
}

/// A cluster-scoped parent kind.
fn cluster_crd() -> DynamicObject {
    let mut crd = dynrec::testing::crd(GROUP, "ClusterTestResource", "clustertestresources");
    crd.data["spec"]["scope"] = json!("Cluster");
    crd
}

/// The one reconciler.io case whose stale cache hides our own child: here the list only
/// sees labelled children, and the existing one is not labelled.
fn stale_cache_case() -> SubReconcilerTestCase {
    let owned = given(child(bar()), CHILD_UID);
    SubReconcilerTestCase {
        should_err: true,
        config: ExpectConfig {
            given_objects: vec![owned.clone()],
            api_given_objects: vec![owned],
            expect_creates: vec![child(bar()).label("app", "child").build()],
            expect_events: vec![warning(
                reasons::CREATION_FAILED,
                r#"Failed to create ConfigMap "test-resource": configmaps "test-resource" already exists"#,
            )],
            ..config()
        },
        ..case(asking(bar()).field("spec.label", true))
    }
}

/// A cluster-scoped parent creating its namespaced child.
fn cluster_scoped_case() -> SubReconcilerTestCase {
    let cluster_parent = || {
        TestObject::new(&format!("{GROUP}/v1"), "ClusterTestResource", NAME)
            .field("metadata.uid", PARENT_UID)
            .spec(json!({"fields": {"foo": "bar"}}))
    };
    let reference = json!([{
        "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterTestResource", "name": NAME,
        "uid": PARENT_UID, "controller": true, "blockOwnerDeletion": true
    }]);
    let created = config_map(NAME)
        .field("data", bar())
        .field("metadata.ownerReferences", reference);
    let mut config = config();
    config.given_api_resources.push(cluster_crd());
    config.given_objects = vec![TestObject::new("v1", "Namespace", NAMESPACE).build()];
    config.expect_creates = vec![created.build()];
    config.expect_events = vec![Event::normal(
        &cluster_parent().build(),
        reasons::CREATED,
        r#"Created ConfigMap "test-resource""#,
    )];
    SubReconcilerTestCase {
        resource: cluster_parent().build(),
        expect_resource: Some(ready(cluster_parent().field("status.fields", bar()))),
        config,
        ..Default::default()
    }
}

#[tokio::test]
async fn child_reconciler_table() {
    let in_sync = || given(child(bar()), CHILD_UID);
    let extra = || {
        given(
            child(bar()).field("metadata.name", "test-resource-extra"),
            EXTRA_UID,
        )
    };
    let invalid = || ApiStatus::new(422, "Invalid", "ConfigMap \"test-resource\" is invalid");
    let terminating = || parent().finalizers(&[FINALIZER]).terminating();
    run_cases(vec![
        ("preserve no child", case(TestObject::from_object(&ready(parent()))), default_child()),
        ("child is in sync", {
            let mut c = case(TestObject::from_object(&ready(with_fields(bar()))));
            c.config.given_objects = vec![in_sync()];
            c
        }, default_child()),
        ("child is in sync, in a different namespace", {
            let mut c = case(TestObject::from_object(&ready(with_fields(bar()))));
            c.config.given_objects = vec![given(child(bar()).namespace("other-namespace"), CHILD_UID)];
            c
        }, factory(|| {
            child_reconciler().list_options(|_, _| ListOptions::default().namespace("other-namespace"))
        })),
        ("create child", {
            let mut c = expecting(asking(bar()), ready(with_fields(bar())));
            c.config.expect_creates = vec![child(bar()).build()];
            c.config.expect_events = vec![normal(reasons::CREATED, r#"Created ConfigMap "test-resource""#)];
            c
        }, default_child()),
        ("create child with custom owner reference", {
            let resource = asking(bar()).field("spec.customOwner", true);
            let mut c = expecting(resource.clone(), ready(resource.field("status.fields", bar())));
            let mut custom = owner_reference();
            custom[0]["blockOwnerDeletion"] = json!(false);
            c.config.expect_creates = vec![child(bar()).field("metadata.ownerReferences", custom).build()];
            c.config.expect_events = vec![normal(reasons::CREATED, r#"Created ConfigMap "test-resource""#)];
            c
        }, default_child()),
        // As reconciler.io users do: DesiredChild reads the object the parent refers to
        // with TrackAndGet, so its changes reconcile the parent again.
        ("create child from a referenced object, tracking it", {
            let greeting = json!({"greeting": "hello"});
            let settings = given(config_map("settings").field("data", greeting.clone()), SETTINGS_UID);
            let resource = referencing_settings();
            let mut c = expecting(resource.clone(), ready(resource.field("status.fields", greeting.clone())));
            c.config.given_objects = vec![settings.clone()];
            c.config.expect_creates = vec![child(greeting).build()];
            c.config.expect_events = vec![normal(reasons::CREATED, r#"Created ConfigMap "test-resource""#)];
            c.config.expect_tracks = vec![TrackRequest::new(&settings, &parent().build())];
            c
        }, default_child()),
        ("missing referenced object is an error, and tracked", SubReconcilerTestCase {
            should_err: true,
            verify: error_is("v1/ConfigMap test-namespace/settings not found"),
            config: ExpectConfig {
                expect_tracks: vec![TrackRequest::new(&config_map("settings").build(), &parent().build())],
                ..config()
            },
            ..case(referencing_settings())
        }, default_child()),
        ("update child", {
            let mut c = expecting(
                TestObject::from_object(&ready(asking(bar()).field("status.fields", json!({"foo": "old"})))),
                ready(with_fields(bar())),
            );
            c.config.given_objects = vec![given(child(json!({"foo": "old"})), CHILD_UID)];
            c.config.expect_updates = vec![in_sync()];
            c.config.expect_events = vec![normal(reasons::UPDATED, r#"Updated ConfigMap "test-resource""#)];
            c
        }, default_child()),
        ("delete child", {
            let mut c = expecting(
                TestObject::from_object(&ready(parent().field("status.fields", bar()))),
                ready(parent()),
            );
            c.config.given_objects = vec![in_sync()];
            c.config.expect_deletes = vec![DeleteRef::of(&in_sync())];
            c.config.expect_events = vec![normal(reasons::DELETED, r#"Deleted ConfigMap "test-resource""#)];
            c
        }, default_child()),
        ("ignore extraneous children", {
            let mut c = case(TestObject::from_object(&ready(parent())));
            c.config.given_objects = vec![given(child(bar()).label("extraneous", "true"), CHILD_UID)];
            c
        }, default_child()),
        ("delete duplicate children", {
            let mut c = expecting(asking(bar()), ready(with_fields(bar())));
            c.config.given_objects = vec![in_sync(), extra()];
            c.config.expect_deletes = vec![DeleteRef::of(&in_sync()), DeleteRef::of(&extra())];
            c.config.expect_creates = vec![child(bar()).build()];
            c.config.expect_events = vec![
                normal(reasons::DELETED, r#"Deleted ConfigMap "test-resource""#),
                normal(reasons::DELETED, r#"Deleted ConfigMap "test-resource-extra""#),
                normal(reasons::CREATED, r#"Created ConfigMap "test-resource""#),
            ];
            c
        }, default_child()),
        ("delete child during finalization", {
            let mut c = case(terminating());
            c.config.given_objects = vec![given(other_namespace(bar()), CHILD_UID)];
            c.config.expect_deletes = vec![DeleteRef::of(&other_namespace(bar()).build())];
            c.config.expect_events = vec![normal(reasons::DELETED, r#"Deleted ConfigMap "test-resource""#)];
            c
        }, factory(unowned_reconciler)),
        ("child is in sync in another namespace, without owner reference", {
            let mut c = case(TestObject::from_object(&ready(
                with_fields(bar()).finalizers(&[FINALIZER]),
            )));
            c.config.given_objects = vec![given(other_namespace(bar()), CHILD_UID)];
            c
        }, factory(unowned_reconciler)),
        ("finalizer cleared once the child without owner reference is gone", {
            let mut c = expecting(
                terminating(),
                parent().terminating().resource_version("1000").build(),
            );
            c.config.expect_patches = vec![PatchRef::merge(
                &parent().build(),
                r#"{"metadata":{"finalizers":null,"resourceVersion":"999"}}"#,
            )];
            c.config.expect_events = vec![normal(
                reasons::FINALIZER_PATCHED,
                r#"Patched finalizer "test.finalizer""#,
            )];
            c
        }, factory(unowned_reconciler)),
        ("invalid child", {
            let mut c = expecting(
                asking(bar()),
                not_ready(asking(bar()), "InvalidChild", "child was rejected by the api server"),
            );
            c.config.with_reactors = vec![induce_failure("create", "ConfigMap").error(invalid()).into()];
            c.config.expect_creates = vec![child(bar()).build()];
            c.config.expect_events = vec![warning(
                reasons::CREATION_FAILED,
                r#"Failed to create ConfigMap "test-resource": ConfigMap "test-resource" is invalid"#,
            )];
            c
        }, default_child()),
        // The resource is expected unchanged: reflecting the error would mark it not ready.
        ("invalid child - return error rather than reflect", SubReconcilerTestCase {
            should_err: true,
            config: ExpectConfig {
                with_reactors: vec![induce_failure("create", "ConfigMap").error(invalid()).into()],
                expect_creates: vec![child(bar()).build()],
                expect_events: vec![warning(
                    reasons::CREATION_FAILED,
                    r#"Failed to create ConfigMap "test-resource": ConfigMap "test-resource" is invalid"#,
                )],
                ..config()
            },
            ..case(asking(bar()))
        }, factory(|| {
            let none: [&str; 0] = [];
            child_reconciler().reflected_child_error_reasons(none)
        })),
        ("child name collision", {
            let conflicting = given(config_map(NAME), CHILD_UID);
            let mut c = expecting(
                asking(bar()),
                not_ready(asking(bar()), "NameConflict", r#""test-resource" already exists"#),
            );
            c.config.given_objects = vec![conflicting.clone()];
            c.config.api_given_objects = vec![conflicting.clone()];
            c.config.expect_creates = vec![child(bar()).build()];
            c.config.expect_events = vec![warning(
                reasons::CREATION_FAILED,
                r#"Failed to create ConfigMap "test-resource": configmaps "test-resource" already exists"#,
            )];
            c.config.expect_tracks = vec![TrackRequest::new(&conflicting, &parent().build())];
            c
        }, default_child()),
        ("child name collision, stale informer cache", stale_cache_case(), factory(|| {
            child_reconciler().list_options(|_, parent| ListOptions {
                namespace: parent.metadata.namespace.clone(),
                selector: Some(Selector::from_iter([("app", "child")])),
                ..Default::default()
            })
        })),
        ("status only reconcile", {
            let resource = asking(json!({"foo": "new"})).field("spec.statusOnly", true);
            let mut c = expecting(resource.clone(), ready(resource.field("status.fields", bar())));
            c.config.given_objects = vec![in_sync()];
            c
        }, default_child()),
        // Quirk 9 fixed: without a child, the reflect function sees none (not a blank one).
        ("status only reconcile without a child reflects no child", {
            let resource = asking(bar()).field("status.fields", bar()).field("spec.statusOnly", true);
            let expected = ready(asking(bar()).field("spec.statusOnly", true));
            expecting(resource, expected)
        }, default_child()),
        ("error listing children", SubReconcilerTestCase {
            should_err: true,
            verify: error_containing("inducing failure for list ConfigMapList"),
            config: ExpectConfig {
                with_reactors: vec![induce_failure("list", "ConfigMapList").into()],
                ..config()
            },
            ..case(asking(bar()))
        }, default_child()),
        ("error creating child", {
            let mut c = failing(asking(bar()), "create", reasons::CREATION_FAILED, vec![]);
            c.config.expect_creates = vec![child(bar()).build()];
            c
        }, default_child()),
        ("error updating child", {
            let old = given(child(json!({"foo": "old"})), CHILD_UID);
            let mut c = failing(asking(bar()), "update", reasons::UPDATE_FAILED, vec![old]);
            c.config.expect_updates = vec![in_sync()];
            c
        }, default_child()),
        ("error deleting child", {
            let mut c = failing(parent(), "delete", reasons::DELETE_FAILED, vec![in_sync()]);
            c.config.expect_deletes = vec![DeleteRef::of(&in_sync())];
            c
        }, default_child()),
        ("error deleting duplicate children", {
            let given = vec![in_sync(), extra()];
            let mut c = failing(asking(bar()), "delete", reasons::DELETE_FAILED, given);
            c.config.expect_deletes = vec![DeleteRef::of(&in_sync())];
            c
        }, default_child()),
        ("error creating desired child", SubReconcilerTestCase {
            should_err: true,
            verify: error_is("desired child failed"),
            ..case(asking(bar()).field("spec.fail", true))
        }, default_child()),
        ("desired child already owned by another controller", SubReconcilerTestCase {
            should_err: true,
            verify: error_is(
                "Object test-namespace/test-resource is already owned by another OtherResource controller other",
            ),
            ..case(asking(bar()).field("spec.foreignOwner", true))
        }, default_child()),
        ("a cluster-scoped parent owns a namespaced child", cluster_scoped_case(), default_child()),
        ("owner reference across namespaces is refused", SubReconcilerTestCase {
            should_err: true,
            verify: error_is(
                "cross-namespace owner references are disallowed, owner's namespace test-namespace, obj's namespace elsewhere",
            ),
            ..case(asking(bar()))
        }, placing_child_in(Some("elsewhere"))),
        ("cluster-scoped child of a namespaced owner is refused", SubReconcilerTestCase {
            should_err: true,
            verify: error_is(
                "cluster-scoped resource must not have a namespace-scoped owner, owner's namespace test-namespace",
            ),
            ..case(asking(bar()))
        }, placing_child_in(None)),
    ])
    .await;
}

#[tokio::test]
async fn under_a_resource_reconciler_the_child_makes_the_parent_ready() {
    let mut config = config();
    config.given_objects = vec![asking(bar()).build()];
    config.expect_creates = vec![child(bar()).build()];
    config.expect_events = vec![
        normal(reasons::CREATED, r#"Created ConfigMap "test-resource""#),
        normal(reasons::STATUS_UPDATED, "Updated status"),
    ];
    config.expect_status_updates = vec![ready(
        asking(bar())
            .field("status.fields", bar())
            .field("status.observedGeneration", 1),
    )];
    ReconcilerTests::from([(
        "create and reflect",
        ReconcilerTestCase {
            request: request(),
            config,
            ..Default::default()
        },
    )])
    .run(|_, config| {
        Box::new(
            ResourceReconciler::new(gvk(), child_reconciler(), config.clone())
                .conditions(ConditionSet::living(&[])),
        ) as Box<dyn RootReconciler>
    })
    .await;
}

#[test]
fn setup_watches_owned_and_tracked_children() {
    let mut setup = Setup::default();
    child_reconciler().setup(&mut setup).expect("setup");
    assert_eq!(
        setup.watches(),
        [
            Watch::Owns(config_map_gvk()),
            Watch::Tracked(config_map_gvk())
        ]
    );
    let mut unowned = Setup::default();
    unowned_reconciler().setup(&mut unowned).expect("setup");
    assert!(unowned.watches().is_empty());
}

/// reconciler.io's ChildReconciler validation table. What reconciler.io checks at run time
/// and dynrec's constructor requires (DesiredChild, ReflectChildStatusOnParent, the child
/// type, a child object manager or MergeBeforeUpdate) has no case here: an incomplete
/// ChildReconciler does not compile. Nor have "SkipOwnerReference without OurChild" and
/// "ListOptions missing" (`without_owner_reference` takes both), nor "Finalizer without
/// OurChild" (a ChildReconciler has no finalizer).
#[test]
fn validation_names_what_is_missing() {
    let complete = || {
        ChildReconciler::new_async(config_map_gvk(), desired_child, reflect)
            .named("test")
            .child_object_manager(manager())
    };
    let cases: Vec<(&str, ChildReconciler, Result<(), String>)> = vec![
        ("valid", complete(), Ok(())),
        (
            "valid with the default object manager (server-side apply)",
            ChildReconciler::new_async(config_map_gvk(), desired_child, reflect),
            Ok(()),
        ),
        (
            "ListOptions",
            complete().list_options(|_, _| dynrec::client::ListOptions::default()),
            Ok(()),
        ),
        (
            "OurChild",
            complete().our_child(Predicate::new(|_, _: &ParentAndChild| false)),
            Ok(()),
        ),
    ];
    check_validation(cases);
}
