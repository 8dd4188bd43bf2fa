//! SuppressTransientErrors (spec 8.12): the first errors of a generation are quiet and skip
//! the status update; persistent ones pass through.

mod flow_common;

use std::sync::{Arc, Mutex};

use dynrec::apiserver::{Fault, FaultMatch};
use dynrec::object::Gvk;
use dynrec::reconcilers::{
    Context, Markers, Outcome, ReconcileError, SubReconciler, SuppressTransientErrors,
};
use flow_common::{TestReconciler, after, context, context_at, fail, now, object, start};
use jiff::{SignedDuration, Timestamp};
use kube::api::DynamicObject;
use serde_json::json;

/// What the nested reconciler returns next.
type Next = Arc<Mutex<Option<ReconcileError>>>;

fn suppressing(next: &Next) -> SuppressTransientErrors {
    let next = next.clone();
    SuppressTransientErrors::new(TestReconciler::new(move |_, _: &mut DynamicObject| {
        Outcome::with(after(1), next.lock().unwrap().clone())
    }))
}

fn failing_with(next: &Next, error: Option<ReconcileError>) {
    *next.lock().unwrap() = error;
}

fn resource(uid: &str, generation: i64) -> DynamicObject {
    object(json!({
        "apiVersion": "testing.reconciler.runtime/v1", "kind": "TestResource",
        "metadata": {"namespace": "test-namespace", "name": "test-resource", "uid": uid, "generation": generation}
    }))
}

const SUPPRESSED: Markers = Markers {
    quiet: true,
    halt: false,
    skip_status_update: true,
    durable: false,
};
const RAW: Markers = Markers {
    quiet: false,
    halt: false,
    skip_status_update: false,
    durable: false,
};

async fn markers(
    reconciler: &SuppressTransientErrors,
    ctx: &Context,
    resource: &mut DynamicObject,
) -> Option<Markers> {
    let outcome = reconciler.reconcile(ctx, resource).await;
    assert_eq!(
        outcome.result,
        after(1),
        "the nested result is always returned"
    );
    outcome.error.map(|e| e.markers())
}

#[tokio::test]
async fn errors_below_the_threshold_are_suppressed_then_pass_through() {
    let (_server, config) = start();
    let ctx = context(&config);
    let next = Next::default();
    let reconciler = suppressing(&next);
    let mut r = resource("uid-1", 1);

    assert_eq!(markers(&reconciler, &ctx, &mut r).await, None, "none");
    failing_with(&next, Some(fail("boom")));
    let outcome = reconciler.reconcile(&ctx, &mut r).await;
    let error = outcome.error.unwrap();
    assert!(
        error.to_string().starts_with("boom\n"),
        "the suppressed error keeps its message: {error}"
    );
    assert_eq!(error.markers(), SUPPRESSED, "suppressed");
    assert_eq!(
        markers(&reconciler, &ctx, &mut r).await,
        Some(SUPPRESSED),
        "2nd"
    );
    let outcome = reconciler.reconcile(&ctx, &mut r).await;
    assert_eq!(
        outcome.error.map(|e| (e.to_string(), e.markers())),
        Some(("boom".to_string(), RAW)),
        "3rd passes"
    );
    assert_eq!(
        markers(&reconciler, &ctx, &mut r).await,
        Some(RAW),
        "4th passes"
    );

    failing_with(&next, None);
    assert_eq!(markers(&reconciler, &ctx, &mut r).await, None, "success");
    assert_eq!(
        reconciler.tracked_resources(),
        0,
        "success clears the counter"
    );
    failing_with(&next, Some(fail("boom")));
    assert_eq!(
        markers(&reconciler, &ctx, &mut r).await,
        Some(SUPPRESSED),
        "counting starts over"
    );
}

#[tokio::test]
async fn counters_are_per_resource_and_per_generation() {
    let (_server, config) = start();
    let ctx = context(&config);
    let next = Next::default();
    let reconciler = suppressing(&next);
    failing_with(&next, Some(fail("boom")));
    let (mut a, mut b) = (resource("uid-a", 1), resource("uid-b", 1));

    assert_eq!(markers(&reconciler, &ctx, &mut a).await, Some(SUPPRESSED));
    assert_eq!(markers(&reconciler, &ctx, &mut a).await, Some(SUPPRESSED));
    assert_eq!(
        markers(&reconciler, &ctx, &mut b).await,
        Some(SUPPRESSED),
        "per resource"
    );
    assert_eq!(markers(&reconciler, &ctx, &mut a).await, Some(RAW));

    let mut a2 = resource("uid-a", 2);
    assert_eq!(
        markers(&reconciler, &ctx, &mut a2).await,
        Some(SUPPRESSED),
        "generation reset"
    );
    assert_eq!(markers(&reconciler, &ctx, &mut a2).await, Some(SUPPRESSED));
    assert_eq!(markers(&reconciler, &ctx, &mut a2).await, Some(RAW));
}

