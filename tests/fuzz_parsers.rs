//! Property tests (proptest, stable Rust) of the parsers that read user input: the field
//! path parser, CEL compilation, the definition loader, and merge patches. None may panic;
//! a computed merge patch, applied, reproduces its target.

use dynrec::definitions::parse_documents;
use dynrec::object::{FieldPath, merge_patch};
use dynrec::reconcilers::Predicate;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestRunner};
use serde_json::Value;

/// Runs `cases` cases of `strategy` through `test` and says how many ran.
fn run<S: Strategy>(
    what: &str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    runner.run(&strategy, test).unwrap();
    println!("{what}: {cases} cases");
}

/// Text that looks like the input a parser gets, plus anything at all.
fn text(alphabet: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        proptest::string::string_regex(alphabet).unwrap(),
    ]
}

#[test]
fn the_path_parser_never_panics_and_its_output_parses_again() {
    run(
        "path parser",
        3000,
        text(r#"[a-zA-Z0-9_.\[\]'"\\ -]{0,40}"#),
        |input| {
            if let Ok(path) = FieldPath::parse(&input) {
                let shown = path.to_string();
                let again = FieldPath::parse(&shown);
                prop_assert!(
                    again.is_ok(),
                    "{input:?} shows as {shown:?}, which does not parse"
                );
                let again = again.unwrap();
                prop_assert_eq!(again.segments(), path.segments());
            }
            Ok(())
        },
    );
}

#[test]
fn cel_compilation_of_any_text_never_panics() {
    run(
        "CEL compile",
        1500,
        text(r#"[a-z.()\[\]{}<>=!&|?:+\-*/%'" 0-9,]{0,40}"#),
        |input| {
            let _ = Predicate::<serde_json::Value>::cel(&input);
            Ok(())
        },
    );
}

const WIDGETS: &str = include_str!("../examples/definitions/widgets.yaml");

/// A valid definition with a few random edits: bytes cut, inserted or replaced.
fn mutated_definition() -> impl Strategy<Value = String> {
    let edit = (
        any::<prop::sample::Index>(),
        0usize..12,
        "[ :\\-\\[\\]{}$'\"a-z0-9\n#&*!|>]{0,6}",
    );
    prop::collection::vec(edit, 1..6).prop_map(|edits| {
        let mut text = WIDGETS.to_string();
        for (at, cut, insert) in edits {
            let mut start = at.index(text.len().max(1));
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = (start + cut).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            text.replace_range(start..end, &insert);
        }
        text
    })
}

#[test]
fn the_definition_loader_never_panics() {
    run(
        "definition loader, any text",
        500,
        any::<String>(),
        |input| {
            let _ = parse_documents(&input, "fuzz.yaml");
            Ok(())
        },
    );
    run(
        "definition loader, mutated widgets definition",
        400,
        mutated_definition(),
        |input| {
            let _ = parse_documents(&input, "fuzz.yaml");
            Ok(())
        },
    );
}

/// JSON without nulls (a merge patch cannot set a null).
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-d]", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn a_computed_merge_patch_reproduces_its_target() {
    run("merge patch", 2000, (json(), json()), |(from, to)| {
        let patch = merge_patch(&from, &to);
        let mut applied = from.clone();
        json_patch::merge(&mut applied, &patch);
        prop_assert_eq!(applied, to);
        Ok(())
    });
}
