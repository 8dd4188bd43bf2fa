//! `dynrec convert kro`: the ReconcilerDefinition it prints runs and makes the same objects
//! as the RGD it came from, over two embedded API servers.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::definitions::{Definitions, parse_documents};
use dynrec::reconcilers::Config;
use dynrec::runtime::{Manager, ManagerOptions};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(15);

fn webapp() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kro/webapp.yaml")
}

fn convert(path: &Path) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .args(["convert", "kro"])
        .arg(path)
        .output()
        .expect("dynrec runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn api(
    kube: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    Api::namespaced_with(kube.clone(), "default", &ar)
}

/// A kind of child: group, version, kind, plural.
type ChildKind = (&'static str, &'static str, &'static str, &'static str);

/// The kinds of the webapp example's children.
const WEBAPP_CHILDREN: [ChildKind; 3] = [
    ("apps", "v1", "Deployment", "deployments"),
    ("", "v1", "Service", "services"),
    ("networking.k8s.io", "v1", "Ingress", "ingresses"),
];

/// Runs the definitions of `text` on a fresh server, applies `instance` (of group
/// `kro.run`, namespace `default`), and returns its children of `kinds` (by kind and name)
/// once the instance is ACTIVE, without the fields that differ between servers.
async fn children_of(text: &str, source: &str, instance: Value, kinds: &[ChildKind]) -> Vec<Value> {
    let server = ApiServer::new();
    let kube = server.client();
    let client = Client::new(kube.clone());
    let config = Config::new(client.clone(), "test");
    let manager = Manager::new(client, ManagerOptions::default());
    let definitions = Definitions::new(&manager, &config);
    for loaded in parse_documents(text, source).unwrap() {
        definitions.start(&loaded).await.unwrap();
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        manager
            .run(async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    let kind = instance["kind"].as_str().unwrap();
    let name = instance["metadata"]["name"].as_str().unwrap().to_owned();
    let instances = api(
        &kube,
        "kro.run",
        "v1alpha1",
        kind,
        &dynrec::kro::plural(kind),
    );
    instances
        .patch(
            &name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(instance),
        )
        .await
        .unwrap();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let found = instances.get(&name).await.unwrap();
        if found.data["status"]["state"] == "ACTIVE" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the instance never became ACTIVE: {:?}",
            found.data["status"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut children = Vec::new();
    for &(group, version, kind, plural) in kinds {
        for object in api(&kube, group, version, kind, plural)
            .list(&Default::default())
            .await
            .unwrap()
        {
            let mut labels = object.metadata.labels.clone().unwrap_or_default();
            if !labels.contains_key("kro.run/owned") {
                continue; // the `kubernetes` Service
            }
            labels.remove("kro.run/instance-id");
            // Addresses the server assigns differ between servers.
            let mut spec = object.data["spec"].clone();
            if let Some(spec) = spec.as_object_mut() {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
            children.push(
                json!({"kind": kind, "name": object.metadata.name, "labels": labels,
                "spec": spec, "data": object.data["data"]}),
            );
        }
    }
    let _ = stop.send(());
    tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap();
    drop(server);
    children
}

#[tokio::test]
async fn the_converted_definition_makes_the_same_objects_as_the_rgd() {
    let (code, converted, stderr) = convert(&webapp());
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        converted.starts_with("# ResourceGraphDefinition \"webapp.kro.run\""),
        "{converted}"
    );
    assert!(
        converted.contains("# - schema.status is a sync step"),
        "{converted}"
    );
    assert!(
        converted.contains("kind: ReconcilerDefinition"),
        "{converted}"
    );
    assert!(
        converted.contains("self.spec.service.enabled"),
        "{converted}"
    );
    let rgd = std::fs::read_to_string(webapp()).unwrap();
    let instance = json!({"apiVersion": "kro.run/v1alpha1", "kind": "WebApp",
        "metadata": {"name": "site", "namespace": "default"},
        "spec": {"name": "site", "ingress": {"enabled": true}}});
    let from_rgd = children_of(&rgd, "webapp.yaml", instance.clone(), &WEBAPP_CHILDREN).await;
    let from_definition =
        children_of(&converted, "converted.yaml", instance, &WEBAPP_CHILDREN).await;
    assert_eq!(from_rgd.len(), 3, "{from_rgd:#?}");
    assert_eq!(from_rgd, from_definition);
}

#[tokio::test]
async fn a_converted_collection_labels_its_items_in_foreach_order_as_kro_does() {
    let rgd = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: teams}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Teams
    spec: {names: "[]string"}
  resources:
  - id: configs
    forEach:
    - team: ${schema.spec.names}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}-${team}"}
      data: {team: "${team}"}
"#;
    let dir = std::env::temp_dir().join(format!("dynrec-kro-collection-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("teams.yaml");
    std::fs::write(&file, rgd).unwrap();
    let (code, converted, stderr) = convert(&file);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, Some(0), "{stderr}");
    let instance = json!({"apiVersion": "kro.run/v1alpha1", "kind": "Teams",
        "metadata": {"name": "org", "namespace": "default"},
        "spec": {"names": ["red", "blue", "green"]}});
    let config_maps = [("", "v1", "ConfigMap", "configmaps")];
    let from_rgd = children_of(rgd, "teams.yaml", instance.clone(), &config_maps).await;
    let from_definition = children_of(&converted, "converted.yaml", instance, &config_maps).await;
    assert_eq!(from_rgd, from_definition);
    let positions: Vec<(&Value, &Value, &Value)> = from_definition
        .iter()
        .map(|c| {
            let labels = &c["labels"];
            (
                &c["name"],
                &labels["kro.run/collection-index"],
                &labels["kro.run/collection-size"],
            )
        })
        .collect();
    assert_eq!(
        positions,
        [
            (&json!("org-blue"), &json!("1"), &json!("3")),
            (&json!("org-green"), &json!("2"), &json!("3")),
            (&json!("org-red"), &json!("0"), &json!("3")),
        ]
    );
}

#[test]
fn converting_a_bad_rgd_names_the_place_and_exits_non_zero() {
    let dir = std::env::temp_dir().join(format!("dynrec-kro-convert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(
        &file,
        "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: bad}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: Bad\n    spec: {size: integer | minimun=1}\n  resources:\n  - id: a\n    templat: {}\n",
    )
    .unwrap();
    let (code, stdout, stderr) = convert(&file);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stderr
            .contains("bad.yaml (document 1): spec.resources[0].templat: unknown field `templat`"),
        "{stderr}"
    );
    let empty = dir.join("none.yaml");
    std::fs::write(
        &empty,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let (code, _, stderr) = convert(&empty);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("no ResourceGraphDefinition in this file"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
