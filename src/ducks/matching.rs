//! Which kinds implement a duck, and why: by CRD label, by schema (a CRD's or the
//! cluster's OpenAPI v3), by a `DuckMapping`, or as a known built-in.

use std::fmt;

use kube::api::DynamicObject;
use serde_json::Value;

use super::shape::{KindSchema, Miss, miss_at};
use super::{DuckMapping, DuckType};
use crate::client::Projection;
use crate::object::Gvk;

/// Why a kind implements a duck.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Its CRD carries the duck's label with the value `"true"`.
    Label(String),
    /// Its CRD's schema has the duck's shape at the duck's path.
    Schema(String),
    /// Its schema in the cluster's OpenAPI v3 has the duck's shape at the duck's path.
    OpenApi(String),
    /// A `DuckMapping` (by name) says so and where: the path.
    Mapping {
        /// The mapping's name (`built-in` for the ones dynrec ships).
        name: String,
        /// Where the kind keeps the duck's fields.
        path: String,
    },
    /// A built-in kind known to implement the duck, whose OpenAPI schema the cluster does
    /// not serve.
    Builtin,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Label(label) => write!(f, "label {label}=true"),
            Reason::Schema(path) => write!(f, "schema at {path}"),
            Reason::OpenApi(path) => write!(f, "openapi schema at {path}"),
            Reason::Mapping { name, path } => write!(f, "mapping {name} at {path}"),
            Reason::Builtin => write!(f, "built-in (no openapi schema)"),
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
    /// Where the kind keeps the duck's fields (the identity unless mapped elsewhere).
    pub projection: Projection,
}

impl KindMatch {
    /// A match of `duck` on `gvk`; a mapping's reason carries its projection.
    pub fn new(duck: &DuckType, gvk: Gvk, reason: Reason) -> Self {
        let projection = match &reason {
            Reason::Mapping { path, .. } => Projection::mapped(&duck.path_text(), path),
            _ => Projection::default(),
        };
        Self {
            duck: duck.name().to_string(),
            gvk,
            reason,
            projection,
        }
    }
}

/// Checks a kind's OpenAPI v3 schema (a CRD version's `openAPIV3Schema`) against the duck.
pub fn match_schema(duck: &DuckType, schema: &Value) -> Verdict {
    let kind = KindSchema {
        node: schema,
        defs: &Value::Null,
    };
    let path = duck.path_segments();
    match miss_at(duck.schema(), path, kind, path, false) {
        None => Verdict::Match(Reason::Schema(duck.path_text())),
        Some(miss) => Verdict::Miss(miss),
    }
}

/// Checks a kind's schema in an OpenAPI v3 document (`defs` its `components.schemas`,
/// `$ref`s followed) against the duck.
pub fn match_openapi(duck: &DuckType, defs: &Value, schema: &Value) -> Verdict {
    let kind = KindSchema { node: schema, defs };
    let path = duck.path_segments();
    match miss_at(duck.schema(), path, kind, path, false) {
        None => Verdict::Match(Reason::OpenApi(duck.path_text())),
        Some(miss) => Verdict::Miss(miss),
    }
}

/// Checks a mapping's path against the kind's schema (with its `$ref` targets `defs`), when
/// known: the path must exist (or lie where the schema keeps unknown fields) and have the
/// duck's shape.
pub fn match_mapping(
    duck: &DuckType,
    mapping: &DuckMapping,
    schema: Option<(&Value, &Value)>,
) -> Verdict {
    let reason = Reason::Mapping {
        name: mapping.name.clone(),
        path: mapping.path.clone(),
    };
    let Some((node, defs)) = schema else {
        return Verdict::Match(reason);
    };
    let kind_path: Vec<String> = mapping.path.split('.').map(str::to_string).collect();
    let kind = KindSchema { node, defs };
    match miss_at(duck.schema(), duck.path_segments(), kind, &kind_path, true) {
        None => Verdict::Match(reason),
        Some(miss) => Verdict::Miss(miss),
    }
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

/// The duck's known built-in kinds among `served` (served kinds whose OpenAPI schema is
/// not available).
pub fn match_builtins<'a>(
    duck: &'a DuckType,
    served: impl Fn(&Gvk) -> bool + 'a,
) -> impl Iterator<Item = KindMatch> + 'a {
    duck.builtins()
        .iter()
        .filter(move |gvk| served(gvk))
        .map(|gvk| KindMatch::new(duck, gvk.clone(), Reason::Builtin))
}
