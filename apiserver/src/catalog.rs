//! The built-in API of a Kubernetes 1.32 cluster: every group, version and resource it
//! serves by default, generated from k8s-openapi's types (group, version, kind, plural and
//! scope come from their `Resource` impls) plus what k8s-openapi does not know: short
//! names, categories, verbs, subresources, selectable fields and whether the registry
//! keeps `metadata.generation`.

use k8s_openapi::schemars::{JsonSchema, SchemaGenerator};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource};

/// Every verb of a stored kind.
pub const ALL: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// Every verb but `deletecollection` (namespaces).
const NO_COLLECTION_DELETE: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
/// Virtual kinds that are only created (reviews, bindings).
const CREATE: &[&str] = &["create"];
/// `get` and `list` only (componentstatuses).
const READ: &[&str] = &["get", "list"];

/// Verbs of a subresource that reads and writes part of its parent.
pub const GET_PATCH_UPDATE: &[&str] = &["get", "patch", "update"];

/// A subresource of a built-in kind, as discovery lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subresource {
    /// The name after the object's name, e.g. "eviction".
    pub name: &'static str,
    /// (group, version, kind) of its body; `None` for the parent's own kind.
    pub kind: Option<(&'static str, &'static str, &'static str)>,
    /// Its verbs.
    pub verbs: &'static [&'static str],
}

const fn sub(name: &'static str, verbs: &'static [&'static str]) -> Subresource {
    Subresource {
        name,
        kind: None,
        verbs,
    }
}

const fn sub_of(
    name: &'static str,
    kind: (&'static str, &'static str, &'static str),
    verbs: &'static [&'static str],
) -> Subresource {
    Subresource {
        name,
        kind: Some(kind),
        verbs,
    }
}

const CONNECT: &[&str] = &["create", "get"];
const PROXY: &[&str] = &["create", "delete", "get", "patch", "update"];

const POD_SUBRESOURCES: &[Subresource] = &[
    sub_of("attach", ("", "v1", "PodAttachOptions"), CONNECT),
    sub_of("binding", ("", "v1", "Binding"), CREATE),
    sub("ephemeralcontainers", GET_PATCH_UPDATE),
    sub_of("eviction", ("policy", "v1", "Eviction"), CREATE),
    sub_of("exec", ("", "v1", "PodExecOptions"), CONNECT),
    sub("log", &["get"]),
    sub_of("portforward", ("", "v1", "PodPortForwardOptions"), CONNECT),
    sub_of("proxy", ("", "v1", "PodProxyOptions"), PROXY),
];
const NODE_SUBRESOURCES: &[Subresource] = &[sub_of("proxy", ("", "v1", "NodeProxyOptions"), PROXY)];
const SERVICE_SUBRESOURCES: &[Subresource] =
    &[sub_of("proxy", ("", "v1", "ServiceProxyOptions"), PROXY)];
const NAMESPACE_SUBRESOURCES: &[Subresource] = &[sub("finalize", &["update"])];
const SERVICE_ACCOUNT_SUBRESOURCES: &[Subresource] = &[sub_of(
    "token",
    ("authentication.k8s.io", "v1", "TokenRequest"),
    CREATE,
)];
const CSR_SUBRESOURCES: &[Subresource] = &[sub("approval", GET_PATCH_UPDATE)];

/// One built-in kind at one group/version.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinKind {
    /// API group ("" for core).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Plural resource name.
    pub plural: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names for kubectl.
    pub short_names: &'static [&'static str],
    /// Categories, e.g. "all".
    pub categories: &'static [&'static str],
    /// Verbs of the kind's own endpoint.
    pub verbs: &'static [&'static str],
    /// Whether it has a `status` subresource.
    pub status: bool,
    /// Its other subresources.
    pub subresources: &'static [Subresource],
    /// Field paths accepted in field selectors besides metadata.name and metadata.namespace.
    pub selectable: &'static [&'static str],
    /// Whether its registry sets and increments `metadata.generation`.
    pub generation: bool,
}

/// The fields every entry starts from (the identity fields are always overwritten).
const DEFAULTS: BuiltinKind = BuiltinKind {
    group: "",
    version: "",
    kind: "",
    plural: "",
    namespaced: false,
    short_names: &[],
    categories: &[],
    verbs: ALL,
    status: false,
    subresources: &[],
    selectable: &[],
    generation: false,
};

