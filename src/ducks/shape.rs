//! Comparing a kind's OpenAPI v3 schema with a duck's `schemars` schema.

use std::fmt;

use serde_json::Value;

/// Why a schema does not have the duck's shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Miss {
    /// The schema has no field at this path.
    Missing {
        /// The dotted path.
        path: String,
    },
    /// A field the duck knows has another type.
    WrongType {
        /// The dotted path.
        path: String,
        /// The type the duck needs.
        expected: String,
        /// The type the schema declares.
        found: String,
    },
    /// The duck's path keeps unknown fields (`x-kubernetes-preserve-unknown-fields`): any
    /// shape may be there, so only a label or a mapping can say it is the duck.
    Open {
        /// The dotted path.
        path: String,
    },
    /// The object at the path declares none of the fields the duck knows.
    NoKnownField {
        /// The dotted path.
        path: String,
    },
}

impl Miss {
    /// Whether the kind got as far as the duck's path (worth a log line), rather than
    /// lacking it altogether.
    pub fn is_near(&self) -> bool {
        !matches!(self, Miss::Missing { .. })
    }
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Miss::Missing { path } => write!(f, "no field at {path}"),
            Miss::WrongType {
                path,
                expected,
                found,
            } => write!(f, "{path} is of type {found}, the duck needs {expected}"),
            Miss::Open { path } => write!(
                f,
                "{path} preserves unknown fields (matches only by label or mapping)"
            ),
            Miss::NoKnownField { path } => {
                write!(f, "{path} declares none of the duck's fields")
            }
        }
    }
}

/// Follows `$ref`s (into the root's `$defs`), and an `Option`'s `anyOf`/`oneOf` to its
/// non-null variant.
pub(crate) fn resolve<'a>(root: &'a Value, mut node: &'a Value) -> &'a Value {
    for _ in 0..32 {
        if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
            let name = reference.rsplit('/').next().unwrap_or_default();
            match root.get("$defs").and_then(|defs| defs.get(name)) {
                Some(target) => node = target,
                None => return node,
            }
            continue;
        }
        let variants = ["anyOf", "oneOf", "allOf"]
            .iter()
            .find_map(|k| node.get(*k).and_then(Value::as_array));
        match variants.and_then(|vs| vs.iter().find(|v| v.get("type") != Some(&"null".into()))) {
            Some(variant) => node = variant,
            None => return node,
        }
    }
    node
}

/// The JSON type a duck schema node asks for; `None` when any value will do.
fn duck_type(node: &Value) -> Option<&str> {
    match node.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    }
}

/// The type a kind's schema node declares; `None` when it allows several.
fn kind_type(node: &Value) -> Option<&str> {
    if node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return None;
    }
    match node.get("type").and_then(Value::as_str) {
        Some(t) => Some(t),
        None if node.get("properties").is_some() => Some("object"),
        None => None,
    }
}

/// Whether a node keeps unknown fields and declares none.
fn is_open(node: &Value) -> bool {
    node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        && node
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(|p| p.is_empty())
}

/// A kind's schema: a node, and the named schemas its `$ref`s point to (an OpenAPI v3
/// document's `components.schemas`; null for a CRD's self-contained schema).
#[derive(Clone, Copy)]
pub(crate) struct KindSchema<'a> {
    /// The kind's root node.
    pub node: &'a Value,
    /// The named schemas.
    pub defs: &'a Value,
}

impl<'a> KindSchema<'a> {
    /// A node with its `$ref` (also alone in an `allOf`) followed.
    fn resolve(&self, mut node: &'a Value) -> &'a Value {
        for _ in 0..32 {
            let reference = node.get("$ref").or_else(|| {
                node.get("allOf")
                    .and_then(Value::as_array)
                    .filter(|all| all.len() == 1)
                    .and_then(|all| all[0].get("$ref"))
            });
            let name = reference
                .and_then(Value::as_str)
                .and_then(|r| r.rsplit('/').next());
            match name.and_then(|name| self.defs.get(name)) {
                Some(target) => node = target,
                None => return node,
            }
        }
        node
    }
}

/// Why the kind's schema at `kind_path` does not have the shape of the duck (schemars
/// schema `root`) at `duck_path`; `None` when it does. Where the kind keeps unknown fields,
/// `open_matches` says whether that is accepted (a mapping or label said so) or a miss.
pub(crate) fn miss_at(
    root: &Value,
    duck_path: &[String],
    kind: KindSchema<'_>,
    kind_path: &[String],
    open_matches: bool,
) -> Option<Miss> {
    let mut duck_node = resolve(root, root);
    for segment in duck_path {
        duck_node = resolve(root, &duck_node["properties"][segment.as_str()]);
    }
    let mut kind_node = kind.resolve(kind.node);
    let mut path = String::new();
    for segment in kind_path {
        if is_open(kind_node) {
            let path = if path.is_empty() {
                "the root".into()
            } else {
                path
            };
            return (!open_matches).then_some(Miss::Open { path });
        }
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(segment);
        match kind_node.get("properties").and_then(|p| p.get(segment)) {
            Some(field) => kind_node = kind.resolve(field),
            None => return Some(Miss::Missing { path }),
        }
    }
    if is_open(kind_node) {
        return (!open_matches).then_some(Miss::Open { path });
    }
    if let Err(miss) = compare(root, duck_node, kind, kind_node, &path) {
        return Some(miss);
    }
    let known = duck_node.get("properties").and_then(Value::as_object);
    let declared = kind_node.get("properties").and_then(Value::as_object);
    if let Some(known) = known
        && !declared.is_some_and(|d| d.keys().any(|k| known.contains_key(k)))
    {
        return Some(Miss::NoKnownField { path });
    }
    None
}

/// Checks that every field `kind` declares and the duck knows has the duck's type, below
/// `path` (fields the kind leaves out or leaves open are accepted).
fn compare(
    root: &Value,
    duck: &Value,
    schema: KindSchema<'_>,
    kind: &Value,
    path: &str,
) -> Result<(), Miss> {
    let duck = resolve(root, duck);
    let kind = schema.resolve(kind);
    let (Some(expected), Some(found)) = (duck_type(duck), kind_type(kind)) else {
        return Ok(());
    };
    let compatible = expected == found || (expected == "number" && found == "integer");
    if !compatible {
        return Err(Miss::WrongType {
            path: path.to_string(),
            expected: expected.to_string(),
            found: found.to_string(),
        });
    }
    match expected {
        "object" => {
            let known = duck.get("properties").and_then(Value::as_object);
            let declared = kind.get("properties").and_then(Value::as_object);
            if let (Some(known), Some(declared)) = (known, declared) {
                for (name, field) in declared {
                    if let Some(duck_field) = known.get(name) {
                        compare(root, duck_field, schema, field, &format!("{path}.{name}"))?;
                    }
                }
            }
            let values = (
                duck.get("additionalProperties"),
                kind.get("additionalProperties"),
            );
            if let (Some(duck_values), Some(kind_values)) = values
                && kind_values.is_object()
            {
                compare(root, duck_values, schema, kind_values, &format!("{path}.*"))?;
            }
            Ok(())
        }
        "array" => match (duck.get("items"), kind.get("items")) {
            (Some(duck_items), Some(kind_items)) => {
                compare(root, duck_items, schema, kind_items, &format!("{path}[]"))
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}
