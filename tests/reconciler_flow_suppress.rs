//! SuppressTransientErrors table tests: the first errors of a generation are
//! quiet and skip the status update; persistent ones pass through. The reconciler keeps
//! counters between requests, so most cases reconcile several times (`additional_reconciles`).

mod flow_common;
mod harness_common;

use std::time::Duration;

use dynrec::reconcilers::{
    Config, Draft, Markers, Outcome, ReconcileError, ReconcileResult, SubReconciler,
    SuppressTransientErrors, SyncReconciler,
};
use dynrec::testing::{
    ExpectConfig, SubReconcilerTestCase, SubReconcilerTests, TestObject, VerifyResource,
    induce_failure,
};
use flow_common::TestReconciler;
use harness_common::{GROUP, NAMESPACE, config};
use jiff::{SignedDuration, Timestamp};

/// The time of the requests (purges are due 24h after the first request).
fn now() -> Timestamp {
    flow_common::now()
}

/// 25 hours before [`now`].
fn yesterday() -> Timestamp {
    now() - SignedDuration::from_hours(25)
}

/// What the nested reconciler returns besides its error.
fn nested_result() -> ReconcileResult {
    ReconcileResult::requeue_after(Duration::from_secs(5))
}

/// A TestResource at generation 1 whose reconcile fails with a transient error.
fn named(name: &str, uid: &str) -> TestObject {
    TestObject::new(&format!("{GROUP}/v1"), "TestResource", name)
        .namespace(NAMESPACE)
        .field("metadata.uid", uid)
        .generation(1)
        .field("spec.fields.error", "transient")
}

fn blue() -> TestObject {
    named("blue", "11111111-1111-1111-1111-111111111111")
}

fn green() -> TestObject {
    named("green", "22222222-2222-2222-2222-222222222222")
}

/// Returns [`nested_result`] with the error `spec.fields.error` names: "transient" fails
/// with "an error", "durable" with a durable error, none succeeds.
fn nested() -> SyncReconciler {
    SyncReconciler::with_result(|_, r: &mut Draft| {
        let error = match r.data["spec"]["fields"]["error"].as_str() {
            Some("transient") => Some(ReconcileError::msg("an error")),
            Some("durable") => Some(ReconcileError::durable()),
            _ => None,
        };
        Outcome::with(nested_result(), error)
    })
}

/// The factory for a SuppressTransientErrors with `threshold` around [`nested`].
fn suppressing(
    threshold: u8,
) -> impl Fn(&SubReconcilerTestCase, &Config) -> Box<dyn SubReconciler> {
    move |_, _| Box::new(SuppressTransientErrors::new(nested()).threshold(threshold))
}

/// Checks that the nested result passes through with an error of this message and markers.
fn failed_with(message: &'static str, markers: Markers) -> Option<VerifyResource> {
    Some(Box::new(move |_, outcome| {
        let Some(error) = &outcome.error else {
            return Err("no error".into());
        };
        let actual = (error.to_string(), error.markers(), outcome.result);
        let expected = (message.to_string(), markers, nested_result());
        (actual == expected)
            .then_some(())
            .ok_or(format!("got {actual:?}, want {expected:?}"))
    }))
}

/// The nested error joined with skip-status-update and quiet.
fn suppressed() -> Option<VerifyResource> {
    let message = "an error\nskip status update\n\
                   quiet errors are returned as errors, but not logged or recorded";
    let markers = Markers {
        quiet: true,
        skip_status_update: true,
        ..Markers::default()
    };
    failed_with(message, markers)
}

/// The nested error, unchanged.
fn passed_through() -> Option<VerifyResource> {
    failed_with("an error", Markers::default())
}

/// A failing reconcile of `resource` at `now`, checked by `verify`.
fn reconcile(
    name: &str,
    resource: TestObject,
    now: Timestamp,
    verify: Option<VerifyResource>,
) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        name: name.into(),
        resource: resource.build(),
        now: Some(now),
        should_err: true,
        verify,
        config: config(),
        ..Default::default()
    }
}

/// A first reconcile of `resource` (suppressed), then `more` by the same reconciler.
fn sequence(
    resource: TestObject,
    now: Timestamp,
    more: Vec<SubReconcilerTestCase>,
) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        additional_reconciles: more,
        ..reconcile("", resource, now, suppressed())
    }
}

