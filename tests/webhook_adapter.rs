//! AdmissionWebhookAdapter table tests (reconciler.io's
//! webhook_test.go, every case by name), plus its validation and what dynrec adds:
//! the hooks, denying and warning through the response, and a panic.

mod flow_common;
mod harness_common;

use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    CastResource, Config, Context, Draft, HasMetadata, Outcome, ReconcileError, Sequence,
    SubReconciler, SyncReconciler,
};
use dynrec::testing::{AdmissionWebhookTestCase, StashedValue, TestObject, TrackRequest};
use dynrec::webhook::{
    AdmissionResponse, AdmissionWebhookAdapter, HttpRequestInfo, admission_request,
    admission_response, http_request,
};
use flow_common::TestReconciler;
use harness_common::*;
use jiff::Timestamp;
use kube::api::DynamicObject;
use serde_json::{Value, json};

type Factory = harness_common::Factory<AdmissionWebhookTestCase>;

const UID: &str = "9deefaa1-2c90-4f40-9c7b-3f5c1fd75dde";

/// The TestResource of the Go suite: no spec fields, a Ready condition initializing.
fn webhook_resource() -> TestObject {
    TestObject::new(&format!("{GROUP}/v1"), "TestResource", NAME)
        .namespace(NAMESPACE)
        .status(json!({"conditions": [
            {"type": "Ready", "status": "Unknown", "reason": "Initializing"}
        ]}))
}

/// A CREATE request of `object` (reconciler.io's `request.Object(resource)`).
fn create(object: Value) -> Value {
    json!({
        "uid": UID,
        "kind": {"group": GROUP, "version": "v1", "kind": "TestResource"},
        "resource": {"group": GROUP, "version": "v1", "resource": "testresources"},
        "namespace": NAMESPACE,
        "name": NAME,
        "operation": "CREATE",
        "userInfo": {"username": "tester"},
        "object": object,
    })
}

fn object(resource: TestObject) -> Value {
    serde_json::to_value(resource.build()).unwrap()
}

/// An allowed response (the harness fills in the uid and code 200).
fn allowed() -> AdmissionResponse {
    let mut response = AdmissionResponse::invalid("");
    response.allowed = true;
    response.result = Default::default();
    response
}

/// A denial with `code` and `message`.
fn denied(code: u16, message: &str) -> AdmissionResponse {
    let mut response = allowed();
    response.allowed = false;
    response.result.code = code;
    response.result.message = message.into();
    response
}

/// `allowed()` with a JSON patch.
fn patched(patch: Value) -> AdmissionResponse {
    allowed()
        .with_patch(serde_json::from_value(patch).unwrap())
        .unwrap()
}

fn case(request: Value, expected: AdmissionResponse) -> AdmissionWebhookTestCase {
    AdmissionWebhookTestCase {
        request,
        config: config(),
        expected_response: expected,
        ..Default::default()
    }
}

/// The adapter around a sync step.
fn syncing(
    step: impl Fn(&Context, &mut DynamicObject) -> Result<(), ReconcileError> + Send + Sync + 'static,
) -> SyncReconciler {
    let step = std::sync::Arc::new(step);
    SyncReconciler::new(move |ctx, resource: &mut Draft| step(ctx, resource))
}

fn adapter(reconciler: impl SubReconciler + 'static) -> Factory {
    let reconciler = std::sync::Arc::new(reconciler);
    Box::new(move |config: &Config| {
        AdmissionWebhookAdapter::new(Shared(reconciler.clone()), config.clone())
    })
}

/// A reconciler shared by the factory's adapters.
struct Shared<R>(std::sync::Arc<R>);

#[async_trait::async_trait]
impl<R: SubReconciler> SubReconciler for Shared<R> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn validate(&self) -> Result<(), dynrec::reconcilers::ValidationError> {
        self.0.validate()
    }
    async fn reconcile(&self, ctx: &Context, resource: &mut Draft) -> dynrec::reconcilers::Outcome {
        self.0.reconcile(ctx, resource).await
    }
}

fn noop() -> Factory {
    adapter(syncing(|_, _| Ok(())))
}

