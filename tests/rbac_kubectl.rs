//! RBAC as a user meets it through the real `kubectl`: `dynrec apiserver --authorization
//! rbac` with `kubectl auth can-i`, `--as` and kube's Forbidden, and `deploy/` (the
//! ClusterRole `dynrec rbac` prints, applied with `kubectl apply -k`, strict validation).

mod process_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dynrec_test_support::process::{ChildGuard, Run, kubectl_on_path};
use serde_json::Value;
use tempfile::TempDir;

/// How long one kubectl call may take (the longest waits 20 s for a condition).
const KUBECTL_DEADLINE: Duration = Duration::from_secs(60);

/// A `dynrec apiserver` process and kubectl calls against it, in one temp dir.
struct Cluster {
    /// Declared first so it drops first: the server stops before its temp dir goes.
    _server: ChildGuard,
    kubectl: PathBuf,
    dir: TempDir,
}

impl Cluster {
    /// Starts the server; `None` when kubectl is missing and the test is skipped.
    fn start(extra: &[&str]) -> Option<Cluster> {
        let kubectl = kubectl_on_path()?;
        let dir = tempfile::tempdir().unwrap();
        let (server, _) = process_common::start_apiserver(dir.path(), "127.0.0.1:0", extra);
        Some(Cluster {
            _server: server,
            kubectl,
            dir,
        })
    }

    /// Runs kubectl with this cluster's kubeconfig and its own discovery cache.
    fn kubectl(&self, args: &[&str]) -> Run {
        process_common::kubectl(&self.kubectl, self.dir.path(), args, KUBECTL_DEADLINE)
    }

    /// Runs kubectl and fails the test unless it succeeds; returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
        self.kubectl(args)
            .expect_ok(&format!("kubectl {args:?}"))
            .stdout
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const AS_SA: &str = "--as=system:serviceaccount:ns:sa";

#[test]
fn kubectl_auth_can_i_and_as_a_service_account_follow_the_bindings() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,u1,\"auditors\"\n").unwrap();
    let Some(cluster) = Cluster::start(&[
        "--authorization",
        "rbac",
        "--token-auth-file",
        tokens.to_str().unwrap(),
    ]) else {
        return;
    };
    cluster.ok(&["create", "namespace", "ns"]);
    cluster.ok(&["create", "serviceaccount", "sa", "-n", "ns"]);
    cluster.ok(&[
        "create",
        "role",
        "writer",
        "--verb=create,get",
        "--resource=configmaps",
        "-n",
        "ns",
    ]);
    cluster.ok(&[
        "create",
        "rolebinding",
        "writer",
        "--role=writer",
        "--serviceaccount=ns:sa",
        "-n",
        "ns",
    ]);

    assert_eq!(
        cluster
            .ok(&["auth", "can-i", "create", "configmaps", "-n", "ns", AS_SA])
            .trim(),
        "yes"
    );
    let denied = cluster.kubectl(&["auth", "can-i", "delete", "configmaps", "-n", "ns", AS_SA]);
    assert_eq!(
        (denied.status.code(), denied.stdout.trim()),
        (Some(1), "no")
    );
    let listed = cluster.ok(&["auth", "can-i", "--list", "-n", "ns", AS_SA]);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("configmaps ") && l.contains("[create get]")),
        "{listed}"
    );

    cluster.ok(&["create", "configmap", "c1", "-n", "ns", AS_SA]);
    let refused = cluster.kubectl(&["create", "configmap", "c2", "-n", "default", AS_SA]);
    assert!(!refused.succeeded());
    assert_eq!(
        refused.stderr.trim(),
        "error: failed to create configmap: configmaps is forbidden: User \"system:serviceaccount:ns:sa\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    // A token-file user is who the token says, and may not impersonate.
    let whoami = cluster.ok(&["auth", "whoami", "--token=alice-token", "-o", "json"]);
    let whoami: Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(whoami["status"]["userInfo"]["username"], "alice");
    let refused = cluster.kubectl(&[
        "get",
        "configmaps",
        "-n",
        "ns",
        "--token=alice-token",
        AS_SA,
    ]);
    assert!(
        refused
            .stderr
            .contains("users \"system:serviceaccount:ns:sa\" is forbidden")
            || refused
                .stderr
                .contains("serviceaccounts \"sa\" is forbidden"),
        "{}",
        refused.stderr
    );
}

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

