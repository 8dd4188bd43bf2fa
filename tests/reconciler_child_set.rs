//! ChildSetReconciler table tests (reconciler.io's childset_test.go): ConfigMap
//! children identified by an annotation, their data reflected as `status.fields["<id>.<key>"]`
//! and Ready. Every list but the first fails (Go's `CalledAtMostTimes`), so each case also
//! shows that the children are listed once.
//!
//! Mapping: each of the 18 cases of `TestChildSetReconciler` has a case of the same name.
//! "defines a finalizer when requested" keeps its given children because a
//! finalizer drops owner references for the listing too (unlike reconciler.io, see the module
//! doc of `child_set.rs`);
//! a further case creates children without owner references under the finalizer.

mod harness_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dynrec::client::{ListOptions, reasons};
use dynrec::object::{ConditionSet, Gvk, READY};
use dynrec::reconcilers::{
    ChildSetReconciler, ChildSetResult, Context, Draft, OnlyReconcileChildStatus, ParentAndChild,
    Predicate, ReconcileError, SubReconciler, UpdatingObjectManager,
};
use dynrec::testing::{
    ApiStatus, DeleteRef, Event, ExpectConfig, PatchRef, Reactor, SubReconcilerTestCase,
    TestObject, induce_failure,
};
use futures::future::BoxFuture;
use harness_common::*;
use kube::api::DynamicObject;
use serde_json::{Map, Value, json};

const PARENT_UID: &str = "a0e91ff9-bf42-4bc7-9253-2a6581b07e4d";
const ID: &str = "testing.reconciler.runtime/child-id";
const FINALIZER: &str = "test.finalizer";

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

fn parent() -> TestObject {
    resource().field("metadata.uid", PARENT_UID)
}

/// The parent, Ready, showing `fields` (`{"blue.foo": "bar"}`).
fn ready(fields: Value) -> TestObject {
    let mut object = parent().build();
    if fields.as_object().is_some_and(|f| !f.is_empty()) {
        object.data["status"]["fields"] = fields;
    }
    let set = ConditionSet::living(&[]);
    let mut conditions = set.manage(&mut object, jiff::Timestamp::now());
    conditions.mark_true(READY, READY, "").expect("conditions");
    TestObject::from_object(&object)
}

/// The parent showing `fields`, its Ready condition still Unknown "Initializing".
fn initializing(fields: Value) -> TestObject {
    let mut object = parent().status(json!({"fields": fields})).build();
    let set = ConditionSet::living(&[]);
    set.manage(&mut object, jiff::Timestamp::now())
        .initialize()
        .expect("conditions");
    TestObject::from_object(&object)
}

fn owner_reference() -> Value {
    json!([{
        "apiVersion": format!("{GROUP}/v1"), "kind": "TestResource", "name": NAME,
        "uid": PARENT_UID, "controller": true, "blockOwnerDeletion": true
    }])
}

/// The desired child with `id` (named `test-resource-<id>`), data foo=`value`.
fn desired(id: &str, value: &str) -> TestObject {
    config_map(&format!("{NAME}-{id}"))
        .field(
            &format!("/metadata/annotations/{}", ID.replace('/', "~1")),
            id,
        )
        .field("data", json!({"foo": value}))
}

/// A child as created: with the controller reference.
fn created(id: &str, value: &str) -> TestObject {
    desired(id, value).field("metadata.ownerReferences", owner_reference())
}

/// A child as the server holds it.
fn given(object: TestObject, uid: &str, created_at: &str) -> DynamicObject {
    object
        .field("metadata.uid", uid)
        .field("metadata.creationTimestamp", created_at)
        .resource_version("999")
        .build()
}

const NOW: &str = "2020-01-01T01:00:00Z";
const HOUR_AGO: &str = "2020-01-01T00:00:00Z";

fn blue() -> DynamicObject {
    given(created("blue", "bar"), "uid-blue", NOW)
}

