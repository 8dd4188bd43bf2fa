//! A builder for test objects, so a table test reads like the Go original.

use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::object::Fields;

/// Builds a `DynamicObject` for a test: kind, name, namespace, labels, spec and status.
#[derive(Clone, Debug)]
pub struct TestObject {
    value: Value,
}

impl TestObject {
    /// An object of `api_version`/`kind` named `name`.
    pub fn new(api_version: &str, kind: &str, name: &str) -> Self {
        Self {
            value: json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}),
        }
    }

    /// A builder starting from an existing object (e.g. one whose conditions were set).
    pub fn from_object(object: &DynamicObject) -> Self {
        let value = serde_json::to_value(object)
            .unwrap_or_else(|err| panic!("test object cannot be serialized: {err}"));
        Self { value }
    }

    /// Sets a field by path (`spec.replicas`, `metadata.uid`, ...).
    pub fn field(mut self, path: &str, value: impl Into<Value>) -> Self {
        if let Err(err) = self.value.set_field(path, value) {
            panic!("test object field {path}: {err}");
        }
        self
    }

    /// Sets the namespace.
    pub fn namespace(self, namespace: &str) -> Self {
        self.field("metadata.namespace", namespace)
    }

    /// Adds a label.
    pub fn label(self, key: &str, value: &str) -> Self {
        let path = format!(
            "/metadata/labels/{}",
            key.replace('~', "~0").replace('/', "~1")
        );
        self.field(&path, value)
    }

    /// Sets metadata.generation.
    pub fn generation(self, generation: i64) -> Self {
        self.field("metadata.generation", generation)
    }

    /// Sets metadata.resourceVersion.
    pub fn resource_version(self, rv: &str) -> Self {
        self.field("metadata.resourceVersion", rv)
    }

    /// Sets metadata.finalizers.
    pub fn finalizers(self, finalizers: &[&str]) -> Self {
        self.field("metadata.finalizers", json!(finalizers))
    }

    /// Marks the object as being deleted (deletionTimestamp set).
    pub fn terminating(self) -> Self {
        self.field("metadata.deletionTimestamp", "2000-01-01T00:00:00Z")
    }

    /// Sets the spec.
    pub fn spec(self, spec: Value) -> Self {
        self.field("spec", spec)
    }

    /// Sets the status.
    pub fn status(self, status: Value) -> Self {
        self.field("status", status)
    }

    /// The object.
    pub fn build(self) -> DynamicObject {
        crate::object::from_json(self.value)
            .unwrap_or_else(|err| panic!("test object is not an object: {err}"))
    }
}

impl From<TestObject> for DynamicObject {
    fn from(object: TestObject) -> Self {
        object.build()
    }
}

/// A CRD serving `kind` at `group`/v1 (namespaced, with a status subresource and an open
/// schema), for [`ExpectConfig::given_api_resources`](super::ExpectConfig).
pub fn crd(group: &str, kind: &str, plural: &str) -> DynamicObject {
    let value = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }}
            }]
        }
    });
    TestObject { value }.build()
}
