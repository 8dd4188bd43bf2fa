//! Sequence and Always: how results and errors of their children combine (spec 8.1, 8.2).

mod flow_common;

use dynrec::reconcilers::{
    Always, Markers, Outcome, ReconcileError, ReconcileResult, Sequence, SubReconciler,
};
use flow_common::{TestReconciler, after, called, context, fail, resource, start};
use kube::api::DynamicObject;

/// One child: the outcome it returns.
fn step(result: ReconcileResult, error: Option<ReconcileError>) -> Outcome {
    Outcome::with(result, error)
}

fn ok(result: ReconcileResult) -> Outcome {
    Outcome::ok(result)
}

/// Children `s0`, `s1`, ... that mark themselves as called and return the given outcomes.
fn children(steps: &[Outcome]) -> Vec<Box<dyn SubReconciler<DynamicObject>>> {
    steps
        .iter()
        .enumerate()
        .map(|(i, outcome)| {
            Box::new(TestReconciler::marking(&format!("s{i}"), outcome.clone()))
                as Box<dyn SubReconciler<DynamicObject>>
        })
        .collect()
}

struct Case {
    name: &'static str,
    steps: Vec<Outcome>,
    result: ReconcileResult,
    error: Option<&'static str>,
    markers: Markers,
    called: &'static [&'static str],
}

fn markers(quiet: bool, halt: bool, skip: bool, durable: bool) -> Markers {
    Markers {
        quiet,
        halt,
        skip_status_update: skip,
        durable,
    }
}

fn none() -> Markers {
    Markers::default()
}

type Children = Vec<Box<dyn SubReconciler<DynamicObject>>>;

async fn run(cases: Vec<Case>, build: fn(Children) -> Box<dyn SubReconciler<DynamicObject>>) {
    let (_server, config) = start();
    for case in cases {
        let reconciler = build(children(&case.steps));
        reconciler.validate().unwrap();
        let mut object = resource();
        let outcome = reconciler.reconcile(&context(&config), &mut object).await;
        assert_eq!(
            outcome.result.normalized(),
            case.result,
            "{}: result",
            case.name
        );
        let message = outcome.error.as_ref().map(ToString::to_string);
        assert_eq!(message.as_deref(), case.error, "{}: error", case.name);
        let found = outcome.error.map(|e| e.markers()).unwrap_or_default();
        assert_eq!(found, case.markers, "{}: markers", case.name);
        assert_eq!(called(&object), case.called, "{}: called", case.name);
    }
}

fn sequence(
    children: Vec<Box<dyn SubReconciler<DynamicObject>>>,
) -> Box<dyn SubReconciler<DynamicObject>> {
    Box::new(Sequence::new(children))
}

fn always(
    children: Vec<Box<dyn SubReconciler<DynamicObject>>>,
) -> Box<dyn SubReconciler<DynamicObject>> {
    Box::new(Always::new(children))
}

/// The cases where no child fails: Sequence and Always aggregate them alike.
fn aggregation_cases() -> Vec<Case> {
    let done = ReconcileResult::done();
    let requeue = ReconcileResult::requeue();
    vec![
        Case {
            name: "empty",
            steps: vec![],
            result: done,
            error: None,
            markers: none(),
            called: &[],
        },
        Case {
            name: "single done",
            steps: vec![ok(done)],
            result: done,
            error: None,
            markers: none(),
            called: &["s0"],
        },
        Case {
            name: "single requeue",
            steps: vec![ok(requeue)],
            result: requeue,
            error: None,
            markers: none(),
            called: &["s0"],
        },
        Case {
            name: "single requeue after",
            steps: vec![ok(after(1))],
            result: after(1),
            error: None,
            markers: none(),
            called: &["s0"],
        },
        Case {
            name: "requeue and requeue after",
            steps: vec![ok(requeue), ok(after(1))],
            result: after(1),
            error: None,
            markers: none(),
            called: &["s0", "s1"],
        },
        Case {
            name: "shortest requeue after wins",
            steps: vec![ok(after(2)), ok(after(1)), ok(after(3))],
            result: after(1),
            error: None,
            markers: none(),
            called: &["s0", "s1", "s2"],
        },
    ]
}

#[tokio::test]
async fn sequence_aggregates_results_and_stops_at_the_first_error() {
    let done = ReconcileResult::done();
    let requeue = ReconcileResult::requeue();
    let mut cases = aggregation_cases();
    cases.extend([
        Case {
            name: "done does not clear a requeue after",
            steps: vec![ok(after(2)), ok(done)],
            result: after(2),
            error: None,
            markers: none(),
            called: &["s0", "s1"],
        },
        Case {
            name: "ignores result on err",
            steps: vec![
                ok(after(1)),
                step(after(2), Some(fail("boom"))),
                ok(after(3)),
            ],
            result: after(2),
            error: Some("boom"),
            markers: none(),
            called: &["s0", "s1"],
        },
        Case {
            name: "error with empty result drops earlier results",
            steps: vec![ok(requeue), step(done, Some(fail("boom")))],
            result: done,
            error: Some("boom"),
            markers: none(),
            called: &["s0", "s1"],
        },
        Case {
            name: "preserves result, sub reconciler halted",
            steps: vec![
                ok(after(1)),
                step(after(2), Some(ReconcileError::halt())),
                ok(after(3)),
            ],
            result: after(2),
            error: Some("stop processing SubReconcilers, without returning an error"),
            markers: markers(true, true, false, false),
            called: &["s0", "s1"],
        },
        Case {
            name: "quiet error stops",
            steps: vec![step(done, Some(ReconcileError::quiet())), ok(after(1))],
            result: done,
            error: Some("quiet errors are returned as errors, but not logged or recorded"),
            markers: markers(true, false, false, false),
            called: &["s0"],
        },
        Case {
            name: "skip status update stops",
            steps: vec![
                step(requeue, Some(ReconcileError::skip_status_update())),
                ok(after(1)),
            ],
            result: requeue,
            error: Some("skip status update"),
            markers: markers(false, false, true, false),
            called: &["s0"],
        },
        Case {
            name: "durable stops",
            steps: vec![
                ok(after(5)),
                step(done, Some(ReconcileError::durable())),
                ok(after(1)),
            ],
            result: done,
            error: Some("durable error"),
            markers: markers(true, true, false, true),
            called: &["s0", "s1"],
        },
    ]);
    assert_eq!(cases.len(), 13);
    run(cases, sequence).await;
}