fn green() -> DynamicObject {
    given(created("green", "bar"), "uid-green", HOUR_AGO)
}

fn normal(reason: &str, message: &str) -> Event {
    Event::normal(&parent().build(), reason, message)
}

fn identify(child: &DynamicObject) -> String {
    let annotations = child.metadata.annotations.as_ref();
    annotations
        .and_then(|a| a.get(ID))
        .cloned()
        .unwrap_or_default()
}

/// Ready with every child's data as `<id>.<key>`; a name conflict is Ready False.
fn reflect(
    ctx: &Context,
    parent: &mut Draft,
    result: &ChildSetResult,
) -> Result<(), ReconcileError> {
    let set = ConditionSet::living(&[]);
    if let Some(err) = result.aggregate_error() {
        if err.api_reason() == Some("AlreadyExists") {
            let name = err
                .api_status()
                .and_then(|s| s.details.as_ref())
                .map(|d| d.name.clone())
                .unwrap_or_default();
            let mut conditions = set.manage(parent, ctx.now());
            conditions
                .mark_false(READY, "NameConflict", format!("{name:?} already exists"))
                .map_err(ReconcileError::from_error)?;
        }
        return Ok(());
    }
    let mut fields = Map::new();
    for partial in &result.children {
        let data = partial
            .child
            .as_ref()
            .and_then(|c| c.data["data"].as_object());
        for (key, value) in data.into_iter().flatten() {
            fields.insert(format!("{}.{key}", partial.id), value.clone());
        }
    }
    match fields.is_empty() {
        true => {
            if let Some(status) = parent.data["status"].as_object_mut() {
                status.remove("fields");
            }
        }
        false => parent.data["status"]["fields"] = Value::Object(fields),
    }
    let mut conditions = set.manage(parent, ctx.now());
    conditions
        .mark_true(READY, READY, "")
        .map_err(ReconcileError::from_error)
}

/// What a `desired_children` function returns.
type ChildrenFuture<'a> = BoxFuture<'a, Result<Vec<DynamicObject>, ReconcileError>>;

/// A `desired_children` function.
type Desired = for<'a> fn(&'a Context, &'a DynamicObject) -> ChildrenFuture<'a>;

fn child_set(desired: Desired) -> ChildSetReconciler {
    ChildSetReconciler::new_async(config_map_gvk(), desired, identify, reflect)
        .child_object_manager(merging_manager())
}

/// Updates a child by copying the desired data.
fn merging_manager() -> UpdatingObjectManager {
    UpdatingObjectManager::new(config_map_gvk(), |current, desired| {
        current.data["data"] = desired.data["data"].clone();
    })
}

fn none<'a>(_: &'a Context, _: &'a DynamicObject) -> ChildrenFuture<'a> {
    Box::pin(async { Ok(Vec::new()) })
}

fn blue_and_green<'a>(_: &'a Context, _: &'a DynamicObject) -> ChildrenFuture<'a> {
    Box::pin(async {
        Ok(vec![
            desired("blue", "bar").build(),
            desired("green", "bar").build(),
        ])
    })
}

/// A reactor failing every list after the first (reconciler.io's `CalledAtMostTimes`).
fn listed_at_most_once() -> Reactor {
    let lists = Arc::new(AtomicUsize::new(0));
    Reactor::new(move |action| {
        let list = action.verb == "list" && action.kind == "ConfigMapList";
        (list && lists.fetch_add(1, Ordering::SeqCst) >= 1)
            .then(|| ApiStatus::new(500, "InternalError", "listed more than once"))
    })
}

type Factory = harness_common::Factory<SubReconcilerTestCase>;

/// The default ChildSetReconciler with `desired` children.
fn desiring(desired: Desired) -> Factory {
    Box::new(move |_| Box::new(child_set(desired)) as Box<dyn SubReconciler>)
}

