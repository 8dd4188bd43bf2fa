//! SyncReconciler table tests (spec section 4) and the finalizer helpers (section 10.4).

mod harness_common;

use std::time::Duration;

use dynrec::client::reasons;
use dynrec::reconcilers::{
    Config, Outcome, ReconcileError, ReconcileResult, SubReconciler, SyncReconciler, add_finalizer,
    clear_finalizer,
};
use dynrec::testing::{
    Event, ExpectConfig, PatchRef, SubReconcilerTestCase, SubReconcilerTests, induce_failure,
};
use harness_common::*;
use kube::api::DynamicObject;
use serde_json::json;

fn after(secs: u64) -> ReconcileResult {
    ReconcileResult::requeue_after(Duration::from_secs(secs))
}

/// Syncs by setting status.synced and requeuing after 10s; finalizes by setting
/// status.finalized and requeuing after 5s, or fails when spec.fail is set.
fn sync_reconciler(during_finalization: bool) -> SyncReconciler {
    SyncReconciler::with_result(|_ctx, r: &mut DynamicObject| {
        let outcome = match r.data["spec"]["fail"].as_str() {
            Some("sync") => Outcome::with(after(10), Some(ReconcileError::msg("sync failed"))),
            Some("halt") => Outcome::with(ReconcileResult::requeue(), Some(ReconcileError::halt())),
            _ => {
                r.data["status"]["synced"] = json!(true);
                Outcome::ok(after(10))
            }
        };
        Box::pin(async move { outcome })
    })
    .finalize_with_result(|_ctx, r: &mut DynamicObject| {
        let outcome = match r.data["spec"]["fail"].as_str() {
            Some("finalize") => Outcome::err(ReconcileError::msg("finalize failed")),
            _ => {
                r.data["status"]["finalized"] = json!(true);
                Outcome::ok(after(5))
            }
        };
        Box::pin(async move { outcome })
    })
    .sync_during_finalization(during_finalization)
}

fn case(
    resource: DynamicObject,
    expect: DynamicObject,
    result: ReconcileResult,
) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        resource,
        expect_resource: Some(expect),
        expected_result: result,
        config: config(),
        ..Default::default()
    }
}

fn failing(resource: DynamicObject) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        resource,
        should_err: true,
        config: config(),
        ..Default::default()
    }
}

#[tokio::test]
async fn sync_and_finalize() {
    let terminating = || resource().finalizers(&["f"]).terminating();
    let fail = |what: &str| resource().spec(json!({"fail": what}));
    SubReconcilerTests::from([
        (
            "sync success",
            case(
                resource().build(),
                resource().status(json!({"synced": true})).build(),
                after(10),
            ),
        ),
        ("sync error", failing(fail("sync").build())),
        (
            "sync halted keeps its result",
            SubReconcilerTestCase {
                expected_result: ReconcileResult::requeue(),
                verify: Some(Box::new(|_, o| {
                    let halted =
                        o.error.as_ref().is_some_and(ReconcileError::is_halt) && o.result.requeue;
                    halted.then_some(()).ok_or("not halted with requeue".into())
                })),
                ..failing(fail("halt").build())
            },
        ),
        (
            "does not finalize a live resource",
            case(
                resource().build(),
                resource().status(json!({"synced": true})).build(),
                after(10),
            ),
        ),
        (
            "finalizes a terminating resource without syncing",
            case(
                terminating().build(),
                terminating().status(json!({"finalized": true})).build(),
                after(5),
            ),
        ),
        (
            "finalize error",
            failing(fail("finalize").finalizers(&["f"]).terminating().build()),
        ),
    ])
    .run(|_, _| Box::new(sync_reconciler(false)) as Box<dyn SubReconciler>)
    .await;
}

#[tokio::test]
async fn sync_during_finalization_runs_both_and_the_shorter_delay_wins() {
    let terminating = || resource().finalizers(&["f"]).terminating();
    SubReconcilerTests::from([
        (
            "both run",
            case(
                terminating().build(),
                terminating()
                    .status(json!({"synced": true, "finalized": true}))
                    .build(),
                after(5),
            ),
        ),
        (
            "sync error stops before finalize",
            failing(
                resource()
                    .spec(json!({"fail": "sync"}))
                    .finalizers(&["f"])
                    .terminating()
                    .build(),
            ),
        ),
    ])
    .run(|_, _| Box::new(sync_reconciler(true)) as Box<dyn SubReconciler>)
    .await;
}