/// Whether a k8s-openapi scope type is namespaced.
trait ScopeOf {
    const NAMESPACED: bool;
}

impl ScopeOf for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

impl ScopeOf for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

/// Adds a type's schema (and what it refers to) to a generator; its component name.
pub fn add<T: JsonSchema>(generator: &mut SchemaGenerator) -> String {
    generator.subschema_for::<T>();
    T::schema_name().into_owned()
}

/// Declares every built-in kind once: its k8s-openapi type and what that type does not say.
macro_rules! catalog {
    ($($ty:ty { $($field:ident: $value:expr),* $(,)? })*) => {
        /// Every kind a Kubernetes 1.32 cluster serves by default.
        pub const BUILTIN_KINDS: &[BuiltinKind] = &[$(BuiltinKind {
            group: <$ty as Resource>::GROUP,
            version: <$ty as Resource>::VERSION,
            kind: <$ty as Resource>::KIND,
            plural: <$ty as Resource>::URL_PATH_SEGMENT,
            namespaced: <<$ty as Resource>::Scope as ScopeOf>::NAMESPACED,
            $($field: $value,)*
            ..DEFAULTS
        }),*];

        /// Adds the schema of a built-in kind to a generator; its component name, or `None`
        /// for a kind that is not built in.
        pub fn add_schema(
            api_version: &str,
            kind: &str,
            generator: &mut SchemaGenerator,
        ) -> Option<String> {
            $(if api_version == <$ty as Resource>::API_VERSION && kind == <$ty as Resource>::KIND {
                return Some(add::<$ty>(generator));
            })*
            None
        }
    };
}

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

const EVENTS_V1_FIELDS: &[&str] = &[
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
];

const POD_FIELDS: &[&str] = &[
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
];

const API_EXTENSIONS: &[&str] = &["api-extensions"];
const ALL_CATEGORY: &[&str] = &["all"];

