//! The merge schemas of built-in kinds, with the list keys and map types of their Go types.

use std::collections::BTreeMap;

use serde_json::Value;

use super::schema::{KeyField, ListKind, ListNode, MergeSchema, Node, ObjectNode};

/// A struct with these declared fields (other keys are declared fields of unknown shape).
fn object(fields: Vec<(&str, Node)>) -> Node {
    Node::Object(ObjectNode {
        fields: fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        ..ObjectNode::default()
    })
}

/// A Go value struct: present even when empty.
fn zero(node: Node) -> Node {
    match node {
        Node::Object(object) => Node::Object(ObjectNode {
            zero: true,
            ..object
        }),
        Node::List(list) => Node::List(ListNode { zero: true, ..list }),
        other => other,
    }
}

/// A struct or map replaced whole (`+structType=atomic`, `+mapType=atomic`).
fn atomic_object() -> Node {
    Node::Object(ObjectNode {
        atomic: true,
        ..ObjectNode::default()
    })
}

/// A `map[string]string`-like map whose entries are owned one by one.
fn string_map() -> Node {
    Node::Object(ObjectNode {
        other: Some(Box::new(Node::Leaf)),
        ..ObjectNode::default()
    })
}

/// A list keyed by `keys` (the first is the strategic-merge-patch key).
fn keyed(keys: &[&str], item: Node) -> Node {
    keyed_with_defaults(keys.iter().map(|k| (*k, None)).collect(), item)
}

/// A keyed list whose key fields may have schema defaults.
fn keyed_with_defaults(keys: Vec<(&str, Option<Value>)>, item: Node) -> Node {
    let smp_key = keys.first().map(|(k, _)| k.to_string());
    let keys = keys
        .into_iter()
        .map(|(name, default)| KeyField {
            name: name.to_string(),
            default,
        })
        .collect();
    Node::List(ListNode {
        kind: ListKind::Map(keys),
        item: Box::new(item),
        zero: false,
        smp_merge: true,
        smp_key,
    })
}

/// Ports keyed by (`port`, `protocol` defaulting to TCP), merged by `port` in patches.
fn ports(port: &str) -> Node {
    keyed_with_defaults(
        vec![(port, None), ("protocol", Some(Value::from("TCP")))],
        object(vec![]),
    )
}

/// An atomic list that strategic merge patch still merges by `key`.
fn atomic_merged_by(key: &str) -> Node {
    Node::List(ListNode {
        kind: ListKind::Atomic,
        item: Box::new(Node::Inferred),
        zero: false,
        smp_merge: true,
        smp_key: Some(key.to_string()),
    })
}

/// A set of scalars that strategic merge patch merges.
fn set() -> Node {
    Node::List(ListNode {
        kind: ListKind::Set,
        item: Box::new(Node::Leaf),
        zero: false,
        smp_merge: true,
        smp_key: None,
    })
}

/// `status.conditions`, keyed by `type`.
fn conditions() -> Node {
    keyed(&["type"], object(vec![]))
}

/// `ObjectMeta`, the same for every kind.
pub(super) fn metadata() -> Node {
    zero(object(vec![
        ("labels", string_map()),
        ("annotations", string_map()),
        ("finalizers", set()),
        ("ownerReferences", keyed(&["uid"], object(vec![]))),
        ("managedFields", Node::Leaf),
    ]))
}

fn container() -> Node {
    object(vec![
        ("ports", ports("containerPort")),
        ("env", keyed(&["name"], object(vec![]))),
        ("volumeMounts", keyed(&["mountPath"], object(vec![]))),
        ("volumeDevices", keyed(&["devicePath"], object(vec![]))),
        ("resizePolicy", keyed(&["resourceName"], object(vec![]))),
        (
            "resources",
            zero(object(vec![
                ("limits", string_map()),
                ("requests", string_map()),
                ("claims", keyed(&["name"], object(vec![]))),
            ])),
        ),
    ])
}

fn pod_spec() -> Node {
    let containers = || keyed(&["name"], container());
    zero(object(vec![
        ("containers", zero(containers())),
        ("initContainers", containers()),
        ("ephemeralContainers", containers()),
        ("volumes", keyed(&["name"], object(vec![]))),
        ("imagePullSecrets", keyed(&["name"], object(vec![]))),
        ("hostAliases", keyed(&["ip"], object(vec![]))),
        (
            "topologySpreadConstraints",
            keyed(&["topologyKey", "whenUnsatisfiable"], object(vec![])),
        ),
        ("schedulingGates", keyed(&["name"], object(vec![]))),
        ("resourceClaims", keyed(&["name"], object(vec![]))),
        ("nodeSelector", atomic_object()),
        ("overhead", string_map()),
    ]))
}

