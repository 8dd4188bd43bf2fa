//! An RGD's messages in its own words. At load time, through `dynrec plan` on the embedded
//! API server: the expression quoted as written (KRO's `schema`, a forEach iterator, a
//! resource's id), the hint's rewrite in those names, the position and caret in the written
//! text; and no noise: no warning for status fields (KRO leaves out what cannot be
//! computed), none for fields a resource's template sets, one for a read repeated. While
//! reconciling, through `dynrec test` (in-process, on the embedded API server) and `dynrec
//! run` against `dynrec apiserver`: an instance's `ResourcesReady` message and the log
//! quote the failing expression as written.

mod dynrec_cli_common;
mod process_common;

use dynrec_cli_common::{dynrec, text};
use dynrec_test_support::eventually;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use process_common::{client, start_apiserver, start_controller};
use serde_json::json;

/// A service from scratch: a Deployment, a Service reading the Deployment's selector and
/// port, a ConfigMap for each name, status from the Deployment and the Service.
const SERVICE: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: svc}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Svc
    spec:
      image: string | required=true
      port: integer | default=8080
      names: "[]string"
    status:
      availableReplicas: ${deployment.status.availableReplicas}
      clusterIP: ${service.spec.clusterIP}
  resources:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: "${schema.metadata.name}"}
      spec:
        selector:
          matchLabels: {app: "${schema.metadata.name}"}
        template:
          metadata:
            labels: {app: "${schema.metadata.name}"}
          spec:
            containers:
            - name: app
              image: ${schema.spec.image}
              ports:
              - containerPort: ${schema.spec.port}
  - id: service
    template:
      apiVersion: v1
      kind: Service
      metadata: {name: "${schema.metadata.name}"}
      spec:
        selector: ${deployment.spec.selector.matchLabels}
        ports:
        - port: ${schema.spec.port}
          targetPort: ${deployment.spec.template.spec.containers[0].ports[0].containerPort}
  - id: configs
    forEach:
    - name: ${schema.spec.names}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name + '-' + name}"}
      data:
        image: ${schema.spec.image}
        n: ${name}
"#;

/// `dynrec plan --embedded [--strict] -f` on `rgd`: its exit code and stderr.
fn plan(rgd: &str, strict: bool) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rgd.yaml");
    std::fs::write(&file, rgd).unwrap();
    let file = file.to_string_lossy().into_owned();
    let mut args = vec!["plan", "--embedded", "-f", &file];
    if strict {
        args.insert(1, "--strict");
    }
    let output = dynrec(&args);
    let stderr = String::from_utf8_lossy(&output.stderr)
        .replace(&file, "rgd.yaml")
        .trim_end()
        .to_owned();
    assert!(!stderr.contains("panicked"), "{}", text(&output));
    (output.status.code(), stderr)
}

/// The one warning of [`SERVICE`]: `schema.spec` may be absent (KRO's instance CRD does not
/// require `spec`), said once for the five reads under it.
const SPEC_MAY_BE_ABSENT: &str = "rgd.yaml (document 1): spec.resources[0] (id deployment).template.spec.template.spec.containers[0].image: ${schema.spec.image}: schema.spec may be absent (the schema neither requires nor defaults it): read it as schema.?spec and what is under it with .?field, or guard it with has(schema.spec) (at 1:7 of the expression)
  schema.spec.image
        ^
  and 4 more: spec.resources[0] (id deployment).template.spec.template.spec.containers[0].ports[0].containerPort, spec.resources[1] (id service).template.spec.ports[0].port, spec.resources[2] (id configs).forEach[0], spec.resources[2] (id configs).template.data.image";

#[test]
fn an_rgds_warning_quotes_what_it_wrote_once_for_a_repeated_read_and_never_for_status() {
    let (code, stderr) = plan(SERVICE, false);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr, format!("warning: {SPEC_MAY_BE_ABSENT}"));

    // Strict: the same read is an error, said the same way; status reads still are not
    // (a status field that cannot be computed is left out, it does not fail).
    let (code, stderr) = plan(SERVICE, true);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr, format!("error: {SPEC_MAY_BE_ABSENT}"));

    // Guarded, nothing is left to say.
    let guarded = SERVICE
        .replace("${schema.spec.image}", "${schema.?spec.?image.orValue('')}")
        .replace("${schema.spec.port}", "${schema.?spec.?port.orValue(8080)}")
        .replace("${schema.spec.names}", "${schema.?spec.?names.orValue([])}");
    let (code, stderr) = plan(&guarded, true);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr, "");
}

