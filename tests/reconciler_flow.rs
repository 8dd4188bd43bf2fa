//! Table tests of IfThen, While, ForEach, TryCatch and OverrideSetup,
//! ported from reconciler.io's flow_test.go, then their validation and setup.
//!
//! As in Go, the nested reconcilers mark `spec.fields.<step>` with "called"; each step also
//! appends its name to the stash under [`CALLS`], so that a case can assert the order.

mod flow_common;
mod harness_common;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use dynrec::object::{Fields, Gvk};
use dynrec::reconcilers::{
    Context, Cursor, ForEach, IfThen, MaxIterationsExceeded, Outcome, OverrideSetup, Predicate,
    ReconcileError, ReconcileResult, Setup, SubReconciler, SyncReconciler, TryCatch, Watch, While,
};
use dynrec::testing::{StashedValue, SubReconcilerTestCase, SubReconcilerTests, TestObject};
use flow_common::TestReconciler;
use harness_common::{config, resource};
use k8s_openapi::api::core::v1::Container;
use kube::api::DynamicObject;
use serde_json::{Value, json};

/// Stash key of the names of the steps called, in order.
const CALLS: &str = "test:calls";
/// Stash key of the `While` iterations the loop body saw, in order.
const ITERATIONS: &str = "test:iterations";

type Boxed = Box<dyn SubReconciler>;

// ---- table plumbing ----

/// Runs a table whose cases each bring their own reconciler (Go passes the parameters of
/// its shared factory as Metadata).
async fn run_table<const N: usize>(cases: [(&str, Boxed, SubReconcilerTestCase); N]) {
    let mut reconcilers = BTreeMap::new();
    let cases = cases.map(|(name, reconciler, case)| {
        reconcilers.insert(name.to_string(), reconciler);
        (name, case)
    });
    let reconcilers = Mutex::new(reconcilers);
    SubReconcilerTests::from(cases)
        .run(|case, _| {
            let mut reconcilers = reconcilers.lock().unwrap();
            reconcilers
                .remove(&case.name)
                .expect("one reconciler per case")
        })
        .await;
}

fn after(secs: u64) -> ReconcileResult {
    ReconcileResult::requeue_after(Duration::from_secs(secs))
}

fn fail(message: &str) -> ReconcileError {
    ReconcileError::msg(message)
}

/// The test resource with `spec.fields` set to `fields`.
fn with_fields(fields: Value) -> TestObject {
    resource().spec(json!({ "fields": fields }))
}

/// `spec.fields` with each of `steps` marked "called".
fn called(steps: &[&str]) -> TestObject {
    with_fields(
        steps
            .iter()
            .map(|s| (s.to_string(), json!("called")))
            .collect(),
    )
}

/// Reconciles the test resource, expecting `expect` and `result` without error.
fn ok(expect: TestObject, result: ReconcileResult) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        resource: resource().build(),
        config: config(),
        expect_resource: Some(expect.build()),
        expected_result: result,
        ..Default::default()
    }
}

/// Reconciles the test resource, expecting `expect` and an error that passes `check`
/// together with `result` (Go's Verify).
fn fails_with(
    expect: TestObject,
    result: ReconcileResult,
    check: impl Fn(&ReconcileError) -> Result<(), String> + Send + Sync + 'static,
) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        should_err: true,
        verify: Some(Box::new(move |_, outcome| {
            if outcome.result != result {
                return Err(format!("result {:?}, expected {result:?}", outcome.result));
            }
            outcome.error.as_ref().map_or(Ok(()), &check)
        })),
        ..ok(expect, result)
    }
}

/// Like [`fails_with`], with the error's message.
fn fails(
    expect: TestObject,
    result: ReconcileResult,
    message: &'static str,
) -> SubReconcilerTestCase {
    fails_with(expect, result, move |err| match err.to_string() {
        actual if actual == message => Ok(()),
        actual => Err(format!("error {actual:?}, expected {message:?}")),
    })
}

