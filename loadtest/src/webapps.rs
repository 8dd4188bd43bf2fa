//! The WebApp of `examples/definitions/webapp.yaml`: its instances as the driver writes them
//! (a host, so three children each: Deployment, Service, Ingress; no replicas, as no kubelet
//! runs pods here, so the Deployment is ready as made), the children the definition's
//! templates give one, and the typed WebApp of the baseline.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, PodSpec, PodTemplateSpec, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule,
    IngressServiceBackend, IngressSpec, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;

/// The WebApp, typed, as the baseline controller's author would derive it.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "WebApp", namespaced)]
#[kube(status = "WebAppStatus")]
pub struct WebAppSpec {
    /// The container image.
    pub image: String,
    /// How many pods (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The port the container listens on (default 8080).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// When set, an Ingress routes this host to the app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The typed WebApp's status, as the definition writes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebAppStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub available_replicas: i32,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The WebApp kind, for dynamic reads and writes.
pub fn api_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "WebApp"))
}

/// The name of instance `i`.
pub fn name(i: usize) -> String {
    format!("app-{i:06}")
}

/// Instance `i`, as the driver creates it.
pub fn instance(i: usize, namespace: &str) -> DynamicObject {
    let mut webapp = DynamicObject::new(&name(i), &api_resource()).within(namespace);
    webapp.data = json!({"spec": {
        "image": format!("nginx:{i}"),
        "replicas": 0,
        "host": format!("{}.example.com", name(i)),
    }});
    webapp
}

/// The churn change: a new image, which the Deployment shows.
pub fn change(image: &str) -> serde_json::Value {
    json!({"spec": {"image": image}})
}

/// The image a WebApp asks for: what [`change`] sets.
pub fn changed_value(webapp: &DynamicObject) -> Option<&str> {
    webapp.data["spec"]["image"].as_str()
}

/// The WebApp a Deployment belongs to and the image it runs, when it is one of theirs.
pub fn shown(deployment: &DynamicObject) -> Option<(String, String)> {
    let owner = deployment.metadata.name.clone()?;
    let containers = &deployment.data["spec"]["template"]["spec"]["containers"];
    let image = containers[0]["image"].as_str()?;
    Some((owner, image.to_string()))
}

/// The labels of the pods of `name`'s Deployment, and the Service's selector.
fn selector(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("app.kubernetes.io/name".to_string(), name.to_string())])
}

fn meta(name: &str, namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        ..Default::default()
    }
}

/// The Deployment the definition's template gives a WebApp of this spec.
pub fn deployment(name: &str, namespace: &str, spec: &WebAppSpec) -> Deployment {
    let container = Container {
        name: "app".into(),
        image: Some(spec.image.clone()),
        ports: Some(vec![ContainerPort {
            container_port: spec.port.unwrap_or(8080),
            ..Default::default()
        }]),
        ..Default::default()
    };
    Deployment {
        metadata: meta(name, namespace),
        spec: DeploymentSpec {
            replicas: Some(spec.replicas.unwrap_or(1)),
            selector: LabelSelector {
                match_labels: Some(selector(name)),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(selector(name)),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The Service the definition's template gives a WebApp of this spec.
pub fn service(name: &str, namespace: &str, spec: &WebAppSpec) -> Service {
    Service {
        metadata: meta(name, namespace),
        spec: Some(ServiceSpec {
            selector: Some(selector(name)),
            ports: Some(vec![ServicePort {
                port: 80,
                target_port: Some(IntOrString::Int(spec.port.unwrap_or(8080))),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The Ingress the definition's template gives a WebApp with this host.
pub fn ingress(name: &str, namespace: &str, host: &str) -> Ingress {
    let backend = IngressBackend {
        service: Some(IngressServiceBackend {
            name: name.into(),
            port: Some(ServiceBackendPort {
                number: Some(80),
                ..Default::default()
            }),
        }),
        ..Default::default()
    };
    Ingress {
        metadata: meta(name, namespace),
        spec: Some(IngressSpec {
            rules: Some(vec![IngressRule {
                host: Some(host.into()),
                http: Some(HTTPIngressRuleValue {
                    paths: vec![HTTPIngressPath {
                        path: Some("/".into()),
                        path_type: "Prefix".into(),
                        backend,
                    }],
                }),
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}
