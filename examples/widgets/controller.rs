//! The widgets controller: a CRD kind created at run time (`example.com/v1` Widget); each
//! Widget owns one ConfigMap holding its greeting, and is Ready when the ConfigMap is in place
//! (the `ConfigMapReady` condition).
//!
//! ```yaml
//! apiVersion: example.com/v1
//! kind: Widget
//! metadata: {name: w1}
//! spec: {greeting: hello, size: 3}
//! ```

use dynrec::object::{ConditionSet, Gvk};
use dynrec::reconcilers::{
    ChildReconciler, Config, ReconcileError, ResourceReconciler, UpdatingObjectManager,
};
use dynrec::runtime::{LaunchError, Manager, ManagerError, RunArgs, run_controllers};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

/// The Widget controller: one ConfigMap per Widget, the Widget Ready when it is in place.
pub fn reconciler(config: &Config) -> ResourceReconciler {
    let config_map = ChildReconciler::new(
        Gvk::new("", "v1", "ConfigMap"),
        |_ctx, widget| desired_config_map(widget),
        |ctx, widget, child, error| {
            let mut conditions = ctx.conditions(widget);
            match (child, error) {
                (_, Some(error)) => {
                    conditions.mark_false(READY, "ConfigMapFailed", error.to_string())?
                }
                (Some(child), None) => conditions.mark_true(READY, READY, in_place(child))?,
                (None, None) => conditions.mark_false(READY, "NoConfigMap", "no ConfigMap yet")?,
            }
            Ok(())
        },
    )
    // Writes only what differs: a ConfigMap in sync is then neither copied nor compared.
    .child_object_manager(UpdatingObjectManager::new(
        Gvk::new("", "v1", "ConfigMap"),
        |current, desired| {
            if current.metadata.labels != desired.metadata.labels {
                current.metadata.labels = desired.metadata.labels.clone();
            }
            if current.data["data"] != desired.data["data"] {
                current.data["data"] = desired.data["data"].clone();
            }
        },
    ));
    ResourceReconciler::new(widget_gvk(), config_map, config.clone())
        .conditions(ConditionSet::living(&[READY]))
}

/// The condition the ConfigMap's state is reflected as.
const READY: &str = "ConfigMapReady";

/// The ConfigMap a Widget should have: its greeting (default `hello`) and size (default 1).
fn desired_config_map(widget: &DynamicObject) -> Result<Option<DynamicObject>, ReconcileError> {
    let name = widget.metadata.name.as_deref().unwrap_or_default();
    let spec = &widget.data["spec"];
    let greeting = spec["greeting"].as_str().filter(|g| !g.is_empty());
    let child = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-config"), "namespace": widget.metadata.namespace,
            "labels": {"example.com/widget": name}},
        "data": {"greeting": greeting.unwrap_or("hello"),
            "size": spec["size"].as_i64().unwrap_or(1).to_string()}
    });
    Ok(Some(dynrec::object::from_json(child)?))
}

/// The Ready message of a Widget whose ConfigMap is in place.
fn in_place(child: &DynamicObject) -> String {
    let name = child.metadata.name.as_deref().unwrap_or_default();
    format!("ConfigMap {name} is in place")
}

/// The Widget kind.
pub fn widget_gvk() -> Gvk {
    Gvk::new("example.com", "v1", "Widget")
}

/// The Widget CustomResourceDefinition.
pub fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Greeting", "type": "string", "jsonPath": ".spec.greeting"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "description": "What the widget should be.", "properties": {
                        "greeting": {"type": "string", "description": "Written into the widget's ConfigMap."},
                        "size": {"type": "integer", "minimum": 0, "description": "How many parts the widget has."}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    })
}

/// Creates (or updates) the Widget CRD with server-side apply.
pub async fn install_crd(client: &kube::Client) -> Result<(), kube::Error> {
    let crds = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &crds);
    let params = PatchParams::apply("dynrec-demo").force();
    api.patch("widgets.example.com", &params, &Patch::Apply(widget_crd()))
        .await?;
    Ok(())
}

/// Installs the Widget CRD without waiting for it (a controller waits for its kind), logging
/// a failure.
pub fn install_crd_in_background(client: &kube::Client) {
    let client = client.clone();
    tokio::spawn(async move {
        if let Err(err) = install_crd(&client).await {
            tracing::error!(%err, "cannot install the Widget CRD");
        }
    });
}

/// Registers the Widget controller with a manager.
pub fn register(manager: &mut Manager, config: &Config) -> Result<(), ManagerError> {
    manager.register(reconciler(config))
}

/// Installs the Widget CRD (the controller waits for its kind, then starts) and runs the
/// controller until SIGINT or SIGTERM.
pub async fn run(args: RunArgs) -> Result<(), LaunchError> {
    run_controllers(args, "widgets", |manager, config, client| {
        install_crd_in_background(client);
        register(manager, config)
    })
    .await
}
