//! Fixtures shared by the table tests: the TestResource kind of reconciler.io's suites.
#![allow(dead_code)] // each test binary uses a different subset

use dynrec::object::{Gvk, ObjectKey};
use dynrec::testing::{ExpectConfig, TestObject, crd};
use kube::api::DynamicObject;
use serde_json::json;

/// The test kind's group.
pub const GROUP: &str = "testing.reconciler.runtime";
/// The namespace of test objects.
pub const NAMESPACE: &str = "test-namespace";
/// The name of the test resource.
pub const NAME: &str = "test-resource";

/// The GVK of TestResource.
pub fn gvk() -> Gvk {
    Gvk::new(GROUP, "v1", "TestResource")
}

/// The request for the test resource.
pub fn request() -> ObjectKey {
    ObjectKey::namespaced(NAMESPACE, NAME)
}

/// A TestResource named `test-resource` at generation 1, with an empty spec.
pub fn resource() -> TestObject {
    TestObject::new(&format!("{GROUP}/v1"), "TestResource", NAME)
        .namespace(NAMESPACE)
        .generation(1)
        .spec(json!({"fields": {}}))
}

/// A ConfigMap in the test namespace.
pub fn config_map(name: &str) -> TestObject {
    TestObject::new("v1", "ConfigMap", name).namespace(NAMESPACE)
}

/// A config serving TestResource.
pub fn config() -> ExpectConfig {
    ExpectConfig {
        given_api_resources: vec![crd(GROUP, "TestResource", "testresources")],
        ..ExpectConfig::default()
    }
}

/// `object` with `resourceVersion`.
pub fn with_rv(object: TestObject, rv: &str) -> DynamicObject {
    object.resource_version(rv).build()
}
