//! IfThen, While, ForEach, TryCatch and OverrideSetup (spec 8.4 to 8.8).

mod flow_common;

use std::sync::{Arc, Mutex};

use dynrec::object::{Fields, Gvk};
use dynrec::reconcilers::{
    Cursor, ForEach, IfThen, MaxIterationsExceeded, Outcome, OverrideSetup, Predicate,
    ReconcileError, ReconcileResult, Setup, SubReconciler, TryCatch, Watch, While,
};
use flow_common::{TestReconciler, after, called, context, fail, field, resource, set, start};
use k8s_openapi::api::core::v1::Container;
use kube::api::DynamicObject;
use serde_json::json;

fn holds(value: bool) -> Predicate<DynamicObject> {
    Predicate::new(move |_, _| value)
}

fn noop() -> TestReconciler {
    TestReconciler::new(|_, _| Outcome::done())
}

fn invalid() -> TestReconciler {
    noop().invalid("TestReconciler is invalid")
}

fn config_maps() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

// ---- IfThen ----

fn if_then(condition: bool, then_error: bool, else_error: bool) -> IfThen {
    let then = TestReconciler::marking(
        "then",
        Outcome::with(after(1), then_error.then(|| fail("then error"))),
    );
    let otherwise = TestReconciler::marking(
        "else",
        Outcome::with(after(2), else_error.then(|| fail("else error"))),
    );
    IfThen::new(holds(condition), then).otherwise(otherwise)
}

#[tokio::test]
async fn if_then_calls_the_branch_the_condition_chooses() {
    let (_server, config) = start();
    let ctx = context(&config);
    let cases = [
        ("then", true, false, after(1), None, "then"),
        (
            "then error",
            true,
            true,
            after(1),
            Some("then error"),
            "then",
        ),
        ("else", false, false, after(2), None, "else"),
        (
            "else error",
            false,
            true,
            after(2),
            Some("else error"),
            "else",
        ),
    ];
    for (name, condition, error, result, message, branch) in cases {
        let mut object = resource();
        let outcome = if_then(condition, error, error)
            .reconcile(&ctx, &mut object)
            .await;
        assert_eq!(outcome.result, result, "{name}");
        assert_eq!(
            outcome.error.map(|e| e.to_string()).as_deref(),
            message,
            "{name}"
        );
        assert_eq!(called(&object), [branch], "{name}");
    }
    let mut object = resource();
    let without_else = IfThen::new(
        holds(false),
        TestReconciler::marking("then", Outcome::ok(after(1))),
    );
    let outcome = without_else.reconcile(&ctx, &mut object).await;
    assert_eq!(outcome.result, ReconcileResult::done());
    assert!(outcome.is_ok() && called(&object).is_empty());
}

#[tokio::test]
async fn if_then_condition_sees_the_resource() {
    let (_server, config) = start();
    let condition =
        Predicate::new(|_, r: &DynamicObject| field(r, "spec.mode").as_deref() == Some("on"));
    let reconciler = IfThen::new(condition, TestReconciler::marking("then", Outcome::done()))
        .otherwise(TestReconciler::marking("else", Outcome::done()));
    let mut object = resource();
    set(&mut object, "spec.mode", "on");
    reconciler.reconcile(&context(&config), &mut object).await;
    assert_eq!(called(&object), ["then"]);
}

#[test]
fn if_then_validates_and_sets_up_both_branches() {
    assert!(if_then(true, false, false).validate().is_ok());
    let err = IfThen::new(holds(true), invalid()).validate().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"IfThen "IfThen" must have a valid Then: TestReconciler is invalid"#
    );
    let err = IfThen::new(holds(true), noop())
        .otherwise(invalid())
        .named("branch")
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"IfThen "branch" must have a valid Else: TestReconciler is invalid"#
    );

    let secrets = Gvk::new("", "v1", "Secret");
    let reconciler = IfThen::new(holds(true), noop().watching(config_maps()))
        .otherwise(noop().watching(secrets.clone()));
    let mut setup = Setup::default();
    reconciler.setup(&mut setup).unwrap();
    assert_eq!(
        setup.watches(),
        &[Watch::Tracked(config_maps()), Watch::Tracked(secrets)]
    );
}

// ---- While ----

/// Loops until the iteration reaches `desired`, each iteration recording the iteration count
/// in `spec.fields.iterations` and asking to requeue after `1000 - count` seconds.
fn counting(desired: usize) -> While {
    let condition = Predicate::new(move |ctx, _: &DynamicObject| ctx.iteration() != Some(desired));
    let body = TestReconciler::new(|ctx, resource: &mut DynamicObject| {
        let i = ctx.iteration().expect("inside a loop") as u64 + 1;
        set(resource, "spec.fields.iterations", i.to_string());
        Outcome::ok(after(1000 - i))
    });
    While::new(condition, body)
}

