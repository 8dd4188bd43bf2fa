//! The real `kubectl` against `dynrec apiserver`, driven as a user would drive it.
//!
//! Every test starts its own server (`dynrec apiserver --listen 127.0.0.1:0`) with its own
//! temp dir for the kubeconfig and kubectl's discovery cache, so tests share nothing and run
//! in parallel. Every child process has a deadline and is killed when its guard drops.
//!
//! Without `kubectl` on the PATH the kubectl tests print why they are skipped and pass,
//! unless `CI=true`, where the absence of kubectl fails them.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use dynrec_test_support::process::{ChildGuard, Run, Watch, kubectl_on_path, run};
use serde_json::Value;
use tempfile::TempDir;

/// How long the server may take to print its address.
const SERVER_START_DEADLINE: Duration = Duration::from_secs(30);
/// How long one kubectl call (or one short-lived `dynrec` run) may take.
const COMMAND_DEADLINE: Duration = Duration::from_secs(30);
/// How long a watching kubectl may take to print an expected event.
const WATCH_EVENT_DEADLINE: Duration = Duration::from_secs(20);
/// `--request-timeout` of every short kubectl call.
const REQUEST_TIMEOUT: &str = "--request-timeout=10s";

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
    shortNames: [wd]
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              description: What the widget should be.
              properties:
                size:
                  type: integer
                  description: How many parts the widget has.
                color:
                  type: string
                  description: The colour the widget is painted.
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
"#;

const WIDGET_W1: &str = r#"apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
spec:
  size: 3
  color: blue
"#;

const WIDGET_HELD: &str = r#"apiVersion: example.com/v1
kind: Widget
metadata:
  name: held
  finalizers:
    - example.com/hold
spec:
  size: 1
"#;

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[test]
fn a_crd_applied_with_kubectl_becomes_established_and_serves_its_kind() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, None);

    let crd = server.write("crd.yaml", WIDGET_CRD);
    let applied = server
        .apply(&crd)
        .expect_ok("kubectl apply of the Widget CRD");
    assert_contains(
        &applied,
        &applied.stdout,
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created",
    );
    server
        .kubectl(&[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=10s",
        ])
        .expect_ok("kubectl wait for the CRD to be Established");

    let crd_json = server
        .kubectl(&["get", "crd", "widgets.example.com", "-o", "json"])
        .expect_ok("kubectl get of the CRD")
        .json();
    let established = conditions(&crd_json)
        .into_iter()
        .find(|c| c["type"] == "Established");
    assert_eq!(
        established.as_ref().map(|c| c["status"].clone()),
        Some(Value::from("True")),
        "expected the CRD to have condition Established=True, got status {}",
        crd_json["status"]
    );
    assert_eq!(
        crd_json["status"]["acceptedNames"]["shortNames"],
        serde_json::json!(["wd"]),
        "expected the accepted names to carry the short name, got status {}",
        crd_json["status"]
    );

    let w1 = server.write("w1.yaml", WIDGET_W1);
    let created = server.apply(&w1).expect_ok("kubectl apply of widget w1");
    assert_contains(&created, &created.stdout, "widget.example.com/w1 created");
    let widget = server
        .kubectl(&["get", "widget", "w1", "-o", "json"])
        .expect_ok("kubectl get of widget w1")
        .json();
    assert_eq!(widget["apiVersion"], "example.com/v1", "widget: {widget}");
    assert_eq!(widget["kind"], "Widget", "widget: {widget}");
    assert_eq!(
        widget["metadata"]["namespace"], "default",
        "widget: {widget}"
    );
    assert_eq!(
        widget["spec"],
        serde_json::json!({"size": 3, "color": "blue"}),
        "expected the spec as applied (every field is in the schema), got {widget}"
    );
}

#[test]
fn api_resources_lists_what_a_1_32_cluster_lists_plus_the_widget_kind() {
    let Some(server) = Server::with_widgets() else {
        return;
    };
    let run = server
        .kubectl(&["api-resources"])
        .expect_ok("kubectl api-resources");
    // api-resources has no JSON output (only wide and name): read its table by header column.
    let rows = table(&run);
    let columns = ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"];
    let mut listed: Vec<String> = rows
        .iter()
        .map(|row| columns.map(|c| cell(row, c)).join(" "))
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    listed.sort();
    // `kubectl api-resources` against a default kind v1.32 cluster, plus the Widget CRD.
    let mut expected: Vec<String> = API_RESOURCES_1_32
        .lines()
        .chain(["widgets wd example.com/v1 true Widget"])
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|line| !line.is_empty())
        .collect();
    expected.sort();
    let missing: Vec<&String> = expected.iter().filter(|e| !listed.contains(e)).collect();
    let extra: Vec<&String> = listed.iter().filter(|l| !expected.contains(l)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "kubectl api-resources differs from a 1.32 cluster's:\n  missing: {missing:?}\n  extra: {extra:?}\n{}",
        run.describe()
    );
}

/// `kubectl api-resources` of a default v1.32 cluster (kind): NAME, SHORTNAMES (left out
/// where there are none), APIVERSION, NAMESPACED and KIND.
const API_RESOURCES_1_32: &str = "
bindings v1 true Binding
componentstatuses cs v1 false ComponentStatus
configmaps cm v1 true ConfigMap
endpoints ep v1 true Endpoints
events ev v1 true Event
limitranges limits v1 true LimitRange
namespaces ns v1 false Namespace
nodes no v1 false Node
persistentvolumeclaims pvc v1 true PersistentVolumeClaim
persistentvolumes pv v1 false PersistentVolume
pods po v1 true Pod
podtemplates v1 true PodTemplate
replicationcontrollers rc v1 true ReplicationController
resourcequotas quota v1 true ResourceQuota
secrets v1 true Secret
serviceaccounts sa v1 true ServiceAccount
services svc v1 true Service
mutatingwebhookconfigurations admissionregistration.k8s.io/v1 false MutatingWebhookConfiguration
validatingadmissionpolicies admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicy
validatingadmissionpolicybindings admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicyBinding
validatingwebhookconfigurations admissionregistration.k8s.io/v1 false ValidatingWebhookConfiguration
customresourcedefinitions crd,crds apiextensions.k8s.io/v1 false CustomResourceDefinition
apiservices apiregistration.k8s.io/v1 false APIService
controllerrevisions apps/v1 true ControllerRevision
daemonsets ds apps/v1 true DaemonSet
deployments deploy apps/v1 true Deployment
replicasets rs apps/v1 true ReplicaSet
statefulsets sts apps/v1 true StatefulSet
selfsubjectreviews authentication.k8s.io/v1 false SelfSubjectReview
tokenreviews authentication.k8s.io/v1 false TokenReview
localsubjectaccessreviews authorization.k8s.io/v1 true LocalSubjectAccessReview
selfsubjectaccessreviews authorization.k8s.io/v1 false SelfSubjectAccessReview
selfsubjectrulesreviews authorization.k8s.io/v1 false SelfSubjectRulesReview
subjectaccessreviews authorization.k8s.io/v1 false SubjectAccessReview
horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler
cronjobs cj batch/v1 true CronJob
jobs batch/v1 true Job
certificatesigningrequests csr certificates.k8s.io/v1 false CertificateSigningRequest
leases coordination.k8s.io/v1 true Lease
endpointslices discovery.k8s.io/v1 true EndpointSlice
events ev events.k8s.io/v1 true Event
flowschemas flowcontrol.apiserver.k8s.io/v1 false FlowSchema
prioritylevelconfigurations flowcontrol.apiserver.k8s.io/v1 false PriorityLevelConfiguration
ingressclasses networking.k8s.io/v1 false IngressClass
ingresses ing networking.k8s.io/v1 true Ingress
networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy
runtimeclasses node.k8s.io/v1 false RuntimeClass
poddisruptionbudgets pdb policy/v1 true PodDisruptionBudget
clusterrolebindings rbac.authorization.k8s.io/v1 false ClusterRoleBinding
clusterroles rbac.authorization.k8s.io/v1 false ClusterRole
rolebindings rbac.authorization.k8s.io/v1 true RoleBinding
roles rbac.authorization.k8s.io/v1 true Role
priorityclasses pc scheduling.k8s.io/v1 false PriorityClass
csidrivers storage.k8s.io/v1 false CSIDriver
csinodes storage.k8s.io/v1 false CSINode
csistoragecapacities storage.k8s.io/v1 true CSIStorageCapacity
storageclasses sc storage.k8s.io/v1 false StorageClass
volumeattachments storage.k8s.io/v1 false VolumeAttachment
";

