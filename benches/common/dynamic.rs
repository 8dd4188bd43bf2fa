//! The dynamic engines: dynrec's Rust controller, the widgets definition and the Rust
//! controller it restates (`examples/widgets/controller.rs`), each under a dynrec `Manager`, with Events off (`EventRecorder::disabled`): the typed baseline
//! records none.

use std::time::Duration;

use dynrec::apiserver::ApiServer;
use dynrec::client::{Client, EventRecorder};
use dynrec::object::{ConditionSet, READY};
use dynrec::reconcilers::{ChildReconciler, Config, ResourceReconciler, UpdatingObjectManager};
use dynrec::runtime::{Manager, ManagerOptions};
use serde_json::json;

use super::{Direct, Running, config_map_gvk, widget_gvk, within};

#[path = "../../examples/widgets/controller.rs"]
mod widgets_example;

/// The config both dynamic engines reconcile with: Events off.
fn config(client: &Client) -> Config {
    let mut config = Config::new(client.clone(), "widgets");
    config.recorder = EventRecorder::disabled();
    config
}

/// A `Manager` with `workers` workers.
fn manager(client: &Client, workers: usize) -> Manager {
    let options = ManagerOptions {
        workers,
        ..Default::default()
    };
    Manager::new(client.clone(), options)
}

/// The dynamic reconciler: an owned ConfigMap child, Ready reflected from it.
fn dynrec_reconciler(config: &Config) -> ResourceReconciler {
    let config_map = config_map_gvk();
    let child = ChildReconciler::new(
        config_map_gvk(),
        move |_, widget| {
            let name = widget.metadata.name.as_deref().unwrap_or_default();
            let mut child = config_map.new_object(name);
            child.metadata.namespace = widget.metadata.namespace.clone();
            child.data = json!({"data": {"message": widget.data["spec"]["message"]}});
            Ok(Some(child))
        },
        |ctx, widget, child, _| {
            let mut conditions = ctx.conditions(widget);
            match child {
                Some(_) => conditions.mark_true(READY, READY, "")?,
                None => conditions.mark_false(READY, "NoConfigMap", "the ConfigMap is missing")?,
            }
            Ok(())
        },
    )
    // Written compare-first, as the typed reconcile compares before it copies: a child in
    // sync is then neither copied nor compared as a whole.
    .child_object_manager(UpdatingObjectManager::new(
        config_map_gvk(),
        |current, desired| {
            if current.data["data"] != desired.data["data"] {
                current.data["data"] = desired.data["data"].clone();
            }
        },
    ));
    ResourceReconciler::new(widget_gvk(), child, config.clone())
        .conditions(ConditionSet::living(&[]))
}

/// Runs `manager` until the returned `Running` is stopped; returns once its caches (the
/// Widgets' and the ConfigMaps') are ready.
async fn run(manager: Manager, client: &Client, what: &str, direct: Direct) -> Running {
    let readiness = manager.readiness();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = manager.run(async move { drop(stopped.await) }).await;
    });
    let caches_ready = async {
        while !readiness.is_ready() || client.cached_object_count(&config_map_gvk()).is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    within(what, caches_ready).await;
    Running {
        tasks: vec![task],
        stop: Some(stop),
        direct,
    }
}

/// dynrec's Rust controller with `workers` workers.
pub(super) async fn start_dynrec(server: &ApiServer, workers: usize) -> Running {
    let client = Client::new(server.client());
    let what = "the dynrec controller is ready";
    start_reconciler(&client, workers, dynrec_reconciler, what).await
}

/// `examples/widgets/controller.rs`'s reconciler with `workers` workers, after applying its
/// Widget CRD over the bench server's (as the definition applies its own: the same schema,
/// so the server validates and prunes the Widgets of both alike).
pub(super) async fn start_widgets_example(server: &ApiServer, workers: usize) -> Running {
    let kube = server.client();
    within(
        "the widgets example's CRD is applied",
        widgets_example::install_crd(&kube),
    )
    .await
    .expect("the widgets example's CRD");
    let client = Client::new(kube);
    let what = "the widgets example is ready";
    start_reconciler(&client, workers, widgets_example::reconciler, what).await
}

/// The reconciler `make` builds, registered with a `Manager` of `workers` workers and run
/// until the returned `Running` is stopped (another of its kind for direct reconciles).
async fn start_reconciler(
    client: &Client,
    workers: usize,
    make: fn(&Config) -> ResourceReconciler,
    what: &str,
) -> Running {
    let config = config(client);
    let mut manager = manager(client, workers);
    manager.register(make(&config)).expect("a valid reconciler");
    let direct = Direct::Dynrec(Box::new(make(&config)));
    run(manager, client, what, direct).await
}

/// `examples/definitions/widgets.yaml`, read from the file.
fn widgets_definition() -> dynrec::definitions::Loaded {
    let path = format!(
        "{}/examples/definitions/widgets.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut loaded =
        dynrec::definitions::load_file(std::path::Path::new(&path)).expect("the definition");
    assert_eq!(loaded.len(), 1, "one definition in {path}");
    loaded.remove(0)
}

/// The widgets definition under a `Manager` set up as [`start_dynrec`]'s: `Definitions`
/// compiles it, applies its Widget CRD and registers its root reconciler (no controller of
/// in-cluster definitions).
pub(super) async fn start_definition(server: &ApiServer, workers: usize) -> Running {
    use dynrec::definitions::{Definitions, Inventory, root_reconciler};
    let client = Client::new(server.client());
    let config = config(&client);
    let manager = manager(&client, workers);
    let definitions = Definitions::new(&manager, &config);
    let compiled = within(
        "the definition starts",
        definitions.start(&widgets_definition()),
    )
    .await
    .expect("the widgets definition starts");
    assert_eq!(compiled.for_kind, widget_gvk());
    let direct = root_reconciler(&compiled, &config, &Inventory::default());
    let direct = Direct::Dynrec(Box::new(direct));
    run(
        manager,
        &client,
        "the definition's controller is ready",
        direct,
    )
    .await
}