/// The ChildSetReconciler with a finalizer (so no owner references): its children are those
/// with an id in the parent's namespace.
fn finalizing() -> Factory {
    Box::new(|_| {
        let reconciler = child_set(blue_and_green)
            .finalizer(FINALIZER)
            .our_child(Predicate::new(|_, pair: &ParentAndChild| {
                !identify(&pair.child).is_empty()
            }))
            .list_options(|_, parent| ListOptions {
                namespace: parent.metadata.namespace.clone(),
                ..ListOptions::default()
            });
        Box::new(reconciler) as Box<dyn SubReconciler>
    })
}

/// A case on the parent showing `fields`, with `children` given and `desired` children.
fn case(
    fields: Value,
    children: Vec<DynamicObject>,
    desired: Desired,
) -> (SubReconcilerTestCase, Factory) {
    let case = SubReconcilerTestCase {
        resource: ready(fields).build(),
        config: ExpectConfig {
            given_objects: children,
            with_reactors: vec![listed_at_most_once()],
            ..config()
        },
        ..Default::default()
    };
    (case, desiring(desired))
}

/// Runs named cases, each with its own reconciler.
async fn run(cases: Vec<(&str, (SubReconcilerTestCase, Factory))>) {
    let cases = cases
        .into_iter()
        .map(|(name, (case, factory))| (name, case, factory));
    run_cases(cases.collect()).await;
}

/// A case adding the finalizer to the parent showing `fields`, ready with both children.
fn adding_finalizer(children: Vec<DynamicObject>) -> (SubReconcilerTestCase, Factory) {
    let (mut c, _) = case(both(), children, blue_and_green);
    c.expect_resource = Some(
        ready(both())
            .finalizers(&[FINALIZER])
            .resource_version("1000")
            .build(),
    );
    c.config.expect_patches = vec![PatchRef::merge(
        &parent().build(),
        r#"{"metadata":{"finalizers":["test.finalizer"],"resourceVersion":"999"}}"#,
    )];
    c.config.expect_events = vec![normal(
        reasons::FINALIZER_PATCHED,
        r#"Patched finalizer "test.finalizer""#,
    )];
    (c, finalizing())
}

fn both() -> Value {
    json!({"blue.foo": "bar", "green.foo": "bar"})
}

