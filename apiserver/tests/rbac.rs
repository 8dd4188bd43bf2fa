//! RBAC in the embedded server (`Authorization::Rbac`): who a request comes from (server,
//! static and ServiceAccount tokens, impersonation), Roles and ClusterRoles with their
//! bindings evaluated as kube's authorizer, its 403 wording, and the access reviews.

mod support;

use dynrec_apiserver::ApiServer;
use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SelfSubjectRulesReview};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;
use support::rbac::{
    forbidden, impersonating, rbac_object, rbac_server, service_account, service_account_token,
};
use support::{create, typed, widget};

fn config_map(name: &str) -> ConfigMap {
    typed(json!({"metadata": {"name": name}, "data": {"a": "b"}}))
}

#[tokio::test]
async fn a_service_account_is_refused_in_kube_s_words_until_a_role_binding_allows_it() {
    let server = rbac_server();
    let account = service_account(&server, "ns", "sa").await;
    let config_maps = Api::<ConfigMap>::namespaced(account.clone(), "ns");
    let refused = forbidden(
        config_maps
            .create(&PostParams::default(), &config_map("c1"))
            .await,
    );
    assert_eq!(
        refused,
        "configmaps is forbidden: User \"system:serviceaccount:ns:sa\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"ns\""
    );
    rbac_object(&server, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "writer", "namespace": "ns"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]},
                  {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"], "resourceNames": ["c1"]}]}))
    .await;
    rbac_object(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "writer", "namespace": "ns"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "writer"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]}),
    )
    .await;
    create(&config_maps, &config_map("c1")).await;
    create(&config_maps, &config_map("c2")).await;
    // Only the named object may be deleted; listing was never granted.
    config_maps.delete("c1", &Default::default()).await.unwrap();
    let refused = forbidden(config_maps.delete("c2", &Default::default()).await);
    assert_eq!(
        refused,
        "configmaps \"c2\" is forbidden: User \"system:serviceaccount:ns:sa\" cannot delete resource \"configmaps\" in API group \"\" in the namespace \"ns\""
    );
    forbidden(config_maps.list(&Default::default()).await);
    // A Role grants nothing in another namespace, nor cluster-wide.
    let elsewhere = Api::<ConfigMap>::namespaced(account.clone(), "default");
    let refused = forbidden(
        elsewhere
            .create(&PostParams::default(), &config_map("c3"))
            .await,
    );
    assert!(
        refused.ends_with("in the namespace \"default\""),
        "{refused}"
    );
    let refused = forbidden(
        Api::<Namespace>::all(account)
            .list(&Default::default())
            .await,
    );
    assert_eq!(
        refused,
        "namespaces is forbidden: User \"system:serviceaccount:ns:sa\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );
}

#[tokio::test]
async fn a_cluster_role_grants_subresources_and_groups_as_bound() {
    let server = rbac_server();
    let alice = server.client_with_token(Some("static-token"));
    let crds = Api::<DynamicObject>::all_with(
        server.client(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        )),
    );
    create(&crds, &typed(support::widget_crd())).await;
    let widgets = Api::<DynamicObject>::namespaced_with(
        server.client(),
        "default",
        &support::widget_resource(),
    );
    let widget = widget("w1");
    create(&widgets, &widget).await;
    rbac_object(&server, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "status-writer"},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets/status"], "verbs": ["get", "update"]}]}))
    .await;
    rbac_object(&server, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "auditors"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "status-writer"},
        "subjects": [{"kind": "Group", "name": "auditors", "apiGroup": "rbac.authorization.k8s.io"}]}))
    .await;
    let as_alice =
        Api::<DynamicObject>::namespaced_with(alice, "default", &support::widget_resource());
    let status = as_alice.get_status("w1").await.unwrap();
    as_alice
        .replace_status("w1", &PostParams::default(), &status)
        .await
        .unwrap();
    let refused = forbidden(as_alice.get("w1").await);
    assert_eq!(
        refused,
        "widgets.example.com \"w1\" is forbidden: User \"alice\" cannot get resource \"widgets\" in API group \"example.com\" in the namespace \"default\""
    );
}

