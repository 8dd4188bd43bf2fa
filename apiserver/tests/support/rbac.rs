//! Helpers of the RBAC tests: a server under RBAC with a static user, ServiceAccount and
//! impersonating clients, RBAC objects stored as the administrator, and 403 messages.

use dynrec_apiserver::{ApiServer, Authorization};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

use super::{create, typed};

/// A server under RBAC whose token file has the user `alice` (token `static-token`, group
/// `auditors`).
pub fn rbac_server() -> ApiServer {
    ApiServer::builder()
        .authorization(Authorization::Rbac)
        .token_file("static-token,alice,u-alice,\"auditors\"\n")
        .unwrap()
        .build()
}

/// Creates `namespace` and a ServiceAccount `name` in it; returns a client with its token.
pub async fn service_account(server: &ApiServer, namespace: &str, name: &str) -> kube::Client {
    let token = service_account_token(server, namespace, name).await;
    server.client_with_token(Some(&token))
}

/// An in-process client sending `token` and impersonating `user`.
pub fn impersonating(server: &ApiServer, token: Option<&str>, user: &str) -> kube::Client {
    let authorization = token.map(|t| http::HeaderValue::from_str(&format!("Bearer {t}")).unwrap());
    let user = http::HeaderValue::from_str(user).unwrap();
    let service = tower::ServiceBuilder::new()
        .map_request(move |mut request: http::Request<kube::client::Body>| {
            let headers = request.headers_mut();
            if let Some(value) = &authorization {
                headers.insert(http::header::AUTHORIZATION, value.clone());
            }
            headers.insert("Impersonate-User", user.clone());
            request
        })
        .service(server.router());
    kube::Client::new(service, "default")
}

/// Creates `namespace` and a ServiceAccount `name` in it; returns a token for it.
pub async fn service_account_token(server: &ApiServer, namespace: &str, name: &str) -> String {
    let admin = server.client();
    let _ = Api::<Namespace>::all(admin.clone())
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": namespace}})),
        )
        .await;
    let accounts = Api::<ServiceAccount>::namespaced(admin, namespace);
    create(&accounts, &typed(json!({"metadata": {"name": name}}))).await;
    let request: TokenRequest = typed(json!({"spec": {"audiences": []}}));
    let issued: TokenRequest = accounts
        .create_subresource("token", name, &PostParams::default(), &request)
        .await
        .unwrap();
    issued.status.and_then(|s| s.token).unwrap()
}

/// Stores an RBAC object (Role, ClusterRole, RoleBinding, ClusterRoleBinding) as the admin.
pub async fn rbac_object(server: &ApiServer, object: Value) {
    let kind = object["kind"].as_str().unwrap().to_string();
    let gvk = GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", &kind);
    let ar = ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(server.client(), ns, &ar),
        None => Api::all_with(server.client(), &ar),
    };
    create(&api, &typed(object)).await;
}

/// The message of a 403, or a panic naming what came instead.
pub fn forbidden(result: Result<impl std::fmt::Debug, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) if status.code == 403 => status.message,
        other => panic!("expected a 403, got {other:?}"),
    }
}
