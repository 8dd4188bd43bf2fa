//! The harness tests itself: matching expectations pass; an extra create, another patch
//! body, events in another order or a missing track fail with a message naming them; an
//! induced failure reaches the reconciler as the server's error; additional reconciles run
//! on the same reconciler instance, and fail, skip or refuse focus with a labelled message;
//! an unexpected error, `should_err` without one, another result, a missing stashed value
//! or status update, an unexpected panic and a missing expected panic each fail a table.

mod harness_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dynrec::client::{Error, reasons};
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    Config, Draft, Outcome, ReconcileError, ReconcileResult, SubReconciler, SyncReconciler,
};
use dynrec::testing::{
    ApiStatus, Event, PatchRef, StashedValue, SubReconcilerTestCase, SubReconcilerTestSuite,
    SubReconcilerTests, TrackRequest, induce_failure,
};
use harness_common::*;
use kube::api::{Patch, PatchParams};
use serde_json::json;

fn cm_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// Creates `created`, patches `existing`, records two events and tracks `tracked`.
fn busy_reconciler(_: &SubReconcilerTestCase, _: &Config) -> Box<dyn SubReconciler> {
    Box::new(SyncReconciler::new_async(|ctx, resource: &mut Draft| {
        Box::pin(async move {
            let client = &ctx.config().client;
            client.create(&config_map("created").build()).await?;
            let patch = Patch::Merge(json!({"data": {"a": "b"}}));
            let key = ObjectKey::namespaced(NAMESPACE, "existing");
            client
                .patch(&cm_gvk(), &key, &patch, &PatchParams::default())
                .await?;
            let recorder = &ctx.config().recorder;
            recorder.normal(resource, "First", "one").await?;
            recorder.warning(resource, "Second", "two").await?;
            let tracked = ObjectKey::namespaced(NAMESPACE, "tracked");
            let found = ctx.track_and_get(&cm_gvk(), &tracked).await;
            assert!(found.is_err_and(|e| e.is_not_found()));
            Ok(())
        })
    }))
}

