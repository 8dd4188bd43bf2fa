//! Advice table tests.

mod flow_common;
mod harness_common;

use std::collections::BTreeMap;

use dynrec::object::Gvk;
use dynrec::reconcilers::{
    Advice, Context, Draft, Outcome, ReconcileError, ReconcileResult, Setup, SubReconciler,
    SyncReconciler, Watch,
};
use dynrec::testing::{Event, ExpectConfig, SubReconcilerTestCase, SubReconcilerTests};
use flow_common::TestReconciler;
use harness_common::config;
use kube::api::DynamicObject;
use serde_json::json;

/// The TestResource of the table tests.
fn resource() -> DynamicObject {
    harness_common::resource().build()
}

/// The resource with `status.fields.message` set.
fn with_message(message: &str) -> DynamicObject {
    harness_common::resource()
        .field("status.fields.message", message)
        .build()
}

/// The event `recording` records (through the context's config).
fn called_event() -> Event {
    Event::normal(&resource(), "Called", "reconciler called")
}

/// Records [`called_event`] through the current config and succeeds.
fn recording() -> SyncReconciler {
    SyncReconciler::new_async(|ctx, resource: &mut Draft| {
        Box::pin(async move {
            let recorder = &ctx.config().recorder;
            recorder
                .normal(resource, "Called", "reconciler called")
                .await?;
            Ok(())
        })
    })
}

/// Sets `status.fields.message` to "reconciler called" and succeeds.
fn marking() -> SyncReconciler {
    SyncReconciler::new(|_, resource: &mut Draft| {
        resource.data["status"]["fields"]["message"] = json!("reconciler called");
        Ok(())
    })
}

/// Fails with "test".
fn failing() -> SyncReconciler {
    SyncReconciler::new(|_, _: &mut Draft| Err(ReconcileError::msg("test")))
}

/// A case over the TestResource with the default config.
fn case() -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        resource: resource(),
        config: config(),
        ..Default::default()
    }
}

/// A case expecting these events on the default config.
fn expecting_events(events: Vec<Event>) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        config: ExpectConfig {
            expect_events: events,
            ..config()
        },
        ..case()
    }
}

/// A named case and the Advice it runs (reconciler.io passes it through `Metadata`).
type AdviceCase = (&'static str, SubReconcilerTestCase, fn() -> Advice);

/// Runs each case with its own Advice.
async fn run(cases: Vec<AdviceCase>) {
    let mut failures = Vec::new();
    for (name, case, build) in cases {
        let table = SubReconcilerTests::from([(name, case)]);
        let ran = table.try_run(|_, _| Box::new(build()) as Box<dyn SubReconciler>);
        if let Err(failed) = ran.await {
            failures.push(failed.to_string());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test]
async fn advice() {
    run(vec![
        (
            // The replaced context carries the "other" config: the event lands there.
            "before can replace the context",
            SubReconcilerTestCase {
                additional_configs: BTreeMap::from([(
                    "other".to_string(),
                    ExpectConfig {
                        expect_events: vec![called_event()],
                        ..ExpectConfig::default()
                    },
                )]),
                ..case()
            },
            || {
                Advice::new(recording()).before(|ctx: &Context, _: &mut Draft| {
                    let other = ctx.additional_configs()["other"].clone();
                    let replaced = ctx.with_config(other);
                    Box::pin(async move { (Some(replaced), Outcome::done()) })
                })
            },
        ),
        (
            "before can augment the result",
            SubReconcilerTestCase {
                expected_result: ReconcileResult::requeue(),
                expect_resource: Some(with_message("reconciler called")),
                ..case()
            },
            || {
                Advice::new(marking()).before(|_, _| {
                    Box::pin(async { (None, Outcome::ok(ReconcileResult::requeue())) })
                })
            },
        ),
        (
            // Neither the reconciler nor After runs: either would record an event.
            "before errors return immediately",
            SubReconcilerTestCase {
                should_err: true,
                verify: Some(Box::new(|_, outcome| {
                    let message = outcome.error.as_ref().map(ToString::to_string);
                    (message.as_deref() == Some("test"))
                        .then_some(())
                        .ok_or(format!("error {message:?}, want \"test\""))
                })),
                ..case()
            },
            || {
                Advice::new(recording())
                    .before(|_, _| {
                        Box::pin(async { (None, Outcome::err(ReconcileError::msg("test"))) })
                    })
                    .after(|_, _, _| {
                        Box::pin(async { Outcome::err(ReconcileError::msg("after ran")) })
                    })
            },
        ),
        (
            "around calls the reconciler by default",
            expecting_events(vec![called_event()]),
            || Advice::new(recording()).before(|_, _| Box::pin(async { (None, Outcome::done()) })),
        ),
        ("around can skip the reconciler", case(), || {
            Advice::new(recording()).around(|_, _, _| Box::pin(async { Outcome::done() }))
        }),
        (
            "around can call into the reconciler multiple times",
            expecting_events(vec![called_event(), called_event()]),
            || {
                Advice::new(recording()).around(|ctx, resource, reconciler| {
                    Box::pin(async move {
                        let first = reconciler.reconcile(ctx, resource).await;
                        let second = reconciler.reconcile(ctx, resource).await;
                        Outcome::ok(first.result.aggregate(second.result))
                    })
                })
            },
        ),
        (
            // After sees the error ("test") and replaces the outcome.
            "after can rewrite the result",
            SubReconcilerTestCase {
                expected_result: ReconcileResult::requeue(),
                ..case()
            },
            || {
                Advice::new(failing()).after(|_, _, outcome: Outcome| {
                    let rewritten = match outcome.error.map(|e| e.to_string()).as_deref() {
                        Some("test") => Outcome::ok(ReconcileResult::requeue()),
                        other => Outcome::err(ReconcileError::msg(format!("After saw {other:?}"))),
                    };
                    Box::pin(async move { rewritten })
                })
            },
        ),
    ])
    .await;
}

#[test]
fn advice_validates_its_hooks_and_reconciler_and_always_sets_it_up() {
    let noop = || TestReconciler::new(|_, _: &mut Draft| Outcome::done());
    let err = Advice::new(noop()).named("bare").validate().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Advice "bare" must implement at least one of Before, Around or After"#
    );
    let err = Advice::new(noop().invalid("TestReconciler is invalid"))
        .after(|_, _, o| Box::pin(async move { o }))
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Advice "Advice" must have a valid Reconciler: TestReconciler is invalid"#
    );

    let config_maps = Gvk::new("", "v1", "ConfigMap");
    let secrets = Gvk::new("", "v1", "Secret");
    let mut setup = Setup::default();
    let advice = Advice::new(noop().watching(config_maps.clone()))
        .after(|_, _, o| Box::pin(async move { o }));
    advice.setup(&mut setup).unwrap();
    assert_eq!(
        setup.watches(),
        &[Watch::Tracked(config_maps.clone())],
        "no own setup, still cascades"
    );
    let mut setup = Setup::default();
    let own = secrets.clone();
    let advice = Advice::new(noop().watching(config_maps.clone()))
        .after(|_, _, o| Box::pin(async move { o }))
        .with_setup(move |s| {
            s.owns(own.clone());
            Ok(())
        });
    advice.setup(&mut setup).unwrap();
    assert_eq!(
        setup.watches(),
        &[Watch::Owns(secrets), Watch::Tracked(config_maps)]
    );
}
