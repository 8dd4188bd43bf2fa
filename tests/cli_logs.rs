//! What `dynrec run` writes to its log when it is not a terminal: no colour codes, and one
//! line per failed reconcile carrying the cause, not one per layer that saw the error; with
//! `--log-format json`, one JSON object a line with the reconcile's fields once each.

mod process_common;

use std::time::{Duration, Instant};

use dynrec_test_support::{configmaps_api, widgets_api};
use kube::api::{DynamicObject, PostParams};
use process_common::*;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(30);

/// The log of `dynrec run` (with `extra` flags) through a child update that fails once with
/// a 500 and lands on the retry.
async fn log_of_a_failed_child_write(extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let faults = json!([{"match": {"verb": "update", "kind": "ConfigMap", "name": "w1-config"},
        "action": {"fail": {"code": 500, "reason": "InternalError",
            "message": "injected storage failure"}}, "times": 1}]);
    let faults_file = dir.path().join("faults.json");
    std::fs::write(&faults_file, faults.to_string()).unwrap();
    let faults_arg = faults_file.to_str().unwrap();
    let (mut server, url) = start_apiserver(dir.path(), "127.0.0.1:0", &["--faults", faults_arg]);
    let log_path = dir.path().join("run.log");
    let mut run = start_widgets_controller(dir.path(), &log_path, None, extra);

    let kube = client(&url);
    let widget: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1",
        "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"greeting": "hi"}}))
    .unwrap();
    let widgets = widgets_api(&kube);
    let deadline = Instant::now() + DEADLINE;
    while widgets
        .create(&PostParams::default(), &widget)
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the Widget kind is served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let configmaps = configmaps_api(&kube);
    let greeting_is = |greeting: &'static str| {
        let configmaps = configmaps.clone();
        async move {
            configmaps
                .get_opt("w1-config")
                .await
                .unwrap()
                .is_some_and(|c| c.data["data"]["greeting"] == greeting)
        }
    };
    while !greeting_is("hi").await {
        assert!(Instant::now() < deadline, "the ConfigMap is created");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The first update of the child fails (500); the retry lands it.
    widgets
        .patch(
            "w1",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"greeting": "hello"}})),
        )
        .await
        .unwrap();
    while !greeting_is("hello").await {
        assert!(
            Instant::now() < deadline,
            "the ConfigMap is updated on a retry"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop(&mut run, "TERM");
    stop(&mut server, "TERM");

    std::fs::read_to_string(&log_path).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_child_write_is_one_uncoloured_log_line() {
    let log = log_of_a_failed_child_write(&[]).await;
    assert!(
        log.lines()
            .next()
            .is_some_and(|first| first.contains("INFO  cluster: context ")),
        "the first line says which cluster:\n{log}"
    );
    assert!(
        !log.contains('\u{1b}'),
        "no escape codes in a log file:\n{log}"
    );
    let loud: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .collect();
    assert_eq!(loud.len(), 1, "one warning or error line:\n{log}");
    assert!(
        loud[0].contains("ERROR") && loud[0].contains("injected storage failure"),
        "the line is an error carrying the cause: {}",
        loud[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_a_line_with_each_field_once() {
    let log = log_of_a_failed_child_write(&["--log-format", "json"]).await;
    let lines: Vec<Value> = log
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("a JSON line ({err}): {line}\n{log}"))
        })
        .collect();
    for line in &lines {
        for key in ["ts", "level", "logger", "msg"] {
            assert!(line[key].is_string(), "{key} in {line}");
        }
    }
    assert!(
        lines[0]["msg"]
            .as_str()
            .is_some_and(|m| m.starts_with("cluster: context ")),
        "the first line says which cluster: {}",
        lines[0]
    );
    let loud: Vec<&Value> = lines
        .iter()
        .filter(|l| l["level"] == "error" || l["level"] == "warn")
        .collect();
    assert_eq!(loud.len(), 1, "one warning or error line:\n{log}");
    let failed = loud[0];
    assert_eq!(failed["level"], "error", "{failed}");
    assert_eq!(failed["msg"], "reconcile failed", "{failed}");
    assert_eq!(failed["controller"], "definition/widgets", "{failed}");
    assert_eq!(failed["kind"], "example.com/v1/Widget", "{failed}");
    assert_eq!(failed["object"], "default/w1", "{failed}");
    assert!(
        failed["reconcile_id"]
            .as_str()
            .is_some_and(|id| id.len() == 36),
        "a reconcile id: {failed}"
    );
    assert!(
        failed["error"]
            .as_str()
            .is_some_and(|e| e.contains("injected storage failure")),
        "the cause: {failed}"
    );
    let bodies: Vec<&Value> = lines
        .iter()
        .filter(|l| l["level"] == "info" && l.to_string().contains("\\\"data\\\""))
        .collect();
    assert!(bodies.is_empty(), "no object bodies at INFO: {bodies:?}");
}

/// Dividers: a ConfigMap holding `100 / spec.divisor`, which fails for a divisor of 0.
const DIVIDERS: &str = r#"
apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata: {name: dividers}
spec:
  for: {apiVersion: example.com/v1, kind: Divider}
  schema:
    openAPIV3Schema:
      type: object
      required: [spec]
      properties:
        spec:
          type: object
          required: [divisor]
          properties: {divisor: {type: integer}}
        status: {type: object, x-kubernetes-preserve-unknown-fields: true}
  steps:
  - child:
      id: quotient
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${self.metadata.name}-quotient"}
        data: {quotient: "${string(100 / self.spec.divisor)}"}
"#;

/// Waits (bounded) until the file at `path` satisfies `done`; returns its text.
async fn wait_for_log(path: &std::path::Path, what: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let log = std::fs::read_to_string(path).unwrap_or_default();
        if done(&log) {
            return log;
        }
        assert!(Instant::now() < deadline, "{what}:\n{log}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_that_repeats_is_one_error_line_in_cel_words_until_it_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let dividers = dir.path().join("dividers.yaml");
    std::fs::write(&dividers, DIVIDERS).unwrap();
    let (mut server, url) = start_apiserver(dir.path(), "127.0.0.1:0", &[]);
    let log_path = dir.path().join("run.log");
    let filter = Some("info,dynrec::reconcilers::failure=debug");
    let extra = ["-f", dividers.to_str().unwrap()];
    let mut run = start_widgets_controller(dir.path(), &log_path, filter, &extra);

    let kube = client(&url);
    let gvk = kube::api::GroupVersionKind::gvk("example.com", "v1", "Divider");
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, "dividers");
    let dividers_api: kube::Api<DynamicObject> =
        kube::Api::namespaced_with(kube.clone(), "default", &resource);
    let divider: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1",
        "kind": "Divider", "metadata": {"name": "d1"}, "spec": {"divisor": 0}}))
    .unwrap();
    let deadline = Instant::now() + DEADLINE;
    while dividers_api
        .create(&PostParams::default(), &divider)
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the Divider kind is served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The status write that records the failure, and the backoff's retries, fail again alike.
    let failed_again = "reconcile failed again with the same error";
    let log = wait_for_log(&log_path, "the failure is retried", |log| {
        log.matches(failed_again).count() >= 3
    })
    .await;
    let errors: Vec<&str> = log.lines().filter(|l| l.contains(" ERROR ")).collect();
    assert_eq!(
        errors.len(),
        1,
        "one error line for a repeated failure:\n{log}"
    );
    assert!(
        errors[0].contains("object=default/d1")
            && errors[0].contains("division by zero: 100 / 0")
            && !errors[0].contains("Int("),
        "the error in CEL's words: {}",
        errors[0]
    );
    let stored = dividers_api.get("d1").await.unwrap();
    let message = stored.data["status"]["conditions"][0]["message"].to_string();
    assert!(
        message.contains("division by zero: 100 / 0"),
        "the condition says so too: {message}"
    );

    // Fixed, it says once that it recovered; failing anew is a new error line.
    let patch = |divisor: i64| {
        let api = dividers_api.clone();
        async move {
            api.patch(
                "d1",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"spec": {"divisor": divisor}})),
            )
            .await
            .unwrap()
        }
    };
    patch(4).await;
    let recovered = "reconcile succeeded after failing";
    wait_for_log(&log_path, "the recovery is logged", |log| {
        log.contains(recovered)
    })
    .await;
    patch(0).await;
    let log = wait_for_log(&log_path, "the new failure is logged", |log| {
        log.matches(" ERROR ").count() == 2
    })
    .await;
    assert_eq!(log.matches(recovered).count(), 1, "{log}");
    stop(&mut run, "TERM");
    stop(&mut server, "TERM");
}
