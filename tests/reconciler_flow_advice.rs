//! Advice (spec 8.3) table tests, and WithConfig (spec 8.10).

mod flow_common;
mod harness_common;

use std::collections::BTreeMap;

use async_trait::async_trait;
use dynrec::client::ListOptions;
use dynrec::object::Gvk;
use dynrec::reconcilers::{
    Advice, Context, Outcome, ReconcileError, ReconcileResult, Setup, SubReconciler,
    SyncReconciler, Watch, WithConfig,
};
use dynrec::testing::{Event, ExpectConfig, SubReconcilerTestCase, SubReconcilerTests};
use flow_common::{TestReconciler, called, context, fail, object, start};
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
    SyncReconciler::new(|ctx, resource: &mut DynamicObject| {
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
    SyncReconciler::new(|_, resource: &mut DynamicObject| {
        resource.data["status"]["fields"]["message"] = json!("reconciler called");
        Box::pin(async { Ok(()) })
    })
}

/// Fails with "test".
fn failing() -> SyncReconciler {
    SyncReconciler::new(|_, _: &mut DynamicObject| {
        Box::pin(async { Err(ReconcileError::msg("test")) })
    })
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
                Advice::new(recording()).before(|ctx: &Context, _: &mut DynamicObject| {
                    let other = ctx.additional_configs()["other"].clone();
                    (Some(ctx.with_config(other)), Outcome::done())
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
                Advice::new(marking())
                    .before(|_, _| (None, Outcome::ok(ReconcileResult::requeue())))
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
                    .before(|_, _| (None, Outcome::err(ReconcileError::msg("test"))))
                    .after(|_, _, _| Outcome::err(ReconcileError::msg("after ran")))
            },
        ),
        (
            "around calls the reconciler by default",
            expecting_events(vec![called_event()]),
            || Advice::new(recording()).before(|_, _| (None, Outcome::done())),
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
                    match outcome.error.map(|e| e.to_string()).as_deref() {
                        Some("test") => Outcome::ok(ReconcileResult::requeue()),
                        other => Outcome::err(ReconcileError::msg(format!("After saw {other:?}"))),
                    }
                })
            },
        ),
    ])
    .await;
}

#[test]
fn advice_validates_its_hooks_and_reconciler_and_always_sets_it_up() {
    let noop = || TestReconciler::new(|_, _: &mut DynamicObject| Outcome::done());
    let err = Advice::new(noop()).named("bare").validate().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Advice "bare" must implement at least one of Before, Around or After"#
    );
    let err = Advice::new(noop().invalid("TestReconciler is invalid"))
        .after(|_, _, o| o)
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Advice "Advice" must have a valid Reconciler: TestReconciler is invalid"#
    );

    let config_maps = Gvk::new("", "v1", "ConfigMap");
    let secrets = Gvk::new("", "v1", "Secret");
    let mut setup = Setup::default();
    let advice = Advice::new(noop().watching(config_maps.clone())).after(|_, _, o| o);
    advice.setup(&mut setup).unwrap();
    assert_eq!(
        setup.watches(),
        &[Watch::Tracked(config_maps.clone())],
        "no own setup, still cascades"
    );
    let mut setup = Setup::default();
    let own = secrets.clone();
    let advice = Advice::new(noop().watching(config_maps.clone()))
        .after(|_, _, o| o)
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

/// Creates a ConfigMap through the current config, and records the ConfigMaps the original
/// config (the one that loaded the resource) sees.
struct CreateConfigMap;

#[async_trait]
impl SubReconciler<DynamicObject> for CreateConfigMap {
    fn name(&self) -> &str {
        "CreateConfigMap"
    }

    async fn reconcile(&self, ctx: &Context, _: &mut DynamicObject) -> Outcome {
        let config_map = object(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "made-by-nested", "namespace": "default"}
        }));
        match ctx.config().client.create(&config_map).await {
            Ok(_) => Outcome::done(),
            Err(err) => Outcome::err(err),
        }
    }
}

#[tokio::test]
async fn with_config_gives_nested_reconcilers_another_cluster() {
    let (_home_server, home) = start();
    let (_other_server, other) = start();
    let ctx = context(&home);
    let target = other.clone();
    let reconciler = WithConfig::new(move |_, _| Ok(target.clone()), CreateConfigMap);
    let outcome = reconciler
        .reconcile(&ctx, &mut flow_common::resource())
        .await;
    assert!(outcome.is_ok(), "{:?}", outcome.error);

    let config_maps = Gvk::new("", "v1", "ConfigMap");
    let all = ListOptions::default().namespace("default");
    let names = |objects: Vec<DynamicObject>| -> Vec<String> {
        objects
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect()
    };
    assert_eq!(
        names(other.client.list(&config_maps, &all).await.unwrap()),
        ["made-by-nested"]
    );
    assert!(names(home.client.list(&config_maps, &all).await.unwrap()).is_empty());
}

#[tokio::test]
async fn with_config_returns_the_config_error_without_reconciling() {
    let (_server, config) = start();
    let reconciler = WithConfig::new(
        |_, _| Err(fail("no such cluster")),
        TestReconciler::marking("nested", Outcome::done()),
    );
    let mut object = flow_common::resource();
    let outcome = reconciler.reconcile(&context(&config), &mut object).await;
    assert_eq!(outcome.error.unwrap().to_string(), "no such cluster");
    assert!(called(&object).is_empty());

    let invalid = WithConfig::new(
        |_, c| Ok(c.clone()),
        TestReconciler::new(|_, _: &mut DynamicObject| Outcome::done())
            .invalid("TestReconciler is invalid"),
    );
    assert_eq!(
        invalid.validate().unwrap_err().to_string(),
        r#"WithConfig "WithConfig" must have a valid Reconciler: TestReconciler is invalid"#
    );
}
