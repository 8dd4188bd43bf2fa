//! Discovery as kube's `Discovery` reads it, and CRDs appearing and disappearing.

mod support;

use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use serde_json::json;
use support::*;

const BUILTINS: &[(&str, &str, &str, &str, bool)] = &[
    ("", "v1", "Namespace", "namespaces", false),
    ("", "v1", "ConfigMap", "configmaps", true),
    ("", "v1", "Secret", "secrets", true),
    ("", "v1", "Pod", "pods", true),
    ("", "v1", "Service", "services", true),
    ("", "v1", "ServiceAccount", "serviceaccounts", true),
    ("", "v1", "Event", "events", true),
    ("apps", "v1", "Deployment", "deployments", true),
    ("apps", "v1", "StatefulSet", "statefulsets", true),
    ("apps", "v1", "DaemonSet", "daemonsets", true),
    ("apps", "v1", "ReplicaSet", "replicasets", true),
    ("batch", "v1", "Job", "jobs", true),
    ("batch", "v1", "CronJob", "cronjobs", true),
    ("coordination.k8s.io", "v1", "Lease", "leases", true),
    ("events.k8s.io", "v1", "Event", "events", true),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
    ),
];

#[tokio::test]
async fn kube_discovery_finds_every_builtin_kind_with_its_scope() {
    let (_server, client) = server();
    let discovery = Discovery::new(client).run().await.unwrap();
    for (group, version, kind, plural, namespaced) in BUILTINS {
        let (ar, caps) = discovery
            .resolve_gvk(&GroupVersionKind::gvk(group, version, kind))
            .unwrap_or_else(|| panic!("{group}/{version} {kind} is discoverable"));
        assert_eq!(ar.plural, *plural);
        assert_eq!(caps.scope == Scope::Namespaced, *namespaced, "{kind}");
    }
    let (_, deployment) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"))
        .unwrap();
    assert!(
        deployment
            .subresources
            .iter()
            .any(|(ar, _)| ar.plural == "status")
    );
}

#[tokio::test]
async fn resource_lists_carry_names_verbs_and_short_names() {
    let (_server, client) = server();
    let (code, doc) = get_json(&client, "/apis/apps/v1").await;
    assert_eq!(code, 200);
    let deployments = doc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "deployments")
        .unwrap();
    assert_eq!(deployments["singularName"], "deployment");
    assert_eq!(deployments["shortNames"], json!(["deploy"]));
    assert_eq!(deployments["categories"], json!(["all"]));
    assert!(
        deployments["verbs"]
            .as_array()
            .unwrap()
            .contains(&json!("watch"))
    );
    let (code, version) = get_json(&client, "/version").await;
    assert_eq!((code, version["major"].as_str()), (200, Some("1")));
    let info = client.apiserver_version().await.unwrap();
    assert_eq!(info.major, "1");
}

#[tokio::test]
async fn a_crd_appears_in_discovery_at_once_with_its_conditions() {
    let (_server, client) = server();
    let crd = install_widget_crd(&client).await;
    let conditions = crd.data["status"]["conditions"].as_array().unwrap();
    for kind in ["Established", "NamesAccepted"] {
        assert!(
            conditions
                .iter()
                .any(|c| c["type"] == kind && c["status"] == "True"),
            "{kind}"
        );
    }
    assert_eq!(crd.data["status"]["acceptedNames"]["kind"], "Widget");
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let (ar, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"))
        .unwrap();
    assert_eq!(ar.plural, "widgets");
    assert_eq!(caps.scope, Scope::Namespaced);
    assert!(
        caps.subresources
            .iter()
            .any(|(sub, _)| sub.plural == "status")
    );
    let widgets = kube::Api::<DynamicObject>::namespaced_with(client.clone(), "default", &ar);
    let w = create(&widgets, &object(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"a": 1}}))).await;
    assert_eq!(w.data["spec"]["a"], 1);

    crds(&client)
        .delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let discovery = Discovery::new(client).run().await.unwrap();
    assert!(
        discovery
            .resolve_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"))
            .is_none()
    );
}

