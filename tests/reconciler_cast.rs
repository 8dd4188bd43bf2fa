//! CastResource (spec 8.9): a nested reconciler of a typed projection changes only what it
//! knows; everything else on the resource is preserved.

#[path = "client_common/mod.rs"]
mod client_common;
mod flow_common;

use std::collections::BTreeMap;

use dynrec::duck::PodSpecable;
use dynrec::object::{Fields, Gvk};
use dynrec::reconcilers::{CastError, CastResource, Outcome, SubReconciler};
use flow_common::{TestReconciler, after, context, fail, object, start};
use k8s_openapi::api::core::v1::EnvVar;
use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Sets the image of the first container and adds an env var to it.
fn change_image(duck: &mut PodSpecable, image: &str) -> Outcome {
    let pod = duck.spec.template.spec.get_or_insert_with(Default::default);
    let container = &mut pod.containers[0];
    container.image = Some(image.into());
    container.env.get_or_insert_with(Vec::new).push(EnvVar {
        name: "INJECTED".into(),
        value: Some("yes".into()),
        ..Default::default()
    });
    Outcome::ok(after(7))
}

fn set_image(image: &'static str) -> TestReconciler<PodSpecable> {
    TestReconciler::new(move |_, duck: &mut PodSpecable| change_image(duck, image))
}

fn deployment() -> DynamicObject {
    object(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 3, "paused": true,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"name": "template-name", "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}
            }
        }
    }))
}

#[tokio::test]
async fn casts_a_deployment_to_pod_specable_and_applies_only_the_changes() {
    let (_server, config) = start();
    let gvk: Gvk = "apps/v1/Deployment".parse().unwrap();
    let created = config.client.create(&deployment()).await.unwrap();
    let mut resource = created.clone();

    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let record = seen.clone();
    let nested = TestReconciler::new(move |ctx, duck: &mut PodSpecable| {
        *record.lock().unwrap() = Some((
            ctx.resource_type().clone(),
            serde_json::to_value(&*duck).unwrap(),
        ));
        change_image(duck, "nginx:1.28")
    });
    let cast = CastResource::new(nested);
    assert_eq!(cast.name(), "PodSpecableCastResource");
    let outcome = cast.reconcile(&context(&config), &mut resource).await;
    assert!(outcome.is_ok(), "{:?}", outcome.error);
    assert_eq!(outcome.result, after(7), "the nested result is returned");

    let (resource_type, projected) = seen.lock().unwrap().clone().unwrap();
    assert_eq!(resource_type, gvk, "the context names the resource's kind");
    assert_eq!(
        projected.field("spec.paused").unwrap(),
        None,
        "the projection drops unknown fields"
    );
    assert_eq!(
        projected.field_str("spec.template.metadata.name").unwrap(),
        Some("template-name")
    );

    let container = resource
        .field("spec.template.spec.containers[0]")
        .unwrap()
        .unwrap();
    assert_eq!(
        container,
        &json!({"name": "app", "image": "nginx:1.28", "env": [{"name": "INJECTED", "value": "yes"}]})
    );
    for kept in [
        "spec.replicas",
        "spec.paused",
        "spec.strategy",
        "spec.selector",
        "spec.template.metadata",
    ] {
        assert_eq!(
            resource.field(kept).unwrap(),
            created.field(kept).unwrap(),
            "{kept} is preserved"
        );
    }
    assert_eq!(resource.metadata, created.metadata);

    let updated = config.client.update(&resource).await.unwrap();
    assert_eq!(updated.field_i64("spec.replicas").unwrap(), Some(3));
    assert_eq!(updated.field_bool("spec.paused").unwrap(), Some(true));
    assert_eq!(
        updated
            .field_str("spec.template.spec.containers[0].image")
            .unwrap(),
        Some("nginx:1.28")
    );
}

#[tokio::test]
async fn casts_a_custom_kind_preserving_fields_the_duck_does_not_know() {
    let (_server, config) = start();
    let client = &config.client;
    client
        .create(&client_common::crd(
            "apps.example.com",
            "Service",
            "services",
        ))
        .await
        .unwrap();
    let gvk = client_common::crd_gvk("apps.example.com", "Service");
    client.resolver().wait_for(&gvk).await.unwrap();
    let service = object(json!({
        "apiVersion": "apps.example.com/v1", "kind": "Service",
        "metadata": {"name": "svc", "namespace": "default"},
        "spec": {
            "routes": [{"path": "/", "weight": 100}],
            "template": {"spec": {"containers": [
                {"name": "app", "image": "app:1", "sidecarHint": {"mesh": true}},
                {"name": "log", "image": "log:1", "sidecarHint": {"mesh": false}}
            ]}}
        }
    }));
    let mut resource = client.create(&service).await.unwrap();
    let outcome = CastResource::new(set_image("app:2"))
        .reconcile(&context(&config), &mut resource)
        .await;
    assert!(outcome.is_ok(), "{:?}", outcome.error);

    let containers = resource
        .field("spec.template.spec.containers")
        .unwrap()
        .unwrap();
    assert_eq!(
        containers,
        &json!([
            {"name": "app", "image": "app:2", "sidecarHint": {"mesh": true}, "env": [{"name": "INJECTED", "value": "yes"}]},
            {"name": "log", "image": "log:1", "sidecarHint": {"mesh": false}}
        ]),
        "fields inside list items that the duck does not know are kept"
    );
    assert_eq!(
        resource.field("spec.routes").unwrap(),
        Some(&json!([{"path": "/", "weight": 100}]))
    );

    let updated = client.update(&resource).await.unwrap();
    assert_eq!(
        updated
            .field_str("spec.template.spec.containers[0].image")
            .unwrap(),
        Some("app:2")
    );
}