#[tokio::test]
async fn sync_without_result() {
    SubReconcilerTests::from([(
        "sync",
        case(
            resource().build(),
            resource().field("status.plain", true).build(),
            ReconcileResult::done(),
        ),
    )])
    .run(|_, _| {
        Box::new(SyncReconciler::new(|_ctx, r: &mut DynamicObject| {
            r.data["status"]["plain"] = json!(true);
            Box::pin(async { Ok(()) })
        })) as Box<dyn SubReconciler>
    })
    .await;
}

/// Adds the finalizer "test.finalizer" unless spec.clear is set, in which case it clears it.
fn finalizer_reconciler(_: &SubReconcilerTestCase, _: &Config) -> Box<dyn SubReconciler> {
    Box::new(SyncReconciler::new(|ctx, r: &mut DynamicObject| {
        Box::pin(async move {
            match r.data["spec"]["clear"].as_bool() {
                Some(true) => clear_finalizer(ctx, r, "test.finalizer").await,
                _ => add_finalizer(ctx, r, "test.finalizer").await,
            }
        })
    }))
}

#[tokio::test]
async fn finalizers_are_patched_with_the_resource_version_as_lock() {
    let res = resource().build();
    let clearing = || resource().spec(json!({"clear": true}));
    let patched = |body: &str| PatchRef::merge(&res, body);
    let add_body = r#"{"metadata":{"finalizers":["test.finalizer"],"resourceVersion":"999"}}"#;
    let clear_body = r#"{"metadata":{"finalizers":null,"resourceVersion":"999"}}"#;
    let event = |reason, message: &str| match reason {
        reasons::FINALIZER_PATCHED => Event::normal(&res, reason, message),
        _ => Event::warning(&res, reason, message),
    };
    SubReconcilerTests::from([
        ("add", SubReconcilerTestCase {
            resource: res.clone(),
            expect_resource: Some(resource().finalizers(&["test.finalizer"]).resource_version("1000").build()),
            config: ExpectConfig {
                expect_patches: vec![patched(add_body)],
                expect_events: vec![event(reasons::FINALIZER_PATCHED, r#"Patched finalizer "test.finalizer""#)],
                ..config()
            },
            ..Default::default()
        }),
        ("already present", SubReconcilerTestCase {
            resource: resource().finalizers(&["test.finalizer"]).build(),
            config: config(),
            ..Default::default()
        }),
        ("add error", SubReconcilerTestCase {
            resource: res.clone(),
            should_err: true,
            config: ExpectConfig {
                with_reactors: vec![induce_failure("patch", "TestResource").into()],
                expect_patches: vec![patched(add_body)],
                expect_events: vec![event(
                    reasons::FINALIZER_PATCH_FAILED,
                    r#"Failed to patch finalizer "test.finalizer": inducing failure for patch TestResource"#,
                )],
                ..config()
            },
            ..Default::default()
        }),
        ("clear", SubReconcilerTestCase {
            resource: clearing().finalizers(&["test.finalizer"]).build(),
            expect_resource: Some(clearing().resource_version("1000").build()),
            config: ExpectConfig {
                expect_patches: vec![patched(clear_body)],
                expect_events: vec![event(reasons::FINALIZER_PATCHED, r#"Patched finalizer "test.finalizer""#)],
                ..config()
            },
            ..Default::default()
        }),
        ("clear keeps other finalizers", SubReconcilerTestCase {
            resource: clearing().finalizers(&["other", "test.finalizer"]).build(),
            expect_resource: Some(clearing().finalizers(&["other"]).resource_version("1000").build()),
            config: ExpectConfig {
                expect_patches: vec![patched(r#"{"metadata":{"finalizers":["other"],"resourceVersion":"999"}}"#)],
                expect_events: vec![event(reasons::FINALIZER_PATCHED, r#"Patched finalizer "test.finalizer""#)],
                ..config()
            },
            ..Default::default()
        }),
        ("clear absent", SubReconcilerTestCase {
            resource: clearing().build(),
            config: config(),
            ..Default::default()
        }),
        ("clear error", SubReconcilerTestCase {
            resource: clearing().finalizers(&["test.finalizer"]).build(),
            should_err: true,
            config: ExpectConfig {
                with_reactors: vec![induce_failure("patch", "TestResource").into()],
                expect_patches: vec![patched(clear_body)],
                expect_events: vec![event(
                    reasons::FINALIZER_PATCH_FAILED,
                    r#"Failed to patch finalizer "test.finalizer": inducing failure for patch TestResource"#,
                )],
                ..config()
            },
            ..Default::default()
        }),
    ])
    .run(finalizer_reconciler)
    .await;
}
