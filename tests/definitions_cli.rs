//! `dynrec plan` and `dynrec test` driven as processes, exit codes included, against the
//! embedded API server over loopback.

mod dynrec_cli_common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use dynrec::apiserver::{ApiServer, kubeconfig};
use dynrec::client::Client;
use dynrec::definitions::{Definitions, load_file};
use dynrec::reconcilers::Config;
use dynrec::runtime::{Manager, ManagerOptions};
use dynrec_cli_common::{dynrec, examples, text};
use dynrec_test_support::{configmaps_api, widgets_api};
use kube::api::{Patch, PatchParams};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(10);

#[test]
fn dynrec_test_passes_the_example_cases_and_fails_a_wrong_expectation_with_a_diff() {
    let cases = examples().join("tests");
    let definitions = examples().to_string_lossy().into_owned();
    let widgets = cases.join("widgets.yaml").to_string_lossy().into_owned();
    let configsets = cases.join("configsets.yaml").to_string_lossy().into_owned();
    let webapp = cases.join("webapp.yaml").to_string_lossy().into_owned();
    let passed = dynrec(&["test", "-f", &definitions, &widgets, &configsets, &webapp]);
    assert_eq!(passed.status.code(), Some(0), "{}", text(&passed));
    assert!(
        String::from_utf8_lossy(&passed.stdout).contains("7 passed, 0 failed"),
        "{}",
        text(&passed)
    );

    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong.yaml");
    let original = std::fs::read_to_string(cases.join("widgets.yaml")).unwrap();
    std::fs::write(
        &wrong,
        original.replace(
            "data: {greeting: hi, size: \"2\"}",
            "data: {greeting: howdy, size: \"2\"}",
        ),
    )
    .unwrap();
    let failed = dynrec(&["test", "-f", &definitions, &wrong.to_string_lossy()]);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    let stdout = String::from_utf8_lossy(&failed.stdout);
    assert!(stdout.contains("FAIL  "), "{}", text(&failed));
    assert!(
        stdout.contains("expect.creates[0] (ConfigMap default/w1-config) differs:\n      data.greeting: want howdy, got hi\n"),
        "{}",
        text(&failed)
    );
    assert!(stdout.contains("2 passed, 1 failed"), "{}", text(&failed));
}

#[test]
fn dynrec_test_runs_every_case_file_under_a_directory_with_one_summary_line() {
    let definitions = examples().to_string_lossy().into_owned();
    let cases = examples().join("tests").to_string_lossy().into_owned();
    let all = dynrec(&["test", "-f", &definitions, &cases]);
    assert_eq!(all.status.code(), Some(0), "{}", text(&all));
    let stdout = String::from_utf8_lossy(&all.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some("8 passed, 0 failed"),
        "{}",
        text(&all)
    );

    // Nested directories are walked; files that are not YAML or JSON are left alone.
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("widgets/more");
    std::fs::create_dir_all(&nested).unwrap();
    let widgets = examples().join("tests/widgets.yaml");
    std::fs::copy(&widgets, nested.join("widgets.yaml")).unwrap();
    std::fs::write(dir.path().join("README.txt"), "not a case file").unwrap();
    let one_file = dynrec(&["test", "-f", &definitions, &widgets.to_string_lossy()]);
    let walked = dynrec(&["test", "-f", &definitions, &dir.path().to_string_lossy()]);
    assert_eq!(walked.status.code(), Some(0), "{}", text(&walked));
    let summary = |output: &Output| {
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .last()
            .map(str::to_owned)
    };
    assert_eq!(summary(&walked), summary(&one_file), "{}", text(&walked));

    let empty = tempfile::tempdir().unwrap();
    let none = dynrec(&["test", "-f", &definitions, &empty.path().to_string_lossy()]);
    assert_eq!(none.status.code(), Some(1), "{}", text(&none));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("no case files (.yaml, .yml or .json)"),
        "{}",
        text(&none)
    );
}

