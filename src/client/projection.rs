//! Where a duck's fields sit in a kind: at the duck's own path, or elsewhere by a mapping
//! (CronJob keeps `PodSpecable`'s `spec.template` at `spec.jobTemplate.spec.template`).

use std::fmt;

use serde_json::{Map, Value};

/// Where one kind keeps the fields a duck reads at its own path.
///
/// The identity (the default) reads and writes objects as they are. A mapped projection
/// reads the kind's value at `kind` into the duck's `duck` path, and moves a patch written
/// at `duck` to `kind`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Projection {
    duck: Vec<String>,
    kind: Vec<String>,
}

impl Projection {
    /// The duck's fields at `duck_path` are the kind's at `kind_path` (both dotted).
    pub fn mapped(duck_path: &str, kind_path: &str) -> Self {
        let segments = |path: &str| path.split('.').map(str::to_string).collect();
        Self {
            duck: segments(duck_path),
            kind: segments(kind_path),
        }
    }

    /// Whether the kind keeps the duck's fields where the duck reads them.
    pub fn is_identity(&self) -> bool {
        self.duck == self.kind
    }

    /// Where the kind keeps the duck's fields, dotted.
    pub fn kind_path(&self) -> String {
        self.kind.join(".")
    }

    /// The object's JSON as the duck reads it.
    pub fn to_duck(&self, object: &Value) -> Value {
        if self.is_identity() {
            return object.clone();
        }
        let mut duck = Value::Object(Map::new());
        if let Some(value) = get(object, &self.kind) {
            set(&mut duck, &self.duck, value.clone());
        }
        duck
    }

    /// A merge patch written at the duck's path, moved to where the kind keeps it.
    pub fn to_kind_patch(&self, mut patch: Value) -> Value {
        if self.is_identity() {
            return patch;
        }
        if let Some(moved) = take(&mut patch, &self.duck) {
            set(&mut patch, &self.kind, moved);
        }
        patch
    }

    /// A path the duck names (e.g. in a projection error), as the kind names it.
    pub fn to_kind_path(&self, duck_path: &str) -> String {
        let prefix = self.duck.join(".");
        match duck_path.strip_prefix(&prefix) {
            Some(rest)
                if !self.is_identity()
                    && !prefix.is_empty()
                    && (rest.is_empty() || rest.starts_with(['.', '['])) =>
            {
                format!("{}{rest}", self.kind_path())
            }
            _ => duck_path.to_string(),
        }
    }
}

impl fmt::Display for Projection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}", self.duck.join("."), self.kind_path())
    }
}

fn get<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(value, |node, segment| node.get(segment))
}

/// Sets `value` at `path`, creating (or replacing non-objects with) objects on the way.
fn set(node: &mut Value, path: &[String], value: Value) {
    let Some((first, rest)) = path.split_first() else {
        *node = value;
        return;
    };
    if !node.is_object() {
        *node = Value::Object(Map::new());
    }
    if let Value::Object(map) = node {
        set(map.entry(first.clone()).or_insert(Value::Null), rest, value);
    }
}

/// Removes the value at `path`, and the objects left empty on the way.
fn take(root: &mut Value, path: &[String]) -> Option<Value> {
    let (first, rest) = path.split_first()?;
    let map = root.as_object_mut()?;
    if rest.is_empty() {
        return map.remove(first);
    }
    let taken = take(map.get_mut(first)?, rest);
    if map
        .get(first)
        .is_some_and(|v| v.as_object().is_some_and(Map::is_empty))
    {
        map.remove(first);
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cron() -> Projection {
        Projection::mapped("spec.template", "spec.jobTemplate.spec.template")
    }

    #[test]
    fn reads_the_mapped_path_into_the_duck() {
        let cron_job = json!({"spec": {"schedule": "* * * * *", "template": "not this",
            "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}});
        assert_eq!(
            cron().to_duck(&cron_job),
            json!({"spec": {"template": {"spec": {"containers": []}}}})
        );
        assert_eq!(cron().to_duck(&json!({"spec": {}})), json!({}));
    }

    #[test]
    fn moves_a_patch_to_the_mapped_path_and_keeps_metadata() {
        let patch = json!({"metadata": {"resourceVersion": "7"},
            "spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}});
        assert_eq!(
            cron().to_kind_patch(patch),
            json!({"metadata": {"resourceVersion": "7"}, "spec": {"jobTemplate": {"spec":
                {"template": {"spec": {"containers": [{"name": "a"}]}}}}}})
        );
    }

    #[test]
    fn error_paths_are_renamed_to_the_kinds() {
        assert_eq!(
            cron().to_kind_path("spec.template.spec.containers[0].env"),
            "spec.jobTemplate.spec.template.spec.containers[0].env"
        );
        assert_eq!(cron().to_kind_path("spec.templates"), "spec.templates");
        assert_eq!(Projection::default().to_kind_path("spec.x"), "spec.x");
    }
}
