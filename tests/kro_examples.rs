//! KRO's own examples (`examples/kubernetes/` of kubernetes-sigs/kro, copied unchanged in
//! `tests/kro_examples/`, see its NOTICE), run as KRO's README for each describes: the RGDs
//! load, the instance is created, and it becomes ACTIVE with the children the README lists.
//! No kubelet runs here, so the test writes a Deployment's or Job's status as its
//! controller would. Each example runs twice, as its RGDs and as what `dynrec convert kro`
//! prints for them, and both make the same children.

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

const DEADLINE: Duration = Duration::from_secs(30);

/// An example: its RGD files, its instance, and the children (kind, name) it makes.
struct Example {
    dir: &'static str,
    rgds: &'static [&'static str],
    instance: &'static str,
    children: Vec<(&'static str, String)>,
}

/// Children by kind and name.
fn named(children: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    children
        .iter()
        .map(|(kind, name)| (*kind, (*name).to_owned()))
        .collect()
}

/// The kinds the examples make: group, version, kind, plural.
const KINDS: &[(&str, &str, &str, &str)] = &[
    ("apps", "v1", "Deployment", "deployments"),
    ("", "v1", "Service", "services"),
    ("", "v1", "ConfigMap", "configmaps"),
    ("", "v1", "ServiceAccount", "serviceaccounts"),
    ("", "v1", "Namespace", "namespaces"),
    ("", "v1", "ResourceQuota", "resourcequotas"),
    ("batch", "v1", "Job", "jobs"),
    ("networking.k8s.io", "v1", "Ingress", "ingresses"),
    (
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
    ),
    (
        "kro.run",
        "v1alpha1",
        "TenantEnvironment",
        "tenantenvironments",
    ),
    (
        "kro.run",
        "v1alpha1",
        "TenantApplication",
        "tenantapplications",
    ),
];

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kro_examples")
}

fn read(dir: &str, file: &str) -> String {
    std::fs::read_to_string(examples_dir().join(dir).join(file)).unwrap()
}

