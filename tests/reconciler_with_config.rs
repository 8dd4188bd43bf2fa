//! WithConfig table tests: nested reconcilers read, write and track through
//! another config (cluster), while writes on the reconciled resource itself (finalizers)
//! keep going through the original config; the config function also runs at setup, where
//! the watches nested reconcilers declare are scoped to its config.

mod harness_common;

use dynrec::apiserver::ApiServer;
use dynrec::client::{Client, reasons};
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    Config, Context, Draft, OverrideSetup, ReconcileError, Setup, SubReconciler, SyncReconciler,
    Watch, WithConfig, WithFinalizer,
};
use dynrec::testing::{
    Event, ExpectConfig, PatchRef, SubReconcilerTestCase, SubReconcilerTests, TrackRequest,
    induce_failure,
};
use harness_common::*;
use kube::api::DynamicObject;
use serde_json::json;

const OTHER: &str = "other";

fn config_maps() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// The config named "other" of the case (the harness's second embedded server).
fn other_config(ctx: Option<&Context>) -> Result<Config, ReconcileError> {
    ctx.and_then(|ctx| ctx.additional_configs().get(OTHER).cloned())
        .ok_or_else(|| ReconcileError::msg("no config named \"other\""))
}

/// Creates the ConfigMap `made-by-nested` through the current config.
fn create_config_map() -> SyncReconciler {
    SyncReconciler::new_async(|ctx, _resource: &mut Draft| {
        Box::pin(async move {
            let made = config_map("made-by-nested").build();
            ctx.config().client.create(&made).await?;
            Ok(())
        })
    })
}

/// Tracks and reads the ConfigMap `settings`, copying its color into the status.
fn copy_settings() -> SyncReconciler {
    SyncReconciler::new_async(|ctx, resource: &mut Draft| {
        Box::pin(async move {
            let key = ObjectKey::namespaced(NAMESPACE, "settings");
            let settings = ctx.track_and_get(&config_maps(), &key).await?;
            resource.data["status"] = json!({"color": settings.data["data"]["color"]});
            Ok(())
        })
    })
}

