//! What the checker knows of a value's type: CEL's types as far as a schema tells them,
//! with `optional_type(T)` for the results of `.?field`, `[?index]` and `optional.of`.

use serde_json::{Value, json};

use super::schema::Schema;

/// How many schema nodes an object's inferred schema copies at most (the rest is open).
const STRUCTURAL_BUDGET: usize = 2000;

/// What is known of a value's type.
#[derive(Clone, Debug)]
pub enum Ty {
    /// Anything (unknown schema, open field, result of an unchecked function, or of an
    /// expression that failed to check: nothing is reported twice).
    Dyn,
    /// A bool.
    Bool,
    /// A number (int, uint or double).
    Number,
    /// A string.
    String,
    /// Bytes (`b'...'`, `hash.md5(...)`): never written into an object as they are.
    Bytes,
    /// null.
    Null,
    /// A timestamp (`now`, `timestamp(...)`).
    Timestamp,
    /// A duration.
    Duration,
    /// A list of items of a type.
    List(Box<Ty>),
    /// A map of values of a type.
    Map(Box<Ty>),
    /// An object with a schema.
    Object(Schema),
    /// CEL's `optional_type(T)`: a value of a type, or none.
    Optional(Box<Ty>),
}

impl Ty {
    /// The type a schema node describes.
    pub fn of(schema: &Schema) -> Ty {
        match schema.type_name().as_deref() {
            Some("object") => match schema.map_values() {
                Some(values) => Ty::Map(Box::new(Ty::of(&values))),
                None => Ty::Object(schema.clone()),
            },
            Some("array") => Ty::List(Box::new(schema.items().map_or(Ty::Dyn, |s| Ty::of(&s)))),
            Some("string") => Ty::String,
            Some("integer" | "number") => Ty::Number,
            Some("boolean") => Ty::Bool,
            _ => Ty::Dyn,
        }
    }

    /// The OpenAPI schema of values of this type, as KRO infers an instance's status field
    /// from its expression's CEL type (`pkg/graph/schema/conversion_cel_type.go`): a
    /// scalar its type, a list or map of its items' schema, an object the schema it was
    /// read from, anything else open. A number is `number`: the checker does not tell
    /// KRO's `int` (`integer`) from `double`.
    pub fn openapi(&self) -> Value {
        match self {
            Ty::Bool => json!({"type": "boolean"}),
            Ty::Number => json!({"type": "number"}),
            Ty::String => json!({"type": "string"}),
            Ty::Timestamp => json!({"type": "string", "format": "date-time"}),
            Ty::Bytes => json!({"type": "string", "format": "byte"}),
            Ty::List(items) => json!({"type": "array", "items": items.openapi()}),
            Ty::Map(values) => json!({"type": "object", "additionalProperties": values.openapi()}),
            Ty::Object(schema) => {
                let mut budget = STRUCTURAL_BUDGET;
                schema.structural(&mut budget)
            }
            Ty::Optional(inner) => inner.openapi(),
            Ty::Dyn | Ty::Null | Ty::Duration => {
                json!({"x-kubernetes-preserve-unknown-fields": true})
            }
        }
    }

    /// An object of a schema, or anything when the schema is unknown.
    pub fn of_optional(schema: Option<&Schema>) -> Ty {
        schema.map_or(Ty::Dyn, |s| Ty::Object(s.clone()))
    }

    /// How a message names the type (`a number`, `optional(string)`).
    pub fn describe(&self) -> String {
        match self {
            Ty::Optional(inner) => format!("optional({})", inner.name()),
            _ => self.name_with_article().to_owned(),
        }
    }

    fn name_with_article(&self) -> &'static str {
        match self {
            Ty::Dyn => "any value",
            Ty::Bool => "a bool",
            Ty::Number => "a number",
            Ty::String => "a string",
            Ty::Bytes => "bytes",
            Ty::Null => "null",
            Ty::Timestamp => "a timestamp",
            Ty::Duration => "a duration",
            Ty::List(_) => "a list",
            Ty::Map(_) | Ty::Object(_) => "a map",
            Ty::Optional(_) => "an optional",
        }
    }

    /// The type's bare name, as inside `optional(...)`.
    pub fn name(&self) -> String {
        match self {
            Ty::Dyn => "dyn".into(),
            Ty::Bool => "bool".into(),
            Ty::Number => "number".into(),
            Ty::String => "string".into(),
            Ty::Bytes => "bytes".into(),
            Ty::Null => "null".into(),
            Ty::Timestamp => "timestamp".into(),
            Ty::Duration => "duration".into(),
            Ty::List(_) => "list".into(),
            Ty::Map(_) | Ty::Object(_) => "map".into(),
            Ty::Optional(inner) => format!("optional({})", inner.name()),
        }
    }

    /// A literal of the type to suggest as a default (`.orValue(0)`).
    pub fn zero(&self) -> &'static str {
        match self {
            Ty::Bool => "false",
            Ty::Number => "0",
            Ty::String => "''",
            Ty::Bytes => "b''",
            Ty::List(_) => "[]",
            Ty::Map(_) | Ty::Object(_) => "{}",
            _ => "...",
        }
    }

    /// A coarse class: two values of different classes can never be equal or compared.
    fn class(&self) -> Option<u8> {
        match self {
            Ty::Dyn | Ty::Null => None,
            Ty::Bool => Some(0),
            Ty::Number => Some(1),
            Ty::String => Some(2),
            Ty::Timestamp => Some(3),
            Ty::Duration => Some(4),
            Ty::List(_) => Some(5),
            Ty::Map(_) | Ty::Object(_) => Some(6),
            Ty::Optional(_) => Some(7),
            Ty::Bytes => Some(8),
        }
    }

    /// Whether values of the two types may be compared (either may be anything).
    pub fn same_class(&self, other: &Ty) -> bool {
        match (self.class(), other.class()) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }

    /// Whether the type is known, and not the one `wanted` names (`Dyn` fits anything).
    pub fn is_known_other_than(&self, wanted: &Ty) -> bool {
        self.class().is_some() && !self.same_class(wanted)
    }
}

/// Whether two types are the same scalar (for the result of an operator).
pub fn same(a: &Ty, b: &Ty) -> bool {
    matches!(
        (a, b),
        (Ty::Bool, Ty::Bool)
            | (Ty::Number, Ty::Number)
            | (Ty::String, Ty::String)
            | (Ty::Bytes, Ty::Bytes)
    )
}
