//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`) of built-in kinds: the
//! `k8s\0` envelope, the `runtime.Unknown` in it, then the kind's message (k8s-pb), turned
//! into the JSON object a JSON request would carry (through k8s-openapi).

pub(super) mod convert;
mod messages;

use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::Value;

use super::builtin;
use crate::error::{ApiError, ApiResult};

/// The media type of Kubernetes protobuf bodies.
const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The four bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

/// Whether a `Content-Type` names a Kubernetes protobuf body.
pub fn is_protobuf(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|c| c.split(';').next())
        .is_some_and(|media| media.trim() == MEDIA_TYPE)
}

/// Decodes a protobuf body into the JSON object of its kind; 415 for a kind whose message
/// this server does not decode.
pub fn decode(body: &[u8]) -> ApiResult<Value> {
    let envelope = body.strip_prefix(MAGIC).ok_or_else(|| {
        ApiError::bad_request(
            "the protobuf body does not start with the Kubernetes magic \"k8s\\0\"",
        )
    })?;
    let unknown = Unknown::decode(envelope).map_err(|e| {
        ApiError::bad_request(format!("the protobuf body is not a runtime.Unknown: {e}"))
    })?;
    if let Some(encoding) = unknown
        .content_encoding
        .as_deref()
        .filter(|e| !e.is_empty())
    {
        return Err(unsupported(format!(
            "protobuf bodies with content encoding {encoding:?} are not supported"
        )));
    }
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    let Some(converted) = builtin::decode_protobuf(&api_version, &kind, &raw) else {
        return Err(unsupported(format!(
            "protobuf bodies of kind {kind:?} ({api_version}) are not supported by this server; send application/json"
        )));
    };
    converted.map_err(|e| {
        ApiError::bad_request(format!(
            "the protobuf body is not a valid {kind} ({api_version}): {e}"
        ))
    })
}

