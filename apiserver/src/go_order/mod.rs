//! The Go struct order of the objects the server writes, for [`crate::json_order`]: kube
//! writes JSON with encoding/json, which keeps struct field order, not sorted keys. Every
//! served built-in kind, its list, `Status`, `Table` and the metadata-only kinds, at every
//! depth, from the table `apiserver/tools/go_order.py` generates from Kubernetes' Go types;
//! custom kinds keep `kind`, `apiVersion` and `metadata` first, then sorted keys.

mod generated;

use serde_json::{Map, Value};

use crate::json_order::Shape;

/// The shape of an object from its `kind` and `apiVersion`, where the server knows it.
pub fn shape_of(object: &Map<String, Value>) -> Option<&'static Shape> {
    let kind = object.get("kind").and_then(Value::as_str)?;
    let api_version = object.get("apiVersion").and_then(Value::as_str)?;
    generated::kind_shape(api_version, kind)
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
