//! Sequence and Always table tests (reconciler.io's sequence_test.go and
//! always_test.go): how the results and errors of their children combine. Plus their
//! validation and setup cascading as plain tests.

mod flow_common;
mod harness_common;

use std::collections::BTreeMap;
use std::time::Duration;

use dynrec::object::{Fields, Gvk};
use dynrec::reconcilers::{
    Always, Draft, Markers, Outcome, ReconcileError, ReconcileResult, Sequence, Setup,
    SubReconciler, SyncReconciler, Watch,
};
use dynrec::testing::{SubReconcilerTestCase, TestObject, TestTable, VerifyResource};
use flow_common::TestReconciler;
use harness_common::{config, resource};
use serde_json::json;

type Children = Vec<Box<dyn SubReconciler>>;

/// Builds a Sequence or an Always of children.
type Composite = fn(Children) -> Box<dyn SubReconciler>;

fn new_sequence(children: Children) -> Box<dyn SubReconciler> {
    Box::new(Sequence::new(children))
}

fn new_always(children: Children) -> Box<dyn SubReconciler> {
    Box::new(Always::new(children))
}

/// The message of `ReconcileError::halt()` (reconciler.io's `ErrHaltSubReconcilers`).
const HALTED: &str = "stop processing SubReconcilers, without returning an error";

/// The field a child writes to show that it ran (`status.fields.still-running`).
const STILL_RUNNING: &str = "/status/fields/still-running";

fn minutes(n: u64) -> ReconcileResult {
    ReconcileResult::requeue_after(Duration::from_secs(60 * n))
}

fn done() -> ReconcileResult {
    ReconcileResult::done()
}

fn fail(message: &str) -> ReconcileError {
    ReconcileError::msg(message)
}

/// A child of the composite: a SyncReconciler that may write [`STILL_RUNNING`], then
/// returns its outcome.
#[derive(Clone)]
struct Child {
    writes: bool,
    outcome: Outcome,
}

impl Child {
    fn reconciler(&self) -> Box<dyn SubReconciler> {
        let Child { writes, outcome } = self.clone();
        Box::new(SyncReconciler::with_result(move |_ctx, r: &mut Draft| {
            if writes {
                r.set_field(STILL_RUNNING, "true").unwrap();
            }

            outcome.clone()
        }))
    }
}

/// A child returning `result` without error.
fn ok(result: ReconcileResult) -> Child {
    erring(result, None)
}

/// A child returning `result` and `error`.
fn erring(result: ReconcileResult, error: impl Into<Option<ReconcileError>>) -> Child {
    Child {
        writes: false,
        outcome: Outcome::with(result, error.into()),
    }
}

/// A child that writes [`STILL_RUNNING`] and succeeds.
fn still_running() -> Child {
    Child {
        writes: true,
        ..ok(done())
    }
}

/// reconciler.io's "ignores result on err" child (a requeue with an error) after one that
/// asks for 1m, to show what becomes of the earlier result.
fn result_then_error() -> Vec<Child> {
    vec![
        ok(minutes(1)),
        erring(ReconcileResult::requeue(), fail("test error")),
    ]
}

/// The error a case expects: its message and markers.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Failure {
    message: &'static str,
    markers: Markers,
}

/// A loud error (no markers).
fn loud(message: &'static str) -> Option<Failure> {
    Some(Failure {
        message,
        markers: Markers::default(),
    })
}

/// The halt error: quiet and halting.
fn halted() -> Option<Failure> {
    Some(Failure {
        message: HALTED,
        markers: Markers {
            quiet: true,
            halt: true,
            ..Markers::default()
        },
    })
}

/// One row of reconciler.io's table: the children, then what the composite returns and
/// whether the [`STILL_RUNNING`] child wrote the resource.
struct Case {
    children: Vec<Child>,
    result: ReconcileResult,
    error: Option<Failure>,
    written: bool,
}

/// A case whose children all succeed.
fn aggregates(children: Vec<Child>, result: ReconcileResult) -> Case {
    returns(children, result, None)
}

/// A case returning `result` and `error`, leaving the resource unchanged.
fn returns(children: Vec<Child>, result: ReconcileResult, error: Option<Failure>) -> Case {
    Case {
        children,
        result,
        error,
        written: false,
    }
}

