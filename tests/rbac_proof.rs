//! The proof that `dynrec rbac` prints exactly what the controllers need: the widgets and
//! podspecable controllers run as a ServiceAccount bound to the printed ClusterRole, on the
//! embedded server with RBAC on, and converge with no 403; without any one rule, the
//! Manager's preflight names what is missing and the controller waits.

/// The podspecable example's controller (each user of it uses a part).
#[path = "../examples/podspecable/controller.rs"]
#[allow(dead_code)]
mod podspecable;

/// The widgets example's controller (each user of it uses a part).
#[path = "../examples/widgets/controller.rs"]
#[allow(dead_code)]
mod widgets;

mod client_common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use client_common::eventually;

use dynrec::apiserver::{ApiServer, Authorization};
use dynrec::client::Client;
use dynrec::definitions::{Definitions, parse_documents};
use dynrec::reconcilers::Config;
use dynrec::runtime::{LeaderConfig, Manager, ManagerOptions, Readiness};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(20);
const NAMESPACE: &str = "dynrec-system";

/// The ClusterRole `dynrec rbac` prints for the two example controllers.
fn printed_role() -> Value {
    printed(&["--example", "widgets", "--example", "podspecable"])
}

/// The ClusterRole `dynrec rbac ARGS` prints.
fn printed(args: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .arg("rbac")
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_saphyr::from_str(&String::from_utf8(output.stdout).unwrap()).unwrap()
}

fn api(client: &kube::Client, gvk: (&str, &str), namespace: Option<&str>) -> Api<DynamicObject> {
    let (api_version, kind) = gvk;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// Creates `object` as the administrator.
async fn create(server: &ApiServer, object: Value) {
    let gvk = (
        object["apiVersion"].as_str().unwrap(),
        object["kind"].as_str().unwrap(),
    );
    let api = api(
        &server.client(),
        gvk,
        object["metadata"]["namespace"].as_str(),
    );
    api.create(
        &PostParams::default(),
        &serde_json::from_value(object.clone()).unwrap(),
    )
    .await
    .unwrap_or_else(|err| panic!("creating {object}: {err}"));
}

/// A server with RBAC on, the Widget CRD, and the ServiceAccount `dynrec` bound to `role`.
async fn cluster_with_role(role: Value) -> (ApiServer, kube::Client, Arc<AtomicUsize>) {
    let server = ApiServer::builder()
        .authorization(Authorization::Rbac)
        .build();
    widgets::install_crd(&server.client()).await.unwrap();
    bind_account(server, role).await
}

/// Binds the ServiceAccount `dynrec` to `role` on `server`; returns the server and a client
/// of the account that counts the 403s it gets.
async fn bind_account(
    server: ApiServer,
    role: Value,
) -> (ApiServer, kube::Client, Arc<AtomicUsize>) {
    for object in [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "dynrec", "namespace": NAMESPACE}}),
        role,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "dynrec"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "dynrec"},
            "subjects": [{"kind": "ServiceAccount", "name": "dynrec", "namespace": NAMESPACE}]}),
    ] {
        create(&server, object).await;
    }
    let accounts = api(&server.client(), ("v1", "ServiceAccount"), Some(NAMESPACE));
    let request: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest", "metadata": {"name": "dynrec"}, "spec": {"audiences": []}}))
        .unwrap();
    let issued: Value = accounts
        .create_subresource("token", "dynrec", &PostParams::default(), &request)
        .await
        .map(|o: DynamicObject| o.data)
        .unwrap();
    let token = issued["status"]["token"].as_str().unwrap().to_string();
    let forbidden = Arc::new(AtomicUsize::new(0));
    let counted = forbidden.clone();
    let service = tower::ServiceBuilder::new()
        .map_request(move |mut request: http::Request<kube::client::Body>| {
            let value = http::HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
            request
                .headers_mut()
                .insert(http::header::AUTHORIZATION, value);
            request
        })
        .map_response(move |response: http::Response<axum::body::Body>| {
            if response.status() == http::StatusCode::FORBIDDEN {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            response
        })
        .service(server.router());
    (server, kube::Client::new(service, "default"), forbidden)
}

/// A Manager (with leader election, as in a cluster) and a config acting as `account`.
fn manager_as(account: kube::Client) -> (Manager, Config) {
    let client = Client::new(account);
    let config = Config::new(client.clone(), "dynrec");
    let options = ManagerOptions {
        leader_election: Some(LeaderConfig::new(NAMESPACE, "dynrec-leader", "proof")),
        ..ManagerOptions::default()
    };
    (Manager::new(client, options), config)
}