#[test]
fn kubectl_get_shows_a_new_widget_with_the_metadata_the_server_sets() {
    let Some(server) = Server::with_widgets() else {
        return;
    };
    let run = server
        .kubectl(&["get", "widgets"])
        .expect_ok("kubectl get widgets");
    let rows = table(&run);
    let names: Vec<&str> = rows.iter().map(|row| cell(row, "NAME")).collect();
    assert_eq!(
        names,
        ["w1"],
        "expected `kubectl get widgets` to list w1 only\n{}",
        run.describe()
    );
    assert!(
        rows[0].contains_key("AGE"),
        "expected an AGE column as for any CRD without printer columns\n{}",
        run.describe()
    );

    let run = server
        .kubectl(&["get", "wd", "w1", "-o", "json"])
        .expect_ok("kubectl get wd w1 -o json (by short name)");
    let widget = run.json();
    let meta = &widget["metadata"];
    assert_eq!(meta["name"], "w1", "{}", run.describe());
    let uid = meta["uid"].as_str().unwrap_or_default();
    assert!(
        uid.len() == 36 && uid.chars().filter(|c| *c == '-').count() == 4,
        "expected a UUID in metadata.uid\n{}",
        run.describe()
    );
    let rv = meta["resourceVersion"].as_str().unwrap_or_default();
    assert!(
        !rv.is_empty(),
        "expected metadata.resourceVersion to be set\n{}",
        run.describe()
    );
    assert_eq!(
        meta["generation"],
        1,
        "expected generation 1 on a new object\n{}",
        run.describe()
    );
    assert!(
        is_utc_timestamp(&meta["creationTimestamp"]),
        "expected metadata.creationTimestamp like 2026-01-01T00:00:00Z\n{}",
        run.describe()
    );
    assert!(
        meta.get("deletionTimestamp").is_none(),
        "a new object has no deletionTimestamp\n{}",
        run.describe()
    );
}

#[test]
fn merge_and_json_patches_change_the_spec_and_bump_the_generation() {
    let Some(server) = Server::with_widgets() else {
        return;
    };
    let before = server.widget("w1");

    server
        .kubectl(&[
            "patch",
            "widget",
            "w1",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"size":4}}"#,
        ])
        .expect_ok("kubectl patch --type merge of the spec");
    let merged = server.widget("w1");
    assert_eq!(merged["spec"]["size"], 4, "after merge patch: {merged}");
    assert_eq!(
        merged["spec"]["color"], "blue",
        "after merge patch: {merged}"
    );
    assert_eq!(
        merged["metadata"]["generation"], 2,
        "a spec change bumps the generation: {merged}"
    );
    assert_ne!(
        merged["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "a change gets a new resourceVersion: {merged}"
    );

    server
        .kubectl(&[
            "patch",
            "widget",
            "w1",
            "--type",
            "json",
            "-p",
            r#"[{"op":"test","path":"/spec/size","value":4},{"op":"replace","path":"/spec/color","value":"red"}]"#,
        ])
        .expect_ok("kubectl patch --type json whose test op holds");
    let patched = server.widget("w1");
    assert_eq!(
        patched["spec"]["color"], "red",
        "after JSON patch: {patched}"
    );
    assert_eq!(patched["spec"]["size"], 4, "after JSON patch: {patched}");
    assert_eq!(
        patched["metadata"]["generation"], 3,
        "a spec change bumps the generation: {patched}"
    );

    server
        .kubectl(&[
            "patch",
            "widget",
            "w1",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"labels":{"tier":"gold"}}}"#,
        ])
        .expect_ok("kubectl patch --type merge of a label");
    let labelled = server.widget("w1");
    assert_eq!(
        labelled["metadata"]["labels"]["tier"], "gold",
        "after label patch: {labelled}"
    );
    assert_eq!(
        labelled["metadata"]["generation"], 3,
        "a metadata-only change keeps the generation: {labelled}"
    );
    assert_ne!(
        labelled["metadata"]["resourceVersion"], patched["metadata"]["resourceVersion"],
        "a label change gets a new resourceVersion: {labelled}"
    );
}

#[test]
fn a_json_patch_whose_test_op_fails_is_refused_and_changes_nothing() {
    let Some(server) = Server::with_widgets() else {
        return;
    };
    let before = server.widget("w1");
    let run = server.kubectl(&[
        "patch",
        "widget",
        "w1",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/spec/size","value":99},{"op":"replace","path":"/spec/color","value":"green"}]"#,
    ]);
    assert!(
        !run.succeeded(),
        "expected kubectl to fail on a JSON patch whose test op fails\n{}",
        run.describe()
    );
    assert!(
        !run.stderr.trim().is_empty(),
        "expected kubectl to say why the patch failed\n{}",
        run.describe()
    );
    let after = server.widget("w1");
    assert_eq!(
        after, before,
        "a refused JSON patch must leave the object as it was (spec, generation, resourceVersion)"
    );
}