#[test]
fn an_rgds_errors_quote_its_names_with_positions_in_the_written_text() {
    let rgd = SERVICE.replace("n: ${name}", "n: ${name.foo}")
        + r#"  - id: extra
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name + schema.spec.nam}"}
      data:
        port: ${schema.spec.port}
"#;
    let (code, stderr) = plan(&rgd, false);
    assert_eq!(code, Some(1), "{stderr}");
    let errors: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        errors,
        [
            // A forEach iterator is named as written (dynrec reads it as `each`).
            "error: rgd.yaml (document 1): spec.resources[2] (id configs).template.data.n: ${name.foo}: name is a string, which has no field \"foo\" (at 1:5 of the expression)",
            "  name.foo",
            "      ^",
            // After a renamed word (`schema`, read as `self`), the column is the written one.
            "rgd.yaml (document 1): spec.resources[3] (id extra).template.metadata.name: ${schema.metadata.name + schema.spec.nam}: schema.spec has no field \"nam\"; its fields are: image, names, port (at 1:35 of the expression)",
            "  schema.metadata.name + schema.spec.nam",
            "                                    ^",
            // An expression quoted inside the message is the written one too.
            "rgd.yaml (document 1): spec.resources[3] (id extra).template.data.port: expected a string, ${schema.spec.port} yields a number",
        ]
    );

    let cases = [
        // A syntax error's position after a renamed word.
        (
            ("image: ${schema.spec.image}\n        n:", "image: ${schema.spec.image +}\n        n:"),
            "error: rgd.yaml (document 1): spec.resources[2] (id configs).template.data.image: ${schema.spec.image +}: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER} (at 1:20 of the expression)
  schema.spec.image +
                     ^",
        ),
        // The resource's own id in its readyWhen (dynrec reads it as `child`).
        (
            ("        n: ${name}\n", "        n: ${name}\n    readyWhen:\n    - ${configs.data.n == 1}\n"),
            "error: rgd.yaml (document 1): spec.resources[2] (id configs).readyWhen[0]: ${configs.data.n == 1}: cannot compare a string with a number (at 1:16 of the expression)
  configs.data.n == 1
                 ^",
        ),
        // The rewrites a message suggests name the iterator as written too.
        (
            ("n: ${name}", "n: ${hash.md5(name)}"),
            "error: rgd.yaml (document 1): spec.resources[2] (id configs).template.data.n: ${hash.md5(name)} yields bytes, which cannot be written into an object: encode them, as base64 with ${base64.encode(hash.md5(name))} or as hex with ${'%x'.format([hash.md5(name)])}",
        ),
    ];
    for ((from, to), expected) in cases {
        let (code, stderr) = plan(&SERVICE.replace(from, to), false);
        assert_eq!(code, Some(1), "{stderr}");
        assert_eq!(stderr, expected);
    }
}

/// An app whose expressions can each fail while reconciling: a key absent from a map, a
/// division by zero, a field a forEach item lacks, a readyWhen on the resource's own id.
const FAILING: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: app}
spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      labels: "map[string]string"
      count: integer | default=1
      divisor: integer | default=1
      workers: "[]map[string]string"
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}"}
      data:
        team: ${schema.spec.labels.team}
        per: ${string(schema.spec.count / schema.spec.divisor)}
  - id: workers
    forEach:
    - worker: ${schema.spec.?workers.orValue([])}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name + '-' + worker.name}"}
      data:
        size: ${worker.size}
    readyWhen:
    - ${workers.data.zone == 'a'}
"#;

/// A `dynrec test` case: the instance `a1` with `spec`, whose status write says KRO's
/// `state` and, on its `ResourcesReady` condition, `message`.
fn failing_case(spec: &str, state: &str, message: &str) -> String {
    format!(
        r#"- name: "spec {spec}"
  given:
  - apiVersion: kro.run/v1alpha1
    kind: App
    metadata: {{name: a1, namespace: default, uid: 11111111-1111-1111-1111-111111111111, generation: 1}}
    spec: {spec}
  expect:
    statusUpdates:
    - status:
        state: {state}
        (conditions[?type == 'ResourcesReady']):
        - {{status: "False", reason: NotReady, message: "{message}"}}
"#
    )
}