use k8s_openapi::api::{
    admissionregistration::v1 as admission, apps::v1 as apps, authentication::v1 as authn,
    authorization::v1 as authz, autoscaling, batch::v1 as batch, certificates::v1 as certificates,
    coordination::v1 as coordination, core::v1 as core, discovery::v1 as discovery,
    events::v1 as events, flowcontrol::v1 as flowcontrol, networking::v1 as networking,
    node::v1 as node, policy::v1 as policy, rbac::v1 as rbac, scheduling::v1 as scheduling,
    storage::v1 as storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;

catalog! {
    core::Binding { verbs: CREATE }
    core::ComponentStatus { short_names: &["cs"], verbs: READ }
    core::ConfigMap { short_names: &["cm"] }
    core::Endpoints { short_names: &["ep"] }
    core::Event { short_names: &["ev"], selectable: EVENT_FIELDS }
    core::LimitRange { short_names: &["limits"] }
    core::Namespace {
        short_names: &["ns"], verbs: NO_COLLECTION_DELETE, status: true,
        subresources: NAMESPACE_SUBRESOURCES, selectable: &["status.phase"],
    }
    core::Node {
        short_names: &["no"], status: true, subresources: NODE_SUBRESOURCES,
        selectable: &["spec.unschedulable"],
    }
    core::PersistentVolumeClaim { short_names: &["pvc"], status: true }
    core::PersistentVolume { short_names: &["pv"], status: true }
    core::Pod {
        short_names: &["po"], categories: ALL_CATEGORY, status: true,
        subresources: POD_SUBRESOURCES, selectable: POD_FIELDS,
    }
    core::PodTemplate {}
    core::ReplicationController {
        short_names: &["rc"], categories: ALL_CATEGORY, status: true, generation: true,
        selectable: &["status.replicas"],
    }
    core::ResourceQuota { short_names: &["quota"], status: true }
    core::Secret { selectable: &["type"] }
    core::ServiceAccount { short_names: &["sa"], subresources: SERVICE_ACCOUNT_SUBRESOURCES }
    core::Service {
        short_names: &["svc"], categories: ALL_CATEGORY, status: true,
        subresources: SERVICE_SUBRESOURCES, selectable: &["spec.clusterIP", "spec.type"],
    }
    admission::MutatingWebhookConfiguration { categories: API_EXTENSIONS, generation: true }
    admission::ValidatingAdmissionPolicy {
        categories: API_EXTENSIONS, status: true, generation: true,
    }
    admission::ValidatingAdmissionPolicyBinding { categories: API_EXTENSIONS, generation: true }
    admission::ValidatingWebhookConfiguration { categories: API_EXTENSIONS, generation: true }
    apiextensions::CustomResourceDefinition {
        short_names: &["crd", "crds"], categories: API_EXTENSIONS, status: true, generation: true,
    }
    apiregistration::APIService { categories: API_EXTENSIONS, status: true }
    apps::ControllerRevision {}
    apps::DaemonSet {
        short_names: &["ds"], categories: ALL_CATEGORY, status: true, generation: true,
    }
    apps::Deployment {
        short_names: &["deploy"], categories: ALL_CATEGORY, status: true, generation: true,
    }
    apps::ReplicaSet {
        short_names: &["rs"], categories: ALL_CATEGORY, status: true, generation: true,
        selectable: &["status.replicas"],
    }
    apps::StatefulSet {
        short_names: &["sts"], categories: ALL_CATEGORY, status: true, generation: true,
    }
    authn::SelfSubjectReview { verbs: CREATE }
    authn::TokenReview { verbs: CREATE }
    authz::LocalSubjectAccessReview { verbs: CREATE }
    authz::SelfSubjectAccessReview { verbs: CREATE }
    authz::SelfSubjectRulesReview { verbs: CREATE }
    authz::SubjectAccessReview { verbs: CREATE }
    autoscaling::v1::HorizontalPodAutoscaler {
        short_names: &["hpa"], categories: ALL_CATEGORY, status: true, generation: true,
    }
    autoscaling::v2::HorizontalPodAutoscaler {
        short_names: &["hpa"], categories: ALL_CATEGORY, status: true, generation: true,
    }
    batch::CronJob { short_names: &["cj"], categories: ALL_CATEGORY, status: true, generation: true }
    batch::Job {
        categories: ALL_CATEGORY, status: true, generation: true,
        selectable: &["status.successful"],
    }
    certificates::CertificateSigningRequest {
        short_names: &["csr"], status: true, subresources: CSR_SUBRESOURCES,
        selectable: &["spec.signerName"],
    }
    coordination::Lease {}
    discovery::EndpointSlice { generation: true }
    events::Event { short_names: &["ev"], selectable: EVENTS_V1_FIELDS }
    flowcontrol::FlowSchema { status: true, generation: true }
    flowcontrol::PriorityLevelConfiguration { status: true, generation: true }
    networking::IngressClass { generation: true }
    networking::Ingress { short_names: &["ing"], status: true, generation: true }
    networking::NetworkPolicy { short_names: &["netpol"], generation: true }
    node::RuntimeClass {}
    policy::PodDisruptionBudget { short_names: &["pdb"], status: true, generation: true }
    rbac::ClusterRoleBinding {}
    rbac::ClusterRole {}
    rbac::RoleBinding {}
    rbac::Role {}
    scheduling::PriorityClass { short_names: &["pc"] }
    storage::CSIDriver {}
    storage::CSINode {}
    storage::CSIStorageCapacity {}
    storage::StorageClass { short_names: &["sc"] }
    storage::VolumeAttachment { status: true }
}

/// Whether a built-in kind is virtual: created to get an answer, never stored.
pub fn is_virtual(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        ("", "bindings")
            | (
                "authentication.k8s.io",
                "tokenreviews" | "selfsubjectreviews"
            )
            | (
                "authorization.k8s.io",
                "subjectaccessreviews"
                    | "selfsubjectaccessreviews"
                    | "localsubjectaccessreviews"
                    | "selfsubjectrulesreviews"
            )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_come_from_k8s_openapi() {
        let hpa = BUILTIN_KINDS
            .iter()
            .find(|k| k.plural == "horizontalpodautoscalers" && k.version == "v2")
            .unwrap();
        assert_eq!(
            (hpa.group, hpa.kind, hpa.namespaced),
            ("autoscaling", "HorizontalPodAutoscaler", true)
        );
        let nodes = BUILTIN_KINDS.iter().find(|k| k.plural == "nodes").unwrap();
        assert!(!nodes.namespaced);
    }
}
