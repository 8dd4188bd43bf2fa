//! AggregateReconciler table tests (reconciler.io's aggregate_test.go, all
//! 23 cases): ConfigMap `test-resource` reconciled and written as its own child, with the
//! StubObjectManager as in Go. Its three "context ..." cases are one case here; a quiet
//! BeforeReconcile error requeues, as in Go (the same hooks as the ResourceReconciler's,
//! where this departs from Go). Validation stays a plain test.

mod harness_common;

use std::time::Duration;

use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    AggregateReconciler, Config, Draft, Outcome, ReconcileError, ReconcileResult, RootReconciler,
    Sequence, SubReconciler, SyncReconciler, WithFinalizer,
};
use dynrec::testing::{
    DeleteRef, ExpectConfig, ReconcilerTestCase, StubObjectManager, TestObject, induce_failure,
};
use harness_common::*;
use jiff::Timestamp;
use kube::api::DynamicObject;
use serde_json::json;

type Factory = harness_common::Factory<ReconcilerTestCase>;

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// The aggregate as it should be: data foo=bar.
fn desired() -> DynamicObject {
    config_map(NAME)
        .field("data", json!({"foo": "bar"}))
        .build()
}

/// The aggregate as it exists before it is reconciled: no data.
fn existing() -> TestObject {
    config_map(NAME)
}

/// reconciler.io's default: no reconciler, desired data foo=bar, the stub object manager.
fn aggregate(config: &Config) -> AggregateReconciler {
    AggregateReconciler::new(
        config_map_gvk(),
        request(),
        StubObjectManager,
        config.clone(),
    )
    .desired_resource(|_ctx, r| {
        let mut r = r.clone();
        r.data["data"] = json!({"foo": "bar"});
        Ok(Some(r))
    })
}

/// The default aggregate, adjusted by `adjust`.
fn adjusted(adjust: impl Fn(AggregateReconciler) -> AggregateReconciler + 'static) -> Factory {
    Box::new(move |config| Box::new(adjust(aggregate(config))) as Box<dyn RootReconciler>)
}

fn default_aggregate() -> Factory {
    adjusted(|a| a)
}

/// The default aggregate whose desired resource is none.
fn deleting() -> Factory {
    adjusted(|a| a.desired_resource(|_, _| Ok(None)))
}

/// The default aggregate whose reconciler is `sub`.
fn reconciling(sub: impl Fn() -> Box<dyn SubReconciler> + 'static) -> Factory {
    adjusted(move |a| a.reconciler(sub()))
}

/// A SyncReconciler returning `outcome`.
fn returning(outcome: impl Fn() -> Outcome + Send + Sync + 'static) -> Box<dyn SubReconciler> {
    Box::new(SyncReconciler::with_result(move |_ctx, _r: &mut Draft| {
        outcome()
    }))
}

/// A Sequence whose first step returns `result` and halts, before a step that fails.
fn halting(result: ReconcileResult) -> Box<dyn SubReconciler> {
    Box::new(Sequence::new(vec![
        returning(move || Outcome::with(result, Some(ReconcileError::halt()))),
        returning(|| Outcome::err(ReconcileError::msg("test error"))),
    ]))
}

/// The default aggregate with a BeforeReconcile hook returning `outcome`.
fn before(outcome: fn() -> Outcome) -> Factory {
    adjusted(move |a| a.before_reconcile(move |ctx| Box::pin(async move { (ctx, outcome()) })))
}

fn case(given: Vec<DynamicObject>) -> ReconcilerTestCase {
    ReconcilerTestCase {
        request: request(),
        config: ExpectConfig {
            given_objects: given,
            ..ExpectConfig::default()
        },
        ..Default::default()
    }
}

fn creating() -> ReconcilerTestCase {
    let mut case = case(vec![]);
    case.config.expect_creates = vec![desired()];
    case
}

fn updating() -> ReconcilerTestCase {
    let mut case = case(vec![existing().build()]);
    case.config.expect_updates = vec![desired()];
    case
}

fn deleted() -> ReconcilerTestCase {
    let mut case = case(vec![existing().build()]);
    case.config.expect_deletes = vec![DeleteRef::of(&existing().build())];
    case
}

