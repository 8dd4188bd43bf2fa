//! CastResource table tests: a nested reconciler of a typed projection of the
//! resource runs, and what it changed, and only that, is applied back onto the resource.

mod flow_common;
mod harness_common;

use std::collections::BTreeMap;
use std::time::Duration;

use dynrec::duck_types::PodSpecable;
use dynrec::object::Gvk;
use dynrec::reconcilers::{
    CastError, CastResource, Draft, HasMetadata, Outcome, ReconcileError, ReconcileResult,
    SubReconciler, SyncReconciler,
};
use dynrec::testing::{
    Event, ExpectConfig, StashedValue, SubReconcilerTestCase, TestObject, TestTable,
    VerifyResource, crd,
};
use flow_common::TestReconciler;
use harness_common::{NAMESPACE, config, gvk, resource};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use serde::{Deserialize, Serialize, Serializer, ser::Error as _};
use serde_json::{Value, json};

/// What the TestResource cases cast to, as reconciler.io's suite casts to a Deployment: the
/// pod template, `paused` and the status conditions, plus the `errOnMarshal` switch of
/// reconciler.io's TestResource spec.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentView {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: DeploymentViewSpec,
    #[serde(default)]
    status: DeploymentViewStatus,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentViewSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    paused: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    template: Option<PodTemplateSpec>,
    /// While set, serializing the view fails.
    #[serde(default, skip_serializing_if = "is_false", serialize_with = "refuse")]
    err_on_marshal: bool,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct DeploymentViewStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<ViewCondition>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct ViewCondition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

impl HasMetadata for DeploymentView {
    fn object_meta(&self) -> &ObjectMeta {
        &self.metadata
    }
}

fn is_false(value: &bool) -> bool {
    !value
}

fn refuse<S: Serializer>(_: &bool, _: S) -> Result<S::Ok, S::Error> {
    Err(S::Error::custom("errOnMarshal is set"))
}

/// A projection that knows the metadata only as JSON, so a nested reconciler can break it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct MetadataView {
    metadata: Value,
}

/// Builds the reconciler of a case.
type Factory = fn() -> Box<dyn SubReconciler>;

fn cast<T>(nested: impl SubReconciler<T> + 'static) -> Box<dyn SubReconciler>
where
    T: Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    Box::new(CastResource::new(nested))
}

/// A nested reconciler of the view running `sync` (reconciler.io's `SyncWithResult`).
fn syncing(sync: fn(&mut DeploymentView) -> Outcome) -> Box<dyn SubReconciler> {
    cast(SyncReconciler::with_result(
        move |_, view: &mut Draft<DeploymentView>| sync(view),
    ))
}

/// Records a Normal "Test" event naming the first container, on the cast object, and
/// stashes the resource type it sees.
fn recording() -> Box<dyn SubReconciler> {
    cast(SyncReconciler::new_async(
        |ctx, view: &mut Draft<DeploymentView>| {
            ctx.stash()
                .store("resourceType", ctx.resource_type().clone());
            let object = serde_json::to_value(&*view).and_then(serde_json::from_value);
            let container = view
                .spec
                .template
                .as_ref()
                .and_then(|t| t.spec.as_ref())
                .and_then(|s| s.containers.first())
                .map(|c| c.name.clone())
                .unwrap_or_default();
            Box::pin(async move {
                let object: DynamicObject = object.map_err(ReconcileError::from_error)?;
                let recorder = &ctx.config().recorder;
                Ok(recorder.normal(&object, "Test", container).await?)
            })
        },
    ))
}

/// Stashes what it sees, drops env var `A` and retags the first container as `image:2`
/// (`image` being its name); asks to requeue after 7s.
fn retag() -> Box<dyn SubReconciler> {
    cast(TestReconciler::new(|ctx, duck: &mut Draft<PodSpecable>| {
        ctx.stash()
            .store("resourceType", ctx.resource_type().clone());
        ctx.stash().store("seen", duck.clone());
        let pod = duck.spec.template.spec.get_or_insert_with(Default::default);
        let container = &mut pod.containers[0];
        container.image = Some(format!("{}:2", container.name));
        if let Some(env) = &mut container.env {
            env.retain(|var| var.name != "A");
        }
        Outcome::ok(after(7))
    }))
}

fn after(secs: u64) -> ReconcileResult {
    ReconcileResult::requeue_after(Duration::from_secs(secs))
}