#[tokio::test]
async fn an_unchanged_projection_leaves_the_resource_untouched() {
    let (_server, config) = start();
    let mut resource = deployment();
    let outcome = CastResource::new(TestReconciler::new(|_, _: &mut PodSpecable| {
        Outcome::ok(after(1))
    }))
    .reconcile(&context(&config), &mut resource)
    .await;
    assert!(outcome.is_ok());
    assert_eq!(resource, deployment());
}

#[tokio::test]
async fn a_change_under_fields_the_resource_lacks_creates_them() {
    let (_server, config) = start();
    let bare = || {
        object(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}}),
        )
    };
    let mut resource = bare();
    let label = TestReconciler::new(|_, duck: &mut PodSpecable| {
        let metadata = duck
            .spec
            .template
            .metadata
            .get_or_insert_with(Default::default);
        metadata.labels = Some(BTreeMap::from([("app".to_string(), "web".to_string())]));
        Outcome::done()
    });
    let outcome = CastResource::new(label)
        .reconcile(&context(&config), &mut resource)
        .await;
    assert!(outcome.is_ok(), "{:?}", outcome.error);
    assert_eq!(
        resource.field("spec").unwrap(),
        Some(&json!({"template": {"metadata": {"labels": {"app": "web"}}}}))
    );
}

#[tokio::test]
async fn removals_in_the_projection_are_applied() {
    let (_server, config) = start();
    let mut resource = deployment();
    resource
        .set_field(
            "spec.template.spec.containers[0].env",
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
        )
        .unwrap();
    let drop_a = TestReconciler::new(|_, duck: &mut PodSpecable| {
        let pod = duck.spec.template.spec.as_mut().unwrap();
        pod.containers[0].env.as_mut().unwrap().remove(0);
        Outcome::done()
    });
    CastResource::new(drop_a)
        .reconcile(&context(&config), &mut resource)
        .await;
    assert_eq!(
        resource
            .field("spec.template.spec.containers[0].env")
            .unwrap(),
        Some(&json!([{"name": "B", "value": "2"}]))
    );
    assert_eq!(resource.field_bool("spec.paused").unwrap(), Some(true));
}

/// A projection that knows only `status.fields`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct StatusFields {
    #[serde(default)]
    status: Fieldset,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Fieldset {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    fields: BTreeMap<String, String>,
}

#[tokio::test]
async fn the_status_change_is_applied_even_when_the_nested_reconciler_fails() {
    let (_server, config) = start();
    let mut resource = flow_common::resource();
    resource
        .set_field("status", json!({"observedGeneration": 1}))
        .unwrap();
    let failing = TestReconciler::new(|_, cast: &mut StatusFields| {
        cast.status.fields.insert("failed".into(), "true".into());
        Outcome::with(after(3), Some(fail("nested failed")))
    });
    let outcome = CastResource::new(failing)
        .reconcile(&context(&config), &mut resource)
        .await;
    assert_eq!(outcome.result, after(3));
    assert_eq!(outcome.error.unwrap().to_string(), "nested failed");
    assert_eq!(
        resource.field("status").unwrap(),
        Some(&json!({"observedGeneration": 1, "fields": {"failed": "true"}}))
    );
    assert_eq!(
        resource.field("spec").unwrap(),
        Some(&json!({"fields": {}}))
    );
}

#[tokio::test]
async fn a_resource_that_does_not_fit_the_type_is_an_error_naming_the_field() {
    let (_server, config) = start();
    let mut resource = deployment();
    resource
        .set_field("spec.template.spec.containers", Value::from("not a list"))
        .unwrap();
    let before = resource.clone();
    let nested = TestReconciler::new(|_, _: &mut PodSpecable| panic!("must not be called"));
    let outcome = CastResource::new(nested)
        .reconcile(&context(&config), &mut resource)
        .await;
    let error = outcome.error.unwrap();
    let cause = error.find_cause::<CastError>().unwrap();
    assert!(
        matches!(cause, CastError::Project { path, .. } if path == "spec.template.spec.containers"),
        "{cause}"
    );
    assert_eq!(resource, before);
}

#[test]
fn validates_the_nested_reconciler() {
    let invalid = TestReconciler::new(|_, _: &mut PodSpecable| Outcome::done())
        .invalid("TestReconciler is invalid");
    let err = CastResource::new(invalid).validate().unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"CastResource "PodSpecableCastResource" must have a valid Reconciler: TestReconciler is invalid"#
    );
}
