//! Kubernetes' semver library and cel-go's two-variable comprehensions, with the examples
//! their documentation gives (k8s.io/apiserver `library/semverlib.go`, cel-go
//! `ext/comprehensions.go`) and the errors they report.

use std::sync::Arc;

use cel::{Context, Env, Value};

fn env() -> Arc<Env> {
    let mut env = Env::stdlib();
    dynrec_k8s_cel::extension(&mut env).expect("the libraries register");
    Arc::new(env)
}

/// The value of `source`, or its compile or evaluation error.
fn eval(source: &str) -> Result<Value, String> {
    let env = env();
    let program = env.compile(source).map_err(|errors| {
        errors
            .errors
            .iter()
            .map(|e| format!("{}:{}: {}", e.pos.0, e.pos.1, e.msg))
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    program
        .execute(&Context::with_env(env))
        .map_err(|e| e.to_string())
}

fn assert_evaluates(source: &str, expected: &str) {
    let (got, want) = (eval(source), eval(expected));
    assert_eq!(got, want, "{source} should give {expected}");
}

fn error(source: &str) -> String {
    match eval(source) {
        Ok(value) => panic!("{source} gave {value:?}"),
        Err(message) => message,
    }
}

#[test]
fn semver_parses_compares_and_reads_as_kubernetes_documents() {
    for (source, expected) in [
        ("semver('1.2.3').major()", "1"),
        ("semver('1.2.3').minor()", "2"),
        ("semver('1.2.3').patch()", "3"),
        ("semver('0.1.0-alpha.1').minor()", "1"),
        ("semver('1.2.3').compareTo(semver('1.2.3'))", "0"),
        ("semver('1.2.3').compareTo(semver('2.0.0'))", "-1"),
        ("semver('1.2.3').compareTo(semver('0.1.2'))", "1"),
        ("semver('1.2.3').isGreaterThan(semver('1.2.2'))", "true"),
        ("semver('1.2.3').isLessThan(semver('1.10.0'))", "true"),
        ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", "true"),
        (
            "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",
            "true",
        ),
        ("semver('1.0.0-2').isLessThan(semver('1.0.0-10'))", "true"),
        (
            "semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))",
            "true",
        ),
        ("semver('1.0.0+build.1') == semver('1.0.0+build.2')", "true"),
        ("semver('1.0.0') == semver('1.0.1')", "false"),
        ("isSemver('1.0.0')", "true"),
        ("isSemver('hello')", "false"),
        ("isSemver('v1.0')", "false"),
        ("isSemver('v1.0', true)", "true"),
        ("semver('v1.0.0', true) == semver('1.0.0')", "true"),
        ("semver('1.0', true) == semver('1.0.0')", "true"),
        ("semver('01.01.01', true) == semver('1.1.1')", "true"),
    ] {
        assert_evaluates(source, expected);
    }
}

#[test]
fn a_bad_version_fails_in_blang_semvers_words() {
    for (source, message) in [
        ("semver('200K')", "No Major.Minor.Patch elements found"),
        ("semver('Three')", "No Major.Minor.Patch elements found"),
        ("semver('')", "Version string empty"),
        (
            "semver('v1.0.0')",
            "Invalid character(s) found in major number \"v1\"",
        ),
        (
            "semver('1.02.3')",
            "Minor number must not contain leading zeroes \"02\"",
        ),
        ("semver('1.2.3-')", "Prerelease is empty"),
        (
            "semver('1.2.3-01')",
            "Numeric PreRelease version must not contain leading zeroes \"01\"",
        ),
        (
            "semver('1.2.3+a_b')",
            "Invalid character(s) found in build meta data \"a_b\"",
        ),
        (
            "semver('1..3')",
            "strconv.ParseUint: parsing \"\": invalid syntax",
        ),
        (
            "semver('1.0-rc', true)",
            "short version cannot contain PreRelease/Build meta data",
        ),
    ] {
        let got = error(source);
        assert!(got.contains(message), "{source}: {got}");
        assert!(got.contains("semver"), "{source} names the function: {got}");
    }
}

#[test]
fn two_variable_quantifiers_give_cel_gos_documented_results() {
    for (source, expected) in [
        ("[1, 2, 3].all(i, j, i < j)", "true"),
        (
            "{'hello': 'world', 'taco': 'taco'}.all(k, v, k != v)",
            "false",
        ),
        (
            "{'h': ['hello', 'hi'], 'j': ['joke', 'jog']}.all(k, vals, vals.all(v, v.startsWith(k)))",
            "true",
        ),
        (
            "{'greeting': 'hello', 'farewell': 'goodbye'}.exists(k, v, k.startsWith('good') || v.endsWith('bye'))",
            "true",
        ),
        (
            "[1, 2, 4, 8, 16].exists(i, v, v == 1024 && i == 10)",
            "false",
        ),
        (
            "[1, 2, 1, 3, 1, 4].existsOne(i, v, i == 1 || v == 1)",
            "false",
        ),
        (
            "[1, 1, 2, 2, 3, 3].existsOne(i, v, i == 2 && v == 2)",
            "true",
        ),
        (
            "{'i': 0, 'j': 1, 'k': 2}.existsOne(i, v, i == 'l' || v == 1)",
            "true",
        ),
        ("[1, 1, 2].exists_one(i, v, v == 2)", "true"),
        // an error beside a deciding element does not decide, as for one variable
        ("[0, 1].all(i, v, 1 / v > 0 && false)", "false"),
        ("[0, 1].exists(i, v, 1 / v > 0)", "true"),
        // the one-variable forms are unchanged
        (
            "[1, 2].all(x, x > 0) && {'a': 1}.exists(k, k == 'a')",
            "true",
        ),
    ] {
        assert_evaluates(source, expected);
    }
}

#[test]
fn transforms_give_cel_gos_documented_results() {
    for (source, expected) in [
        (
            "[1, 2, 3].transformList(indexVar, valueVar, (indexVar * valueVar) + valueVar)",
            "[1, 4, 9]",
        ),
        (
            "[1, 2, 3].transformList(indexVar, valueVar, indexVar % 2 == 0, (indexVar * valueVar) + valueVar)",
            "[1, 9]",
        ),
        (
            "{'greeting': 'hello', 'farewell': 'goodbye'}.transformList(k, _, k)",
            "['farewell', 'greeting']",
        ),
        (
            "{'greeting': 'hello', 'farewell': 'goodbye'}.transformList(_, v, v)",
            "['goodbye', 'hello']",
        ),
        (
            "[1, 2, 3].transformMap(indexVar, valueVar, (indexVar * valueVar) + valueVar)",
            "{0: 1, 1: 4, 2: 9}",
        ),
        (
            "[1, 2, 3].transformMap(indexVar, valueVar, indexVar % 2 == 0, (indexVar * valueVar) + valueVar)",
            "{0: 1, 2: 9}",
        ),
        (
            "{'greeting': 'hello'}.transformMap(k, v, v + '!')",
            "{'greeting': 'hello!'}",
        ),
        (
            "{'greeting': 'hello'}.transformMapEntry(keyVar, valueVar, {valueVar: keyVar})",
            "{'hello': 'greeting'}",
        ),
        (
            "[1, 2, 3].transformMapEntry(indexVar, valueVar, {valueVar: indexVar})",
            "{1: 0, 2: 1, 3: 2}",
        ),
        (
            "{'a': 1, 'b': 2}.transformMapEntry(k, v, v > 1, {k + k: v})",
            "{'bb': 2}",
        ),
        ("[].transformList(i, v, v)", "[]"),
        ("{}.transformMap(k, v, v)", "{}"),
        // the target is evaluated once, and nested comprehensions see their own
        (
            "[[1, 2], [3]].transformList(i, row, row.transformList(j, v, v * 10 + i))",
            "[[10, 20], [31]]",
        ),
    ] {
        assert_evaluates(source, expected);
    }
}

#[test]
fn comprehension_mistakes_are_errors_at_their_place() {
    let duplicate = error(
        "{'greeting': 'aloha', 'farewell': 'aloha'}.transformMapEntry(keyVar, valueVar, {valueVar: keyVar})",
    );
    assert!(
        duplicate.contains("insert failed: key aloha already exists"),
        "{duplicate}"
    );
    let name = error("[1].all(1 + 2, v, true)");
    assert!(name.contains("argument must be a simple name"), "{name}");
    assert!(
        name.contains("1:11"),
        "points at the argument, as cel-go does: {name}"
    );
    let same = error("[1].all(i, i, true)");
    assert!(same.contains("duplicate variable name: i"), "{same}");
    let accumulator = error("[1].transformList(__result__, v, v)");
    assert!(
        accumulator.contains("iteration variable overwrites accumulator variable"),
        "{accumulator}"
    );
    let range = error("'abc'.all(i, v, true)");
    assert!(
        range.contains("string") && range.contains("list or map"),
        "{range}"
    );
    let arity = error("[1].transformList(i, v)");
    assert!(
        arity.contains(
            "transformList() takes (key, value, transform) or (key, value, filter, transform), not 2 argument(s)"
        ),
        "{arity}"
    );
    let arity = error("{'a': 1}.all(k, v, w, true)");
    assert!(
        arity.contains("all() takes (var, predicate) or (key, value, predicate), not 4"),
        "{arity}"
    );
}
