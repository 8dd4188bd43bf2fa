//! ResourceReconciler table tests (spec section 2), against the embedded server.

mod harness_common;

use std::sync::Arc;
use std::time::Duration;

use dynrec::client::reasons;
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    Config, Context, Outcome, Predicate, ReconcileError, ReconcileResult, ResourceReconciler,
    RootReconciler, SyncReconciler,
};
use dynrec::testing::{
    ApiStatus, Event, ExpectConfig, ReconcilerTestCase, ReconcilerTests, TrackRequest,
    induce_failure,
};
use futures::future::BoxFuture;
use harness_common::*;
use jiff::Timestamp;
use kube::api::DynamicObject;
use serde_json::json;

type SyncStep = Arc<dyn Fn(&mut DynamicObject) -> Outcome + Send + Sync>;

/// A ResourceReconciler whose sub-reconciler runs `sync` (also during finalization).
fn reconciler(config: &Config, sync: SyncStep) -> ResourceReconciler {
    let sub = SyncReconciler::with_result(move |_ctx, resource: &mut DynamicObject| {
        let outcome = sync(resource);
        Box::pin(async move { outcome })
    })
    .sync_during_finalization(true);
    ResourceReconciler::new(gvk(), sub, config.clone())
}

/// Runs one case with a reconciler built from `sync` and adjusted by `adjust`.
async fn run(
    case: ReconcilerTestCase,
    sync: impl Fn(&mut DynamicObject) -> Outcome + Send + Sync + 'static,
    adjust: impl Fn(ResourceReconciler) -> ResourceReconciler,
) {
    let sync: SyncStep = Arc::new(sync);
    ReconcilerTests::from([(
        "case",
        ReconcilerTestCase {
            request: request(),
            ..case
        },
    )])
    .run(|_, config| Box::new(adjust(reconciler(config, sync.clone()))) as Box<dyn RootReconciler>)
    .await;
}

fn set_status(resource: &mut DynamicObject) -> Outcome {
    resource.data["status"] = json!({"fields": {"foo": "bar"}});
    Outcome::done()
}

fn fail(_: &mut DynamicObject) -> Outcome {
    Outcome::err(ReconcileError::msg("reconciler error"))
}

fn nothing(_: &mut DynamicObject) -> Outcome {
    Outcome::done()
}

fn same<T>(r: T) -> T {
    r
}

fn given(objects: Vec<DynamicObject>) -> ExpectConfig {
    ExpectConfig {
        given_objects: objects,
        ..config()
    }
}

fn updated_status() -> DynamicObject {
    resource()
        .status(json!({"fields": {"foo": "bar"}, "observedGeneration": 1}))
        .build()
}

#[tokio::test]
async fn resource_does_not_exist() {
    run(
        ReconcilerTestCase {
            config: config(),
            ..Default::default()
        },
        fail,
        same,
    )
    .await;
}

#[tokio::test]
async fn ignores_a_deleted_resource_without_finalizers() {
    let case = ReconcilerTestCase {
        config: given(vec![resource().terminating().build()]),
        ..Default::default()
    };
    run(case, fail, same).await;
}

#[tokio::test]
async fn error_fetching_the_resource() {
    let case = ReconcilerTestCase {
        config: ExpectConfig {
            with_reactors: vec![induce_failure("get", "TestResource").into()],
            ..given(vec![resource().build()])
        },
        should_err: true,
        ..Default::default()
    };
    run(case, nothing, same).await;
}

#[tokio::test]
async fn status_update_sets_observed_generation() {
    let case = ReconcilerTestCase {
        config: ExpectConfig {
            expect_status_updates: vec![updated_status()],
            expect_events: vec![Event::normal(
                &resource().build(),
                reasons::STATUS_UPDATED,
                "Updated status",
            )],
            ..given(vec![resource().build()])
        },
        ..Default::default()
    };
    run(case, set_status, same).await;
}

#[tokio::test]
async fn in_sync_resource_is_not_written() {
    let case = ReconcilerTestCase {
        config: given(vec![updated_status()]),
        ..Default::default()
    };
    run(case, set_status, same).await;
}

#[tokio::test]
async fn status_update_failure_is_an_error_with_a_warning() {
    let case = ReconcilerTestCase {
        config: ExpectConfig {
            with_reactors: vec![
                induce_failure("update", "TestResource")
                    .subresource("status")
                    .into(),
            ],
            expect_status_updates: vec![updated_status()],
            expect_events: vec![Event::warning(
                &resource().build(),
                reasons::STATUS_UPDATE_FAILED,
                "Failed to update status: inducing failure for update TestResource",
            )],
            ..given(vec![resource().build()])
        },
        should_err: true,
        ..Default::default()
    };
    run(case, set_status, same).await;
}