#[tokio::test]
async fn reconciles_the_children() {
    run(vec![
        ("in sync no children", case(json!({}), vec![], none)),
        (
            "in sync with children",
            case(both(), vec![blue(), green()], blue_and_green),
        ),
        (
            "preserve existing children",
            // The children exactly as they exist.
            case(both(), vec![blue(), green()], |_, _| {
                Box::pin(async { Ok(vec![blue(), green()]) })
            }),
        ),
        ("garbage collect all but oldest child", {
            // Green, created an hour before blue, exactly as it exists.
            let (mut c, d) = case(both(), vec![blue(), green()], |_, _| {
                Box::pin(async { Ok(vec![green()]) })
            });
            c.expect_resource = Some(ready(json!({"green.foo": "bar"})).build());
            c.config.expect_deletes = vec![DeleteRef::of(&blue())];
            c.config.expect_events = vec![normal(
                reasons::DELETED,
                r#"Deleted ConfigMap "test-resource-blue""#,
            )];
            (c, d)
        }),
        ("ignores resources that are not ours", {
            let not_ours = given(config_map(NAME), "uid-other", NOW);
            case(both(), vec![blue(), green(), not_ours], blue_and_green)
        }),
        ("create green child, preserving blue child", {
            let (mut c, d) = case(json!({"blue.foo": "bar"}), vec![blue()], blue_and_green);
            c.expect_resource = Some(ready(both()).build());
            c.config.expect_creates = vec![created("green", "bar").build()];
            c.config.expect_events = vec![normal(
                reasons::CREATED,
                r#"Created ConfigMap "test-resource-green""#,
            )];
            (c, d)
        }),
        ("delete green child, preserving blue child", {
            let (mut c, d) = case(both(), vec![blue(), green()], |_, _| {
                Box::pin(async { Ok(vec![desired("blue", "bar").build()]) })
            });
            c.expect_resource = Some(ready(json!({"blue.foo": "bar"})).build());
            c.config.expect_deletes = vec![DeleteRef::of(&green())];
            c.config.expect_events = vec![normal(
                reasons::DELETED,
                r#"Deleted ConfigMap "test-resource-green""#,
            )];
            (c, d)
        }),
        ("update children", {
            let (mut c, d) = case(both(), vec![blue(), green()], |_, _| {
                Box::pin(async {
                    Ok(vec![
                        desired("blue", "updated-blue").build(),
                        desired("green", "updated-green").build(),
                    ])
                })
            });
            c.expect_resource = Some(
                ready(json!({"blue.foo": "updated-blue", "green.foo": "updated-green"})).build(),
            );
            c.config.expect_updates = vec![
                given(created("blue", "updated-blue"), "uid-blue", NOW),
                given(created("green", "updated-green"), "uid-green", HOUR_AGO),
            ];
            c.config.expect_events = vec![
                normal(reasons::UPDATED, r#"Updated ConfigMap "test-resource-blue""#),
                normal(reasons::UPDATED, r#"Updated ConfigMap "test-resource-green""#),
            ];
            (c, d)
        }),
        ("errors for desired children with empty id", {
            let (mut c, d) = case(json!({}), vec![], |_, _| {
                Box::pin(async { Ok(vec![config_map(NAME).build()]) })
            });
            c.should_err = true;
            c.verify = Some(error_is("desired child id may not be empty"));
            (c, d)
        }),
        ("errors for desired children with duplicate ids", {
            let (mut c, d) = case(json!({}), vec![], |_, _| {
                let twin = desired("blue", "bar").field("metadata.name", "twin").build();
                Box::pin(async { Ok(vec![desired("blue", "bar").build(), twin]) })
            });
            c.should_err = true;
            c.verify = Some(error_is("duplicate child id found: blue"));
            (c, d)
        }),
        ("deletes actual children with duplicate ids", {
            let twin = given(
                created("green", "bar").field(&format!("/metadata/annotations/{}", ID.replace('/', "~1")), "blue"),
                "uid-green",
                HOUR_AGO,
            );
            let (mut c, d) = case(json!({"blue.foo": "bar"}), vec![blue(), twin.clone()], |_, _| {
                Box::pin(async { Ok(vec![desired("blue", "bar").build()]) })
            });
            c.config.expect_deletes = vec![DeleteRef::of(&blue()), DeleteRef::of(&twin)];
            c.config.expect_creates = vec![created("blue", "bar").build()];
            c.config.expect_events = vec![
                normal(reasons::DELETED, r#"Deleted ConfigMap "test-resource-blue""#),
                normal(reasons::DELETED, r#"Deleted ConfigMap "test-resource-green""#),
                normal(reasons::CREATED, r#"Created ConfigMap "test-resource-blue""#),
            ];
            (c, d)
        }),
        ("deletes actual child resource missing id", {
            let unidentified = given(
                config_map(NAME).field("metadata.ownerReferences", owner_reference()),
                "uid-none",
                NOW,
            );
            let (mut c, d) = case(both(), vec![blue(), green(), unidentified.clone()], blue_and_green);
            c.config.expect_deletes = vec![DeleteRef::of(&unidentified)];
            c.config.expect_events = vec![normal(reasons::DELETED, r#"Deleted ConfigMap "test-resource""#)];
            (c, d)
        }),
        ("forwards error listing children", {
            let (mut c, d) = case(json!({}), vec![], blue_and_green);
            c.should_err = true;
            c.config.with_reactors = vec![induce_failure("list", "ConfigMapList").into()];
            (c, d)
        }),
        ("forwards error from child reconciler", {
            let (mut c, d) = case(json!({}), vec![], blue_and_green);
            c.should_err = true;
            c.config.with_reactors = vec![induce_failure("create", "ConfigMap").into()];
            c.config.expect_creates = vec![created("blue", "bar").build()];
            c.config.expect_events = vec![Event::warning(
                &parent().build(),
                reasons::CREATION_FAILED,
                r#"Failed to create ConfigMap "test-resource-blue": inducing failure for create ConfigMap"#,
            )];
            (c, d)
        }),
        ("skip resource manager operations when OnlyReconcileChildStatus is returned", {
            let (mut c, d) = case(json!({}), vec![blue(), green()], |_, _| {
                Box::pin(async { Err(OnlyReconcileChildStatus.into()) })
            });
            c.resource = initializing(both()).build();
            c.expect_resource = Some(ready(both()).build());
            (c, d)
        }),
        ("skip resource manager operations when OnlyReconcileChildStatus is returned, even when there are no actual or desired children", {
            let (mut c, d) = case(json!({}), vec![], |_, _| {
                Box::pin(async { Err(OnlyReconcileChildStatus.into()) })
            });
            c.resource = initializing(both()).build();
            c.expect_resource = Some(ready(json!({})).build());
            (c, d)
        }),
        // Quirk 8 fixed: the finalizer drops owner references for the listing too, so the
        // given children (found by id) are ours and in sync, as in reconciler.io's case.
        ("defines a finalizer when requested", adding_finalizer(vec![blue(), green()])),
        ("defines a finalizer, children created without owner references", {
            let (mut c, d) = adding_finalizer(vec![]);
            c.resource = ready(json!({})).build();
            c.config.expect_creates = vec![desired("blue", "bar").build(), desired("green", "bar").build()];
            c.config.expect_events.extend([
                normal(reasons::CREATED, r#"Created ConfigMap "test-resource-blue""#),
                normal(reasons::CREATED, r#"Created ConfigMap "test-resource-green""#),
            ]);
            (c, d)
        }),
        ("errors when desired children returns an error", {
            let (mut c, d) = case(json!({}), vec![], |_, _| {
                Box::pin(async { Err(ReconcileError::msg("desired children failed")) })
            });
            c.should_err = true;
            (c, d)
        }),
    ])
    .await;
}

fn error_is(expected: &'static str) -> dynrec::testing::VerifyResource {
    Box::new(move |_, outcome| {
        let error = outcome.error.as_ref().map(ToString::to_string);
        (error.as_deref() == Some(expected))
            .then_some(())
            .ok_or(format!("unexpected error {error:?}"))
    })
}

/// reconciler.io's ChildSetReconciler validation table. What reconciler.io checks at run
/// time and dynrec's constructor requires (DesiredChildren, ReflectChildrenStatusOnParent,
/// IdentifyChild, the child type, a child object manager or MergeBeforeUpdate) has no case
/// here: an incomplete ChildSetReconciler does not compile.
#[test]
fn validation_names_what_is_missing() {
    let owner = r#"ChildSetReconciler "test""#;
    let complete = || child_set(none).named("test");
    let our_child = || Predicate::new(|_, _: &ParentAndChild| true);
    let cases: Vec<(&str, ChildSetReconciler, Result<(), String>)> = vec![
        ("valid", complete(), Ok(())),
        (
            "valid with the default object manager (server-side apply)",
            ChildSetReconciler::new_async(config_map_gvk(), none, identify, reflect),
            Ok(()),
        ),
        (
            "ListOptions",
            complete().list_options(|_, _| ListOptions::default()),
            Ok(()),
        ),
        (
            "Finalizer without OurChild",
            complete().finalizer(FINALIZER),
            Err(format!(
                "{owner} must implement OurChild since owner references are not used"
            )),
        ),
        (
            "Finalizer without ListOptions",
            complete().finalizer(FINALIZER).our_child(our_child()),
            Err(format!(
                "{owner} must implement ListOptions since owner references are not used"
            )),
        ),
        (
            "OurChild",
            complete().our_child(Predicate::new(|_, _: &ParentAndChild| false)),
            Ok(()),
        ),
    ];
    check_validation(cases);
}