#[test]
fn dynrec_test_refuses_a_bad_case_file_and_a_bad_definition() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases.yaml");
    std::fs::write(
        &cases,
        "definition: widgets\ncases:\n- name: x\n  givn: []\n",
    )
    .unwrap();
    let definitions = examples().to_string_lossy().into_owned();
    let out = dynrec(&["test", "-f", &definitions, &cases.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cases[0].givn: unknown field `givn`"),
        "{}",
        text(&out)
    );

    let bad = dir.path().join("bad.yaml");
    let widgets = std::fs::read_to_string(examples().join("widgets.yaml")).unwrap();
    std::fs::write(
        &bad,
        widgets.replace("self.spec.greeting", "self.spec.greting"),
    )
    .unwrap();
    let out = dynrec(&[
        "test",
        "-f",
        &bad.to_string_lossy(),
        &cases.to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("spec.steps[0].child.template.data.greeting: ${has(self.spec) && has(self.spec.greting) && self.spec.greting != '' ? self.spec.greting : 'hello'}: self.spec has no field \"greting\""),
        "{}",
        text(&out)
    );
}

#[test]
fn dynrec_test_takes_a_delete_in_the_flat_form_and_refuses_one_without_a_name() {
    let definitions = examples().to_string_lossy().into_owned();
    let original = std::fs::read_to_string(examples().join("tests/configsets.yaml")).unwrap();
    let as_object =
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: cs-a, namespace: default}}";
    assert!(original.contains(as_object), "the example's delete changed");
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, delete: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, original.replace(as_object, delete)).unwrap();
        path.to_string_lossy().into_owned()
    };

    let flat = write(
        "flat.yaml",
        "- {apiVersion: v1, kind: ConfigMap, namespace: default, name: cs-a}",
    );
    let out = dynrec(&["test", "-f", &definitions, &flat]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("2 passed, 0 failed"),
        "{}",
        text(&out)
    );

    let wrong_name = write(
        "wrong.yaml",
        "- {apiVersion: v1, kind: ConfigMap, namespace: default, name: cs-b}",
    );
    let out = dynrec(&["test", "-f", &definitions, &wrong_name]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    let nameless = write("nameless.yaml", "- {apiVersion: v1, kind: ConfigMap}");
    let out = dynrec(&["test", "-f", &definitions, &nameless]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // The case fails, saying why; the file's other case still runs.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            ": deletes the ConfigMap of a removed entry\n  expect.deletes[0]: no name: give name (flat) or metadata.name\n"
        ) && stdout.ends_with("1 passed, 1 failed\n"),
        "{}",
        text(&out)
    );
}

