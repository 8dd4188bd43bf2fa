//! KRO's custom status conditions (`spec.schema.status.conditions`) on the embedded API
//! server, as KRO's documentation describes them: only the author's conditions on the
//! instance's `status.conditions` (KRO's four still computed and readable with
//! `runtime.condition(schema, ...)`), one per item of a collection, degraded evaluation
//! (`state: ERROR`, survivors written, earlier conditions kept), the block removed giving
//! the wire back to KRO's conditions, and every load refusal with its place.

mod dynrec_cli_common;
mod kro_common;

use dynrec_cli_common::{dynrec, text};
use kro_common::{Running, condition, object_where};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

/// KRO's WebApp example: `AppReady` from the Deployment, and a `Ready` of the author's
/// composing KRO's `ResourcesReady` with it; `mode` feeds a condition that fails on a bad
/// status.
const WEBAPP: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: webapp}
spec:
  schema:
    apiVersion: v1alpha1
    kind: WebApp
    spec:
      mode: string | default="True"
    status:
      ready: ${deployment.status.readyReplicas}
      conditions:
        - >-
          ${runtime.newCondition({
            type: 'AppReady',
            status: deployment.status.readyReplicas > 0 ? 'True' : 'False',
            reason: 'ReplicaCount',
            message: ''
          })}
        - >-
          ${runtime.newCondition({
            type: 'Ready',
            status: runtime.condition(schema, 'ResourcesReady').status == 'True'
              && deployment.status.readyReplicas > 0 ? 'True' : 'False',
            reason: deployment.status.readyReplicas > 0 ? 'AllHealthy' : 'NotReady',
            message: 'resources: ' + runtime.condition(schema, 'ResourcesReady').reason
          })}
        - "${runtime.newCondition({type: 'Mode', status: schema.spec.mode, reason: 'AsAsked'})}"
  resources:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: "${schema.metadata.name}"}
      spec:
        selector: {matchLabels: {app: "${schema.metadata.name}"}}
        template:
          metadata: {labels: {app: "${schema.metadata.name}"}}
          spec:
            containers:
            - {name: app, image: nginx}
"#;

/// The types of an object's conditions, in order.
fn types(object: &Value) -> Vec<&str> {
    object["status"]["conditions"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["type"].as_str()).collect())
        .unwrap_or_default()
}

/// The status of the condition `type_`, if there is one.
fn status_of<'a>(object: &'a Value, type_: &str) -> Option<&'a str> {
    condition(object, type_).and_then(|c| c["status"].as_str())
}