fn unsupported(message: String) -> ApiError {
    ApiError {
        code: 415,
        reason: "UnsupportedMediaType".into(),
        message,
        details: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::api::core::v1 as pb_core;
    use k8s_pb::api::{apps::v1 as pb_apps, coordination::v1 as pb_coordination};
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
    use k8s_pb::apimachinery::pkg::runtime::TypeMeta;
    use k8s_pb::apimachinery::pkg::util::intstr as pb_intstr;

    /// A body as client-go writes it: magic, then `runtime.Unknown` around the message.
    fn body(api_version: &str, kind: &str, message: &impl Message) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(message.encode_to_vec()),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        [MAGIC, &unknown.encode_to_vec()].concat()
    }

    fn meta(name: &str) -> Option<pb_meta::ObjectMeta> {
        Some(pb_meta::ObjectMeta {
            name: Some(name.into()),
            generate_name: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(pb_meta::Time::default()),
            ..Default::default()
        })
    }

    #[test]
    fn a_secret_decodes_to_the_json_kubectl_would_send() {
        let secret = pb_core::Secret {
            metadata: meta("creds"),
            data: [("password".to_string(), b"s3cr3t".to_vec())].into(),
            r#type: Some("Opaque".into()),
            ..Default::default()
        };
        let json = decode(&body("v1", "Secret", &secret)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "creds"},
                "data": {"password": "czNjcjN0"},
                "type": "Opaque",
            })
        );
    }

    #[test]
    fn a_v1_autoscaler_decodes_as_kubectl_autoscale_sends_it() {
        use k8s_pb::api::autoscaling::v1 as pb_autoscaling;
        let hpa = pb_autoscaling::HorizontalPodAutoscaler {
            metadata: meta("web"),
            spec: Some(pb_autoscaling::HorizontalPodAutoscalerSpec {
                scale_target_ref: Some(pb_autoscaling::CrossVersionObjectReference {
                    kind: Some("Deployment".into()),
                    name: Some("web".into()),
                    api_version: Some("apps/v1".into()),
                }),
                min_replicas: Some(2),
                max_replicas: Some(5),
                target_cpu_utilization_percentage: Some(50),
            }),
            status: Some(Default::default()),
        };
        let json = decode(&body("autoscaling/v1", "HorizontalPodAutoscaler", &hpa)).unwrap();
        assert_eq!(
            json["spec"],
            serde_json::json!({
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50,
            })
        );
    }

    #[test]
    fn a_deployment_keeps_required_fields_and_drops_zero_values() {
        let container = pb_core::Container {
            name: Some("nginx".into()),
            image: Some("nginx".into()),
            resources: Some(Default::default()),
            stdin: Some(false),
            ..Default::default()
        };
        let deployment = pb_apps::Deployment {
            metadata: meta("web"),
            spec: Some(pb_apps::DeploymentSpec {
                replicas: Some(2),
                template: Some(pb_core::PodTemplateSpec {
                    metadata: meta(""),
                    spec: Some(pb_core::PodSpec {
                        containers: vec![container],
                        ..Default::default()
                    }),
                }),
                strategy: Some(Default::default()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let json = decode(&body("apps/v1", "Deployment", &deployment)).unwrap();
        assert_eq!(json["spec"]["replicas"], 2);
        assert_eq!(
            json["spec"]["template"]["spec"]["containers"],
            serde_json::json!([{"name": "nginx", "image": "nginx", "resources": {}}])
        );
        assert_eq!(json["spec"]["strategy"], serde_json::json!({}));
        assert_eq!(json["spec"]["selector"], serde_json::json!({}));
    }

    #[test]
    fn a_present_zero_in_a_go_pointer_field_is_a_zero() {
        let deployment = pb_apps::Deployment {
            metadata: meta("zero"),
            spec: Some(pb_apps::DeploymentSpec {
                replicas: Some(0),
                min_ready_seconds: Some(0),
                paused: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        };
        let json = decode(&body("apps/v1", "Deployment", &deployment)).unwrap();
        assert_eq!(
            json["spec"]["replicas"], 0,
            "replicas is *int32: sent only when set"
        );
        assert!(
            json["spec"].get("minReadySeconds").is_none() && json["spec"].get("paused").is_none(),
            "non-pointer omitempty fields are always sent, so their zero is unset: {json}"
        );
        let unset = pb_apps::Deployment {
            metadata: meta("unset"),
            spec: Some(pb_apps::DeploymentSpec::default()),
            ..Default::default()
        };
        let json = decode(&body("apps/v1", "Deployment", &unset)).unwrap();
        assert!(json["spec"].get("replicas").is_none(), "{json}");
    }

    #[test]
    fn a_service_port_reads_its_target_port_as_int_or_string() {
        let port = |target: pb_intstr::IntOrString| pb_core::ServicePort {
            port: Some(80),
            target_port: Some(target),
            node_port: Some(0),
            protocol: Some("TCP".into()),
            ..Default::default()
        };
        let named = pb_intstr::IntOrString {
            r#type: Some(1),
            int_val: Some(0),
            str_val: Some("http".into()),
        };
        let numbered = pb_intstr::IntOrString {
            r#type: Some(0),
            int_val: Some(8080),
            str_val: Some(String::new()),
        };
        let service = pb_core::Service {
            metadata: meta("web"),
            spec: Some(pb_core::ServiceSpec {
                ports: vec![port(named), port(numbered)],
                ..Default::default()
            }),
            ..Default::default()
        };
        let json = decode(&body("v1", "Service", &service)).unwrap();
        assert_eq!(
            json["spec"]["ports"],
            serde_json::json!([
                {"port": 80, "protocol": "TCP", "targetPort": "http"},
                {"port": 80, "protocol": "TCP", "targetPort": 8080},
            ])
        );
    }

    #[test]
    fn unknown_kinds_broken_bodies_and_missing_magic_are_refused() {
        let lease = pb_coordination::Lease::default();
        let other = decode(&body("networking.k8s.io/v1", "Ingress", &lease)).unwrap_err();
        assert_eq!(other.code, 415);
        assert!(other.message.contains("Ingress"), "{}", other.message);
        assert_eq!(decode(b"{\"kind\":\"Secret\"}").unwrap_err().code, 400);
        let mut broken = body("v1", "ConfigMap", &pb_core::ConfigMap::default());
        broken.extend_from_slice(&[0xff, 0xff]);
        assert_eq!(decode(&broken).unwrap_err().code, 400);
    }
}