/// `case` where every `verb` of ConfigMaps fails, and so the reconcile.
fn failing_to(verb: &str, mut case: ReconcilerTestCase) -> ReconcilerTestCase {
    case.config.with_reactors = vec![induce_failure(verb, "ConfigMap").into()];
    case.should_err = true;
    case
}

fn expecting(result: ReconcileResult, mut case: ReconcilerTestCase) -> ReconcilerTestCase {
    case.expected_result = result;
    case
}

#[tokio::test]
async fn aggregate_reconciler() {
    let now = Timestamp::from_second(1_700_000_000).unwrap();
    let lifecycle = Lifecycle::default();
    let ran = lifecycle.clone();
    run_cases(vec![
        (
            "resource is in sync",
            case(vec![desired()]),
            default_aggregate(),
        ),
        (
            "ignore other resources",
            ReconcilerTestCase {
                request: ObjectKey::namespaced(NAMESPACE, "not-it"),
                ..case(vec![existing().build()])
            },
            reconciling(|| returning(|| Outcome::err(ReconcileError::msg("must not run")))),
        ),
        (
            "ignore terminating resources",
            case(vec![
                existing()
                    .finalizers(&["test.finalizer"])
                    .terminating()
                    .build(),
            ]),
            default_aggregate(),
        ),
        ("create resource", creating(), default_aggregate()),
        ("update resource", updating(), default_aggregate()),
        ("delete resource", deleted(), deleting()),
        (
            "error getting resources",
            failing_to("get", case(vec![existing().build()])),
            default_aggregate(),
        ),
        (
            "error creating resource",
            failing_to("create", creating()),
            default_aggregate(),
        ),
        (
            "error updating resource",
            failing_to("update", updating()),
            default_aggregate(),
        ),
        (
            "error deleting resource",
            failing_to("delete", deleted()),
            deleting(),
        ),
        (
            "reconcile result",
            expecting(
                ReconcileResult::requeue_after(Duration::from_secs(3600)),
                case(vec![desired()]),
            ),
            reconciling(|| {
                returning(|| Outcome::ok(ReconcileResult::requeue_after(Duration::from_secs(3600))))
            }),
        ),
        (
            "reconcile error",
            ReconcilerTestCase {
                should_err: true,
                verify: failed_with("test error"),
                ..case(vec![])
            },
            reconciling(|| returning(|| Outcome::err(ReconcileError::msg("test error")))),
        ),
        // Quirk 4: the halt is dropped, the object is still written.
        (
            "reconcile halted",
            creating(),
            reconciling(|| halting(ReconcileResult::done())),
        ),
        (
            "reconcile halted with result",
            expecting(ReconcileResult::requeue(), creating()),
            reconciling(|| halting(ReconcileResult::requeue())),
        ),
        (
            "context is stashable, has config, request, resource type and now",
            ReconcilerTestCase {
                now: Some(now),
                ..case(vec![desired()])
            },
            Box::new(move |config: &Config| {
                let expected = config.clone();
                let checks = SyncReconciler::new(move |ctx, _r: &mut Draft| {
                    check_context(ctx, &expected, &config_map_gvk(), &request(), now)
                });
                Box::new(aggregate(config).reconciler(checks)) as Box<dyn RootReconciler>
            }),
        ),
        (
            "context can be augmented in Prepare and accessed in Cleanup",
            ReconcilerTestCase {
                prepare: lifecycle.prepare(),
                clean_up: lifecycle.clean_up(),
                ..case(vec![desired()])
            },
            reconciling(move || {
                let ran = ran.clone();
                Box::new(SyncReconciler::new(move |_ctx, _r: &mut Draft| {
                    ran.reconciled()
                }))
            }),
        ),
        (
            "before reconcile is called before reconcile and after the context is populated",
            ReconcilerTestCase {
                config: ExpectConfig {
                    expect_creates: vec![existing().build()],
                    expect_updates: vec![desired()],
                    ..ExpectConfig::default()
                },
                ..case(vec![])
            },
            adjusted(|a| {
                a.before_reconcile(|ctx| {
                    Box::pin(async move {
                        let created = ctx.config().client.create(&existing().build()).await;
                        let outcome = created.map_or_else(Outcome::err, |_| Outcome::done());
                        (ctx, outcome)
                    })
                })
            }),
        ),
        (
            "before reconcile can influence the result",
            expecting(ReconcileResult::requeue(), updating()),
            before(|| Outcome::ok(ReconcileResult::requeue())),
        ),
        (
            "before reconcile can replace the context (its stash)",
            {
                let mut case = case(vec![existing().build()]);
                case.config.expect_updates = vec![
                    config_map(NAME)
                        .field("data", json!({"message": "hello world"}))
                        .build(),
                ];
                case
            },
            adjusted(|a| {
                a.before_reconcile(|ctx| {
                    ctx.stash().store("message", "hello world".to_string());
                    Box::pin(async move { (ctx, Outcome::done()) })
                })
                .desired_resource(|ctx, r| {
                    let mut r = r.clone();
                    let message: Option<String> = ctx.stash().retrieve("message");
                    r.data["data"] = json!({ "message": message });
                    Ok(Some(r))
                })
            }),
        ),
        (
            "before reconcile errors shortcut execution",
            ReconcilerTestCase {
                should_err: true,
                verify: failed_with("test"),
                ..case(vec![existing().build()])
            },
            before(|| Outcome::err(ReconcileError::msg("test"))),
        ),
        (
            "quiet before reconcile error requeues",
            expecting(ReconcileResult::requeue(), case(vec![existing().build()])),
            before(|| Outcome::err(ReconcileError::quiet())),
        ),
        (
            "after reconcile can overwrite the result",
            ReconcilerTestCase {
                should_err: false,
                ..failing_to("update", updating())
            },
            adjusted(|a| a.after_reconcile(|_, _| Box::pin(async { Outcome::done() }))),
        ),
    ])
    .await;
    lifecycle.assert_complete();
}