fn pod_template() -> Node {
    zero(object(vec![("metadata", metadata()), ("spec", pod_spec())]))
}

fn pod_status() -> Node {
    zero(object(vec![
        ("conditions", conditions()),
        ("podIPs", keyed(&["ip"], object(vec![]))),
        ("hostIPs", keyed(&["ip"], object(vec![]))),
    ]))
}

/// The `spec` of a workload with a selector and a pod template, plus extra fields.
fn workload_spec(extra: Vec<(&str, Node)>) -> Node {
    let mut fields = vec![("selector", atomic_object()), ("template", pod_template())];
    fields.extend(extra);
    zero(object(fields))
}

fn job_spec() -> Node {
    workload_spec(vec![])
}

/// The `spec` and `status` fields of a built-in kind.
fn kind_fields(group: &str, kind: &str) -> Vec<(&'static str, Node)> {
    let status = || zero(object(vec![("conditions", conditions())]));
    match (group, kind) {
        ("apps", "Deployment") => vec![
            (
                "spec",
                workload_spec(vec![(
                    "strategy",
                    zero(object(vec![("rollingUpdate", object(vec![]))])),
                )]),
            ),
            ("status", status()),
        ],
        ("apps", "StatefulSet") | ("apps", "DaemonSet") => vec![
            (
                "spec",
                workload_spec(vec![("updateStrategy", zero(object(vec![])))]),
            ),
            ("status", status()),
        ],
        ("apps", "ReplicaSet") | ("", "ReplicationController") => {
            vec![("spec", workload_spec(vec![])), ("status", status())]
        }
        ("batch", "Job") => vec![
            ("spec", job_spec()),
            (
                "status",
                zero(object(vec![("conditions", atomic_merged_by("type"))])),
            ),
        ],
        ("batch", "CronJob") => vec![(
            "spec",
            zero(object(vec![(
                "jobTemplate",
                zero(object(vec![("metadata", metadata()), ("spec", job_spec())])),
            )])),
        )],
        ("", "Pod") => vec![("spec", pod_spec()), ("status", pod_status())],
        ("", "PodTemplate") => vec![("template", pod_template())],
        ("", "Service") => vec![
            (
                "spec",
                zero(object(vec![
                    ("ports", ports("port")),
                    ("selector", atomic_object()),
                ])),
            ),
            (
                "status",
                zero(object(vec![
                    ("conditions", conditions()),
                    ("loadBalancer", object(vec![])),
                ])),
            ),
        ],
        ("", "ConfigMap") => vec![("data", string_map()), ("binaryData", string_map())],
        ("", "Secret") => vec![("data", string_map()), ("stringData", string_map())],
        ("", "ServiceAccount") => vec![("secrets", keyed(&["name"], object(vec![])))],
        ("", "Node") => vec![
            ("spec", zero(object(vec![("podCIDRs", set())]))),
            (
                "status",
                zero(object(vec![
                    ("conditions", conditions()),
                    ("addresses", atomic_merged_by("type")),
                    ("capacity", string_map()),
                    ("allocatable", string_map()),
                ])),
            ),
        ],
        ("", "PersistentVolumeClaim") => vec![
            (
                "spec",
                zero(object(vec![(
                    "resources",
                    zero(object(vec![
                        ("limits", string_map()),
                        ("requests", string_map()),
                    ])),
                )])),
            ),
            (
                "status",
                zero(object(vec![
                    ("conditions", conditions()),
                    ("capacity", string_map()),
                ])),
            ),
        ],
        _ => vec![("status", status())],
    }
}

impl MergeSchema {
    /// For a built-in kind (group, kind), with the list keys and map types of its Go type.
    pub fn for_builtin(group: &str, kind: &str) -> MergeSchema {
        let mut fields: BTreeMap<String, Node> = kind_fields(group, kind)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        fields.insert("metadata".into(), metadata());
        MergeSchema {
            root: Node::Object(ObjectNode {
                fields,
                ..ObjectNode::default()
            }),
        }
    }
}