#[test]
fn the_status_subresource_changes_status_but_not_spec_or_generation() {
    let Some(server) = Server::with_widgets() else {
        return;
    };
    server
        .kubectl(&[
            "patch",
            "widget",
            "w1",
            "--subresource=status",
            "--type",
            "merge",
            "-p",
            r#"{"status":{"phase":"Ready"},"spec":{"size":100}}"#,
        ])
        .expect_ok("kubectl patch --subresource=status");
    let widget = server.widget("w1");
    assert_eq!(
        widget["status"]["phase"], "Ready",
        "status patch sets status: {widget}"
    );
    assert_eq!(
        widget["spec"]["size"], 3,
        "the status subresource ignores spec changes: {widget}"
    );
    assert_eq!(
        widget["metadata"]["generation"], 1,
        "a status change keeps the generation: {widget}"
    );

    server
        .kubectl(&[
            "patch",
            "widget",
            "w1",
            "--type",
            "merge",
            "-p",
            r#"{"status":{"phase":"Broken"}}"#,
        ])
        .expect_ok("kubectl patch of status through the main resource");
    let widget = server.widget("w1");
    assert_eq!(
        widget["status"]["phase"], "Ready",
        "with a status subresource, the main resource ignores status changes: {widget}"
    );
}

#[test]
fn deleting_a_widget_with_a_finalizer_waits_for_the_finalizer() {
    let Some(server) = Server::with_widgets() else {
        return;
    };
    let held = server.write("held.yaml", WIDGET_HELD);
    server
        .apply(&held)
        .expect_ok("kubectl apply of a widget with a finalizer");

    server
        .kubectl(&["delete", "widget", "held", "--wait=false"])
        .expect_ok("kubectl delete --wait=false of a widget with a finalizer");
    let run = server
        .kubectl(&["get", "widget", "held", "-o", "json"])
        .expect_ok("kubectl get of a widget being deleted (its finalizer holds it)");
    let widget = run.json();
    assert!(
        is_utc_timestamp(&widget["metadata"]["deletionTimestamp"]),
        "expected deletionTimestamp to be set on a deleted object with a finalizer\n{}",
        run.describe()
    );
    assert_eq!(
        widget["metadata"]["finalizers"],
        serde_json::json!(["example.com/hold"]),
        "the finalizer stays until removed\n{}",
        run.describe()
    );
    assert_eq!(
        server.widget_names(),
        ["held", "w1"],
        "a widget held by its finalizer is still listed"
    );

    server
        .kubectl(&[
            "patch",
            "widget",
            "held",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ])
        .expect_ok("kubectl patch removing the finalizer");
    let gone = server.kubectl(&["get", "widget", "held", "-o", "json"]);
    assert!(
        !gone.succeeded() && gone.stderr.contains("(NotFound)") && gone.stderr.contains("held"),
        "expected `kubectl get` to say NotFound once the last finalizer is gone\n{}",
        gone.describe()
    );
    assert_eq!(
        server.widget_names(),
        ["w1"],
        "the widget is gone from the list once its finalizer is removed"
    );
}

#[test]
fn a_watching_kubectl_sees_a_patch_made_by_another_kubectl() {
    let Some(server) = Server::with_widgets() else {
        return;
    };
    // A watch is a long request: it gets a request timeout longer than the test needs, and
    // the test's own deadline (WATCH_EVENT_DEADLINE per event) bounds it.
    let mut command = server.kubectl_command(
        &server.kubeconfig,
        "--request-timeout=60s",
        &[
            "get",
            "widgets",
            "-w",
            "-o",
            "json",
            "--output-watch-events",
        ],
    );
    let watch = Watch::start(&mut command, WATCH_EVENT_DEADLINE);

    // kubectl lists first, prints the list as ADDED events, then watches from the list's
    // resourceVersion: a change made after this point is never missed.
    let added = watch.next_event("an ADDED event for w1", |event| {
        event["type"] == "ADDED" && event["object"]["metadata"]["name"] == "w1"
    });
    assert_eq!(added["object"]["spec"]["size"], 3, "event: {added}");

    server
        .kubectl(&[
            "patch",
            "widget",
            "w1",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"size":9}}"#,
        ])
        .expect_ok("kubectl patch while another kubectl watches");
    let modified = watch.next_event("a MODIFIED event for w1 with spec.size 9", |event| {
        event["type"] == "MODIFIED"
            && event["object"]["metadata"]["name"] == "w1"
            && event["object"]["spec"]["size"] == 9
    });
    assert_eq!(
        modified["object"]["metadata"]["generation"], 2,
        "the watched object carries the new generation: {modified}"
    );
}

#[test]
fn typed_create_run_and_expose_send_protobuf_and_leave_what_a_cluster_would() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, None);
    for (args, printed) in [
        (
            &["create", "namespace", "demo"][..],
            "namespace/demo created",
        ),
        (
            &[
                "create",
                "configmap",
                "settings",
                "-n",
                "demo",
                "--from-literal=mode=fast",
                "--from-literal=level=3",
            ][..],
            "configmap/settings created",
        ),
        (
            &[
                "create",
                "secret",
                "generic",
                "creds",
                "-n",
                "demo",
                "--from-literal=password=s3cr3t",
            ][..],
            "secret/creds created",
        ),
        (
            &["create", "deployment", "web", "-n", "demo", "--image=nginx"][..],
            "deployment.apps/web created",
        ),
    ] {
        let run = server
            .kubectl(args)
            .expect_ok(&format!("kubectl {}", args.join(" ")));
        assert_contains(&run, &run.stdout, printed);
    }

    let namespace = server.get_json(&["namespace", "demo"]);
    assert_eq!(
        namespace["status"]["phase"], "Active",
        "namespace: {namespace}"
    );
    let configmap = server.get_json(&["configmap", "settings", "-n", "demo"]);
    assert_eq!(
        configmap["data"],
        serde_json::json!({"mode": "fast", "level": "3"}),
        "configmap: {configmap}"
    );
    assert_eq!(
        configmap["metadata"]["namespace"], "demo",
        "configmap: {configmap}"
    );
    let secret = server.get_json(&["secret", "creds", "-n", "demo"]);
    assert_eq!(
        secret["data"],
        serde_json::json!({"password": "czNjcjN0"}),
        "expected the secret's value base64-encoded as in any cluster: {secret}"
    );
    let deployment = server.get_json(&["deployment", "web", "-n", "demo"]);
    assert_eq!(
        deployment["spec"]["replicas"], 1,
        "deployment: {deployment}"
    );
    assert_eq!(
        deployment["spec"]["selector"],
        serde_json::json!({"matchLabels": {"app": "web"}}),
        "deployment: {deployment}"
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"],
        serde_json::json!([{"name": "nginx", "image": "nginx", "resources": {},
            "imagePullPolicy": "Always", "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File"}]),
        "expected the container as kubectl built it (no zero-valued fields) with kube's defaults: {deployment}"
    );
    assert_eq!(
        deployment["spec"]["strategy"],
        serde_json::json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
        "kubectl sends strategy: {{}}; kube defaults it: {deployment}"
    );

    // A protobuf 0 is a 0: replicas is a Go pointer, sent only when set.
    server
        .kubectl(&[
            "create",
            "deployment",
            "zero",
            "-n",
            "demo",
            "--image=nginx",
            "--replicas=0",
        ])
        .expect_ok("kubectl create deployment --replicas=0");
    let zero = server.get_json(&["deployment", "zero", "-n", "demo"]);
    assert_eq!(zero["spec"]["replicas"], 0, "deployment: {zero}");
    assert!(
        is_utc_timestamp(&deployment["metadata"]["creationTimestamp"]),
        "deployment: {deployment}"
    );

    server
        .kubectl(&[
            "expose",
            "deployment",
            "web",
            "-n",
            "demo",
            "--port=8080",
            "--target-port=80",
        ])
        .expect_ok("kubectl expose deployment web");
    let service = server.get_json(&["service", "web", "-n", "demo"]);
    assert_eq!(
        service["spec"]["ports"],
        serde_json::json!([{"port": 8080, "protocol": "TCP", "targetPort": 80}]),
        "expected the target port as an integer (int-or-string): {service}"
    );
    server
        .kubectl(&[
            "run",
            "once",
            "-n",
            "demo",
            "--image=busybox",
            "--restart=Never",
            "--",
            "true",
        ])
        .expect_ok("kubectl run once");
    let pod = server.get_json(&["pod", "once", "-n", "demo"]);
    assert_eq!(pod["spec"]["restartPolicy"], "Never", "pod: {pod}");
    assert_eq!(
        pod["spec"]["containers"][0]["args"],
        serde_json::json!(["true"]),
        "pod: {pod}"
    );

    let all = server
        .kubectl(&["get", "all", "-n", "demo"])
        .expect_ok("kubectl get all -n demo");
    for listed in ["deployment.apps/web", "service/web", "pod/once"] {
        assert_contains(&all, &all.stdout, listed);
    }
}

