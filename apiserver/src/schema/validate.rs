//! Schema validation as kube-openapi's `SchemaValidator` does it for a CRD, with errors
//! converted to field causes as apiextensions-apiserver converts them.
//!
//! Names follow kube-openapi: `spec.replicas`, `spec.items[2].name`, map entries as
//! `spec.labels.foo`; the root object is the empty name.

use serde_json::{Map, Number, Value};

use super::node::Node;
use super::render::{self, go_float, go_quote, go_value};
use super::{format, junctors};
use crate::error::Cause;

/// Validates `value` against `node`, appending causes; `name` is the kube-openapi path.
pub(super) fn validate(node: &Node, value: &Value, name: &str, out: &mut Vec<Cause>) {
    check_type(node, value, name, out);
    if value.is_null() {
        check_enum(node, value, name, out);
        return;
    }
    junctors::check(node, value, name, out, validate);
    match value {
        Value::String(s) => check_string(node, s, name, out),
        Value::Number(n) => check_number(node, n, value, name, out),
        Value::Array(items) => check_array(node, items, name, out),
        _ => {}
    }
    check_enum(node, value, name, out);
    if let Value::Object(map) = value {
        check_object(node, map, name, out);
    }
}

/// The JSON type kube-openapi sees: numbers that fit int64 are integers, others numbers.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Number(n) if n.as_i64().is_some() => "integer",
        Value::Number(_) => "number",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// kube-openapi's `typeValidator`, including its handling of `format` on non-strings.
fn check_type(node: &Node, value: &Value, name: &str, out: &mut Vec<Cause>) {
    let has = |t: &str| node.types.contains(&t);
    let expected = node.types.join(",");
    let format = node.format.as_deref().unwrap_or("");
    if node.types.is_empty() && format.is_empty() {
        return;
    }
    if value.is_null() {
        if !node.types.is_empty() && !node.nullable {
            out.push(render::type_invalid(name, &expected, "null"));
        }
        return;
    }
    let actual = json_type(value);
    let float_int =
        actual == "number" && value.as_f64().is_some_and(is_json_integer) && has("integer");
    let int_float = actual == "integer" && has("number");
    let stringish = matches!(value, Value::String(_) | Value::Array(_));
    if !stringish && !format.is_empty() {
        let data_format = match actual {
            "integer" => "int64",
            "number" => "float64",
            _ => "",
        };
        if !(has(actual) || data_format == format || float_int || int_float) {
            out.push(render::type_invalid(name, format, data_format));
            return;
        }
    }
    let numeric = has("number") || has("integer");
    if stringish && !numeric && !format.is_empty() {
        return;
    }
    if !(has(actual) || float_int || int_float) {
        out.push(render::type_invalid(name, &expected, actual));
    }
}

/// go-openapi's `swag.IsFloat64AJSONInteger`.
pub(super) fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let g = f as u64 as f64;
    let diff = (f - g).abs();
    if f == g || f == (f as i64) as f64 {
        return true;
    }
    if f == 0.0 || g == 0.0 || diff < f64::MIN_POSITIVE {
        return diff < 1e-9 * f64::MIN_POSITIVE;
    }
    diff / (f.abs() + g.abs()).min(f64::MAX) < 1e-9
}

/// maxLength, minLength, pattern and format; kube-openapi reports only the first of the three.
fn check_string(node: &Node, s: &str, name: &str, out: &mut Vec<Cause>) {
    let length = s.chars().count() as u64;
    if let Some(max) = node.max_length.filter(|max| length > *max) {
        out.push(render::too_long(name, max));
    } else if let Some(min) = node.min_length.filter(|min| length < *min) {
        let detail = format!("{name} in body should be at least {min} chars long");
        out.push(render::invalid(name, &go_quote(s), detail));
    } else if let Some((text, _)) = node.pattern.as_ref().filter(|(_, re)| !re.is_match(s)) {
        let detail = format!("{name} in body should match '{text}'");
        out.push(render::invalid(name, &go_quote(s), detail));
    }
    if let Some(format) = node.format.as_deref().filter(|f| !format::is_valid(f, s)) {
        out.push(render::type_invalid(name, format, s));
    }
}

