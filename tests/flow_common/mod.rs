//! Helpers shared by the higher-order reconciler tests: an embedded server, a request
//! context over it, a TestResource, and `TestReconciler`, a reconciler made from a closure.
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::object::{Fields, Gvk, ObjectKey};
use dynrec::reconcilers::{
    Config, Context, Outcome, ReconcileError, ReconcileResult, Setup, SubReconciler,
    ValidationError, Watch,
};
use jiff::Timestamp;
use kube::api::DynamicObject;
use serde_json::{Value, json};

/// The kind of the test resource.
pub fn test_gvk() -> Gvk {
    Gvk::new("testing.reconciler.runtime", "v1", "TestResource")
}

/// An embedded server and a config over it.
pub fn start() -> (ApiServer, Config) {
    let server = ApiServer::new();
    let config = Config::new(
        Client::new(server.client()),
        "test",
        Duration::from_secs(600),
    );
    (server, config)
}

/// A fixed "now" for requests.
pub fn now() -> Timestamp {
    "2024-01-01T00:00:00Z".parse().unwrap()
}

/// A context for `test-namespace/test-resource` of kind TestResource, at `now()`.
pub fn context(config: &Config) -> Context {
    context_at(config, test_gvk(), now())
}

/// A context for `test-namespace/test-resource` of kind `gvk`, at `now`.
pub fn context_at(config: &Config, gvk: Gvk, now: Timestamp) -> Context {
    let key = ObjectKey::namespaced("test-namespace", "test-resource");
    Context::new(key, gvk, config.clone(), now)
}

/// An object from JSON.
pub fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

/// A TestResource with empty `spec.fields`.
pub fn resource() -> DynamicObject {
    object(json!({
        "apiVersion": "testing.reconciler.runtime/v1",
        "kind": "TestResource",
        "metadata": {"namespace": "test-namespace", "name": "test-resource"},
        "spec": {"fields": {}}
    }))
}

/// The string at `path` of a resource.
pub fn field(resource: &DynamicObject, path: &str) -> Option<String> {
    resource.field_str(path).unwrap().map(str::to_string)
}

/// Sets the string at `path` of a resource.
pub fn set(resource: &mut DynamicObject, path: &str, value: impl Into<String>) {
    resource.set_field(path, value.into()).unwrap();
}

/// Requeue after `n` seconds.
pub fn after(n: u64) -> ReconcileResult {
    ReconcileResult::requeue_after(Duration::from_secs(n))
}

/// A plain error.
pub fn fail(message: &str) -> ReconcileError {
    ReconcileError::msg(message)
}

type SyncBody<R> = dyn Fn(&Context, &mut R) -> Outcome + Send + Sync;

/// A reconciler made from a synchronous closure; it can be made invalid and can declare a
/// watch, to test how composites validate and set up their children.
pub struct TestReconciler<R = DynamicObject> {
    name: String,
    body: Arc<SyncBody<R>>,
    invalid: Option<String>,
    watch: Option<Gvk>,
}

impl<R> TestReconciler<R> {
    /// A reconciler running `body`.
    pub fn new(body: impl Fn(&Context, &mut R) -> Outcome + Send + Sync + 'static) -> Self {
        Self {
            name: "TestReconciler".into(),
            body: Arc::new(body),
            invalid: None,
            watch: None,
        }
    }

    /// Fails validation with `message`.
    pub fn invalid(mut self, message: &str) -> Self {
        self.invalid = Some(message.into());
        self
    }

    /// Declares a tracked watch of `gvk` at setup.
    pub fn watching(mut self, gvk: Gvk) -> Self {
        self.watch = Some(gvk);
        self
    }
}

impl TestReconciler<DynamicObject> {
    /// Sets `spec.fields.<key>` to "called" and returns `outcome`.
    pub fn marking(key: &str, outcome: Outcome) -> Self {
        let path = format!("spec.fields.{key}");
        Self::new(move |_, resource| {
            set(resource, &path, "called");
            outcome.clone()
        })
    }
}

#[async_trait]
impl<R: Send + Sync> SubReconciler<R> for TestReconciler<R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        if let Some(gvk) = &self.watch {
            setup.watch(Watch::Tracked(gvk.clone()));
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), ValidationError> {
        match &self.invalid {
            Some(message) => Err(ValidationError(message.clone())),
            None => Ok(()),
        }
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut R) -> Outcome {
        (self.body)(ctx, resource)
    }
}

/// The keys of `spec.fields` that are set, sorted.
pub fn called(resource: &DynamicObject) -> Vec<String> {
    let fields = resource.field_object("spec.fields").unwrap();
    let mut keys: Vec<String> = fields.into_iter().flat_map(|m| m.keys().cloned()).collect();
    keys.sort();
    keys
}
