//! `dynrec test --crash-points`, run as a user runs it: the bundled examples' cases survive
//! a crash after every write (and their deletion); a definition whose child name has a
//! random suffix is caught; Rust reconcilers that duplicate or orphan a child after a crash
//! are caught through the library API, with the crash point and what broke.

mod dynrec_cli_common;

use std::path::Path;

use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{Config, Draft, ResourceReconciler, RootReconciler, SyncReconciler};
use dynrec::testing::{CrashPoints, CrashReport, crd};
use dynrec_cli_common::{dynrec_as_user as dynrec, examples, text};
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_bundled_examples_survive_a_crash_after_every_write() {
    let (definitions, cases) = (examples(), examples().join("tests"));
    let output = dynrec(&[
        "test",
        "--crash-points",
        "-f",
        definitions.to_str().unwrap(),
        cases.to_str().unwrap(),
    ]);
    let out = stdout(&output);
    assert!(output.status.success(), "{}", text(&output));
    assert!(out.contains("8 passed, 0 failed"), "{out}");
    assert!(
        out.contains("ok    ")
            && out
                .contains("widgets.yaml: creates the ConfigMap and becomes ready (2 crash points)"),
        "{out}"
    );
    assert!(
        out.contains("readiness, an Ingress switched on and off, and a drifted Deployment put back (9 crash points)"),
        "steps are crashed too: {out}"
    );
}

const TICKET_SCHEMA: &str = r#"  for: {apiVersion: example.com/v1, kind: Ticket}
  schema:
    openAPIV3Schema:
      type: object
      properties:
        spec: {type: object, properties: {note: {type: string}}}
        status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

const TICKET_CASE: &str = r#"definition: tickets
cases:
- name: a ticket gets a receipt
  now: "2026-01-02T03:04:05Z"
  given:
  - apiVersion: example.com/v1
    kind: Ticket
    metadata: {name: t1, namespace: default, uid: 11111111-1111-1111-1111-111111111111, generation: 1}
    spec: {note: hi}
"#;

/// Writes a tickets definition with `steps` and the one-case file; runs `dynrec test`
/// with `extra` flags.
fn test_tickets(dir: &Path, steps: &str, extra: &[&str]) -> std::process::Output {
    let definition = dir.join("tickets.yaml");
    let text = format!(
        "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata:\n  name: tickets\nspec:\n{TICKET_SCHEMA}  steps:\n{steps}"
    );
    std::fs::write(&definition, text).unwrap();
    let cases = dir.join("tickets-cases.yaml");
    std::fs::write(&cases, TICKET_CASE).unwrap();
    let mut args = vec![
        "test",
        "-f",
        definition.to_str().unwrap(),
        cases.to_str().unwrap(),
    ];
    args.extend(extra);
    dynrec(&args)
}

/// A receipt named with a random suffix, remembered in the status only after it is made.
const RANDOM_RECEIPT: &str = r#"  - child:
      id: receipt
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: "${self.?status.?receipt.orValue(self.metadata.name + '-' + random.seededString(5, string(now)))}"
        data: {note: "${self.?spec.?note.orValue('none')}"}
  - sync:
      status:
        receipt: "${receipt.metadata.name}"
"#;

#[test]
fn a_child_named_with_a_random_suffix_is_caught_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let plain = test_tickets(dir.path(), RANDOM_RECEIPT, &[]);
    assert!(plain.status.success(), "{}", text(&plain));
    let output = test_tickets(dir.path(), RANDOM_RECEIPT, &["--crash-points"]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        out.contains("FAIL  ")
            && out.contains("a ticket gets a receipt (1 of 2 crash points broke it)"),
        "{out}"
    );
    let crash = "  reconcile: after write 1 of 2: apply v1/ConfigMap default/t1-";
    assert!(out.contains(crash), "{out}");
    assert!(
        out.contains("    writes up to the crash:\n      1. apply v1/ConfigMap default/t1-"),
        "{out}"
    );
    assert!(
        out.contains("    renamed: the ConfigMap owned by example.com/v1 Ticket t1 is default/t1-"),
        "{out}"
    );
    assert!(
        out.contains("where the uncrashed run's is default/t1-"),
        "{out}"
    );
    assert!(
        out.contains("    end state differs: example.com/v1/Ticket default/t1:\n      ")
            && out.contains("status.receipt: want t1-"),
        "{out}"
    );
    assert!(out.contains("0 passed, 1 failed"), "{out}");
}

/// A receipt with a finalizer that deletes it: the parent's deletion is explored too.
const FINALIZED_RECEIPT: &str = r#"  - finalizer:
      name: example.com/receipts
      steps:
      - child:
          id: receipt
          template:
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: "${self.metadata.name}-receipt"}
            data: {note: "${self.?spec.?note.orValue('none')}"}
"#;

#[test]
fn a_finalizer_is_crashed_while_the_parent_is_deleted_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let output = test_tickets(dir.path(), FINALIZED_RECEIPT, &["--crash-points"]);
    let out = stdout(&output);
    assert!(output.status.success(), "{}", text(&output));
    let points: usize = out
        .split("a ticket gets a receipt (")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no crash point count: {out}"));
    // The first reconcile adds the finalizer, applies the child and writes the status; the
    // deletion's removes the finalizer at least.
    assert!(points >= 4, "{out}");
}

