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
    let files = Files::new("kro-convert-collection", &[("teams.yaml", rgd)]);
    let (code, converted, stderr) = files.convert(&["teams.yaml"]);
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
        stderr.contains("no ResourceGraphDefinition or CustomResourceDefinition in this file"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A temporary directory holding `files` (name, text), removed when dropped.
struct Files(PathBuf);

impl Files {
    fn new(test: &str, files: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir().join(format!("dynrec-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        Files(dir)
    }

    fn convert(&self, names: &[&str]) -> (Option<i32>, String, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_dynrec"))
            .args(["convert", "kro"])
            .args(names.iter().map(|n| self.0.join(n)))
            .current_dir(&self.0)
            .output()
            .expect("dynrec runs");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An RGD named `name` of kind `kind` whose one resource is `template` (YAML, indented
/// under `template:`).
fn rgd(name: &str, kind: &str, spec: &str, template: &str) -> String {
    format!(
        "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {{name: {name}}}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: {kind}\n    spec: {spec}\n  resources:\n  - id: thing\n    template:\n{template}"
    )
}

#[test]
fn converting_type_checks_the_expressions_as_run_does() {
    let digest = rgd(
        "digests",
        "Digest",
        "{name: string}",
        "      apiVersion: v1\n      kind: ConfigMap\n      metadata: {name: \"${schema.metadata.name}\"}\n      data:\n        digest: ${hash.md5(schema.spec.name)}\n        name: ${schema.spec.nam}\n",
    );
    let files = Files::new("kro-convert-check", &[("digest.yaml", &digest)]);
    let (code, stdout, stderr) = files.convert(&["digest.yaml"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(stdout, "");
    let file = files.0.join("digest.yaml").display().to_string();
    assert_eq!(
        stderr,
        format!(
            "error: {file} (document 1): spec.resources[0] (id thing).template.data.digest: ${{hash.md5(schema.spec.name)}} yields bytes, which cannot be written into an object: encode them, as base64 with ${{base64.encode(hash.md5(schema.spec.name))}} or as hex with ${{'%x'.format([hash.md5(schema.spec.name)])}}\n\
             {file} (document 1): spec.resources[0] (id thing).template.data.name: ${{schema.spec.nam}}: schema.spec has no field \"nam\"; its fields are: name (at 1:12 of the expression)\n  schema.spec.nam\n             ^\n"
        )
    );
}

#[test]
fn converting_checks_against_the_files_crds_and_the_rgds_instance_kinds() {
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: buckets.storage.example.com}
spec:
  group: storage.example.com
  names: {kind: Bucket, plural: buckets, singular: bucket, listKind: BucketList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {region: {type: string}}}
"#;
    // `site` uses the kind of `store`, defined after it, and `store` a Bucket of the CRD.
    let site = rgd(
        "site",
        "Site",
        "{region: \"string | default=eu\"}",
        "      apiVersion: kro.run/v1alpha1\n      kind: Store\n      metadata: {name: \"${schema.metadata.name}\"}\n      spec: {where: \"${schema.spec.region}\"}\n",
    );
    let store = |field: &str| {
        rgd(
            "store",
            "Store",
            "{where: \"string | default=eu\"}",
            &format!(
                "      apiVersion: storage.example.com/v1\n      kind: Bucket\n      metadata: {{name: \"${{schema.metadata.name}}\"}}\n      spec: {{{field}: \"${{schema.spec.where}}\"}}\n"
            ),
        )
    };
    let (good, bad) = (store("region"), store("regoin"));
    let files = Files::new(
        "kro-convert-crds",
        &[
            ("crd.yaml", crd),
            ("site.yaml", &site),
            ("good.yaml", &good),
            ("bad.yaml", &bad),
        ],
    );
    let (code, stdout, stderr) = files.convert(&["crd.yaml", "site.yaml", "good.yaml"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr, "", "no warning: every kind is known");
    assert_eq!(
        stdout.matches("kind: ReconcilerDefinition").count(),
        2,
        "{stdout}"
    );
    let (code, stdout, stderr) = files.convert(&["crd.yaml", "bad.yaml"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stderr.contains("bad.yaml (document 1): spec.resources[0] (id thing).template.spec.regoin: unknown field \"regoin\"; the schema has: region"),
        "{stderr}"
    );
    // Without the CRD, the Bucket is not checked: a warning, as `dynrec run -f` says.
    let (code, _, stderr) = files.convert(&["good.yaml"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: ") && stderr.contains("storage.example.com/v1"),
        "{stderr}"
    );
}
