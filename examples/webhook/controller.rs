//! The widgets' admission webhooks: a mutating one that defaults a Widget's `spec.size`
//! to 1 and labels the ConfigMaps the widgets controller makes, and a validating one that
//! refuses the greeting "boo". Both are plain sub-reconcilers in an
//! [`AdmissionWebhookAdapter`], served by one [`WebhookServer`].

use base64::Engine;
use kube::api::DynamicObject;
use serde_json::{Value, json};

use dynrec::client::{Client, Error};
use dynrec::reconcilers::{Config, Draft, ReconcileError, SyncReconciler};
use dynrec::webhook::{
    AdmissionWebhookAdapter, CertSource, WebhookServer, WebhookServerError, WebhookServing,
    admission_response,
};

/// Where the mutating webhook is served.
pub const MUTATE_PATH: &str = "/mutate";
/// Where the validating webhook is served.
pub const VALIDATE_PATH: &str = "/validate";
/// The name of the webhook that defaults Widgets.
pub const DEFAULTS: &str = "defaults.widgets.example.com";
/// The name of the webhook that labels the Widgets' ConfigMaps.
pub const LABELS: &str = "labels.widgets.example.com";
/// The name of the webhook that refuses forbidden greetings.
pub const GREETINGS: &str = "greetings.widgets.example.com";
/// The label the mutating webhook puts on the Widgets' ConfigMaps.
pub const ADMITTED_LABEL: &str = "example.com/admitted";

/// Defaults `spec.size` of Widgets and labels ConfigMaps.
pub fn mutating(config: &Config) -> AdmissionWebhookAdapter {
    let mutate = SyncReconciler::new(|_ctx, object: &mut Draft| {
        let kind = object
            .types
            .as_ref()
            .map(|t| t.kind.as_str())
            .unwrap_or_default();
        match kind {
            "Widget" => {
                if let Some(data) = object.data.as_object_mut() {
                    let spec = data.entry("spec").or_insert_with(|| json!({}));
                    if let Some(spec) = spec.as_object_mut() {
                        spec.entry("size").or_insert(json!(1));
                    }
                }
            }
            "ConfigMap" => {
                let labels = object.metadata.labels.get_or_insert_with(Default::default);
                labels.insert(ADMITTED_LABEL.into(), "true".into());
            }
            _ => {}
        }
        Ok(())
    });
    AdmissionWebhookAdapter::new(mutate, config.clone()).named("widget-defaults")
}

/// Refuses Widgets whose greeting is "boo"; warns about more than 10 parts.
pub fn validating(config: &Config) -> AdmissionWebhookAdapter {
    let validate = SyncReconciler::new(|ctx, widget: &mut Draft| {
        let greeting = widget.data["spec"]["greeting"].as_str().unwrap_or_default();
        let forbidden = greeting == "boo";
        let size = widget.data["spec"]["size"].as_i64().unwrap_or_default();
        if let Some(response) = admission_response(ctx) {
            if forbidden {
                response.deny(403, format!("greeting {greeting:?} is forbidden"));
            }
            if size > 10 {
                response.warn(format!("a widget of {size} parts is hard to build"));
            }
        }
        {
            match forbidden {
                true => Err(ReconcileError::msg("forbidden greeting").with_quiet()),
                false => Ok(()),
            }
        }
    });
    AdmissionWebhookAdapter::new(validate, config.clone()).named("widget-greetings")
}

/// A server with both webhooks and a self-signed certificate.
pub fn server(config: &Config) -> Result<WebhookServer, WebhookServerError> {
    WebhookServer::new(CertSource::SelfSigned(Vec::new()))
        .webhook(MUTATE_PATH, mutating(config))?
        .webhook(VALIDATE_PATH, validating(config))
}

/// The webhook configurations that send Widget and ConfigMap writes to `serving`.
pub fn configurations(serving: &WebhookServing) -> Vec<DynamicObject> {
    let ca_bundle =
        base64::engine::general_purpose::STANDARD.encode(serving.ca_pem().unwrap_or_default());
    let client = |path: &str| json!({"url": serving.url(path), "caBundle": ca_bundle});
    let rules = |plural: &str, group: &str| {
        json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": [group],
            "apiVersions": ["v1"], "resources": [plural]}])
    };
    let hook = |name: &str, path: &str, rules: Value| {
        json!({"name": name, "clientConfig": client(path), "rules": rules,
            "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail", "timeoutSeconds": 5})
    };
    let mut labels = hook(LABELS, MUTATE_PATH, rules("configmaps", ""));
    labels["objectSelector"] =
        json!({"matchExpressions": [{"key": "example.com/widget", "operator": "Exists"}]});
    let objects = [
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration", "metadata": {"name": "widgets"},
            "webhooks": [hook(DEFAULTS, MUTATE_PATH, rules("widgets", "example.com")), labels]}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "widgets"},
            "webhooks": [hook(GREETINGS, VALIDATE_PATH, rules("widgets", "example.com"))]}),
    ];
    objects
        .into_iter()
        .filter_map(|object| serde_json::from_value(object).ok())
        .collect()
}

/// Creates or updates the webhook configurations for `serving`.
pub async fn register(client: &Client, serving: &WebhookServing) -> Result<(), Error> {
    for configuration in configurations(serving) {
        client.apply(&configuration, "dynrec-demo", true).await?;
    }
    Ok(())
}
