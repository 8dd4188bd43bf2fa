//! An object as the store keeps it. A `serde_json::Value` tree of a typical object takes
//! about eight times the bytes of its JSON (each map an index map of 112-byte entries, each
//! key and string an allocation of its own), so the store, and the watch history that
//! shares its entries, keep most objects as their JSON, serialized once when committed and
//! parsed again where read. The kinds the server itself reads on every request (RBAC,
//! admission configuration, CRDs, namespaces) stay parsed: they are few.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::resources::ResourceKey;

/// One stored version of an object; cloning shares it.
#[derive(Clone, Debug)]
pub enum Encoded {
    /// Parsed, for the kinds the server reads on every request.
    Tree(Arc<Value>),
    /// As JSON text.
    Json(Arc<str>),
}

/// The API groups whose objects the server reads while serving requests.
const READ_BY_THE_SERVER: [&str; 3] = [
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
];

impl Encoded {
    /// `object`, of kind `key`, as the store keeps it.
    pub fn new(key: &ResourceKey, object: &Value) -> Self {
        let read_by_the_server = READ_BY_THE_SERVER.contains(&key.group.as_str())
            || (key.group.is_empty() && key.plural == "namespaces");
        if read_by_the_server {
            Encoded::Tree(Arc::new(object.clone()))
        } else {
            // A Value has string keys only, so it always serializes.
            Encoded::Json(object.to_string().into())
        }
    }

    /// The object. Written objects may be nested deeper than serde_json's default limit
    /// for parsing (a JSON patch can add a deep value at a deep path), so the limit is
    /// lifted for the store's own text.
    pub fn value(&self) -> Arc<Value> {
        match self {
            Encoded::Tree(object) => object.clone(),
            Encoded::Json(json) => {
                let mut deserializer = serde_json::Deserializer::from_str(json);
                deserializer.disable_recursion_limit();
                let object =
                    Value::deserialize(&mut deserializer).expect("the store's own JSON parses");
                Arc::new(object)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(group: &str, plural: &str) -> ResourceKey {
        ResourceKey {
            group: group.into(),
            plural: plural.into(),
        }
    }

    #[test]
    fn an_object_reads_back_as_it_was_stored() {
        let object = json!({"metadata": {"name": "a", "labels": {"z": "1", "a": "2"}},
            "data": {"n": 1.5, "big": u64::MAX, "neg": -3, "list": [null, true, "x"]}});
        for key in [
            key("", "configmaps"),
            key("rbac.authorization.k8s.io", "roles"),
        ] {
            let stored = Encoded::new(&key, &object);
            assert_eq!(*stored.value(), object);
            assert_eq!(
                stored.value().to_string(),
                object.to_string(),
                "key order kept"
            );
        }
    }

    #[test]
    fn objects_nested_deeper_than_the_parsers_default_limit_read_back() {
        let mut object = json!("leaf");
        for _ in 0..200 {
            object = json!({ "a": object });
        }
        let stored = Encoded::new(&key("example.com", "widgets"), &object);
        assert_eq!(*stored.value(), object);
    }
}