const GREETER_DEFINITION: &str = r#"apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata: {name: greeters}
spec:
  for: {apiVersion: example.com/v1, kind: Greeter}
  schema:
    openAPIV3Schema:
      type: object
      properties:
        spec: {type: object, properties: {name: {type: string}}}
  steps:
  - child:
      id: note
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${self.metadata.name}-note"}
        data: {hello: "hello ${self.spec.name}"}
"#;

#[test]
fn a_definition_applied_with_kubectl_is_run_by_dynrec_run_and_reports_its_status() {
    let Some(server) = kubectl_on_path().map(|kubectl| Server::start(kubectl, None)) else {
        return;
    };
    let log = server.write("run.log", "");
    let mut run = Command::new(env!("CARGO_BIN_EXE_dynrec"));
    run.args(["run", "--leader-elect=false", "--kubeconfig"])
        .arg(&server.kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let _running = ChildGuard(run.spawn().expect("dynrec run starts"));
    // dynrec run installs the ReconcilerDefinition CRD; kubectl can use it once served.
    let deadline = Instant::now() + COMMAND_DEADLINE;
    while !server
        .kubectl(&["get", "reconcilerdefinitions"])
        .status
        .success()
    {
        assert!(
            Instant::now() < deadline,
            "dynrec run installs the ReconcilerDefinition CRD\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        thread::sleep(Duration::from_millis(100));
    }
    let definition = server.write("greeters.yaml", GREETER_DEFINITION);
    let applied = Instant::now();
    server
        .apply(&definition)
        .expect_ok("kubectl apply of the definition");
    let greeter = server.write(
        "g1.yaml",
        "apiVersion: example.com/v1\nkind: Greeter\nmetadata: {name: g1, namespace: default}\nspec: {name: bob}\n",
    );
    while !server.apply(&greeter).status.success() {
        assert!(
            Instant::now() < applied + COMMAND_DEADLINE,
            "the Greeter kind is served"
        );
        thread::sleep(Duration::from_millis(50));
    }
    loop {
        let note = server.kubectl(&[
            "get",
            "configmap",
            "g1-note",
            "-o",
            "jsonpath={.data.hello}",
        ]);
        if note.status.success() && note.stdout == "hello bob" {
            break;
        }
        assert!(
            Instant::now() < applied + COMMAND_DEADLINE,
            "the definition reconciles g1\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        thread::sleep(Duration::from_millis(50));
    }
    eprintln!("definition applied to first child: {:?}", applied.elapsed());
    let listed = server
        .kubectl(&["get", "reconcilerdefinitions"])
        .expect_ok("kubectl get reconcilerdefinitions");
    assert_contains(&listed, &listed.stdout, "example.com/v1/Greeter");
    let bad = server.write(
        "bad.yaml",
        &GREETER_DEFINITION.replace("self.spec.name", "self.spec.nam"),
    );
    server.apply(&bad).expect_ok("kubectl apply of a bad edit");
    loop {
        let compiled = server.kubectl(&[
            "get",
            "rd",
            "greeters",
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="Compiled")].message}"#,
        ]);
        if compiled.stdout.contains("self.spec has no field \"nam\"") {
            assert_contains(
                &compiled,
                &compiled.stdout,
                "spec.steps[0].child.template.data.hello",
            );
            assert_contains(&compiled, &compiled.stdout, "keeps running");
            break;
        }
        assert!(
            Instant::now() < applied + COMMAND_DEADLINE,
            "the bad edit is reported: {}",
            compiled.describe()
        );
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn kubectl_explain_prints_the_descriptions_of_crd_and_builtin_fields() {
    let Some(server) = Server::with_widgets() else {
        return;
    };
    let run = server
        .kubectl(&["explain", "widget.spec"])
        .expect_ok("kubectl explain widget.spec");
    assert_contains(&run, &run.stdout, "What the widget should be.");
    assert_contains(&run, &run.stdout, "How many parts the widget has.");
    let run = server
        .kubectl(&["explain", "wd.spec.color"])
        .expect_ok("kubectl explain wd.spec.color");
    assert_contains(&run, &run.stdout, "The colour the widget is painted.");
    let run = server
        .kubectl(&["explain", "deployment.spec.replicas"])
        .expect_ok("kubectl explain deployment.spec.replicas");
    assert_contains(&run, &run.stdout, "Number of desired pods.");
}

#[test]
fn strict_field_validation_refuses_an_unknown_field_and_names_it() {
    let Some(server) = Server::with_widgets() else {
        return;
    };
    let body = server.write(
        "w2.json",
        r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"size":1,"shape":"round"}}"#,
    );
    let body = body.to_string_lossy();
    let raw = server
        .kubectl(&[
            "create",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Strict",
            "-f",
            &body,
        ])
        .expect_failure("a Strict create with an unknown field");
    assert_contains(&raw, &raw.stderr, "spec.shape");

    let yaml = server.write(
        "w3.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w3\nspec:\n  size: 1\n  shape: round\n",
    );
    let yaml = yaml.to_string_lossy();
    let applied = server
        .kubectl(&["apply", "--validate=strict", "-f", &yaml])
        .expect_failure("kubectl apply --validate=strict with an unknown field");
    assert_contains(&applied, &applied.stderr, "unknown field \"spec.shape\"");
    assert_eq!(
        server.widget_names(),
        ["w1"],
        "a refused create must store nothing"
    );
}