/// Starts the widgets and podspecable controllers as the account, with leader election.
fn start_controllers(
    account: kube::Client,
) -> (
    Readiness,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let (mut manager, config) = manager_as(account);
    widgets::register(&mut manager, &config).unwrap();
    podspecable::register(&mut manager, &config);
    let readiness = manager.readiness();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(async move {
        let _ = manager
            .run(async move {
                let _ = stopped.await;
            })
            .await;
    });
    (readiness, stop, running)
}

/// Creates the Widget `w1` and waits until it is Ready and its ConfigMap holds "hi".
async fn widget_converges(server: &ApiServer) {
    create(
        server,
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "apps"}, "spec": {"greeting": "hi", "size": 2}}),
    )
    .await;
    let admin = server.client();
    let widgets = api(&admin, ("example.com/v1", "Widget"), Some("apps"));
    eventually(DEADLINE, "the widget is Ready", || async {
        widgets.get("w1").await.ok().filter(|w| {
            w.data["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        })
    })
    .await;
    let config_maps = api(&admin, ("v1", "ConfigMap"), Some("apps"));
    assert_eq!(
        config_maps.get("w1-config").await.unwrap().data["data"]["greeting"],
        "hi"
    );
}

/// Waits until every controller is ready, then checks that no request was refused.
async fn ready_without_403(readiness: &Readiness, forbidden: &AtomicUsize) {
    eventually(DEADLINE, "every controller is ready", || async {
        readiness.is_ready().then_some(())
    })
    .await;
    assert_eq!(
        forbidden.load(Ordering::SeqCst),
        0,
        "a controller got a 403"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_role_printed_for_a_definition_runs_it_with_no_403() {
    let definition =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/definitions/widgets.yaml");
    let role = printed(&["-f", definition.to_str().unwrap()]);
    let server = ApiServer::builder()
        .authorization(Authorization::Rbac)
        .build();
    let (server, account, forbidden) = bind_account(server, role).await;
    let (mut manager, config) = manager_as(account);
    let definitions = Definitions::new(&manager, &config);
    definitions.install_crd().await.unwrap();
    definitions.register(&mut manager).unwrap();
    let text = std::fs::read_to_string(&definition).unwrap();
    for loaded in parse_documents(&text, "widgets.yaml").unwrap() {
        definitions.start(&loaded).await.unwrap();
    }
    let readiness = manager.readiness();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(manager.run(async move {
        let _ = stopped.await;
    }));
    widget_converges(&server).await;
    ready_without_403(&readiness, &forbidden).await;
    let _ = stop.send(());
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printed_role_is_enough_the_controllers_converge_with_no_403() {
    let (server, account, forbidden) = cluster_with_role(printed_role()).await;
    let (readiness, stop, running) = start_controllers(account);
    let admin = server.client();
    create(&server, json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": podspecable::ENV_CONFIG_MAP, "namespace": "apps"}, "data": {"GREETING": "hi"}}))
    .await;
    create(&server, json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "apps"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}))
    .await;
    widget_converges(&server).await;
    let deployments = api(&admin, ("apps/v1", "Deployment"), Some("apps"));
    eventually(
        DEADLINE,
        "the env is injected into the Deployment",
        || async {
            deployments.get("web").await.ok().filter(|d| {
                d.data["spec"]["template"]["spec"]["containers"][0]["env"]
                    == json!([{"name": "GREETING", "value": "hi"}])
            })
        },
    )
    .await;
    ready_without_403(&readiness, &forbidden).await;
    let _ = stop.send(());
    running.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_any_one_rule_the_preflight_names_it_and_the_controller_waits() {
    let role = printed_role();
    let rules = role["rules"].as_array().unwrap().clone();
    assert!(rules.len() >= 8, "{role}");
    for (index, rule) in rules.iter().enumerate() {
        // Watching RBAC objects is optional: without it the preflight asks every 5 s.
        let optional = rule["apiGroups"] == json!(["rbac.authorization.k8s.io"])
            && rule["verbs"] == json!(["list", "watch"]);
        if optional {
            continue;
        }
        let mut reduced = role.clone();
        reduced["rules"].as_array_mut().unwrap().remove(index);
        let (_server, account, _) = cluster_with_role(reduced).await;
        let (readiness, stop, running) = start_controllers(account);
        let resource = rule["resources"][0].as_str().unwrap();
        let group = rule["apiGroups"][0].as_str().unwrap();
        let named = format!(" {resource} in API group {group:?} (needed by ");
        let deadline = Instant::now() + DEADLINE;
        loop {
            let waiting = readiness.not_ready().join("\n");
            if waiting.contains(&named) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "without the rule for {resource} the preflight did not name it; not ready: {waiting}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(!readiness.is_ready());
        let _ = stop.send(());
        running.await.unwrap();
    }
}
