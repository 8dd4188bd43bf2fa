//! `dynrec test --chainsaw` driven as a process: a passing test of a bundled definition, a
//! failing test of each operation with the message it gives, catch/finally, skipped
//! operations, a malformed test, and the same test against `dynrec apiserver`'s kind of
//! live server through --kubeconfig.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dynrec::apiserver::{ApiServer, kubeconfig};

fn dynrec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .expect("dynrec runs")
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Writes a chainsaw test (its `chainsaw-test.yaml` and other files) under `root/name`.
fn write_test(root: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (file, content) in files {
        std::fs::write(dir.join(file), content).unwrap();
    }
    dir
}

/// The lines a test printed, from its `=== name` line to its PASS/FAIL line.
fn block<'a>(stdout: &'a str, name: &str) -> &'a str {
    let start = stdout
        .find(&format!("=== {name} "))
        .unwrap_or_else(|| panic!("no output of test {name}:\n{stdout}"));
    let rest = &stdout[start..];
    let end = ["\nPASS ", "\nFAIL "]
        .iter()
        .filter_map(|marker| rest.find(marker))
        .min()
        .expect("the test's result line");
    let line_end = rest[end + 1..]
        .find('\n')
        .map_or(rest.len(), |i| end + 1 + i);
    &rest[..line_end]
}

fn test_yaml(name: &str, steps: &str) -> String {
    format!(
        "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: {name}\nspec:\n  steps:\n{steps}"
    )
}

const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n";

#[test]
fn a_chainsaw_test_of_a_definition_passes_and_cleans_up_last_created_first() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/chainsaw/configsets");
    let output = dynrec(&["test", "--chainsaw", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let block = block(&stdout, "configsets");
    assert!(block.contains("ok    ERROR  v1/ConfigMap"), "{block}");
    let instance = block.find("DELETE example.com/v1/ConfigSet").expect(block);
    let definition = block
        .find("DELETE dynrec.dev/v1alpha1/ReconcilerDefinition")
        .expect(block);
    let namespace = block.find("DELETE v1/Namespace").expect(block);
    assert!(instance < definition && definition < namespace, "{block}");
    assert!(stdout.contains("1 passed, 0 failed"), "{stdout}");
}

#[test]
fn each_failing_operation_says_what_failed() {
    let root = tempfile::tempdir().unwrap();
    let configmap_step = "  - try:\n    - apply:\n        file: cm.yaml\n";
    let tests: [(&str, String, &[&str]); 7] = [
        (
            "assert-wrong-field",
            format!(
                "{configmap_step}    - assert:\n        timeout: 1s\n        resource:\n          apiVersion: v1\n          kind: ConfigMap\n          metadata: {{name: settings}}\n          data: {{color: red}}\n"
            ),
            &["FAIL  ASSERT", "v1/ConfigMap chainsaw-", "/settings:", "* data.color: want red, got blue"],
        ),
        (
            "assert-missing-object",
            "  - try:\n    - assert:\n        timeout: 1s\n        resource: {apiVersion: v1, kind: ConfigMap, metadata: {name: nothing}}\n".to_owned(),
            &["FAIL  ASSERT", "/nothing: not found"],
        ),
        (
            "error-that-matches",
            format!(
                "{configmap_step}    - error:\n        timeout: 1s\n        resource: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: settings}}, data: {{color: blue}}}}\n"
            ),
            &["FAIL  ERROR", "/settings: matches the assertion"],
        ),
        (
            "patch-of-nothing",
            "  - try:\n    - patch:\n        timeout: 1s\n        resource: {apiVersion: v1, kind: ConfigMap, metadata: {name: nothing}, data: {a: b}}\n".to_owned(),
            &["FAIL  PATCH", "/nothing does not exist"],
        ),
        (
            "create-of-existing",
            format!(
                "{configmap_step}    - create:\n        timeout: 1s\n        file: cm.yaml\n"
            ),
            &["FAIL  CREATE", "/settings already exists"],
        ),
        (
            "wait-that-times-out",
            format!(
                "{configmap_step}    - wait:\n        apiVersion: v1\n        kind: ConfigMap\n        name: settings\n        timeout: 1s\n        for:\n          jsonPath: {{path: '{{.data.color}}', value: red}}\n"
            ),
            &["FAIL  WAIT", "{.data.color}: \"blue\", want \"red\""],
        ),
        (
            "catch-and-finally",
            format!(
                "{configmap_step}    - update:\n        timeout: 1s\n        resource: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: other}}}}\n    catch:\n    - podLogs: {{selector: app=x}}\n    finally:\n    - sleep: {{duration: 10ms}}\n  - try:\n    - apply:\n        resource: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: never}}}}\n"
            ),
            &[
                "FAIL  UPDATE",
                "/other does not exist",
                "  catch\n    ok    SKIP   podLogs: skipped",
                "  finally\n    ok    SLEEP  10ms",
                "DELETE v1/ConfigMap chainsaw-",
            ],
        ),
    ];
    for (name, steps, _) in &tests {
        write_test(
            root.path(),
            name,
            &[
                ("chainsaw-test.yaml", &test_yaml(name, steps)),
                ("cm.yaml", CONFIGMAP),
            ],
        );
    }
    let output = dynrec(&["test", "--chainsaw", root.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    for (name, _, wants) in &tests {
        let block = block(&stdout, name);
        assert!(
            block.ends_with("s)") && block.contains(&format!("FAIL {name} (")),
            "{name}:\n{block}"
        );
        for want in *wants {
            assert!(block.contains(want), "{name}: want {want:?} in\n{block}");
        }
    }
    let catch = block(&stdout, "catch-and-finally");
    assert!(
        !catch.contains("never"),
        "no step runs after a failed one:\n{catch}"
    );
    assert!(stdout.contains("0 passed, 7 failed"), "{stdout}");
}

#[test]
fn a_malformed_test_is_refused_with_its_path() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_test(
        root.path(),
        "bad",
        &[(
            "chainsaw-test.yaml",
            &test_yaml("bad", "  - try:\n    - aply:\n        file: cm.yaml\n"),
        )],
    );
    let output = dynrec(&["test", "--chainsaw", dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr
            .contains("chainsaw-test.yaml: spec.steps[0].try[0].aply: unknown operation \"aply\""),
        "{}",
        text(&output)
    );
    let empty = root.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let output = dynrec(&["test", "--chainsaw", empty.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("no chainsaw-test.yaml in this directory or under it"),
        "{}",
        text(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_test_runs_against_a_live_server_through_kubeconfig() {
    let server = ApiServer::new();
    let serving = server.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let kubeconfig_path = root.path().join("kubeconfig");
    std::fs::write(&kubeconfig_path, kubeconfig(&serving.url(), None, None)).unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/chainsaw/configsets");
    let args: Vec<String> = [
        "test",
        "--chainsaw",
        "--kubeconfig",
        kubeconfig_path.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]
    .map(str::to_owned)
    .to_vec();
    let output = tokio::task::spawn_blocking(move || {
        dynrec(&args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("PASS configsets"), "{stdout}");
    serving.shutdown().await;
}
