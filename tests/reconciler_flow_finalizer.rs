//! WithFinalizer (spec 8.11): the finalizer is added before the nested reconciler runs and
//! cleared once a terminating resource is cleaned up.

mod flow_common;

use dynrec::apiserver::{ApiServer, Fault, FaultMatch};
use dynrec::client::ListOptions;
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{Config, Outcome, Predicate, SubReconciler, WithFinalizer};
use flow_common::{TestReconciler, after, context_at, fail, now, object, start};
use kube::api::{DeleteParams, DynamicObject};
use serde_json::json;

const FINALIZER: &str = "test.finalizer";

fn config_maps() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

fn key() -> ObjectKey {
    ObjectKey::namespaced("default", "test-resource")
}

/// A ConfigMap stored on the server, with these finalizers.
async fn stored(config: &Config, finalizers: &[&str]) -> DynamicObject {
    let resource = object(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "test-resource", "namespace": "default", "finalizers": finalizers},
        "data": {}
    }));
    config.client.create(&resource).await.unwrap()
}

/// The stored ConfigMap, deleted: terminating while the finalizer holds it.
async fn terminating(config: &Config) -> DynamicObject {
    stored(config, &[FINALIZER]).await;
    let deleted = config
        .client
        .delete(&config_maps(), &key(), &DeleteParams::default())
        .await
        .unwrap();
    let deleted = deleted.expect("the finalizer keeps the object");
    assert!(deleted.metadata.deletion_timestamp.is_some());
    deleted
}

/// Marks `spec.fields.nested` (a ConfigMap's `data.nested`) and returns `outcome`.
fn nested(outcome: Outcome) -> TestReconciler {
    TestReconciler::new(move |_, resource: &mut DynamicObject| {
        flow_common::set(resource, "data.nested", "called");
        outcome.clone()
    })
}

fn with_finalizer(outcome: Outcome) -> WithFinalizer {
    WithFinalizer::new(FINALIZER, nested(outcome))
}

fn ctx(config: &Config) -> dynrec::reconcilers::Context {
    context_at(config, config_maps(), now())
}

async fn finalizers_on_server(config: &Config) -> Option<Vec<String>> {
    match config.client.api_reader().get(&config_maps(), &key()).await {
        Ok(found) => Some(found.metadata.finalizers.unwrap_or_default()),
        Err(err) if err.is_not_found() => None,
        Err(err) => panic!("{err}"),
    }
}

/// The (reason, note) of the Events recorded in `default`.
async fn events(config: &Config) -> Vec<(String, String)> {
    let gvk = Gvk::new("events.k8s.io", "v1", "Event");
    let listed = config
        .client
        .api_reader()
        .list(&gvk, &ListOptions::default().namespace("default"))
        .await
        .unwrap();
    listed
        .into_iter()
        .map(|e| {
            let text = |k: &str| {
                e.data
                    .get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            (text("reason"), text("note"))
        })
        .collect()
}

fn fail_patches(server: &ApiServer) {
    server.add_fault(Fault::fail(
        FaultMatch {
            verb: Some("patch".into()),
            kind: Some("configmaps".into()),
            ..Default::default()
        },
        500,
        "InternalError",
    ));
}

fn nested_called(resource: &DynamicObject) -> bool {
    resource
        .data
        .get("data")
        .and_then(|d| d.get("nested"))
        .is_some()
}

#[tokio::test]
async fn in_sync_finalizer_is_not_patched() {
    let (server, config) = start();
    let mut resource = stored(&config, &[FINALIZER]).await;
    let rv = resource.metadata.resource_version.clone();
    let outcome = with_finalizer(Outcome::ok(after(1)))
        .reconcile(&ctx(&config), &mut resource)
        .await;
    assert!(outcome.is_ok() && outcome.result == after(1));
    assert!(nested_called(&resource));
    assert_eq!(resource.metadata.resource_version, rv);
    assert_eq!(server.request_count("patch", "", "configmaps"), 0);
}

#[tokio::test]
async fn adds_the_finalizer_before_the_nested_reconciler() {
    let (_server, config) = start();
    let mut resource = stored(&config, &[]).await;
    let rv = resource.metadata.resource_version.clone();
    let sees_finalizer = TestReconciler::new(|_, resource: &mut DynamicObject| {
        let finalizers = resource.metadata.finalizers.clone().unwrap_or_default();
        assert_eq!(finalizers, [FINALIZER], "the finalizer is added first");
        Outcome::done()
    });
    let outcome = WithFinalizer::new(FINALIZER, sees_finalizer)
        .reconcile(&ctx(&config), &mut resource)
        .await;
    assert!(outcome.is_ok(), "{:?}", outcome.error);
    assert_eq!(
        finalizers_on_server(&config).await,
        Some(vec![FINALIZER.to_string()])
    );
    assert_ne!(
        resource.metadata.resource_version, rv,
        "the new resourceVersion is copied back"
    );
    let on_server = config
        .client
        .api_reader()
        .get(&config_maps(), &key())
        .await
        .unwrap();
    assert_eq!(
        resource.metadata.resource_version,
        on_server.metadata.resource_version
    );
    assert_eq!(
        events(&config).await,
        [(
            "FinalizerPatched".to_string(),
            format!("Patched finalizer {FINALIZER:?}")
        )]
    );
}

#[tokio::test]
async fn a_failed_add_stops_before_the_nested_reconciler() {
    let (server, config) = start();
    let mut resource = stored(&config, &[]).await;
    fail_patches(&server);
    let outcome = with_finalizer(Outcome::ok(after(1)))
        .reconcile(&ctx(&config), &mut resource)
        .await;
    assert!(outcome.error.is_some());
    assert_eq!(outcome.result, dynrec::reconcilers::ReconcileResult::done());
    assert!(!nested_called(&resource));
    let recorded = events(&config).await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].0, "FinalizerPatchFailed");
    assert!(
        recorded[0]
            .1
            .starts_with(&format!("Failed to patch finalizer {FINALIZER:?}: ")),
        "{}",
        recorded[0].1
    );
}