#[test]
fn deploy_s_cluster_role_is_what_dynrec_rbac_prints_and_is_bound_to_the_deployment_s_account() {
    let printed = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .arg("rbac")
        .output()
        .unwrap();
    assert!(printed.status.success(), "{}", text(&printed.stderr));
    let written = std::fs::read_to_string(deploy_dir().join("clusterrole.yaml")).unwrap();
    assert_eq!(
        written,
        text(&printed.stdout),
        "deploy/clusterrole.yaml differs from `dynrec rbac`: regenerate it with `dynrec rbac > deploy/clusterrole.yaml`"
    );
    let read = |file: &str| -> Value {
        serde_saphyr::from_str(&std::fs::read_to_string(deploy_dir().join(file)).unwrap()).unwrap()
    };
    let (role, binding, account, deployment) = (
        read("clusterrole.yaml"),
        read("clusterrolebinding.yaml"),
        read("serviceaccount.yaml"),
        read("deployment.yaml"),
    );
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    let subject = &binding["subjects"][0];
    assert_eq!(
        (&subject["kind"], &subject["name"], &subject["namespace"]),
        (
            &Value::from("ServiceAccount"),
            &account["metadata"]["name"],
            &account["metadata"]["namespace"]
        )
    );
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], account["metadata"]["name"]);
    assert_eq!(
        deployment["metadata"]["namespace"],
        account["metadata"]["namespace"]
    );
}

/// Whether every field of `written` is in `stored` with the same value.
fn contains(stored: &Value, written: &Value) -> bool {
    match (stored, written) {
        (Value::Object(stored), Value::Object(written)) => written
            .iter()
            .all(|(key, value)| stored.get(key).is_some_and(|s| contains(s, value))),
        (Value::Array(stored), Value::Array(written)) => {
            stored.len() == written.len() && stored.iter().zip(written).all(|(s, w)| contains(s, w))
        }
        // A port given by name or number is stored as given.
        _ => stored == written,
    }
}

#[test]
fn kubectl_apply_k_deploy_is_accepted_as_written_with_strict_validation() {
    let Some(cluster) = Cluster::start(&[]) else {
        return;
    };
    let deploy = deploy_dir();
    let deploy = deploy.to_str().unwrap();
    let rendered = cluster.ok(&["create", "-k", deploy, "--dry-run=client", "-o", "json"]);
    let items: Vec<Value> = serde_json::Deserializer::from_str(&rendered)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    let applied = cluster.ok(&["apply", "-k", deploy, "--validate=strict"]);
    let kinds: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "ServiceAccount",
            "Role",
            "ClusterRole",
            "ClusterRole",
            "ClusterRole",
            "ClusterRole",
            "RoleBinding",
            "ClusterRoleBinding",
            "ClusterRoleBinding",
            "ClusterRoleBinding",
            "Service",
            "Service",
            "Deployment",
            "PodDisruptionBudget"
        ]
    );
    for item in &items {
        let (kind, name) = (
            item["kind"].as_str().unwrap(),
            item["metadata"]["name"].as_str().unwrap(),
        );
        let mut args = vec!["get", kind, name, "-o", "json"];
        if let Some(namespace) = item["metadata"]["namespace"].as_str() {
            args.extend(["-n", namespace]);
        }
        let stored: Value = serde_json::from_str(&cluster.ok(&args)).unwrap();
        assert!(
            contains(&stored, item),
            "{kind} {name} was not stored as written ({applied})\nwritten: {item:#}\nstored: {stored:#}"
        );
    }
    let deployment = items.iter().find(|i| i["kind"] == "Deployment").unwrap();
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let container = &pod["containers"][0];
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        container["securityContext"]["capabilities"]["drop"][0],
        "ALL"
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert!(
        container["args"]
            .as_array()
            .unwrap()
            .contains(&Value::from("--leader-elect=true"))
    );
}

/// `GET path` on a loopback port: the status code and the body.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let code = reply.split(' ').nth(1)?.parse().ok()?;
    let body = reply.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