#[tokio::test]
async fn access_and_rules_reviews_answer_what_the_bindings_allow() {
    let server = rbac_server();
    let account = service_account(&server, "ns", "sa").await;
    rbac_object(&server, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]}]}))
    .await;
    rbac_object(&server, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "reader", "namespace": "ns"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]}))
    .await;
    let reviews = Api::<SelfSubjectAccessReview>::all(account.clone());
    let ask = |verb: &str, namespace: &str| -> SelfSubjectAccessReview {
        typed(
            json!({"spec": {"resourceAttributes": {"verb": verb, "group": "apps",
            "resource": "deployments", "namespace": namespace}}}),
        )
    };
    let allowed = create(&reviews, &ask("list", "ns")).await;
    let status = allowed.status.unwrap();
    assert!(status.allowed);
    assert_eq!(
        status.reason.as_deref(),
        Some(
            "RBAC: allowed by RoleBinding \"reader\" of ClusterRole \"reader\" in the namespace \"ns\" to ServiceAccount \"ns/sa\""
        )
    );
    for (verb, namespace) in [("delete", "ns"), ("list", "other")] {
        let denied = create(&reviews, &ask(verb, namespace)).await;
        assert!(!denied.status.unwrap().allowed, "{verb} in {namespace}");
    }
    let rules: SelfSubjectRulesReview = typed(json!({"spec": {"namespace": "ns"}}));
    let rules = Api::<SelfSubjectRulesReview>::all(account)
        .create(&PostParams::default(), &rules)
        .await
        .unwrap()
        .status
        .unwrap();
    assert!(rules.resource_rules.iter().any(|r| r.resources.as_deref()
        == Some(&["deployments".to_string()][..])
        && r.verbs == ["get", "list", "watch"]));
    // Every authenticated user may ask (system:basic-user) and discover (system:discovery).
    assert!(rules.resource_rules.iter().any(|r| {
        r.resources
            .as_ref()
            .is_some_and(|r| r.contains(&"selfsubjectaccessreviews".to_string()))
    }));
    assert!(rules.non_resource_rules.iter().any(|r| {
        r.non_resource_urls
            .as_ref()
            .is_some_and(|u| u.contains(&"/apis/*".to_string()))
    }));
}

#[tokio::test]
async fn impersonation_acts_as_the_user_named_only_for_callers_allowed_to_impersonate() {
    let server = rbac_server();
    let token = service_account_token(&server, "ns", "sa").await;
    // The admin (system:masters) may impersonate anyone: it then acts as the account.
    let as_account = impersonating(&server, server.admin_token(), "system:serviceaccount:ns:sa");
    let refused = forbidden(
        Api::<ConfigMap>::namespaced(as_account, "ns")
            .create(&PostParams::default(), &config_map("c1"))
            .await,
    );
    assert!(
        refused.contains("User \"system:serviceaccount:ns:sa\" cannot create"),
        "{refused}"
    );
    // The account may not impersonate.
    let refused = forbidden(
        Api::<ConfigMap>::namespaced(
            impersonating(&server, Some(&token), "kubernetes-admin"),
            "ns",
        )
        .list(&Default::default())
        .await,
    );
    assert_eq!(
        refused,
        "users \"kubernetes-admin\" is forbidden: User \"system:serviceaccount:ns:sa\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
}

#[tokio::test]
async fn without_rbac_a_service_account_may_do_anything() {
    let server = ApiServer::new();
    let account = service_account(&server, "ns", "sa").await;
    Api::<ConfigMap>::namespaced(account, "ns")
        .create(&PostParams::default(), &config_map("c1"))
        .await
        .unwrap();
}