#[test]
fn kubectl_describe_shows_the_events_recorded_for_a_widget() {
    let Some(server) = Server::with_widgets() else {
        return;
    };
    let uid = server.widget("w1")["metadata"]["uid"].clone();
    let event = server.write(
        "event.json",
        &serde_json::json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "w1.painted", "namespace": "default"},
            "involvedObject": {"apiVersion": "example.com/v1", "kind": "Widget",
                "name": "w1", "namespace": "default", "uid": uid},
            "reason": "Painted",
            "message": "widget w1 is painted blue",
            "type": "Normal",
            "source": {"component": "widget-controller"},
            "count": 1,
        })
        .to_string(),
    );
    server
        .apply(&event)
        .expect_ok("kubectl apply of an Event about w1");
    let run = server
        .kubectl(&["describe", "widget", "w1"])
        .expect_ok("kubectl describe widget w1");
    assert_contains(&run, &run.stdout, "Color:  blue");
    let events = run.stdout.split("Events:").nth(1).unwrap_or_default();
    assert!(
        events.contains("Painted") && events.contains("widget w1 is painted blue"),
        "expected describe to list the event under Events:\n{}",
        run.describe()
    );
}

#[test]
fn kubectl_version_and_describe_of_a_builtin_kind_work() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, None);
    let version = server.kubectl(&["version"]).expect_ok("kubectl version");
    assert_contains(&version, &version.stdout, "Server Version: v1.32.0-dynrec");
    server
        .kubectl(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=mode=fast",
        ])
        .expect_ok("kubectl create configmap");
    let run = server
        .kubectl(&["describe", "configmap", "settings"])
        .expect_ok("kubectl describe configmap settings");
    assert_contains(&run, &run.stdout, "Name:         settings");
    assert_contains(&run, &run.stdout, "mode:");
}

const DEPLOYMENT_V1: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: app
          image: example/app:1
          env:
            - {name: A, value: "1"}
            - {name: B, value: "2"}
        - name: side
          image: example/side:1
"#;

const DEPLOYMENT_V2: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: app
          image: example/app:2
          env:
            - {name: A, value: "1"}
        - name: extra
          image: example/extra:1
"#;

/// (name, image) of each container of a Deployment, in order.
fn containers(deployment: &Value) -> Vec<(String, String)> {
    deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| {
                    let text = |f: &str| c[f].as_str().unwrap_or_default().to_string();
                    (text("name"), text("image"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn client_side_apply_of_a_changed_deployment_leaves_what_a_cluster_would() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, None);
    let first = server.write("web-v1.yaml", DEPLOYMENT_V1);
    server
        .apply(&first)
        .expect_ok("kubectl apply of the Deployment");
    let second = server.write("web-v2.yaml", DEPLOYMENT_V2);
    let updated = server
        .apply(&second)
        .expect_ok("kubectl apply of the changed Deployment");
    assert_contains(&updated, &updated.stdout, "deployment.apps/web configured");

    let web = server.get_json(&["deployment", "web"]);
    assert_eq!(
        containers(&web),
        vec![
            ("app".to_string(), "example/app:2".to_string()),
            ("extra".to_string(), "example/extra:1".to_string())
        ],
        "the removed container is gone, the changed one updated, the new one added, in manifest order: {web}"
    );
    let env = &web["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(
        env,
        &serde_json::json!([{"name": "A", "value": "1"}]),
        "B was removed: {web}"
    );
    assert_eq!(
        web["spec"]["replicas"], 1,
        "replicas, dropped from the manifest, is removed and defaulted to 1 as a cluster does: {web}"
    );
    let annotation =
        web["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap_or_default();
    let last_applied: Value = serde_json::from_str(annotation).unwrap_or_else(|err| {
        panic!("the last-applied annotation is JSON ({err}): {annotation:?}")
    });
    assert_eq!(
        containers(&last_applied),
        containers(&web),
        "the annotation records the second manifest: {last_applied}"
    );
    assert!(
        last_applied["spec"].get("replicas").is_none(),
        "{last_applied}"
    );
}

#[test]
fn server_side_apply_twice_with_a_changed_manifest_takes_ownership_and_removes_fields() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, None);
    let first = server.write("web-v1.yaml", DEPLOYMENT_V1);
    let first_path = first.to_string_lossy().to_string();
    server
        .kubectl(&["apply", "--server-side", "-f", &first_path])
        .expect_ok("kubectl apply --server-side");
    let web = server.get_json(&["deployment", "web", "--show-managed-fields"]);
    assert_eq!(web["spec"]["replicas"], 2);
    let managers: Vec<(&str, &str)> = web["metadata"]["managedFields"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or_default(),
                        e["operation"].as_str().unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(managers, vec![("kubectl", "Apply")], "{web}");

    let second = server.write("web-v2.yaml", DEPLOYMENT_V2);
    let second_path = second.to_string_lossy().to_string();
    server
        .kubectl(&["apply", "--server-side", "-f", &second_path])
        .expect_ok("kubectl apply --server-side of the changed manifest");
    let web = server.get_json(&["deployment", "web"]);
    assert_eq!(
        web["spec"]["replicas"], 1,
        "a field no longer applied is removed (and replicas defaulted to 1, as a cluster does): {web}"
    );
    assert_eq!(
        containers(&web),
        vec![
            ("app".to_string(), "example/app:2".to_string()),
            ("extra".to_string(), "example/extra:1".to_string())
        ],
        "{web}"
    );

    // Another manager that applies a different image conflicts, until it forces.
    let third = server.write(
        "web-other.yaml",
        &DEPLOYMENT_V2.replace("example/app:2", "example/app:3"),
    );
    let third_path = third.to_string_lossy().to_string();
    let conflict = server
        .kubectl(&[
            "apply",
            "--server-side",
            "--field-manager=other",
            "-f",
            &third_path,
        ])
        .expect_failure("a conflicting server-side apply");
    assert_contains(&conflict, &conflict.stderr, "conflict");
    server
        .kubectl(&[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            &third_path,
        ])
        .expect_ok("a forced server-side apply");
    assert_eq!(
        containers(&server.get_json(&["deployment", "web"]))[0].1,
        "example/app:3"
    );
}

#[test]
fn kubectl_get_prints_a_crds_printer_columns() {
    let crd = WIDGET_CRD.replace(
        "      subresources:\n        status: {}\n",
        "      subresources:\n        status: {}\n      additionalPrinterColumns:\n        - {name: Size, type: integer, jsonPath: .spec.size}\n        - {name: Color, type: string, jsonPath: .spec.color}\n",
    );
    let Some(server) = Server::with_widget_crd(&crd) else {
        return;
    };
    let table = server
        .kubectl(&["get", "widgets"])
        .expect_ok("kubectl get widgets");
    let lines: Vec<Vec<&str>> = table
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines.first(),
        Some(&vec!["NAME", "SIZE", "COLOR"]),
        "{}",
        table.stdout
    );
    assert_eq!(
        lines.get(1),
        Some(&vec!["w1", "3", "blue"]),
        "{}",
        table.stdout
    );
}

#[test]
fn kubectl_scale_changes_a_deployments_replicas_through_the_scale_subresource() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, None);
    server
        .kubectl(&["create", "deployment", "web", "--image=nginx"])
        .expect_ok("kubectl create deployment");
    let run = server
        .kubectl(&["scale", "deployment", "web", "--replicas=3"])
        .expect_ok("kubectl scale deployment");
    assert_eq!(run.stdout.trim(), "deployment.apps/web scaled");
    let deployment = server.get_json(&["deployment", "web"]);
    assert_eq!(deployment["spec"]["replicas"], 3, "{deployment}");
    let table = server
        .kubectl(&["get", "deployment", "web", "--subresource=scale"])
        .expect_ok("kubectl get deployment --subresource=scale");
    let lines: Vec<Vec<&str>> = table
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        vec![vec!["NAME", "DESIRED", "AVAILABLE"], vec!["web", "3", "0"]],
        "{}",
        table.stdout
    );
    let run = server
        .kubectl(&[
            "scale",
            "deployment",
            "web",
            "--replicas=5",
            "--current-replicas=2",
        ])
        .expect_failure("kubectl scale with a wrong --current-replicas");
    assert!(
        run.stderr.contains("Expected replicas to be 2, was 3"),
        "{}",
        run.describe()
    );
}

