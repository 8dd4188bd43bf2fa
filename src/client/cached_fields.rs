//! Which fields of a kind's objects a shared cache keeps: whole objects (the default), or
//! the identity metadata every reader of a cache relies on plus the fields its readers
//! declared they read (a projected cache, as controller-runtime's metadata-only caches,
//! but down to fields).

use std::collections::BTreeMap;
use std::fmt;

use kube::api::{DynamicObject, ObjectMeta};
use serde_json::{Map, Value};

/// The fields of an object a cache keeps, beyond those it always keeps.
///
/// A projected cache ([`CachedFields::Only`]) always keeps `apiVersion`, `kind` and the
/// metadata that the caches, the Manager and the library's reconcilers read of every
/// object: `name`, `namespace` and `uid` (its identity, and what ownerReferences point
/// at), `resourceVersion` (writes this process has not seen yet, optimistic concurrency),
/// `generation`, `creationTimestamp` (an object manager tells a stored object from a desired
/// one by it), `ownerReferences` (the index by controller, mapping a child to its owner),
/// `finalizers`, `deletionTimestamp` and `deletionGracePeriodSeconds`. The rest of the
/// metadata (`labels`, `annotations`, `managedFields`, `generateName`, `selfLink`) and of
/// the body is kept only where named.
///
/// ```
/// use dynrec::client::CachedFields;
///
/// let fields = CachedFields::metadata().with("data.x").with("metadata.labels");
/// assert!(fields.covers(&CachedFields::metadata().with("data.x")));
/// assert!(!fields.covers(&CachedFields::metadata().with("data.y")));
/// assert!(CachedFields::Whole.covers(&fields));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CachedFields {
    /// Every field.
    Whole,
    /// The metadata always kept and these fields, each kept as far as its own value says.
    Only(BTreeMap<String, CachedFields>),
}

impl Default for CachedFields {
    /// Whole objects: what a reader that declared nothing may read.
    fn default() -> Self {
        CachedFields::Whole
    }
}

/// What [`CachedFields::Whole`] is, to lend out.
pub(crate) static WHOLE: CachedFields = CachedFields::Whole;

impl CachedFields {
    /// Only the metadata always kept (what ownership and existence need).
    pub fn metadata() -> Self {
        CachedFields::Only(BTreeMap::new())
    }

    /// These fields and the field at `path` (dotted, e.g. `data.x` or `metadata.labels`),
    /// whole.
    pub fn with(mut self, path: &str) -> Self {
        let segments: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
        self.add(&segments);
        self
    }

    /// Adds the field at `path` (its segments), whole; an empty path is the whole object.
    pub fn add(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else {
            *self = CachedFields::Whole;
            return;
        };
        if let CachedFields::Only(fields) = self {
            fields
                .entry((*first).to_owned())
                .or_insert_with(CachedFields::metadata)
                .add(rest);
        }
    }

    /// Whether every field is kept.
    pub fn is_whole(&self) -> bool {
        matches!(self, CachedFields::Whole)
    }

    /// Adds what `other` keeps.
    pub fn union(&mut self, other: &CachedFields) {
        match (&mut *self, other) {
            (CachedFields::Whole, _) => {}
            (_, CachedFields::Whole) => *self = CachedFields::Whole,
            (CachedFields::Only(mine), CachedFields::Only(theirs)) => {
                for (name, fields) in theirs {
                    match mine.get_mut(name) {
                        Some(kept) => kept.union(fields),
                        None => drop(mine.insert(name.clone(), fields.clone())),
                    }
                }
            }
        }
    }

    /// Whether everything `other` keeps is kept here.
    pub fn covers(&self, other: &CachedFields) -> bool {
        match (self, other) {
            (CachedFields::Whole, _) => true,
            (CachedFields::Only(_), CachedFields::Whole) => false,
            (CachedFields::Only(mine), CachedFields::Only(theirs)) => theirs
                .iter()
                .all(|(name, fields)| mine.get(name).is_some_and(|kept| kept.covers(fields))),
        }
    }

    /// Removes from `object` what is not kept.
    pub(crate) fn project(&self, object: &mut DynamicObject) {
        let CachedFields::Only(fields) = self else {
            return;
        };
        match fields.get("metadata") {
            Some(CachedFields::Whole) => {}
            Some(CachedFields::Only(named)) => project_metadata(&mut object.metadata, named),
            None => project_metadata(&mut object.metadata, &BTreeMap::new()),
        }
        let body = std::mem::take(&mut object.data);
        object.data = match body {
            Value::Object(body) => Value::Object(keep(body, fields)),
            other => other,
        };
    }
}

/// Clears the metadata fields not always kept and not `named`.
fn project_metadata(metadata: &mut ObjectMeta, named: &BTreeMap<String, CachedFields>) {
    let drop_unless_named = |name: &str| !named.contains_key(name);
    if drop_unless_named("labels") {
        metadata.labels = None;
    }
    if drop_unless_named("annotations") {
        metadata.annotations = None;
    }
    if drop_unless_named("managedFields") {
        metadata.managed_fields = None;
    }
    if drop_unless_named("generateName") {
        metadata.generate_name = None;
    }
    if drop_unless_named("selfLink") {
        metadata.self_link = None;
    }
}

