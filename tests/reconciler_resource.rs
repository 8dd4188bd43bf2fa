//! ResourceReconciler table tests (reconciler.io's resource_test.go), against
//! the embedded server.
//!
//! Mapping of reconciler.io's suites (every object here is a `DynamicObject`):
//! - `TestResourceReconciler` (main): every case has a counterpart named after it, except
//!   "resource is defaulted" (dynamic objects have no Go `Default` method). "sub reconciler
//!   halted" (with and without a result) expects an empty result: since reconciler.io #609 a
//!   successful status write drops the sub-reconciler's result, which the
//!   older Go expectation of `Requeue` predates. Its three "context ..." cases are one case.
//! - `_Unstructured` ("in sync status", "status update") and `_NilableStatus` are the
//!   "in sync resource is not written", "reconciler mutated status" and "status update
//!   failed" cases: the same behaviour for us.
//! - `_Duck` (14): the same cases, but Go patches the status of a duck while we always update
//!   it (there are no ducks among dynamic objects), so "status patch failed" is "status update
//!   failed".
//! - `_NoStatus`/`_EmptyStatus`: "kind without status subresource is never status-written";
//!   a TestResource without status gets `observedGeneration` written (which reconciler.io
//!   does for typed resources only, see the module doc of `resource.rs`): "observed
//!   generation is written on a resource without status".
//! - `_UnexportedFields`, `_Default`, `_LegacyDefault`, `_ObjectDefault`: no counterpart
//!   (no Go struct fields or defaulters).
//!
//! Departures tested: a quiet BeforeReconcile error requeues (reconciler.io's
//! ResourceReconciler returns it as is); dynamic objects get observedGeneration and
//! initialized conditions (reconciler.io gives them to typed resources only).

mod harness_common;

use std::time::Duration;

use dynrec::client::reasons;
use dynrec::object::{ConditionSet, Gvk, ObjectKey};
use dynrec::reconcilers::{
    Config, Context, Draft, Outcome, Predicate, ReconcileError, ReconcileResult,
    ResourceReconciler, RootReconciler, Sequence, StatusPolicy, SubReconciler, SyncReconciler,
    WithFinalizer,
};
use dynrec::testing::{
    ApiStatus, Event, ExpectConfig, PatchRef, ReconcilerTestCase, TestObject, TrackRequest,
    induce_failure,
};
use futures::future::BoxFuture;
use harness_common::*;
use jiff::Timestamp;
use kube::api::DynamicObject;
use serde_json::{Value, json};

type Factory = harness_common::Factory<ReconcilerTestCase>;

/// What a sub-reconciler does to the resource and returns.
type Step = fn(&mut DynamicObject) -> Outcome;

/// A SyncReconciler running `step` (not while the resource is being deleted).
fn syncing(step: Step) -> SyncReconciler {
    SyncReconciler::with_result(move |_ctx, r: &mut Draft| step(r))
}

/// A root over TestResource built by `build` from the config.
fn root(build: impl Fn(&Config) -> ResourceReconciler + 'static) -> Factory {
    Box::new(move |config| Box::new(build(config)) as Box<dyn RootReconciler>)
}

/// A root over TestResource whose sub-reconciler runs `step`, adjusted by `adjust`.
fn adjusted(step: Step, adjust: fn(ResourceReconciler) -> ResourceReconciler) -> Factory {
    root(move |config| {
        adjust(ResourceReconciler::new(
            gvk(),
            syncing(step),
            config.clone(),
        ))
    })
}

/// A root over TestResource whose sub-reconciler runs `step`.
fn plain(step: Step) -> Factory {
    adjusted(step, |r| r)
}

/// A root over TestResource with `sub` as its sub-reconciler.
fn over(sub: fn() -> Box<dyn SubReconciler>) -> Factory {
    root(move |config| ResourceReconciler::new(gvk(), sub(), config.clone()))
}

/// Writes `status.fields.Reconciler = "ran"`.
fn mutate_status(resource: &mut DynamicObject) -> Outcome {
    resource.data["status"]["fields"] = json!({"Reconciler": "ran"});
    Outcome::done()
}

fn fail(_: &mut DynamicObject) -> Outcome {
    Outcome::err(ReconcileError::msg("reconciler error"))
}

fn nothing(_: &mut DynamicObject) -> Outcome {
    Outcome::done()
}

/// The resource as the reconciler leaves it in sync: generation observed.
fn observed() -> TestObject {
    resource().status(json!({"observedGeneration": 1}))
}

