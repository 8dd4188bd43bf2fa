//! The load driver end to end at a small size: both engines as processes against a
//! `dynrec apiserver` of their own, the report written and complete. Needs the `dynrec`
//! binary beside the driver (`cargo test --workspace` builds it; alone, run
//! `cargo build --bin dynrec` first).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs the driver on 20 instances of `workload` with one short churn step; returns the
/// report and the output directory (which holds churn.svg).
fn small_run(workload: &str) -> (Value, tempfile::TempDir) {
    let driver = Path::new(env!("CARGO_BIN_EXE_dynrec-loadtest"));
    let dynrec = driver.with_file_name("dynrec");
    assert!(
        dynrec.exists(),
        "no dynrec binary at {}: cargo build --bin dynrec",
        dynrec.display()
    );
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(driver)
        .args(["run", "--workload", workload, "--instances", "20"])
        .args(["--churn", "5", "--step-seconds", "2"])
        // A generous SLO: this checks that every change is seen, not how fast.
        .args(["--slo-ms", "5000", "--limit-seconds", "120"])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("dynrec / typed: converge time"), "{stdout}");
    let report = std::fs::read(out.path().join("result.json")).unwrap();
    (serde_json::from_slice(&report).unwrap(), out)
}

/// The count of `kind` an engine's API server stored.
fn stored(engine: &Value, kind: &str) -> u64 {
    let stored = engine["server"]["stored"].as_array().unwrap();
    let found = stored.iter().find(|s| s["kind"] == kind).unwrap();
    found["count"].as_u64().unwrap()
}