#[tokio::test]
async fn while_loops_until_the_condition_fails_or_the_limit() {
    let (_server, config) = start();
    let ctx = context(&config);
    type WhileCase = (
        &'static str,
        While,
        ReconcileResult,
        Option<usize>,
        Option<&'static str>,
    );
    let cases: [WhileCase; 6] = [
        (
            "return immediately",
            counting(0),
            ReconcileResult::done(),
            None,
            None,
        ),
        (
            "return after 10 iterations",
            counting(10),
            after(990),
            None,
            Some("10"),
        ),
        (
            "halt after default max iterations",
            counting(1000),
            after(900),
            Some(100),
            Some("100"),
        ),
        (
            "return before custom max iterations",
            counting(5).max_iterations(10),
            after(995),
            None,
            Some("5"),
        ),
        (
            "halt after custom max iterations",
            counting(1000).max_iterations(10),
            after(990),
            Some(10),
            Some("10"),
        ),
        (
            "no limit",
            counting(150).max_iterations(0),
            after(850),
            None,
            Some("150"),
        ),
    ];
    for (name, reconciler, result, exceeded, iterations) in cases {
        let mut object = resource();
        let outcome = reconciler.reconcile(&ctx, &mut object).await;
        assert_eq!(outcome.result, result, "{name}");
        let found = outcome
            .error
            .as_ref()
            .and_then(|e| e.find_cause::<MaxIterationsExceeded>().copied());
        assert_eq!(found.map(|e| e.iterations), exceeded, "{name}");
        if let Some(n) = exceeded {
            assert_eq!(
                outcome.error.unwrap().to_string(),
                format!("exceeded max iterations: {n}")
            );
        }
        assert_eq!(
            field(&object, "spec.fields.iterations").as_deref(),
            iterations,
            "{name}"
        );
    }
    assert_eq!(
        ctx.iteration(),
        None,
        "outside a loop there is no iteration"
    );
}

#[tokio::test]
async fn while_stops_at_an_error_keeping_its_result() {
    let (_server, config) = start();
    let body = TestReconciler::new(|ctx, _: &mut DynamicObject| match ctx.iteration() {
        Some(2) => Outcome::with(after(5), Some(fail("boom"))),
        _ => Outcome::ok(after(10)),
    });
    let outcome = While::new(holds(true), body)
        .reconcile(&context(&config), &mut resource())
        .await;
    assert_eq!(outcome.result, after(5));
    assert_eq!(outcome.error.unwrap().to_string(), "boom");
}

#[tokio::test]
async fn nested_loops_see_the_innermost_iteration() {
    let (_server, config) = start();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let inner_body = TestReconciler::new(move |ctx, _: &mut DynamicObject| {
        record.lock().unwrap().push(ctx.iteration());
        Outcome::done()
    });
    let inner = While::new(
        Predicate::new(|ctx, _| ctx.iteration() != Some(2)),
        inner_body,
    );
    let outer = While::new(Predicate::new(|ctx, _| ctx.iteration() != Some(2)), inner);
    let outcome = outer.reconcile(&context(&config), &mut resource()).await;
    assert!(outcome.is_ok(), "{:?}", outcome.error);
    assert_eq!(*seen.lock().unwrap(), [Some(0), Some(1), Some(0), Some(1)]);
}

#[test]
fn while_validates_and_sets_up_its_reconciler() {
    let err = While::new(holds(false), invalid()).validate().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"While "While" must have a valid Reconciler: TestReconciler is invalid"#
    );
    let mut setup = Setup::default();
    While::new(holds(false), noop().watching(config_maps()))
        .setup(&mut setup)
        .unwrap();
    assert_eq!(setup.watches(), &[Watch::Tracked(config_maps())]);
}

// ---- ForEach ----

fn with_containers(names_images: &[(&str, &str)]) -> DynamicObject {
    let containers: Vec<_> = names_images
        .iter()
        .map(|(n, i)| json!({"name": n, "image": i}))
        .collect();
    let mut object = resource();
    object
        .set_field("spec.template.spec.containers", json!(containers))
        .unwrap();
    object
}

fn each_container() -> ForEach<Container> {
    let items = |_: &dynrec::reconcilers::Context, r: &DynamicObject| {
        let containers = r.field_as::<Vec<Container>>("spec.template.spec.containers");
        Ok(containers
            .map_err(ReconcileError::from_error)?
            .unwrap_or_default())
    };
    let body = TestReconciler::new(|ctx, resource: &mut DynamicObject| {
        let cursor = Cursor::<Container>::retrieve(ctx).expect("a cursor is stashed");
        if cursor.item.name == "die" {
            return Outcome::err(fail("exit early"));
        }
        let image = cursor.item.image.clone().unwrap_or_default();
        let value = format!("{image}-{}-{}", cursor.index, cursor.length);
        set(
            resource,
            &format!("status.fields.{}", cursor.item.name),
            value,
        );
        Outcome::ok(after(10 - cursor.index as u64))
    });
    ForEach::new(items, body)
}