#[tokio::test]
async fn admission_webhook_adapter() {
    let lifecycle = Lifecycle::default();
    let reconciled = lifecycle.clone();
    let http = HttpRequestInfo::post("/path");
    let expected_http = http.clone();
    let resource_request = create(object(webhook_resource()));
    let context_request = resource_request.clone();
    let config_map_tracked = config_map(NAME).build();
    let mut delete = create(Value::Null);
    delete["operation"] = json!("DELETE");
    delete["oldObject"] = object(webhook_resource().spec(json!({"fields": {"hello": "world"}})));
    let mut invalid = create(Value::Null);
    invalid["object"] = json!("{");
    run_cases(vec![
        (
            "allowed by default with no mutation",
            case(resource_request.clone(), allowed()),
            noop(),
        ),
        (
            "mutations generate patches in response",
            case(
                resource_request.clone(),
                patched(json!([{"op": "add", "path": "/spec", "value": {"fields": {"hello": "world"}}}])),
            ),
            adapter(syncing(|_, resource| {
                resource.data["spec"] = json!({"fields": {"hello": "world"}});
                Ok(())
            })),
        ),
        (
            "reconcile errors return http errors",
            case(resource_request.clone(), denied(500, "reconcile error")),
            adapter(syncing(|_, _| Err(ReconcileError::msg("reconcile error")))),
        ),
        (
            "invalid json returns http errors",
            case(
                invalid,
                denied(500, "invalid type: string \"{\", expected struct DynamicObject"),
            ),
            noop(),
        ),
        (
            "delete operations load resource from old object",
            case(delete, allowed()),
            adapter(syncing(|_, resource| {
                match resource.data["spec"]["fields"]["hello"] == "world" {
                    true => Ok(()),
                    false => Err(ReconcileError::msg("expected field hello to be world")),
                }
            })),
        ),
        (
            "config observations are asserted, should be extremely rare in standard use",
            AdmissionWebhookTestCase {
                config: dynrec::testing::ExpectConfig {
                    given_objects: vec![config_map_tracked.clone()],
                    expect_tracks: vec![TrackRequest::new(
                        &config_map_tracked,
                        &webhook_resource().build(),
                    )],
                    ..config()
                },
                ..case(resource_request.clone(), allowed())
            },
            adapter(SyncReconciler::new_async(|ctx, _resource: &mut Draft| {
                Box::pin(async move {
                    let config_maps = Gvk::new("", "v1", "ConfigMap");
                    let key = ObjectKey::namespaced(NAMESPACE, NAME);
                    ctx.track_and_get(&config_maps, &key).await?;
                    Ok(())
                })
            })),
        ),
        (
            "context is defined",
            AdmissionWebhookTestCase {
                http_request: Some(http.clone()),
                now: Some(Timestamp::UNIX_EPOCH),
                ..case(resource_request.clone(), allowed())
            },
            Box::new(move |config: &Config| {
                let expected_object = context_request["object"].clone();
                let expected_http = expected_http.clone();
                let config_seen = config.clone();
                let check = syncing(move |ctx, _| {
                    let request = admission_request(ctx).map(|r| {
                        let object = r.object.map(|o| serde_json::to_value(o).unwrap());
                        (r.uid, r.name, r.namespace, object)
                    });
                    let expected = (UID.into(), NAME.into(), Some(NAMESPACE.into()), Some(expected_object.clone()));
                    let response = admission_response(ctx).map(|r| r.get());
                    let http = http_request(ctx).map(|h| (h.method, h.path));
                    let problems: Vec<&str> = [
                        (request != Some(expected), "admission request"),
                        (response.map(|r| (r.allowed, r.uid)) != Some((true, UID.into())), "admission response"),
                        (http != Some((expected_http.method.clone(), expected_http.path.clone())), "http request"),
                    ]
                    .into_iter()
                    .filter_map(|(wrong, what)| wrong.then_some(what))
                    .collect();
                    if !problems.is_empty() {
                        return Err(ReconcileError::msg(format!("context is wrong: {problems:?}")));
                    }
                    check_context(ctx, &config_seen, &gvk(), &request_key(), Timestamp::UNIX_EPOCH)
                });
                AdmissionWebhookAdapter::new(check, config.clone())
            }),
        ),
        (
            "context is stashable",
            AdmissionWebhookTestCase {
                expect_stashed_values: vec![StashedValue::new("greeting", "hello".to_string())],
                ..case(resource_request.clone(), allowed())
            },
            adapter(Sequence::new(vec![
                Box::new(syncing(|ctx, _| {
                    ctx.stash().store("greeting", "hello".to_string());
                    Ok(())
                })),
                Box::new(syncing(|ctx, _| {
                    match ctx.stash().retrieve::<String>("greeting").as_deref() {
                        Some("hello") => Ok(()),
                        _ => Err(ReconcileError::msg("unexpected stash value retrieved")),
                    }
                })),
            ])),
        ),
        (
            "context can be augmented in Prepare and accessed in Cleanup",
            AdmissionWebhookTestCase {
                prepare: lifecycle.prepare(),
                clean_up: lifecycle.clean_up(),
                ..case(resource_request.clone(), allowed())
            },
            adapter(syncing(move |_, _| reconciled.reconciled())),
        ),
        (
            "given stashed values reach the reconciler",
            AdmissionWebhookTestCase {
                given_stashed_values: vec![StashedValue::new("greeting", "hi".to_string())],
                ..case(resource_request.clone(), allowed())
            },
            adapter(syncing(|ctx, _| {
                match ctx.stash().retrieve::<String>("greeting").as_deref() {
                    Some("hi") => Ok(()),
                    _ => Err(ReconcileError::msg("the given value was not stashed")),
                }
            })),
        ),
    ])
    .await;
    lifecycle.assert_complete();
}