#[test]
fn a_small_run_converges_both_engines_and_reports_every_phase() {
    let (report, out) = small_run("widgets");
    let engines = report["engines"].as_array().unwrap();
    let names: Vec<&str> = engines
        .iter()
        .map(|e| e["engine"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["dynrec", "typed"]);
    for engine in engines {
        let name = &engine["engine"];
        assert_eq!(engine["converge"]["instances"], 20, "{name}");
        let step = &engine["churn"][0];
        assert_eq!(step["changes"], 10, "{name}: 5/s for 2 s");
        assert_eq!(step["unseen"], 0, "{name}: every change reached its child");
        let controller = &step["controller"];
        if name == "dynrec" {
            // Its own histograms: a reconcile for each change at least (and each child's).
            let reconciles = controller["reconciles"].as_f64().unwrap();
            assert!(reconciles >= 10.0, "{controller}");
            assert!(controller["p99_reconcile_ms"].as_f64().unwrap() > 0.0);
            assert!(
                controller["p99_queue_ms"].as_f64().is_some(),
                "{controller}"
            );
        } else {
            assert!(
                controller.is_null(),
                "kube-runtime serves no metrics: {controller}"
            );
        }
        let restart = &engine["restart"];
        let seconds = |figure: &str| restart[figure].as_f64().unwrap();
        assert!(seconds("typed_stores_fill_seconds") > 0.0, "{name}");
        assert!(seconds("dynrec_caches_fill_seconds") > 0.0, "{name}");
        assert!(seconds("first_write_seconds") > 0.0, "{name}");
        assert!(
            seconds("caught_up_seconds") >= seconds("first_write_seconds"),
            "{name}: the first write comes before the last"
        );
        assert!(
            engine["controller_at_end"]["peak_rss_bytes"]
                .as_u64()
                .unwrap()
                > 0
        );
        // 20 instances and the probe; the same writes on both sides: a ConfigMap each
        // (plus the namespace's root CA ConfigMap, if the server makes one) and two Events.
        let count = |kind: &str| stored(engine, kind);
        assert_eq!(count("Widget"), 21, "{name}");
        assert!((21..=22).contains(&count("ConfigMap")), "{name}");
        assert_eq!(count("Event"), 42, "{name}: Created and StatusUpdated each");
    }
    let svg = std::fs::read_to_string(out.path().join("churn.svg")).unwrap();
    assert_eq!(
        svg.matches("<polyline").count(),
        4,
        "p50 and p99 of each engine"
    );
}

#[test]
fn webapps_converge_with_their_three_children_on_both_engines() {
    let (report, _out) = small_run("webapps");
    for engine in report["engines"].as_array().unwrap() {
        let name = &engine["engine"];
        assert_eq!(engine["workload"], "webapps", "{name}");
        assert_eq!(
            engine["churn"][0]["unseen"], 0,
            "{name}: every new image reached its Deployment"
        );
        // 20 instances and the probe, each with its Deployment, Service and Ingress.
        for kind in ["WebApp", "Deployment", "Service", "Ingress"] {
            assert_eq!(stored(engine, kind), 21, "{name}: {kind}");
        }
        assert!(engine["restart"]["caught_up_seconds"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn both_engines_run_one_after_the_other_against_a_cluster_given_by_kubeconfig() {
    let driver = Path::new(env!("CARGO_BIN_EXE_dynrec-loadtest"));
    let dynrec = driver.with_file_name("dynrec");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut server = Command::new(&dynrec)
        .args(["apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The server says so once the kubeconfig is written whole.
    let mut said = String::new();
    let mut stdout = std::io::BufReader::new(server.stdout.take().unwrap());
    while !said.contains("kubeconfig written") {
        said.clear();
        let read = std::io::BufRead::read_line(&mut stdout, &mut said).unwrap();
        assert!(
            read > 0,
            "dynrec apiserver stopped before writing its kubeconfig"
        );
    }
    let run = Command::new(driver)
        .args([
            "run",
            "--instances",
            "10",
            "--churn",
            "5",
            "--step-seconds",
            "1",
        ])
        .args(["--slo-ms", "5000", "--limit-seconds", "120", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    let namespaces = Command::new("kubectl")
        .args([
            "get",
            "namespace",
            "loadtest",
            "--ignore-not-found",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .output();
    server.kill().unwrap();
    server.wait().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    // The second engine meets the Widget CRD and the namespace of the first.
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("result.json")).unwrap()).unwrap();
    for engine in report["engines"].as_array().unwrap() {
        assert_eq!(engine["converge"]["instances"], 10);
        assert!(
            engine["server"].is_null(),
            "the driver did not start the server, so it reports no server memory"
        );
    }
    if let Ok(namespaces) = namespaces {
        assert_eq!(
            String::from_utf8_lossy(&namespaces.stdout),
            "",
            "the run's namespace is deleted from the user's cluster"
        );
    }
}

#[test]
fn bad_arguments_are_refused_before_anything_starts() {
    let driver = Path::new(env!("CARGO_BIN_EXE_dynrec-loadtest"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (args, says) in [
        (
            &["--engines", "dynrec,typo"][..],
            "invalid value 'typo' for '--engines",
        ),
        (
            &["--instances", "0"],
            "invalid value '0' for '--instances <INSTANCES>': must be at least 1",
        ),
        (
            &["--churn", "50,0"],
            "invalid value '0' for '--churn <CHURN>': must be more than 0",
        ),
        (
            &["--slo-ms", "inf"],
            "invalid value 'inf' for '--slo-ms <SLO_MS>': must be a finite number",
        ),
        (
            &["--workers", "0"],
            "invalid value '0' for '--workers <WORKERS>'",
        ),
    ] {
        let run = Command::new(driver)
            .arg("run")
            .args(args)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?} started a run");
    }
}

/// Runs the driver on dynrec alone with the definition `yaml`, each wait bounded by
/// `limit_seconds`; returns whether it succeeded and what it said on stderr.
fn run_dynrec_with_definition(yaml: &str, limit_seconds: &str) -> (bool, String) {
    let driver = Path::new(env!("CARGO_BIN_EXE_dynrec-loadtest"));
    let dir = tempfile::tempdir().unwrap();
    let definition = dir.path().join("widgets.yaml");
    std::fs::write(&definition, yaml).unwrap();
    let run = Command::new(driver)
        .args(["run", "--engines", "dynrec", "--instances", "5"])
        .args(["--churn", "5", "--step-seconds", "1"])
        .args(["--limit-seconds", limit_seconds, "--definition"])
        .arg(&definition)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    (run.status.success(), stderr)
}

#[test]
fn a_controller_that_exits_fails_the_run_with_the_end_of_its_log() {
    // A definition `dynrec run` refuses: its template's expression does not parse.
    let (succeeded, stderr) = run_dynrec_with_definition(
        r#"apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata: {name: broken}
spec:
  for: {apiVersion: example.com/v1, kind: Widget}
  steps:
  - child:
      id: c
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${self.metadata.name + }"}}
"#,
        // Bounds the run should the exit go unnoticed: the probe's wait would then time out.
        "60",
    );
    assert!(!succeeded, "{stderr}");
    assert!(
        stderr.contains("dynrec run exited early: exit status: 1; the end of its log"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"error: starting definition "broken""#),
        "dynrec's own error: {stderr}"
    );
}

#[test]
fn a_definition_that_writes_other_children_fails_the_run_at_its_probe() {
    // Widgets reconciled, but into ConfigMaps named <widget>-cm: no change could be timed.
    let (succeeded, stderr) = run_dynrec_with_definition(
        r#"apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata: {name: elsewhere}
spec:
  for: {apiVersion: example.com/v1, kind: Widget}
  schema:
    openAPIV3Schema:
      type: object
      properties:
        spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
        status: {type: object, x-kubernetes-preserve-unknown-fields: true}
  steps:
  - child:
      id: c
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${self.metadata.name}-cm"}
        data: {greeting: "${self.?spec.?greeting.orValue('')}"}
"#,
        "60",
    );
    assert!(!succeeded, "{stderr}");
    assert!(
        stderr.contains(
            r#"the probe Widget is Ready, but its child does not show its value "hello 0": there is no ConfigMap probe-config"#
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "a ConfigMap named <widget>-config whose data.greeting is the Widget's spec.greeting"
        ),
        "what the driver needs: {stderr}"
    );
}

#[test]
fn a_definition_without_a_schema_says_its_kind_is_not_served_when_the_wait_runs_out() {
    // No spec.schema, so no CRD: dynrec waits for a Widget kind nobody installs.
    let (succeeded, stderr) = run_dynrec_with_definition(
        r#"apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata: {name: schemaless}
spec:
  for: {apiVersion: example.com/v1, kind: Widget}
  steps:
  - child:
      id: c
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${self.metadata.name}-config"}}
"#,
        "2",
    );
    assert!(!succeeded, "{stderr}");
    assert!(
        stderr.contains(
            "the controller did not make a probe example.com/v1 Widget Ready within 2s: the \
             cluster does not serve example.com/v1 Widget (a definition installs its CRD only \
             when it has spec.schema)"
        ),
        "{stderr}"
    );
}
