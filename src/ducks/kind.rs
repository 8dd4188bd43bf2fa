//! A duck type as the matcher sees it: its name, the CRD label that declares it, the path
//! it reads (with the shape its `schemars` schema gives it) and the built-in kinds known to
//! implement it (matched by that list only where the cluster serves no OpenAPI v3).

use dynrec_duck::{Addressable, Duck, PodSpecable};
use serde_json::Value;

use crate::object::Gvk;

/// How kinds are found to implement one duck type.
#[derive(Clone, Debug)]
pub struct DuckType {
    name: String,
    label: Option<String>,
    path: Vec<String>,
    schema: Value,
    builtins: Vec<Gvk>,
}

impl DuckType {
    /// The duck `T`: its shape from its `schemars` schema, its path the chain of single-field
    /// objects from the root (`spec.template` for `PodSpecable`); no label, no built-ins.
    pub fn of<T: Duck>() -> Self {
        let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Bool(true));
        let path = single_field_chain(&schema);
        Self {
            name: T::NAME.to_string(),
            label: None,
            path,
            schema,
            builtins: Vec::new(),
        }
    }

    /// `PodSpecable`: label `duck.knative.dev/podspecable`; known built-ins Deployment,
    /// StatefulSet, DaemonSet, ReplicaSet and Job (CronJob comes through dynrec's built-in
    /// `DuckMapping`).
    pub fn podspecable() -> Self {
        let apps = |kind| Gvk::new("apps", "v1", kind);
        Self::of::<PodSpecable>()
            .label("duck.knative.dev/podspecable")
            .builtin(apps("Deployment"))
            .builtin(apps("StatefulSet"))
            .builtin(apps("DaemonSet"))
            .builtin(apps("ReplicaSet"))
            .builtin(Gvk::new("batch", "v1", "Job"))
    }

    /// `Addressable`: label `duck.knative.dev/addressable`; no built-in kind.
    pub fn addressable() -> Self {
        Self::of::<Addressable>().label("duck.knative.dev/addressable")
    }

    /// The ducks dynrec knows: `PodSpecable` and `Addressable`.
    pub fn known() -> Vec<Self> {
        vec![Self::podspecable(), Self::addressable()]
    }

    /// A CRD carrying this label with the value `"true"` implements the duck.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Replaces the path (dotted, e.g. `spec.jobTemplate`) whose shape the schema must have.
    pub fn path(mut self, path: &str) -> Self {
        self.path = path.split('.').map(str::to_string).collect();
        self
    }

    /// A built-in kind known to implement the duck, matched by this list only where the
    /// cluster serves no OpenAPI v3 document for its group-version.
    pub fn builtin(mut self, gvk: Gvk) -> Self {
        self.builtins.push(gvk);
        self
    }

    /// The duck's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The CRD label that declares the duck, if any.
    pub fn label_key(&self) -> Option<&str> {
        self.label.as_deref()
    }

    /// The path matched against a kind's schema, dotted.
    pub fn path_text(&self) -> String {
        self.path.join(".")
    }

    /// The path's segments.
    pub(crate) fn path_segments(&self) -> &[String] {
        &self.path
    }

    /// The duck's JSON schema (from `schemars`).
    pub(crate) fn schema(&self) -> &Value {
        &self.schema
    }

    /// The built-in kinds known to implement the duck.
    pub fn builtins(&self) -> &[Gvk] {
        &self.builtins
    }
}

/// Follows `properties` from the root while an object has exactly one.
fn single_field_chain(root: &Value) -> Vec<String> {
    let mut path = Vec::new();
    let mut node = super::shape::resolve(root, root);
    while let Some(properties) = node.get("properties").and_then(Value::as_object) {
        let mut fields = properties.iter();
        let (Some((name, child)), None) = (fields.next(), fields.next()) else {
            break;
        };
        path.push(name.clone());
        node = super::shape::resolve(root, child);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_come_from_the_schema() {
        assert_eq!(DuckType::podspecable().path_text(), "spec.template");
        assert_eq!(DuckType::addressable().path_text(), "status.address");
    }
}
