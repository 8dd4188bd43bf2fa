//! AggregateReconciler table tests (spec section 3), with the StubObjectManager.

mod harness_common;

use std::sync::Arc;

use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    AggregateReconciler, Config, Outcome, ReconcileError, ReconcileResult, RootReconciler,
    SyncReconciler,
};
use dynrec::testing::{
    DeleteRef, ExpectConfig, ReconcilerTestCase, ReconcilerTests, StubObjectManager, induce_failure,
};
use harness_common::*;
use kube::api::DynamicObject;
use serde_json::json;

type Step = Arc<dyn Fn(&mut DynamicObject) -> Outcome + Send + Sync>;

fn desired() -> DynamicObject {
    config_map(NAME)
        .field("data", json!({"foo": "bar"}))
        .build()
}

fn existing() -> DynamicObject {
    config_map(NAME).build()
}

/// An aggregate of ConfigMap `test-resource` whose reconciler runs `step` and whose desired
/// state has data foo=bar, or is absent when `delete` is set.
async fn run(
    case: ReconcilerTestCase,
    step: impl Fn(&mut DynamicObject) -> Outcome + Send + Sync + 'static,
    delete: bool,
) {
    let step: Step = Arc::new(step);
    let case = ReconcilerTestCase {
        request: if case.request.name.is_empty() {
            request()
        } else {
            case.request.clone()
        },
        ..case
    };
    ReconcilerTests::from([("case", case)])
        .run(|_, config: &Config| {
            let step = step.clone();
            let sub = SyncReconciler::with_result(move |_ctx, r: &mut DynamicObject| {
                let outcome = step(r);
                Box::pin(async move { outcome })
            });
            Box::new(
                AggregateReconciler::new(
                    Gvk::new("", "v1", "ConfigMap"),
                    request(),
                    StubObjectManager,
                    config.clone(),
                )
                .reconciler(sub)
                .desired_resource(move |_ctx, mut r| {
                    r.data["data"] = json!({"foo": "bar"});
                    Ok((!delete).then_some(r))
                }),
            ) as Box<dyn RootReconciler>
        })
        .await;
}

fn ok(_: &mut DynamicObject) -> Outcome {
    Outcome::done()
}

fn given(objects: Vec<DynamicObject>) -> ExpectConfig {
    ExpectConfig {
        given_objects: objects,
        ..ExpectConfig::default()
    }
}

#[tokio::test]
async fn in_sync() {
    run(
        ReconcilerTestCase {
            config: given(vec![desired()]),
            ..Default::default()
        },
        ok,
        false,
    )
    .await;
}

#[tokio::test]
async fn ignores_other_requests() {
    let case = ReconcilerTestCase {
        request: ObjectKey::namespaced(NAMESPACE, "other"),
        config: given(vec![existing()]),
        ..Default::default()
    };
    run(case, |_| panic!("must not run"), false).await;
}

#[tokio::test]
async fn ignores_a_terminating_resource() {
    let terminating = config_map(NAME).finalizers(&["f"]).terminating().build();
    run(
        ReconcilerTestCase {
            config: given(vec![terminating]),
            ..Default::default()
        },
        ok,
        false,
    )
    .await;
}

#[tokio::test]
async fn creates_updates_and_deletes() {
    let create = ReconcilerTestCase {
        config: ExpectConfig {
            expect_creates: vec![desired()],
            ..ExpectConfig::default()
        },
        ..Default::default()
    };
    run(create, ok, false).await;
    let update = ReconcilerTestCase {
        config: ExpectConfig {
            expect_updates: vec![desired()],
            ..given(vec![existing()])
        },
        ..Default::default()
    };
    run(update, ok, false).await;
    let delete = ReconcilerTestCase {
        config: ExpectConfig {
            expect_deletes: vec![DeleteRef::of(&existing())],
            ..given(vec![existing()])
        },
        ..Default::default()
    };
    run(delete, ok, true).await;
}

#[tokio::test]
async fn api_errors_are_returned() {
    for (verb, given_objects, delete) in [
        ("get", vec![existing()], false),
        ("create", vec![], false),
        ("update", vec![existing()], false),
        ("delete", vec![existing()], true),
    ] {
        let mut expect = ExpectConfig {
            with_reactors: vec![induce_failure(verb, "ConfigMap").into()],
            ..given(given_objects)
        };
        match verb {
            "create" => expect.expect_creates = vec![desired()],
            "update" => expect.expect_updates = vec![desired()],
            "delete" => expect.expect_deletes = vec![DeleteRef::of(&existing())],
            _ => {}
        }
        run(
            ReconcilerTestCase {
                config: expect,
                should_err: true,
                ..Default::default()
            },
            ok,
            delete,
        )
        .await;
    }
}

#[tokio::test]
async fn result_and_errors_of_the_reconciler() {
    let requeue = ReconcilerTestCase {
        config: given(vec![desired()]),
        expected_result: ReconcileResult::requeue(),
        ..Default::default()
    };
    run(requeue, |_| Outcome::ok(ReconcileResult::requeue()), false).await;
    let error = ReconcilerTestCase {
        config: given(vec![desired()]),
        should_err: true,
        ..Default::default()
    };
    run(error, |_| Outcome::err(ReconcileError::msg("boom")), false).await;
}