/// Appends `value` to the list stashed under `key`.
fn push<T: Clone + Send + Sync + 'static>(ctx: &Context, key: &str, value: T) {
    let mut list: Vec<T> = ctx.stash().retrieve(key).unwrap_or_default();
    list.push(value);
    ctx.stash().store(key, list);
}

/// A SyncReconciler running a synchronous body.
fn sync(
    body: impl Fn(&Context, &mut DynamicObject) -> Outcome + Send + Sync + 'static,
) -> SyncReconciler {
    SyncReconciler::with_result(move |ctx, resource| body(ctx, resource))
}

/// A step that marks `spec.fields.<step>`, records its call and returns `outcome`.
fn mark(step: &'static str, outcome: Outcome) -> SyncReconciler {
    sync(move |ctx, resource| {
        set(resource, &format!("spec.fields.{step}"), "called");
        push(ctx, CALLS, step.to_string());
        outcome.clone()
    })
}

fn set(resource: &mut DynamicObject, path: &str, value: impl Into<Value>) {
    resource.set_field(path, value).expect("settable field");
}

fn holds(value: bool) -> Predicate<DynamicObject> {
    Predicate::new(move |_, _| value)
}

// ---- IfThen (Go: 4 cases) ----

/// Then requeues after 1s, Else after 2s; with `errors`, each fails with its name.
fn if_then(condition: bool, errors: bool, otherwise: bool) -> Boxed {
    let outcome = |secs, message| Outcome::with(after(secs), errors.then(|| fail(message)));
    let reconciler = IfThen::new(holds(condition), mark("then", outcome(1, "then error")));
    match otherwise {
        true => Box::new(reconciler.otherwise(mark("else", outcome(2, "else error")))),
        false => Box::new(reconciler),
    }
}

#[tokio::test]
async fn if_then_cases() {
    run_table([
        (
            "then",
            if_then(true, false, true),
            ok(called(&["then"]), after(1)),
        ),
        (
            "then error",
            if_then(true, true, true),
            fails(called(&["then"]), after(1), "then error"),
        ),
        (
            "else",
            if_then(false, false, true),
            ok(called(&["else"]), after(2)),
        ),
        (
            "else error",
            if_then(false, true, true),
            fails(called(&["else"]), after(2), "else error"),
        ),
        // Beyond Go: a false condition without Else does nothing.
        (
            "no else",
            if_then(false, false, false),
            ok(resource(), ReconcileResult::done()),
        ),
    ])
    .await;
}

// ---- While (Go: 5 cases) ----

/// Records the iteration in the stash, sets `spec.fields.iterations` to the iteration count
/// and requeues after `1000 - count` seconds; fails at iteration `fail_at`.
fn loop_body(fail_at: Option<usize>) -> SyncReconciler {
    sync(move |ctx, resource| {
        let iteration = ctx.iteration().expect("inside a loop");
        push(ctx, ITERATIONS, iteration);
        let count = iteration as u64 + 1;
        set(resource, "spec.fields.iterations", count.to_string());
        let error = (fail_at == Some(iteration)).then(|| fail("loop error"));
        Outcome::with(after(1000 - count), error)
    })
}

/// Holds until the iteration reaches `desired`.
fn until(desired: usize) -> Predicate<DynamicObject> {
    Predicate::new(move |ctx, _| ctx.iteration() != Some(desired))
}

/// Loops `desired` times, at most `max` (default 100).
fn counting(desired: usize, max: Option<usize>, fail_at: Option<usize>) -> Boxed {
    let reconciler = While::new(until(desired), loop_body(fail_at));
    match max {
        Some(max) => Box::new(reconciler.max_iterations(max)),
        None => Box::new(reconciler),
    }
}

/// `spec.fields.iterations` set to `count`.
fn counted(count: usize) -> TestObject {
    with_fields(json!({"iterations": count.to_string()}))
}