#[tokio::test]
async fn status_update_conflict_is_silenced() {
    let conflict = ApiStatus::new(409, "Conflict", "the object has been modified");
    let case = ReconcilerTestCase {
        config: ExpectConfig {
            with_reactors: vec![
                induce_failure("update", "TestResource")
                    .error(conflict)
                    .into(),
            ],
            expect_status_updates: vec![updated_status()],
            ..given(vec![resource().build()])
        },
        ..Default::default()
    };
    run(case, set_status, same).await;
}

#[tokio::test]
async fn sub_reconciler_error_is_returned_without_status_write() {
    let case = ReconcilerTestCase {
        config: given(vec![resource().build()]),
        should_err: true,
        ..Default::default()
    };
    run(case, fail, same).await;
}

#[tokio::test]
async fn status_write_swallows_the_sub_reconciler_error_and_result() {
    let case = ReconcilerTestCase {
        config: ExpectConfig {
            expect_status_updates: vec![
                resource().status(json!({"fields": {"foo": "bar"}})).build(),
            ],
            expect_events: vec![Event::normal(
                &resource().build(),
                reasons::STATUS_UPDATED,
                "Updated status",
            )],
            ..given(vec![resource().build()])
        },
        ..Default::default()
    };
    let sync = |r: &mut DynamicObject| {
        set_status(r);
        Outcome::with(
            ReconcileResult::requeue(),
            Some(ReconcileError::msg("boom")),
        )
    };
    run(case, sync, same).await;
}

#[tokio::test]
async fn halt_requeues_and_sets_observed_generation() {
    let case = ReconcilerTestCase {
        config: given(vec![
            resource().status(json!({"observedGeneration": 1})).build(),
        ]),
        expected_result: ReconcileResult::requeue(),
        ..Default::default()
    };
    run(case, |_| Outcome::err(ReconcileError::halt()), same).await;
}

#[tokio::test]
async fn skip_status_update_error_is_returned_and_nothing_written() {
    let case = ReconcilerTestCase {
        config: given(vec![resource().build()]),
        should_err: true,
        ..Default::default()
    };
    let sync = |r: &mut DynamicObject| {
        set_status(r);
        Outcome::err(ReconcileError::skip_status_update())
    };
    run(case, sync, same).await;
}

#[tokio::test]
async fn quiet_skip_status_update_requeues() {
    let case = ReconcilerTestCase {
        config: given(vec![resource().build()]),
        expected_result: ReconcileResult::requeue(),
        ..Default::default()
    };
    let sync = |r: &mut DynamicObject| {
        set_status(r);
        Outcome::err(ReconcileError::skip_status_update().with_quiet())
    };
    run(case, sync, same).await;
}

#[tokio::test]
async fn skip_status_update_field_writes_nothing() {
    let case = ReconcilerTestCase {
        config: given(vec![resource().build()]),
        ..Default::default()
    };
    run(case, set_status, |r| r.skip_status_update(true)).await;
}

#[tokio::test]
async fn terminating_resource_status_is_not_written_by_default() {
    let terminating = resource().finalizers(&["test.finalizer"]).terminating();
    let case = ReconcilerTestCase {
        config: given(vec![terminating.build()]),
        ..Default::default()
    };
    run(case, set_status, same).await;
}

#[tokio::test]
async fn terminating_resource_status_is_written_when_asked() {
    let terminating = resource().finalizers(&["test.finalizer"]).terminating();
    let case = ReconcilerTestCase {
        config: ExpectConfig {
            expect_status_updates: vec![updated_status()],
            expect_events: vec![Event::normal(
                &terminating.clone().build(),
                reasons::STATUS_UPDATED,
                "Updated status",
            )],
            ..given(vec![terminating.build()])
        },
        ..Default::default()
    };
    run(case, set_status, |r| {
        r.sync_status_during_finalization(true)
    })
    .await;
}

#[tokio::test]
async fn result_is_propagated() {
    let case = ReconcilerTestCase {
        config: given(vec![
            resource().status(json!({"observedGeneration": 1})).build(),
        ]),
        expected_result: ReconcileResult::requeue_after(Duration::from_secs(60)),
        ..Default::default()
    };
    let sync = |_: &mut DynamicObject| {
        Outcome::ok(ReconcileResult::requeue_after(Duration::from_secs(60)))
    };
    run(case, sync, same).await;
}

#[tokio::test]
async fn quiet_before_reconcile_error_requeues() {
    let case = ReconcilerTestCase {
        config: given(vec![resource().build()]),
        expected_result: ReconcileResult::requeue(),
        ..Default::default()
    };
    run(case, fail, |r| {
        r.before_reconcile(|ctx| {
            Box::pin(async move { (ctx, Outcome::err(ReconcileError::quiet())) })
        })
    })
    .await;
}

