//! The built-in kinds kubectl users look at most, in Go struct order: ConfigMap, Secret,
//! Namespace, Service and Deployment (Pod in [`super::pod`]), and their lists.

use super::meta::{CONDITION, LABEL_SELECTOR, OBJECT_META};
use super::pod::POD_TEMPLATE_SPEC;
use crate::json_order::Shape;

/// `ConfigMap`.
pub static CONFIG_MAP: Shape = Shape {
    fields: &[
        ("kind", None),
        ("apiVersion", None),
        ("metadata", Some(&OBJECT_META)),
        ("immutable", None),
        ("data", None),
        ("binaryData", None),
    ],
};

/// `Secret`.
pub static SECRET: Shape = Shape {
    fields: &[
        ("kind", None),
        ("apiVersion", None),
        ("metadata", Some(&OBJECT_META)),
        ("immutable", None),
        ("data", None),
        ("stringData", None),
        ("type", None),
    ],
};

static NAMESPACE_STATUS: Shape = Shape {
    fields: &[("phase", None), ("conditions", Some(&CONDITION))],
};

spec_and_status!(
    /// `Namespace`.
    NAMESPACE,
    None,
    Some(&NAMESPACE_STATUS)
);

static SERVICE_PORT: Shape = Shape {
    fields: &[
        ("name", None),
        ("protocol", None),
        ("appProtocol", None),
        ("port", None),
        ("targetPort", None),
        ("nodePort", None),
    ],
};

static SERVICE_SPEC: Shape = Shape {
    fields: &[
        ("ports", Some(&SERVICE_PORT)),
        ("selector", None),
        ("clusterIP", None),
        ("clusterIPs", None),
        ("type", None),
        ("externalIPs", None),
        ("sessionAffinity", None),
        ("loadBalancerIP", None),
        ("loadBalancerSourceRanges", None),
        ("externalName", None),
        ("externalTrafficPolicy", None),
        ("healthCheckNodePort", None),
        ("publishNotReadyAddresses", None),
        ("sessionAffinityConfig", None),
        ("ipFamilies", None),
        ("ipFamilyPolicy", None),
        ("allocateLoadBalancerNodePorts", None),
        ("loadBalancerClass", None),
        ("internalTrafficPolicy", None),
        ("trafficDistribution", None),
    ],
};

static SERVICE_STATUS: Shape = Shape {
    fields: &[("loadBalancer", None), ("conditions", Some(&CONDITION))],
};

spec_and_status!(
    /// `Service`.
    SERVICE,
    Some(&SERVICE_SPEC),
    Some(&SERVICE_STATUS)
);

static ROLLING_UPDATE: Shape = Shape {
    fields: &[("maxUnavailable", None), ("maxSurge", None)],
};

static DEPLOYMENT_STRATEGY: Shape = Shape {
    fields: &[("type", None), ("rollingUpdate", Some(&ROLLING_UPDATE))],
};

static DEPLOYMENT_SPEC: Shape = Shape {
    fields: &[
        ("replicas", None),
        ("selector", Some(&LABEL_SELECTOR)),
        ("template", Some(&POD_TEMPLATE_SPEC)),
        ("strategy", Some(&DEPLOYMENT_STRATEGY)),
        ("minReadySeconds", None),
        ("revisionHistoryLimit", None),
        ("paused", None),
        ("progressDeadlineSeconds", None),
    ],
};

static DEPLOYMENT_STATUS: Shape = Shape {
    fields: &[
        ("observedGeneration", None),
        ("replicas", None),
        ("updatedReplicas", None),
        ("readyReplicas", None),
        ("availableReplicas", None),
        ("unavailableReplicas", None),
        ("terminatingReplicas", None),
        ("conditions", Some(&CONDITION)),
        ("collisionCount", None),
    ],
};

spec_and_status!(
    /// `Deployment`.
    DEPLOYMENT,
    Some(&DEPLOYMENT_SPEC),
    Some(&DEPLOYMENT_STATUS)
);