/// Expects the body to have seen `seen`, starting from an empty list.
fn iterations(
    case: SubReconcilerTestCase,
    seen: impl IntoIterator<Item = usize>,
) -> SubReconcilerTestCase {
    let seen: Vec<usize> = seen.into_iter().collect();
    SubReconcilerTestCase {
        given_stashed_values: vec![StashedValue::new(ITERATIONS, Vec::<usize>::new())],
        expect_stashed_values: vec![StashedValue::new(ITERATIONS, seen)],
        ..case
    }
}

/// Expects the loop to stop at `max` iterations with `result`.
fn exceeded(max: usize, result: ReconcileResult) -> SubReconcilerTestCase {
    let case = fails_with(counted(max), result, move |err| {
        let expected = MaxIterationsExceeded { iterations: max };
        let message = format!("exceeded max iterations: {max}");
        match (err.find_cause::<MaxIterationsExceeded>(), err.to_string()) {
            (Some(cause), actual) if *cause == expected && actual == message => Ok(()),
            (_, actual) => Err(format!("error {actual:?}, expected {message:?}")),
        }
    });
    iterations(case, 0..max)
}

#[tokio::test]
async fn while_cases() {
    run_table([
        (
            "return immediately",
            counting(0, None, None),
            iterations(ok(resource(), ReconcileResult::done()), 0..0),
        ),
        (
            "return after 10 iterations",
            counting(10, None, None),
            iterations(ok(counted(10), after(990)), 0..10),
        ),
        (
            "halt after default max iterations",
            counting(1000, None, None),
            exceeded(100, after(900)),
        ),
        (
            "return before custom max iterations",
            counting(5, Some(10), None),
            iterations(ok(counted(5), after(995)), 0..5),
        ),
        (
            "halt after custom max iterations",
            counting(1000, Some(10), None),
            exceeded(10, after(990)),
        ),
        // Beyond Go: 0 means no limit.
        (
            "no limit",
            counting(150, Some(0), None),
            iterations(ok(counted(150), after(850)), 0..150),
        ),
        // Beyond Go: an error stops the loop; the failing iteration's result is kept.
        (
            "error stops the loop",
            counting(10, None, Some(2)),
            iterations(fails(counted(3), after(997), "loop error"), 0..3),
        ),
        // Beyond Go: the body sees the iteration of the innermost loop.
        (
            "nested loops",
            Box::new(While::new(until(2), While::new(until(2), loop_body(None)))),
            iterations(ok(counted(2), after(998)), [0, 1, 0, 1]),
        ),
    ])
    .await;
}

// ---- ForEach (Go: 3 cases) ----

/// The items of `each_container`: the pod template's containers.
fn containers(_: &Context, resource: &DynamicObject) -> Result<Vec<Container>, ReconcileError> {
    let containers = resource.field_as::<Vec<Container>>("spec.template.spec.containers");
    containers
        .map(Option::unwrap_or_default)
        .map_err(|_| fail("containers are not a list"))
}

/// Loops over the pod template's containers: each sets `status.fields.<name>` to
/// `<image>-<index>-<length>` and requeues after `10 - index` seconds; the container named
/// "die" fails (requeuing after 1s, which the loop drops, as Go does).
fn each_container() -> ForEach<Container> {
    let body = sync(|ctx, resource| {
        let cursor = Cursor::<Container>::retrieve(ctx).expect("a cursor is stashed");
        let Container { name, image, .. } = cursor.item;
        if name == "die" {
            return Outcome::with(after(1), Some(fail("exit early")));
        }
        let value = format!(
            "{}-{}-{}",
            image.unwrap_or_default(),
            cursor.index,
            cursor.length
        );
        set(resource, &format!("status.fields.{name}"), value);
        Outcome::ok(after(10 - cursor.index as u64))
    });
    ForEach::new(containers, body)
}

fn container(name: &str, image: &str) -> Container {
    Container {
        name: name.into(),
        image: Some(image.into()),
        ..Container::default()
    }
}

