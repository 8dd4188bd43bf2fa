//! Who may use which identity: an admission webhook refusing a `ReconcilerDefinition` that
//! names a ServiceAccount the requesting user may not `impersonate` — the permission
//! kube-apiserver asks of `kubectl --as` — so that writing a definition grants no more than
//! its author already holds. A definition whose `spec.serviceAccount` did not change is
//! let through (its author was checked when it was set).

use base64::Engine;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use super::crd::PLURAL;
use super::model::{GROUP, ServiceAccountRef, VERSION};
use crate::reconcilers::{Config, Context, Draft, ReconcileError, SyncReconciler};
use crate::webhook::{
    AdmissionRequest, AdmissionWebhookAdapter, admission_request, admission_response,
};

/// The webhook's name in its ValidatingWebhookConfiguration.
pub const IMPERSONATION_WEBHOOK: &str = "serviceaccounts.reconcilerdefinitions.dynrec.dev";
/// The path the webhook is served on.
pub const IMPERSONATION_PATH: &str = "/validate-serviceaccount";

/// Where the API server reaches the impersonation webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookEndpoint {
    /// An `https://` URL (dynrec's address, reachable from the API server).
    Url(String),
    /// A Service in front of dynrec's replicas, at [`IMPERSONATION_PATH`].
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The Service's port.
        port: u16,
    },
}

/// The ValidatingWebhookConfiguration sending creates and updates of definitions to the
/// webhook at `endpoint`, trusting `ca_pem` (a self-signed certificate's) when given.
pub fn impersonation_webhook_configuration(
    endpoint: &WebhookEndpoint,
    ca_pem: Option<&str>,
) -> Value {
    let mut client = match endpoint {
        WebhookEndpoint::Url(url) => json!({"url": url}),
        WebhookEndpoint::Service {
            namespace,
            name,
            port,
        } => json!({"service": {"namespace": namespace, "name": name,
            "path": IMPERSONATION_PATH, "port": port}}),
    };
    if let Some(pem) = ca_pem {
        client["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(pem));
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": IMPERSONATION_WEBHOOK},
        "webhooks": [{"name": IMPERSONATION_WEBHOOK, "clientConfig": client,
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [GROUP],
                "apiVersions": [VERSION], "resources": [PLURAL]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail", "timeoutSeconds": 10}]})
}

/// The validating webhook that refuses a definition naming a ServiceAccount its author may
/// not impersonate; `config`'s client asks the API server (SubjectAccessReview).
pub fn impersonation_webhook(config: &Config) -> AdmissionWebhookAdapter {
    let kube = config.client.own_kube().clone();
    let check = SyncReconciler::new_async(move |ctx: &Context, definition: &mut Draft| {
        let kube = kube.clone();
        Box::pin(async move {
            let (Some(request), Some(response)) = (admission_request(ctx), admission_response(ctx))
            else {
                return Ok(());
            };
            let Some(account) = newly_named(&request, &definition.data) else {
                return Ok(());
            };
            if !may_impersonate(&kube, &request, &account).await? {
                response.deny(403, forbidden(&request, &account));
            }
            Ok(())
        })
    })
    .named("impersonation check");
    AdmissionWebhookAdapter::new(check, config.clone()).named(IMPERSONATION_WEBHOOK)
}

/// The ServiceAccount `object` names, unless the old object named the same one.
fn newly_named(
    request: &AdmissionRequest<DynamicObject>,
    object: &Value,
) -> Option<ServiceAccountRef> {
    let named = |data: &Value| {
        serde_json::from_value::<ServiceAccountRef>(data["spec"]["serviceAccount"].clone()).ok()
    };
    let account = named(object)?;
    let before = request.old_object.as_ref().and_then(|old| named(&old.data));
    (before.as_ref() != Some(&account)).then_some(account)
}

/// Whether the request's user may `impersonate` the account.
async fn may_impersonate(
    kube: &kube::Client,
    request: &AdmissionRequest<DynamicObject>,
    account: &ServiceAccountRef,
) -> Result<bool, ReconcileError> {
    let user = &request.user_info;
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(String::new()),
                resource: Some("serviceaccounts".into()),
                verb: Some("impersonate".into()),
                namespace: Some(account.namespace.clone()),
                name: Some(account.name.clone()),
                ..ResourceAttributes::default()
            }),
            user: user.username.clone(),
            groups: user.groups.clone(),
            uid: user.uid.clone(),
            extra: user.extra.clone().map(|extra| extra.into_iter().collect()),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let reviews: Api<SubjectAccessReview> = Api::all(kube.clone());
    let answer = reviews
        .create(&PostParams::default(), &review)
        .await
        .map_err(ReconcileError::from_error)?;
    Ok(answer.status.is_some_and(|status| status.allowed))
}

/// kube-apiserver's words for a refused impersonation.
fn forbidden(request: &AdmissionRequest<DynamicObject>, account: &ServiceAccountRef) -> String {
    let user = request.user_info.username.as_deref().unwrap_or_default();
    format!(
        "serviceaccounts {:?} is forbidden: User {user:?} cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace {:?}: spec.serviceAccount names a ServiceAccount its author may not act as",
        account.name, account.namespace
    )
}