/// The resource with `fields` in status and its generation observed.
fn with_status_fields(fields: Value) -> DynamicObject {
    resource()
        .status(json!({"fields": fields, "observedGeneration": 1}))
        .build()
}

fn terminating() -> TestObject {
    observed().finalizers(&["test.finalizer"]).terminating()
}

fn status_updated(resource: &DynamicObject) -> Event {
    Event::normal(resource, reasons::STATUS_UPDATED, "Updated status")
}

/// A case requesting the test resource with `given` objects.
fn given(objects: Vec<DynamicObject>) -> ReconcilerTestCase {
    ReconcilerTestCase {
        request: request(),
        config: ExpectConfig {
            given_objects: objects,
            ..config()
        },
        ..Default::default()
    }
}

/// A case whose sub-reconciler writes `written` to the status of `given`: a status update
/// and its event.
fn status_write(given_resource: DynamicObject, written: DynamicObject) -> ReconcilerTestCase {
    let mut case = given(vec![given_resource.clone()]);
    case.config.expect_status_updates = vec![written];
    case.config.expect_events = vec![status_updated(&given_resource)];
    case
}

fn failing(mut case: ReconcilerTestCase) -> ReconcilerTestCase {
    case.should_err = true;
    case
}

fn expecting(result: ReconcileResult, mut case: ReconcilerTestCase) -> ReconcilerTestCase {
    case.expected_result = result;
    case
}

/// A Sequence that halts after writing `status.fields.want`, before a step that would fail
/// after writing another field; the halting step returns `result`.
fn halting(result: ReconcileResult) -> Box<dyn SubReconciler> {
    let halt = SyncReconciler::with_result(move |_ctx, r: &mut Draft| {
        r.data["status"]["fields"] = json!({"want": "this to run"});
        Outcome::with(result, Some(ReconcileError::halt()))
    });
    let after = syncing(|r| {
        r.data["status"]["fields"] = json!({"don't want": "this to run"});
        fail(r)
    });
    Box::new(Sequence::new(vec![Box::new(halt), Box::new(after)]))
}

/// A BeforeReconcile hook returning `outcome`.
fn before(
    outcome: fn() -> Outcome,
) -> impl Fn(Context) -> BoxFuture<'static, (Context, Outcome)> + Send + Sync + 'static {
    move |ctx| Box::pin(async move { (ctx, outcome()) })
}

/// The sub-reconciler of "context ...": checks what the context carries at `now`.
fn context_checks(config: &Config, now: Timestamp) -> SyncReconciler {
    let config = config.clone();
    SyncReconciler::new(move |ctx, _r: &mut Draft| {
        check_context(ctx, &config, &gvk(), &request(), now)
    })
}

/// BeforeReconcile reads ConfigMap "settings" (tracking it) and stashes its color, which
/// the sub-reconciler writes to status.
fn reading_settings(config: &Config) -> ResourceReconciler {
    let read_settings = |ctx: Context| -> BoxFuture<'static, (Context, Outcome)> {
        Box::pin(async move {
            let key = ObjectKey::namespaced(NAMESPACE, "settings");
            let configmaps = Gvk::new("", "v1", "ConfigMap");
            let outcome = match ctx.track_and_get(&configmaps, &key).await {
                Ok(settings) => {
                    let color = settings.data["data"]["color"].as_str().unwrap_or("");
                    ctx.stash().store("color", color.to_string());
                    Outcome::done()
                }
                Err(err) => Outcome::err(ReconcileError::msg(err.to_string())),
            };
            (ctx, outcome)
        })
    };
    let copy_color = SyncReconciler::new(|ctx, resource: &mut Draft| {
        let color: Option<String> = ctx.stash().retrieve("color");
        resource.data["status"]["fields"]["color"] = json!(color);
        Ok(())
    });
    ResourceReconciler::new(gvk(), copy_color, config.clone()).before_reconcile(read_settings)
}

/// BeforeReconcile creates the resource (it is not a given object) through the config.
fn creating_first(config: &Config) -> ResourceReconciler {
    ResourceReconciler::new(gvk(), syncing(mutate_status), config.clone()).before_reconcile(|ctx| {
        Box::pin(async move {
            let created = ctx.config().client.create(&resource().build()).await;
            let outcome = created.map_or_else(Outcome::err, |_| Outcome::done());
            (ctx, outcome)
        })
    })
}

