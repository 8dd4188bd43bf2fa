//! The Rust types of the built-in kinds: k8s-openapi for their schemas and JSON and, for
//! the kinds whose protobuf bodies are decoded, their k8s-pb message.

use std::sync::LazyLock;

use k8s_openapi::schemars::SchemaGenerator;
use k8s_openapi::schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use super::protobuf::convert::{DecodeError, object};
use crate::catalog::{BUILTIN_KINDS, add, add_schema};

/// The OpenAPI v3 schema of a type: its component name and every component it needs.
pub struct Schemas {
    /// The component name of the type itself.
    pub name: String,
    /// The components, the type's own included.
    pub components: Map<String, Value>,
}

/// Generates the schemas of one type.
fn generate(add: impl FnOnce(&mut SchemaGenerator) -> Option<String>) -> Option<Schemas> {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let name = add(&mut generator)?;
    Some(Schemas {
        name,
        components: generator.take_definitions(true),
    })
}

/// The schemas of every built-in kind, generated once, by (apiVersion, kind).
static KIND_SCHEMAS: LazyLock<Vec<((String, &str), Schemas)>> = LazyLock::new(|| {
    BUILTIN_KINDS
        .iter()
        .filter_map(|builtin| {
            let api_version = if builtin.group.is_empty() {
                builtin.version.to_string()
            } else {
                format!("{}/{}", builtin.group, builtin.version)
            };
            let schemas = generate(|g| add_schema(&api_version, builtin.kind, g))?;
            Some(((api_version, builtin.kind), schemas))
        })
        .collect()
});

/// The schemas of a built-in kind; `None` for a kind that is not built in.
pub fn kind_schemas(api_version: &str, kind: &str) -> Option<&'static Schemas> {
    KIND_SCHEMAS
        .iter()
        .find(|((v, k), _)| v == api_version && *k == kind)
        .map(|(_, schemas)| schemas)
}

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

/// The schemas every document refers to: ObjectMeta, ListMeta, Status and Patch.
pub fn meta_schemas() -> &'static Map<String, Value> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
    static META: LazyLock<Map<String, Value>> = LazyLock::new(|| {
        let mut generator = SchemaSettings::openapi3().into_generator();
        add::<meta::ObjectMeta>(&mut generator);
        add::<meta::ListMeta>(&mut generator);
        add::<meta::Status>(&mut generator);
        add::<meta::Patch>(&mut generator);
        generator.take_definitions(true)
    });
    &META
}
