//! Each definition acts with its own identity: two tenants on the embedded server with RBAC
//! on, each a definition and a ServiceAccount allowed only in its namespace, while dynrec
//! itself holds cluster-admin. A tenant's definition cannot reach past its account (its
//! preflight names what is missing, kube refuses the rest), `kubectl auth can-i --as`
//! agrees with the preflight, and granting a missing rule starts the definition without a
//! restart.

mod client_common;

use std::process::Command;
use std::time::Duration;

use client_common::eventually;
use dynrec::apiserver::{ApiServer, Authorization, Serving, TlsIdentity, kubeconfig};
use dynrec::client::{Client, Identity};
use dynrec::definitions::{
    Definitions, IMPERSONATION_PATH, impersonation_webhook, impersonation_webhook_configuration,
};
use dynrec::reconcilers::Config;
use dynrec::runtime::{FALLBACK_RECHECK, Manager, ManagerOptions, RbacChanges};
use dynrec::webhook::{CertSource, WebhookServer};
use dynrec_test_support::process::{kubectl_on_path, run};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

/// Long enough for a permissions recheck (every 5 s) and a controller restart.
const DEADLINE: Duration = Duration::from_secs(30);
const SA_A: &str = "system:serviceaccount:tenant-a:reconciler";

fn api(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Server-side applies `object` as `client`.
async fn apply(client: &kube::Client, object: Value) {
    let api = api(
        client,
        object["apiVersion"].as_str().unwrap(),
        object["kind"].as_str().unwrap(),
        object["metadata"]["namespace"].as_str(),
    );
    let name = object["metadata"]["name"].as_str().unwrap().to_owned();
    api.patch(
        &name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(&object),
    )
    .await
    .unwrap_or_else(|err| panic!("applying {object}: {err}"));
}

/// A namespaced kind of tenant `t` (`Alpha` for tenant-a, `Beta` for tenant-b).
fn crd(kind: &str) -> Value {
    let plural = format!("{}s", kind.to_lowercase());
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.tenants.example.com")},
        "spec": {"group": "tenants.example.com", "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

/// The tenant's namespace, ServiceAccount, and a Role (bound to it) over its kind,
/// ConfigMaps and Events in its namespace only.
fn tenant(namespace: &str, plural: &str, extra_resources: &[&str]) -> Vec<Value> {
    let mut core = vec!["configmaps"];
    core.extend(extra_resources);
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reconciler", "namespace": namespace}}),
        role(namespace, plural, &core),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "reconciler", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reconciler"},
            "subjects": [{"kind": "ServiceAccount", "name": "reconciler", "namespace": namespace}]}),
    ]
}

fn role(namespace: &str, plural: &str, core: &[&str]) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
    "metadata": {"name": "reconciler", "namespace": namespace},
    "rules": [
        {"apiGroups": ["tenants.example.com"], "resources": [plural, format!("{plural}/status"), format!("{plural}/finalizers")], "verbs": ["*"]},
        {"apiGroups": [""], "resources": core, "verbs": ["*"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    ]})
}

/// A definition of tenant `namespace` reconciling `kind`, acting as its ServiceAccount.
fn definition(name: &str, kind: &str, namespace: &str, children: Vec<Value>) -> Value {
    let steps: Vec<Value> = children
        .into_iter()
        .enumerate()
        .map(|(i, template)| json!({"child": {"id": format!("child{i}"), "template": template}}))
        .collect();
    json!({"apiVersion": "dynrec.dev/v1alpha1", "kind": "ReconcilerDefinition",
        "metadata": {"name": name},
        "spec": {"for": {"apiVersion": "tenants.example.com/v1", "kind": kind},
            "serviceAccount": {"name": "reconciler", "namespace": namespace},
            "ownsStatus": true,
            "steps": steps}})
}

fn note(suffix: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("${{self.metadata.name}}-{suffix}")},
        "data": {"owner": "${self.metadata.name}"}})
}

/// The condition `type` of `object`, when it has one.
fn condition(object: &DynamicObject, type_: &str) -> Option<Value> {
    let conditions = object.data["status"]["conditions"].as_array()?;
    conditions.iter().find(|c| c["type"] == type_).cloned()
}