/// A case whose default config serves TestResource and whose "other" config is `other`.
fn case(other: ExpectConfig) -> SubReconcilerTestCase {
    SubReconcilerTestCase {
        resource: resource().build(),
        config: config(),
        additional_configs: [(OTHER.to_string(), other)].into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn nested_reconcilers_use_the_derived_config() {
    let settings = config_map("settings")
        .field("data", json!({"color": "green"}))
        .build();
    let test_resource = resource().build();
    SubReconcilerTests::from([
        (
            "writes go to the other cluster only",
            case(ExpectConfig {
                expect_creates: vec![config_map("made-by-nested").build()],
                ..ExpectConfig::default()
            }),
        ),
        (
            "a write failing on the other cluster is the nested reconciler's error",
            SubReconcilerTestCase {
                should_err: true,
                verify: Some(Box::new(|_, outcome| {
                    let message = outcome.error.as_ref().map(|e| e.to_string());
                    match message.as_deref() {
                        Some(m) if m.contains("inducing failure for create ConfigMap") => Ok(()),
                        other => Err(format!("expected the induced failure, got {other:?}")),
                    }
                })),
                ..case(ExpectConfig {
                    with_reactors: vec![induce_failure("create", "ConfigMap").into()],
                    expect_creates: vec![config_map("made-by-nested").build()],
                    ..ExpectConfig::default()
                })
            },
        ),
    ])
    .run(|_, _| {
        Box::new(WithConfig::new(
            |ctx, _| other_config(ctx),
            create_config_map(),
        ))
    })
    .await;

    SubReconcilerTests::from([(
        "reads and tracks go through the other cluster's client and tracker",
        SubReconcilerTestCase {
            expect_resource: Some(resource().status(json!({"color": "green"})).build()),
            ..case(ExpectConfig {
                given_objects: vec![settings.clone()],
                expect_tracks: vec![TrackRequest::new(&settings, &test_resource)],
                ..ExpectConfig::default()
            })
        },
    )])
    .run(|_, _| Box::new(WithConfig::new(|ctx, _| other_config(ctx), copy_settings())))
    .await;
}

#[tokio::test]
async fn the_finalizer_of_the_resource_is_written_through_the_original_config() {
    let test_resource = resource().build();
    let finalized = resource()
        .finalizers(&["test.finalizer"])
        .resource_version("1000")
        .build();
    SubReconcilerTests::from([(
        "finalizer patched on the home cluster, child created on the other",
        SubReconcilerTestCase {
            expect_resource: Some(finalized),
            config: ExpectConfig {
                expect_patches: vec![PatchRef::merge(
                    &test_resource,
                    r#"{"metadata":{"finalizers":["test.finalizer"],"resourceVersion":"999"}}"#,
                )],
                expect_events: vec![Event::normal(
                    &test_resource,
                    reasons::FINALIZER_PATCHED,
                    "Patched finalizer \"test.finalizer\"",
                )],
                ..config()
            },
            ..case(ExpectConfig {
                expect_creates: vec![config_map("made-by-nested").build()],
                ..ExpectConfig::default()
            })
        },
    )])
    .run(|_, _| {
        let nested = WithFinalizer::new("test.finalizer", create_config_map());
        Box::new(WithConfig::new(|ctx, _| other_config(ctx), nested))
    })
    .await;
}

#[tokio::test]
async fn a_config_error_is_returned_without_reconciling() {
    SubReconcilerTests::from([(
        "no config",
        SubReconcilerTestCase {
            should_err: true,
            verify: Some(Box::new(|_, outcome| {
                let message = outcome.error.as_ref().map(|e| e.to_string());
                match message.as_deref() {
                    Some("no such cluster") => Ok(()),
                    other => Err(format!("expected \"no such cluster\", got {other:?}")),
                }
            })),
            // Nothing is created on either cluster: the nested reconciler did not run.
            ..case(ExpectConfig::default())
        },
    )])
    .run(|_, _| {
        let unreachable = |_: Option<&Context>, _: &Config| -> Result<Config, ReconcileError> {
            Err(ReconcileError::msg("no such cluster"))
        };
        Box::new(WithConfig::new(unreachable, create_config_map()))
    })
    .await;
}

fn config_over(server: &ApiServer) -> Config {
    Config::new(Client::new(server.client()), "test")
}

#[tokio::test]
async fn setup_scopes_nested_watches_to_the_derived_config() {
    let (home_server, other_server) = (ApiServer::new(), ApiServer::new());
    let (home, other) = (config_over(&home_server), config_over(&other_server));
    let nested = create_config_map().with_setup(|setup| {
        setup.watch_tracked(config_maps());
        Ok(())
    });
    let (expected_home, target) = (home.clone(), other.clone());
    let reconciler = WithConfig::new(
        move |ctx, current| match (ctx, current.is_same(&expected_home)) {
            (None, true) => Ok(target.clone()),
            _ => Err(ReconcileError::msg(
                "setup passes no request and the root's config",
            )),
        },
        nested,
    );
    let mut setup = Setup::for_config(home);
    setup.watch(Watch::For(gvk()));
    reconciler.setup(&mut setup).unwrap();
    assert_eq!(setup.watches(), &[Watch::For(gvk())]);
    let scoped = setup.scoped_watches();
    assert_eq!(scoped.len(), 1);
    assert_eq!(scoped[0].watch, Watch::Tracked(config_maps()));
    assert!(scoped[0].config.is_same(&other));
}

#[tokio::test]
async fn a_config_error_at_setup_names_the_reconciler() {
    let server = ApiServer::new();
    let reconciler = WithConfig::new(
        |_, _| Err(ReconcileError::msg("no kubeconfig for cluster \"east\"")),
        create_config_map(),
    )
    .named("east");
    let mut setup = Setup::for_config(config_over(&server));
    assert_eq!(
        reconciler.setup(&mut setup).unwrap_err().to_string(),
        r#"WithConfig "east" could not make its config at setup: no kubeconfig for cluster "east""#
    );
}

#[test]
fn validate_requires_a_valid_nested_reconciler() {
    let valid = WithConfig::new(|_, current| Ok(current.clone()), create_config_map());
    assert!(valid.validate().is_ok());
    let invalid = WithConfig::new(
        |_, current| Ok(current.clone()),
        OverrideSetup::<DynamicObject>::new(),
    );
    assert_eq!(
        invalid.validate().unwrap_err().to_string(),
        r#"WithConfig "WithConfig" must have a valid Reconciler: OverrideSetup "SkipSetup" must implement at least one of Setup or Reconciler"#
    );
}