#[tokio::test]
async fn an_invalid_crd_is_refused_with_each_problem() {
    let (_server, client) = server();
    let crds = crds(&client);
    let bad = object(
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "wrong"},
        "spec": {"group": "nodot", "scope": "Sideways", "names": {"kind": "Thing", "plural": "things"},
            "versions": [{"name": "v1", "served": true, "storage": false}]}}),
    );
    let status = status_of(crds.create(&PostParams::default(), &bad).await);
    assert_eq!(status.code, 422);
    for field in ["spec.group", "spec.scope", "metadata.name", "spec.versions"] {
        assert!(
            status.message.contains(field),
            "{field} in {}",
            status.message
        );
    }
}

fn crd(group: &str, kind: &str, plural: &str) -> DynamicObject {
    object(
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Namespaced", "names": {"kind": kind, "plural": plural},
            "versions": [{"name": "v1", "served": true, "storage": true}]}}),
    )
}

fn condition(crd: &DynamicObject, kind: &str) -> String {
    let conditions = crd.data["status"]["conditions"].as_array().unwrap();
    let found = conditions.iter().find(|c| c["type"] == kind).unwrap();
    found["status"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_crd_whose_names_clash_is_not_established() {
    let (_server, client) = server();
    let crds = crds(&client);
    let leases = api(
        &client,
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        "default",
    );
    create(&leases, &object(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}))).await;
    let builtin = create(&crds, &crd("coordination.k8s.io", "Lease", "leases")).await;
    assert_eq!(
        (
            condition(&builtin, "NamesAccepted"),
            condition(&builtin, "Established")
        ),
        ("False".into(), "False".into())
    );
    crds.delete("leases.coordination.k8s.io", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        crds.get_opt("leases.coordination.k8s.io")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        leases.get_opt("l").await.unwrap().is_some(),
        "the built-in kind and its objects are untouched"
    );
    install_widget_crd(&client).await;
    let same_kind = create(&crds, &crd("example.com", "Widget", "gizmos")).await;
    assert_eq!(condition(&same_kind, "NamesAccepted"), "False");
    let (code, _) = get_json(&client, "/apis/example.com/v1/gizmos").await;
    assert_eq!(
        code, 404,
        "a kind whose names were not accepted is not served"
    );
}

#[tokio::test]
async fn a_crd_with_two_versions_serves_one_object_at_both() {
    let (_server, client) = server();
    let crds = crds(&client);
    let mut crd = widget_crd();
    crd["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": true},
        {"name": "v1beta1", "served": true, "storage": false}
    ]);
    create(&crds, &object(crd)).await;
    let v1 = widgets(&client, "default");
    create(&v1, &widget("w")).await;
    let (code, doc) = get_json(
        &client,
        "/apis/example.com/v1beta1/namespaces/default/widgets/w",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(doc["apiVersion"], "example.com/v1beta1");
    let (_, group) = get_json(&client, "/apis/example.com").await;
    assert_eq!(group["preferredVersion"]["version"], "v1");
}

#[tokio::test]
async fn subresources_and_verbs_are_discovered_as_a_cluster_lists_them() {
    let (_server, client) = server();
    let discovery = Discovery::new(client).run().await.unwrap();
    let (_, pods) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("", "v1", "Pod"))
        .unwrap();
    let mut subresources: Vec<String> = pods
        .subresources
        .iter()
        .map(|(ar, _)| ar.plural.clone())
        .collect();
    subresources.sort();
    assert_eq!(
        subresources,
        [
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "status"
        ]
    );
    let eviction = pods
        .subresources
        .iter()
        .find(|(ar, _)| ar.plural == "eviction")
        .unwrap();
    assert_eq!(
        (eviction.0.group.as_str(), eviction.0.kind.as_str()),
        ("policy", "Eviction")
    );
    let (_, reviews) = discovery
        .resolve_gvk(&GroupVersionKind::gvk(
            "authentication.k8s.io",
            "v1",
            "TokenReview",
        ))
        .unwrap();
    assert_eq!(reviews.operations, ["create"]);
    let (_, namespaces) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("", "v1", "Namespace"))
        .unwrap();
    assert!(!namespaces.supports_operation("deletecollection"));
    for (group, kind) in [
        ("apiregistration.k8s.io", "APIService"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("networking.k8s.io", "Ingress"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ] {
        assert!(
            discovery
                .groups()
                .any(|g| g.name() == group && g.recommended_kind(kind).is_some()),
            "{group} {kind} is discoverable"
        );
    }
}