#[test]
fn kubectl_scale_changes_a_custom_objects_spec_replicas_path() {
    let crd = WIDGET_CRD.replace(
        "      subresources:\n        status: {}\n",
        "      subresources:\n        status: {}\n        scale:\n          specReplicasPath: .spec.size\n          statusReplicasPath: .status.size\n",
    );
    let Some(server) = Server::with_widget_crd(&crd) else {
        return;
    };
    let run = server
        .kubectl(&["scale", "widget", "w1", "--replicas=7"])
        .expect_ok("kubectl scale widget");
    assert_eq!(run.stdout.trim(), "widget.example.com/w1 scaled");
    assert_eq!(server.widget("w1")["spec"]["size"], 7);
}

#[test]
fn kubectl_get_prints_a_list_valued_printer_column_as_json() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, None);
    let crd = WIDGET_CRD
        .replace(
            "      subresources:\n        status: {}\n",
            "      subresources:\n        status: {}\n      additionalPrinterColumns:\n        - {name: Hosts, type: string, jsonPath: .spec.hosts}\n",
        )
        .replace(
            "                size:\n",
            "                hosts:\n                  type: array\n                  items: {type: string}\n                size:\n",
        );
    let crd = server.write("crd.yaml", &crd);
    server
        .apply(&crd)
        .expect_ok("kubectl apply of the Widget CRD with a list column");
    server
        .kubectl(&[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=10s",
        ])
        .expect_ok("kubectl wait for the CRD");
    let w1 = server.write(
        "w1.yaml",
        &WIDGET_W1.replace("spec:\n", "spec:\n  hosts: [reviews]\n"),
    );
    server.apply(&w1).expect_ok("kubectl apply of widget w1");
    let table = server
        .kubectl(&["get", "widgets"])
        .expect_ok("kubectl get widgets");
    let lines: Vec<Vec<&str>> = table
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        vec![vec!["NAME", "HOSTS"], vec!["w1", "[\"reviews\"]"]],
        "{}",
        table.stdout
    );
}

#[test]
fn kubectl_with_a_wrong_token_is_unauthorized_by_a_server_started_with_a_token() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, Some("s3cret"));
    let mut config = read_json(&server.kubeconfig);
    assert_eq!(
        config["users"][0]["user"]["token"], "s3cret",
        "expected the written kubeconfig to carry the token: {config}"
    );
    // (A kubeconfig with no credentials at all makes kubectl prompt for a password, as it
    // does against any cluster; a wrong token is what reaches the server.)
    config["users"][0]["user"]["token"] = serde_json::json!("not-the-token");
    let no_token = server.write(
        "wrong-token.kubeconfig",
        &serde_json::to_string_pretty(&config).unwrap_or_default(),
    );

    // A kubeconfig with another token, and `--token wrong`: all are refused.
    let runs = [
        server.kubectl_with(&no_token, &["get", "configmaps", "-o", "json"]),
        server.kubectl_with(
            &no_token,
            &["get", "--raw", "/api/v1/namespaces/default/configmaps"],
        ),
        server.kubectl(&["--token", "wrong", "get", "configmaps", "-o", "json"]),
    ];
    for run in runs {
        assert!(
            !run.succeeded() && is_unauthorized(&run.stderr),
            "expected kubectl without the right token to fail with Unauthorized\n{}",
            run.describe()
        );
    }
}

#[test]
fn a_server_started_with_tls_writes_credentials_into_its_kubeconfig() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start_with(kubectl, &["--tls"]);
    let mut config = read_json(&server.kubeconfig);
    let token = config["users"][0]["user"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        token.len() >= 32,
        "expected a generated token, so kubectl does not prompt for a user name: {config}"
    );
    server
        .kubectl(&["get", "namespaces", "-o", "name"])
        .expect_ok("kubectl get namespaces with the written kubeconfig");
    config["users"][0]["user"]["token"] = serde_json::json!("not-the-token");
    let wrong = server.write(
        "wrong.kubeconfig",
        &serde_json::to_string_pretty(&config).unwrap_or_default(),
    );
    let run = server.kubectl_with(&wrong, &["get", "namespaces"]);
    assert!(
        !run.succeeded() && is_unauthorized(&run.stderr),
        "the generated token is required\n{}",
        run.describe()
    );
}

