//! ReconcilerDefinitions as kubectl shows them: the CRD's schema (generated from the Rust
//! model) documents every field in `kubectl explain` and makes the API server refuse
//! unknown fields and wrong types; a definition `dynrec run -f` loads from a file is listed
//! by `kubectl get rd` with its counts and status, and an edit in the cluster is reverted.

mod process_common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dynrec_test_support::process::{ChildGuard, Run, kubectl_on_path};
use tempfile::TempDir;

/// How long one kubectl call may take.
const KUBECTL_DEADLINE: Duration = Duration::from_secs(30);
/// How long dynrec may take to show what a test waits for.
const CONVERGE_DEADLINE: Duration = Duration::from_secs(30);

/// `dynrec apiserver`, `dynrec run -f` the widgets definition on it, and kubectl.
struct Cluster {
    /// Declared first so they stop before the temp dir goes.
    run: ChildGuard,
    _server: ChildGuard,
    kubectl: PathBuf,
    dir: TempDir,
}

impl Cluster {
    /// Starts both processes; `None` when kubectl is missing and the test is skipped.
    fn start() -> Option<Cluster> {
        Self::start_with(&[])
    }

    /// The same, `dynrec run` also loading the definition files `(name, text)`.
    fn start_with(files: &[(&str, &str)]) -> Option<Cluster> {
        let kubectl = kubectl_on_path()?;
        let dir = tempfile::tempdir().unwrap();
        let mut extra = Vec::new();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            extra.extend(["-f".to_owned(), path.to_string_lossy().into_owned()]);
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let (server, _) = process_common::start_apiserver(dir.path(), "127.0.0.1:0", &[]);
        let run = process_common::start_widgets_controller(
            dir.path(),
            &dir.path().join("run.log"),
            Some("info"),
            &extra,
        );
        let cluster = Cluster {
            run,
            _server: server,
            kubectl,
            dir,
        };
        cluster.eventually("the widgets definition is in the cluster", || {
            cluster.kubectl(&["get", "rd", "widgets"]).succeeded()
        });
        Some(cluster)
    }

    fn kubectl(&self, args: &[&str]) -> Run {
        process_common::kubectl(&self.kubectl, self.dir.path(), args, KUBECTL_DEADLINE)
    }