/// The case `busy_reconciler` satisfies.
fn busy_case() -> SubReconcilerTestCase {
    let res = resource().build();
    SubReconcilerTestCase {
        resource: res.clone(),
        config: dynrec::testing::ExpectConfig {
            given_objects: vec![config_map("existing").build()],
            expect_creates: vec![config_map("created").build()],
            expect_patches: vec![PatchRef {
                kind: "ConfigMap".into(),
                ..PatchRef::merge(&config_map("existing").build(), r#"{"data":{"a":"b"}}"#)
            }],
            expect_events: vec![
                Event::normal(&res, "First", "one"),
                Event::warning(&res, "Second", "two"),
            ],
            expect_tracks: vec![TrackRequest::new(&config_map("tracked").build(), &res)],
            ..config()
        },
        ..Default::default()
    }
}

async fn failures_of(case: SubReconcilerTestCase) -> String {
    let suite = SubReconcilerTestSuite::from(vec![case]);
    match suite.try_run(busy_reconciler).await {
        Ok(()) => panic!("the case should have failed"),
        Err(failures) => failures.to_string(),
    }
}

#[tokio::test]
async fn a_reconciler_doing_what_is_expected_passes() {
    SubReconcilerTests::from([("busy", busy_case())])
        .run(busy_reconciler)
        .await;
}

#[tokio::test]
async fn an_extra_create_fails_naming_it() {
    let mut case = busy_case();
    case.config.expect_creates.clear();
    let failures = failures_of(case).await;
    assert!(
        failures.contains(r#"Unexpected create observed for config "default""#),
        "{failures}"
    );
    assert!(failures.contains(r#""name": "created""#), "{failures}");
}

#[tokio::test]
async fn a_different_patch_body_fails_with_a_diff() {
    let mut case = busy_case();
    case.config.expect_patches[0].patch = r#"{"data":{"a":"c"}}"#.into();
    let failures = failures_of(case).await;
    assert!(
        failures.contains(r#"ExpectPatches[0] differs for config "default" (-expected, +actual):"#),
        "{failures}"
    );
    // The patch body shows as the YAML of the JSON it holds, not as a Rust string.
    assert!(
        failures.contains("  patch:\n    data:\n-     a: c\n+     a: b\n"),
        "{failures}"
    );
}

#[tokio::test]
async fn events_in_another_order_fail() {
    let mut case = busy_case();
    case.config.expect_events.reverse();
    let failures = failures_of(case).await;
    assert!(failures.contains("ExpectEvents[0] differs"), "{failures}");
    assert!(failures.contains("ExpectEvents[1] differs"), "{failures}");
}

#[tokio::test]
async fn a_missed_track_fails() {
    let mut case = busy_case();
    let res = resource().build();
    case.config
        .expect_tracks
        .push(TrackRequest::new(&config_map("other").build(), &res));
    let failures = failures_of(case).await;
    assert!(
        failures.contains(r#"ExpectTracks[1] not observed for config "default""#),
        "{failures}"
    );
}

#[tokio::test]
async fn an_unexpected_track_fails() {
    let mut case = busy_case();
    case.config.expect_tracks.clear();
    let failures = failures_of(case).await;
    assert!(
        failures.contains(r#"Unexpected track observed for config "default""#)
            && failures.contains("tracked"),
        "{failures}"
    );
}

#[tokio::test]
#[should_panic(expected = "ExpectCreates[1] not observed")]
async fn a_missing_write_panics_in_run() {
    let mut case = busy_case();
    case.config.expect_creates.push(config_map("never").build());
    SubReconcilerTestSuite::from(vec![case])
        .run(busy_reconciler)
        .await;
}

#[tokio::test]
async fn a_focused_case_fails_the_suite() {
    let focused = SubReconcilerTestCase {
        focus: true,
        ..busy_case()
    };
    let failures = SubReconcilerTests::from([("a", busy_case()), ("b", focused)])
        .try_run(busy_reconciler)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        failures.contains("1 tests out of 2 are still focused"),
        "{failures}"
    );
}

/// Updates the ConfigMap "existing" and stores what the server answered in status.
fn updating_reconciler(_: &SubReconcilerTestCase, _: &Config) -> Box<dyn SubReconciler> {
    Box::new(SyncReconciler::new_async(|ctx, _resource: &mut Draft| {
        Box::pin(async move {
            let client = &ctx.config().client;
            let key = ObjectKey::namespaced(NAMESPACE, "existing");
            let mut existing = (*client.get(&cm_gvk(), &key).await?).clone();
            existing.data["data"] = json!({"changed": "yes"});
            match client.update(&existing).await {
                Ok(_) => Ok(()),
                Err(err @ Error::Api(_)) => {
                    assert_eq!(err.code(), Some(500));
                    Err(ReconcileError::from(err))
                }
                Err(other) => panic!("not an API error: {other}"),
            }
        })
    }))
}

#[tokio::test]
async fn an_induced_failure_reaches_the_reconciler_as_an_api_error() {
    let existing = config_map("existing").build();
    let mut updated = existing.clone();
    updated.data["data"] = json!({"changed": "yes"});
    let case = SubReconcilerTestCase {
        resource: resource().build(),
        config: dynrec::testing::ExpectConfig {
            given_objects: vec![existing],
            with_reactors: vec![induce_failure("update", "ConfigMap").into()],
            expect_updates: vec![updated],
            ..config()
        },
        should_err: true,
        verify: Some(Box::new(|_, outcome| {
            let err = outcome.error.as_ref().ok_or("no error")?;
            let cause = err.find_cause::<Error>().ok_or("no client error")?;
            match cause {
                Error::Api(api) => match &api.source {
                    kube::Error::Api(status)
                        if status.message == "inducing failure for update ConfigMap"
                            && status.reason == "InternalError" =>
                    {
                        Ok(())
                    }
                    other => Err(format!("unexpected source {other:?}")),
                },
                other => Err(format!("unexpected error {other:?}")),
            }
        })),
        ..Default::default()
    };
    SubReconcilerTests::from([("induced", case)])
        .run(updating_reconciler)
        .await;
}

#[tokio::test]
async fn an_induced_status_can_be_chosen() {
    let case = SubReconcilerTestCase {
        resource: resource().build(),
        config: dynrec::testing::ExpectConfig {
            given_objects: vec![config_map("existing").build()],
            with_reactors: vec![
                induce_failure("get", "ConfigMap")
                    .name("existing")
                    .error(ApiStatus::new(403, "Forbidden", "no"))
                    .into(),
            ],
            ..config()
        },
        should_err: true,
        verify: Some(Box::new(|_, outcome| {
            let err = outcome.error.as_ref().ok_or("no error")?;
            let code = err.find_cause::<Error>().and_then(Error::code);
            (code == Some(403))
                .then_some(())
                .ok_or(format!("code {code:?}"))
        })),
        ..Default::default()
    };
    SubReconcilerTests::from([("forbidden", case)])
        .run(updating_reconciler)
        .await;
}

/// Creates two ConfigMaps from a generateName.
fn generating_reconciler(_: &SubReconcilerTestCase, _: &Config) -> Box<dyn SubReconciler> {
    Box::new(SyncReconciler::new_async(|ctx, _resource: &mut Draft| {
        Box::pin(async move {
            let mut child = config_map("x").build();
            child.metadata.name = None;
            child.metadata.generate_name = Some("child-".into());
            for expected in ["child-001", "child-002"] {
                let created = ctx.config().client.create(&child).await?;
                assert_eq!(created.metadata.name.as_deref(), Some(expected));
                let recorder = &ctx.config().recorder;
                recorder
                    .normal(&created, reasons::CREATED, expected)
                    .await?;
            }
            Ok(())
        })
    }))
}

#[tokio::test]
async fn generated_names_count_from_001() {
    let mut child = config_map("x").build();
    child.metadata.name = None;
    child.metadata.generate_name = Some("child-".into());
    let case = SubReconcilerTestCase {
        resource: resource().build(),
        config: dynrec::testing::ExpectConfig {
            expect_creates: vec![child.clone(), child],
            expect_events: vec![
                Event::normal(
                    &config_map("child-001").build(),
                    reasons::CREATED,
                    "child-001",
                ),
                Event::normal(
                    &config_map("child-002").build(),
                    reasons::CREATED,
                    "child-002",
                ),
            ],
            ..config()
        },
        ..Default::default()
    };
    SubReconcilerTests::from([("generated", case)])
        .run(generating_reconciler)
        .await;
}

/// One reconciler per case that counts its reconciles, writing the count to `status.count`.
fn counting_reconciler(_: &SubReconcilerTestCase, _: &Config) -> Box<dyn SubReconciler> {
    let count = Arc::new(AtomicUsize::new(0));
    Box::new(SyncReconciler::new(move |_ctx, resource: &mut Draft| {
        let n = count.fetch_add(1, Ordering::SeqCst) + 1;
        resource.data["status"] = json!({ "count": n });
        Ok(())
    }))
}

/// A reconcile named `name` expecting the counter at `count`, then `additional` ones.
fn counted(
    name: &str,
    count: usize,
    additional: Vec<SubReconcilerTestCase>,
) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        name: name.into(),
        resource: resource().build(),
        expect_resource: Some(resource().status(json!({ "count": count })).build()),
        config: config(),
        additional_reconciles: additional,
        ..Default::default()
    }
}

/// The failures of a table holding the one case `case`.
async fn counted_failures(case: SubReconcilerTestCase) -> Result<(), String> {
    SubReconcilerTests::from([("main", case)])
        .try_run(counting_reconciler)
        .await
        .map_err(|failures| failures.to_string())
}

#[tokio::test]
async fn additional_reconciles_reuse_the_reconciler_in_order() {
    // A nested additional reconcile runs right after its own case, before the next one.
    let nested = counted("second", 2, vec![counted("third", 3, vec![])]);
    let case = counted("first", 1, vec![nested, counted("fourth", 4, vec![])]);
    assert_eq!(counted_failures(case).await, Ok(()));
}

#[tokio::test]
async fn a_failing_additional_reconcile_fails_the_case_with_its_label() {
    let case = counted("first", 1, vec![counted("second", 5, vec![])]);
    let failures = counted_failures(case).await.unwrap_err();
    assert!(failures.starts_with("1 failure(s):"), "{failures}");
    assert!(
        failures.contains(
            r#"test case "main": additional reconcile 1 "second": ExpectResource differs"#
        ),
        "{failures}"
    );
    assert!(failures.contains(r#"-     "count": 5"#), "{failures}");
    assert!(failures.contains(r#"+     "count": 2"#), "{failures}");
}

#[tokio::test]
async fn a_skipped_additional_reconcile_does_not_run() {
    let skipped = SubReconcilerTestCase {
        skip: true,
        ..counted("skipped", 99, vec![counted("skipped too", 99, vec![])])
    };
    let case = counted("first", 1, vec![skipped, counted("second", 2, vec![])]);
    assert_eq!(counted_failures(case).await, Ok(()));
}

#[tokio::test]
async fn a_focused_additional_reconcile_is_a_failure() {
    let focused = SubReconcilerTestCase {
        focus: true,
        ..counted("focused", 2, vec![])
    };
    let case = counted("first", 1, vec![focused, counted("second", 2, vec![])]);
    let failures = counted_failures(case).await.unwrap_err();
    assert!(
        failures.contains(
            r#"test case "main": additional reconcile 1 "focused": focus is not allowed in additional reconciles"#
        ),
        "{failures}"
    );
    // The focused one does not run: the next one sees the counter at 2.
    assert!(failures.starts_with("1 failure(s):"), "{failures}");
}

/// What `outcome_reconciler` does: fail, succeed with a result, or panic.
#[derive(Clone, Copy)]
enum Act {
    Fail,
    Requeue,
    Panic,
}

/// A reconciler that does nothing but `act`.
fn outcome_reconciler(
    act: Act,
) -> impl Fn(&SubReconcilerTestCase, &Config) -> Box<dyn SubReconciler> {
    move |_, _| {
        Box::new(SyncReconciler::with_result(
            move |_ctx, _resource: &mut Draft| match act {
                Act::Fail => Outcome::err(ReconcileError::msg("boom")),
                Act::Requeue => Outcome::ok(ReconcileResult::requeue()),
                Act::Panic => panic!("the reconciler panics"),
            },
        ))
    }
}

/// A case expecting nothing to happen and a requeue.
fn quiet_case() -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        resource: resource().build(),
        config: config(),
        expected_result: ReconcileResult::requeue(),
        ..Default::default()
    }
}

/// The failures of `case` against a reconciler that does `act`.
async fn failures_acting(case: SubReconcilerTestCase, act: Act) -> String {
    match SubReconcilerTestSuite::from(vec![case])
        .try_run(outcome_reconciler(act))
        .await
    {
        Ok(()) => panic!("the case should have failed"),
        Err(failures) => failures.to_string(),
    }
}

#[tokio::test]
async fn the_matching_quiet_case_passes() {
    SubReconcilerTestSuite::from(vec![quiet_case()])
        .try_run(outcome_reconciler(Act::Requeue))
        .await
        .unwrap();
}

#[tokio::test]
async fn an_unexpected_error_fails() {
    let failures = failures_acting(quiet_case(), Act::Fail).await;
    assert!(failures.contains("unexpected error: boom"), "{failures}");
}

#[tokio::test]
async fn should_err_without_an_error_fails() {
    let case = SubReconcilerTestCase {
        should_err: true,
        ..quiet_case()
    };
    let failures = failures_acting(case, Act::Requeue).await;
    assert!(
        failures.contains("expected an error, got none"),
        "{failures}"
    );
}

#[tokio::test]
async fn another_result_fails() {
    let case = SubReconcilerTestCase {
        expected_result: ReconcileResult::done(),
        ..quiet_case()
    };
    let failures = failures_acting(case, Act::Requeue).await;
    assert!(failures.contains("ExpectedResult differs"), "{failures}");
}

#[tokio::test]
async fn a_missing_stashed_value_fails() {
    let case = SubReconcilerTestCase {
        expect_stashed_values: vec![StashedValue::new("answer", 42)],
        ..quiet_case()
    };
    let failures = failures_acting(case, Act::Requeue).await;
    assert!(failures.contains("answer"), "{failures}");
}

#[tokio::test]
async fn a_missing_status_update_fails() {
    let mut case = quiet_case();
    case.config.expect_status_updates = vec![resource().build()];
    let failures = failures_acting(case, Act::Requeue).await;
    assert!(failures.contains("StatusUpdates"), "{failures}");
}

#[tokio::test]
async fn an_unexpected_panic_fails_and_an_expected_one_is_required() {
    let failures = failures_acting(quiet_case(), Act::Panic).await;
    assert!(
        failures.contains("unexpected panic: the reconciler panics"),
        "{failures}"
    );
    let case = SubReconcilerTestCase {
        should_panic: true,
        ..quiet_case()
    };
    let failures = failures_acting(case, Act::Requeue).await;
    assert!(
        failures.contains("expected a panic, got none"),
        "{failures}"
    );
}