#[test]
fn a_cluster_s_standing_objects_deletes_and_pod_subresources_answer_kubectl_as_kube_does() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, None);
    server
        .kubectl(&["create", "namespace", "team"])
        .expect_ok("kubectl create namespace");
    let listed = server
        .kubectl(&[
            "get",
            "serviceaccounts,configmaps",
            "-n",
            "team",
            "-o",
            "name",
        ])
        .expect_ok("kubectl get serviceaccounts,configmaps");
    assert_eq!(
        listed.stdout.lines().collect::<Vec<_>>(),
        ["serviceaccount/default", "configmap/kube-root-ca.crt"],
        "a new namespace holds what a cluster puts there\n{}",
        listed.describe()
    );
    let service = server.get_json(&["service", "kubernetes", "-n", "default"]);
    assert_eq!(service["spec"]["clusterIP"], "10.96.0.1", "{service}");

    server
        .kubectl(&["create", "configmap", "gone", "-n", "team"])
        .expect_ok("kubectl create configmap");
    let deleted = server
        .kubectl(&["delete", "configmap", "gone", "-n", "team"])
        .expect_ok("kubectl delete configmap");
    assert_contains(&deleted, &deleted.stdout, "configmap \"gone\" deleted");

    server
        .kubectl(&["run", "web", "-n", "team", "--image=nginx"])
        .expect_ok("kubectl run");
    let pod = server.get_json(&["pod", "web", "-n", "team"]);
    assert_eq!(pod["status"]["phase"], "Pending", "{pod}");
    for args in [
        &["logs", "web", "-n", "team"][..],
        &["exec", "web", "-n", "team", "--", "true"][..],
    ] {
        let run = server
            .kubectl(args)
            .expect_failure(&format!("kubectl {}", args.join(" ")));
        assert_contains(&run, &run.stderr, "pod web does not have a host assigned");
    }
    let explained = server
        .kubectl(&["explain", "ingress.spec.rules"])
        .expect_ok("kubectl explain ingress.spec.rules");
    assert_contains(&explained, &explained.stdout, "host");
}

#[test]
fn tokens_reviews_and_drain_work_through_kubectl() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, None);
    let token = server
        .kubectl(&["create", "token", "default"])
        .expect_ok("kubectl create token default");
    assert_eq!(
        token.stdout.trim().split('.').count(),
        3,
        "a JWT\n{}",
        token.describe()
    );
    let whoami = server
        .kubectl(&["auth", "whoami", "-o", "json"])
        .expect_ok("kubectl auth whoami")
        .json();
    assert_eq!(
        whoami["status"]["userInfo"]["username"], "kubernetes-admin",
        "{whoami}"
    );
    let can = server
        .kubectl(&["auth", "can-i", "delete", "nodes"])
        .expect_ok("kubectl auth can-i");
    assert_eq!(can.stdout.trim(), "yes", "{}", can.describe());

    let node = server.write(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n",
    );
    server.apply(&node).expect_ok("kubectl apply of a Node");
    let pod = server.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  nodeName: node-1\n  containers:\n  - name: c\n    image: nginx:1.27\n",
    );
    server
        .apply(&pod)
        .expect_ok("kubectl apply of a Pod on node-1");
    let drained = server
        .kubectl(&["drain", "node-1", "--force", "--timeout=20s"])
        .expect_ok("kubectl drain");
    assert_contains(&drained, &drained.stdout, "pod/web evicted");
    assert_contains(&drained, &drained.stdout, "node/node-1 drained");
    let node = server.get_json(&["node", "node-1"]);
    assert_eq!(node["spec"]["unschedulable"], true, "cordoned: {node}");
}

#[test]
fn kubectl_with_the_written_kubeconfig_is_let_in_by_a_server_started_with_a_token() {
    let Some(kubectl) = kubectl_on_path() else {
        return;
    };
    let server = Server::start(kubectl, Some("s3cret"));
    let config = read_json(&server.kubeconfig);
    let url = config["clusters"][0]["cluster"]["server"]
        .as_str()
        .unwrap_or_default();
    assert!(
        url.starts_with("https://127.0.0.1:"),
        "a server with a token serves https (kubectl sends tokens only over TLS): {config}"
    );
    let list = server
        .kubectl(&["get", "configmaps", "-o", "json"])
        .expect_ok("kubectl get configmaps with the kubeconfig written by a server with a token")
        .json();
    assert_eq!(
        list["kind"], "List",
        "expected a list of configmaps: {list}"
    );
}

