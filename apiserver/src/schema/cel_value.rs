//! A value as a CEL value typed by its schema, as kube-apiserver converts one: strings of
//! `format: date-time` (and `date`) are timestamps, `duration` durations, `byte` bytes,
//! integers in a `number` field are doubles, and properties are named as kube's escaping
//! names them (`namespace` is `__namespace__`, `x-y` is `x__dash__y`); the rest is as
//! [`crate::k8s_cel::to_val`].

use std::collections::HashMap;

use base64::Engine;
use cel::common::types::{
    CelBytes, CelDouble, CelDuration, CelList, CelMap, CelMapKey, CelTimestamp,
};
use cel::common::value::Val;
use serde_json::Value;

use super::node::Node;
use crate::k8s_cel::to_val;

/// `value` (described by `node`) as a CEL value.
pub(super) fn typed_val<'a>(node: &Node, value: &'a Value) -> Box<dyn Val + 'a> {
    match value {
        Value::String(text) => match node.format.as_deref() {
            Some("date-time" | "datetime") => chrono::DateTime::parse_from_rfc3339(text)
                .map_or_else(|_| to_val(value), |t| Box::new(CelTimestamp::from(t))),
            Some("date") => chrono::DateTime::parse_from_rfc3339(&format!("{text}T00:00:00Z"))
                .map_or_else(|_| to_val(value), |t| Box::new(CelTimestamp::from(t))),
            Some("duration") => parse_go_duration(text)
                .map_or_else(|| to_val(value), |d| Box::new(CelDuration::from(d))),
            Some("byte") => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_or_else(|_| to_val(value), |b| Box::new(CelBytes::from(b))),
            _ => to_val(value),
        },
        Value::Number(n) if node.types == ["number"] => {
            Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN)))
        }
        Value::Array(items) => match &node.items {
            Some(item) => Box::new(CelList::from(
                items.iter().map(|v| typed_val(item, v)).collect::<Vec<_>>(),
            )),
            None => to_val(value),
        },
        Value::Object(fields) => Box::new(CelMap::from(
            fields
                .iter()
                .map(|(k, v)| match node.properties.get(k) {
                    Some(property) => (CelMapKey::from(escape(k)), typed_val(property, v)),
                    None => {
                        let val = match node.additional.as_deref() {
                            Some(values) => typed_val(values, v),
                            None => to_val(v),
                        };
                        (CelMapKey::from(k.as_str()), val)
                    }
                })
                .collect::<HashMap<_, _>>(),
        )),
        _ => to_val(value),
    }
}

/// A property name as a CEL field name, escaped as kube escapes it (`__` → `__underscores__`,
/// `.` → `__dot__`, `-` → `__dash__`, `/` → `__slash__`, reserved words → `__word__`).
fn escape(name: &str) -> String {
    if dynrec_k8s_cel::RESERVED_WORDS.contains(&name) {
        return format!("__{name}__");
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A Go duration (`1h30m`, `1.5s`, `-300ms`), as `time.ParseDuration` reads one.
pub(super) fn parse_go_duration(text: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    let mut nanos: f64 = 0.0;
    let mut any = false;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        nanos += number * scale;
        any = true;
    }
    if !any || !nanos.is_finite() || nanos.abs() > i64::MAX as f64 {
        return None;
    }
    let nanos = nanos as i64;
    Some(chrono::Duration::nanoseconds(if negative {
        -nanos
    } else {
        nanos
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_names_are_escaped_as_kube_escapes_them() {
        assert_eq!(escape("namespace"), "__namespace__");
        assert_eq!(escape("x-y.z/w"), "x__dash__y__dot__z__slash__w");
        assert_eq!(escape("a__b"), "a__underscores__b");
        assert_eq!(escape("plain_name"), "plain_name");
    }

    #[test]
    fn go_durations_parse() {
        let d = |s: &str| parse_go_duration(s).map(|d| d.num_milliseconds());
        assert_eq!(d("1h30m"), Some(5_400_000));
        assert_eq!(d("1.5s"), Some(1_500));
        assert_eq!(d("-300ms"), Some(-300));
        assert_eq!(d("0"), Some(0));
        for bad in ["", "1", "1x", "h", "1.2.3s"] {
            assert_eq!(d(bad), None, "{bad}");
        }
    }
}
