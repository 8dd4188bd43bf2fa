//! Advice (spec 8.3) and WithConfig (spec 8.10).

mod flow_common;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use dynrec::client::ListOptions;
use dynrec::object::Gvk;
use dynrec::reconcilers::{
    Advice, Context, Outcome, ReconcileResult, Setup, SubReconciler, Watch, WithConfig,
};
use flow_common::{TestReconciler, after, called, context, fail, object, resource, start};
use kube::api::DynamicObject;
use serde_json::json;

type Log = Arc<Mutex<Vec<String>>>;

/// A reconciler that logs "reconcile@<iteration>" and returns `outcome`.
fn logged(log: &Log, outcome: Outcome) -> TestReconciler {
    let log = log.clone();
    TestReconciler::new(move |ctx, _: &mut DynamicObject| {
        log.lock()
            .unwrap()
            .push(format!("reconcile@{:?}", ctx.iteration()));
        outcome.clone()
    })
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[tokio::test]
async fn advice_before_runs_first_and_may_replace_the_context() {
    let (_server, config) = start();
    let ctx = context(&config);
    let log: Log = Arc::default();
    let before_log = log.clone();
    let after_log = log.clone();
    let advice = Advice::new(logged(&log, Outcome::ok(after(5))))
        .before(move |ctx: &Context, resource: &mut DynamicObject| {
            before_log.lock().unwrap().push("before".into());
            flow_common::set(resource, "spec.fields.before", "called");
            (Some(ctx.with_iteration(7)), Outcome::ok(after(3)))
        })
        .after(move |ctx, _, outcome| {
            after_log
                .lock()
                .unwrap()
                .push(format!("after@{:?}", ctx.iteration()));
            outcome
        });
    let mut object = resource();
    let outcome = advice.reconcile(&ctx, &mut object).await;
    assert!(outcome.is_ok());
    assert_eq!(
        outcome.result,
        after(3),
        "before and around results aggregate"
    );
    assert_eq!(
        entries(&log),
        ["before", "reconcile@Some(7)", "after@Some(7)"]
    );
    assert_eq!(called(&object), ["before"]);
}

#[tokio::test]
async fn advice_before_error_stops_everything() {
    let (_server, config) = start();
    let log: Log = Arc::default();
    let after_log = log.clone();
    let advice = Advice::new(logged(&log, Outcome::done()))
        .before(|_, _| (None, Outcome::with(after(1), Some(fail("before")))))
        .after(move |_, _, outcome| {
            after_log.lock().unwrap().push("after".into());
            outcome
        });
    let outcome = advice.reconcile(&context(&config), &mut resource()).await;
    assert_eq!(outcome.result, after(1));
    assert_eq!(outcome.error.unwrap().to_string(), "before");
    assert!(
        entries(&log).is_empty(),
        "neither the reconciler nor after ran"
    );
}

#[tokio::test]
async fn advice_around_may_skip_or_repeat_the_reconciler() {
    let (_server, config) = start();
    let ctx = context(&config);
    let log: Log = Arc::default();
    let skip = Advice::new(logged(&log, Outcome::ok(after(1))))
        .around(|_, _, _| Box::pin(async { Outcome::ok(ReconcileResult::requeue()) }));
    let outcome = skip.reconcile(&ctx, &mut resource()).await;
    assert_eq!(outcome.result, ReconcileResult::requeue());
    assert!(entries(&log).is_empty());

    let twice =
        Advice::new(logged(&log, Outcome::ok(after(1)))).around(|ctx, resource, reconciler| {
            Box::pin(async move {
                let first = reconciler.reconcile(ctx, resource).await;
                let second = reconciler.reconcile(ctx, resource).await;
                Outcome::ok(first.result.aggregate(second.result))
            })
        });
    let outcome = twice.reconcile(&ctx, &mut resource()).await;
    assert_eq!(outcome.result, after(1));
    assert_eq!(entries(&log), ["reconcile@None", "reconcile@None"]);
}

#[tokio::test]
async fn advice_after_sees_the_error_and_may_replace_it() {
    let (_server, config) = start();
    let ctx = context(&config);
    let log: Log = Arc::default();
    let failing = || logged(&log, Outcome::with(after(2), Some(fail("reconcile"))));

    let recover = Advice::new(failing()).after(|_, _, outcome: Outcome| {
        assert_eq!(outcome.error.as_ref().unwrap().to_string(), "reconcile");
        Outcome::ok(outcome.result.aggregate(ReconcileResult::requeue()))
    });
    let outcome = recover.reconcile(&ctx, &mut resource()).await;
    assert!(outcome.is_ok());
    assert_eq!(outcome.result.normalized(), after(2));

    let passthrough = Advice::new(failing()).before(|_, _| (None, Outcome::done()));
    let outcome = passthrough.reconcile(&ctx, &mut resource()).await;
    assert_eq!(
        (outcome.result, outcome.error.unwrap().to_string()),
        (after(2), "reconcile".to_string())
    );
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
    let outcome = reconciler.reconcile(&ctx, &mut resource()).await;
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
    let mut object = resource();
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