#[tokio::test]
async fn for_each_calls_the_reconciler_with_a_cursor_per_item() {
    let (_server, config) = start();
    let ctx = context(&config);

    let mut empty = resource();
    let outcome = each_container().reconcile(&ctx, &mut empty).await;
    assert!(outcome.is_ok() && outcome.result == ReconcileResult::done());
    assert_eq!(empty, resource());

    let mut object = with_containers(&[("hello", "world"), ("foo", "bar")]);
    let outcome = each_container().reconcile(&ctx, &mut object).await;
    assert!(outcome.is_ok());
    assert_eq!(outcome.result, after(9));
    assert_eq!(
        field(&object, "status.fields.hello").as_deref(),
        Some("world-0-2")
    );
    assert_eq!(
        field(&object, "status.fields.foo").as_deref(),
        Some("bar-1-2")
    );
    let last = Cursor::<Container>::retrieve(&ctx).unwrap();
    assert_eq!(
        (last.index, last.length, last.item.name.as_str()),
        (1, 2, "foo"),
        "the last cursor stays stashed"
    );
    assert_eq!(
        Cursor::<Container>::key(),
        format!(
            "reconciler.io/runtime:cursor:{}",
            std::any::type_name::<Container>()
        )
    );
}

#[tokio::test]
async fn for_each_terminates_on_error_with_the_earlier_results_only() {
    let (_server, config) = start();
    let mut object = with_containers(&[("hello", "world"), ("die", "die"), ("foo", "bar")]);
    let outcome = each_container()
        .reconcile(&context(&config), &mut object)
        .await;
    assert_eq!(outcome.error.unwrap().to_string(), "exit early");
    assert_eq!(
        outcome.result,
        after(10),
        "only the first iteration's result"
    );
    assert_eq!(
        field(&object, "status.fields.hello").as_deref(),
        Some("world-0-3")
    );
    assert_eq!(field(&object, "status.fields.foo"), None);

    let failing = ForEach::<Container>::new(|_, _| Err(fail("no items")), noop());
    let outcome = failing.reconcile(&context(&config), &mut resource()).await;
    assert_eq!(outcome.error.unwrap().to_string(), "no items");
}

#[test]
fn for_each_validates_its_reconciler() {
    let err = ForEach::<Container>::new(|_, _| Ok(vec![]), invalid())
        .named("containers")
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"ForEach "containers" must have a valid Reconciler: TestReconciler is invalid"#
    );
}

// ---- TryCatch ----

type Log = Arc<Mutex<Vec<&'static str>>>;

fn logging(log: &Log, step: &'static str, outcome: Outcome) -> TestReconciler {
    let log = log.clone();
    TestReconciler::new(move |_, _| {
        log.lock().unwrap().push(step);
        outcome.clone()
    })
}

#[tokio::test]
async fn try_catch_runs_try_catch_finally_in_order() {
    let (_server, config) = start();
    let ctx = context(&config);
    type Catch = fn(Outcome) -> Outcome;
    let rethrow: Catch = |outcome| outcome;
    let suppress: Catch = |outcome| Outcome::ok(outcome.result);
    let inject: Catch = |_| Outcome::with(after(2), Some(fail("catch")));
    type TryCase = (
        &'static str,
        bool,
        Catch,
        Option<Outcome>,
        ReconcileResult,
        Option<&'static str>,
    );
    let cases: [TryCase; 6] = [
        ("catch rethrow", true, rethrow, None, after(3), Some("try")),
        (
            "catch and suppress error",
            true,
            suppress,
            None,
            after(3),
            None,
        ),
        (
            "catch and inject error",
            false,
            inject,
            None,
            after(2),
            Some("catch"),
        ),
        (
            "finally",
            false,
            rethrow,
            Some(Outcome::ok(after(1))),
            after(1),
            None,
        ),
        (
            "finally with try error",
            true,
            rethrow,
            Some(Outcome::ok(after(1))),
            after(1),
            Some("try"),
        ),
        (
            "finally error overrides try error",
            true,
            rethrow,
            Some(Outcome::with(after(1), Some(fail("finally")))),
            after(1),
            Some("finally"),
        ),
    ];
    for (name, try_fails, catch, finally, result, message) in cases {
        let log: Log = Arc::default();
        let try_outcome = Outcome::with(after(3), try_fails.then(|| fail("try")));
        let catch_log = log.clone();
        let mut reconciler =
            TryCatch::new(logging(&log, "try", try_outcome)).catch(move |_, _, outcome| {
                catch_log.lock().unwrap().push("catch");
                catch(outcome)
            });
        if let Some(finally) = &finally {
            reconciler = reconciler.finally(logging(&log, "finally", finally.clone()));
        }
        let outcome = reconciler.reconcile(&ctx, &mut resource()).await;
        assert_eq!(outcome.result, result, "{name}");
        assert_eq!(
            outcome.error.map(|e| e.to_string()).as_deref(),
            message,
            "{name}"
        );
        let expected: &[&str] = if finally.is_some() {
            &["try", "catch", "finally"]
        } else {
            &["try", "catch"]
        };
        assert_eq!(*log.lock().unwrap(), expected, "{name}");
    }
}

