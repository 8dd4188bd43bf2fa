//! The values the direct evaluator (`direct`) computes beyond those it reads in place: a
//! string it built, an optional, and CEL's functions over them that templates use most —
//! `string()`, `int()`, `size()` and `+` — each answering only where it is sure of CEL's
//! answer and [`Unknown`] elsewhere (an overflow, a parse failure, a double written as
//! text), so that the interpreter decides, with its own error.

use serde_json::Value as Json;

use super::view::{Unknown, View};

/// A value of a direct evaluation.
#[derive(Debug)]
pub(crate) enum Computed<'a> {
    /// Read in place, or a literal.
    View(View<'a>),
    /// A string built by the evaluation.
    Text(String),
    /// An optional (`x.?f`): what it holds, if anything.
    Optional(Option<View<'a>>),
}

impl<'a> Computed<'a> {
    /// The value as a view; an optional is not one.
    pub(crate) fn view(&self) -> Result<View<'_>, Unknown> {
        match self {
            Computed::View(view) => Ok(*view),
            Computed::Text(text) => Ok(View::String(text)),
            Computed::Optional(_) => Err(Unknown),
        }
    }

    /// `self.?field`: none when this holds nothing or is not a map (CEL's `_?._` maps a
    /// failed selection to none), else the field if the map has it.
    pub(crate) fn optional_field(self, field: &str) -> Result<Self, Unknown> {
        let target = match self {
            Computed::View(view) | Computed::Optional(Some(view)) => view,
            Computed::Optional(None) => return Ok(self),
            Computed::Text(_) => return Ok(Computed::Optional(None)),
        };
        Ok(Computed::Optional(match target {
            View::Map(_) => target.field(field)?,
            _ => None,
        }))
    }

    /// `self.orValue(default)`.
    pub(crate) fn or_value(self, default: Self) -> Result<Self, Unknown> {
        match self {
            Computed::Optional(Some(view)) => Ok(Computed::View(view)),
            Computed::Optional(None) => Ok(default),
            _ => Err(Unknown),
        }
    }

    /// The value as JSON, as the interpreter's result is written: scalars only (CEL maps
    /// are reordered, lists hold what a view may not model).
    pub(crate) fn into_json(self) -> Result<Json, Unknown> {
        match self {
            Computed::Text(text) => Ok(Json::String(text)),
            Computed::View(View::List(_) | View::Map(_)) | Computed::Optional(_) => Err(Unknown),
            Computed::View(view) => view.to_json().ok_or(Unknown),
        }
    }
}

/// A conversion function of CEL.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Conversion {
    /// `string(x)`.
    String,
    /// `int(x)`.
    Int,
}

impl Conversion {
    /// The conversion called `function`, if the direct evaluator has it.
    pub(crate) fn of(function: &str) -> Option<Self> {
        match function {
            "string" => Some(Conversion::String),
            "int" => Some(Conversion::Int),
            _ => None,
        }
    }

    /// The conversion of `value`, where it is sure to be CEL's.
    pub(crate) fn apply<'a>(self, value: Computed<'a>) -> Result<Computed<'a>, Unknown> {
        let converted = match (self, value.view()?) {
            (Conversion::String, View::String(_)) | (Conversion::Int, View::Int(_)) => {
                return Ok(value);
            }
            (Conversion::String, View::Int(i)) => Computed::Text(i.to_string()),
            (Conversion::String, View::UInt(u)) => Computed::Text(u.to_string()),
            (Conversion::String, View::Bool(b)) => Computed::Text(b.to_string()),
            (Conversion::Int, View::UInt(u)) => {
                Computed::View(View::Int(i64::try_from(u).map_err(|_| Unknown)?))
            }
            (Conversion::Int, View::String(s)) => {
                Computed::View(View::Int(s.parse().map_err(|_| Unknown)?))
            }
            _ => return Err(Unknown),
        };
        Ok(converted)
    }
}

/// `size(value)`: of a string its code points, of a list or a JSON map its entries.
pub(crate) fn size(value: &Computed<'_>) -> Result<i64, Unknown> {
    let size = match value.view()? {
        View::String(s) => s.chars().count(),
        View::List(items) => items.len(),
        View::Map(fields) => fields.len()?,
        _ => return Err(Unknown),
    };
    i64::try_from(size).map_err(|_| Unknown)
}

/// `lhs + rhs` of two strings (joined) or two ints (unless it overflows).
pub(crate) fn add<'a>(lhs: Computed<'a>, rhs: &Computed<'_>) -> Result<Computed<'a>, Unknown> {
    match (lhs.view()?, rhs.view()?) {
        (View::Int(a), View::Int(b)) => {
            Ok(Computed::View(View::Int(a.checked_add(b).ok_or(Unknown)?)))
        }
        (View::String(_), View::String(b)) => {
            let mut text = match lhs {
                Computed::Text(text) => text,
                other => other.view()?.as_str()?.to_owned(),
            };
            text.push_str(b);
            Ok(Computed::Text(text))
        }
        _ => Err(Unknown),
    }
}
