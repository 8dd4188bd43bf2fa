//! The `dynrec` binary as an operator meets it: which cluster each command uses (never one
//! picked up from `~/.kube/config` alone, a running `dynrec run`'s server reused, its
//! kubeconfig left alone), each subcommand's flags, and `/metrics` over HTTPS for callers
//! the API server authenticates and authorizes, with controller-runtime's series.

mod process_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dynrec_test_support::process::{ChildGuard, Run, kubectl_on_path, run};
use serde_json::Value;

const DEADLINE: Duration = Duration::from_secs(30);

fn dynrec() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dynrec"));
    command
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("RUST_LOG");
    command
}

/// A home directory whose `~/.kube/config` points at a cluster that does not exist.
fn home_with_a_kubeconfig(dir: &Path) -> (PathBuf, String) {
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".kube")).unwrap();
    let config = "apiVersion: v1\nkind: Config\ncurrent-context: prod\n\
        clusters: [{name: prod, cluster: {server: 'https://127.0.0.1:9'}}]\n\
        contexts: [{name: prod, context: {cluster: prod, user: admin}}]\n\
        users: [{name: admin, user: {token: secret}}]\n";
    std::fs::write(home.join(".kube/config"), config).unwrap();
    (home, config.to_string())
}

/// Waits until the file has a first line, and returns it.
fn first_line(path: &Path) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some((first, _)) = text.split_once('\n') {
            return first.to_string();
        }
        assert!(Instant::now() < deadline, "{} got no line", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `dynrec run -f widgets` in `dir` with `home` as HOME, logging JSON to `dir/run.log`.
fn start_run(dir: &Path, home: &Path, extra: &[&str]) -> ChildGuard {
    let log = std::fs::File::create(dir.join("run.log")).unwrap();
    let child = dynrec()
        .current_dir(dir)
        .env("HOME", home)
        .args(["run", "--log-format", "json", "-f"])
        .arg(process_common::widgets_definition())
        .args(extra)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    ChildGuard(child)
}

/// Waits until `path` exists and returns its text.
fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.is_empty()
        {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} was not written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Option<Run> {
    let kubectl = kubectl_on_path()?;
    Some(run(
        Command::new(kubectl)
            .env_remove("KUBECONFIG")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--request-timeout=10s")
            .args(args),
        DEADLINE,
    ))
}

#[test]
fn run_with_only_a_home_kubeconfig_uses_the_embedded_server_and_says_so_first() {
    let dir = tempfile::tempdir().unwrap();
    let (home, config) = home_with_a_kubeconfig(dir.path());
    let _run = start_run(dir.path(), &home, &[]);
    let first: Value = serde_json::from_str(&first_line(&dir.path().join("run.log"))).unwrap();
    let said = first["msg"].as_str().unwrap_or_default();
    assert!(
        said.starts_with("cluster: embedded API server at http://127.0.0.1:"),
        "the first line says the embedded server is used: {first}"
    );
    let written = wait_for_file(&dir.path().join(".dynrec/kubeconfig"));
    assert!(!written.contains("9'"), "{written}");
    assert_eq!(
        std::fs::read_to_string(home.join(".kube/config")).unwrap(),
        config,
        "~/.kube/config is left as it was"
    );

    // Asking for it by context uses it, and says which context and server.
    let asked = run(
        dynrec()
            .current_dir(dir.path())
            .env("HOME", &home)
            .args(["ducks", "--context", "prod"]),
        DEADLINE,
    );
    assert!(
        asked
            .stderr
            .lines()
            .next()
            .is_some_and(|l| l.contains(r#"cluster: context "prod" at https://127.0.0.1:9/"#)),
        "{}",
        asked.describe()
    );
    assert!(
        !asked.succeeded(),
        "nothing listens there: {}",
        asked.describe()
    );
}

/// Ctrl-C on `dynrec run` with its embedded server stops it even while `kubectl get -w` holds
/// a watch open on that server (a graceful shutdown waits for open requests: the server cuts
/// its watches, and one resumed meanwhile ends at once).
#[test]
fn sigterm_stops_run_on_the_embedded_server_while_kubectl_watches() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (home, _) = home_with_a_kubeconfig(dir.path());
    let mut running = start_run(dir.path(), &home, &[]);
    let kubeconfig = dir.path().join(".dynrec/kubeconfig");
    wait_for_file(&kubeconfig);
    let watch_log = dir.path().join("watch.log");
    let _watching = ChildGuard(
        Command::new(kubectl)
            .env_remove("KUBECONFIG")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["get", "configmaps", "-A", "-w", "--output-watch-events"])
            .stdout(std::fs::File::create(&watch_log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // kubectl printed the list: its watch is open.
    first_line(&watch_log);
    let pid = running.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = running.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "dynrec run still runs {DEADLINE:?} after SIGTERM, with kubectl watching:\n{}",
            std::fs::read_to_string(dir.path().join("run.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "dynrec run exits cleanly: {status}");
}

#[test]
fn plan_beside_a_running_run_plans_against_its_server_and_leaves_its_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _) = home_with_a_kubeconfig(dir.path());
    let _run = start_run(dir.path(), &home, &[]);
    let kubeconfig = dir.path().join(".dynrec/kubeconfig");
    let written = wait_for_file(&kubeconfig);
    let widget = dir.path().join("widget.yaml");
    std::fs::write(
        &widget,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {greeting: hi}\n",
    )
    .unwrap();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let Some(applied) = kubectl(&kubeconfig, &["apply", "-f", widget.to_str().unwrap()]) else {
            return;
        };
        if applied.succeeded() {
            break;
        }
        assert!(Instant::now() < deadline, "{}", applied.describe());
        std::thread::sleep(Duration::from_millis(100));
    }

    let plan = run(
        dynrec()
            .current_dir(dir.path())
            .env("HOME", &home)
            .args(["plan", "-f"])
            .arg(process_common::widgets_definition()),
        DEADLINE,
    );
    let first = plan.stderr.lines().next().unwrap_or_default().to_string();
    assert!(
        first.contains("cluster: the embedded API server of a running dynrec at http://127.0.0.1:")
            && first.contains(&kubeconfig.display().to_string()),
        "plan says it uses the running dynrec's server: {}",
        plan.describe()
    );
    assert!(
        plan.stdout.contains("widgets default/w1"),
        "plan sees the running server's Widget: {}",
        plan.describe()
    );
    assert_eq!(
        std::fs::read_to_string(&kubeconfig).unwrap(),
        written,
        "plan leaves .dynrec/kubeconfig as it was"
    );
    assert!(
        kubectl(&kubeconfig, &["get", "widgets"]).is_some_and(|r| r.succeeded()),
        "kubectl still reaches the running server"
    );
}

#[test]
fn run_and_rbac_refuse_an_invalid_definition_saying_what_is_wrong_once() {
    let dir = tempfile::tempdir().unwrap();
    let definition = dir.path().join("copy.yaml");
    std::fs::write(
        &definition,
        "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\n\
         metadata: {name: copy}\n\
         spec:\n  for: {apiVersion: v1, kind: ConfigMap}\n  steps:\n\
         \x20   - child:\n        id: copy\n        template:\n\
         \x20         apiVersion: v1\n          kind: Secret\n\
         \x20         metadata: {name: '${self.metadata.nme}'}\n",
    )
    .unwrap();
    let out = run(
        dynrec()
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .args(["run", "--embedded", "-f", "copy.yaml"]),
        DEADLINE,
    );
    let rbac = run(
        dynrec()
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .args(["rbac", "-f", "copy.yaml"]),
        DEADLINE,
    );
    assert!(!rbac.status.success(), "{}", rbac.stderr);
    assert!(!out.status.success(), "{}", out.stderr);
    let problem = r#"self.metadata has no field "nme""#;
    let located = r#"error: starting definition "copy": copy.yaml (document 1): spec.steps[0].child.template.metadata.name: ${self.metadata.nme}: self.metadata has no field "nme""#;
    for (what, stderr) in [("run", &out.stderr), ("rbac", &rbac.stderr)] {
        assert_eq!(stderr.matches(problem).count(), 1, "{what}: {stderr}");
        assert_eq!(stderr.matches("copy.yaml").count(), 1, "{what}: {stderr}");
        assert!(stderr.contains(located), "{what}: {stderr}");
    }
}

#[test]
fn each_subcommand_s_help_lists_only_its_flags() {
    let help = |command: &str| {
        let output = run(dynrec().args([command, "--help"]), DEADLINE);
        assert!(output.succeeded(), "{}", output.describe());
        output.stdout
    };
    let manager_flags = [
        "--workers",
        "--leader-elect",
        "--leader-election-namespace",
        "--leader-election-id",
        "--metrics-bind-address",
        "--metrics-secure",
        "--health-probe-bind-address",
        "--shutdown-timeout",
    ];
    let cluster_flags = ["--kubeconfig", "--context", "--embedded", "--data-dir"];
    let log_flags = ["--log-format", "--log-level", "-v"];
    let run_help = help("run");
    for flag in manager_flags.iter().chain(&cluster_flags).chain(&log_flags) {
        assert!(
            run_help.contains(flag),
            "run --help lists {flag}:\n{run_help}"
        );
    }
    for command in ["plan", "ducks"] {
        let text = help(command);
        for flag in cluster_flags.iter().chain(&log_flags) {
            assert!(
                text.contains(flag),
                "{command} --help lists {flag}:\n{text}"
            );
        }
        for flag in manager_flags {
            assert!(
                !text.contains(flag),
                "{command} --help has no {flag}:\n{text}"
            );
        }
    }
    // test runs chainsaw tests and definition cases against a cluster it is given, its
    // controllers in-process with fixed settings: no manager flags.
    let test_help = help("test");
    for flag in &cluster_flags {
        assert!(
            test_help.contains(flag),
            "test --help lists {flag}:\n{test_help}"
        );
    }
    for flag in manager_flags {
        assert!(
            !test_help.contains(flag),
            "test --help has no {flag}:\n{test_help}"
        );
    }
}

/// `curl` of an HTTPS URL (self-signed: -k) with an optional bearer token: status and body.
/// The value of the series `series` (name and labels) in a Prometheus text exposition.
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

fn curl(url: &str, token: Option<&str>) -> (u16, String) {
    let mut command = Command::new("curl");
    command.args(["-sk", "--max-time", "10", "-w", "\n%{http_code}", url]);
    if let Some(token) = token {
        command.args(["-H", &format!("Authorization: Bearer {token}")]);
    }
    let output = command.output().expect("curl runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

#[test]
fn metrics_over_https_need_a_token_the_api_server_authenticates_and_authorizes() {
    if kubectl_on_path().is_none() || Command::new("curl").arg("--version").output().is_err() {
        eprintln!("kubectl or curl missing: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_server, _) =
        process_common::start_apiserver(dir.path(), "127.0.0.1:0", &["--authorization", "rbac"]);
    let kubeconfig = dir.path().join("kubeconfig");
    let ok = |args: &[&str]| {
        kubectl(&kubeconfig, args)
            .unwrap()
            .expect_ok(&format!("kubectl {args:?}"))
            .stdout
    };
    let reader_role = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/metrics_reader_role.yaml");
    ok(&["apply", "-f", reader_role.to_str().unwrap()]);
    ok(&["create", "serviceaccount", "prometheus"]);
    ok(&["create", "serviceaccount", "nosy"]);
    ok(&[
        "create",
        "clusterrolebinding",
        "prometheus-metrics",
        "--clusterrole=dynrec-metrics-reader",
        "--serviceaccount=default:prometheus",
    ]);
    let allowed = ok(&["create", "token", "prometheus"]);
    let refused = ok(&["create", "token", "nosy"]);

    let (metrics_port, probe_port) = (process_common::free_port(), process_common::free_port());
    let log = std::fs::File::create(dir.path().join("run.log")).unwrap();
    let controller = dynrec()
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("-f")
        .arg(process_common::widgets_definition())
        .arg("--leader-elect=false")
        .arg(format!("--metrics-bind-address=127.0.0.1:{metrics_port}"))
        .arg(format!(
            "--health-probe-bind-address=127.0.0.1:{probe_port}"
        ))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let _controller = ChildGuard(controller);
    let widget = dir.path().join("widget.yaml");
    std::fs::write(
        &widget,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {greeting: hi}\n",
    )
    .unwrap();
    let url = format!("https://127.0.0.1:{metrics_port}/metrics");
    let reconciled =
        r#"controller_runtime_reconcile_total{controller="definition/widgets",result="success"}"#;
    // The series exists (at 0) from the controller's start; wait until it counts a reconcile.
    let deadline = Instant::now() + DEADLINE;
    let body = loop {
        let _ = kubectl(&kubeconfig, &["apply", "-f", widget.to_str().unwrap()]);
        let (code, body) = curl(&url, Some(allowed.trim()));
        if code == 200 && sample(&body, reconciled).is_some_and(|count| count >= 1.0) {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "a scrape with the reader's token shows the reconcile; last: {code} {body}\nlog:\n{}",
            std::fs::read_to_string(dir.path().join("run.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    for series in [
        r#"controller_runtime_reconcile_time_seconds_bucket{controller="definition/widgets",le="0.005"}"#,
        r#"controller_runtime_max_concurrent_reconciles{controller="definition/widgets"} 2"#,
        r#"controller_runtime_active_workers{controller="definition/widgets"}"#,
        r#"workqueue_depth{controller="definition/widgets",name="definition/widgets",priority=""}"#,
        r#"workqueue_adds_total{controller="definition/widgets",name="definition/widgets"}"#,
        r#"workqueue_queue_duration_seconds_count{controller="definition/widgets",name="definition/widgets"}"#,
        r#"workqueue_work_duration_seconds_count{controller="definition/widgets",name="definition/widgets"}"#,
        r#"workqueue_unfinished_work_seconds{controller="definition/widgets",name="definition/widgets"}"#,
        r#"workqueue_longest_running_processor_seconds{controller="definition/widgets",name="definition/widgets"}"#,
        r#"rest_client_requests_total{code="200",host="127.0.0.1:"#,
        r#"rest_client_request_duration_seconds_count{host="127.0.0.1:"#,
    ] {
        assert!(body.contains(series), "/metrics has {series}:\n{body}");
    }

    assert_eq!(curl(&url, None), (401, "Unauthorized\n".to_string()));
    assert_eq!(curl(&url, Some("not-a-token")).0, 401);
    assert_eq!(
        curl(&url, Some(refused.trim())),
        (
            403,
            "Authorization denied for user system:serviceaccount:default:nosy\n".to_string()
        )
    );
    // The probes stay plain HTTP on their own port, open to the kubelet.
    let probe = Command::new("curl")
        .args(["-s", &format!("http://127.0.0.1:{probe_port}/healthz")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&probe.stdout), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_namespaces_reconciles_only_objects_in_them() {
    use kube::api::{Api, ApiResource, DynamicObject, PostParams};
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = process_common::start_apiserver(dir.path(), "127.0.0.1:0", &[]);
    let log = dir.path().join("run.log");
    let _controller = process_common::start_widgets_controller(
        dir.path(),
        &log,
        None,
        &["--namespace", "a", "-n", "c"],
    );
    let kube = process_common::client(&url);
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(kube.clone());
    for name in ["a", "b", "c"] {
        let namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}));
        namespaces
            .create(&PostParams::default(), &namespace.unwrap())
            .await
            .unwrap();
    }
    let widgets = ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let configmaps = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
    let create = |namespace: &'static str| {
        let api: Api<DynamicObject> = Api::namespaced_with(kube.clone(), namespace, &widgets);
        let widget: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1"}, "spec": {"greeting": namespace}}))
        .unwrap();
        async move { api.create(&PostParams::default(), &widget).await.is_ok() }
    };
    let deadline = Instant::now() + DEADLINE;
    while !create("b").await {
        assert!(Instant::now() < deadline, "the Widget kind is served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(create("a").await && create("c").await);
    for namespace in ["a", "c"] {
        let api: Api<DynamicObject> = Api::namespaced_with(kube.clone(), namespace, &configmaps);
        while api.get_opt("w1-config").await.unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "the Widget in {namespace} is reconciled\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let in_b: Api<DynamicObject> = Api::namespaced_with(kube.clone(), "b", &configmaps);
    assert!(
        in_b.get_opt("w1-config").await.unwrap().is_none(),
        "the Widget in b, created first, is left alone"
    );
    let widget_in_b: Api<DynamicObject> = Api::namespaced_with(kube.clone(), "b", &widgets);
    let untouched = widget_in_b.get("w1").await.unwrap();
    assert!(untouched.data.get("status").is_none(), "{untouched:?}");
}
