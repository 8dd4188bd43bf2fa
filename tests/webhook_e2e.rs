//! Admission webhooks end to end: the embedded API server calls webhooks served by a
//! `WebhookServer` (over TLS, with the configuration's caBundle), as kubectl and the
//! widgets controller see it, and every way a call can fail.

/// The webhooks example's controller (each user of it uses a part).
#[path = "../examples/webhook/controller.rs"]
#[allow(dead_code)]
mod webhooks;

/// The widgets example's controller (each user of it uses a part).
#[path = "../examples/widgets/controller.rs"]
#[allow(dead_code)]
mod widgets;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::reconcilers::{Config, Context, Draft, SyncReconciler};
use dynrec::runtime::{Manager, ManagerOptions};
use dynrec::webhook::{
    AdmissionWebhookAdapter, CertSource, Operation, WebhookServer, WebhookServing,
    admission_request, admission_response,
};
use dynrec_test_support::process::{Run, run};
use dynrec_test_support::{configmaps_api, widgets_api};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(20);

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// An embedded server with the Widget CRD, and a config over it.
async fn cluster() -> (ApiServer, Config) {
    let server = ApiServer::new();
    widgets::install_crd(&server.client()).await.unwrap();
    let client = Client::new(server.client());
    let config = Config::new(client, "webhooks");
    (server, config)
}

fn config_map(name: &str, labels: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels}, "data": {"a": "b"}}))
    .unwrap()
}

/// Creates the ConfigMap `name` labelled `test=<test>` in the default namespace.
async fn create(server: &ApiServer, name: &str, test: &str) -> Result<DynamicObject, kube::Error> {
    let object = config_map(name, json!({"test": test}));
    configmaps_api(&server.client())
        .create(&PostParams::default(), &object)
        .await
}

/// The message of a refused write.
fn refusal(result: Result<DynamicObject, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("expected the server to refuse the write, got {other:?}"),
    }
}

/// An adapter whose reconciler labels the object `admitted=<label>` after `delay`, or
/// panics when `delay` is `None`.
fn labelling(
    config: &Config,
    label: &'static str,
    delay: Option<Duration>,
) -> AdmissionWebhookAdapter {
    let reconciler = SyncReconciler::new_async(move |_ctx, object: &mut Draft| {
        let labels = object.metadata.labels.get_or_insert_with(Default::default);
        labels.insert("admitted".into(), label.into());
        Box::pin(async move {
            match delay {
                Some(delay) => tokio::time::sleep(delay).await,
                None => panic!("boom"),
            }
            Ok(())
        })
    });
    AdmissionWebhookAdapter::new(reconciler, config.clone()).named(label)
}

/// A mutating configuration `name` sending ConfigMaps labelled `test=<name>` to `url`;
/// `extra` sets further fields of its webhook.
fn mutating_config(name: &str, url: &str, ca_pem: &str, extra: Value) -> DynamicObject {
    webhook_config("Mutating", name, url, ca_pem, extra)
}

