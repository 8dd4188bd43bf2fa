//! The Widget of `examples/definitions/widgets.yaml`: its instances as the driver writes
//! them, what "converged" means for one, and the typed Widget of the baseline.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The Widget, typed, as the baseline controller's author would derive it.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[kube(status = "WidgetStatus", shortname = "wd")]
pub struct WidgetSpec {
    /// Written into the widget's ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greeting: Option<String>,
    /// How many parts the widget has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
}

/// The typed Widget's status, as the definition writes it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The Widget kind, for dynamic reads and writes.
pub fn api_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"))
}

/// The name of instance `i`.
pub fn name(i: usize) -> String {
    format!("w-{i:06}")
}

/// Instance `i`, as the driver creates it.
pub fn instance(i: usize, namespace: &str) -> DynamicObject {
    let mut widget = DynamicObject::new(&name(i), &api_resource()).within(namespace);
    widget.data = json!({"spec": {"greeting": format!("hello {i}"), "size": 1}});
    widget
}

/// The name of a widget's ConfigMap child.
pub fn child_name(widget: &str) -> String {
    format!("{widget}-config")
}

/// The churn change: a new greeting, which the ConfigMap shows.
pub fn change(greeting: &str) -> serde_json::Value {
    json!({"spec": {"greeting": greeting}})
}

/// The greeting a widget has: what [`change`] sets.
pub fn changed_value(widget: &DynamicObject) -> Option<&str> {
    widget.data["spec"]["greeting"].as_str()
}

/// The widget a ConfigMap belongs to (by its name) and the greeting it shows, when it is one
/// of theirs.
pub fn shown(config_map: &DynamicObject) -> Option<(String, String)> {
    let name = config_map.metadata.name.as_deref()?;
    let widget = name.strip_suffix("-config")?;
    let greeting = config_map.data["data"]["greeting"].as_str()?;
    Some((widget.to_string(), greeting.to_string()))
}

/// The child's data the definition's template gives a widget of this spec.
pub fn desired_data(spec: &WidgetSpec) -> BTreeMap<String, String> {
    let greeting = spec
        .greeting
        .clone()
        .filter(|g| !g.is_empty())
        .unwrap_or_else(|| "hello".into());
    BTreeMap::from([
        ("greeting".to_string(), greeting),
        ("size".to_string(), spec.size.unwrap_or(1).to_string()),
    ])
}