#[tokio::test]
async fn suppress_transient_errors() {
    let at_now = |name, resource, verify| reconcile(name, resource, now(), verify);
    SubReconcilerTests::from([
        (
            "no error continues",
            SubReconcilerTestCase {
                resource: blue().field("spec.fields.error", "none").build(),
                now: Some(now()),
                expected_result: nested_result(),
                config: config(),
                ..Default::default()
            },
        ),
        (
            "transient error suppressed",
            sequence(blue(), now(), vec![]),
        ),
        (
            "transient error suppressed until threshold",
            sequence(
                blue(),
                now(),
                vec![
                    at_now("still below threshold", blue(), suppressed()),
                    at_now("at threshold", blue(), passed_through()),
                    at_now("above threshold", blue(), passed_through()),
                ],
            ),
        ),
        (
            "transient error suppressed until threshold, per resource",
            sequence(
                blue(),
                now(),
                vec![
                    at_now("start green", green(), suppressed()),
                    at_now("blue still below threshold", blue(), suppressed()),
                    at_now("green still below threshold", green(), suppressed()),
                    at_now("blue at threshold", blue(), passed_through()),
                    at_now("green at threshold", green(), passed_through()),
                    at_now("blue above threshold", blue(), passed_through()),
                    at_now("green above threshold", green(), passed_through()),
                ],
            ),
        ),
        (
            "updated generation resets threshold",
            sequence(
                blue(),
                now(),
                vec![
                    at_now("still below threshold", blue(), suppressed()),
                    at_now(
                        "bumped generation, counter reset",
                        blue().generation(2),
                        suppressed(),
                    ),
                    at_now("still below threshold", blue().generation(2), suppressed()),
                    at_now(
                        "bumped generation again, counter reset",
                        blue().generation(3),
                        suppressed(),
                    ),
                ],
            ),
        ),
        (
            "durable error not suppressed",
            reconcile(
                "",
                blue().field("spec.fields.error", "durable"),
                now(),
                failed_with("durable error", ReconcileError::durable().markers()),
            ),
        ),
        (
            // Not in reconciler.io's suite: success drops the counter.
            "success resets the counter",
            sequence(
                blue(),
                now(),
                vec![
                    at_now("still below threshold", blue(), suppressed()),
                    SubReconcilerTestCase {
                        name: "success".into(),
                        resource: blue().field("spec.fields.error", "none").build(),
                        now: Some(now()),
                        expected_result: nested_result(),
                        config: config(),
                        ..Default::default()
                    },
                    at_now("counting starts over", blue(), suppressed()),
                ],
            ),
        ),
        (
            // Not in reconciler.io's suite: a durable error drops the counter.
            "durable error resets the counter",
            sequence(
                blue(),
                now(),
                vec![
                    at_now("still below threshold", blue(), suppressed()),
                    at_now(
                        "durable",
                        blue().field("spec.fields.error", "durable"),
                        failed_with("durable error", ReconcileError::durable().markers()),
                    ),
                    at_now("counting starts over", blue(), suppressed()),
                ],
            ),
        ),
        (
            // Only green exists at the purge, so blue's count of 2 is dropped.
            "purge stale counters",
            sequence(
                blue(),
                yesterday(),
                vec![
                    reconcile("blue again", blue(), yesterday(), suppressed()),
                    at_now("purge", green(), suppressed()),
                    at_now("blue counts from 1 again", blue(), suppressed()),
                ],
            ),
        ),
        (
            // The failed purge keeps every counter and is retried by the next reconcile.
            "purge stale counters fails",
            sequence(
                blue(),
                yesterday(),
                vec![
                    reconcile("start green", green(), yesterday(), suppressed()),
                    reconcile("green again", green(), yesterday(), suppressed()),
                    SubReconcilerTestCase {
                        config: ExpectConfig {
                            with_reactors: vec![induce_failure("list", "TestResourceList").into()],
                            ..config()
                        },
                        ..at_now("purge fails", blue(), suppressed())
                    },
                    at_now("green kept its count", green(), passed_through()),
                    at_now("the retried purge dropped blue", blue(), suppressed()),
                ],
            ),
        ),
    ])
    .run(suppressing(0)) // 0 keeps the default threshold, 3
    .await;
}

#[tokio::test]
async fn a_custom_threshold_changes_when_errors_pass() {
    SubReconcilerTests::from([(
        "threshold 1 passes the first error",
        reconcile("", blue(), now(), passed_through()),
    )])
    .run(suppressing(1))
    .await;
    SubReconcilerTests::from([(
        "threshold 2 suppresses only the first error",
        sequence(
            blue(),
            now(),
            vec![reconcile("second", blue(), now(), passed_through())],
        ),
    )])
    .run(suppressing(2))
    .await;
}

#[tokio::test]
async fn a_failing_additional_reconcile_fails_the_case() {
    let case = sequence(
        blue(),
        now(),
        vec![reconcile("wrong", blue(), now(), passed_through())],
    );
    let failures = SubReconcilerTests::from([("case", case)])
        .try_run(suppressing(0))
        .await
        .expect_err("the second error is still suppressed")
        .to_string();
    assert!(
        failures.contains(r#"test case "case": additional reconcile 1 "wrong": verify failed"#),
        "{failures}"
    );
}

#[test]
fn validates_the_nested_reconciler() {
    let invalid = TestReconciler::new(|_, _: &mut Draft| Outcome::done())
        .invalid("TestReconciler is invalid");
    let err = SuppressTransientErrors::new(invalid)
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"SuppressTransientErrors "SuppressTransientErrors" must have a valid Reconciler: TestReconciler is invalid"#
    );
}
