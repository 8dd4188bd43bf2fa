//! The smallest parent → child controller, as the README shows it: every Widget
//! (`example.com/v1`) owns a ConfigMap holding its greeting, and is Ready when the ConfigMap
//! is in place.
//!
//! `cargo run --example smallest` installs the Widget CRD and runs the controller on the
//! embedded API server (or on your cluster with `--kubeconfig PATH`); then, in another shell:
//!
//! ```sh
//! KUBECONFIG=.dynrec/kubeconfig kubectl apply -f - <<'YAML'
//! apiVersion: example.com/v1
//! kind: Widget
//! metadata: {name: w1}
//! spec: {greeting: hi}
//! YAML
//! KUBECONFIG=.dynrec/kubeconfig kubectl get widgets,configmaps
//! ```

/// The Widget kind and its CRD, from the widgets example (its controller is not used here).
#[path = "widgets/controller.rs"]
#[allow(dead_code)]
pub mod widget_kind;

use dynrec::object::{ConditionSet, Gvk};
use dynrec::reconcilers::{ChildReconciler, Config, ResourceReconciler};
use dynrec::runtime::{RunArgs, run_controllers};
use serde_json::json;

/// Widgets each own a ConfigMap holding their greeting, and are Ready when it is in place.
pub fn widgets(config: &Config) -> ResourceReconciler {
    let config_map = Gvk::new("", "v1", "ConfigMap");
    let config_map = ChildReconciler::new(
        config_map.clone(),
        move |_ctx, widget| {
            let name = format!(
                "{}-greeting",
                widget.metadata.name.as_deref().unwrap_or_default()
            );
            let mut child = config_map.new_object(name);
            child.metadata.namespace = widget.metadata.namespace.clone();
            child.data = json!({"data": {"greeting": widget.data["spec"]["greeting"]}});
            Ok(Some(child))
        },
        |ctx, widget, child, _error| {
            let mut conditions = ctx.conditions(widget);
            match child {
                Some(_) => conditions.mark_true("ConfigMapReady", "Created", "")?,
                None => conditions.mark_false("ConfigMapReady", "Missing", "no ConfigMap yet")?,
            }
            Ok(())
        },
    );
    let widget = Gvk::new("example.com", "v1", "Widget");
    ResourceReconciler::new(widget, config_map, config.clone())
        .conditions(ConditionSet::living(&["ConfigMapReady"]))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = RunArgs::from_command_line();
    run_controllers(args, "smallest", |manager, config, kube| {
        widget_kind::install_crd_in_background(kube);
        manager.register(widgets(config))
    })
    .await?;
    Ok(())
}