/// A `kind` (Mutating or Validating) configuration, as [`mutating_config`].
fn webhook_config(kind: &str, name: &str, url: &str, ca_pem: &str, extra: Value) -> DynamicObject {
    let ca_bundle = base64_of(ca_pem);
    let mut hook = json!({"name": name, "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": [""],
            "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "objectSelector": {"matchLabels": {"test": name}},
        "sideEffects": "None", "admissionReviewVersions": ["v1"]});
    for (key, value) in extra.as_object().into_iter().flatten() {
        hook[key] = value.clone();
    }
    serde_json::from_value(json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": format!("{kind}WebhookConfiguration"), "metadata": {"name": name}, "webhooks": [hook]}))
    .unwrap()
}

async fn register(server: &ApiServer, configuration: &DynamicObject) {
    let kind = &configuration.types.as_ref().unwrap().kind;
    let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
    let plural = format!("{}s", kind.to_lowercase());
    let api: Api<DynamicObject> = Api::all_with(
        server.client(),
        &ApiResource::from_gvk_with_plural(&gvk, &plural),
    );
    api.create(&PostParams::default(), configuration)
        .await
        .unwrap();
}

async fn serve(server: WebhookServer) -> WebhookServing {
    server.bind(any_port()).await.unwrap()
}

/// A server with a self-signed certificate serving `adapter` at `path`.
async fn serve_one(path: &str, adapter: AdmissionWebhookAdapter) -> WebhookServing {
    let server = WebhookServer::new(CertSource::SelfSigned(Vec::new()));
    serve(server.webhook(path, adapter).unwrap()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_shows_the_webhook_default_and_its_denial() {
    let (server, config) = cluster().await;
    let serving = serve(webhooks::server(&config).unwrap()).await;
    webhooks::register(&config.client, &serving).await.unwrap();
    let http = server.serve(any_port()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        dynrec::apiserver::kubeconfig(&http.url(), None, None),
    )
    .unwrap();
    let widget = |name: &str, spec: &str| {
        let path = dir.path().join(format!("{name}.yaml"));
        let yaml = format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec: {spec}\n"
        );
        std::fs::write(&path, yaml).unwrap();
        path
    };
    let w1 = widget("w1", "{greeting: hi}");
    let big = widget("big", "{greeting: hi, size: 12}");
    let boo = widget("boo", "{greeting: boo, size: 2}");
    let kube = kubeconfig.clone();
    let (applied, got, refused) = tokio::task::spawn_blocking(move || {
        let applied = kubectl(&kube, &["apply", "-f", path_str(&w1)]);
        let got = kubectl(
            &kube,
            &["get", "widget", "w1", "-o", "jsonpath={.spec.size}"],
        );
        let refused = kubectl(&kube, &["apply", "-f", path_str(&boo)]);
        let warned = kubectl(&kube, &["apply", "-f", path_str(&big)]);
        assert!(
            warned.succeeded(),
            "kubectl apply of big failed: {}",
            warned.stderr
        );
        assert!(
            warned
                .stderr
                .contains("Warning: a widget of 12 parts is hard to build"),
            "kubectl shows the webhook's warning: {}",
            warned.stderr
        );
        (applied, got, refused)
    })
    .await
    .unwrap();
    assert!(
        applied.succeeded(),
        "kubectl apply of w1 failed: {}",
        applied.stderr
    );
    assert_eq!(
        got.stdout.trim(),
        "1",
        "the mutating webhook defaults spec.size: {}",
        got.stderr
    );
    assert!(
        !refused.succeeded(),
        "kubectl apply of the widget greeting boo succeeded: {}",
        refused.stdout
    );
    assert!(
        refused.stderr.contains(
            "admission webhook \"greetings.widgets.example.com\" denied the request: greeting \"boo\" is forbidden"
        ),
        "kubectl shows the denial: {}",
        refused.stderr
    );
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Runs kubectl to completion (within 30 s).
fn kubectl(kubeconfig: &Path, args: &[&str]) -> Run {
    run(
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--request-timeout=10s")
            .args(args),
        Duration::from_secs(30),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_widgets_controller_converges_on_a_child_the_webhook_mutates() {
    let (server, config) = cluster().await;
    let mut manager = Manager::new(config.client.clone(), ManagerOptions::default());
    let metrics = manager.metrics();
    let webhook_server = webhooks::server(&config).unwrap();
    let serving = manager.serve_webhooks(webhook_server, any_port()).await;
    webhooks::register(&config.client, serving.unwrap())
        .await
        .unwrap();
    widgets::register(&mut manager, &config).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(manager.run(async move {
        let _ = stopped.await;
    }));
    let widgets_api = widgets_api(&server.client());
    let w1: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1",
        "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"greeting": "hi"}}))
    .unwrap();
    widgets_api
        .create(&PostParams::default(), &w1)
        .await
        .unwrap();
    let labelled = || async {
        let child = configmaps_api(&server.client())
            .get_opt("w1-config")
            .await
            .ok()
            .flatten();
        child.is_some_and(|c| {
            c.metadata
                .labels
                .unwrap_or_default()
                .contains_key(webhooks::ADMITTED_LABEL)
        })
    };
    wait_for(labelled, "the ConfigMap w1-config with the webhook's label").await;
    // Each change of the widget reconciles it again; none may write the ConfigMap again.
    for round in 0..3 {
        let patch = json!({"metadata": {"annotations": {"round": round.to_string()}}});
        widgets_api
            .patch(
                "w1",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(patch),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let updates = server.request_count("update", "", "configmaps");
    let creates = server.request_count("create", "", "configmaps");
    assert_eq!(
        updates, 1,
        "one update, whose result (the label back) the mutation cache replays on every later \
         reconcile ({creates} create(s))"
    );
    assert!(
        labelled().await,
        "the webhook's label stays on the ConfigMap"
    );
    let widget = widgets_api.get("w1").await.unwrap();
    assert_eq!(
        widget.data["spec"]["size"], 1,
        "the webhook defaulted spec.size"
    );
    let rendered = metrics.render().unwrap();
    assert!(
        rendered.contains(
            "dynrec_admission_requests_total{allowed=\"true\",webhook=\"widget-defaults\"}"
        ),
        "admission requests are counted by webhook:\n{rendered}"
    );
    let _ = stop.send(());
    let stopped = tokio::time::timeout(DEADLINE, running).await;
    assert!(
        matches!(stopped, Ok(Ok(Ok(())))),
        "the manager stops cleanly"
    );
}

async fn wait_for<F, Fut>(check: F, what: &str)
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_times_out_fails_the_write_under_fail_and_is_skipped_under_ignore() {
    let (server, config) = cluster().await;
    let slow = labelling(&config, "slow", Some(Duration::from_secs(3)));
    let serving = serve_one("/slow", slow).await;
    let (url, ca) = (serving.url("/slow"), serving.ca_pem().unwrap().to_string());
    let timeout = json!({"timeoutSeconds": 1});
    register(
        &server,
        &mutating_config("slow-fail", &url, &ca, timeout.clone()),
    )
    .await;
    let mut ignore = timeout;
    ignore["failurePolicy"] = json!("Ignore");
    register(&server, &mutating_config("slow-ignore", &url, &ca, ignore)).await;
    let started = std::time::Instant::now();
    let message = refusal(create(&server, "a", "slow-fail").await);
    assert_eq!(
        message,
        format!(
            "Internal error occurred: failed calling webhook \"slow-fail\": failed to call webhook: Post \"{url}?timeout=1s\": context deadline exceeded"
        )
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the call is cut at timeoutSeconds"
    );
    let created = create(&server, "b", "slow-ignore")
        .await
        .expect("failurePolicy Ignore lets the write through");
    let labels = created.metadata.labels.unwrap_or_default();
    assert!(
        !labels.contains_key("admitted"),
        "the slow webhook's change is not applied: {labels:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_whose_certificate_the_ca_bundle_does_not_sign_fails_the_write() {
    let (server, config) = cluster().await;
    let serving = serve_one("/label", labelling(&config, "label", Some(Duration::ZERO))).await;
    let other = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let url = serving.url("/label");
    register(
        &server,
        &mutating_config("untrusted", &url, &other.cert.pem(), json!({})),
    )
    .await;
    let message = refusal(create(&server, "a", "untrusted").await);
    assert_eq!(
        message,
        format!(
            "Internal error occurred: failed calling webhook \"untrusted\": failed to call webhook: Post \"{url}?timeout=10s\": tls: failed to verify certificate: invalid peer certificate: BadSignature"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_the_webhooks_reconciler_denies_the_write_with_the_panic() {
    let (server, config) = cluster().await;
    let serving = serve_one("/panic", labelling(&config, "panic", None)).await;
    let ca = serving.ca_pem().unwrap().to_string();
    register(
        &server,
        &mutating_config("panics", &serving.url("/panic"), &ca, json!({})),
    )
    .await;
    let message = refusal(create(&server, "a", "panics").await);
    assert_eq!(
        message,
        "admission webhook \"panics\" denied the request: panic: boom [recovered]"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_files_is_served_again_after_the_files_change() {
    let (server, config) = cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let write_pair = || {
        let pair = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        std::fs::write(&cert, pair.cert.pem()).unwrap();
        std::fs::write(&key, pair.signing_key.serialize_pem()).unwrap();
        pair.cert.pem()
    };
    let first = write_pair();
    let files = CertSource::Files {
        cert: cert.clone(),
        key: key.clone(),
    };
    let serving = serve(
        WebhookServer::new(files)
            .webhook("/label", labelling(&config, "label", Some(Duration::ZERO)))
            .unwrap(),
    )
    .await;
    assert_eq!(
        serving.ca_pem(),
        None,
        "a certificate from files has its own CA"
    );
    let url = serving.url("/label");
    register(&server, &mutating_config("first", &url, &first, json!({}))).await;
    let created = create(&server, "a", "first").await.unwrap();
    assert_eq!(
        created.metadata.labels.unwrap_or_default()["admitted"],
        "label"
    );
    // Make sure the rotated files get a later modification time.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = write_pair();
    register(
        &server,
        &mutating_config("second", &url, &second, json!({})),
    )
    .await;
    let created = create(&server, "b", "second")
        .await
        .expect("the webhook serves the rotated certificate");
    assert_eq!(
        created.metadata.labels.unwrap_or_default()["admitted"],
        "label"
    );
    let message = refusal(create(&server, "c", "first").await);
    assert!(
        message.contains("tls: failed to verify certificate"),
        "the old certificate is gone: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_server_answers_healthz_and_refuses_a_body_that_is_no_review() {
    let (_server, config) = cluster().await;
    let serving = serve(webhooks::server(&config).unwrap()).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, serving.ca_pem().unwrap()).unwrap();
    let curl = |url: String, body: Option<&'static str>| {
        let ca = ca.clone();
        tokio::task::spawn_blocking(move || {
            let mut command = Command::new("curl");
            command.args([
                "-sS",
                "-w",
                " %{http_code}",
                "--cacert",
                path_str(&ca),
                &url,
            ]);
            if let Some(body) = body {
                command.args(["-H", "content-type: application/json", "--data", body]);
            }
            let output = command.output().unwrap();
            String::from_utf8_lossy(&output.stdout).into_owned()
        })
    };
    let health = curl(serving.url("/healthz"), None).await.unwrap();
    assert_eq!(health, "ok 200");
    let refused = curl(serving.url(webhooks::MUTATE_PATH), Some("{"))
        .await
        .unwrap();
    assert_eq!(
        refused,
        "the body is not an AdmissionReview: EOF while parsing an object at line 1 column 1\n 400"
    );
}

/// An adapter whose reconciler runs `step` on the object.
fn adapter(config: &Config, step: fn(&Context, &mut Draft)) -> AdmissionWebhookAdapter {
    let reconciler = SyncReconciler::new(move |ctx, object: &mut Draft| {
        step(ctx, object);
        Ok(())
    });
    AdmissionWebhookAdapter::new(reconciler, config.clone())
}

fn label(object: &mut DynamicObject, key: &str, value: &str) {
    let labels = object.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(key.into(), value.into());
}

fn labels_of(object: &DynamicObject) -> std::collections::BTreeMap<String, String> {
    object.metadata.labels.clone().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_validating_webhook_can_refuse_a_delete_and_sees_the_old_object() {
    let (server, config) = cluster().await;
    let refuse = |ctx: &Context, object: &mut Draft| {
        let request = admission_request(ctx).unwrap();
        let old_name = request
            .old_object
            .and_then(|o| o.metadata.name)
            .unwrap_or_default();
        let message = format!("{old_name} is protected from {:?}", request.operation);
        if request.operation == Operation::Delete && labels_of(object)["test"] == "protected" {
            admission_response(ctx).unwrap().deny(403, message);
        }
    };
    let serving = serve_one("/protect", adapter(&config, refuse)).await;
    let ca = serving.ca_pem().unwrap().to_string();
    let url = serving.url("/protect");
    register(
        &server,
        &webhook_config("Validating", "protected", &url, &ca, json!({})),
    )
    .await;
    let api = configmaps_api(&server.client());
    api.create(
        &PostParams::default(),
        &config_map("a", json!({"test": "protected"})),
    )
    .await
    .expect("creates are allowed");
    let message = match api.delete("a", &Default::default()).await {
        Err(kube::Error::Api(status)) => (status.code, status.message),
        other => panic!("expected the delete to be refused, got {other:?}"),
    };
    assert_eq!(
        message,
        (
            403,
            "admission webhook \"protected\" denied the request: a is protected from Delete"
                .to_string()
        )
    );
    assert!(
        api.get_opt("a").await.unwrap().is_some(),
        "the ConfigMap is still there"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_rules_and_reinvocation_decide_which_webhooks_run() {
    let (server, config) = cluster().await;
    let seen_b = |_: &Context, object: &mut Draft| {
        let seen = labels_of(object).contains_key("b");
        label(object, "seen-b", &seen.to_string());
    };
    let add_b = |_: &Context, object: &mut Draft| label(object, "b", "added");
    let admit = |_: &Context, object: &mut Draft| label(object, "admitted", "yes");
    let serving = serve(
        WebhookServer::new(CertSource::SelfSigned(vec!["hooks.default.svc".into()]))
            .webhook("/seen-b", adapter(&config, seen_b))
            .unwrap()
            .webhook("/add-b", adapter(&config, add_b))
            .unwrap()
            .webhook("/admit", adapter(&config, admit))
            .unwrap(),
    )
    .await;
    let ca = serving.ca_pem().unwrap().to_string();
    let reinvoke = json!({"objectSelector": {"matchLabels": {"test": "reinvoke"}}});
    let mut first = reinvoke.clone();
    first["reinvocationPolicy"] = json!("IfNeeded");
    register(
        &server,
        &mutating_config("reinvoke-1", &serving.url("/seen-b"), &ca, first),
    )
    .await;
    register(
        &server,
        &mutating_config("reinvoke-2", &serving.url("/add-b"), &ca, reinvoke),
    )
    .await;
    // A `service` is reached on loopback, its certificate naming NAME.NAMESPACE.svc.
    let service = json!({"clientConfig": {"caBundle": base64_of(&ca), "service": {
        "namespace": "default", "name": "hooks", "path": "/admit",
        "port": serving.local_addr().port()}},
        "namespaceSelector": {"matchLabels": {"team": "a"}}});
    register(&server, &mutating_config("team-a", "", &ca, service)).await;
    let mut dry_run = json!({"sideEffects": "Unknown"});
    dry_run["objectSelector"] = json!({"matchLabels": {"test": "side-effects"}});
    register(
        &server,
        &mutating_config("side-effects", &serving.url("/admit"), &ca, dry_run),
    )
    .await;

    let create_in = |namespace: &str, name: &str, test: &str| {
        let api: Api<DynamicObject> = Api::namespaced_with(
            server.client(),
            namespace,
            &ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("", "v1", "ConfigMap"),
                "configmaps",
            ),
        );
        let object = config_map(name, json!({"test": test}));
        async move { api.create(&PostParams::default(), &object).await }
    };
    let reinvoked = create_in("default", "r", "reinvoke").await.unwrap();
    assert_eq!(
        (
            labels_of(&reinvoked)["b"].as_str(),
            labels_of(&reinvoked)["seen-b"].as_str()
        ),
        ("added", "true"),
        "the IfNeeded webhook ran again after a later one changed the object"
    );
    let namespaces: Api<DynamicObject> = Api::all_with(
        server.client(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "Namespace"),
            "namespaces",
        ),
    );
    let team_a = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"team": "a"}}}))
    .unwrap();
    namespaces
        .create(&PostParams::default(), &team_a)
        .await
        .unwrap();
    let in_team = create_in("team-a", "t", "team-a").await.unwrap();
    let elsewhere = create_in("default", "t", "team-a").await.unwrap();
    assert_eq!(
        labels_of(&in_team).get("admitted").map(String::as_str),
        Some("yes")
    );
    assert_eq!(
        labels_of(&elsewhere).get("admitted"),
        None,
        "namespaceSelector leaves default out"
    );
    let api = configmaps_api(&server.client());
    let params = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let message = refusal(
        api.create(&params, &config_map("d", json!({"test": "side-effects"})))
            .await,
    );
    assert_eq!(
        message,
        "admission webhook \"side-effects\" does not support dry run"
    );
}

fn base64_of(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_and_an_update_are_mutated_as_a_create_is() {
    let (server, config) = cluster().await;
    let stamp = |ctx: &Context, object: &mut Draft| {
        let operation = admission_request(ctx).map(|r| format!("{:?}", r.operation));
        label(
            object,
            "last",
            &operation.unwrap_or_default().to_lowercase(),
        );
    };
    let serving = serve_one("/stamp", adapter(&config, stamp)).await;
    let ca = serving.ca_pem().unwrap().to_string();
    let url = serving.url("/stamp");
    register(&server, &mutating_config("stamp", &url, &ca, json!({}))).await;
    let created = create(&server, "a", "stamp").await.unwrap();
    assert_eq!(labels_of(&created)["last"], "create");
    let api = configmaps_api(&server.client());
    let patch = json!({"data": {"a": "patched"}});
    let patched = api
        .patch("a", &Default::default(), &kube::api::Patch::Merge(patch))
        .await
        .unwrap();
    assert_eq!(
        (
            labels_of(&patched)["last"].as_str(),
            &patched.data["data"]["a"]
        ),
        ("update", &json!("patched")),
        "the patch is applied and the webhook's change with it"
    );
    let mut changed = patched.clone();
    changed.data["data"]["a"] = json!("replaced");
    changed.metadata.labels.as_mut().unwrap().remove("last");
    let replaced = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(labels_of(&replaced)["last"], "update");
    assert_eq!(replaced.data["data"]["a"], "replaced");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutating_webhooks_run_before_schema_validation_and_may_fix_the_object() {
    let (server, config) = cluster().await;
    let clamp = |_: &Context, widget: &mut Draft| {
        if widget.metadata.name.as_deref() == Some("fixed") {
            widget.data["spec"]["size"] = json!(0);
        }
    };
    let serving = serve_one("/clamp", adapter(&config, clamp)).await;
    let ca = serving.ca_pem().unwrap().to_string();
    let widgets_only = json!({"objectSelector": {},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"],
            "apiVersions": ["v1"], "resources": ["widgets"]}]});
    register(
        &server,
        &mutating_config("clamp", &serving.url("/clamp"), &ca, widgets_only),
    )
    .await;
    let api = widgets_api(&server.client());
    let widget = |name: &str| {
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": {"size": -1}}))
        .unwrap()
    };
    let fixed = api.create(&PostParams::default(), &widget("fixed")).await;
    assert_eq!(
        fixed.expect("the webhook made it valid").data["spec"]["size"],
        0
    );
    let message = refusal(api.create(&PostParams::default(), &widget("left")).await);
    assert!(
        message.contains(
            "spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0"
        ),
        "a change no webhook fixes is refused by the schema: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_configuration_without_a_usable_endpoint_fails_the_write_with_the_reason() {
    let (server, _config) = cluster().await;
    register(
        &server,
        &mutating_config("plain", "http://127.0.0.1:1/p", "", json!({})),
    )
    .await;
    let message = refusal(create(&server, "a", "plain").await);
    assert_eq!(
        message,
        "Internal error occurred: failed calling webhook \"plain\": failed to call webhook: invalid clientConfig.url \"http://127.0.0.1:1/p\": an https URL with a host is needed"
    );
}