#[tokio::test]
async fn resource_reconciler() {
    let now = Timestamp::from_second(1_700_000_000).unwrap();
    let lifecycle = Lifecycle::default();
    let ran = lifecycle.clone();
    let settings = config_map("settings")
        .field("data", json!({"color": "blue"}))
        .build();
    let conflict = ApiStatus::new(409, "Conflict", "the object has been modified");
    run_cases(vec![
        (
            "resource does not exist",
            ReconcilerTestCase {
                request: request(),
                config: config(),
                ..Default::default()
            },
            plain(fail),
        ),
        (
            "ignore deleted resource",
            given(vec![terminating().build()]),
            plain(fail),
        ),
        (
            "ignore deleted resource without finalizers",
            given(vec![observed().terminating().build()]),
            over(|| Box::new(syncing(fail).sync_during_finalization(true))),
        ),
        (
            "error fetching resource",
            failing(ReconcilerTestCase {
                config: ExpectConfig {
                    with_reactors: vec![induce_failure("get", "TestResource").into()],
                    ..given(vec![observed().build()]).config
                },
                ..given(vec![])
            }),
            plain(fail),
        ),
        (
            "status conditions are initialized",
            status_write(
                resource().build(),
                resource()
                    .status(json!({
                        "conditions": [{"type": "Ready", "status": "Unknown", "reason": "Initializing", "message": ""}],
                        "observedGeneration": 1
                    }))
                    .build(),
            ),
            adjusted(nothing, |r| r.conditions(ConditionSet::living(&[]))),
        ),
        (
            "reconciler mutated status",
            status_write(observed().build(), with_status_fields(json!({"Reconciler": "ran"}))),
            plain(mutate_status),
        ),
        (
            "in sync resource is not written",
            given(vec![with_status_fields(json!({"Reconciler": "ran"}))]),
            plain(mutate_status),
        ),
        (
            "observed generation is written on a resource without status",
            status_write(resource().build(), observed().build()),
            plain(nothing),
        ),
        (
            "kind without status subresource is never status-written",
            ReconcilerTestCase {
                request: ObjectKey::namespaced(NAMESPACE, "settings"),
                ..given(vec![settings.clone()])
            },
            root(|config| {
                let configmaps = Gvk::new("", "v1", "ConfigMap");
                ResourceReconciler::new(configmaps, syncing(nothing), config.clone())
            }),
        ),
        (
            "status does not update for deleted resource",
            given(vec![terminating().build()]),
            over(|| Box::new(syncing(mutate_status).sync_during_finalization(true))),
        ),
        (
            "status updates for deleting resource when allowed",
            status_write(
                terminating().build(),
                with_status_fields(json!({"Reconciler": "ran"})),
            ),
            root(|config| {
                let sub = syncing(mutate_status).sync_during_finalization(true);
                ResourceReconciler::new(gvk(), sub, config.clone())
                    .status_policy(StatusPolicy::OwnedDuringDeletion)
            }),
        ),
        (
            // KRO's instances write DELETING during deletion; the status write after their
            // last finalizer is cleared finds the resource gone, which is no error.
            "status of a deleting resource whose last finalizer the reconcile cleared",
            ReconcilerTestCase {
                config: ExpectConfig {
                    expect_events: vec![Event::normal(
                        &terminating().build(),
                        reasons::FINALIZER_PATCHED,
                        r#"Patched finalizer "test.finalizer""#,
                    )],
                    expect_patches: vec![PatchRef::merge(
                        &terminating().build(),
                        r#"{"metadata":{"finalizers":null,"resourceVersion":"999"}}"#,
                    )],
                    expect_status_updates: vec![with_status_fields(json!({"Reconciler": "ran"}))],
                    ..given(vec![terminating().build()]).config
                },
                ..given(vec![])
            },
            root(|config| {
                let sub = syncing(mutate_status).sync_during_finalization(true);
                let sub = WithFinalizer::new("test.finalizer", sub);
                ResourceReconciler::new(gvk(), sub, config.clone())
                    .status_policy(StatusPolicy::OwnedDuringDeletion)
            }),
        ),
        (
            "skip status updates",
            given(vec![observed().build()]),
            adjusted(mutate_status, |r| r.status_policy(StatusPolicy::NeverWritten)),
        ),
        (
            "sub reconciler erred",
            failing(given(vec![observed().build()])),
            plain(fail),
        ),
        (
            "sub reconciler erred without observing the generation",
            failing(given(vec![resource().build()])),
            plain(fail),
        ),
        (
            "sub reconciler halted",
            status_write(observed().build(), with_status_fields(json!({"want": "this to run"}))),
            over(|| halting(ReconcileResult::done())),
        ),
        (
            "sub reconciler halted with result",
            status_write(observed().build(), with_status_fields(json!({"want": "this to run"}))),
            over(|| halting(ReconcileResult::requeue_after(Duration::from_secs(10)))),
        ),
        (
            "sub reconciler halted without status change requeues, generation observed",
            expecting(ReconcileResult::requeue(), given(vec![observed().build()])),
            plain(|_| Outcome::err(ReconcileError::halt())),
        ),
        (
            "status update failed",
            failing(ReconcilerTestCase {
                config: ExpectConfig {
                    with_reactors: vec![
                        induce_failure("update", "TestResource")
                            .subresource("status")
                            .into(),
                    ],
                    expect_status_updates: vec![with_status_fields(json!({"Reconciler": "ran"}))],
                    expect_events: vec![Event::warning(
                        &resource().build(),
                        reasons::STATUS_UPDATE_FAILED,
                        "Failed to update status: inducing failure for update TestResource",
                    )],
                    ..given(vec![observed().build()]).config
                },
                ..given(vec![])
            }),
            plain(mutate_status),
        ),
        (
            "status update conflict is silenced",
            ReconcilerTestCase {
                config: ExpectConfig {
                    with_reactors: vec![
                        induce_failure("update", "TestResource")
                            .error(conflict)
                            .into(),
                    ],
                    expect_status_updates: vec![with_status_fields(json!({"Reconciler": "ran"}))],
                    ..given(vec![observed().build()]).config
                },
                ..given(vec![])
            },
            plain(mutate_status),
        ),
        (
            "status write swallows the sub-reconciler error and result",
            status_write(observed().build(), with_status_fields(json!({"Reconciler": "ran"}))),
            plain(|r| {
                mutate_status(r);
                Outcome::with(ReconcileResult::requeue(), Some(ReconcileError::msg("boom")))
            }),
        ),
        (
            "skip status update error is returned and nothing written",
            failing(given(vec![observed().build()])),
            plain(|r| {
                mutate_status(r);
                Outcome::err(ReconcileError::skip_status_update())
            }),
        ),
        (
            "quiet skip status update error requeues",
            expecting(ReconcileResult::requeue(), given(vec![observed().build()])),
            plain(|r| {
                mutate_status(r);
                Outcome::err(ReconcileError::skip_status_update().with_quiet())
            }),
        ),
        (
            "result is propagated",
            expecting(
                ReconcileResult::requeue_after(Duration::from_secs(60)),
                given(vec![observed().build()]),
            ),
            plain(|_| Outcome::ok(ReconcileResult::requeue_after(Duration::from_secs(60)))),
        ),
        (
            "context is stashable, has config, request, resource type and now",
            ReconcilerTestCase {
                now: Some(now),
                ..given(vec![observed().build()])
            },
            root(move |config| ResourceReconciler::new(gvk(), context_checks(config, now), config.clone())),
        ),
        (
            "context can be augmented in Prepare and accessed in Cleanup",
            ReconcilerTestCase {
                prepare: lifecycle.prepare(),
                clean_up: lifecycle.clean_up(),
                ..given(vec![observed().build()])
            },
            root(move |config| {
                let ran = ran.clone();
                let sub = SyncReconciler::new(move |_ctx, _r: &mut Draft| {
                    ran.reconciled()
                });
                ResourceReconciler::new(gvk(), sub, config.clone())
            }),
        ),
        (
            "before reconcile is called before reconcile and after the context is populated",
            ReconcilerTestCase {
                config: ExpectConfig {
                    expect_creates: vec![resource().build()],
                    expect_status_updates: vec![with_status_fields(json!({"Reconciler": "ran"}))],
                    expect_events: vec![status_updated(&resource().build())],
                    ..config()
                },
                ..given(vec![])
            },
            root(creating_first),
        ),
        (
            "before reconcile can influence the result",
            expecting(ReconcileResult::requeue(), given(vec![observed().build()])),
            adjusted(nothing, |r| {
                r.before_reconcile(before(|| Outcome::ok(ReconcileResult::requeue())))
            }),
        ),
        (
            "before reconcile can replace the context (stashing what it read and tracked)",
            {
                let mut case = status_write(
                    observed().build(),
                    with_status_fields(json!({"color": "blue"})),
                );
                case.config.given_objects.push(settings.clone());
                case.config.expect_tracks = vec![TrackRequest::new(&settings, &resource().build())];
                case
            },
            root(reading_settings),
        ),
        (
            "before reconcile errors shortcut execution",
            failing(given(vec![observed().build()])),
            adjusted(mutate_status, |r| {
                r.before_reconcile(before(|| Outcome::err(ReconcileError::msg("test"))))
            }),
        ),
        // Quirk 3 fixed: reconciler.io returns a quiet BeforeReconcile error as an error.
        (
            "quiet before reconcile error requeues",
            expecting(ReconcileResult::requeue(), given(vec![observed().build()])),
            adjusted(mutate_status, |r| {
                r.before_reconcile(before(|| Outcome::err(ReconcileError::quiet())))
            }),
        ),
        (
            "after reconcile can overwrite the result",
            given(vec![observed().build()]),
            adjusted(fail, |r| {
                r.after_reconcile(|_, _| Box::pin(async { Outcome::done() }))
            }),
        ),
        (
            "after reconcile sees the aggregate of before and reconcile results",
            expecting(
                ReconcileResult::requeue_after(Duration::from_secs(5)),
                given(vec![observed().build()]),
            ),
            adjusted(
                |_| Outcome::ok(ReconcileResult::requeue_after(Duration::from_secs(20))),
                |r| {
                    let after_10s = || Outcome::ok(ReconcileResult::requeue_after(Duration::from_secs(10)));
                    r.before_reconcile(before(after_10s)).after_reconcile(|_, outcome| {
                        Box::pin(async move {
                            match outcome.result.requeue_after {
                                Some(d) if d == Duration::from_secs(10) => Outcome::ok(
                                    ReconcileResult::requeue_after(Duration::from_secs(5)),
                                ),
                                other => Outcome::err(ReconcileError::msg(format!(
                                    "after reconcile saw {other:?}"
                                ))),
                            }
                        })
                    })
                },
            ),
        ),
        (
            "skip request",
            given(vec![observed().build()]),
            adjusted(fail, |r| {
                r.skip_request(Predicate::new(|_, req: &ObjectKey| req.name == NAME))
                    .before_reconcile(before(|| Outcome::err(ReconcileError::msg("before ran"))))
            }),
        ),
        (
            "skip resource",
            given(vec![observed().build()]),
            adjusted(fail, |r| {
                r.skip_resource(Predicate::new(|_, r: &DynamicObject| {
                    r.metadata.generation == Some(1)
                }))
            }),
        ),
    ])
    .await;
    lifecycle.assert_complete();
}

