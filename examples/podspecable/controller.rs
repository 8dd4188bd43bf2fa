//! The `podspecable` demo: one cross-kind duck reconciler over `PodSpecable`, run for every
//! kind found at run time to implement it (a Deployment, a StatefulSet, a CRD kind with
//! `spec.template`, a CronJob through dynrec's built-in `DuckMapping`...). It injects the entries of a ConfigMap it tracks as environment
//! variables into every container, so editing the ConfigMap re-reconciles every workload.
//! It writes only by merge patch of what the duck changed, never by update.

use k8s_openapi::api::core::v1::EnvVar;
use kube::api::DynamicObject;

use dynrec::client::{Ducked, Projection};
use dynrec::duck_types::PodSpecable;
use dynrec::ducks::{DuckControllers, DuckType, KindMatch};
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    Config, Context, Draft, OverrideSetup, Permission, ReconcileError, ResourceReconciler,
    SubReconciler, SyncReconciler,
};
use dynrec::runtime::{LaunchError, Manager, RunArgs, run_controllers};
use tracing::{debug, error};

/// The reason of the Warning Event on a workload whose fields do not fit the duck.
pub const NOT_PODSPECABLE: &str = "NotPodSpecable";

/// The ConfigMap (in each workload's namespace) whose entries are injected.
pub const ENV_CONFIG_MAP: &str = "injected-env";

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// Sets `name=value` in a container's env, replacing a variable of that name.
fn set_env(env: &mut Vec<EnvVar>, name: &str, value: &str) {
    let wanted = EnvVar {
        name: name.to_string(),
        value: Some(value.to_string()),
        value_from: None,
    };
    match env.iter_mut().find(|e| e.name == name) {
        Some(existing) => *existing = wanted,
        None => env.push(wanted),
    }
}

/// Injects the tracked ConfigMap's entries into every container of the workload (its pod
/// template where `projection` says the kind keeps it).
async fn inject(
    ctx: &Context,
    gvk: &Gvk,
    projection: &Projection,
    workload: &DynamicObject,
) -> Result<(), ReconcileError> {
    let namespace = workload.metadata.namespace.clone().unwrap_or_default();
    let key = ObjectKey::namespaced(&namespace, ENV_CONFIG_MAP);
    // Tracked before it is read: creating the ConfigMap later re-reconciles this workload.
    let entries = match ctx.track_and_get(&config_map_gvk(), &key).await {
        Ok(config_map) => config_map.data["data"]
            .as_object()
            .cloned()
            .unwrap_or_default(),
        Err(err) if err.is_not_found() => return Ok(()),
        Err(err) => return Err(err.into()),
    };
    let mut ducked = match Ducked::<PodSpecable>::project_through(gvk, workload, projection) {
        Ok(ducked) => ducked,
        // Only this object is skipped, until it is edited: the others are reconciled.
        Err(err) => {
            error!(%err, "workload is not a PodSpecable; skipped");
            let note = format!("Not injected: {err}");
            let recorded = ctx
                .config()
                .recorder
                .warning(workload, NOT_PODSPECABLE, note);
            if let Err(err) = recorded.await {
                debug!(%err, "event not recorded");
            }
            return Ok(());
        }
    };
    let Some(pod) = ducked.duck.spec.template.spec.as_mut() else {
        return Ok(());
    };
    for container in &mut pod.containers {
        let env = container.env.get_or_insert_with(Vec::new);
        for (name, value) in &entries {
            set_env(env, name, value.as_str().unwrap_or_default());
        }
    }
    let patched = ctx
        .config()
        .client
        .duck::<PodSpecable>()
        .patch(&ducked)
        .await?;
    if patched.metadata.resource_version != workload.metadata.resource_version {
        println!(
            "{gvk} {}: injected {} variables from ConfigMap {ENV_CONFIG_MAP}",
            ctx.request(),
            entries.len()
        );
    }
    Ok(())
}

/// The duck reconciler for one kind: sync by patch, watching the tracked ConfigMaps.
fn reconciler(found: &KindMatch, config: &Config) -> ResourceReconciler {
    let (kind, projection) = (found.gvk.clone(), found.projection.clone());
    let sync = SyncReconciler::new_async(move |ctx, workload: &mut Draft| {
        let (ctx, gvk, workload) = (ctx.clone(), kind.clone(), workload.clone());
        let projection = projection.clone();
        Box::pin(async move { inject(&ctx, &gvk, &projection, &workload).await })
    });
    let patched = found.gvk.clone();
    let tracked: Box<dyn SubReconciler> = Box::new(
        OverrideSetup::new()
            .named("PodSpecableEnv")
            .with_setup(move |setup| {
                setup.watch_tracked(config_map_gvk());
                setup.require("PodSpecableEnv", &patched, "", &["patch"]);
                Ok(())
            })
            .reconciler(sync),
    );
    // `DuckControllers` gives it `StatusPolicy::Shared`: the kinds' status belongs to their
    // own controllers (kube's deployment controller...).
    ResourceReconciler::new(found.gvk.clone(), tracked, config.clone())
}

/// Runs the duck reconciler, while `manager` runs, for every kind that implements
/// `PodSpecable` (built-ins of that OpenAPI schema, CRDs labelled
/// `duck.knative.dev/podspecable=true` or of that shape, kinds a `DuckMapping` maps), as such
/// kinds and mappings come and go.
pub fn register(manager: &mut Manager, config: &Config) {
    DuckControllers::new(manager, config)
        .register(DuckType::podspecable(), reconciler)
        .start(manager);
}

/// Registers the duck reconciler's controllers for the kinds that implement `PodSpecable`
/// now, following nothing (for `dynrec rbac`), and returns what the follower of
/// [`register`] needs besides them.
pub async fn register_now(
    manager: &mut Manager,
    config: &Config,
) -> Result<Vec<Permission>, dynrec::client::Error> {
    DuckControllers::new(manager, config)
        .register(DuckType::podspecable(), reconciler)
        .register_now()
        .await?;
    Ok(DuckControllers::follower_permissions())
}

/// Runs the duck reconciler until SIGINT or SIGTERM.
pub async fn run(args: RunArgs) -> Result<(), LaunchError> {
    run_controllers(args, "podspecable", |manager, config, _| {
        register(manager, config);
        Ok(())
    })
    .await
}
