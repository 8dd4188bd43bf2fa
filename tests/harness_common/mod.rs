//! Fixtures shared by the table tests: the TestResource kind of reconciler.io's suites.
#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{Config, Context, ReconcileError, SubReconciler, ValidationError};
use dynrec::testing::{Callback, ExpectConfig, TestCase, TestObject, TestTable, crd};
use jiff::Timestamp;
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

/// Validates each named reconciler and asserts that every outcome (`Ok`, or the error's
/// message) is the expected one, listing every mismatch.
pub fn check_validation<R: SubReconciler>(cases: Vec<(&str, R, Result<(), String>)>) {
    check_validation_with(cases, |r| r.validate());
}

/// [`check_validation`] for reconcilers that `validate` validates (e.g. roots).
pub fn check_validation_with<R>(
    cases: Vec<(&str, R, Result<(), String>)>,
    validate: impl Fn(&R) -> Result<(), ValidationError>,
) {
    let failures: Vec<String> = cases
        .into_iter()
        .filter_map(|(name, reconciler, expected)| {
            let actual = validate(&reconciler).map_err(|e| e.to_string());
            (actual != expected).then(|| format!("{name}: expected {expected:?}, got {actual:?}"))
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Builds the reconciler of one case.
pub type Factory<C> = Box<dyn Fn(&Config) -> <C as TestCase>::Reconciler>;

/// Runs named cases as one table, each with the reconciler its own factory builds
/// (reconciler.io's per-case `Metadata` factories).
pub async fn run_cases<C: TestCase>(cases: Vec<(&str, C, Factory<C>)>) {
    let mut table = BTreeMap::new();
    let mut factories = BTreeMap::new();
    for (name, case, factory) in cases {
        assert!(
            table.insert(name.to_string(), case).is_none(),
            "two cases named {name:?}"
        );
        factories.insert(name.to_string(), factory);
    }
    TestTable(table)
        .run(|case: &C, config| factories[case.name()](config))
        .await;
}

/// Checks that `prepare`, the reconcile and `clean_up` run in that order, each once
/// (reconciler.io's "context can be augmented in Prepare and accessed in Cleanup"; here
/// they see the config, not the context).
#[derive(Clone, Default)]
pub struct Lifecycle(Arc<AtomicUsize>);

impl Lifecycle {
    fn advance(&self, step: usize, what: &str) -> Result<(), String> {
        self.0
            .compare_exchange(step, step + 1, Ordering::SeqCst, Ordering::SeqCst)
            .map(|_| ())
            .map_err(|at| format!("{what} ran at step {at}, expected step {step}"))
    }

    /// The case's `prepare`: the first step.
    pub fn prepare(&self) -> Option<Callback> {
        let lifecycle = self.clone();
        let prepare: Callback = Box::new(move |_| lifecycle.advance(0, "prepare"));
        Some(prepare)
    }

    /// Called by the reconciler under test: the second step.
    pub fn reconciled(&self) -> Result<(), ReconcileError> {
        self.advance(1, "reconcile").map_err(ReconcileError::msg)
    }

    /// The case's `clean_up`: the third step.
    pub fn clean_up(&self) -> Option<Callback> {
        let lifecycle = self.clone();
        let clean_up: Callback = Box::new(move |_| lifecycle.advance(2, "clean up"));
        Some(clean_up)
    }

    /// Asserts that all three steps ran.
    pub fn assert_complete(&self) {
        assert_eq!(
            self.0.load(Ordering::SeqCst),
            3,
            "prepare, reconcile, clean up"
        );
    }
}

/// Checks what a root built with `config` puts in the context of a request for the
/// `resource_type` object `request` at `now` (reconciler.io's "context is stashable",
/// "context has config" and "context has resource type").
pub fn check_context(
    ctx: &Context,
    config: &Config,
    resource_type: &Gvk,
    request: &ObjectKey,
    now: Timestamp,
) -> Result<(), ReconcileError> {
    ctx.stash().store("foo", "bar".to_string());
    let problems: Vec<&str> = [
        (
            ctx.stash().retrieve::<String>("foo").as_deref() != Some("bar"),
            "stash",
        ),
        (!ctx.config().is_same(config), "config"),
        (!ctx.original_config().is_same(config), "original config"),
        (ctx.request() != request, "request"),
        (ctx.resource_type() != resource_type, "resource type"),
        (
            ctx.original_resource_type() != resource_type,
            "original resource type",
        ),
        (ctx.now() != now, "now"),
    ]
    .into_iter()
    .filter_map(|(wrong, what)| wrong.then_some(what))
    .collect();
    match problems.is_empty() {
        true => Ok(()),
        false => Err(ReconcileError::msg(format!(
            "context is wrong: {problems:?}"
        ))),
    }
}