/// The test resource with these containers in its pod template.
fn with_containers(containers: &[(&str, &str)]) -> TestObject {
    let containers: Vec<Container> = containers.iter().map(|(n, i)| container(n, i)).collect();
    resource().field("spec.template.spec.containers", json!(containers))
}

/// The cursor stashed under the key of container cursors.
fn cursor(index: usize, length: usize, item: Container) -> Vec<StashedValue> {
    let cursor = Cursor {
        index,
        length,
        item,
    };
    vec![StashedValue::new(&Cursor::<Container>::key(), cursor)]
}

#[tokio::test]
async fn for_each_cases() {
    let two = [("hello", "world"), ("foo", "bar")];
    let three = [("hello", "world"), ("die", "die"), ("foo", "bar")];
    let outer = || cursor(0, 1, container("outer", "loop"));
    SubReconcilerTests::from([
        (
            // An empty loop leaves an outer loop's cursor over containers in the stash.
            "empty items",
            SubReconcilerTestCase {
                given_stashed_values: outer(),
                expect_stashed_values: outer(),
                ..ok(resource(), ReconcileResult::done())
            },
        ),
        (
            // The last cursor stays stashed after the loop.
            "each container",
            SubReconcilerTestCase {
                resource: with_containers(&two).build(),
                expect_stashed_values: cursor(1, 2, container("foo", "bar")),
                ..ok(
                    with_containers(&two)
                        .status(json!({"fields": {"hello": "world-0-2", "foo": "bar-1-2"}})),
                    after(9),
                )
            },
        ),
        (
            // Only the iterations before the failing one count towards the result.
            "terminate iteration on error",
            SubReconcilerTestCase {
                resource: with_containers(&three).build(),
                expect_stashed_values: cursor(1, 3, container("die", "die")),
                ..fails(
                    with_containers(&three).status(json!({"fields": {"hello": "world-0-3"}})),
                    after(10),
                    "exit early",
                )
            },
        ),
        (
            // Beyond Go: an error from Items is returned.
            "items error",
            SubReconcilerTestCase {
                resource: resource()
                    .field("spec.template.spec.containers", "none")
                    .build(),
                ..fails(
                    resource().field("spec.template.spec.containers", "none"),
                    ReconcileResult::done(),
                    "containers are not a list",
                )
            },
        ),
    ])
    .run(|_, _| Box::new(each_container()) as Boxed)
    .await;
}

// ---- TryCatch (Go: 6 cases) ----

type Catch = fn(Outcome) -> Outcome;

fn rethrow(outcome: Outcome) -> Outcome {
    outcome
}

fn suppress(outcome: Outcome) -> Outcome {
    Outcome::ok(outcome.result)
}

fn inject(_: Outcome) -> Outcome {
    Outcome::with(after(2), Some(fail("catch")))
}

/// Try requeues after 3s (failing with "try" if `try_fails`); Catch (if any) marks
/// `spec.fields.catch` and applies `catch`; Finally (if any) is a step returning `finally`.
fn try_catch(try_fails: bool, catch: Option<Catch>, finally: Option<Outcome>) -> Boxed {
    let tried = Outcome::with(after(3), try_fails.then(|| fail("try")));
    let mut reconciler = TryCatch::new(mark("try", tried));
    if let Some(catch) = catch {
        reconciler = reconciler.catch(move |ctx, resource, outcome| {
            set(resource, "spec.fields.catch", "called");
            push(ctx, CALLS, "catch".to_string());
            let caught = catch(outcome);
            Box::pin(async move { caught })
        });
    }
    if let Some(finally) = finally {
        reconciler = reconciler.finally(mark("finally", finally));
    }
    Box::new(reconciler)
}

/// Expects the steps to have been called in this order.
fn in_order(case: SubReconcilerTestCase, steps: &[&str]) -> SubReconcilerTestCase {
    let steps: Vec<String> = steps.iter().map(|s| s.to_string()).collect();
    SubReconcilerTestCase {
        expect_stashed_values: vec![StashedValue::new(CALLS, steps)],
        ..case
    }
}