#[test]
fn the_cli_refuses_a_non_loopback_address_unless_remote_access_is_allowed_with_a_token() {
    let dir = temp_dir();
    let kubeconfig = dir.path().join("kubeconfig");
    let dynrec = |extra: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dynrec"));
        command
            .args(["apiserver", "--listen", "0.0.0.0:0", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(extra);
        run(&mut command, COMMAND_DEADLINE)
    };

    let refused = dynrec(&[]);
    assert!(
        !refused.succeeded() && refused.stderr.contains("loopback"),
        "expected `dynrec apiserver --listen 0.0.0.0:0` to fail and mention loopback\n{}",
        refused.describe()
    );
    assert!(
        !refused.stdout.contains("listening"),
        "a refused server must not listen\n{}",
        refused.describe()
    );
    assert!(
        !kubeconfig.exists(),
        "a refused server must not write a kubeconfig"
    );

    let no_token = dynrec(&["--allow-remote"]);
    assert!(
        !no_token.succeeded() && no_token.stderr.contains("--token"),
        "expected --allow-remote without --token to fail and ask for --token\n{}",
        no_token.describe()
    );
    assert!(
        !kubeconfig.exists(),
        "a refused server must not write a kubeconfig"
    );
}

// ---------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------

/// A `dynrec apiserver` child process, with a temp dir for its kubeconfig and kubectl's cache.
struct Server {
    /// Declared first so it drops first: the server stops before its temp dir goes.
    _process: ChildGuard,
    kubectl: PathBuf,
    dir: TempDir,
    kubeconfig: PathBuf,
}

impl Server {
    /// Starts `dynrec apiserver` on a free loopback port and waits for its address.
    fn start(kubectl: PathBuf, token: Option<&str>) -> Server {
        match token {
            Some(token) => Server::start_with(kubectl, &["--token", token]),
            None => Server::start_with(kubectl, &[]),
        }
    }

    /// Starts `dynrec apiserver` with extra arguments and waits for its address.
    fn start_with(kubectl: PathBuf, extra: &[&str]) -> Server {
        let dir = temp_dir();
        let kubeconfig = dir.path().join("kubeconfig");
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path)
            .unwrap_or_else(|err| panic!("cannot create {}: {err}", log_path.display()));
        let mut command = Command::new(env!("CARGO_BIN_EXE_dynrec"));
        command
            .args(["apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        command.args(extra);
        let mut process = ChildGuard(
            command
                .spawn()
                .unwrap_or_else(|err| panic!("cannot start dynrec apiserver: {err}")),
        );

        let (lines, printed) = mpsc::channel();
        let stdout = process.0.stdout.take();
        thread::spawn(move || {
            let Some(stdout) = stdout else { return };
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                // Once nobody listens, keep draining so the server never blocks on stdout.
                let _ = lines.send(line);
            }
        });
        let deadline = Instant::now() + SERVER_START_DEADLINE;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match printed.recv_timeout(left) {
                Ok(line) => {
                    if line.starts_with("dynrec apiserver listening on http://127.0.0.1:")
                        || line.starts_with("dynrec apiserver listening on https://127.0.0.1:")
                    {
                        break;
                    }
                    seen.push(line);
                }
                Err(err) => {
                    let status = process.0.try_wait();
                    panic!(
                        "expected dynrec apiserver to print `dynrec apiserver listening on http://127.0.0.1:PORT` within {SERVER_START_DEADLINE:?}, \
                         but it did not ({err}; exit status {status:?})\nstdout:\n{}\nlog:\n{}",
                        seen.join("\n"),
                        std::fs::read_to_string(&log_path).unwrap_or_default()
                    );
                }
            }
        }
        assert!(
            kubeconfig.is_file(),
            "expected the kubeconfig at {} once the server listens",
            kubeconfig.display()
        );
        Server {
            _process: process,
            kubectl,
            dir,
            kubeconfig,
        }
    }

    /// A server with the Widget CRD established and widget `w1` created, all through kubectl;
    /// `None` when kubectl is missing and the test is skipped.
    fn with_widgets() -> Option<Server> {
        Self::with_widget_crd(WIDGET_CRD)
    }

    /// As [`Server::with_widgets`], with the Widget CRD given as `crd` (a variant of it).
    fn with_widget_crd(crd: &str) -> Option<Server> {
        let server = Server::start(kubectl_on_path()?, None);
        let crd = server.write("crd.yaml", crd);
        server
            .apply(&crd)
            .expect_ok("kubectl apply of the Widget CRD");
        server
            .kubectl(&[
                "wait",
                "--for=condition=Established",
                "crd/widgets.example.com",
                "--timeout=10s",
            ])
            .expect_ok("kubectl wait for the CRD to be Established");
        let w1 = server.write("w1.yaml", WIDGET_W1);
        server.apply(&w1).expect_ok("kubectl apply of widget w1");
        Some(server)
    }

    /// Writes a file into the test's temp dir.
    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents)
            .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
        path
    }

    /// `kubectl apply -f FILE`, with kubectl's default validation: the server's OpenAPI
    /// documents tell kubectl that it validates fields itself (`fieldValidation`).
    fn apply(&self, file: &Path) -> Run {
        let file = file.to_string_lossy();
        self.kubectl(&["apply", "-f", &file])
    }

    /// `kubectl get ARGS -o json`, parsed.
    fn get_json(&self, args: &[&str]) -> Value {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json"]);
        self.kubectl(&full)
            .expect_ok(&format!("kubectl {}", full.join(" ")))
            .json()
    }

    /// Widget `name` as `kubectl get -o json` prints it.
    fn widget(&self, name: &str) -> Value {
        self.get_json(&["widget", name])
    }

    /// Names of the widgets `kubectl get widgets -o json` lists, sorted.
    fn widget_names(&self) -> Vec<String> {
        let run = self
            .kubectl(&["get", "widgets", "-o", "json"])
            .expect_ok("kubectl get widgets -o json");
        let list = run.json();
        let mut names: Vec<String> = list["items"]
            .as_array()
            .unwrap_or_else(|| panic!("expected a list with items\n{}", run.describe()))
            .iter()
            .map(|item| item["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect();
        names.sort();
        names
    }

    /// Runs kubectl with the server's kubeconfig.
    fn kubectl(&self, args: &[&str]) -> Run {
        self.kubectl_with(&self.kubeconfig, args)
    }

    /// Runs kubectl with another kubeconfig.
    fn kubectl_with(&self, kubeconfig: &Path, args: &[&str]) -> Run {
        run(
            &mut self.kubectl_command(kubeconfig, REQUEST_TIMEOUT, args),
            COMMAND_DEADLINE,
        )
    }

    /// A kubectl command with this test's kubeconfig and discovery cache.
    fn kubectl_command(&self, kubeconfig: &Path, request_timeout: &str, args: &[&str]) -> Command {
        let mut command = Command::new(&self.kubectl);
        command
            .env_remove("KUBECONFIG")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("kube-cache"))
            .arg(request_timeout)
            .args(args);
        command
    }
}

fn temp_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("dynrec-kubectl-")
        .tempdir()
        .unwrap_or_else(|err| panic!("cannot create a temp dir: {err}"))
}

fn assert_contains(run: &Run, text: &str, expected: &str) {
    assert!(
        text.contains(expected),
        "expected kubectl to print {expected:?}\n{}",
        run.describe()
    );
}

/// Rows of a kubectl table, keyed by header; a cell spans from its header's first
/// character to the next header's.
fn table(run: &Run) -> Vec<BTreeMap<String, String>> {
    let mut lines = run.stdout.lines();
    let header = lines
        .next()
        .unwrap_or_else(|| panic!("expected a table with a header\n{}", run.describe()));
    let mut starts = Vec::new();
    let mut previous = ' ';
    for (at, c) in header.char_indices() {
        if c != ' ' && previous == ' ' {
            starts.push(at);
        }
        previous = c;
    }
    let columns: Vec<(String, usize, Option<usize>)> = starts
        .iter()
        .enumerate()
        .map(|(i, &start)| {
            let end = starts.get(i + 1).copied();
            let name = header[start..end.unwrap_or(header.len())]
                .trim()
                .to_string();
            (name, start, end)
        })
        .collect();
    lines
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            columns
                .iter()
                .map(|(name, start, end)| {
                    let end = end.unwrap_or(line.len()).min(line.len());
                    let cell = line.get((*start).min(end)..end).unwrap_or("").trim();
                    (name.clone(), cell.to_string())
                })
                .collect()
        })
        .collect()
}

/// A cell of a table row; empty when the table has no such column.
fn cell<'a>(row: &'a BTreeMap<String, String>, column: &str) -> &'a str {
    row.get(column).map_or("", String::as_str)
}

fn conditions(object: &Value) -> Vec<Value> {
    object["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Whether a value is a timestamp like `2026-01-01T00:00:00Z`, as Kubernetes writes them.
fn is_utc_timestamp(value: &Value) -> bool {
    let Some(text) = value.as_str() else {
        return false;
    };
    let bytes = text.as_bytes();
    bytes.len() == 20
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            10 => *b == b'T',
            13 | 16 => *b == b':',
            19 => *b == b'Z',
            _ => b.is_ascii_digit(),
        })
}

/// Whether kubectl's stderr reports a 401: `Unauthorized`, or client-go's wording for it.
fn is_unauthorized(stderr: &str) -> bool {
    stderr.contains("Unauthorized")
        || stderr.contains("the server has asked for the client to provide credentials")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|err| panic!("expected JSON in {} ({err}):\n{text}", path.display()))
}