#[tokio::test]
async fn before_reconcile_error_is_returned() {
    let case = ReconcilerTestCase {
        config: given(vec![resource().build()]),
        should_err: true,
        ..Default::default()
    };
    run(case, nothing, |r| {
        r.before_reconcile(|ctx| {
            Box::pin(async move { (ctx, Outcome::err(ReconcileError::msg("before"))) })
        })
    })
    .await;
}

#[tokio::test]
async fn before_result_aggregates_and_after_reconcile_sees_it() {
    let case = ReconcilerTestCase {
        config: given(vec![
            resource().status(json!({"observedGeneration": 1})).build(),
        ]),
        expected_result: ReconcileResult::requeue_after(Duration::from_secs(5)),
        ..Default::default()
    };
    let adjust = |r: ResourceReconciler| {
        r.before_reconcile(|ctx| {
            Box::pin(async move {
                let after_10s = ReconcileResult::requeue_after(Duration::from_secs(10));
                (ctx, Outcome::ok(after_10s))
            })
        })
        .after_reconcile(|_, outcome| {
            Box::pin(async move {
                assert_eq!(outcome.result.requeue_after, Some(Duration::from_secs(10)));
                Outcome::ok(ReconcileResult::requeue_after(Duration::from_secs(5)))
            })
        })
    };
    run(case, nothing, adjust).await;
}

/// The hooks are async: BeforeReconcile may read (and track) another object before the
/// sub-reconcilers run, and hand what it read to them through the stash.
#[tokio::test]
async fn before_reconcile_may_await_a_read() {
    let settings = config_map("settings")
        .field("data", json!({"color": "blue"}))
        .build();
    let parent = resource().build();
    let expected = resource()
        .status(json!({"fields": {"color": "blue"}, "observedGeneration": 1}))
        .build();
    let case = ReconcilerTestCase {
        request: request(),
        config: ExpectConfig {
            given_objects: vec![parent.clone(), settings.clone()],
            expect_tracks: vec![TrackRequest::new(&settings, &parent)],
            expect_events: vec![Event::normal(
                &parent,
                reasons::STATUS_UPDATED,
                "Updated status",
            )],
            expect_status_updates: vec![expected],
            ..config()
        },
        ..Default::default()
    };
    let copy_color = || {
        SyncReconciler::new(|ctx, resource: &mut DynamicObject| {
            let color: Option<String> = ctx.stash().retrieve("color");
            resource.data["status"]["fields"]["color"] = json!(color);
            Box::pin(async { Ok(()) })
        })
    };
    ReconcilerTests::from([("before reads settings", case)])
        .run(|_, config| {
            let read_settings = |ctx: Context| -> BoxFuture<'static, (Context, Outcome)> {
                Box::pin(async move {
                    let key = ObjectKey::namespaced(NAMESPACE, "settings");
                    let configmaps = Gvk::new("", "v1", "ConfigMap");
                    let outcome = match ctx.track_and_get(&configmaps, &key).await {
                        Ok(settings) => {
                            let color = settings.data["data"]["color"].as_str().unwrap_or("");
                            ctx.stash().store("color", color.to_string());
                            Outcome::done()
                        }
                        Err(err) => Outcome::err(ReconcileError::msg(err.to_string())),
                    };
                    (ctx, outcome)
                })
            };
            let root = ResourceReconciler::new(gvk(), copy_color(), config.clone())
                .before_reconcile(read_settings);
            Box::new(root) as Box<dyn RootReconciler>
        })
        .await;
}

#[tokio::test]
async fn skip_request_and_skip_resource() {
    let case = || ReconcilerTestCase {
        config: given(vec![resource().build()]),
        ..Default::default()
    };
    run(case(), fail, |r| {
        r.skip_request(Predicate::new(|_, req: &ObjectKey| req.name == NAME))
    })
    .await;
    let skip = Predicate::new(|_, r: &DynamicObject| r.metadata.generation == Some(1));
    run(case(), fail, move |r| r.skip_resource(skip.clone())).await;
}

#[tokio::test]
async fn context_carries_now_request_and_resource_type() {
    let now = Timestamp::from_second(1_700_000_000).unwrap();
    let case = ReconcilerTestCase {
        request: request(),
        now: Some(now),
        config: given(vec![
            resource().status(json!({"observedGeneration": 1})).build(),
        ]),
        ..Default::default()
    };
    ReconcilerTests::from([("context", case)])
        .run(|_, config| {
            let sub = SyncReconciler::new(move |ctx, _r: &mut DynamicObject| {
                let checked = (ctx.now() == now
                    && *ctx.request() == request()
                    && *ctx.resource_type() == gvk())
                .then_some(())
                .ok_or_else(|| ReconcileError::msg("context is wrong"));
                Box::pin(async move { checked })
            });
            Box::new(ResourceReconciler::new(gvk(), sub, config.clone())) as Box<dyn RootReconciler>
        })
        .await;
}
