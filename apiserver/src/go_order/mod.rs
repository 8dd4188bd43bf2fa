//! The Go struct order of the objects the server writes, for [`crate::json_order`]: kube
//! writes JSON with encoding/json, which keeps struct field order, not sorted keys. Known
//! here: `Status`, the metadata of every object and list, and the kinds kubectl users look
//! at most (Pod, Service, Deployment, ConfigMap, Secret, Namespace) with their lists;
//! other kinds keep `kind`, `apiVersion` and `metadata` first, then sorted keys.

/// A kind with a spec and a status: `kind`, `apiVersion`, `metadata` (ObjectMeta), `spec`,
/// `status`, as most kinds are declared.
macro_rules! spec_and_status {
    ($(#[$doc:meta])* $name:ident, $spec:expr, $status:expr) => {
        $(#[$doc])*
        pub static $name: Shape = Shape {
            fields: &[
                ("kind", None),
                ("apiVersion", None),
                ("metadata", Some(&super::meta::OBJECT_META)),
                ("spec", $spec),
                ("status", $status),
            ],
        };
    };
}

mod kinds;
mod meta;
mod pod;

use serde_json::{Map, Value};

use crate::json_order::Shape;
use kinds::{CONFIG_MAP, DEPLOYMENT, NAMESPACE, SECRET, SERVICE};
use meta::{LIST_META, OBJECT_META};
use pod::POD;

/// `metav1.StatusCause`.
static STATUS_CAUSE: Shape = Shape {
    fields: &[("reason", None), ("message", None), ("field", None)],
};

/// `metav1.StatusDetails`.
static STATUS_DETAILS: Shape = Shape {
    fields: &[
        ("name", None),
        ("group", None),
        ("kind", None),
        ("uid", None),
        ("causes", Some(&STATUS_CAUSE)),
        ("retryAfterSeconds", None),
    ],
};

/// `metav1.Status`.
static STATUS: Shape = Shape {
    fields: &[
        ("kind", None),
        ("apiVersion", None),
        ("metadata", None),
        ("status", None),
        ("message", None),
        ("reason", None),
        ("details", Some(&STATUS_DETAILS)),
        ("code", None),
    ],
};

/// A list of `item`s: `kind`, `apiVersion`, `metadata` (ListMeta), `items`.
macro_rules! list_of {
    ($name:ident, $item:expr) => {
        static $name: Shape = Shape {
            fields: &[
                ("kind", None),
                ("apiVersion", None),
                ("metadata", Some(&LIST_META)),
                ("items", Some($item)),
            ],
        };
    };
}

list_of!(POD_LIST, &POD);
list_of!(SERVICE_LIST, &SERVICE);
list_of!(DEPLOYMENT_LIST, &DEPLOYMENT);
list_of!(CONFIG_MAP_LIST, &CONFIG_MAP);
list_of!(SECRET_LIST, &SECRET);
list_of!(NAMESPACE_LIST, &NAMESPACE);

/// `PartialObjectMetadata`, as metadata-only reads and Table rows carry it.
static PARTIAL_OBJECT_METADATA: Shape = Shape {
    fields: &[
        ("kind", None),
        ("apiVersion", None),
        ("metadata", Some(&OBJECT_META)),
    ],
};
list_of!(PARTIAL_OBJECT_METADATA_LIST, &PARTIAL_OBJECT_METADATA);

/// The shape of an object from its `kind` and `apiVersion`, where the server knows it.
pub fn shape_of(object: &Map<String, Value>) -> Option<&'static Shape> {
    let kind = object.get("kind").and_then(Value::as_str)?;
    let api_version = object.get("apiVersion").and_then(Value::as_str)?;
    let shape = match (api_version, kind) {
        ("v1" | "meta.k8s.io/v1", "Status") => &STATUS,
        ("meta.k8s.io/v1", "PartialObjectMetadata") => &PARTIAL_OBJECT_METADATA,
        ("meta.k8s.io/v1", "PartialObjectMetadataList") => &PARTIAL_OBJECT_METADATA_LIST,
        ("v1", "Pod") => &POD,
        ("v1", "PodList") => &POD_LIST,
        ("v1", "Service") => &SERVICE,
        ("v1", "ServiceList") => &SERVICE_LIST,
        ("v1", "ConfigMap") => &CONFIG_MAP,
        ("v1", "ConfigMapList") => &CONFIG_MAP_LIST,
        ("v1", "Secret") => &SECRET,
        ("v1", "SecretList") => &SECRET_LIST,
        ("v1", "Namespace") => &NAMESPACE,
        ("v1", "NamespaceList") => &NAMESPACE_LIST,
        ("apps/v1", "Deployment") => &DEPLOYMENT,
        ("apps/v1", "DeploymentList") => &DEPLOYMENT_LIST,
        _ => return None,
    };
    Some(shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_order::Ordered;
    use serde_json::json;

    fn written(value: &Value) -> String {
        let ordered = Ordered::leading(value, &["kind", "apiVersion", "metadata"]);
        serde_json::to_string(&ordered.with_shapes(shape_of)).unwrap()
    }

    #[test]
    fn known_kinds_are_written_in_go_struct_order_at_every_depth() {
        let deployment = json!({"status": {}, "spec": {"template": {"spec": {"containers": [
            {"image": "nginx", "name": "web", "env": [{"value": "1", "name": "A"}]}]},
            "metadata": {"labels": {"b": "2", "a": "1"}}}, "replicas": 1},
            "metadata": {"uid": "u", "name": "web", "creationTimestamp": "t"},
            "apiVersion": "apps/v1", "kind": "Deployment"});
        assert_eq!(
            written(&deployment),
            r#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","uid":"u","creationTimestamp":"t"},"spec":{"replicas":1,"template":{"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"containers":[{"name":"web","image":"nginx","env":[{"name":"A","value":"1"}]}]}}},"status":{}}"#
        );
        let list = json!({"items": [{"data": {"k": "v"}, "metadata": {"namespace": "d", "name": "c"}}],
            "metadata": {"resourceVersion": "5"}, "kind": "ConfigMapList", "apiVersion": "v1"});
        assert_eq!(
            written(&list),
            r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"c","namespace":"d"},"data":{"k":"v"}}]}"#
        );
    }
}