#[tokio::test]
async fn the_authors_conditions_replace_kros_degrade_to_error_and_give_the_wire_back_when_removed()
{
    let running = Running::start().await;
    running.apply_active_rgd(WEBAPP).await;
    let apps = running.api("kro.run/v1alpha1", "WebApp");
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: WebApp\nmetadata: {name: shop, namespace: default}\nspec: {}\n")
        .await
        .unwrap();

    // The Deployment has no status yet: the entries reading it wait (no ERROR), the one
    // that can be computed is written.
    let app = object_where(&apps, "shop", "Mode to be written", |app| {
        status_of(app, "Mode") == Some("True")
    })
    .await;
    assert_eq!(types(&app), ["Mode"], "{app}");
    assert_ne!(app["status"]["state"], "ERROR", "{app}");

    let deployments = running.api("apps/v1", "Deployment");
    deployments
        .patch_status(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"readyReplicas": 1}})),
        )
        .await
        .unwrap();
    let app = object_where(&apps, "shop", "AppReady and Ready True", |app| {
        status_of(app, "AppReady") == Some("True") && status_of(app, "Ready") == Some("True")
    })
    .await;
    // Only the author's conditions, in the entries' order; KRO's state stays KRO's.
    assert_eq!(types(&app), ["AppReady", "Ready", "Mode"], "{app}");
    assert_eq!(app["status"]["state"], "ACTIVE", "{app}");
    assert_eq!(app["status"]["ready"], 1, "{app}");
    let ready = condition(&app, "Ready").unwrap();
    assert_eq!(ready["reason"], "AllHealthy");
    // runtime.condition(schema, 'ResourcesReady') read KRO's internal value.
    assert_eq!(ready["message"], "resources: AllResourcesReady");
    assert_eq!(ready["observedGeneration"], 1);
    assert!(ready["lastTransitionTime"].is_string(), "{ready}");
    // `message: ''` is left out, as KRO writes an empty message.
    assert!(
        condition(&app, "AppReady")
            .unwrap()
            .get("message")
            .is_none()
    );

    // A failing entry: the survivors are written, the failed one's condition is kept as it
    // was (generation 1), and the state is ERROR.
    apps.patch(
        "shop",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"mode": "maybe"}})),
    )
    .await
    .unwrap();
    let app = object_where(&apps, "shop", "the state to be ERROR", |app| {
        app["status"]["state"] == "ERROR"
            && condition(app, "AppReady").is_some_and(|c| c["observedGeneration"] == 2)
    })
    .await;
    assert_eq!(types(&app), ["AppReady", "Ready", "Mode"], "{app}");
    let mode = condition(&app, "Mode").unwrap();
    assert_eq!(
        (&mode["status"], &mode["observedGeneration"]),
        (&json!("True"), &json!(1))
    );

    // Fixed: a fully successful evaluation replaces the wire, and the state is KRO's again.
    apps.patch(
        "shop",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"mode": "False"}})),
    )
    .await
    .unwrap();
    let app = object_where(&apps, "shop", "Mode to be False", |app| {
        status_of(app, "Mode") == Some("False")
    })
    .await;
    assert_eq!(app["status"]["state"], "ACTIVE", "{app}");

    // The block removed: the wire is KRO's four again.
    let without = webapp_with(None);
    running.apply_active_rgd(&without).await;
    object_where(&apps, "shop", "KRO's conditions back, Ready", |app| {
        types(app)
            == [
                "InstanceManaged",
                "GraphResolved",
                "ResourcesReady",
                "Ready",
            ]
            && status_of(app, "Ready") == Some("True")
    })
    .await;
    running.stop().await;
}

/// KRO's SubnetGroup example, with ConfigMaps for subnets: one condition per item.
const SUBNETS: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: subnetgroup}
spec:
  schema:
    apiVersion: v1alpha1
    kind: SubnetGroup
    spec:
      name: string
      cidrBlocks: "[]string"
    status:
      conditions:
        - >-
          ${subnets.map(s, runtime.newCondition({
            type: 'Subnet-' + s.metadata.name + '-Ready',
            status: s.data.state == 'available' ? 'True' : 'False',
            reason: 'SubnetState',
            message: ''
          }))}
  resources:
  - id: subnets
    forEach:
      - cidr: ${schema.spec.cidrBlocks}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.spec.name}-${cidr}
      data:
        state: "${cidr == 'a' ? 'available' : 'pending'}"
"#;

#[tokio::test]
async fn a_list_of_conditions_tracks_a_collection() {
    let running = Running::start().await;
    running.apply_active_rgd(SUBNETS).await;
    let groups = running.api("kro.run/v1alpha1", "SubnetGroup");
    let group = |blocks: &str| {
        format!(
            "apiVersion: kro.run/v1alpha1\nkind: SubnetGroup\nmetadata: {{name: g, namespace: default}}\nspec: {{name: net, cidrBlocks: {blocks}}}\n"
        )
    };
    running.apply(&group("[a, b]")).await.unwrap();
    let found = object_where(&groups, "g", "a condition per subnet", |g| {
        types(g).len() == 2
    })
    .await;
    assert_eq!(types(&found), ["Subnet-net-a-Ready", "Subnet-net-b-Ready"]);
    assert_eq!(status_of(&found, "Subnet-net-a-Ready"), Some("True"));
    assert_eq!(status_of(&found, "Subnet-net-b-Ready"), Some("False"));

    // One subnet left: the condition of the other goes with it.
    running.apply(&group("[a]")).await.unwrap();
    let found = object_where(&groups, "g", "one condition left", |g| types(g).len() == 1).await;
    assert_eq!(types(&found), ["Subnet-net-a-Ready"]);
    running.stop().await;
}

