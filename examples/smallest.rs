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

use dynrec::prelude::*;
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

/// The Widget CRD: `spec.greeting`, and a status the controller writes.
fn widget_crd() -> serde_json::Result<DynamicObject> {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"greeting": {"type": "string"}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}}
            }]
        }
    }))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = RunArgs::from_command_line();
    let crd = widget_crd()?;
    run_controllers(args, "smallest", |manager, config, _kube| {
        // The controller waits for its kind; the CRD is installed beside it.
        let client = config.client.clone();
        tokio::spawn(async move {
            if let Err(err) = client.install_crd(&crd, "smallest").await {
                tracing::error!(%err, "cannot install the Widget CRD");
            }
        });
        manager.register(widgets(config))
    })
    .await?;
    Ok(())
}
