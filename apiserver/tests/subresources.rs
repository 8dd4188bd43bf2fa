//! Subresources and virtual kinds through kube::Client: pod eviction against disruption
//! budgets, binding, ephemeral containers, the kubelet-bound subresources of a pod with no
//! node, ServiceAccount tokens and their review, and the authentication and authorization
//! reviews.

mod support;

use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenRequest, TokenReview};
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Binding, Node, Pod, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{EvictParams, LogParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use support::*;

async fn create_pod(client: &Client, name: &str, labels: serde_json::Value) -> Api<Pod> {
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    let pod: Pod = typed(json!({"metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}));
    create(&pods, &pod).await;
    pods
}

/// Marks a pod Running and Ready, as a kubelet would.
async fn run(pods: &Api<Pod>, name: &str) {
    let status = json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
}

#[tokio::test]
async fn logs_of_a_pod_with_no_node_are_refused_as_kube_refuses_them() {
    let (_server, client) = server();
    let pods = create_pod(&client, "web", json!({})).await;
    let status = status_of(pods.logs("web", &LogParams::default()).await);
    assert_eq!(status.code, 400);
    assert_eq!(status.message, "pod web does not have a host assigned");
    let exec =
        http::Request::post("/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true")
            .body(Vec::new())
            .unwrap();
    let status = status_of(client.request_text(exec).await);
    assert_eq!(
        (status.code, status.message.as_str()),
        (400, "pod web does not have a host assigned")
    );
    let missing = status_of(pods.logs("nobody", &LogParams::default()).await);
    assert_eq!(missing.code, 404);
}

#[tokio::test]
async fn eviction_honours_pod_disruption_budgets() {
    let (_server, client) = server();
    let pods = create_pod(&client, "web-1", json!({"app": "web"})).await;
    create_pod(&client, "web-2", json!({"app": "web"})).await;
    run(&pods, "web-1").await;
    run(&pods, "web-2").await;
    let budgets = Api::<PodDisruptionBudget>::namespaced(client.clone(), "default");
    let budget: PodDisruptionBudget = typed(json!({"metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}));
    create(&budgets, &budget).await;

    let first = pods.evict("web-1", &EvictParams::default()).await.unwrap();
    assert!(first.is_success());
    assert!(
        pods.get_opt("web-1").await.unwrap().is_none(),
        "the first pod goes"
    );

    let status = status_of(pods.evict("web-2", &EvictParams::default()).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (429, "TooManyRequests")
    );
    assert_eq!(
        status.message,
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    let cause = &status.details.expect("details").causes[0];
    assert_eq!(cause.reason, "DisruptionBudget");
    assert_eq!(
        cause.message,
        "The disruption budget web needs 1 healthy pods and has 1 currently"
    );
    assert!(
        pods.get_opt("web-2").await.unwrap().is_some(),
        "the last pod stays"
    );

    // A pending pod is evicted whatever the budget.
    create_pod(&client, "web-3", json!({"app": "web"})).await;
    pods.evict("web-3", &EvictParams::default()).await.unwrap();
}

#[tokio::test]
async fn binding_assigns_a_node_once() {
    let (_server, client) = server();
    let pods = create_pod(&client, "web", json!({})).await;
    let binding: Binding = typed(json!({"metadata": {"name": "web"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}));
    let _: kube::core::Status = pods
        .create_subresource("binding", "web", &PostParams::default(), &binding)
        .await
        .unwrap();
    let bound = pods.get("web").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("node-1"));
    let scheduled = bound.status.unwrap().conditions.unwrap_or_default();
    assert!(
        scheduled
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True")
    );
    let again = pods
        .create_subresource::<_, kube::core::Status>(
            "binding",
            "web",
            &PostParams::default(),
            &binding,
        )
        .await;
    let status = status_of(again);
    assert_eq!(status.code, 409);
    assert!(
        status
            .message
            .contains("is already assigned to node \"node-1\""),
        "{}",
        status.message
    );
    // With a node, logs would need a kubelet: none runs.
    let status = status_of(pods.logs("web", &LogParams::default()).await);
    assert_eq!(status.code, 500);
}

#[tokio::test]
async fn ephemeral_containers_change_only_through_their_subresource() {
    let (_server, client) = server();
    let pods = create_pod(&client, "web", json!({})).await;
    let debug = json!({"spec": {"ephemeralContainers": [
        {"name": "debug", "image": "busybox", "targetContainerName": "c"}]}});
    let patched = pods
        .patch_ephemeral_containers(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(debug.clone()),
        )
        .await
        .unwrap();
    let spec = patched.spec.unwrap();
    let ephemeral = spec.ephemeral_containers.unwrap_or_default();
    assert_eq!(ephemeral[0].name, "debug");
    assert_eq!(ephemeral[0].image_pull_policy.as_deref(), Some("Always"));
    // The subresource leaves the rest of the spec alone.
    let sneaky = json!({"spec": {"activeDeadlineSeconds": 5, "ephemeralContainers": [
        {"name": "debug", "image": "busybox", "targetContainerName": "c"}]}});
    let kept = pods
        .patch_ephemeral_containers("web", &PatchParams::default(), &Patch::Merge(sneaky))
        .await
        .unwrap();
    assert_eq!(kept.spec.unwrap().active_deadline_seconds, None);
}

#[tokio::test]
async fn a_token_request_issues_a_token_that_token_review_accepts() {
    let (_server, client) = server();
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), "default");
    let account = accounts.get("default").await.unwrap();
    let request: TokenRequest =
        typed(json!({"spec": {"audiences": ["api"], "expirationSeconds": 3600}}));
    let issued: TokenRequest = accounts
        .create_subresource("token", "default", &PostParams::default(), &request)
        .await
        .unwrap();
    let token = issued.status.and_then(|s| s.token).expect("a token");
    assert_eq!(token.split('.').count(), 3, "a JWT");

    let reviews = Api::<TokenReview>::all(client.clone());
    let review: TokenReview = typed(json!({"spec": {"token": token, "audiences": ["api"]}}));
    let answered = create(&reviews, &review).await;
    let result = answered.status.expect("a status");
    assert_eq!(result.authenticated, Some(true));
    let user = result.user.expect("the user");
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:default:default")
    );
    assert_eq!(user.uid, account.metadata.uid);
    assert!(
        user.groups
            .unwrap_or_default()
            .contains(&"system:serviceaccounts:default".to_string())
    );

    let forged: TokenReview = typed(json!({"spec": {"token": "a.b.c"}}));
    let refused = create(&reviews, &forged).await;
    assert_eq!(refused.status.unwrap().authenticated, Some(false));

    let short: TokenRequest = typed(json!({"spec": {"expirationSeconds": 60}}));
    let status = status_of(
        accounts
            .create_subresource::<_, TokenRequest>(
                "token",
                "default",
                &PostParams::default(),
                &short,
            )
            .await,
    );
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .contains("may not specify a duration less than 10 minutes"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn a_service_account_token_authenticates_its_requests() {
    let server = dynrec_apiserver::ApiServer::new();
    let admin = server.client();
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), "default");
    let request: TokenRequest = typed(json!({"spec": {}}));
    let issued: TokenRequest = accounts
        .create_subresource("token", "default", &PostParams::default(), &request)
        .await
        .unwrap();
    let token = issued.status.and_then(|s| s.token).expect("a token");
    let client = server.client_with_token(Some(&token));
    let review: SelfSubjectReview = typed(json!({}));
    let me = Api::<SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    let user = me.status.unwrap().user_info.unwrap();
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:default:default")
    );

    let review: SelfSubjectReview = typed(json!({}));
    let admin_me = Api::<SelfSubjectReview>::all(admin)
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    assert_eq!(
        admin_me
            .status
            .unwrap()
            .user_info
            .unwrap()
            .username
            .as_deref(),
        Some("kubernetes-admin")
    );
}

#[tokio::test]
async fn access_reviews_allow_everything_and_are_never_stored() {
    let (_server, client) = server();
    let reviews = Api::<SelfSubjectAccessReview>::all(client.clone());
    let review: SelfSubjectAccessReview = typed(json!({"spec": {"resourceAttributes":
        {"verb": "delete", "resource": "nodes"}}}));
    let answered = create(&reviews, &review).await;
    assert!(answered.status.unwrap().allowed);
    let status = status_of(reviews.list(&Default::default()).await);
    assert_eq!(
        (status.code, status.reason.as_str()),
        (405, "MethodNotAllowed")
    );
}

#[tokio::test]
async fn a_csr_is_approved_through_its_approval_subresource() {
    let (_server, client) = server();
    let csrs = Api::<CertificateSigningRequest>::all(client.clone());
    let csr: CertificateSigningRequest = typed(json!({"metadata": {"name": "me"},
        "spec": {"request": "LS0tLS1CRUdJTg==", "signerName": "example.com/signer", "usages": ["client auth"]}}));
    create(&csrs, &csr).await;
    let approval = json!({"status": {"conditions": [{"type": "Approved", "status": "True",
        "reason": "Test", "message": "approved by the test"}]}});
    let approved = csrs
        .patch_subresource(
            "approval",
            "me",
            &PatchParams::default(),
            &Patch::Merge(approval),
        )
        .await
        .unwrap();
    let conditions = approved.status.unwrap().conditions.unwrap_or_default();
    assert_eq!(conditions[0].type_, "Approved");
    // The main endpoint cannot approve: status is its own subresource.
    let nodes = Api::<Node>::all(client);
    let node: Node = typed(json!({"metadata": {"name": "node-1"}}));
    create(&nodes, &node).await;
    let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    let updated = nodes
        .patch_status("node-1", &PatchParams::default(), &Patch::Merge(ready))
        .await
        .unwrap();
    assert_eq!(
        updated.status.unwrap().conditions.unwrap()[0].type_,
        "Ready"
    );
}
