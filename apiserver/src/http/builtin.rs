//! The k8s-pb messages of the built-in kinds whose protobuf bodies are decoded, beside
//! their k8s-openapi types.

use serde_json::Value;

use super::protobuf::convert::{DecodeError, object};

/// Declares, once, the built-in kinds whose protobuf bodies are decoded: their
/// k8s-openapi type and k8s-pb message.
macro_rules! protobuf_kinds {
    ($($api_version:literal $kind:literal => $oa:ty, $pb:ty;)*) => {
        /// The JSON of a protobuf message of a built-in kind; `None` for a kind whose
        /// message is not decoded.
        pub fn decode_protobuf(
            api_version: &str,
            kind: &str,
            raw: &[u8],
        ) -> Option<Result<Value, DecodeError>> {
            match (api_version, kind) {
                $(($api_version, $kind) => Some(object::<$pb, $oa>(raw)),)*
                _ => None,
            }
        }
    };
}

protobuf_kinds! {
    "v1" "Namespace" => k8s_openapi::api::core::v1::Namespace, k8s_pb::api::core::v1::Namespace;
    "v1" "ConfigMap" => k8s_openapi::api::core::v1::ConfigMap, k8s_pb::api::core::v1::ConfigMap;
    "v1" "Secret" => k8s_openapi::api::core::v1::Secret, k8s_pb::api::core::v1::Secret;
    "v1" "ServiceAccount" => k8s_openapi::api::core::v1::ServiceAccount, k8s_pb::api::core::v1::ServiceAccount;
    "v1" "Service" => k8s_openapi::api::core::v1::Service, k8s_pb::api::core::v1::Service;
    "v1" "Pod" => k8s_openapi::api::core::v1::Pod, k8s_pb::api::core::v1::Pod;
    "v1" "Event" => k8s_openapi::api::core::v1::Event, k8s_pb::api::core::v1::Event;
    "apps/v1" "Deployment" => k8s_openapi::api::apps::v1::Deployment, k8s_pb::api::apps::v1::Deployment;
    "apps/v1" "StatefulSet" => k8s_openapi::api::apps::v1::StatefulSet, k8s_pb::api::apps::v1::StatefulSet;
    "apps/v1" "DaemonSet" => k8s_openapi::api::apps::v1::DaemonSet, k8s_pb::api::apps::v1::DaemonSet;
    "apps/v1" "ReplicaSet" => k8s_openapi::api::apps::v1::ReplicaSet, k8s_pb::api::apps::v1::ReplicaSet;
    "batch/v1" "Job" => k8s_openapi::api::batch::v1::Job, k8s_pb::api::batch::v1::Job;
    "batch/v1" "CronJob" => k8s_openapi::api::batch::v1::CronJob, k8s_pb::api::batch::v1::CronJob;
    "autoscaling/v1" "HorizontalPodAutoscaler" => k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler, k8s_pb::api::autoscaling::v1::HorizontalPodAutoscaler;
    "coordination.k8s.io/v1" "Lease" => k8s_openapi::api::coordination::v1::Lease, k8s_pb::api::coordination::v1::Lease;
    "events.k8s.io/v1" "Event" => k8s_openapi::api::events::v1::Event, k8s_pb::api::events::v1::Event;
    "v1" "Binding" => k8s_openapi::api::core::v1::Binding, k8s_pb::api::core::v1::Binding;
    "rbac.authorization.k8s.io/v1" "Role" =>
        k8s_openapi::api::rbac::v1::Role, k8s_pb::api::rbac::v1::Role;
    "rbac.authorization.k8s.io/v1" "ClusterRole" =>
        k8s_openapi::api::rbac::v1::ClusterRole, k8s_pb::api::rbac::v1::ClusterRole;
    "rbac.authorization.k8s.io/v1" "RoleBinding" =>
        k8s_openapi::api::rbac::v1::RoleBinding, k8s_pb::api::rbac::v1::RoleBinding;
    "rbac.authorization.k8s.io/v1" "ClusterRoleBinding" =>
        k8s_openapi::api::rbac::v1::ClusterRoleBinding, k8s_pb::api::rbac::v1::ClusterRoleBinding;
    "policy/v1" "Eviction" => k8s_openapi::api::policy::v1::Eviction, k8s_pb::api::policy::v1::Eviction;
    "authentication.k8s.io/v1" "TokenRequest" =>
        k8s_openapi::api::authentication::v1::TokenRequest, k8s_pb::api::authentication::v1::TokenRequest;
    "authentication.k8s.io/v1" "TokenReview" =>
        k8s_openapi::api::authentication::v1::TokenReview, k8s_pb::api::authentication::v1::TokenReview;
    "authentication.k8s.io/v1" "SelfSubjectReview" =>
        k8s_openapi::api::authentication::v1::SelfSubjectReview, k8s_pb::api::authentication::v1::SelfSubjectReview;
    "authorization.k8s.io/v1" "SubjectAccessReview" =>
        k8s_openapi::api::authorization::v1::SubjectAccessReview, k8s_pb::api::authorization::v1::SubjectAccessReview;
    "authorization.k8s.io/v1" "SelfSubjectAccessReview" =>
        k8s_openapi::api::authorization::v1::SelfSubjectAccessReview, k8s_pb::api::authorization::v1::SelfSubjectAccessReview;
    "authorization.k8s.io/v1" "LocalSubjectAccessReview" =>
        k8s_openapi::api::authorization::v1::LocalSubjectAccessReview, k8s_pb::api::authorization::v1::LocalSubjectAccessReview;
    "authorization.k8s.io/v1" "SelfSubjectRulesReview" =>
        k8s_openapi::api::authorization::v1::SelfSubjectRulesReview, k8s_pb::api::authorization::v1::SelfSubjectRulesReview;
}