/// reconciler.io's AggregateReconciler validation table. "Type missing" and
/// "AggregateObjectManager missing" have no counterpart (both are `new`'s arguments);
/// "Reconciler missing" is valid (Go's message for it cannot fire either, spec 3).
#[test]
fn validation_names_what_is_missing() {
    let server = dynrec::apiserver::ApiServer::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let config = Config::new(dynrec::client::Client::new(server.client()), "test");
    let named = |name: &str, request: ObjectKey| {
        AggregateReconciler::new(config_map_gvk(), request, StubObjectManager, config.clone())
            .named(name)
    };
    let valid = |name: &str| named(name, request());
    let cases = vec![
        (
            "empty",
            AggregateReconciler::new(
                config_map_gvk(),
                ObjectKey::cluster(""),
                StubObjectManager,
                config.clone(),
            ),
            Err(r#"AggregateReconciler "ConfigMapAggregateReconciler" must define Request"#.into()),
        ),
        (
            "valid",
            valid("valid").reconciler(Sequence::new(vec![])),
            Ok(()),
        ),
        (
            "Request missing",
            named("Request missing", ObjectKey::cluster("")),
            Err(r#"AggregateReconciler "Request missing" must define Request"#.into()),
        ),
        ("Reconciler missing", valid("Reconciler missing"), Ok(())),
        (
            "DesiredResource",
            valid("DesiredResource").desired_resource(|_, _| Ok(None)),
            Ok(()),
        ),
        (
            "valid reconciler",
            valid("valid reconciler").reconciler(returning(Outcome::done)),
            Ok(()),
        ),
        (
            "invalid reconciler",
            valid("invalid reconciler").reconciler(
                WithFinalizer::new("", returning(Outcome::done)),
            ),
            Err(r#"AggregateReconciler "invalid reconciler" must have a valid Reconciler: WithFinalizer "WithFinalizer" must define Finalizer"#.into()),
        ),
    ];
    check_validation_with(cases, |r| r.validate());
}

/// Checks that the reconcile failed with exactly `expected`.
fn failed_with(expected: &'static str) -> Option<dynrec::testing::VerifyOutcome> {
    Some(Box::new(move |outcome| {
        let error = outcome.error.as_ref().map(ToString::to_string);
        (error.as_deref() == Some(expected))
            .then_some(())
            .ok_or(format!("expected the error {expected:?}, got {error:?}"))
    }))
}
