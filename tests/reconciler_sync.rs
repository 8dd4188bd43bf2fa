//! SyncReconciler table tests (reconciler.io's sync_test.go) and the finalizer helpers.

mod harness_common;

use std::time::Duration;

use dynrec::client::reasons;
use dynrec::reconcilers::{
    Config, Draft, Outcome, ReconcileError, ReconcileResult, SubReconciler, SyncReconciler,
    add_finalizer, clear_finalizer,
};
use dynrec::testing::{
    Event, ExpectConfig, PatchRef, SubReconcilerTestCase, SubReconcilerTests, TestObject,
    VerifyResource, induce_failure,
};
use harness_common::*;
use kube::api::DynamicObject;
use serde_json::json;

type Factory = harness_common::Factory<SubReconcilerTestCase>;

/// What a sync or finalize step does to the resource and returns.
type Step = fn(&mut DynamicObject) -> Outcome;

fn hours(n: u64) -> ReconcileResult {
    ReconcileResult::requeue_after(Duration::from_secs(3600 * n))
}

/// A SyncReconciler syncing with `sync`.
fn syncing(sync: Step) -> SyncReconciler {
    SyncReconciler::with_result(move |_ctx, r: &mut Draft| sync(r))
}

/// A SyncReconciler syncing with `sync` and finalizing with `finalize`.
fn finalizing(sync: Step, finalize: Step) -> SyncReconciler {
    syncing(sync).finalize_with_result(move |_ctx, r: &mut Draft| finalize(r))
}

fn factory(build: impl Fn() -> SyncReconciler + 'static) -> Factory {
    Box::new(move |_| Box::new(build()) as Box<dyn SubReconciler>)
}

/// A step that must not run.
fn unexpected(_: &mut DynamicObject) -> Outcome {
    Outcome::err(ReconcileError::msg("should not be called"))
}

fn after_2h(_: &mut DynamicObject) -> Outcome {
    Outcome::ok(hours(2))
}

fn after_3h(_: &mut DynamicObject) -> Outcome {
    Outcome::ok(hours(3))
}

/// Writes `status.finalized` and asks for 3h.
fn finalized_after_3h(r: &mut DynamicObject) -> Outcome {
    r.data["status"]["finalized"] = json!(true);
    Outcome::ok(hours(3))
}

fn terminating() -> TestObject {
    resource().finalizers(&["test.finalizer"]).terminating()
}

fn case(resource: TestObject) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        resource: resource.build(),
        config: config(),
        ..Default::default()
    }
}

fn expecting(result: ReconcileResult, case: SubReconcilerTestCase) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        expected_result: result,
        ..case
    }
}

fn failing(case: SubReconcilerTestCase) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        should_err: true,
        ..case
    }
}

/// A failing case that checks the reconcile halted with `result` (the harness compares
/// results only without an error).
fn halted_with(result: ReconcileResult, case: SubReconcilerTestCase) -> SubReconcilerTestCase {
    let verify: VerifyResource = Box::new(move |_, o| {
        let halted = o.error.as_ref().is_some_and(ReconcileError::is_halt);
        (halted && o.result == result)
            .then_some(())
            .ok_or(format!("expected a halt with {result:?}, got {o:?}"))
    });
    SubReconcilerTestCase {
        verify: Some(verify),
        ..failing(case)
    }
}

/// reconciler.io's sync_test.go: all of `TestSyncReconciler` but "missing sync method" (a
/// SyncReconciler cannot be built without its sync function), and `TestSyncReconcilerDuck`'s
/// "sync with mutation" ("sync no mutation" is "sync success"). The finalizing cases also
/// check what finalize wrote.
#[tokio::test]
async fn sync_reconciler() {
    let lifecycle = Lifecycle::default();
    let ran = lifecycle.clone();
    run_cases(vec![
        (
            "sync success",
            case(resource()),
            factory(|| SyncReconciler::new(|_, _: &mut Draft| Ok(()))),
        ),
        (
            "sync with mutation",
            SubReconcilerTestCase {
                expect_resource: Some(
                    resource()
                        .spec(json!({"fields": {"mutation": "true"}}))
                        .build(),
                ),
                ..case(resource())
            },
            factory(|| {
                syncing(|r| {
                    r.data["spec"]["fields"]["mutation"] = json!("true");
                    Outcome::done()
                })
            }),
        ),
        (
            "sync with result halted",
            halted_with(ReconcileResult::requeue(), case(resource())),
            factory(|| {
                syncing(|_| Outcome::with(ReconcileResult::requeue(), Some(ReconcileError::halt())))
            }),
        ),
        (
            "sync error",
            failing(case(resource())),
            factory(|| syncing(|_| Outcome::err(ReconcileError::msg("syncreconciler error")))),
        ),
        (
            "should not finalize non-deleted resources",
            expecting(hours(2), case(resource())),
            factory(|| finalizing(after_2h, unexpected)),
        ),
        (
            "should finalize deleted resources",
            SubReconcilerTestCase {
                expect_resource: Some(terminating().status(json!({"finalized": true})).build()),
                ..expecting(hours(3), case(terminating()))
            },
            factory(|| finalizing(unexpected, finalized_after_3h)),
        ),
        (
            "finalize can halt subreconcilers",
            halted_with(hours(3), case(terminating())),
            factory(|| {
                finalizing(unexpected, |_| {
                    Outcome::with(hours(3), Some(ReconcileError::halt()))
                })
            }),
        ),
        (
            "should finalize and sync deleted resources when asked to",
            expecting(hours(2), case(terminating())),
            factory(|| finalizing(after_2h, after_3h).sync_during_finalization(true)),
        ),
        (
            "should finalize and sync deleted resources when asked to, shorter resync wins",
            expecting(hours(2), case(terminating())),
            factory(|| finalizing(after_3h, after_2h).sync_during_finalization(true)),
        ),
        (
            "sync error during finalization stops before finalize",
            failing(case(terminating())),
            factory(|| {
                finalizing(
                    |_| Outcome::err(ReconcileError::msg("sync failed")),
                    unexpected,
                )
                .sync_during_finalization(true)
            }),
        ),
        (
            "finalize is optional",
            case(terminating()),
            factory(|| syncing(unexpected)),
        ),
        (
            "finalize error",
            failing(case(terminating())),
            factory(|| {
                finalizing(unexpected, |_| {
                    Outcome::err(ReconcileError::msg("syncreconciler finalize error"))
                })
            }),
        ),
        (
            "context can be augmented in Prepare and accessed in Cleanup",
            SubReconcilerTestCase {
                prepare: lifecycle.prepare(),
                clean_up: lifecycle.clean_up(),
                ..case(resource())
            },
            Box::new(move |_| {
                let ran = ran.clone();
                Box::new(SyncReconciler::new(move |_ctx, _r: &mut Draft| {
                    ran.reconciled()
                })) as Box<dyn SubReconciler>
            }),
        ),
    ])
    .await;
    lifecycle.assert_complete();
}

/// Adds the finalizer "test.finalizer" unless spec.clear is set, in which case it clears it.
fn finalizer_reconciler(_: &SubReconcilerTestCase, _: &Config) -> Box<dyn SubReconciler> {
    Box::new(SyncReconciler::new_async(|ctx, r: &mut Draft| {
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