#[tokio::test]
async fn durable_errors_pass_through_and_reset_the_counter() {
    let (_server, config) = start();
    let ctx = context(&config);
    let next = Next::default();
    let reconciler = suppressing(&next);
    let mut r = resource("uid-1", 1);
    failing_with(&next, Some(fail("boom")));
    assert_eq!(markers(&reconciler, &ctx, &mut r).await, Some(SUPPRESSED));
    failing_with(&next, Some(ReconcileError::durable()));
    let durable = ReconcileError::durable().markers();
    assert_eq!(
        markers(&reconciler, &ctx, &mut r).await,
        Some(durable),
        "durable passes unchanged"
    );
    assert_eq!(reconciler.tracked_resources(), 0);
    failing_with(&next, Some(fail("boom")));
    assert_eq!(markers(&reconciler, &ctx, &mut r).await, Some(SUPPRESSED));
    assert_eq!(
        markers(&reconciler, &ctx, &mut r).await,
        Some(SUPPRESSED),
        "counting started over"
    );
}

#[tokio::test]
async fn a_custom_threshold_changes_when_errors_pass() {
    let (_server, config) = start();
    let next = Next::default();
    failing_with(&next, Some(fail("boom")));
    let reconciler = suppressing(&next).threshold(1);
    assert_eq!(
        markers(&reconciler, &context(&config), &mut resource("u", 1)).await,
        Some(RAW)
    );
    let reconciler = suppressing(&next).threshold(0);
    assert_eq!(
        markers(&reconciler, &context(&config), &mut resource("u", 1)).await,
        Some(SUPPRESSED),
        "0 keeps the default"
    );
}

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

fn at(hours: i64) -> Timestamp {
    now() + SignedDuration::from_hours(hours)
}

#[tokio::test]
async fn stale_counters_are_purged_daily_and_a_failed_list_retries() {
    let (server, config) = start();
    let live = object(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "live", "namespace": "default"}}),
    );
    let mut live = config.client.create(&live).await.unwrap();
    let mut ghost = object(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost", "namespace": "default", "uid": "deleted-uid"}}),
    );

    let next = Next::default();
    failing_with(&next, Some(fail("boom")));
    let reconciler = suppressing(&next);
    let ctx = |hours| context_at(&config, config_map_gvk(), at(hours));
    reconciler.reconcile(&ctx(0), &mut ghost).await;
    reconciler.reconcile(&ctx(1), &mut live).await;
    assert_eq!(reconciler.tracked_resources(), 2, "less than 24h: no purge");

    let fault = server.add_fault(Fault::fail(
        FaultMatch {
            verb: Some("list".into()),
            kind: Some("configmaps".into()),
            ..Default::default()
        },
        500,
        "InternalError",
    ));
    reconciler.reconcile(&ctx(25), &mut live).await;
    assert_eq!(
        reconciler.tracked_resources(),
        2,
        "the list failed: nothing purged"
    );

    server.remove_fault(fault);
    reconciler.reconcile(&ctx(26), &mut live).await;
    assert_eq!(
        reconciler.tracked_resources(),
        1,
        "the failed purge is retried at once; the ghost is dropped"
    );
    let outcome = reconciler.reconcile(&ctx(27), &mut ghost).await;
    assert_eq!(
        outcome.error.unwrap().markers(),
        SUPPRESSED,
        "the ghost's count started over"
    );
}

#[test]
fn validates_the_nested_reconciler() {
    let invalid = TestReconciler::new(|_, _: &mut DynamicObject| Outcome::done())
        .invalid("TestReconciler is invalid");
    let err = SuppressTransientErrors::new(invalid)
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"SuppressTransientErrors "SuppressTransientErrors" must have a valid Reconciler: TestReconciler is invalid"#
    );
}
