//! Causes in kube-apiserver's words, with values printed as Go prints them.

use serde_json::Value;

use crate::error::Cause;

/// The field of a cause from a kube-openapi error name: `.spec` → `spec`, and `<nil>`
/// for the object itself, as `field.Path(nil).String()` prints it.
pub(super) fn field_of(name: &str) -> String {
    match name.strip_prefix('.').unwrap_or(name) {
        "" => "<nil>".into(),
        field => field.into(),
    }
}

/// `field: Invalid value: <value>: detail` (`field.Invalid`).
pub(super) fn invalid(name: &str, value: &str, detail: String) -> Cause {
    cause(
        "FieldValueInvalid",
        name,
        format!("Invalid value: {value}: {detail}"),
    )
}

/// kube-openapi's type error (`field.TypeInvalid`): the value shown is the type name.
pub(super) fn type_invalid(name: &str, expected: &str, actual: &str) -> Cause {
    let quoted = go_quote(actual);
    let detail = format!("{name} in body must be of type {expected}: {quoted}");
    cause(
        "FieldValueTypeInvalid",
        name,
        format!("Invalid value: {quoted}: {detail}"),
    )
}

/// `field: Required value`.
pub(super) fn required(name: &str) -> Cause {
    cause("FieldValueRequired", name, "Required value".into())
}

/// `field: Unsupported value: "x": supported values: "a", "b"` (`field.NotSupported`).
pub(super) fn not_supported(name: &str, value: &Value, allowed: &[Value]) -> Cause {
    let quoted: Vec<String> = allowed
        .iter()
        .map(|v| match v {
            Value::String(s) => go_quote(s),
            Value::Number(_) => go_quote(&go_value(v)),
            other => go_quote(&other.to_string()),
        })
        .collect();
    let message = format!(
        "Unsupported value: {}: supported values: {}",
        go_value(value),
        quoted.join(", ")
    );
    cause("FieldValueNotSupported", name, message)
}

/// `field: Too long: may not be more than 5 bytes` (`field.TooLong`).
pub(super) fn too_long(name: &str, max: u64) -> Cause {
    Cause::too_long(&field_of(name), usize::try_from(max).unwrap_or(usize::MAX))
}

/// `field: Too many: 4: must have at most 3 items` (`field.TooMany`).
pub(super) fn too_many(name: &str, actual: usize, max: u64) -> Cause {
    let unit = if max == 1 { "item" } else { "items" };
    let message = format!("Too many: {actual}: must have at most {max} {unit}");
    cause("FieldValueTooMany", name, message)
}

/// An error of a junctor (`allOf`, `anyOf`, `oneOf`, `not`), reported by kube-apiserver
/// against the object itself with an empty value.
pub(super) fn junctor(detail: String) -> Cause {
    cause(
        "FieldValueInvalid",
        "",
        format!("Invalid value: \"\": {detail}"),
    )
}

fn cause(reason: &'static str, name: &str, message: String) -> Cause {
    Cause {
        reason,
        field: field_of(name),
        message,
    }
}

/// A value as `field.Error` prints a bad value: strings quoted, numbers and booleans
/// with `%v`, `null` for nil; objects and arrays as JSON.
pub(super) fn go_value(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::String(s) => go_quote(s),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) if i64::try_from(u).is_ok() => u.to_string(),
            (_, _, Some(f)) => go_float(f),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// A float as Go's `%v` prints it: shortest digits, exponent form below 1e-4 and from 1e21.
pub(super) fn go_float(f: f64) -> String {
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    if f == 0.0 || (-4..21).contains(&exp) {
        return format!("{f}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// A string as Go's `%q` / `strconv.Quote` prints it.
pub(super) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
