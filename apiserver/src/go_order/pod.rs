//! `core/v1` Pod structs in Go struct order (k8s.io/api/core/v1/types.go, 1.32).

use super::meta::{CONDITION, OBJECT_META};
use crate::json_order::Shape;

static CONTAINER_PORT: Shape = Shape {
    fields: &[
        ("name", None),
        ("hostPort", None),
        ("containerPort", None),
        ("protocol", None),
        ("hostIP", None),
    ],
};

static ENV_VAR: Shape = Shape {
    fields: &[("name", None), ("value", None), ("valueFrom", None)],
};

static RESOURCES: Shape = Shape {
    fields: &[("limits", None), ("requests", None), ("claims", None)],
};

static VOLUME_MOUNT: Shape = Shape {
    fields: &[
        ("name", None),
        ("readOnly", None),
        ("recursiveReadOnly", None),
        ("mountPath", None),
        ("subPath", None),
        ("mountPropagation", None),
        ("subPathExpr", None),
    ],
};

static PROBE: Shape = Shape {
    fields: &[
        ("exec", None),
        ("httpGet", None),
        ("tcpSocket", None),
        ("grpc", None),
        ("initialDelaySeconds", None),
        ("timeoutSeconds", None),
        ("periodSeconds", None),
        ("successThreshold", None),
        ("failureThreshold", None),
        ("terminationGracePeriodSeconds", None),
    ],
};

static CONTAINER: Shape = Shape {
    fields: &[
        ("name", None),
        ("image", None),
        ("command", None),
        ("args", None),
        ("workingDir", None),
        ("ports", Some(&CONTAINER_PORT)),
        ("envFrom", None),
        ("env", Some(&ENV_VAR)),
        ("resources", Some(&RESOURCES)),
        ("resizePolicy", None),
        ("restartPolicy", None),
        ("volumeMounts", Some(&VOLUME_MOUNT)),
        ("volumeDevices", None),
        ("livenessProbe", Some(&PROBE)),
        ("readinessProbe", Some(&PROBE)),
        ("startupProbe", Some(&PROBE)),
        ("lifecycle", None),
        ("terminationMessagePath", None),
        ("terminationMessagePolicy", None),
        ("imagePullPolicy", None),
        ("securityContext", None),
        ("stdin", None),
        ("stdinOnce", None),
        ("tty", None),
    ],
};

static TOLERATION: Shape = Shape {
    fields: &[
        ("key", None),
        ("operator", None),
        ("value", None),
        ("effect", None),
        ("tolerationSeconds", None),
    ],
};

/// `PodSpec`.
static POD_SPEC: Shape = Shape {
    fields: &[
        ("volumes", None),
        ("initContainers", Some(&CONTAINER)),
        ("containers", Some(&CONTAINER)),
        ("ephemeralContainers", None),
        ("restartPolicy", None),
        ("terminationGracePeriodSeconds", None),
        ("activeDeadlineSeconds", None),
        ("dnsPolicy", None),
        ("nodeSelector", None),
        ("serviceAccountName", None),
        ("serviceAccount", None),
        ("automountServiceAccountToken", None),
        ("nodeName", None),
        ("hostNetwork", None),
        ("hostPID", None),
        ("hostIPC", None),
        ("shareProcessNamespace", None),
        ("securityContext", None),
        ("imagePullSecrets", None),
        ("hostname", None),
        ("subdomain", None),
        ("affinity", None),
        ("schedulerName", None),
        ("tolerations", Some(&TOLERATION)),
        ("hostAliases", None),
        ("priorityClassName", None),
        ("priority", None),
        ("dnsConfig", None),
        ("readinessGates", None),
        ("runtimeClassName", None),
        ("enableServiceLinks", None),
        ("preemptionPolicy", None),
        ("overhead", None),
        ("topologySpreadConstraints", None),
        ("setHostnameAsFQDN", None),
        ("os", None),
        ("hostUsers", None),
        ("schedulingGates", None),
        ("resourceClaims", None),
        ("resources", Some(&RESOURCES)),
    ],
};

/// `PodStatus`.
static POD_STATUS: Shape = Shape {
    fields: &[
        ("observedGeneration", None),
        ("phase", None),
        ("conditions", Some(&CONDITION)),
        ("message", None),
        ("reason", None),
        ("nominatedNodeName", None),
        ("hostIP", None),
        ("hostIPs", None),
        ("podIP", None),
        ("podIPs", None),
        ("startTime", None),
        ("initContainerStatuses", None),
        ("containerStatuses", None),
        ("qosClass", None),
        ("ephemeralContainerStatuses", None),
        ("resize", None),
        ("resourceClaimStatuses", None),
    ],
};

spec_and_status!(
    /// `Pod`.
    POD,
    Some(&POD_SPEC),
    Some(&POD_STATUS)
);

/// `PodTemplateSpec`, inside workloads.
pub static POD_TEMPLATE_SPEC: Shape = Shape {
    fields: &[("metadata", Some(&OBJECT_META)), ("spec", Some(&POD_SPEC))],
};