    fn ok(&self, args: &[&str]) -> String {
        self.kubectl(args)
            .expect_ok(&format!("kubectl {args:?}"))
            .stdout
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    /// Waits, bounded, until `done` holds; fails with dynrec's log otherwise.
    fn eventually(&self, what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + CONVERGE_DEADLINE;
        while !done() {
            assert!(
                Instant::now() < deadline,
                "{what}\n{}",
                std::fs::read_to_string(self.dir.path().join("run.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A definition with a typo or a wrong type at `steps[0].child`.
fn definition_with(child_field: &str) -> String {
    format!(
        "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata: {{name: typo}}\n\
         spec:\n  for: {{apiVersion: v1, kind: Secret}}\n  steps:\n  - child:\n      id: cm\n      \
         template: {{apiVersion: v1, kind: ConfigMap}}\n      {child_field}\n"
    )
}

#[test]
fn kubectl_explain_documents_definitions_and_the_server_refuses_typos_with_their_path() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let explained = cluster.ok(&["explain", "reconcilerdefinitions.spec.steps.child"]);
    for expected in [
        "The binding later expressions read the child by",
        "readyWhen",
        "includeWhen",
        "manager",
        "template",
    ] {
        assert!(explained.contains(expected), "{expected}: {explained}");
    }
    let explained = cluster.ok(&["explain", "rd.spec.steps.if.then.ref.selector"]);
    assert!(explained.contains("matchLabels"), "{explained}");

    let typo = cluster.write("typo.yaml", &definition_with("readyWhn: [\"true\"]"));
    let refused = cluster.kubectl(&["apply", "-f", &typo]);
    assert!(!refused.succeeded(), "{}", refused.describe());
    assert!(
        refused
            .stderr
            .contains("unknown field \"spec.steps[0].child.readyWhn\""),
        "{}",
        refused.describe()
    );
    let wrong_type = cluster.write("type.yaml", &definition_with("includeWhen: \"true\""));
    let refused = cluster.kubectl(&["apply", "-f", &wrong_type]);
    assert!(
        refused
            .stderr
            .contains("spec.steps[0].child.includeWhen: Invalid value: \"string\""),
        "{}",
        refused.describe()
    );
    assert!(!cluster.kubectl(&["get", "rd", "typo"]).succeeded());
}

#[test]
fn a_file_loaded_definition_is_listed_with_its_instances_and_keeps_its_file_s_spec() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let source = cluster.ok(&[
        "get",
        "rd",
        "widgets",
        "-o",
        r#"jsonpath={.metadata.annotations.dynrec\.dev/source}"#,
    ]);
    let file = process_common::widgets_definition();
    assert_eq!(
        source,
        format!(
            "{} (document 1)",
            std::path::absolute(&file).unwrap().display()
        )
    );
    assert!(Path::new(source.trim_end_matches(" (document 1)")).is_file());

    let widget = cluster.write(
        "w1.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: default}\nspec: {greeting: hi}\n",
    );
    cluster.ok(&["apply", "-f", &widget]);
    cluster.eventually(
        "kubectl get rd shows the widget as an instance, Ready",
        || {
            let row = cluster.kubectl(&["get", "rd", "widgets", "--no-headers"]);
            let columns: Vec<&str> = row.stdout.split_whitespace().collect();
            columns.get(1..4) == Some(&["example.com/v1/Widget", "True", "1"])
        },
    );
    let header = cluster.ok(&["get", "rd"]);
    assert!(
        header.starts_with("NAME") && header.contains("FOR") && header.contains("INSTANCES"),
        "{header}"
    );

    // An edit in the cluster is reverted, and an event names the file to edit instead.
    cluster.ok(&[
        "patch",
        "rd",
        "widgets",
        "--type=merge",
        "-p",
        r#"{"spec":{"conditions":["Extra"]}}"#,
    ]);
    cluster.eventually("the edit is reverted", || {
        let conditions =
            cluster.kubectl(&["get", "rd", "widgets", "-o", "jsonpath={.spec.conditions}"]);
        conditions.succeeded() && conditions.stdout.is_empty()
    });
    cluster.eventually("an EditReverted event names the file", || {
        let events = cluster.kubectl(&[
            "get",
            "events",
            "-A",
            "--field-selector",
            "reason=EditReverted",
            "-o",
            "jsonpath={.items[*].message}",
        ]);
        events.stdout.contains(&source) && events.stdout.contains("edit the file")
    });
}

/// A file holding Widget `name` in `default`.
fn widget_file(cluster: &Cluster, name: &str) -> String {
    cluster.write(
        &format!("{name}.yaml"),
        &format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}, namespace: default}}\nspec: {{greeting: hi}}\n"
        ),
    )
}

/// Whether Widget `name` in `default` is Ready.
fn widget_ready(cluster: &Cluster, name: &str) -> bool {
    let jsonpath = r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}"#;
    cluster
        .kubectl(&["get", "widget", name, "-o", jsonpath])
        .stdout
        == "True"
}