/// What `dynrec convert kro` prints for `files` of `dir`.
fn converted(dir: &str, files: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .args(["convert", "kro"])
        .args(files.iter().map(|f| examples_dir().join(dir).join(f)))
        .output()
        .expect("dynrec runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "convert {dir}: {stderr}");
    String::from_utf8(output.stdout).unwrap()
}

/// The objects of `kind` in every namespace (or cluster-scoped).
fn api(kube: &kube::Client, kind: &(&str, &str, &str, &str)) -> Api<DynamicObject> {
    let (group, version, kind, plural) = *kind;
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    Api::all_with(kube.clone(), &ar)
}

/// Writes the status a Deployment's or a Job's controller would, once it has none.
async fn act_as_controllers(kube: &kube::Client, object: &DynamicObject, kind: &str) {
    let status = match kind {
        "Deployment" if object.data["status"].get("availableReplicas").is_none() => {
            let replicas = object.data["spec"]["replicas"].clone();
            json!({"status": {"replicas": replicas, "readyReplicas": replicas,
                "availableReplicas": replicas, "updatedReplicas": replicas}})
        }
        "Job" if object.data["status"].get("completionTime").is_none() => {
            json!({"status": {"succeeded": 1, "startTime": "2026-01-01T00:00:00Z",
                "completionTime": "2026-01-01T00:00:10Z"}})
        }
        _ => return,
    };
    let namespace = object.metadata.namespace.as_deref().unwrap_or("default");
    let (group, version, plural) = match kind {
        "Job" => ("batch", "v1", "jobs"),
        _ => ("apps", "v1", "deployments"),
    };
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    let namespaced: Api<DynamicObject> = Api::namespaced_with(kube.clone(), namespace, &ar);
    let name = object.metadata.name.as_deref().unwrap_or_default();
    // A child changed meanwhile is seen again on the next round.
    let _ = namespaced
        .patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await;
}

/// The children KRO labels as owned (and those `expected`, whatever their labels), by kind
/// and name, each with its labels (but the instance's UID) and spec (but what differs
/// between servers: the addresses they assign, and strings seeded by the instance's UID).
async fn children(kube: &kube::Client, expected: &[(&'static str, String)]) -> Vec<Value> {
    let mut found = Vec::new();
    for kind in KINDS {
        // A kind no RGD of the example defines is not served.
        let Ok(listed) = api(kube, kind).list(&Default::default()).await else {
            continue;
        };
        for object in listed {
            let mut labels = object.metadata.labels.clone().unwrap_or_default();
            let name = object.metadata.name.clone().unwrap_or_default();
            let is_expected = expected.iter().any(|(k, n)| *k == kind.2 && *n == name);
            if !labels.contains_key("kro.run/owned") && !is_expected {
                continue;
            }
            labels.remove("kro.run/instance-id");
            let mut spec = object.data["spec"].clone();
            if let Some(spec) = spec.as_object_mut().filter(|_| kind.2 == "Service") {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
            for container in spec["template"]["spec"]["containers"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                for variable in container["env"].as_array_mut().into_iter().flatten() {
                    if variable["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("RANDOM_"))
                    {
                        let seeded = variable["value"].as_str().map_or(0, str::len);
                        variable["value"] = json!(format!("{seeded} characters"));
                    }
                }
            }
            found.push(json!({"kind": kind.2, "name": object.metadata.name,
                "namespace": object.metadata.namespace, "labels": labels, "spec": spec,
                "data": object.data.get("data")}));
        }
    }
    found.sort_by_key(|child| (child["kind"].to_string(), child["name"].to_string()));
    found
}

/// Runs the definitions of `text` on a fresh server, applies the example's instance, and
/// returns the instance once ACTIVE with every child the example lists, and its children.
async fn run(example: &Example, text: &str) -> (Value, Vec<Value>) {
    let server = ApiServer::new();
    let kube = server.client();
    let client = Client::new(kube.clone());
    let config = Config::new(client.clone(), "test");
    let manager = Manager::new(client, ManagerOptions::default());
    let definitions = Definitions::new(&manager, &config);
    for loaded in parse_documents(text, example.dir).unwrap() {
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
    let instance: Value = serde_saphyr::from_str(&read(example.dir, example.instance)).unwrap();
    let kind = instance["kind"].as_str().unwrap().to_owned();
    let name = instance["metadata"]["name"].as_str().unwrap().to_owned();
    let plural = format!("{}s", kind.to_lowercase());
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kro.run", "v1alpha1", &kind),
        &plural,
    );
    let instances: Api<DynamicObject> = Api::namespaced_with(kube.clone(), "default", &ar);
    let deadline = Instant::now() + DEADLINE;
    // The instance CRD is served once the definition started.
    while let Err(err) = instances
        .patch(
            &name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&instance),
        )
        .await
    {
        assert!(Instant::now() < deadline, "{}: {err}", example.dir);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (found, made) = loop {
        for kind in ["Deployment", "Job"] {
            let listed = KINDS.iter().find(|k| k.2 == kind).unwrap();
            for object in api(&kube, listed).list(&Default::default()).await.unwrap() {
                act_as_controllers(&kube, &object, kind).await;
            }
        }
        let found = instances.get(&name).await.unwrap();
        let made = children(&kube, &example.children).await;
        let listed = |(kind, name): &(&str, String)| {
            made.iter()
                .any(|child| child["kind"] == *kind && child["name"] == name.as_str())
        };
        if found.data["status"]["state"] == "ACTIVE" && example.children.iter().all(listed) {
            break (serde_json::to_value(&found).unwrap(), made);
        }
        assert!(
            Instant::now() < deadline,
            "{}: the instance never became ACTIVE with its children: {:#?}\nchildren: {:#?}",
            example.dir,
            found.data["status"],
            made.iter()
                .map(|c| (&c["kind"], &c["name"]))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = stop.send(());
    tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap();
    drop(server);
    (found, made)
}

/// Runs `example` as its RGDs and as their conversion: the same children, and the
/// instance as the RGDs leave it.
async fn run_both(example: &Example) -> (Value, Vec<Value>) {
    let rgds: String = example
        .rgds
        .iter()
        .map(|file| format!("---\n{}\n", read(example.dir, file)))
        .collect();
    let (instance, from_rgds) = run(example, &rgds).await;
    let (_, from_conversion) = run(example, &converted(example.dir, example.rgds)).await;
    assert_eq!(
        from_rgds.len(),
        example.children.len(),
        "{}: {from_rgds:#?}",
        example.dir
    );
    assert_eq!(from_rgds, from_conversion, "{}", example.dir);
    (instance, from_rgds)
}

fn child<'a>(children: &'a [Value], kind: &str, name: &str) -> &'a Value {
    children
        .iter()
        .find(|c| c["kind"] == kind && c["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

#[tokio::test]
async fn webapp_makes_a_deployment_service_and_ingress() {
    let example = Example {
        dir: "webapp",
        rgds: &["rg.yaml"],
        instance: "instance.yaml",
        children: named(&[
            ("Deployment", "test-app"),
            ("Service", "test-app"),
            ("Ingress", "test-app"),
        ]),
    };
    let (instance, children) = run_both(&example).await;
    assert_eq!(instance["status"]["state"], "ACTIVE");
    let ingress = child(&children, "Ingress", "test-app");
    let backend = &ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"];
    assert_eq!(backend["name"], "test-app", "{ingress:#}");
}

#[tokio::test]
async fn printer_columns_example_makes_its_deployment_and_service() {
    run_both(&Example {
        dir: "additionalPrinterColumns",
        rgds: &["rg.yaml"],
        instance: "instance.yaml",
        children: named(&[("Deployment", "test-app"), ("Service", "test-app-service")]),
    })
    .await;
}

#[tokio::test]
async fn cel_functions_example_computes_kros_library_values() {
    let (instance, children) = run_both(&Example {
        dir: "cel-functions",
        rgds: &["rg.yaml"],
        instance: "instance.yaml",
        children: named(&[("Deployment", "app"), ("Service", "app")]),
    })
    .await;
    let deployment = child(&children, "Deployment", "app");
    let env = &deployment["spec"]["template"]["spec"]["containers"][0]["env"];
    let value = |name: &str| {
        env.as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .map(|e| e["value"].clone())
            .unwrap_or_else(|| panic!("no {name} in {env:#}"))
    };
    assert_eq!(value("FULL_DNS_NAME"), "a.b.c.d.example.com");
    assert_eq!(value("DNS_FIRST_PART"), "a");
    assert_eq!(value("DNS_PARTIALS"), "a");
    assert_eq!(value("LISTS_SUM"), "600");
    assert_eq!(value("JSON_UNMARSHAL_EXAMPLE"), "exampleJSONValue");
    assert_eq!(value("JSON_MARSHAL_EXAMPLE"), r#"{"name":"app"}"#);
    assert_eq!(value("QUANTITY_COMPARISON"), "small");
    assert_eq!(value("HASH_FNV64A_BASE64"), "50+nGQVqg4w=");
    assert_eq!(
        value("HASH_SHA256_BASE64"),
        "oXLO3K5HR0thXFTVEKXYSo3qMDLpWFh0MLQTU4vj8zM="
    );
    assert_eq!(value("RANDOM_SEEDED_STRING"), "10 characters");
    let service = child(&children, "Service", "app");
    assert_eq!(service["labels"]["partials"], "a.b.c", "{service:#}");
    assert_eq!(instance["status"]["state"], "ACTIVE");
}

#[tokio::test]
async fn defaults_example_fills_the_instances_defaults() {
    let (instance, _) = run_both(&Example {
        dir: "defaults",
        rgds: &["rg.yaml"],
        instance: "instance.yaml",
        children: named(&[]),
    })
    .await;
    let spec = &instance["spec"];
    assert_eq!(spec["elements"], json!(["a", "b", "c", "d"]), "{spec:#}");
    assert_eq!(spec["element"], "e");
    assert_eq!(spec["enabled"], true);
    assert_eq!(spec["number"], 100);
    assert_eq!(spec["config"], json!({"field2": 200, "field3": 2002}));
}

#[tokio::test]
async fn job_example_waits_for_its_job_to_complete() {
    let (instance, children) = run_both(&Example {
        dir: "job-example",
        rgds: &["rgd.yaml"],
        instance: "instance.yaml",
        children: named(&[
            ("Job", "example-job-deployment-job"),
            ("Deployment", "example-job-deployment"),
        ]),
    })
    .await;
    let deployment = child(&children, "Deployment", "example-job-deployment");
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(instance["status"]["state"], "ACTIVE");
}

#[tokio::test]
async fn core_dns_example_loads_though_it_writes_a_key_twice() {
    let (_, children) = run_both(&Example {
        dir: "core-dns",
        rgds: &["core-dns.yaml"],
        instance: "coredns-instance.yaml",
        children: named(&[
            ("ClusterRole", "mynameis"),
            ("ClusterRoleBinding", "mynameis"),
            ("ConfigMap", "mynameis"),
            ("Deployment", "mynameis"),
            ("Service", "mynameis"),
            ("ServiceAccount", "mynameis"),
        ]),
    })
    .await;
    let service = child(&children, "Service", "mynameis");
    assert_eq!(service["spec"]["selector"], json!({"k8s-app": "kube-dns"}));
    let deployment = child(&children, "Deployment", "mynameis");
    assert_eq!(deployment["spec"]["replicas"], 2);
}

#[tokio::test]
async fn dogs_vs_cats_apps_make_their_deployments_services_and_ingresses() {
    for (dir, suffix, with_service) in [
        ("dogsvscats/vote-app", "vote-app-demo-vote", true),
        ("dogsvscats/result-app", "result-app-demo-result", true),
        ("dogsvscats/worker-app", "worker-app-demo-worker", false),
    ] {
        let mut children = named(&[("Deployment", suffix)]);
        if with_service {
            children.push(("Service", format!("{suffix}-service")));
            children.push(("Ingress", format!("{suffix}-ingress")));
        }
        run_both(&Example {
            dir,
            rgds: &["rg.yaml"],
            instance: "instance.yaml",
            children,
        })
        .await;
    }
}

#[tokio::test]
async fn multi_tenant_saas_nests_its_rgds() {
    let (_, children) = run_both(&Example {
        dir: "saas-multi-tenant",
        rgds: &[
            "tenant-environment-rgd.yaml",
            "tenant-application-rgd.yaml",
            "tenant-rgd.yaml",
        ],
        instance: "tenant-instance.yaml",
        children: named(&[
            ("TenantEnvironment", "tenant001"),
            ("TenantApplication", "tenant001"),
            ("Namespace", "tenant001"),
            ("ResourceQuota", "tenant001-quota"),
            ("NetworkPolicy", "tenant001-isolation"),
            ("Deployment", "tenant001-deployment"),
            ("Service", "tenant001-service"),
        ]),
    })
    .await;
    let deployment = child(&children, "Deployment", "tenant001-deployment");
    assert_eq!(deployment["namespace"], "tenant001");
}

/// The YAML files under `dir`, recursively, sorted.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(yaml_files(&path));
        } else if path.extension().is_some_and(|e| e == "yaml") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// Every RGD of KRO's other examples (AWS, Azure, GCP, API gateway) loads, but those KRO
/// refuses too: a SimpleSchema default with unquoted spaces (KRO's marker parser reads the
/// words after the first as a marker with no value) and an `externalRef` whose `metadata`
/// is empty (its name is indented as a sibling). Each refusal names the file, the document
/// and the field.
#[test]
fn every_other_example_rgd_loads_or_is_refused_naming_the_field() {
    let providers = examples_dir().join("providers");
    let mut loaded = 0;
    let mut refused = Vec::new();
    for path in yaml_files(&providers) {
        let source = path.strip_prefix(&providers).unwrap().display().to_string();
        match parse_documents(&std::fs::read_to_string(&path).unwrap(), &source) {
            Ok(definitions) => loaded += definitions.len(),
            Err(errors) => refused.push((source, errors.to_string())),
        }
    }
    let marker = "roleDescription: \"string | default=IRSA role for ACK";
    for (source, message) in &refused {
        assert!(
            message.starts_with(&format!("{source} (document 1): spec.")),
            "{message}"
        );
        let known = (source.starts_with("aws/ack-controller/")
            && message.contains(marker)
            && message.contains("has no `=value`"))
            || (source == "gcp/gemma-on-tpu/rgd.yaml"
                && message.contains("spec.resources[0].externalRef.metadata: invalid type: null"));
        assert!(known, "{source}: {message}");
    }
    assert_eq!(refused.len(), 8, "{refused:#?}");
    assert_eq!(loaded, 32);
}