/// A sub-reconciler writes to the reconcile's own copy of the resource (its `Draft`): the
/// object the shared cache holds, which every other reconcile reads, never shows the write;
/// only the status the root writes reaches the server and, through the watch, the cache.
#[tokio::test]
async fn writes_during_a_reconcile_never_reach_the_cached_object() {
    let server = dynrec::apiserver::ApiServer::new();
    let client = dynrec::client::Client::new(server.client());
    let crd = dynrec::testing::crd(GROUP, "TestResource", "testresources");
    client.create(&crd).await.expect("the CRD");
    let namespace = TestObject::new("v1", "Namespace", NAMESPACE).build();
    client.create(&namespace).await.expect("the namespace");
    client
        .create(&resource().build())
        .await
        .expect("the resource");
    let cache = client.cache(&gvk()).await.expect("a cache");
    assert!(cache.wait_until_ready().await);
    let read_before = client.get(&gvk(), &request()).await.expect("cached");
    let scribble = SyncReconciler::new(|_ctx, resource: &mut Draft| {
        resource.data["spec"]["scratch"] = json!("never persisted");
        resource.data["status"]["fields"] = json!({"seen": "yes"});
        Ok(())
    });
    let root = ResourceReconciler::new(gvk(), scribble, Config::new(client.clone(), "test"));
    let outcome = root.reconcile(&request()).await;
    assert!(outcome.is_ok(), "{:?}", outcome.error);
    assert_eq!(read_before.data["spec"], json!({"fields": {}}));
    assert!(read_before.data["status"].is_null(), "{}", read_before.data);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let cached = loop {
        let cached = client.get(&gvk(), &request()).await.expect("cached");
        if cached.data["status"]["fields"]["seen"] == "yes" {
            break cached;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the status write never reached the cache"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(cached.data["spec"], json!({"fields": {}}));
}