/// multipleOf, minimum and maximum; integers are compared as int64 against the bound
/// truncated to an integer, as kube-openapi's native-type checks do.
fn check_number(node: &Node, n: &Number, value: &Value, name: &str, out: &mut Vec<Cause>) {
    let shown = go_value(value);
    let int = n.as_i64();
    let float = n.as_f64().unwrap_or(0.0);
    let mut fail = |detail: String| out.push(render::invalid(name, &shown, detail));
    if let Some(factor) = node.multiple_of {
        match int.filter(|_| factor as i64 != 0) {
            Some(i) if i % (factor as i64) != 0 => {
                fail(format!(
                    "{name} in body should be a multiple of {}",
                    factor as i64
                ));
            }
            Some(_) => {}
            None => {
                let ratio = if factor < 1.0 {
                    1.0 / factor * float
                } else {
                    float / factor
                };
                if !is_json_integer(ratio) {
                    let factor = go_float(factor);
                    fail(format!("{name} in body should be a multiple of {factor}"));
                }
            }
        }
    }
    let bound_text = |bound: f64| match int {
        Some(_) => (bound as i64).to_string(),
        None => go_float(bound),
    };
    if let Some((min, exclusive)) = node.minimum {
        let below = match int {
            Some(i) if exclusive => i <= min as i64,
            Some(i) => i < min as i64,
            None if exclusive => float <= min,
            None => float < min,
        };
        if below {
            let words = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            fail(format!(
                "{name} in body should be {words} {}",
                bound_text(min)
            ));
        }
    }
    if let Some((max, exclusive)) = node.maximum {
        let above = match int {
            Some(i) if exclusive => i >= max as i64,
            Some(i) => i > max as i64,
            None if exclusive => float >= max,
            None => float > max,
        };
        if above {
            let words = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            fail(format!(
                "{name} in body should be {words} {}",
                bound_text(max)
            ));
        }
    }
}

/// Items first, then minItems and maxItems.
fn check_array(node: &Node, items: &[Value], name: &str, out: &mut Vec<Cause>) {
    if let Some(item_node) = &node.items {
        for (i, item) in items.iter().enumerate() {
            validate(item_node, item, &format!("{name}[{i}]"), out);
        }
    }
    let size = items.len();
    if let Some(min) = node.min_items.filter(|min| (size as u64) < *min) {
        let detail = format!("{name} in body should have at least {min} items");
        out.push(render::invalid(name, &size.to_string(), detail));
    }
    if let Some(max) = node.max_items.filter(|max| size as u64 > *max) {
        out.push(render::too_many(name, size, max));
    }
}

/// `enum`, compared as Go compares after converting the value to each entry's type.
fn check_enum(node: &Node, value: &Value, name: &str, out: &mut Vec<Cause>) {
    if node.enumeration.is_empty() || node.enumeration.iter().any(|e| enum_match(e, value)) {
        return;
    }
    out.push(render::not_supported(name, value, &node.enumeration));
}

fn enum_match(entry: &Value, value: &Value) -> bool {
    match (entry, value) {
        (Value::Number(e), Value::Number(v)) => match (e.as_i64(), v.as_i64()) {
            (Some(e), Some(v)) => e == v,
            (Some(e), None) => v.as_f64().is_some_and(|f| f as i64 == e),
            (None, _) => e.as_f64() == v.as_f64(),
        },
        (entry, value) => entry == value,
    }
}

/// min/maxProperties (which end the check, as in kube-openapi), additionalProperties,
/// properties, then required.
fn check_object(node: &Node, map: &Map<String, Value>, name: &str, out: &mut Vec<Cause>) {
    let count = map.len();
    if let Some(min) = node.min_properties.filter(|min| (count as u64) < *min) {
        let detail = format!("{name} in body should have at least {min} properties");
        out.push(render::invalid(name, &count.to_string(), detail));
        return;
    }
    if let Some(max) = node.max_properties.filter(|max| count as u64 > *max) {
        out.push(render::too_many(name, count, max));
        return;
    }
    if let Some(additional) = &node.additional {
        for (key, value) in map
            .iter()
            .filter(|(k, _)| !node.properties.contains_key(*k))
        {
            validate(additional, value, &format!("{name}.{key}"), out);
        }
    }
    for (key, property) in &node.properties {
        if let Some(value) = map.get(key) {
            let child = if name.is_empty() {
                key.clone()
            } else {
                format!("{name}.{key}")
            };
            validate(property, value, &child, out);
        }
    }
    for key in node.required.iter().filter(|k| !map.contains_key(*k)) {
        out.push(render::required(&format!("{name}.{key}")));
    }
}