#[tokio::test]
async fn keeps_the_finalizer_until_ready_to_clear() {
    let (_server, config) = start();
    let mut resource = terminating(&config).await;
    let not_ready = with_finalizer(Outcome::done()).ready_to_clear_finalizer(Predicate::new(
        |_, r: &DynamicObject| r.data.get("data").and_then(|d| d.get("cleaned")).is_some(),
    ));
    let outcome = not_ready.reconcile(&ctx(&config), &mut resource).await;
    assert!(outcome.is_ok() && nested_called(&resource));
    assert_eq!(
        finalizers_on_server(&config).await,
        Some(vec![FINALIZER.to_string()])
    );
}

#[tokio::test]
async fn clears_the_finalizer_of_a_terminating_resource() {
    let (_server, config) = start();
    let mut resource = terminating(&config).await;
    let outcome = with_finalizer(Outcome::ok(after(2)))
        .reconcile(&ctx(&config), &mut resource)
        .await;
    assert!(outcome.is_ok(), "{:?}", outcome.error);
    assert_eq!(outcome.result, after(2));
    assert_eq!(
        resource.metadata.finalizers.clone().unwrap_or_default(),
        Vec::<String>::new()
    );
    assert_eq!(
        finalizers_on_server(&config).await,
        None,
        "with no finalizer left the object is gone"
    );
}

#[tokio::test]
async fn a_failed_clear_is_an_error() {
    let (server, config) = start();
    let mut resource = terminating(&config).await;
    fail_patches(&server);
    let outcome = with_finalizer(Outcome::ok(after(2)))
        .reconcile(&ctx(&config), &mut resource)
        .await;
    assert!(outcome.error.is_some());
    assert_eq!(outcome.result, dynrec::reconcilers::ReconcileResult::done());
    assert_eq!(
        finalizers_on_server(&config).await,
        Some(vec![FINALIZER.to_string()])
    );
}

#[tokio::test]
async fn keeps_the_finalizer_when_the_nested_reconciler_fails() {
    let (_server, config) = start();
    let mut resource = terminating(&config).await;
    let outcome = with_finalizer(Outcome::with(after(3), Some(fail("cleanup failed"))))
        .reconcile(&ctx(&config), &mut resource)
        .await;
    assert_eq!(outcome.error.unwrap().to_string(), "cleanup failed");
    assert_eq!(outcome.result, after(3));
    assert_eq!(
        finalizers_on_server(&config).await,
        Some(vec![FINALIZER.to_string()])
    );
}

#[test]
fn validates_the_finalizer_and_the_nested_reconciler() {
    let err = WithFinalizer::new("", nested(Outcome::done()))
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"WithFinalizer "WithFinalizer" must define Finalizer"#
    );
    let invalid = nested(Outcome::done()).invalid("TestReconciler is invalid");
    let err = WithFinalizer::new(FINALIZER, invalid)
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"WithFinalizer "WithFinalizer" must have a valid Reconciler: TestReconciler is invalid"#
    );
}