#[tokio::test]
async fn always_calls_everything_and_keeps_only_loud_errors() {
    let done = ReconcileResult::done();
    let requeue = ReconcileResult::requeue();
    let quiet = || ReconcileError::msg("hush").with_quiet();
    let mut cases = aggregation_cases();
    cases.extend([
        Case {
            name: "error does not stop",
            steps: vec![ok(after(3)), step(done, Some(fail("boom"))), ok(after(2))],
            result: after(2),
            error: Some("boom"),
            markers: none(),
            called: &["s0", "s1", "s2"],
        },
        Case {
            name: "result of the failing reconciler is kept",
            steps: vec![step(after(1), Some(fail("boom"))), ok(after(2))],
            result: after(1),
            error: Some("boom"),
            markers: none(),
            called: &["s0", "s1"],
        },
        Case {
            name: "errors are joined",
            steps: vec![
                step(done, Some(fail("a"))),
                ok(done),
                step(done, Some(fail("b"))),
            ],
            result: done,
            error: Some("a\nb"),
            markers: none(),
            called: &["s0", "s1", "s2"],
        },
        Case {
            name: "quiet error dropped next to a loud one",
            steps: vec![step(done, Some(quiet())), step(done, Some(fail("loud")))],
            result: done,
            error: Some("loud"),
            markers: none(),
            called: &["s0", "s1"],
        },
        Case {
            name: "only quiet errors are joined and quiet",
            steps: vec![step(done, Some(quiet())), step(requeue, Some(quiet()))],
            result: requeue,
            error: Some("hush\nhush"),
            markers: markers(true, false, false, false),
            called: &["s0", "s1"],
        },
        Case {
            name: "halt does not stop",
            steps: vec![step(after(2), Some(ReconcileError::halt())), ok(after(1))],
            result: after(1),
            error: Some("stop processing SubReconcilers, without returning an error"),
            markers: markers(true, true, false, false),
            called: &["s0", "s1"],
        },
        Case {
            name: "durable dropped next to a loud error",
            steps: vec![
                step(done, Some(ReconcileError::durable())),
                step(done, Some(fail("loud"))),
            ],
            result: done,
            error: Some("loud"),
            markers: none(),
            called: &["s0", "s1"],
        },
        Case {
            name: "skip status update is loud",
            steps: vec![
                step(done, Some(ReconcileError::skip_status_update())),
                step(done, Some(quiet())),
            ],
            result: done,
            error: Some("skip status update"),
            markers: markers(false, false, true, false),
            called: &["s0", "s1"],
        },
        Case {
            name: "quiet joined with halt keeps both markers",
            steps: vec![
                step(done, Some(quiet())),
                step(done, Some(ReconcileError::halt())),
            ],
            result: done,
            error: Some("hush\nstop processing SubReconcilers, without returning an error"),
            markers: markers(true, true, false, false),
            called: &["s0", "s1"],
        },
    ]);
    assert_eq!(cases.len(), 15);
    run(cases, always).await;
}

#[test]
fn sequence_and_always_validate_every_child_with_its_index() {
    let invalid = || -> Vec<Box<dyn SubReconciler<DynamicObject>>> {
        vec![
            Box::new(TestReconciler::new(|_, _| Outcome::done())),
            Box::new(
                TestReconciler::new(|_, _| Outcome::done()).invalid("TestReconciler is invalid"),
            ),
        ]
    };
    assert_eq!(
        Sequence::new(invalid()).validate().unwrap_err().to_string(),
        "Sequence must have a valid Sequence[1]: TestReconciler is invalid"
    );
    assert_eq!(
        Always::new(invalid()).validate().unwrap_err().to_string(),
        "Always must have a valid Always[1]: TestReconciler is invalid"
    );
    let nested = Sequence::new(vec![Box::new(Always::new(invalid()))]);
    assert_eq!(
        nested.validate().unwrap_err().to_string(),
        "Sequence must have a valid Sequence[0]: Always must have a valid Always[1]: TestReconciler is invalid"
    );
    assert!(Sequence::<DynamicObject>::new(vec![]).validate().is_ok());
}

#[test]
fn sequence_and_always_set_up_every_child() {
    use dynrec::object::Gvk;
    use dynrec::reconcilers::{Setup, Watch};
    let a = Gvk::new("", "v1", "ConfigMap");
    let b = Gvk::new("", "v1", "Secret");
    let children = || -> Vec<Box<dyn SubReconciler<DynamicObject>>> {
        vec![
            Box::new(
                TestReconciler::new(|_, _| Outcome::done()).watching(Gvk::new(
                    "",
                    "v1",
                    "ConfigMap",
                )),
            ),
            Box::new(
                TestReconciler::new(|_, _| Outcome::done()).watching(Gvk::new("", "v1", "Secret")),
            ),
        ]
    };
    for reconciler in [sequence(children()), always(children())] {
        let mut setup = Setup::default();
        reconciler.setup(&mut setup).unwrap();
        assert_eq!(
            setup.watches(),
            &[Watch::Tracked(a.clone()), Watch::Tracked(b.clone())]
        );
    }
}