/// The TestResource, its Ready condition initializing.
fn initializing() -> TestObject {
    resource().field(
        "status.conditions",
        json!([{"type": "Ready", "status": "Unknown", "reason": "Initializing"}]),
    )
}

/// A case reconciling `resource`, expected unchanged unless a case says otherwise.
fn case(resource: TestObject) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        resource: resource.build(),
        config: config(),
        ..Default::default()
    }
}

/// A case that must fail with exactly `message` and no result.
fn failing(resource: TestObject, message: &'static str) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        should_err: true,
        verify: Some(error_is(message, ReconcileResult::done())),
        ..case(resource)
    }
}

/// Checks the error's message and the result returned with it.
fn error_is(message: &'static str, result: ReconcileResult) -> VerifyResource {
    Box::new(move |_, outcome| {
        let error = outcome.error.as_ref().map(ToString::to_string);
        match (error.as_deref() == Some(message), outcome.result == result) {
            (true, true) => Ok(()),
            _ => Err(format!("unexpected {:?} {error:?}", outcome.result)),
        }
    })
}

/// Runs named cases, each with its own reconciler.
async fn run(cases: Vec<(&str, SubReconcilerTestCase, Factory)>) {
    let mut table = BTreeMap::new();
    let mut factories = BTreeMap::new();
    for (name, case, factory) in cases {
        table.insert(name.to_string(), case);
        factories.insert(name.to_string(), factory);
    }
    TestTable(table)
        .run(move |case, _| factories[&case.name]())
        .await;
}

#[tokio::test]
async fn casts_the_test_resource() {
    let with_container = initializing().field(
        "spec.template.spec.containers",
        json!([{"name": "test-container"}]),
    );
    run(vec![
        (
            "sync success",
            SubReconcilerTestCase {
                config: ExpectConfig {
                    expect_events: vec![Event::normal(
                        &with_container.clone().build(),
                        "Test",
                        "test-container",
                    )],
                    ..config()
                },
                expect_stashed_values: vec![StashedValue::new("resourceType", gvk())],
                ..case(with_container.clone())
            },
            recording,
        ),
        (
            // reconciler.io drops `spec.paused` because the Go TestResource type has no such
            // field; a dynamic resource has no type to drop it, so it is kept (a CRD's
            // structural schema would prune it when written).
            "cast mutation",
            SubReconcilerTestCase {
                expect_resource: Some(
                    initializing()
                        .field("spec.paused", true)
                        .field("spec.template.metadata.name", "mutation")
                        .build(),
                ),
                ..case(initializing())
            },
            || {
                syncing(|view| {
                    let template = view.spec.template.get_or_insert_with(Default::default);
                    let metadata = template.metadata.get_or_insert_with(Default::default);
                    metadata.name = Some("mutation".into());
                    view.spec.paused = Some(true);
                    Outcome::done()
                })
            },
        ),
        (
            "return subreconciler result",
            SubReconcilerTestCase {
                expected_result: ReconcileResult::requeue(),
                ..case(initializing())
            },
            || syncing(|_| Outcome::ok(ReconcileResult::requeue())),
        ),
        (
            "return subreconciler err, preserves result and status update",
            SubReconcilerTestCase {
                should_err: true,
                verify: Some(error_is(
                    "subreconciler error",
                    ReconcileResult::requeue(),
                )),
                expect_resource: Some(
                    resource()
                        .field(
                            "status.conditions",
                            json!([{"type": "Ready", "status": "False", "reason": "Failed", "message": "expected error"}]),
                        )
                        .build(),
                ),
                ..case(initializing())
            },
            || {
                syncing(|view| {
                    view.status.conditions[0] = ViewCondition {
                        type_: "Ready".into(),
                        status: "False".into(),
                        reason: Some("Failed".into()),
                        message: Some("expected error".into()),
                    };
                    Outcome::with(ReconcileResult::requeue(), Some(ReconcileError::msg("subreconciler error")))
                })
            },
        ),
        (
            // The nested reconciler is not called: it would record an event.
            "marshal error",
            failing(
                initializing().field("spec.errOnMarshal", true),
                "cannot serialize the cast resource: errOnMarshal is set",
            ),
            recording,
        ),
        (
            "unmarshal error",
            SubReconcilerTestCase {
                should_err: true,
                verify: Some(Box::new(|_, outcome| {
                    let cause = outcome.error.as_ref().and_then(|e| e.find_cause::<CastError>());
                    match cause {
                        Some(CastError::Project { path, .. }) if path == "spec.template" => Ok(()),
                        _ => Err(format!("unexpected error {:?}", outcome.error)),
                    }
                })),
                ..case(initializing().field("spec.template", "not a template"))
            },
            recording,
        ),
        (
            "cast mutation patch error",
            failing(
                initializing(),
                "subreconciler error\ncannot serialize the cast resource: errOnMarshal is set",
            ),
            || {
                syncing(|view| {
                    view.spec.err_on_marshal = true;
                    Outcome::err(ReconcileError::msg("subreconciler error"))
                })
            },
        ),
        (
            // The changed resource no longer fits the resource type: in reconciler.io the
            // resource is left half rewritten (its conditions lost); here it is unchanged.
            "cast mutation patch apply error",
            SubReconcilerTestCase {
                should_err: true,
                verify: Some(Box::new(|_, outcome| {
                    let error = outcome.error.as_ref();
                    let cause = error.and_then(|e| e.find_cause::<CastError>());
                    let message = error.map(ToString::to_string).unwrap_or_default();
                    match cause {
                        Some(CastError::Restore { .. })
                            if message.starts_with("subreconciler error\n") =>
                        {
                            Ok(())
                        }
                        _ => Err(format!("unexpected error {message:?}")),
                    }
                })),
                ..case(initializing())
            },
            || {
                cast(TestReconciler::new(|_, view: &mut Draft<MetadataView>| {
                    view.metadata["name"] = json!(42);
                    Outcome::err(ReconcileError::msg("subreconciler error"))
                }))
            },
        ),
    ])
    .await;
}