/// The embedded server (RBAC on, served for kubectl) and dynrec running as cluster-admin.
struct Cluster {
    server: ApiServer,
    serving: Serving,
    admin: kube::Client,
    definitions: Api<DynamicObject>,
    dir: tempfile::TempDir,
    rbac: RbacChanges,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Cluster {
    async fn start() -> Self {
        Self::start_with(false).await
    }

    /// With `webhook`, dynrec serves and registers the impersonation webhook, and the
    /// users `alice` and `bob` (tokens `alice-token`, `bob-token`) exist.
    async fn start_with(webhook: bool) -> Self {
        let server = ApiServer::builder()
            .authorization(Authorization::Rbac)
            .token_file("alice-token,alice,u1\nbob-token,bob,u2\n")
            .unwrap()
            .build();
        // kubectl sends a token only over HTTPS.
        let tls = TlsIdentity::self_signed(&["127.0.0.1".to_owned()]).unwrap();
        let address = "127.0.0.1:0".parse().unwrap();
        let serving = server.serve_tls(address, &tls).await.unwrap();
        let admin = server.client();
        let dir = tempfile::tempdir().unwrap();
        let config = kubeconfig(
            &serving.url(),
            server.admin_token(),
            Some(tls.certificate_pem()),
        );
        std::fs::write(dir.path().join("kubeconfig"), config).unwrap();
        let client = Client::new(admin.clone());
        let config = Config::new(client.clone(), "dynrec");
        let mut manager = Manager::new(client, ManagerOptions::default());
        let definitions = Definitions::new(&manager, &config);
        definitions.install_crd().await.unwrap();
        definitions.register(&mut manager).unwrap();
        if webhook {
            let hooks = WebhookServer::new(CertSource::SelfSigned(Vec::new()))
                .webhook(IMPERSONATION_PATH, impersonation_webhook(&config))
                .unwrap();
            let serving = manager
                .serve_webhooks(hooks, "127.0.0.1:0".parse().unwrap())
                .await
                .unwrap();
            let url = serving.url(IMPERSONATION_PATH);
            apply(
                &admin,
                impersonation_webhook_configuration(&url, serving.ca_pem()),
            )
            .await;
        }
        let rbac = manager.rbac_changes();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(manager.run(async move {
            let _ = stopped.await;
        }));
        Self {
            definitions: api(&admin, "dynrec.dev/v1alpha1", "ReconcilerDefinition", None),
            server,
            serving,
            admin,
            dir,
            rbac,
            stop: Some(stop),
        }
    }

    /// Waits for the definition's `PermissionsReady` to have `status` and a message
    /// containing `naming`; returns the message.
    async fn permissions(&self, name: &str, status: &str, naming: &str) -> String {
        let what = format!("{name}: PermissionsReady={status} naming {naming:?}");
        eventually(DEADLINE, &what, || async {
            let definition = self.definitions.get(name).await.ok()?;
            let ready = condition(&definition, "PermissionsReady")?;
            let message = ready["message"].as_str()?;
            (ready["status"] == status && message.contains(naming)).then(|| message.to_owned())
        })
        .await
    }

    /// `kubectl auth can-i ARGS --as=SA_A`'s answer; `None` when kubectl is missing.
    fn can_i(&self, args: &[&str]) -> Option<String> {
        let kubectl = kubectl_on_path()?;
        let output = run(
            Command::new(kubectl)
                .env_remove("KUBECONFIG")
                .arg("--kubeconfig")
                .arg(self.dir.path().join("kubeconfig"))
                .args(["auth", "can-i"])
                .args(args)
                .arg(format!("--as={SA_A}")),
            Duration::from_secs(30),
        );
        let answer = output.stdout.trim().to_owned();
        assert!(answer == "yes" || answer == "no", "{}", output.describe());
        Some(answer)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&self.server, &self.serving);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenant_definition_acts_only_as_its_service_account() {
    let cluster = Cluster::start().await;
    let admin = &cluster.admin;
    for object in [crd("Alpha"), crd("Beta")] {
        apply(admin, object).await;
    }
    for object in
        tenant("tenant-a", "alphas", &[])
            .into_iter()
            .chain(tenant("tenant-b", "betas", &[]))
    {
        apply(admin, object).await;
    }
    apply(
        admin,
        definition("alpha", "Alpha", "tenant-a", vec![note("note")]),
    )
    .await;
    apply(
        admin,
        definition("beta", "Beta", "tenant-b", vec![note("note")]),
    )
    .await;
    apply(
        admin,
        json!({"apiVersion": "tenants.example.com/v1", "kind": "Alpha",
        "metadata": {"name": "a1", "namespace": "tenant-a"}}),
    )
    .await;
    apply(
        admin,
        json!({"apiVersion": "tenants.example.com/v1", "kind": "Beta",
        "metadata": {"name": "b1", "namespace": "tenant-b"}}),
    )
    .await;

    // Both tenants converge, acting as their accounts.
    cluster.permissions("alpha", "True", SA_A).await;
    let config_maps_a = api(admin, "v1", "ConfigMap", Some("tenant-a"));
    let config_maps_b = api(admin, "v1", "ConfigMap", Some("tenant-b"));
    eventually(DEADLINE, "each tenant's note", || async {
        config_maps_a.get("a1-note").await.ok()?;
        config_maps_b.get("b1-note").await.ok()
    })
    .await;
    let alpha = cluster.definitions.get("alpha").await.unwrap();
    assert_eq!(alpha.data["status"]["serviceAccount"], SA_A);

    // A ClusterRoleBinding to cluster-admin: the preflight names both missing rules, kubectl
    // agrees, and the controller does not start (no binding appears).
    let escalate = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "${self.metadata.name}-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "reconciler", "namespace": "tenant-a"}]});
    apply(
        admin,
        definition("alpha", "Alpha", "tenant-a", vec![note("note"), escalate]),
    )
    .await;
    let message = cluster
        .permissions("alpha", "False", "clusterrolebindings")
        .await;
    for rule in [
        "cannot create, delete, get, list, patch, update, watch clusterrolebindings in API group \"rbac.authorization.k8s.io\"",
        "cannot bind clusterroles \"cluster-admin\" in API group \"rbac.authorization.k8s.io\"",
    ] {
        assert!(message.contains(rule), "{rule:?} not in {message}");
    }
    assert!(message.contains(SA_A), "{message}");
    if let Some(answer) = cluster.can_i(&["create", "clusterrolebindings"]) {
        assert_eq!(answer, "no");
        assert_eq!(
            cluster
                .can_i(&["bind", "clusterroles/cluster-admin"])
                .unwrap(),
            "no"
        );
        assert_eq!(
            cluster
                .can_i(&["create", "configmaps", "-n", "tenant-a"])
                .unwrap(),
            "yes"
        );
    }
    let bindings = api(
        admin,
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        None,
    );
    assert!(
        bindings.get("a1-admin").await.is_err(),
        "the binding was created"
    );

    // A child in the other tenant's namespace: the preflight names the writes refused
    // there, kubectl agrees, and kube refuses the account such a write while dynrec, whose
    // client it is made through, could.
    let mut foreign = note("foreign");
    foreign["metadata"]["namespace"] = json!("tenant-b");
    apply(
        admin,
        definition("alpha", "Alpha", "tenant-a", vec![foreign]),
    )
    .await;
    let refused = cluster.permissions("alpha", "False", "tenant-b").await;
    assert!(
        refused
            .contains("cannot create, delete, patch, update configmaps in API group \"\" in the namespace \"tenant-b\""),
        "{refused}"
    );
    if let Some(answer) = cluster.can_i(&["create", "configmaps", "-n", "tenant-b"]) {
        assert_eq!(answer, "no");
    }
    let dynrec = Client::new(admin.clone());
    let tenant_a = dynrec.acting_as(Identity::service_account("tenant-a", "reconciler"));
    let mut config_map = note("direct");
    config_map["metadata"] = json!({"name": "direct", "namespace": "tenant-b"});
    let config_map: DynamicObject = serde_json::from_value(config_map).unwrap();
    let error = tenant_a.create(&config_map).await.unwrap_err().to_string();
    assert!(
        error.contains(&format!("User \"{SA_A}\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"tenant-b\"")),
        "{error}"
    );
    dynrec.create(&config_map).await.unwrap();

    // A Secret child its Role does not grant: it waits, named; granting the rule starts it.
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "${self.metadata.name}-secret"}, "stringData": {"k": "v"}});
    apply(
        admin,
        definition("alpha", "Alpha", "tenant-a", vec![note("note"), secret]),
    )
    .await;
    cluster
        .permissions(
            "alpha",
            "False",
            "cannot create, delete, get, list, patch, update, watch secrets in API group \"\" in the namespace \"tenant-a\"",
        )
        .await;
    if let Some(answer) = cluster.can_i(&["create", "secrets", "-n", "tenant-a"]) {
        assert_eq!(answer, "no");
    }
    apply(
        admin,
        role("tenant-a", "alphas", &["configmaps", "secrets"]),
    )
    .await;
    cluster.permissions("alpha", "True", SA_A).await;
    let secrets = api(admin, "v1", "Secret", Some("tenant-a"));
    eventually(DEADLINE, "the secret once granted", || async {
        secrets.get("a1-secret").await.ok()
    })
    .await;
    if let Some(answer) = cluster.can_i(&["create", "secrets", "-n", "tenant-a"]) {
        assert_eq!(answer, "yes");
    }
}

