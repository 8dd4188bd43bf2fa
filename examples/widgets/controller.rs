//! The `widgets` demo: a CRD kind created at run time (`example.com/v1` Widget), reconciled
//! by a `ResourceReconciler` whose `Sequence` holds a `SyncReconciler` (defaults the greeting)
//! and a `ChildReconciler` (one ConfigMap per Widget); the ConfigMap's state is reflected
//! on the Widget as the `ConfigMapReady` condition, which makes the Widget `Ready`.
//!
//! ```yaml
//! apiVersion: example.com/v1
//! kind: Widget
//! metadata: {name: w1}
//! spec: {greeting: hello, size: 3}
//! ```

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

use dynrec::object::{ConditionSet, Gvk};
use dynrec::reconcilers::{
    ChildReconciler, Config, ReconcileError, ResourceReconciler, Sequence, SubReconciler,
    SyncReconciler, UpdatingObjectManager,
};
use dynrec::runtime::{LaunchError, Manager, ManagerError, RunArgs, run_controllers};

/// The Widget kind.
pub fn widget_gvk() -> Gvk {
    Gvk::new("example.com", "v1", "Widget")
}

/// The ConfigMap kind.
fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// The condition the child's state is reflected as.
const CONFIG_MAP_READY: &str = "ConfigMapReady";

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

/// Defaults `spec.greeting` (the change is not written back: only status is).
fn default_greeting() -> impl SubReconciler {
    SyncReconciler::new(|_ctx, widget: &mut DynamicObject| {
        if widget.data["spec"]["greeting"]
            .as_str()
            .is_none_or(str::is_empty)
        {
            widget.data["spec"]["greeting"] = json!("hello");
        }
        Box::pin(async { Ok(()) })
    })
}

/// The ConfigMap a Widget should have.
fn desired_config_map(widget: &DynamicObject) -> Result<Option<DynamicObject>, ReconcileError> {
    let name = widget.metadata.name.clone().unwrap_or_default();
    let spec = &widget.data["spec"];
    let greeting = spec["greeting"].as_str().unwrap_or("hello");
    let size = spec["size"].as_i64().unwrap_or(1);
    let child = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-config"), "namespace": widget.metadata.namespace,
            "labels": {"example.com/widget": name}},
        "data": {"greeting": greeting, "size": size.to_string()}
    });
    serde_json::from_value(child)
        .map(Some)
        .map_err(ReconcileError::from_error)
}

/// Writes the child's state onto the Widget as the ConfigMapReady condition.
fn reflect(
    ctx: &dynrec::reconcilers::Context,
    widget: &mut DynamicObject,
    child: Option<&DynamicObject>,
    error: Option<&ReconcileError>,
) {
    let key = ctx.request().to_string();
    let conditions = ConditionSet::living(&[CONFIG_MAP_READY]);
    let mut manager = conditions.manage(widget, ctx.now());
    let marked = match (child, error) {
        (_, Some(error)) => {
            manager.mark_false(CONFIG_MAP_READY, "ConfigMapFailed", error.to_string())
        }
        (Some(child), None) => {
            let name = child.metadata.name.clone().unwrap_or_default();
            let was_ready = manager
                .get_condition(CONFIG_MAP_READY)
                .is_ok_and(|c| c.is_some_and(|c| c.is_true()));
            if !was_ready {
                println!("widget {key}: ConfigMap {name} is in place, the widget is Ready");
            }
            manager.mark_true(
                CONFIG_MAP_READY,
                "ConfigMapReady",
                format!("ConfigMap {name} is in place"),
            )
        }
        (None, None) => manager.mark_false(CONFIG_MAP_READY, "NoConfigMap", "no ConfigMap yet"),
    };
    if let Err(err) = marked {
        tracing::warn!(widget = %key, %err, "cannot set the ConfigMapReady condition");
    }
}

/// The ChildReconciler that keeps each Widget's ConfigMap.
fn config_map_child() -> ChildReconciler {
    let manager =
        UpdatingObjectManager::new(config_map_gvk()).merge_before_update(|current, desired| {
            current.metadata.labels = desired.metadata.labels.clone();
            current.data["data"] = desired.data["data"].clone();
        });
    ChildReconciler::new(config_map_gvk())
        .desired_child(|_ctx, widget| Box::pin(async move { desired_config_map(widget) }))
        .reflect_child_status_on_parent(reflect)
        .child_object_manager(manager)
}

/// The Widget controller's root reconciler.
pub fn reconciler(config: &Config) -> ResourceReconciler {
    let steps: Vec<Box<dyn SubReconciler>> =
        vec![Box::new(default_greeting()), Box::new(config_map_child())];
    ResourceReconciler::new(widget_gvk(), Sequence::new(steps), config.clone())
        .conditions(ConditionSet::living(&[CONFIG_MAP_READY]))
}

/// Registers the Widget controller with a manager.
pub fn register(manager: &mut Manager, config: &Config) -> Result<(), ManagerError> {
    manager.register(reconciler(config))
}

/// Installs the Widget CRD (the controller waits for its kind, then starts) and runs the
/// controller until SIGINT or SIGTERM.
pub async fn run(args: RunArgs) -> Result<(), LaunchError> {
    run_controllers(args, "widgets", |manager, config, client| {
        let client = client.clone();
        tokio::spawn(async move {
            if let Err(err) = install_crd(&client).await {
                tracing::error!(%err, "cannot install the Widget CRD");
            }
        });
        register(manager, config)
    })
    .await
}
