//! Self-tests of `dynrec test`, run as a user runs it: failing cases of each kind fail with
//! messages that name what and where, `error:` agrees with the reconcile, passing runs log
//! no errors, `--update` round-trips, and steps report the step that failed.

mod dynrec_cli_common;

use std::path::{Path, PathBuf};
use std::process::Output;

use dynrec_cli_common::{dynrec_as_user as dynrec, examples, text};

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `dynrec test -f examples/definitions/widgets.yaml FILE EXTRA...`.
fn test_widgets(file: &Path, extra: &[&str]) -> Output {
    let definition = examples().join("widgets.yaml");
    let mut args = vec![
        "test",
        "-f",
        definition.to_str().unwrap(),
        file.to_str().unwrap(),
    ];
    args.extend(extra);
    dynrec(&args)
}

const WIDGET: &str = r#"  given:
  - apiVersion: example.com/v1
    kind: Widget
    metadata: {name: w1, namespace: default, uid: 11111111-1111-1111-1111-111111111111, generation: 1}
    spec: {greeting: hi}
"#;

fn write_cases(dir: &Path, name: &str, cases: &[(&str, &str)]) -> PathBuf {
    let mut text = String::from("definition: widgets\ncases:\n");
    for (title, rest) in cases {
        text.push_str(&format!("- name: {title}\n{WIDGET}{rest}"));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const CONFIG_MAP: &str = r#"    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: w1-config
        namespace: default
        labels: {example.com/widget: w1, dynrec.dev/definition: widgets, dynrec.dev/step: configMap}
        ownerReferences:
        - {apiVersion: example.com/v1, kind: Widget, name: w1, uid: 11111111-1111-1111-1111-111111111111, controller: true, blockOwnerDeletion: true}
      data: {greeting: hi, size: "1"}
"#;

#[test]
fn missing_extra_and_wrong_writes_each_say_what_and_where_in_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!(
        "  expect:\n    creates:\n{CONFIG_MAP}    - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: other, namespace: default}}}}\n"
    );
    let wrong = format!(
        "  expect:\n    creates:\n{}",
        CONFIG_MAP.replace("greeting: hi", "greeting: hello")
    );
    let path = write_cases(
        dir.path(),
        "cases.yaml",
        &[
            ("missing", &missing),
            ("extra", "  expect: {exact: true}\n"),
            ("wrong", &wrong),
        ],
    );
    let out = test_widgets(&path, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = stdout(&out);
    assert!(
        stdout.contains(
            "expect.creates[1] (ConfigMap default/other): not made; the reconcile made 1 create(s)"
        ),
        "{}",
        text(&out)
    );
    // The extra create, as YAML that goes under `creates:` as it is.
    assert!(
        stdout.contains(
            "    1 unexpected create(s); to expect them, add to expect.creates:\n      - apiVersion: v1\n        kind: ConfigMap\n        metadata:\n          labels:\n"
        ),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains("expect.creates[0] (ConfigMap default/w1-config) differs:\n      data.greeting: want hello, got hi\n"),
        "{}",
        text(&out)
    );
    for debug in ["ApplyRef", "String(", "Some(", "Event {"] {
        assert!(
            !stdout.contains(debug),
            "Rust Debug in the output: {}",
            text(&out)
        );
    }
    assert!(stdout.ends_with("0 passed, 3 failed\n"), "{}", text(&out));
}

#[test]
fn an_expectation_is_a_subset_of_the_write_unless_exact() {
    let dir = tempfile::tempdir().unwrap();
    let subset = "  expect:\n    creates:\n    - {apiVersion: v1, kind: ConfigMap, data: {greeting: hi, (to_number(size) >= `1`): true}}\n";
    let wrong = "  expect:\n    creates:\n    - {apiVersion: v1, kind: ConfigMap, data: {greeting: hello}}\n";
    let exact = "  expect:\n    exact: true\n    creates:\n    - {apiVersion: v1, kind: ConfigMap, data: {greeting: hi, size: \"1\"}}\n";
    let path = write_cases(
        dir.path(),
        "cases.yaml",
        &[("subset", subset), ("wrong", wrong), ("exact", exact)],
    );
    let out = test_widgets(&path, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = stdout(&out);
    assert!(stdout.contains("ok    "), "{}", text(&out));
    assert!(
        stdout.contains("FAIL  ") && stdout.contains(": wrong\n  reconcile:\n    expect.creates[0] (ConfigMap) differs:\n      data.greeting: want hello, got hi\n"),
        "{}",
        text(&out)
    );
    // Exact: the metadata the expectation leaves out differs, and the unlisted events and
    // status update are unexpected.
    assert!(stdout.contains(": exact\n  reconcile:\n    expect.creates[0] (ConfigMap) differs:\n      metadata: not expected"), "{}", text(&out));
    assert!(
        stdout.contains("1 unexpected status update(s)"),
        "{}",
        text(&out)
    );
    assert!(stdout.ends_with("1 passed, 2 failed\n"), "{}", text(&out));
}

#[test]
fn a_status_in_another_key_order_is_the_same_status() {
    let dir = tempfile::tempdir().unwrap();
    let expect = format!(
        "  expect:\n    creates:\n{CONFIG_MAP}    statusUpdates:\n    - apiVersion: example.com/v1\n      kind: Widget\n      metadata: {{name: w1, namespace: default}}\n      status:\n        conditions:\n        - {{message: ConfigMap w1-config is in place, reason: ConfigMapReady, status: \"True\", type: ConfigMapReady}}\n        - {{status: \"True\", message: \"\", type: Ready, reason: Ready}}\n        observedGeneration: 1\n    events:\n    - {{type: Normal, reason: Created, message: Created ConfigMap \"w1-config\"}}\n    - {{type: Normal, reason: StatusUpdated, message: Updated status}}\n"
    );
    let path = write_cases(dir.path(), "cases.yaml", &[("reordered", &expect)]);
    let out = test_widgets(&path, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn error_agrees_with_the_reconcile_and_a_passing_run_logs_no_error() {
    let dir = tempfile::tempdir().unwrap();
    let failed_create =
        "  failures: [{verb: create, kind: ConfigMap}]\n  expect:\n    error: true\n";
    let path = write_cases(dir.path(), "recorded.yaml", &[("recorded", failed_create)]);
    let out = test_widgets(&path, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stdout(&out).contains(
            "expect.error: want an error, got none. The failure was written into the status"
        ),
        "{}",
        text(&out)
    );
    assert!(
        stdout(&out).contains("failures: [{verb: update, kind: Widget, subresource: status}]"),
        "{}",
        text(&out)
    );

    // When the status write fails too, the reconcile returns the error.
    let both = "  failures:\n  - {verb: create, kind: ConfigMap}\n  - {verb: update, kind: Widget, subresource: status}\n  expect:\n    error: true\n";
    let path = write_cases(dir.path(), "returned.yaml", &[("returned", both)]);
    let out = test_widgets(&path, &["--update"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let recorded = std::fs::read_to_string(&path).unwrap();
    assert!(recorded.contains("    error: true\n"), "{recorded}");
    let out = test_widgets(&path, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // The failed create written into the status logs an ERROR line in the reconcile: a
    // passing run shows it only with -v.
    let path = dir.path().join("recorded.yaml");
    let out = test_widgets(&path, &["--update"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = test_widgets(&path, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("ERROR"),
        "a passing run logged an error: {}",
        text(&out)
    );
    let verbose = test_widgets(&path, &["-v"]);
    assert_eq!(verbose.status.code(), Some(0), "{}", text(&verbose));
    assert!(
        String::from_utf8_lossy(&verbose.stderr).contains("ERROR reconcile failed"),
        "-v shows the reconcile's error: {}",
        text(&verbose)
    );
}

#[test]
fn update_records_the_reconcile_keeping_comments_and_given_and_a_second_run_passes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("widgets.yaml");
    let original = std::fs::read_to_string(examples().join("tests/widgets.yaml")).unwrap();
    let broken = original
        .replace(
            "data: {greeting: hi, size: \"2\"}",
            "data: {greeting: howdy, size: \"2\"}",
        )
        .replace("cases:\n", "cases:  # reviewed by hand\n");
    std::fs::write(&path, &broken).unwrap();

    let out = test_widgets(&path, &["--update"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = stdout(&out);
    assert!(stdout.contains("updated "), "{}", text(&out));
    assert!(
        stdout.contains("-       data: {greeting: howdy, size: \"2\"}\n"),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains("+         greeting: hi\n"),
        "{}",
        text(&out)
    );
    assert!(
        stdout.ends_with("2 passed, 0 failed, 1 updated\n"),
        "{}",
        text(&out)
    );

    let updated = std::fs::read_to_string(&path).unwrap();
    assert!(
        updated.starts_with("# dynrec test -f examples/definitions"),
        "{updated}"
    );
    assert!(
        updated.contains("cases:  # reviewed by hand\n"),
        "{updated}"
    );
    let given = "    spec: {greeting: hi, size: 2}\n";
    assert!(updated.contains(given), "{updated}");
    // The passing cases' blocks are left as written.
    let untouched = "  - {verb: create, kind: ConfigMap}";
    assert_eq!(broken.contains(untouched), updated.contains(untouched));

    let again = test_widgets(&path, &[]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).ends_with("3 passed, 0 failed\n"),
        "{}",
        text(&again)
    );
}

#[test]
fn a_failing_step_is_named_with_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lifecycle.yaml");
    let original = std::fs::read_to_string(examples().join("tests/webapp-lifecycle.yaml")).unwrap();
    let deleted = "        reason: Deleted\n";
    assert!(
        original.contains(deleted),
        "the example's last step changed"
    );
    std::fs::write(
        &path,
        original.replace(deleted, "        reason: Removed\n"),
    )
    .unwrap();
    let definitions = examples();
    let out = dynrec(&[
        "test",
        "-f",
        definitions.to_str().unwrap(),
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stdout(&out).contains(
            "  steps[3] (the host is cleared, so the Ingress is deleted):\n    expect.events[0] (Removed) differs:\n      reason: want Removed, got Deleted\n"
        ),
        "{}",
        text(&out)
    );
}

#[test]
fn cel_checks_hold_or_say_the_path_the_check_and_the_actual_value() {
    let dir = tempfile::tempdir().unwrap();
    let holding = r#"  expect:
    creates:
    - kind: ConfigMap
      check: "${ object.data.greeting == 'hi' && object.metadata.name.endsWith('-config') }"
      metadata: {name: "${ .startsWith('w1') }", namespace: "${ object.metadata.name == 'w1-config' ? 'default' : 'other' }"}
      data: {size: "${ in ['1', '2'] }", greeting: "${ != '' }"}
"#;
    let failing = r#"  expect:
    creates:
    - kind: ConfigMap
      check: ["${ object.data.greeting == 'hello' }", "${ size(object.data) == 2 }"]
      data: {size: "${ >= '2' }", greeting: "${ 'hel' + 'lo' }"}
"#;
    let broken = r#"  expect:
    creates:
    - data: {size: "${ >= }", greeting: "${ value + 1 }"}
      check: "${ object.data }"
"#;
    let path = write_cases(
        dir.path(),
        "cases.yaml",
        &[
            ("holding", holding),
            ("failing", failing),
            ("broken", broken),
        ],
    );
    let out = test_widgets(&path, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = stdout(&out);
    assert!(stdout.contains("ok    "), "{}", text(&out));
    for line in [
        "      check[0]: ${ object.data.greeting == 'hello' } is false\n",
        "      data.size: want ${ >= '2' }, got \"1\"\n",
        "      data.greeting: want hello, got hi\n",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in {}", text(&out));
    }
    assert!(!stdout.contains("check[1]"), "{}", text(&out));
    for line in [
        "      data.size: expression (${ >= }): ",
        "      data.greeting: expression (${ value + 1 }): ",
        "      check: expression (${ object.data }): the result is a map, not a bool: ",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in {}", text(&out));
    }
    assert!(stdout.ends_with("1 passed, 2 failed\n"), "{}", text(&out));
}

#[test]
fn an_edit_the_server_refuses_fails_its_case_and_the_next_case_runs() {
    let dir = tempfile::tempdir().unwrap();
    let refused = r#"  steps:
  - name: the size is made negative
    patch:
    - {apiVersion: example.com/v1, kind: Widget, metadata: {name: w1, namespace: default}, spec: {size: -1}}
  - name: never run
    delete:
    - {apiVersion: v1, kind: ConfigMap, namespace: default, name: w1-config}
"#;
    let missing = r#"  steps:
  - setStatus:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: nope, namespace: default}, status: {a: 1}}
"#;
    let passing = "  expect:\n    creates: [{kind: ConfigMap}]\n";
    let path = write_cases(
        dir.path(),
        "cases.yaml",
        &[
            ("refused", refused),
            ("missing", missing),
            ("passing", passing),
        ],
    );
    let out = test_widgets(&path, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = stdout(&out);
    assert!(
        stdout.contains(": refused\n  steps[0] (the size is made negative): an edit failed, so the case stops here:\n    steps[0].patch[0]: ")
            && stdout.contains("spec.size in body should be greater than or equal to 0"),
        "{}",
        text(&out)
    );
    assert!(!stdout.contains("never run"), "{}", text(&out));
    assert!(
        stdout.contains(": missing\n  steps[0]: an edit failed, so the case stops here:\n    steps[0].setStatus[0]: ")
            && stdout.contains("not found"),
        "{}",
        text(&out)
    );
    assert!(stdout.contains(": passing\n"), "{}", text(&out));
    assert!(stdout.ends_with("1 passed, 2 failed\n"), "{}", text(&out));
}

/// A write expected under the wrong verb (the widgets definition creates its ConfigMap; a
/// definition's default manager applies) says which verb it was and where to list it.
#[test]
fn a_write_expected_under_another_verb_says_which_verb_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_cases(
        dir.path(),
        "verb.yaml",
        &[(
            "expects an apply",
            "  expect:\n    applies:\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: w1-config, namespace: default}}\n",
        )],
    );
    let ran = test_widgets(&file, &[]);
    assert_eq!(ran.status.code(), Some(1), "{}", text(&ran));
    assert!(
        stdout(&ran).contains(
            "expect.applies[0] (ConfigMap default/w1-config): not made; the reconcile made 0 \
             apply(s); it created it: expect it under creates"
        ),
        "{}",
        text(&ran)
    );
}

/// A definition of a kind only a case's `apiResources` CRD serves.
const GADGETS: &str = r#"apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata:
  name: gadgets
spec:
  for: {apiVersion: example.com/v1, kind: Gadget}
  steps:
  - child:
      id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${self.metadata.name}-config"}
        data: {color: "${self.spec.colour}"}
"#;

const GADGET_CASES: &str = r#"definition: gadgets
cases:
- name: a gadget
  apiResources:
  - apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: gadgets.example.com}
    spec:
      group: example.com
      scope: Namespaced
      names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
      versions:
      - name: v1
        served: true
        storage: true
        subresources: {status: {}}
        schema:
          openAPIV3Schema:
            type: object
            properties:
              spec: {type: object, properties: {color: {type: string}}}
              status: {type: object, x-kubernetes-preserve-unknown-fields: true}
  given:
  - {apiVersion: example.com/v1, kind: Gadget, metadata: {name: g1, namespace: default}, spec: {color: red}}
"#;

#[test]
fn a_definition_of_a_kind_a_case_crd_serves_is_checked_against_that_crd() {
    let dir = tempfile::tempdir().unwrap();
    let (definition, cases) = (
        dir.path().join("gadgets.yaml"),
        dir.path().join("cases.yaml"),
    );
    std::fs::write(&definition, GADGETS).unwrap();
    std::fs::write(&cases, GADGET_CASES).unwrap();
    let run = || {
        dynrec(&[
            "test",
            "-f",
            definition.to_str().unwrap(),
            cases.to_str().unwrap(),
        ])
    };
    let output = run();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains(
            "spec.steps[0].child.template.data.color: ${self.spec.colour}: self.spec has no field \"colour\"; its fields are: color"
        ),
        "{}",
        text(&output)
    );
    std::fs::write(&definition, GADGETS.replace("colour", "color")).unwrap();
    let output = run();
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        stdout(&output).contains("1 passed, 0 failed"),
        "{}",
        text(&output)
    );
}

#[test]
fn timeout_is_refused_for_chainsaw_tests_which_take_theirs_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let output = dynrec(&[
        "test",
        "--chainsaw",
        "--timeout",
        "5s",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output)
            .contains("the argument '--chainsaw' cannot be used with '--timeout <DURATION>'"),
        "{}",
        text(&output)
    );
}