/// Well under the fallback poll of a missing permission (every minute while RBAC is
/// watched): only the watch of RBAC objects can start a definition this soon after a grant.
const PROMPTLY: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_account_is_named_and_a_grant_starts_the_definition_when_rbac_changes() {
    let cluster = Cluster::start().await;
    let admin = &cluster.admin;
    apply(admin, crd("Alpha")).await;
    // The tenant's namespace and Role are there, its ServiceAccount not yet.
    for object in tenant("tenant-a", "alphas", &[]) {
        if object["kind"] != "ServiceAccount" {
            apply(admin, object).await;
        }
    }
    apply(
        admin,
        definition("alpha", "Alpha", "tenant-a", vec![note("note")]),
    )
    .await;
    apply(
        admin,
        json!({"apiVersion": "tenants.example.com/v1", "kind": "Alpha",
        "metadata": {"name": "a1", "namespace": "tenant-a"}}),
    )
    .await;
    let message = cluster
        .permissions("alpha", "False", "tenant-a/reconciler")
        .await;
    assert_eq!(
        message,
        "the ServiceAccount tenant-a/reconciler does not exist; the controller starts once it is created"
    );
    let alpha = cluster.definitions.get("alpha").await.unwrap();
    let ready = condition(&alpha, "PermissionsReady").unwrap();
    assert_eq!(ready["reason"], "ServiceAccountNotFound");
    let config_maps = api(admin, "v1", "ConfigMap", Some("tenant-a"));
    assert!(config_maps.get("a1-note").await.is_err(), "it ran");

    // Created, the account's Role applies: the definition starts.
    apply(
        admin,
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "reconciler", "namespace": "tenant-a"}}),
    )
    .await;
    cluster.permissions("alpha", "True", SA_A).await;
    eventually(DEADLINE, "the note once the account exists", || async {
        config_maps.get("a1-note").await.ok()
    })
    .await;

    // A Secret child its Role does not grant: granted, the definition starts at the change
    // of the Role, long before the fallback poll.
    eventually(DEADLINE, "RBAC objects watched", || async {
        cluster.rbac.watched().then_some(())
    })
    .await;
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "${self.metadata.name}-secret"}, "stringData": {"k": "v"}});
    apply(
        admin,
        definition("alpha", "Alpha", "tenant-a", vec![note("note"), secret]),
    )
    .await;
    cluster.permissions("alpha", "False", "secrets").await;
    assert!(PROMPTLY < FALLBACK_RECHECK / 2);
    apply(
        admin,
        role("tenant-a", "alphas", &["configmaps", "secrets"]),
    )
    .await;
    let secrets = api(admin, "v1", "Secret", Some("tenant-a"));
    eventually(PROMPTLY, "the secret soon after the grant", || async {
        secrets.get("a1-secret").await.ok()
    })
    .await;
    cluster.permissions("alpha", "True", SA_A).await;
}

