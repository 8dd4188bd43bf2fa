//! WithFinalizer table tests: the finalizer is added before the nested
//! reconciler runs and cleared once a terminating resource is cleaned up.

mod flow_common;
mod harness_common;

use dynrec::client::reasons;
use dynrec::reconcilers::{
    Config, Draft, Outcome, Predicate, ReconcileError, SubReconciler, SyncReconciler, WithFinalizer,
};
use dynrec::testing::{
    Event, ExpectConfig, PatchRef, SubReconcilerTestCase, SubReconcilerTests, TestObject,
    induce_failure,
};
use flow_common::TestReconciler;
use harness_common::{config, resource};
use kube::api::DynamicObject;

const FINALIZER: &str = "test.finalizer";
const ADD: &str = r#"{"metadata":{"finalizers":["test.finalizer"],"resourceVersion":"999"}}"#;
const CLEAR: &str = r#"{"metadata":{"finalizers":null,"resourceVersion":"999"}}"#;

/// WithFinalizer around a SyncReconciler recording "Sync" and "Finalize" events (with no
/// message). Finalize fails with "finalize error" when `spec.fields.fail` is set; the
/// finalizer is not ready to clear while `spec.fields.busy` is set (predicates are
/// synchronous here, so unlike reconciler.io's this one records no event).
fn reconciler(_: &SubReconcilerTestCase, _: &Config) -> Box<dyn SubReconciler> {
    let nested = SyncReconciler::new_async(|ctx, r: &mut Draft| {
        Box::pin(async move { Ok(ctx.config().recorder.normal(r, "Sync", "").await?) })
    })
    .finalize_async(|ctx, r: &mut Draft| {
        Box::pin(async move {
            ctx.config().recorder.normal(r, "Finalize", "").await?;
            match r.data["spec"]["fields"].get("fail") {
                Some(_) => Err(ReconcileError::msg("finalize error")),
                None => Ok(()),
            }
        })
    });
    let ready =
        Predicate::new(|_, r: &DynamicObject| r.data["spec"]["fields"].get("busy").is_none());
    Box::new(WithFinalizer::new(FINALIZER, nested).ready_to_clear_finalizer(ready))
}

/// The TestResource, terminating while its finalizer holds it.
fn terminating() -> TestObject {
    resource().finalizers(&[FINALIZER]).terminating()
}

/// An event about the resource.
fn event(reason: &str, message: &str) -> Event {
    let res = resource().build();
    match reason {
        reasons::FINALIZER_PATCH_FAILED => Event::warning(&res, reason, message),
        _ => Event::normal(&res, reason, message),
    }
}

fn patched() -> Event {
    event(
        reasons::FINALIZER_PATCHED,
        r#"Patched finalizer "test.finalizer""#,
    )
}

fn patch_failed() -> Event {
    event(
        reasons::FINALIZER_PATCH_FAILED,
        r#"Failed to patch finalizer "test.finalizer": inducing failure for patch TestResource"#,
    )
}

/// A case on `resource` expecting these events and patch bodies.
fn case(resource: TestObject, events: Vec<Event>, patches: &[&str]) -> SubReconcilerTestCase {
    let res = resource.build();
    let patches = patches.iter().map(|body| PatchRef::merge(&res, body));
    let patches = patches.collect();
    SubReconcilerTestCase {
        resource: res,
        config: ExpectConfig {
            expect_events: events,
            expect_patches: patches,
            ..config()
        },
        ..Default::default()
    }
}

/// `case` with every patch of the resource failing; the reconcile fails.
fn failing_patch(
    resource: TestObject,
    events: Vec<Event>,
    patches: &[&str],
) -> SubReconcilerTestCase {
    let case = case(resource, events, patches);
    SubReconcilerTestCase {
        should_err: true,
        config: ExpectConfig {
            with_reactors: vec![induce_failure("patch", "TestResource").into()],
            ..case.config
        },
        ..case
    }
}

#[tokio::test]
async fn with_finalizer() {
    SubReconcilerTests::from([
        (
            "in sync",
            case(
                resource().finalizers(&[FINALIZER]),
                vec![event("Sync", "")],
                &[],
            ),
        ),
        (
            // The finalizer event comes first: the finalizer is added before Sync runs.
            "add finalizer",
            SubReconcilerTestCase {
                expect_resource: Some(
                    resource()
                        .finalizers(&[FINALIZER])
                        .resource_version("1000")
                        .build(),
                ),
                ..case(resource(), vec![patched(), event("Sync", "")], &[ADD])
            },
        ),
        (
            "error adding finalizer",
            failing_patch(resource(), vec![patch_failed()], &[ADD]),
        ),
        (
            "keep finalizer until ready",
            case(
                terminating().field("spec.fields.busy", "true"),
                vec![event("Finalize", "")],
                &[],
            ),
        ),
        (
            // The embedded server's resourceVersions are cluster-wide: the Finalize event
            // took "1000", so the patch gives "1001" (reconciler.io's fake counts per object).
            "clear finalizer",
            SubReconcilerTestCase {
                expect_resource: Some(resource().terminating().resource_version("1001").build()),
                ..case(
                    terminating(),
                    vec![event("Finalize", ""), patched()],
                    &[CLEAR],
                )
            },
        ),
        (
            "error clearing finalizer",
            failing_patch(
                terminating(),
                vec![event("Finalize", ""), patch_failed()],
                &[CLEAR],
            ),
        ),
        (
            "keep finalizer on error",
            SubReconcilerTestCase {
                should_err: true,
                ..case(
                    terminating().field("spec.fields.fail", "true"),
                    vec![event("Finalize", "")],
                    &[],
                )
            },
        ),
    ])
    .run(reconciler)
    .await;
}

#[test]
fn validates_the_finalizer_and_the_nested_reconciler() {
    let nested = || TestReconciler::new(|_, _: &mut Draft| Outcome::done());
    let err = WithFinalizer::new("", nested()).validate().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"WithFinalizer "WithFinalizer" must define Finalizer"#
    );
    let invalid = nested().invalid("TestReconciler is invalid");
    let err = WithFinalizer::new(FINALIZER, invalid)
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"WithFinalizer "WithFinalizer" must have a valid Reconciler: TestReconciler is invalid"#
    );
}