/// The entries of `map` that `fields` names, each projected; a value that is not a map is
/// kept whole wherever it is named.
fn keep(map: Map<String, Value>, fields: &BTreeMap<String, CachedFields>) -> Map<String, Value> {
    let mut kept = Map::new();
    for (name, value) in map {
        let Some(selected) = fields.get(&name) else {
            continue;
        };
        let value = match (selected, value) {
            (CachedFields::Only(below), Value::Object(inner)) => Value::Object(keep(inner, below)),
            (_, value) => value,
        };
        kept.insert(name, value);
    }
    kept
}

impl fmt::Display for CachedFields {
    /// `whole objects`, or the metadata always kept and the kept paths: `metadata and
    /// metadata.labels, data.x`; `all metadata and spec` where the metadata is kept whole.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CachedFields::Only(_) = self else {
            return f.write_str("whole objects");
        };
        let mut paths = Vec::new();
        self.collect_paths("", &mut paths);
        let metadata = match paths.iter().position(|path| path == "metadata") {
            Some(whole) => {
                paths.remove(whole);
                "all metadata"
            }
            None => "metadata",
        };
        match paths.is_empty() {
            true => f.write_str(metadata),
            false => write!(f, "{metadata} and {}", paths.join(", ")),
        }
    }
}

impl CachedFields {
    fn collect_paths(&self, prefix: &str, paths: &mut Vec<String>) {
        match self {
            CachedFields::Whole => paths.push(prefix.to_owned()),
            CachedFields::Only(fields) => {
                for (name, below) in fields {
                    let path = match prefix {
                        "" => name.clone(),
                        _ => format!("{prefix}.{name}"),
                    };
                    below.collect_paths(&path, paths);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config_map() -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n", "uid": "u", "resourceVersion": "7",
                "labels": {"a": "1"}, "annotations": {"n": "x"},
                "creationTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["f"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "W", "name": "w", "uid": "o",
                    "controller": true}]},
            "data": {"x": "1", "y": "2"}, "binaryData": {"b": "AA=="},
            "spec": {"list": [1, 2], "n": 3}}))
        .unwrap()
    }

    #[test]
    fn a_projection_keeps_the_identity_metadata_and_the_named_fields() {
        let mut object = config_map();
        CachedFields::metadata()
            .with("data.x")
            .with("spec.list.first")
            .project(&mut object);
        assert_eq!(
            object.data,
            json!({"data": {"x": "1"}, "spec": {"list": [1, 2]}})
        );
        let metadata = &object.metadata;
        assert_eq!(metadata.name.as_deref(), Some("c"));
        assert_eq!(metadata.uid.as_deref(), Some("u"));
        assert_eq!(metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(metadata.finalizers, Some(vec!["f".to_owned()]));
        assert_eq!(metadata.owner_references.as_ref().map(Vec::len), Some(1));
        assert_eq!(metadata.labels, None);
        assert_eq!(metadata.annotations, None);
        assert!(metadata.creation_timestamp.is_some());
        assert!(object.types.is_some());
    }

    #[test]
    fn named_metadata_and_whole_objects_are_kept() {
        let mut object = config_map();
        CachedFields::metadata()
            .with("metadata.labels")
            .project(&mut object);
        assert!(object.metadata.labels.is_some());
        assert_eq!(object.metadata.annotations, None);
        assert_eq!(object.data, json!({}));

        let mut whole = config_map();
        CachedFields::Whole.project(&mut whole);
        assert_eq!(whole, config_map());
        let mut all_metadata = config_map();
        CachedFields::metadata()
            .with("metadata")
            .project(&mut all_metadata);
        assert_eq!(all_metadata.metadata, config_map().metadata);
    }

    #[test]
    fn union_and_cover() {
        let x = CachedFields::metadata().with("data.x");
        let y = CachedFields::metadata().with("data.y");
        let mut both = x.clone();
        both.union(&y);
        assert!(both.covers(&x) && both.covers(&y) && !x.covers(&y));
        assert!(CachedFields::metadata().with("data").covers(&both));
        assert!(!both.covers(&CachedFields::Whole));
        assert!(both.covers(&CachedFields::metadata()));
        both.union(&CachedFields::Whole);
        assert!(both.is_whole());
        assert_eq!(
            CachedFields::metadata()
                .with("data.x")
                .with("spec")
                .to_string(),
            "metadata and data.x, spec"
        );
        assert_eq!(
            CachedFields::metadata()
                .with("metadata")
                .with("spec")
                .to_string(),
            "all metadata and spec"
        );
        assert_eq!(
            CachedFields::metadata().with("metadata").to_string(),
            "all metadata"
        );
        assert_eq!(CachedFields::Whole.to_string(), "whole objects");
    }
}