#[test]
fn crash_points_refuse_a_cluster_and_update() {
    let dir = tempfile::tempdir().unwrap();
    let output = test_tickets(
        dir.path(),
        FINALIZED_RECEIPT,
        &["--crash-points", "--embedded"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output)
            .contains("--crash-points crashes in-process reconciles; run it without a cluster"),
        "{}",
        text(&output)
    );
    let output = test_tickets(
        dir.path(),
        FINALIZED_RECEIPT,
        &["--crash-points", "--update"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("cannot be used with"),
        "{}",
        text(&output)
    );
}

fn widget_gvk() -> Gvk {
    Gvk::new("example.com", "v1", "Widget")
}

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

fn widget() -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default",
            "uid": "22222222-2222-2222-2222-222222222222", "generation": 1},
        "spec": {"greeting": "hi"},
    }))
    .unwrap()
}

fn owner_reference(widget: &DynamicObject) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "controller": true,
        "name": widget.metadata.name, "uid": widget.metadata.uid})
}

/// Explores `reconciler` on the given Widget.
async fn explore(reconciler: fn(&Config) -> Box<dyn RootReconciler>) -> CrashReport {
    let request = ObjectKey::namespaced("default", "w1");
    CrashPoints::new(vec![widget()], widget_gvk(), request, &reconciler)
        .api_resources(vec![crd("example.com", "Widget", "widgets")])
        .explore()
        .await
        .unwrap()
}

/// Makes a ConfigMap with a generated name unless the status names one, then names it in
/// the status: a crash between the two makes a second one.
fn generated_receipt(config: &Config) -> Box<dyn RootReconciler> {
    let sync = SyncReconciler::new_async(|ctx, widget: &mut Draft| {
        Box::pin(async move {
            if widget.data["status"]["receipt"].is_string() {
                return Ok(());
            }
            let child: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"generateName": "w1-receipt-", "namespace": "default",
                    "ownerReferences": [owner_reference(widget)]},
            }))
            .unwrap();
            let created = ctx.config().client.create(&child).await?;
            widget.data["status"]["receipt"] = json!(created.metadata.name);
            Ok(())
        })
    });
    Box::new(ResourceReconciler::new(widget_gvk(), sync, config.clone()))
}

#[tokio::test]
async fn a_rust_reconciler_that_duplicates_its_child_after_a_crash_is_caught() {
    let report = explore(generated_receipt).await;
    let [finding] = report.findings.as_slice() else {
        panic!("one finding expected: {report:#?}");
    };
    let shown = finding.to_string();
    assert!(
        shown.starts_with("reconcile: after write 1 of 2: create v1/ConfigMap default/\n"),
        "{shown}"
    );
    assert!(
        shown.contains(
            "  duplicate: 2 ConfigMaps owned by example.com/v1 Widget w1 where the uncrashed run has 1: default/w1-receipt-001, default/w1-receipt-002"
        ),
        "{shown}"
    );
}

/// Creates its ConfigMap, then adds the owner reference only when the create succeeded: a
/// crash between the two leaves the ConfigMap ownerless for good.
fn late_owner(config: &Config) -> Box<dyn RootReconciler> {
    let sync = SyncReconciler::new_async(|ctx, widget: &mut Draft| {
        Box::pin(async move {
            let client = &ctx.config().client;
            let child: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "w1-config", "namespace": "default"},
                "data": {"greeting": widget.data["spec"]["greeting"]},
            }))
            .unwrap();
            match client.create(&child).await {
                Ok(_) => {}
                Err(e) if e.is_already_exists() => return Ok(()),
                Err(e) => return Err(e.into()),
            }
            let owned = json!({"metadata": {"ownerReferences": [owner_reference(widget)]}});
            let key = ObjectKey::namespaced("default", "w1-config");
            client
                .patch(
                    &config_map_gvk(),
                    &key,
                    &Patch::Merge(owned),
                    &PatchParams::default(),
                )
                .await?;
            Ok(())
        })
    });
    Box::new(ResourceReconciler::new(widget_gvk(), sync, config.clone()))
}

#[tokio::test]
async fn a_rust_reconciler_that_orphans_its_child_after_a_crash_is_caught() {
    let report = explore(late_owner).await;
    let shown: Vec<String> = report.findings.iter().map(ToString::to_string).collect();
    let crash = shown
        .iter()
        .find(|s| {
            s.starts_with("reconcile: after write 1 of 3: create v1/ConfigMap default/w1-config\n")
        })
        .unwrap_or_else(|| panic!("no crash after the create: {shown:#?}"));
    assert!(
        crash.contains(
            "  orphan: v1/ConfigMap default/w1-config has no ownerReference to example.com/v1 Widget w1 (the uncrashed run's has)"
        ),
        "{crash}"
    );
}

#[test]
fn a_definition_that_writes_the_time_into_its_status_does_not_settle() {
    let dir = tempfile::tempdir().unwrap();
    let steps = "  - sync:\n      status:\n        seen: \"${string(now)}\"\n";
    let output = test_tickets(dir.path(), steps, &["--crash-points"]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        out.contains("a ticket gets a receipt (broken without a crash)\n  reconcile: without a crash:\n    does not settle: 10 fresh reconciles each changed something, the last wrote: update example.com/v1/Ticket default/t1 status\n"),
        "{out}"
    );
}