/// An embedded server on loopback with the widgets definition converged; its kubeconfig.
async fn converged_server(dir: &Path) -> (ApiServer, dynrec::apiserver::Serving, PathBuf) {
    let server = ApiServer::new();
    let serving = server.serve(([127, 0, 0, 1], 0).into()).await.unwrap();
    let path = dir.join("kubeconfig");
    std::fs::write(&path, kubeconfig(&serving.url(), None, None)).unwrap();
    let kube = server.client();
    let client = Client::new(kube.clone());
    let config = Config::new(client.clone(), "test");
    let manager = Manager::new(client, ManagerOptions::default());
    let definitions = Definitions::new(&manager, &config);
    let loaded = load_file(&examples().join("widgets.yaml")).unwrap();
    definitions.start(&loaded[0]).await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(manager.run(async move {
        let _ = stopped.await;
    }));
    let widgets = widgets_api(&kube);
    let deadline = Instant::now() + DEADLINE;
    while widgets.list(&Default::default()).await.is_err() {
        assert!(Instant::now() < deadline, "the Widget kind is served");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    set_greeting(&kube, "hi").await;
    let config_maps = configmaps_api(&kube);
    loop {
        let ready = widgets.get("w1").await.ok().is_some_and(|w| {
            w.data["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        });
        if ready && config_maps.get_opt("w1-config").await.unwrap().is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "w1 converges");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let _ = stop.send(());
    running.await.unwrap().unwrap();
    (server, serving, path)
}

async fn set_greeting(kube: &kube::Client, greeting: &str) {
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"}, "spec": {"greeting": greeting}});
    widgets_api(kube)
        .patch(
            "w1",
            &PatchParams::apply("test").force(),
            &Patch::Apply(widget),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynrec_plan_shows_what_would_change_without_changing_it() {
    let dir = tempfile::tempdir().unwrap();
    let (server, serving, kubeconfig) = converged_server(dir.path()).await;
    let definition = examples()
        .join("widgets.yaml")
        .to_string_lossy()
        .into_owned();
    let plan = |kubeconfig: PathBuf, definition: String| {
        tokio::task::spawn_blocking(move || {
            dynrec(&[
                "plan",
                "-f",
                &definition,
                "--kubeconfig",
                &kubeconfig.to_string_lossy(),
            ])
        })
    };

    let unchanged = plan(kubeconfig.clone(), definition.clone()).await.unwrap();
    assert_eq!(unchanged.status.code(), Some(0), "{}", text(&unchanged));
    assert!(
        String::from_utf8_lossy(&unchanged.stdout).contains("widgets default/w1:\n  no changes"),
        "{}",
        text(&unchanged)
    );

    set_greeting(&server.client(), "bye").await;
    let changed = plan(kubeconfig.clone(), definition.clone()).await.unwrap();
    assert_eq!(changed.status.code(), Some(2), "{}", text(&changed));
    let stdout = String::from_utf8_lossy(&changed.stdout);
    assert!(
        stdout.contains("  would update ConfigMap default/w1-config"),
        "{}",
        text(&changed)
    );
    assert!(
        stdout.contains("    -   greeting: hi"),
        "{}",
        text(&changed)
    );
    assert!(
        stdout.contains("    +   greeting: bye"),
        "{}",
        text(&changed)
    );
    let config_map = configmaps_api(&server.client())
        .get("w1-config")
        .await
        .unwrap();
    assert_eq!(
        config_map.data["data"]["greeting"], "hi",
        "a plan changed the cluster"
    );

    configmaps_api(&server.client())
        .delete("w1-config", &Default::default())
        .await
        .unwrap();
    let missing = plan(kubeconfig.clone(), definition.clone()).await.unwrap();
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    let stdout = String::from_utf8_lossy(&missing.stdout);
    assert!(
        stdout.contains("  would create ConfigMap default/w1-config"),
        "{}",
        text(&missing)
    );
    assert!(
        stdout.contains("    +   greeting: bye"),
        "{}",
        text(&missing)
    );
    assert!(
        configmaps_api(&server.client())
            .get_opt("w1-config")
            .await
            .unwrap()
            .is_none()
    );

    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&definition)
            .unwrap()
            .replace("self.spec.greeting", "self.spec.greting"),
    )
    .unwrap();
    let refused = plan(kubeconfig, bad.to_string_lossy().into_owned())
        .await
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("self.spec has no field \"greting\""),
        "{}",
        text(&refused)
    );
    serving.shutdown().await;
}

#[test]
fn a_read_the_checker_cannot_prove_is_a_warning_and_an_error_with_strict() {
    let dir = tempfile::tempdir().unwrap();
    let definition = dir.path().join("widgets.yaml");
    let widgets = std::fs::read_to_string(examples().join("widgets.yaml")).unwrap();
    std::fs::write(
        &definition,
        widgets.replace(
            "has(self.spec) && has(self.spec.greeting) && self.spec.greeting != '' ? self.spec.greeting : 'hello'",
            "self.?spec.?greeting.orValue('') == '' ? 'hello' : self.spec.greeting",
        ),
    )
    .unwrap();
    let definition = definition.to_string_lossy().into_owned();
    let cases = examples().join("tests/widgets.yaml");
    let cases = cases.to_string_lossy().into_owned();
    let warning = "spec.steps[0].child.template.data.greeting: ${self.?spec.?greeting.orValue('') == '' ? 'hello' : self.spec.greeting}: self.spec may be absent (the schema neither requires nor defaults it): read it as self.?spec and what is under it with .?field, or guard it with has(self.spec) (at 1:56 of the expression)";

    let warned = dynrec(&["test", "-f", &definition, &cases]);
    assert_eq!(warned.status.code(), Some(0), "{}", text(&warned));
    let stderr = String::from_utf8_lossy(&warned.stderr);
    assert!(
        stderr.contains(&format!("warning: {definition} (document 1): {warning}")),
        "{}",
        text(&warned)
    );

    let strict = dynrec(&["test", "--strict", "-f", &definition, &cases]);
    assert_eq!(strict.status.code(), Some(1), "{}", text(&strict));
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert!(stderr.contains(warning), "{}", text(&strict));
    assert!(!stderr.contains("warning:"), "{}", text(&strict));
}

/// A CRD given with -f (a newcomer's first guess) is not silently ignored: the file is named,
/// with what it holds and where CRDs go instead.
#[test]
fn a_file_without_definitions_given_with_f_is_said_with_what_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let crd = dir.path().join("crd.yaml");
    std::fs::write(
        &crd,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\n",
    )
    .unwrap();
    let crd = crd.to_string_lossy().into_owned();
    let definitions = examples()
        .join("widgets.yaml")
        .to_string_lossy()
        .into_owned();
    let cases = examples().join("tests/widgets.yaml");
    let cases = cases.to_string_lossy().into_owned();
    let ran = dynrec(&["test", "-f", &crd, "-f", &definitions, &cases]);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(
        stderr.contains(&format!(
            "warning: {crd}: no ReconcilerDefinition or ResourceGraphDefinition in it, so -f takes \
             nothing from it (it holds CustomResourceDefinition); -f does not install CRDs"
        )),
        "{}",
        text(&ran)
    );
}
