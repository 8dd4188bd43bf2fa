//! ValidatingAdmissionPolicy: a bound policy's CEL validations refuse (Deny) or warn
//! about (Warn) a write, in kube-apiserver's words.

mod support;

use kube::api::PostParams;
use serde_json::json;
use support::*;

/// Binds a policy on ConfigMaps: at most two entries in `data`.
async fn bind_policy(client: &kube::Client, actions: serde_json::Value) {
    let group = "admissionregistration.k8s.io";
    let policies = cluster_api(
        client,
        group,
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
    );
    let bindings = cluster_api(
        client,
        group,
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
    );
    let policy = object(json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "max-entries"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
            "validations": [
                {"expression": "!has(object.data) || size(object.data) <= 2",
                 "message": "a ConfigMap holds at most two entries"},
                {"expression": "request.operation != 'CREATE' || !has(object.metadata.labels) || !('forbidden' in object.metadata.labels)"}]}}));
    let binding = object(json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "max-entries-binding"},
        "spec": {"policyName": "max-entries", "validationActions": actions}}));
    create(&policies, &policy).await;
    create(&bindings, &binding).await;
}

#[tokio::test]
async fn a_bound_policy_denies_a_write_its_validations_refuse() {
    let (_server, client) = server();
    bind_policy(&client, json!(["Deny"])).await;
    let api = configmaps(&client, "default");
    let two = configmap("two", json!({}), json!({"a": "1", "b": "2"}));
    api.create(&PostParams::default(), &two)
        .await
        .expect("two entries are allowed");
    let three = configmap("three", json!({}), json!({"a": "1", "b": "2", "c": "3"}));
    let status = status_of(api.create(&PostParams::default(), &three).await);
    assert_eq!(
        (status.code, status.reason.as_str(), status.message.as_str()),
        (
            422,
            "Invalid",
            "ValidatingAdmissionPolicy 'max-entries' with binding 'max-entries-binding' denied request: a ConfigMap holds at most two entries"
        )
    );
    let labelled = configmap("labelled", json!({"forbidden": "yes"}), json!({}));
    let status = status_of(api.create(&PostParams::default(), &labelled).await);
    assert_eq!(
        status.message,
        "ValidatingAdmissionPolicy 'max-entries' with binding 'max-entries-binding' denied request: failed expression: request.operation != 'CREATE' || !has(object.metadata.labels) || !('forbidden' in object.metadata.labels)"
    );
}

#[tokio::test]
async fn a_policy_bound_to_warn_lets_the_write_through_with_a_warning() {
    let (_server, client) = server();
    bind_policy(&client, json!(["Warn"])).await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "three"},
        "data": {"a": "1", "b": "2", "c": "3"}});
    let request = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .body(kube::client::Body::from(body.to_string().into_bytes()))
        .unwrap();
    let (code, warnings) = send_for_warnings(&client, request).await;
    assert_eq!(code, 201);
    assert_eq!(
        warnings,
        [
            "299 - \"ValidatingAdmissionPolicy 'max-entries' with binding 'max-entries-binding' denied request: a ConfigMap holds at most two entries\""
        ]
    );
}
