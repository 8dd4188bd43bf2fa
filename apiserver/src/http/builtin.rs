//! The Rust types of the built-in kinds: k8s-openapi for their schemas and JSON and, for
//! the kinds whose protobuf bodies are decoded, their k8s-pb message.

use std::sync::LazyLock;

use k8s_openapi::schemars::generate::SchemaSettings;
use k8s_openapi::schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value};

use super::protobuf::{DecodeError, object};

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

/// The component name of a type's schema, after adding it (and what it refers to).
fn add<T: JsonSchema>(generator: &mut SchemaGenerator) -> String {
    generator.subschema_for::<T>();
    T::schema_name().into_owned()
}

/// The schemas of every built-in kind, generated once.
static KIND_SCHEMAS: LazyLock<Vec<((&str, &str), Schemas)>> = LazyLock::new(|| {
    KINDS
        .iter()
        .filter_map(|&(api_version, kind)| {
            let schemas = generate(|g| add_schema(api_version, kind, g))?;
            Some(((api_version, kind), schemas))
        })
        .collect()
});

/// The schemas of a built-in kind; `None` for a kind that is not built in.
pub fn kind_schemas(api_version: &str, kind: &str) -> Option<&'static Schemas> {
    KIND_SCHEMAS
        .iter()
        .find(|(key, _)| *key == (api_version, kind))
        .map(|(_, schemas)| schemas)
}

/// Declares, once, every built-in kind's k8s-openapi type and k8s-pb message.
macro_rules! builtin_kinds {
    ($($api_version:literal $kind:literal => $oa:ty $(, $pb:ty)?;)*) => {
        /// Every built-in kind, as (apiVersion, kind).
        const KINDS: &[(&str, &str)] = &[$(($api_version, $kind)),*];

        /// Adds the schema of a built-in kind to a generator; its component name, or `None`
        /// for a kind that is not built in.
        fn add_schema(
            api_version: &str,
            kind: &str,
            generator: &mut SchemaGenerator,
        ) -> Option<String> {
            match (api_version, kind) {
                $(($api_version, $kind) => Some(add::<$oa>(generator)),)*
                _ => None,
            }
        }

        /// The JSON of a protobuf message of a built-in kind; `None` for a kind whose
        /// message is not decoded.
        pub fn decode_protobuf(
            api_version: &str,
            kind: &str,
            raw: &[u8],
        ) -> Option<Result<Value, DecodeError>> {
            match (api_version, kind) {
                $($(($api_version, $kind) => Some(object::<$pb, $oa>(raw)),)?)*
                _ => None,
            }
        }
    };
}

builtin_kinds! {
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
    "apiextensions.k8s.io/v1" "CustomResourceDefinition" =>
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    "admissionregistration.k8s.io/v1" "MutatingWebhookConfiguration" =>
        k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
    "admissionregistration.k8s.io/v1" "ValidatingWebhookConfiguration" =>
        k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
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