/// reconciler.io's fixture: the TestResource with a Ready condition, Unknown "Initializing".
fn initializing() -> TestObject {
    resource().status(json!({
        "conditions": [{"type": "Ready", "status": "Unknown", "reason": "Initializing"}]
    }))
}

/// Checks the result (normalized) and the error with its markers, also when the reconcile
/// fails (the harness compares the result only without an error, like reconciler.io's).
fn outcome_is(result: ReconcileResult, error: Option<Failure>) -> VerifyResource {
    Box::new(move |_, outcome| {
        let actual = outcome.result.normalized();
        if actual != result.normalized() {
            return Err(format!("result {actual:?}, expected {result:?}"));
        }
        let found = outcome.error.as_ref().map(|e| (e.to_string(), e.markers()));
        let expected = error.map(|f| (f.message.to_string(), f.markers));
        match found == expected {
            true => Ok(()),
            false => Err(format!("error {found:?}, expected {expected:?}")),
        }
    })
}

impl Case {
    fn test_case(&self) -> SubReconcilerTestCase {
        let expect = match self.written {
            true => initializing().field(STILL_RUNNING, "true"),
            false => initializing(),
        };
        SubReconcilerTestCase {
            resource: initializing().build(),
            expect_resource: Some(expect.build()),
            should_err: self.error.is_some(),
            expected_result: self.result,
            verify: Some(outcome_is(self.result, self.error)),
            config: config(),
            ..Default::default()
        }
    }
}

/// The cases both composites share: no child fails, so they aggregate alike.
/// reconciler.io's "preserves result, Requeue" cases test a bare SyncReconciler (a slip in
/// its suites); here the child is inside the composite.
fn aggregation_cases() -> Vec<(&'static str, Case)> {
    let (empty, requeue) = (done(), ReconcileResult::requeue());
    vec![
        (
            "preserves result, Requeue",
            aggregates(vec![ok(requeue)], requeue),
        ),
        (
            "preserves result, RequeueAfter",
            aggregates(vec![ok(minutes(1))], minutes(1)),
        ),
        (
            "Requeue + empty => Requeue",
            aggregates(vec![ok(requeue), ok(empty)], requeue),
        ),
        (
            "empty + Requeue => Requeue",
            aggregates(vec![ok(empty), ok(requeue)], requeue),
        ),
        (
            "RequeueAfter + empty => RequeueAfter",
            aggregates(vec![ok(minutes(1)), ok(empty)], minutes(1)),
        ),
        (
            "empty + RequeueAfter => RequeueAfter",
            aggregates(vec![ok(empty), ok(minutes(1))], minutes(1)),
        ),
        (
            "RequeueAfter + Requeue => RequeueAfter",
            aggregates(vec![ok(minutes(1)), ok(requeue)], minutes(1)),
        ),
        (
            "Requeue + RequeueAfter => RequeueAfter",
            aggregates(vec![ok(requeue), ok(minutes(1))], minutes(1)),
        ),
        (
            "RequeueAfter(1m) + RequeueAfter(2m) => RequeueAfter(1m)",
            aggregates(vec![ok(minutes(1)), ok(minutes(2))], minutes(1)),
        ),
        (
            "RequeueAfter(2m) + RequeueAfter(1m) => RequeueAfter(1m)",
            aggregates(vec![ok(minutes(2)), ok(minutes(1))], minutes(1)),
        ),
    ]
}