#[tokio::test]
async fn try_catch_cases() {
    let caught = || called(&["try", "catch"]);
    let finished = || called(&["try", "catch", "finally"]);
    let try_catch_order = ["try", "catch"];
    let all = ["try", "catch", "finally"];
    let finally_ok = || Some(Outcome::ok(after(1)));
    run_table([
        (
            "catch rethrow",
            try_catch(true, Some(rethrow), None),
            in_order(fails(caught(), after(3), "try"), &try_catch_order),
        ),
        (
            "catch and suppress error",
            try_catch(true, Some(suppress), None),
            in_order(ok(caught(), after(3)), &try_catch_order),
        ),
        (
            "catch and inject error",
            try_catch(false, Some(inject), None),
            in_order(fails(caught(), after(2), "catch"), &try_catch_order),
        ),
        (
            "finally",
            try_catch(false, Some(rethrow), finally_ok()),
            in_order(ok(finished(), after(1)), &all),
        ),
        (
            "finally with try error",
            try_catch(true, Some(rethrow), finally_ok()),
            in_order(fails(finished(), after(1), "try"), &all),
        ),
        (
            "finally error overrides try error",
            try_catch(
                true,
                Some(rethrow),
                Some(Outcome::with(after(1), Some(fail("finally")))),
            ),
            in_order(fails(finished(), after(1), "finally"), &all),
        ),
        // Beyond Go: without Catch or Finally, Try's outcome stands.
        (
            "try alone",
            try_catch(true, None, None),
            in_order(fails(called(&["try"]), after(3), "try"), &["try"]),
        ),
    ])
    .await;
}

// ---- OverrideSetup (Go: 1 case) ----

#[tokio::test]
async fn override_setup_cases() {
    let reconciled = OverrideSetup::new()
        .reconciler(mark("reconciler", Outcome::ok(ReconcileResult::requeue())));
    let setup_only = OverrideSetup::new().with_setup(|_: &mut Setup| Ok(()));
    run_table([
        (
            "calls reconcile",
            Box::new(reconciled),
            ok(called(&["reconciler"]), ReconcileResult::requeue()),
        ),
        // Beyond Go: with only a setup, a reconcile does nothing.
        (
            "setup only",
            Box::new(setup_only),
            ok(resource(), ReconcileResult::done()),
        ),
    ])
    .await;
}

// ---- validation and setup ----

fn noop() -> TestReconciler {
    TestReconciler::new(|_, _| Outcome::done())
}

fn invalid() -> TestReconciler {
    noop().invalid("TestReconciler is invalid")
}

fn no_items(_: &Context, _: &DynamicObject) -> Result<Vec<Container>, ReconcileError> {
    Ok(vec![])
}