/// The documents `dynrec rbac ARGS` prints.
fn printed(args: &[&str]) -> Vec<Value> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dynrec"));
    command.arg("rbac").args(args);
    let printed = run(&mut command, Duration::from_secs(60)).expect_ok("dynrec rbac");
    printed
        .stdout
        .split("\n---\n")
        .map(|document| serde_saphyr::from_str(document).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roles_printed_per_definition_are_all_each_account_needs() {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/multi-tenancy");
    let printed = printed(&["-f", examples, "--per-definition"]);
    let dynrec_role = &printed[0];
    let impersonate = dynrec_role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|rule| rule["verbs"] == json!(["get", "impersonate"]))
        .expect("dynrec may impersonate the accounts (and see that they exist)");
    assert_eq!(impersonate["resourceNames"], json!(["reconciler"]));

    let cluster = Cluster::start().await;
    let admin = &cluster.admin;
    for team in ["team-a", "team-b"] {
        apply(
            admin,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}}),
        )
        .await;
        apply(
            admin,
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "reconciler", "namespace": team}}),
        )
        .await;
    }
    // Everything printed but dynrec's own role (dynrec runs as the administrator here).
    for object in &printed[1..] {
        apply(admin, object.clone()).await;
    }
    for team in ["team-a", "team-b"] {
        let file = format!("{examples}/{team}.yaml");
        let text = std::fs::read_to_string(file).unwrap();
        apply(admin, serde_saphyr::from_str(&text).unwrap()).await;
    }
    for team in ["team-a", "team-b"] {
        let account = format!("system:serviceaccount:{team}:reconciler");
        cluster
            .permissions(&format!("{team}-sites"), "True", &account)
            .await;
    }
    let sites = api(admin, "team-a.example.com/v1", "Site", Some("team-a"));
    eventually(DEADLINE, "the Site CRD applied as the account", || async {
        sites.list(&Default::default()).await.ok()
    })
    .await;
    apply(
        admin,
        json!({"apiVersion": "team-a.example.com/v1", "kind": "Site",
        "metadata": {"name": "home", "namespace": "team-a"}, "spec": {"greeting": "hi"}}),
    )
    .await;
    let bindings = api(
        admin,
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        Some("team-a"),
    );
    let pages = api(admin, "v1", "ConfigMap", Some("team-a"));
    eventually(DEADLINE, "the site's page and viewers binding", || async {
        let page = pages.get("home-page").await.ok()?;
        bindings.get("home-viewers").await.ok()?;
        (page.data["data"]["index.html"] == "<h1>hi</h1>").then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_user_who_may_impersonate_an_account_may_name_it_in_a_definition() {
    let cluster = Cluster::start_with(true).await;
    let admin = &cluster.admin;
    apply(admin, crd("Alpha")).await;
    for object in tenant("tenant-a", "alphas", &[]) {
        apply(admin, object).await;
    }
    // Both may write definitions; only bob may act as tenant A's account.
    apply(admin, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "definition-author"},
        "rules": [{"apiGroups": ["dynrec.dev"], "resources": ["reconcilerdefinitions"], "verbs": ["*"]}]})).await;
    apply(admin, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "definition-authors"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "definition-author"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"}]})).await;
    apply(admin, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "act-as-reconciler", "namespace": "tenant-a"},
        "rules": [{"apiGroups": [""], "resources": ["serviceaccounts"], "resourceNames": ["reconciler"], "verbs": ["impersonate"]}]})).await;
    apply(admin, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "bob-acts-as-reconciler", "namespace": "tenant-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "act-as-reconciler"},
        "subjects": [{"kind": "User", "name": "bob"}]})).await;
    let alice = cluster.server.client_with_token(Some("alice-token"));
    let bob = cluster.server.client_with_token(Some("bob-token"));
    let alpha = definition("alpha", "Alpha", "tenant-a", vec![note("note")]);
    // Creates are POSTs and changes merge patches, as `kubectl create` and `kubectl patch`
    // send them (the embedded server runs no webhook on a server-side apply that creates).
    let as_user = |client: &kube::Client, object: &Value| {
        let definitions = api(client, "dynrec.dev/v1alpha1", "ReconcilerDefinition", None);
        let name = object["metadata"]["name"].as_str().unwrap().to_owned();
        let object: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        async move {
            let written = match definitions.get_opt(&name).await.unwrap() {
                None => definitions.create(&PostParams::default(), &object).await,
                Some(_) => {
                    let patch = Patch::Merge(json!({"spec": object.data["spec"]}));
                    definitions
                        .patch(&name, &PatchParams::default(), &patch)
                        .await
                }
            };
            written.map(drop).map_err(|err| err.to_string())
        }
    };

    let refused = as_user(&alice, &alpha).await.unwrap_err();
    let expected = "admission webhook \"serviceaccounts.reconcilerdefinitions.dynrec.dev\" denied the request: serviceaccounts \"reconciler\" is forbidden: User \"alice\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"tenant-a\"";
    assert!(refused.contains(expected), "{refused}");
    assert!(cluster.definitions.get("alpha").await.is_err());
    if let Some(kubectl) = kubectl_on_path() {
        let mut command = Command::new(kubectl);
        command
            .env_remove("KUBECONFIG")
            .arg("--kubeconfig")
            .arg(cluster.dir.path().join("kubeconfig"))
            .args([
                "auth",
                "can-i",
                "impersonate",
                "serviceaccount/reconciler",
                "-n",
                "tenant-a",
                "--as=alice",
            ]);
        assert_eq!(
            run(&mut command, Duration::from_secs(30)).stdout.trim(),
            "no"
        );
    }

    // A definition naming no account is alice's to write; bob may name the account, and
    // alice may then change the definition as long as she leaves the account alone.
    let mut own = definition("own", "Beta", "tenant-a", Vec::new());
    own["spec"]
        .as_object_mut()
        .unwrap()
        .remove("serviceAccount");
    as_user(&alice, &own).await.unwrap();
    as_user(&bob, &alpha).await.unwrap();
    let edited = definition("alpha", "Alpha", "tenant-a", vec![note("renamed")]);
    as_user(&alice, &edited).await.unwrap();
    let mut moved = edited.clone();
    moved["spec"]["serviceAccount"]["name"] = json!("default");
    let refused = as_user(&alice, &moved).await.unwrap_err();
    assert!(
        refused.contains("serviceaccounts \"default\" is forbidden"),
        "{refused}"
    );
}
