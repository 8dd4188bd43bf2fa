//! Which kinds implement a duck, and why: by CRD label, by schema, or as a known built-in.

use std::fmt;

use kube::api::DynamicObject;
use serde_json::Value;

use super::DuckType;
use super::shape::{Miss, compare, is_open, resolve};
use crate::object::Gvk;

/// Why a kind implements a duck.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Its CRD carries the duck's label with the value `"true"`.
    Label(String),
    /// Its schema has the duck's shape at the duck's path.
    Schema(String),
    /// A built-in kind known to implement the duck.
    Builtin,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Label(label) => write!(f, "label {label}=true"),
            Reason::Schema(path) => write!(f, "schema at {path}"),
            Reason::Builtin => write!(f, "built-in"),
        }
    }
}

/// What the matcher found for one duck and one kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The kind implements the duck.
    Match(Reason),
    /// It does not; [`Miss::is_near`] tells a near-miss from a kind with no such path.
    Miss(Miss),
}

/// A kind found to implement a duck.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindMatch {
    /// The duck's name.
    pub duck: String,
    /// The kind.
    pub gvk: Gvk,
    /// Why.
    pub reason: Reason,
}

/// Checks a kind's OpenAPI v3 schema (a CRD version's `openAPIV3Schema`) against the duck.
pub fn match_schema(duck: &DuckType, schema: &Value) -> Verdict {
    match schema_miss(duck, schema) {
        None => Verdict::Match(Reason::Schema(duck.path_text())),
        Some(miss) => Verdict::Miss(miss),
    }
}

fn schema_miss(duck: &DuckType, schema: &Value) -> Option<Miss> {
    let root = duck.schema();
    let (mut duck_node, mut kind_node) = (resolve(root, root), schema);
    let mut path = String::new();
    for segment in duck.path_segments() {
        if is_open(kind_node) {
            return Some(Miss::Open {
                path: if path.is_empty() {
                    "the root".into()
                } else {
                    path
                },
            });
        }
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(segment);
        duck_node = resolve(root, &duck_node["properties"][segment.as_str()]);
        match kind_node.get("properties").and_then(|p| p.get(segment)) {
            Some(field) => kind_node = field,
            None => return Some(Miss::Missing { path }),
        }
    }
    if is_open(kind_node) {
        return Some(Miss::Open { path });
    }
    let known = duck_node.get("properties").and_then(Value::as_object);
    let declared = kind_node.get("properties").and_then(Value::as_object);
    if let Some(known) = known
        && !declared.is_some_and(|d| d.keys().any(|k| known.contains_key(k)))
    {
        return Some(Miss::NoKnownField { path });
    }
    compare(root, duck_node, kind_node, &path).err()
}

/// The kind a CRD serves that implements the duck (its storage version when that one
/// matches, else the first served version that does), or why none does. `None` for a CRD
/// that serves nothing (not established, or being deleted).
pub fn match_crd(duck: &DuckType, crd: &DynamicObject) -> Option<(Gvk, Verdict)> {
    let served = crate::client::served_kinds(crd);
    let versions = crd.data["spec"]["versions"].as_array()?;
    let mut candidates: Vec<&Value> = versions
        .iter()
        .filter(|v| {
            served
                .iter()
                .any(|s| Some(s.gvk.version.as_str()) == v["name"].as_str())
        })
        .collect();
    candidates.sort_by_key(|v| v["storage"].as_bool() != Some(true));
    let gvk_of = |version: &Value| {
        let name = version["name"].as_str().unwrap_or_default();
        served
            .iter()
            .find(|s| s.gvk.version == name)
            .map(|s| s.gvk.clone())
    };
    let first = gvk_of(candidates.first()?)?;
    if let Some(label) = duck.label_key() {
        let labels = crd.metadata.labels.as_ref();
        if labels.and_then(|l| l.get(label)).map(String::as_str) == Some("true") {
            return Some((first, Verdict::Match(Reason::Label(label.to_string()))));
        }
    }
    let mut first_miss = None;
    for version in candidates {
        let schema = &version["schema"]["openAPIV3Schema"];
        match match_schema(duck, schema) {
            verdict @ Verdict::Match(_) => return Some((gvk_of(version)?, verdict)),
            miss if first_miss.is_none() => first_miss = Some(miss),
            _ => {}
        }
    }
    Some((first, first_miss?))
}

/// The duck's built-in kinds among `served` (the kinds the cluster serves).
pub fn match_builtins<'a>(
    duck: &'a DuckType,
    served: impl Fn(&Gvk) -> bool + 'a,
) -> impl Iterator<Item = KindMatch> + 'a {
    duck.builtins()
        .iter()
        .filter(move |gvk| served(gvk))
        .map(|gvk| KindMatch {
            duck: duck.name().to_string(),
            gvk: gvk.clone(),
            reason: Reason::Builtin,
        })
}
