//! `dynrec test` of definition cases on a live API server: the bundled examples' cases pass
//! against `dynrec apiserver` through --kubeconfig (and leave nothing behind), and a case
//! whose expectation never holds fails when --timeout runs out, saying what did not hold.

mod dynrec_cli_common;
mod process_common;

use dynrec_cli_common::{dynrec_as_user as dynrec, examples, text};
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bundled_cases_pass_on_dynrec_apiserver_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = process_common::start_apiserver(dir.path(), "127.0.0.1:0", &[]);
    let kubeconfig = dir.path().join("kubeconfig");
    let definitions = examples();
    let cases = definitions.join("tests");
    let out = dynrec(&[
        "test",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "-f",
        definitions.to_str().unwrap(),
        cases.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = stdout(&out);
    assert!(
        stdout.contains("ok    ") && stdout.contains("webapp-lifecycle.yaml: readiness"),
        "{}",
        text(&out)
    );
    // The case that induces a failure cannot run live: skipped, saying why.
    assert!(
        stdout.contains("skip  ")
            && stdout.contains("(its failures: cannot be induced on a live API server)"),
        "{}",
        text(&out)
    );
    assert!(stdout.ends_with("7 passed, 0 failed\n"), "{}", text(&out));
    // Every namespace a case made is gone, and with it what the definitions made there.
    let namespaces = Api::<DynamicObject>::all_with(
        process_common::client(&url),
        &ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()),
    );
    let left: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|ns| ns.metadata.name)
        .filter(|name| name.starts_with("default-"))
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

#[test]
fn an_expectation_that_never_holds_fails_at_the_timeout_with_the_last_difference() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cases.yaml");
    std::fs::write(
        &path,
        r#"definition: widgets
cases:
- name: never holds
  given:
  - apiVersion: example.com/v1
    kind: Widget
    metadata: {name: w1, namespace: default, uid: 11111111-1111-1111-1111-111111111111, generation: 1}
    spec: {greeting: hi}
  expect:
    creates:
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: w1-config, namespace: default}
      data: {greeting: hello}
    deletes:
    - {apiVersion: example.com/v1, kind: Widget, namespace: default, name: w1}
  steps:
  - name: never reached
    patch:
    - {apiVersion: example.com/v1, kind: Widget, metadata: {name: w1, namespace: default}, spec: {greeting: hello}}
- name: then holds
  given:
  - apiVersion: example.com/v1
    kind: Widget
    metadata: {name: w2, namespace: default}
    spec: {greeting: hi}
  expect:
    creates:
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: w2-config}
      data: {greeting: hi, size: "${ in ['1', '2'] }"}
"#,
    )
    .unwrap();
    let definition = examples().join("widgets.yaml");
    let out = dynrec(&[
        "test",
        "--embedded",
        "--timeout",
        "2s",
        "-f",
        definition.to_str().unwrap(),
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = stdout(&out);
    assert!(
        stdout.contains(
            ": never holds\n  reconcile:\n    did not hold within 2s; what did not, as last seen:\n"
        ),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains("    expect.creates[0] (ConfigMap default/w1-config) differs:\n      data.greeting: want hello, got hi\n"),
        "{}",
        text(&out)
    );
    assert!(
        stdout.contains("    expect.deletes[0] (Widget default/w1): still exists\n"),
        "{}",
        text(&out)
    );
    assert!(!stdout.contains("never reached"), "{}", text(&out));
    assert!(
        stdout.contains("ok    ") && stdout.contains(": then holds"),
        "{}",
        text(&out)
    );
    assert!(stdout.ends_with("1 passed, 1 failed\n"), "{}", text(&out));
}

/// A definition of a kind the cluster does not serve yet (cert-manager's Certificate, its CRD
/// listed in the case's apiResources) runs live: the cases' CRDs are installed
/// before the definitions start, and the partial expectation holds on the live ConfigMap.
#[test]
fn a_case_whose_kind_comes_from_its_api_resources_runs_live() {
    let dir = tempfile::tempdir().unwrap();
    let definition = dir.path().join("inventory.yaml");
    std::fs::write(
        &definition,
        r#"apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata: {name: cert-inventory}
spec:
  for: {apiVersion: cert-manager.io/v1, kind: Certificate}
  steps:
  - child:
      id: inventory
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${self.metadata.name}-inventory"}
        data: {secret: "${self.spec.secretName}"}
"#,
    )
    .unwrap();
    let crd = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "certificates.cert-manager.io"},
        "spec": {"group": "cert-manager.io", "scope": "Namespaced",
            "names": {"kind": "Certificate", "plural": "certificates", "singular": "certificate"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["secretName"],
                        "properties": {"secretName": {"type": "string"}}}}}}}]}
    });
    let case = serde_json::json!({
        "definition": "cert-inventory",
        "cases": [{
            "name": "writes the inventory",
            "apiResources": [crd],
            "given": [{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                "metadata": {"name": "example-com", "namespace": "sandbox"},
                "spec": {"secretName": "example-com-tls"}}],
            "expect": {"applies": [{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "example-com-inventory", "namespace": "sandbox"},
                "data": {"secret": "example-com-tls"}}]}
        }]
    });
    let cases = dir.path().join("cases.json");
    std::fs::write(&cases, case.to_string()).unwrap();
    let out = dynrec(&[
        "test",
        "--embedded",
        "--timeout",
        "20s",
        "-f",
        definition.to_str().unwrap(),
        cases.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        stdout(&out).ends_with("1 passed, 0 failed\n"),
        "{}",
        text(&out)
    );
}