/// `dynrec plan --embedded -f` on `rgd`: its exit code and stderr.
fn plan(rgd: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rgd.yaml");
    std::fs::write(&file, rgd).unwrap();
    let output = dynrec(&["plan", "--embedded", "-f", &file.to_string_lossy()]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{}", text(&output));
    (output.status.code(), stderr)
}

/// [`WEBAPP`] with its conditions replaced by `conditions` (list items `        - TEXT`,
/// each written as a folded YAML string), or without any.
fn webapp_with(conditions: Option<&str>) -> String {
    let block: String = conditions
        .into_iter()
        .flat_map(str::lines)
        .map(|l| {
            format!(
                "        - >-\n          {}\n",
                l.trim_start().trim_start_matches("- ")
            )
        })
        .collect();
    let head = WEBAPP.lines().take_while(|l| l.trim() != "conditions:");
    let block = conditions.map(|_| format!("      conditions:\n{block}"));
    let tail = WEBAPP.lines().skip_while(|l| l.trim() != "resources:");
    head.map(|l| format!("{l}\n"))
        .chain(block)
        .chain(tail.map(|l| format!("{l}\n")))
        .collect()
}

#[test]
fn bad_conditions_are_refused_at_load_naming_the_entry_and_position() {
    let at0 = "spec.schema.status.conditions[0]";
    let at1 = "spec.schema.status.conditions[1]";
    let ok = "        - ${runtime.newCondition({type: 'A', status: 'True'})}\n";
    let cases = [
        (
            format!("{ok}        - ${{runtime.newCondition({{type: 'B', status: runtime.condition(schema, 'A').status}})}}\n"),
            at1,
            "runtime.condition(schema, \"A\"): custom conditions cannot reference each other",
        ),
        (
            "        - ${runtime.newCondition({type: 'B', status: runtime.condition(schema, 'Redy').status})}\n".to_owned(),
            at0,
            "runtime.condition(schema, \"Redy\"): unknown condition type; only kro's built-in types (InstanceManaged, GraphResolved, ResourcesReady, Ready) can be read from schema",
        ),
        (
            format!("{ok}{ok}"),
            at1,
            "condition type \"A\" is declared by more than one conditions entry",
        ),
        (
            "        - ${runtime.newCondition({type: 'A', status: 'Yes'})}\n".to_owned(),
            at0,
            "runtime.newCondition: status must be one of True, False, Unknown (got \"Yes\")",
        ),
        (
            "        - ${runtime.newCondition({'type': 'A', status: 'True'})}\n".to_owned(),
            at0,
            "runtime.newCondition: keys must be bare identifiers",
        ),
        (
            "        - ${runtime.newCondition({type: 'A'})}\n".to_owned(),
            at0,
            "runtime.newCondition: 'status' is required",
        ),
        (
            "        - ${schema.spec.mode}\n".to_owned(),
            at0,
            "condition expressions must return runtime.newCondition(...) or a list of them, got a string",
        ),
        (
            "        - plain text\n".to_owned(),
            at0,
            "status.conditions[0] must be a CEL expression string",
        ),
    ];
    for (conditions, at, want) in cases {
        let (code, stderr) = plan(&webapp_with(Some(&conditions)));
        assert_eq!(code, Some(1), "{conditions}: {stderr}");
        assert!(
            stderr.contains(at) && stderr.contains(want),
            "{conditions}: {stderr}"
        );
    }

    // `runtime` anywhere else is refused, as KRO does.
    let elsewhere = WEBAPP.replace(
        "- {name: app, image: nginx}",
        "- {name: app, image: \"${runtime.condition(schema, 'Ready').status}\"}",
    );
    let (code, stderr) = plan(&elsewhere);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("is only available in spec.schema.status.conditions"),
        "{stderr}"
    );

    // A position is given: the caret under the literal type read from schema.
    let (_, stderr) = plan(&webapp_with(Some(
        "        - ${runtime.newCondition({type: 'B', status: runtime.condition(schema, 'Redy').status})}\n",
    )));
    assert!(stderr.contains("(at 1:"), "{stderr}");
}