#[tokio::test]
async fn halted_reconciler_still_writes_and_keeps_its_result() {
    let halted = ReconcilerTestCase {
        config: ExpectConfig {
            expect_creates: vec![desired()],
            ..ExpectConfig::default()
        },
        ..Default::default()
    };
    run(halted, |_| Outcome::err(ReconcileError::halt()), false).await;
    let with_result = ReconcilerTestCase {
        config: ExpectConfig {
            expect_creates: vec![desired()],
            ..ExpectConfig::default()
        },
        expected_result: ReconcileResult::requeue(),
        ..Default::default()
    };
    run(
        with_result,
        |_| Outcome::with(ReconcileResult::requeue(), Some(ReconcileError::halt())),
        false,
    )
    .await;
}

#[tokio::test]
async fn hooks_run_around_the_request() {
    let case = || ReconcilerTestCase {
        request: request(),
        config: given(vec![desired()]),
        ..Default::default()
    };
    let build = |config: &Config, quiet: bool| {
        AggregateReconciler::new(
            Gvk::new("", "v1", "ConfigMap"),
            request(),
            StubObjectManager,
            config.clone(),
        )
        .before_reconcile(move |ctx| {
            let error = match quiet {
                true => ReconcileError::quiet(),
                false => ReconcileError::msg("before"),
            };
            Box::pin(async move { (ctx, Outcome::err(error)) })
        })
    };
    ReconcilerTests::from([(
        "quiet before",
        ReconcilerTestCase {
            expected_result: ReconcileResult::requeue(),
            ..case()
        },
    )])
    .run(|_, c| Box::new(build(c, true)) as Box<dyn RootReconciler>)
    .await;
    ReconcilerTests::from([(
        "failing before",
        ReconcilerTestCase {
            should_err: true,
            ..case()
        },
    )])
    .run(|_, c| Box::new(build(c, false)) as Box<dyn RootReconciler>)
    .await;
    ReconcilerTests::from([(
        "after",
        ReconcilerTestCase {
            expected_result: ReconcileResult::requeue(),
            ..case()
        },
    )])
    .run(|_, c| {
        Box::new(
            AggregateReconciler::new(
                Gvk::new("", "v1", "ConfigMap"),
                request(),
                StubObjectManager,
                c.clone(),
            )
            .after_reconcile(|_, _| Box::pin(async { Outcome::ok(ReconcileResult::requeue()) })),
        ) as Box<dyn RootReconciler>
    })
    .await;
}

#[test]
fn validate_requires_a_request() {
    let server = dynrec::apiserver::ApiServer::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let config = Config::new(
        dynrec::client::Client::new(server.client()),
        "test",
        std::time::Duration::from_secs(60),
    );
    let reconciler = AggregateReconciler::new(
        Gvk::new("", "v1", "ConfigMap"),
        ObjectKey::cluster(""),
        StubObjectManager,
        config,
    );
    assert_eq!(
        reconciler.validate().unwrap_err().to_string(),
        r#"AggregateReconciler "ConfigMapAggregateReconciler" must define Request"#
    );
}

#[tokio::test]
async fn the_context_carries_request_config_resource_type_now_and_stash() {
    let now: jiff::Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
    let case = ReconcilerTestCase {
        request: request(),
        now: Some(now),
        config: ExpectConfig {
            given_objects: vec![desired()],
            ..ExpectConfig::default()
        },
        ..Default::default()
    };
    ReconcilerTests::from([("context", case)])
        .run(move |_, config: &Config| {
            let checks = SyncReconciler::new(move |ctx, _r: &mut DynamicObject| {
                ctx.stash().store("seen", 1u8);
                let problems: Vec<&str> = [
                    (*ctx.request() != request(), "request"),
                    (
                        *ctx.resource_type() != Gvk::new("", "v1", "ConfigMap"),
                        "resource type",
                    ),
                    (
                        *ctx.original_resource_type() != *ctx.resource_type(),
                        "original type",
                    ),
                    (ctx.now() != now, "now"),
                    (ctx.stash().retrieve::<u8>("seen") != Some(1), "stash"),
                ]
                .into_iter()
                .filter_map(|(wrong, what)| wrong.then_some(what))
                .collect();
                let checked = problems
                    .is_empty()
                    .then_some(())
                    .ok_or_else(|| ReconcileError::msg(format!("context is wrong: {problems:?}")));
                Box::pin(async move { checked })
            });
            Box::new(
                AggregateReconciler::new(
                    Gvk::new("", "v1", "ConfigMap"),
                    request(),
                    StubObjectManager,
                    config.clone(),
                )
                .reconciler(checks)
                .desired_resource(|_ctx, mut r| {
                    r.data["data"] = json!({"foo": "bar"});
                    Ok(Some(r))
                }),
            ) as Box<dyn RootReconciler>
        })
        .await;
}

#[tokio::test]
async fn prepare_and_clean_up_run_around_the_case() {
    let prepared = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cleaned = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (p, c) = (prepared.clone(), cleaned.clone());
    let case = ReconcilerTestCase {
        config: given(vec![desired()]),
        prepare: Some(Box::new(move |_| {
            p.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        })),
        clean_up: Some(Box::new(move |_| {
            c.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        })),
        ..Default::default()
    };
    run(case, ok, false).await;
    assert!(
        prepared.load(std::sync::atomic::Ordering::SeqCst),
        "prepare ran"
    );
    assert!(
        cleaned.load(std::sync::atomic::Ordering::SeqCst),
        "clean_up ran"
    );
}