/// Polls `/readyz` until `check` holds for its answer; fails with the last answer.
fn wait_readyz(port: u16, what: &str, check: impl Fn(u16, &str) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut last = None;
    while std::time::Instant::now() < deadline {
        last = http_get(port, "/readyz");
        if last.as_ref().is_some_and(|(code, body)| check(*code, body)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("timed out waiting until {what}; last /readyz: {last:?}");
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `dynrec run ARGS` as the Deployment's ServiceAccount (with a token kubectl creates for
/// it, as its pod would have one), its log in `run.log`; returns it and its /readyz port.
fn run_as_deployed_account(cluster: &Cluster, args: &[String]) -> (ChildGuard, u16) {
    let token = cluster.ok(&["create", "token", "dynrec", "-n", "dynrec-system"]);
    let mut config: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(cluster.dir.path().join("kubeconfig")).unwrap(),
    )
    .unwrap();
    config["users"][0]["user"]["token"] = Value::from(token.trim());
    let account_config = cluster.dir.path().join("account.kubeconfig");
    std::fs::write(&account_config, config.to_string()).unwrap();
    let port = free_port();
    let log = std::fs::File::create(cluster.dir.path().join("run.log")).unwrap();
    let controller = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(&account_config)
        .args(args)
        .arg(format!("--health-probe-bind-address=127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    (ChildGuard(controller), port)
}

#[test]
fn dynrec_run_as_the_deployed_account_waits_for_a_definition_s_permissions_and_names_them() {
    let Some(cluster) = Cluster::start(&["--authorization", "rbac"]) else {
        return;
    };
    cluster.ok(&["apply", "-k", deploy_dir().to_str().unwrap()]);
    let leader_election = [
        "--leader-elect",
        "--leader-election-namespace=dynrec-system",
    ];
    let (_guard, port) = run_as_deployed_account(&cluster, &leader_election.map(String::from));
    wait_readyz(
        port,
        "dynrec run is ready with the deployed role",
        |code, _| code == 200,
    );

    let definition =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/definitions/widgets.yaml");
    cluster.ok(&["apply", "-f", definition.to_str().unwrap()]);
    wait_readyz(
        port,
        "the definition's missing permissions are named",
        |code, body| {
            code == 503
            && body.contains("cannot create configmaps in API group \"\" (needed by ConfigMapUpdatingObjectManager in definition/widgets)")
        },
    );
    // It keeps checking, and says what is missing once.
    std::thread::sleep(std::time::Duration::from_secs(6));
    let logged = std::fs::read_to_string(cluster.dir.path().join("run.log")).unwrap();
    let said = logged
        .lines()
        .filter(|l| l.contains("missing permission") && l.contains("cannot create configmaps"))
        .count();
    assert_eq!(said, 1, "{logged}");
    let printed = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .args(["rbac", "-f"])
        .arg(&definition)
        .output()
        .unwrap();
    let role = cluster.dir.path().join("role.yaml");
    std::fs::write(&role, &printed.stdout).unwrap();
    cluster.ok(&["apply", "-f", role.to_str().unwrap()]);
    wait_readyz(
        port,
        "the definition's controller starts once granted",
        |code, _| code == 200,
    );
    let widget = cluster.dir.path().join("widget.yaml");
    std::fs::write(
        &widget,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {greeting: hi}\n",
    )
    .unwrap();
    cluster.ok(&["apply", "-f", widget.to_str().unwrap()]);
    cluster.ok(&[
        "wait",
        "--for=condition=Ready",
        "widget/w1",
        "--timeout=20s",
    ]);
    let data = cluster.ok(&[
        "get",
        "configmap",
        "w1-config",
        "-o",
        "jsonpath={.data.greeting}",
    ]);
    assert_eq!(data, "hi");
}

/// The Deployment's `dynrec run` arguments, its ports moved to free loopback ones (the
/// health port is the caller's); returns them and the webhook's port.
fn deployed_run_args() -> (Vec<String>, u16) {
    let deployment: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(deploy_dir().join("deployment.yaml")).unwrap(),
    )
    .unwrap();
    let webhook_port = free_port();
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .filter(|arg| *arg != "run" && !arg.starts_with("--health-probe-bind-address="))
        .map(|arg| match arg.split_once('=') {
            Some(("--metrics-bind-address", _)) => "--metrics-bind-address=0".to_owned(),
            Some(("--impersonation-webhook", _)) => {
                format!("--impersonation-webhook=127.0.0.1:{webhook_port}")
            }
            _ => arg.to_owned(),
        })
        .collect();
    (args, webhook_port)
}

#[test]
fn the_deployed_webhook_refuses_a_definition_naming_an_account_its_author_may_not_impersonate() {
    let Some(cluster) = Cluster::start(&["--authorization", "rbac"]) else {
        return;
    };
    cluster.ok(&["apply", "-k", deploy_dir().to_str().unwrap()]);
    let (args, webhook_port) = deployed_run_args();
    assert!(
        args.contains(&"--webhook-service=dynrec-system/dynrec-webhook".to_owned()),
        "{args:?}"
    );
    let (_guard, port) = run_as_deployed_account(&cluster, &args);
    wait_readyz(port, "dynrec run is ready", |code, _| code == 200);

    // Registered behind the Service, trusting the certificate of the Secret.
    let configuration: Value = serde_json::from_str(&cluster.ok(&[
        "get",
        "validatingwebhookconfiguration",
        "serviceaccounts.reconcilerdefinitions.dynrec.dev",
        "-o",
        "json",
    ]))
    .unwrap();
    let client = &configuration["webhooks"][0]["clientConfig"];
    assert_eq!(
        client["service"],
        serde_json::json!({"namespace": "dynrec-system", "name": "dynrec-webhook",
            "path": "/validate-serviceaccount", "port": webhook_port})
    );
    let certificate = cluster.ok(&[
        "get",
        "secret",
        "dynrec-webhook-tls",
        "-n",
        "dynrec-system",
        "-o",
        "jsonpath={.data.tls\\.crt}",
    ]);
    assert_eq!(client["caBundle"], certificate.as_str());
    let service_port = cluster.ok(&[
        "get",
        "service",
        "dynrec-webhook",
        "-n",
        "dynrec-system",
        "-o",
        "jsonpath={.spec.ports[0].targetPort}",
    ]);
    assert_eq!(service_port, "webhook");

    // alice may write definitions, but not act as team-a's account: the webhook says so.
    cluster.ok(&["create", "namespace", "team-a"]);
    cluster.ok(&["create", "serviceaccount", "reconciler", "-n", "team-a"]);
    cluster.ok(&[
        "create",
        "clusterrole",
        "definition-writer",
        "--verb=create,get,update,patch",
        "--resource=reconcilerdefinitions.dynrec.dev",
    ]);
    cluster.ok(&[
        "create",
        "clusterrolebinding",
        "alice-writes-definitions",
        "--clusterrole=definition-writer",
        "--user=alice",
    ]);
    let definition = cluster.dir.path().join("team-a.yaml");
    std::fs::write(
        &definition,
        "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata: {name: team-a-notes}\nspec:\n  for: {apiVersion: v1, kind: ConfigMap}\n  serviceAccount: {name: reconciler, namespace: team-a}\n  steps: []\n",
    )
    .unwrap();
    let file = definition.to_str().unwrap();
    let refused = cluster.kubectl(&["create", "-f", file, "--as=alice"]);
    assert!(!refused.status.success(), "{}", refused.describe());
    assert!(
        refused.stderr.contains(
            "admission webhook \"serviceaccounts.reconcilerdefinitions.dynrec.dev\" denied the request: serviceaccounts \"reconciler\" is forbidden: User \"alice\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"team-a\""
        ),
        "{}",
        refused.describe()
    );

    // Allowed to impersonate it by a Role in team-a alone, alice may name it.
    cluster.ok(&[
        "create",
        "role",
        "impersonate-reconciler",
        "-n",
        "team-a",
        "--verb=impersonate",
        "--resource=serviceaccounts",
        "--resource-name=reconciler",
    ]);
    cluster.ok(&[
        "create",
        "rolebinding",
        "alice-impersonates-reconciler",
        "-n",
        "team-a",
        "--role=impersonate-reconciler",
        "--user=alice",
    ]);
    cluster.ok(&["create", "-f", file, "--as=alice"]);
}