#[test]
fn a_file_s_definition_shown_in_the_cluster_is_run_by_that_file_s_process_alone() {
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    // A second `dynrec run`, of the definitions stored in the cluster, on the same server.
    let other_log = cluster.dir.path().join("other.log");
    let _other =
        process_common::start_cluster_definitions(cluster.dir.path(), &other_log, Some("info"));
    let other_said = || std::fs::read_to_string(&other_log).unwrap_or_default();
    cluster.eventually(
        "the other process says it leaves the file's definition alone",
        || {
            other_said()
                .contains("a definition another `dynrec run -f` runs from its file: not run here")
        },
    );
    cluster.ok(&["apply", "-f", &widget_file(&cluster, "w1")]);
    cluster.eventually("the file's process makes w1 Ready", || {
        widget_ready(&cluster, "w1")
    });
    assert!(
        !other_said().contains("definition running"),
        "the other process runs the file's definition too:\n{}",
        other_said()
    );

    // Once the file's process has stopped, removing the annotation hands the definition to
    // the cluster's process.
    process_common::stop(&mut cluster.run, "TERM");
    let ready = |field: &str| {
        let path = format!(r#"jsonpath={{.status.conditions[?(@.type=="Ready")].{field}}}"#);
        cluster.ok(&["get", "rd", "widgets", "-o", &path])
    };
    assert_eq!(
        ready("status"),
        "False",
        "a stopped file's definition is not Ready"
    );
    assert_eq!(ready("reason"), "Stopped");
    assert!(ready("message").contains("not running: the dynrec run that loads it from"));
    let instances = cluster.ok(&["get", "rd", "widgets", "-o", "jsonpath={.status.instances}"]);
    assert_eq!(instances, "", "no controller's cache holds any");
    cluster.ok(&["annotate", "rd", "widgets", "dynrec.dev/source-"]);
    cluster.eventually(
        "the other process runs the definition from the cluster",
        || other_said().contains("definition running"),
    );
    cluster.ok(&["apply", "-f", &widget_file(&cluster, "w2")]);
    cluster.eventually("the other process makes w2 Ready", || {
        widget_ready(&cluster, "w2")
    });
    cluster.eventually("the definition is Ready again", || {
        ready("status") == "True"
    });
}

#[test]
fn a_cluster_definition_named_as_a_file_s_is_left_alone_and_says_why() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    // The file's object goes (its definition keeps running), and another takes its name.
    cluster.ok(&["delete", "rd", "widgets"]);
    let other = cluster.write(
        "other.yaml",
        "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata: {name: widgets}\n\
         spec:\n  for: {apiVersion: v1, kind: Secret}\n  steps:\n  - child:\n      id: other\n      \
         template: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"${self.metadata.name}\"}}\n",
    );
    cluster.ok(&["apply", "-f", &other]);
    let ready = |field: &str| {
        let path = format!(r#"jsonpath={{.status.conditions[?(@.type=="Ready")].{field}}}"#);
        cluster.ok(&["get", "rd", "widgets", "-o", &path])
    };
    cluster.eventually("its status says the name is taken", || {
        ready("reason") == "NameTaken"
    });
    assert_eq!(ready("status"), "False");
    assert!(
        ready("message").contains("a definition of this name is loaded from"),
        "{}",
        ready("message")
    );
    // Its spec is its own, not reverted to the file's.
    let steps = cluster.ok(&[
        "get",
        "rd",
        "widgets",
        "-o",
        "jsonpath={.spec.steps[*].child.id}",
    ]);
    assert_eq!(steps, "other");
}

/// Gadgets, each with a Database child: a kind whose CRD is not installed yet.
const GADGETS: &str = r#"
apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata: {name: gadgets}
spec:
  for: {apiVersion: example.com/v1, kind: Gadget}
  schema:
    openAPIV3Schema:
      type: object
      properties:
        spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
        status: {type: object, x-kubernetes-preserve-unknown-fields: true}
  steps:
  - child:
      id: database
      template:
        apiVersion: db.example.org/v1
        kind: Database
        metadata: {name: "${self.metadata.name}"}
        spec: {size: 1}
"#;

const DATABASE_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: databases.db.example.org}
spec:
  group: db.example.org
  scope: Namespaced
  names: {plural: databases, singular: database, kind: Database, listKind: DatabaseList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

#[test]
fn a_file_definition_waiting_for_a_kind_is_listed_at_once_and_ready_when_the_crd_comes() {
    let Some(cluster) = Cluster::start_with(&[("gadgets.yaml", GADGETS)]) else {
        return;
    };
    let ready = |field: &str| {
        let path = format!(r#"jsonpath={{.status.conditions[?(@.type=="Ready")].{field}}}"#);
        cluster
            .kubectl(&["get", "rd", "gadgets", "-o", &path])
            .stdout
    };
    cluster.eventually(
        "the waiting definition is listed, Ready=False KindNotServed",
        || ready("reason") == "KindNotServed",
    );
    let message = ready("message");
    assert!(
        message.contains("db.example.org/v1/Database") && message.contains("gadgets.yaml"),
        "the message names the kind and the file: {message}"
    );
    let row = cluster.ok(&["get", "rd", "gadgets", "--no-headers"]);
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        columns.get(1..3),
        Some(&["example.com/v1/Gadget", "False"][..]),
        "{row}"
    );

    let crd = cluster.write("database-crd.yaml", DATABASE_CRD);
    cluster.ok(&["apply", "-f", &crd]);
    cluster.eventually("Ready once the cluster serves the kind", || {
        ready("status") == "True"
    });
    let gadget = cluster.write(
        "g1.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1, namespace: default}\nspec: {}\n",
    );
    cluster.ok(&["apply", "-f", &gadget]);
    cluster.eventually(
        "the file's definition reconciles: the Database is made",
        || cluster.kubectl(&["get", "databases", "g1"]).succeeded(),
    );
    let source = cluster.ok(&[
        "get",
        "rd",
        "gadgets",
        "-o",
        r#"jsonpath={.metadata.annotations.dynrec\.dev/source}"#,
    ]);
    assert!(
        source.contains("gadgets.yaml"),
        "still the file's: {source}"
    );
}