#[test]
fn an_rgds_errors_while_reconciling_quote_what_it_wrote_on_the_instance() {
    // A key absent is data not there yet, which KRO waits for (IN_PROGRESS); a division
    // by zero is an error (ERROR).
    let waiting = "awaiting resource readiness";
    let failed = "resource reconciliation failed";
    let cases = [
        (
            "{labels: {owner: me}, count: 1, divisor: 1}",
            "IN_PROGRESS",
            format!(
                "{waiting}: ConfigReady: spec.resources[0] (id config).template.data.team: ${{schema.spec.labels.team}}: no such key: team"
            ),
        ),
        (
            "{labels: {team: a}, count: 1, divisor: 0}",
            "ERROR",
            format!(
                "{failed}: spec.resources[0] (id config).template.data.per: ${{string(schema.spec.count / schema.spec.divisor)}}: division by zero: 1 / 0"
            ),
        ),
        // The forEach iterator as written (dynrec reads it as a field of `each`).
        (
            "{labels: {team: a}, count: 1, divisor: 1, workers: [{name: x}]}",
            "IN_PROGRESS",
            format!(
                "{waiting}: WorkersReady: spec.resources[1] (id workers).template.data.size: ${{worker.size}}: no such key: size"
            ),
        ),
        // The resource's own id in its readyWhen (dynrec reads it as `child`).
        (
            "{labels: {team: a}, count: 1, divisor: 1, workers: [{name: x, size: s}]}",
            "IN_PROGRESS",
            format!(
                "{waiting}: WorkersReady: ConfigMap a1-x: readyWhen ${{workers.data.zone == 'a'}} waits for its data: no such key: zone"
            ),
        ),
    ];
    let file = cases
        .iter()
        .map(|(spec, state, message)| failing_case(spec, state, message))
        .collect::<String>();
    let dir = tempfile::tempdir().unwrap();
    let rgd = dir.path().join("rgd.yaml");
    let cases_file = dir.path().join("cases.yaml");
    std::fs::write(&rgd, FAILING).unwrap();
    std::fs::write(&cases_file, format!("definition: app\ncases:\n{file}")).unwrap();
    let output = dynrec(&[
        "test",
        "-f",
        &rgd.to_string_lossy(),
        &cases_file.to_string_lossy(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("4 passed, 0 failed"), "{}", text(&output));
}

#[tokio::test]
async fn dynrec_run_logs_and_writes_an_rgds_error_while_reconciling_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = start_apiserver(dir.path(), "127.0.0.1:0", &[]);
    let rgd = dir.path().join("rgd.yaml");
    std::fs::write(&rgd, FAILING).unwrap();
    let log = dir.path().join("run.log");
    let _run = start_controller(dir.path(), &rgd, &log, None, &[]);

    let gvk = GroupVersionKind::gvk("kro.run", "v1alpha1", "App");
    let apps: Api<DynamicObject> = Api::namespaced_with(
        client(&url),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "apps"),
    );
    let instance: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kro.run/v1alpha1", "kind": "App",
        "metadata": {"name": "a1"}, "spec": {"labels": {"team": "a"}, "divisor": 0}
    }))
    .unwrap();
    eventually("the App kind is served and a1 created", || async {
        apps.create(&PostParams::default(), &instance).await.is_ok()
    })
    .await;

    let error = "spec.resources[0] (id config).template.data.per: ${string(schema.spec.count / schema.spec.divisor)}: division by zero: 1 / 0";
    let resources_ready = || async {
        let app = apps.get("a1").await.unwrap();
        let conditions = app.data["status"]["conditions"].as_array().cloned();
        conditions
            .unwrap_or_default()
            .into_iter()
            .find(|c| c["type"] == "ResourcesReady" && c["status"] == "False")
    };
    eventually("ResourcesReady is False", || async {
        resources_ready().await.is_some()
    })
    .await;
    assert_eq!(
        resources_ready().await.unwrap()["message"],
        format!("resource reconciliation failed: {error}")
    );
    let logged = "object=default/a1";
    eventually("the failure is logged", || async {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .any(|l| l.contains("reconcile failed") && l.contains(logged))
    })
    .await;
    let text = std::fs::read_to_string(&log).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("reconcile failed") && l.contains(logged))
        .unwrap();
    assert!(line.ends_with(&format!("error={error:?}")), "{line}");
    assert!(!text.contains("self.spec"), "{text}");
}