/// The request key of the test resource.
fn request_key() -> ObjectKey {
    request()
}

/// What dynrec adds: BeforeHandle and AfterHandle, denying and warning through the
/// response in the context, a reconciler's own patch kept, and a panic.
#[tokio::test]
async fn admission_webhook_adapter_hooks_and_response() {
    let resource_request = create(object(webhook_resource()));
    let mut warned = allowed();
    warned.warnings = Some(vec![
        format!("before {NAME}"),
        "spec is empty".into(),
        "after".into(),
    ]);
    let mut own_patch =
        patched(json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]));
    own_patch.warnings = None;
    run_cases(vec![
        (
            "BeforeHandle, the reconciler and AfterHandle all reach the response",
            case(resource_request.clone(), warned),
            Box::new(|config: &Config| {
                let warn = syncing(|ctx, _| {
                    admission_response(ctx).unwrap().warn("spec is empty");
                    Ok(())
                });
                AdmissionWebhookAdapter::new(warn, config.clone())
                    .before_handle(|ctx, response| {
                        // BeforeHandle sees the request.
                        let seen = admission_request(ctx).map(|r| r.name);
                        response
                            .warnings
                            .get_or_insert_with(Vec::new)
                            .push(format!("before {}", seen.unwrap_or_default()))
                    })
                    .after_handle(|_, response| {
                        response
                            .warnings
                            .get_or_insert_with(Vec::new)
                            .push("after".into())
                    })
            }),
        ),
        (
            "a denial set on the response keeps its code and message",
            case(
                resource_request.clone(),
                denied(403, "greeting \"boo\" is forbidden"),
            ),
            adapter(syncing(|ctx, _| {
                admission_response(ctx)
                    .unwrap()
                    .deny(403, "greeting \"boo\" is forbidden");
                Err(ReconcileError::msg("denied").with_quiet())
            })),
        ),
        (
            "a patch the reconciler set is not replaced by the computed one",
            case(resource_request.clone(), own_patch),
            adapter(syncing(|ctx, resource| {
                resource.data["spec"] = json!({"ignored": true});
                let patch = serde_json::from_value(
                    json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]),
                )
                .unwrap();
                let handle = admission_response(ctx).unwrap();
                let with_patch = handle.get().with_patch(patch).unwrap();
                handle.update(|response| *response = with_patch);
                Ok(())
            })),
        ),
        (
            "a duck reconciler through CastResource mutates the object",
            case(
                resource_request.clone(),
                patched(json!([{"op": "add", "path": "/spec", "value": {"size": 1}}])),
            ),
            adapter(CastResource::new(SyncReconciler::new(
                |_ctx, sized: &mut Draft<Sized>| {
                    sized.spec.size.get_or_insert(1);
                    Ok(())
                },
            ))),
        ),
        (
            "a panic in the reconciler is the test's panic",
            AdmissionWebhookTestCase {
                should_panic: true,
                ..case(resource_request.clone(), allowed())
            },
            adapter(syncing(|_, _| panic!("boom"))),
        ),
    ])
    .await;
}

/// A duck of any object with a `spec.size`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Sized {
    #[serde(default)]
    metadata: kube::api::ObjectMeta,
    #[serde(default)]
    spec: SizedSpec,
}

impl HasMetadata for Sized {
    fn object_meta(&self) -> &kube::api::ObjectMeta {
        &self.metadata
    }
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct SizedSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    size: Option<i64>,
}

/// reconciler.io's Validate cases for the adapter; a missing Reconciler cannot be built
/// here (the constructor takes it), so its place is taken by the default name.
#[tokio::test]
async fn admission_webhook_adapter_validate() {
    let server = dynrec::apiserver::ApiServer::new();
    let config = || {
        let client = dynrec::client::Client::new(server.client());
        Config::new(client, "test")
    };
    let valid = || TestReconciler::new(|_, _: &mut Draft| Outcome::done());
    let invalid = || valid().invalid("TestReconciler is invalid");
    let default_name = AdmissionWebhookAdapter::new(valid(), config());
    assert_eq!(default_name.name(), "AdmissionWebhookAdapter");
    let cases = vec![
        ("valid", AdmissionWebhookAdapter::new(valid(), config()), Ok(())),
        ("default name", default_name, Ok(())),
        (
            "with name",
            AdmissionWebhookAdapter::new(valid(), config()).named("widgets"),
            Ok(()),
        ),
        (
            "invalid nested reconciler",
            AdmissionWebhookAdapter::new(invalid(), config()).named("widgets"),
            Err(r#"AdmissionWebhookAdapter "widgets" must have a valid Reconciler: TestReconciler is invalid"#.to_string()),
        ),
    ];
    check_validation_with(cases, AdmissionWebhookAdapter::validate);
}
