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
pub(crate) fn is_open(node: &Value) -> bool {
    node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        && node
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(|p| p.is_empty())
}

/// Checks that every field `kind` declares and the duck knows has the duck's type, below
/// `path` (fields the kind leaves out or leaves open are accepted).
pub(crate) fn compare(root: &Value, duck: &Value, kind: &Value, path: &str) -> Result<(), Miss> {
    let duck = resolve(root, duck);
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
                        compare(root, duck_field, field, &format!("{path}.{name}"))?;
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
                compare(root, duck_values, kind_values, &format!("{path}.*"))?;
            }
            Ok(())
        }
        "array" => match (duck.get("items"), kind.get("items")) {
            (Some(duck_items), Some(kind_items)) => {
                compare(root, duck_items, kind_items, &format!("{path}[]"))
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}