#[tokio::test]
async fn try_without_catch_propagates_its_outcome() {
    let (_server, config) = start();
    let outcome = TryCatch::new(TestReconciler::new(|_, _| {
        Outcome::with(after(4), Some(ReconcileError::quiet()))
    }))
    .reconcile(&context(&config), &mut resource())
    .await;
    assert_eq!(outcome.result, after(4));
    assert!(outcome.error.unwrap().is_quiet());
}

#[test]
fn try_catch_validates_and_sets_up_try_and_finally() {
    let err = TryCatch::new(invalid()).validate().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"TryCatch "TryCatch" must have a valid Try: TestReconciler is invalid"#
    );
    let err = TryCatch::new(noop())
        .finally(invalid())
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"TryCatch "TryCatch" must have a valid Finally: TestReconciler is invalid"#
    );
    let secrets = Gvk::new("", "v1", "Secret");
    let mut setup = Setup::default();
    TryCatch::new(noop().watching(config_maps()))
        .finally(noop().watching(secrets.clone()))
        .setup(&mut setup)
        .unwrap();
    assert_eq!(
        setup.watches(),
        &[Watch::Tracked(config_maps()), Watch::Tracked(secrets)]
    );
}

// ---- OverrideSetup ----

#[tokio::test]
async fn override_setup_reconciles_but_replaces_the_setup() {
    let (_server, config) = start();
    let reconciler = OverrideSetup::new()
        .with_setup(|setup: &mut Setup| {
            setup.watch(Watch::Owns(Gvk::new("", "v1", "Secret")));
            Ok(())
        })
        .reconciler(
            TestReconciler::marking("reconciler", Outcome::ok(after(1))).watching(config_maps()),
        );
    let mut object = resource();
    let outcome = reconciler.reconcile(&context(&config), &mut object).await;
    assert_eq!(
        (outcome.result, called(&object)),
        (after(1), vec!["reconciler".to_string()])
    );
    let mut setup = Setup::default();
    reconciler.setup(&mut setup).unwrap();
    assert_eq!(
        setup.watches(),
        &[Watch::Owns(Gvk::new("", "v1", "Secret"))],
        "the nested setup is not called"
    );

    let setup_only = OverrideSetup::<DynamicObject>::new().with_setup(|_: &mut Setup| Ok(()));
    assert!(setup_only.validate().is_ok());
    let outcome = setup_only
        .reconcile(&context(&config), &mut resource())
        .await;
    assert!(outcome.is_ok() && outcome.result == ReconcileResult::done());
}

#[test]
fn override_setup_needs_setup_or_a_valid_reconciler() {
    let err = OverrideSetup::<DynamicObject>::new()
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"OverrideSetup "SkipSetup" must implement at least one of Setup or Reconciler"#
    );
    let err = OverrideSetup::new()
        .reconciler(invalid())
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"OverrideSetup "SkipSetup" must have a valid Reconciler: TestReconciler is invalid"#
    );
    assert!(OverrideSetup::new().reconciler(noop()).validate().is_ok());
}

// ---- with the crate's SyncReconciler ----

#[tokio::test]
async fn composites_nest_sync_reconcilers() {
    use dynrec::reconcilers::{Sequence, SyncReconciler};
    let (_server, config) = start();
    let mark = |key: &'static str, secs: u64| {
        SyncReconciler::with_result(move |_, resource: &mut DynamicObject| {
            Box::pin(async move {
                set(resource, &format!("spec.fields.{key}"), "called");
                Outcome::ok(after(secs))
            })
        })
    };
    let tree = Sequence::new(vec![
        Box::new(mark("first", 5)),
        Box::new(IfThen::new(holds(false), mark("then", 1)).otherwise(mark("else", 2))),
    ]);
    tree.validate().unwrap();
    let mut object = resource();
    let outcome = tree.reconcile(&context(&config), &mut object).await;
    assert!(outcome.is_ok(), "{:?}", outcome.error);
    assert_eq!(outcome.result, after(2));
    assert_eq!(called(&object), ["else", "first"]);
}