/// A Deployment with fields PodSpecable does not know.
fn deployment() -> TestObject {
    TestObject::new("apps/v1", "Deployment", "web")
        .namespace(NAMESPACE)
        .spec(json!({
            "replicas": 3, "paused": true,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"name": "template-name", "labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "app", "image": "app:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
                }]}
            }
        }))
}

/// A kind of a CRD, with fields PodSpecable does not know, inside list items too.
fn custom_service() -> TestObject {
    TestObject::new("apps.example.com/v1", "Service", "svc")
        .namespace(NAMESPACE)
        .spec(json!({
            "routes": [{"path": "/", "weight": 100}],
            "template": {"spec": {"containers": [
                {"name": "app", "image": "app:1", "sidecarHint": {"mesh": true}},
                {"name": "log", "image": "log:1", "sidecarHint": {"mesh": false}}
            ]}}
        }))
}

#[tokio::test]
async fn casts_to_the_pod_specable_duck() {
    let seen = json!({"spec": {"template": {
        "metadata": {"name": "template-name", "labels": {"app": "web"}},
        "spec": {"containers": [{
            "name": "app", "image": "app:1",
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
        }]}
    }}});
    let deployment_gvk: Gvk = "apps/v1/Deployment".parse().expect("gvk");
    let mut custom = config();
    custom
        .given_api_resources
        .push(crd("apps.example.com", "Service", "services"));
    run(vec![
        (
            // The duck sees spec.template (its metadata.name too), not spec.paused, and what
            // it does not know is kept.
            "a deployment",
            SubReconcilerTestCase {
                expected_result: after(7),
                expect_resource: Some(
                    deployment()
                        .field("spec.template.spec.containers[0].image", "app:2")
                        .field(
                            "spec.template.spec.containers[0].env",
                            json!([{"name": "B", "value": "2"}]),
                        )
                        .build(),
                ),
                expect_stashed_values: vec![
                    StashedValue::new("resourceType", deployment_gvk),
                    StashedValue::new(
                        "seen",
                        serde_json::from_value::<PodSpecable>(seen).expect("duck"),
                    ),
                ],
                ..case(deployment())
            },
            retag,
        ),
        (
            "a custom kind",
            SubReconcilerTestCase {
                expected_result: after(7),
                expect_resource: Some(
                    custom_service()
                        .field("spec.template.spec.containers[0].image", "app:2")
                        .build(),
                ),
                resource: custom_service().build(),
                config: custom,
                ..Default::default()
            },
            retag,
        ),
    ])
    .await;
}

#[test]
fn names_itself_after_the_cast_type_and_validates_the_nested_reconciler() {
    let nested = || TestReconciler::new(|_, _: &mut Draft<PodSpecable>| Outcome::done());
    assert_eq!(
        CastResource::new(nested()).name(),
        "PodSpecableCastResource"
    );
    let err = CastResource::new(nested().invalid("TestReconciler is invalid"))
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"CastResource "PodSpecableCastResource" must have a valid Reconciler: TestReconciler is invalid"#
    );
}