/// The Go `_Validate` cases that can be built here (Go's "must implement If/Then/Items/
/// Condition/Try/Reconciler" cannot: the constructors require them).
#[test]
fn validation() {
    let nested = |owner: &str, field: &str| {
        Err(format!(
            "{owner} must have a valid {field}: TestReconciler is invalid"
        ))
    };
    let cases: Vec<(&str, Boxed, Result<(), String>)> = vec![
        ("IfThen valid", Box::new(IfThen::new(holds(true), noop())), Ok(())),
        (
            "IfThen with else",
            Box::new(IfThen::new(holds(true), noop()).otherwise(noop())),
            Ok(()),
        ),
        (
            "IfThen invalid then",
            Box::new(IfThen::new(holds(true), invalid())),
            nested(r#"IfThen "IfThen""#, "Then"),
        ),
        (
            "IfThen invalid else",
            Box::new(IfThen::new(holds(true), noop()).otherwise(invalid()).named("branch")),
            nested(r#"IfThen "branch""#, "Else"),
        ),
        ("While valid", Box::new(While::new(holds(false), noop())), Ok(())),
        (
            "While invalid reconciler",
            Box::new(While::new(holds(false), invalid())),
            nested(r#"While "While""#, "Reconciler"),
        ),
        ("ForEach valid", Box::new(ForEach::new(no_items, noop())), Ok(())),
        (
            "ForEach invalid reconciler",
            Box::new(ForEach::new(no_items, invalid()).named("invalid reconciler")),
            nested(r#"ForEach "invalid reconciler""#, "Reconciler"),
        ),
        ("TryCatch valid", Box::new(TryCatch::new(noop())), Ok(())),
        (
            "TryCatch with catch and finally",
            Box::new(TryCatch::new(noop()).catch(|_, _, o| Box::pin(async move { o })).finally(noop())),
            Ok(()),
        ),
        (
            "TryCatch invalid try",
            Box::new(TryCatch::new(invalid())),
            nested(r#"TryCatch "TryCatch""#, "Try"),
        ),
        (
            "TryCatch invalid finally",
            Box::new(TryCatch::new(noop()).finally(invalid())),
            nested(r#"TryCatch "TryCatch""#, "Finally"),
        ),
        (
            "OverrideSetup with reconciler",
            Box::new(OverrideSetup::new().reconciler(noop())),
            Ok(()),
        ),
        (
            "OverrideSetup with setup",
            Box::new(OverrideSetup::new().with_setup(|_: &mut Setup| Ok(()))),
            Ok(()),
        ),
        (
            "OverrideSetup with reconciler and setup",
            Box::new(
                OverrideSetup::new()
                    .reconciler(noop())
                    .with_setup(|_: &mut Setup| Ok(())),
            ),
            Ok(()),
        ),
        (
            "OverrideSetup missing reconciler or setup",
            Box::new(OverrideSetup::new().named("missing reconciler or setup")),
            Err(r#"OverrideSetup "missing reconciler or setup" must implement at least one of Setup or Reconciler"#.into()),
        ),
        (
            "OverrideSetup invalid reconciler",
            Box::new(OverrideSetup::new().reconciler(invalid())),
            nested(r#"OverrideSetup "SkipSetup""#, "Reconciler"),
        ),
    ];
    for (name, reconciler, expected) in cases {
        let actual = reconciler.validate().map_err(|err| err.to_string());
        assert_eq!(actual, expected, "{name}");
    }
}

/// Each composite declares its nested reconcilers' watches; OverrideSetup only its own.
#[test]
fn setup() {
    let config_maps = Gvk::new("", "v1", "ConfigMap");
    let secrets = Gvk::new("", "v1", "Secret");
    let watching = |gvk: &Gvk| noop().watching(gvk.clone());
    let both = vec![
        Watch::Tracked(config_maps.clone()),
        Watch::Tracked(secrets.clone()),
    ];
    let own_setup = secrets.clone();
    let cases: Vec<(&str, Boxed, Vec<Watch>)> = vec![
        (
            "IfThen",
            Box::new(
                IfThen::new(holds(true), watching(&config_maps)).otherwise(watching(&secrets)),
            ),
            both.clone(),
        ),
        (
            "While",
            Box::new(While::new(holds(false), watching(&config_maps))),
            vec![Watch::Tracked(config_maps.clone())],
        ),
        (
            "ForEach",
            Box::new(ForEach::new(no_items, watching(&config_maps))),
            vec![Watch::Tracked(config_maps.clone())],
        ),
        (
            "TryCatch",
            Box::new(TryCatch::new(watching(&config_maps)).finally(watching(&secrets))),
            both,
        ),
        (
            "OverrideSetup",
            Box::new(
                OverrideSetup::new()
                    .with_setup(move |setup: &mut Setup| {
                        setup.watch(Watch::Owns(own_setup.clone()));
                        Ok(())
                    })
                    .reconciler(watching(&config_maps)),
            ),
            vec![Watch::Owns(secrets.clone())],
        ),
    ];
    for (name, reconciler, expected) in cases {
        let mut setup = Setup::default();
        reconciler.setup(&mut setup).unwrap();
        assert_eq!(setup.watches(), expected, "{name}");
    }
}
