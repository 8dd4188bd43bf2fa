//! `dynrec rbac` as a user runs it: sorted and stable output, each rule with the
//! reconcilers that need it, a Role plus a ClusterRole with `--namespace`, and bad input
//! named.

use std::process::{Command, Output};

use serde_json::Value;

fn rbac(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .arg("rbac")
        .args(args)
        .output()
        .unwrap()
}

fn printed(args: &[&str]) -> String {
    let output = rbac(args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_role_is_sorted_stable_and_names_the_reconcilers_needing_each_verb() {
    let first = printed(&["--example", "widgets"]);
    assert_eq!(first, printed(&["--example", "widgets"]), "two runs differ");
    let role: Value = serde_saphyr::from_str(&first).unwrap();
    assert_eq!(role["kind"], "ClusterRole");
    let keys: Vec<(String, String)> = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["apiGroups"][0].as_str().unwrap().into(),
                r["resources"][0].as_str().unwrap().into(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    for wanted in [
        "# create, delete, patch, update: ConfigMapUpdatingObjectManager in WidgetResourceReconciler\n",
        "# update: ConfigMapChildReconciler in WidgetResourceReconciler\n- apiGroups: [\"example.com\"]\n  resources: [\"widgets/finalizers\"]\n",
        "# update: WidgetResourceReconciler\n- apiGroups: [\"example.com\"]\n  resources: [\"widgets/status\"]\n",
        "# create, get, update: leader election\n",
        "  resources: [\"events\"]\n  verbs: [\"create\", \"patch\"]\n",
    ] {
        assert!(first.contains(wanted), "missing {wanted:?} in\n{first}");
    }
}

#[test]
fn with_a_namespace_it_prints_a_role_and_a_cluster_role_for_cluster_scoped_kinds() {
    let text = printed(&["--example", "singleton", "--namespace", "demo"]);
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    let resources = |doc: &Value| -> Vec<String> {
        doc["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["resources"][0].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(documents.len(), 2, "{text}");
    assert_eq!(
        (
            &documents[0]["kind"],
            &documents[0]["metadata"]["namespace"]
        ),
        (&Value::from("Role"), &Value::from("demo"))
    );
    // RBAC objects are watched by the preflight (it asks again when they change).
    assert_eq!(
        resources(&documents[0]),
        ["configmaps", "leases", "events", "rolebindings", "roles"]
    );
    assert_eq!(documents[1]["kind"], "ClusterRole");
    assert_eq!(
        resources(&documents[1]),
        [
            "namespaces",
            "customresourcedefinitions",
            "clusterrolebindings",
            "clusterroles"
        ]
    );
}

#[test]
fn a_definition_path_that_cannot_be_read_is_named() {
    let output = rbac(&["-f", "/no/such/definitions"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("/no/such/definitions: cannot read"),
        "{stderr}"
    );
}

#[test]
fn a_kind_is_named_by_the_plural_its_crd_serves_it_under() {
    let widgets = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/definitions/widgets.yaml"),
    )
    .unwrap();
    let people = widgets
        .replace("kind: Widget", "kind: Person")
        .replace("  schema:\n", "  schema:\n    plural: people\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("people.yaml");
    std::fs::write(&file, people).unwrap();
    let role = printed(&["-f", file.to_str().unwrap()]);
    assert!(role.contains("resources: [\"people\"]"), "{role}");
    assert!(role.contains("resources: [\"people/status\"]"), "{role}");
    assert!(!role.contains("persons"), "{role}");
}

#[test]
fn rbac_children_need_bind_on_the_role_they_bind_or_escalate_on_the_role_they_write() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("grants.yaml");
    let binding = |id: &str, role: &str| {
        format!(
            "  - child:\n      id: {id}\n      template:\n        apiVersion: rbac.authorization.k8s.io/v1\n        kind: RoleBinding\n        metadata: {{name: \"${{self.metadata.name}}-{id}\"}}\n        roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: \"{role}\"}}\n        subjects: [{{kind: Group, name: viewers, apiGroup: rbac.authorization.k8s.io}}]\n"
        )
    };
    let definition = format!(
        "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata: {{name: grants}}\nspec:\n  for: {{apiVersion: v1, kind: ConfigMap}}\n  steps:\n{}{}  - child:\n      id: role\n      template:\n        apiVersion: rbac.authorization.k8s.io/v1\n        kind: Role\n        metadata: {{name: reader}}\n        rules: []\n",
        binding("literal", "view"),
        binding("chosen", "${self.data.role}"),
    );
    std::fs::write(&file, definition).unwrap();
    let text = printed(&["-f", file.to_str().unwrap()]);
    for wanted in [
        "# bind: spec.steps[0].child (the role it binds) in definition/grants\n- apiGroups: [\"rbac.authorization.k8s.io\"]\n  resources: [\"clusterroles\"]\n  resourceNames: [\"view\"]\n  verbs: [\"bind\"]\n",
        // The preflight lists and watches RBAC objects (it asks again at a change).
        "# bind: spec.steps[1].child (the role it binds has an expression for its name: any role of the kind) in definition/grants\n# list, watch: the preflight (asks again when RBAC changes; without it, every 5 s)\n- apiGroups: [\"rbac.authorization.k8s.io\"]\n  resources: [\"clusterroles\"]\n  verbs: [\"bind\", \"list\", \"watch\"]\n",
        "# escalate: spec.steps[2].child (the role it writes) in definition/grants\n- apiGroups: [\"rbac.authorization.k8s.io\"]\n  resources: [\"roles\"]\n  resourceNames: [\"reader\"]\n  verbs: [\"escalate\"]\n",
    ] {
        assert!(text.contains(wanted), "missing {wanted:?} in\n{text}");
    }
}

#[test]
fn per_definition_needs_definitions_files() {
    let output = rbac(&["--per-definition"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--filename"), "{stderr}");
}
