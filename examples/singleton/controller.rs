//! The `singleton` demo: an `AggregateReconciler` that keeps one object, the ConfigMap
//! `default/cluster-summary`, listing the cluster's namespaces. It tracks the namespaces it
//! lists, so creating or deleting one updates the summary.

use serde_json::json;

use dynrec::client::ListOptions;
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    AggregateReconciler, Config, Draft, OverrideSetup, ReconcileError, SubReconciler,
    SyncReconciler, UpdatingObjectManager,
};
use dynrec::runtime::{LaunchError, Manager, ManagerError, RunArgs, run_controllers};

/// The object the singleton keeps.
pub fn summary_key() -> ObjectKey {
    ObjectKey::namespaced("default", "cluster-summary")
}

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

fn namespace_gvk() -> Gvk {
    Gvk::new("", "v1", "Namespace")
}

/// The stash key where the sync step leaves the namespace names for `desired_resource`.
const NAMESPACES: &str = "demo.dynrec.io/namespaces";

/// Lists (and tracks) the namespaces, leaving their names in the stash.
fn list_namespaces() -> impl SubReconciler {
    let sync = SyncReconciler::new_async(|ctx, _summary: &mut Draft| {
        let ctx = ctx.clone();
        Box::pin(async move {
            let namespaces = ctx
                .track_and_list(&namespace_gvk(), &ListOptions::default())
                .await?;
            let mut names: Vec<String> = namespaces
                .into_iter()
                .filter_map(|n| n.metadata.name.clone())
                .collect();
            names.sort();
            ctx.stash().store(NAMESPACES, names);
            Ok::<(), ReconcileError>(())
        })
    });
    OverrideSetup::new()
        .named("ListNamespaces")
        .with_setup(|setup| {
            setup.watch_tracked(namespace_gvk());
            Ok(())
        })
        .reconciler(sync)
}

/// The singleton's root reconciler.
pub fn reconciler(config: &Config) -> AggregateReconciler {
    let manager = UpdatingObjectManager::new(config_map_gvk(), |current, desired| {
        if current.data["data"] != desired.data["data"] {
            current.data["data"] = desired.data["data"].clone();
        }
    });
    AggregateReconciler::new(config_map_gvk(), summary_key(), manager, config.clone())
        .reconciler(list_namespaces())
        .desired_resource(|ctx, summary| {
            let mut summary = summary.clone();
            let names: Vec<String> = ctx.stash().retrieve(NAMESPACES).unwrap_or_default();
            let text = names.join(",");
            if summary.data["data"]["namespaces"] != text.as_str() {
                println!("cluster-summary: namespaces {text}");
            }
            summary.data["data"] = json!({"namespaces": text, "count": names.len().to_string()});
            Ok(Some(summary))
        })
}

/// Registers the singleton with a manager.
pub fn register(manager: &mut Manager, config: &Config) -> Result<(), ManagerError> {
    manager.register(reconciler(config))
}

/// Runs the singleton until SIGINT or SIGTERM.
pub async fn run(args: RunArgs) -> Result<(), LaunchError> {
    run_controllers(args, "singleton", |manager, config, _| {
        register(manager, config)
    })
    .await
}