/// Runs `cases` (which must number `count`, reconciler.io's count) as a harness table, each
/// against `composite` of the case's children.
async fn run(cases: Vec<(&'static str, Case)>, count: usize, composite: Composite) {
    let cases: BTreeMap<String, Case> =
        cases.into_iter().map(|(n, c)| (n.to_string(), c)).collect();
    assert_eq!(cases.len(), count, "distinct cases");
    let table = TestTable(
        cases
            .iter()
            .map(|(n, c)| (n.clone(), c.test_case()))
            .collect(),
    );
    table
        .run(|case, _| {
            composite(
                cases[&case.name]
                    .children
                    .iter()
                    .map(Child::reconciler)
                    .collect(),
            )
        })
        .await;
}

#[tokio::test]
async fn sequence() {
    let mut cases = aggregation_cases();
    cases.extend([
        // A trailing child (not in reconciler.io's case) shows that the rest is skipped.
        (
            "sub reconciler erred",
            returns(
                vec![erring(done(), fail("reconciler error")), still_running()],
                done(),
                loud("reconciler error"),
            ),
        ),
        // The halting child's own result is returned (reconciler.io's expected 1m is never
        // compared, as the reconcile errs); the trailing child is skipped.
        (
            "preserves result, sub reconciler halted",
            returns(
                vec![
                    ok(minutes(1)),
                    erring(minutes(2), ReconcileError::halt()),
                    still_running(),
                ],
                minutes(2),
                halted(),
            ),
        ),
        // The earlier 1m is dropped: only the failing child's result is returned, as in
        // reconciler.io (whose case has no earlier child and does not compare the result).
        (
            "ignores result on err",
            returns(
                result_then_error(),
                ReconcileResult::requeue(),
                loud("test error"),
            ),
        ),
    ]);
    run(cases, 13, new_sequence).await;
}

#[tokio::test]
async fn always() {
    let mut cases = aggregation_cases();
    cases.extend([
        (
            "sub reconciler erred, keeps processing",
            Case {
                written: true,
                ..returns(
                    vec![erring(done(), fail("reconciler error")), still_running()],
                    done(),
                    loud("reconciler error"),
                )
            },
        ),
        (
            "non-quiet errors remain non-quiet",
            returns(
                vec![erring(done(), fail("not quiet")), ok(done())],
                done(),
                loud("not quiet"),
            ),
        ),
        // The quiet halt is dropped next to a loud error, as in reconciler.io's `Always`.
        (
            "mixed quiet and non-quiet errors are not quiet",
            returns(
                vec![
                    erring(done(), fail("not quiet")),
                    erring(done(), ReconcileError::halt()),
                ],
                done(),
                loud("not quiet"),
            ),
        ),
        (
            "quiet errors remain quiet",
            returns(
                vec![erring(done(), ReconcileError::halt()), ok(minutes(1))],
                minutes(1),
                halted(),
            ),
        ),
        // Unlike Sequence, the earlier 1m is kept next to the failing child's requeue.
        (
            "ignores result on err",
            returns(result_then_error(), minutes(1), loud("test error")),
        ),
    ]);
    run(cases, 15, new_always).await;
}

/// A reconciler that succeeds, valid or not.
fn child(invalid: bool) -> Box<dyn SubReconciler> {
    let child = TestReconciler::new(|_, _| Outcome::done());
    Box::new(match invalid {
        true => child.invalid("TestReconciler is invalid"),
        false => child,
    })
}

#[test]
fn sequence_and_always_validate_every_child_with_its_index() {
    let composites: [(&str, Composite); 2] = [("Sequence", new_sequence), ("Always", new_always)];
    for (kind, composite) in composites {
        assert!(composite(vec![]).validate().is_ok(), "{kind}: empty");
        assert!(
            composite(vec![child(false), child(false)])
                .validate()
                .is_ok(),
            "{kind}: valid"
        );
        assert_eq!(
            composite(vec![child(false), child(true)])
                .validate()
                .unwrap_err()
                .to_string(),
            format!("{kind} must have a valid {kind}[1]: TestReconciler is invalid")
        );
    }
    // Departure: reconciler.io skips an Always nested by value (its `Validate` has a pointer
    // receiver); we validate it.
    let nested = Sequence::new(vec![Box::new(Always::new(vec![child(false), child(true)]))]);
    assert_eq!(
        nested.validate().unwrap_err().to_string(),
        "Sequence must have a valid Sequence[0]: Always must have a valid Always[1]: TestReconciler is invalid"
    );
}

#[test]
fn sequence_and_always_set_up_every_child() {
    let (config_map, secret) = (
        Gvk::new("", "v1", "ConfigMap"),
        Gvk::new("", "v1", "Secret"),
    );
    let children = || -> Children {
        [&config_map, &secret]
            .map(|gvk| {
                Box::new(TestReconciler::new(|_, _| Outcome::done()).watching(gvk.clone())) as _
            })
            .into()
    };
    for composite in [new_sequence(children()), new_always(children())] {
        let mut setup = Setup::default();
        composite.setup(&mut setup).unwrap();
        assert_eq!(
            setup.watches(),
            &[
                Watch::Tracked(config_map.clone()),
                Watch::Tracked(secret.clone())
            ],
            "{}",
            composite.name()
        );
    }
}
