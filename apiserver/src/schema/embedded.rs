//! Checks of embedded resources (`x-kubernetes-embedded-resource`): apiVersion and kind
//! are required, and metadata must be a valid ObjectMeta. This is apiextensions-apiserver's
//! separate objectmeta pass, so its paths are `field.Path`s: map entries as `spec.map[key]`.

use serde_json::{Map, Value};

use super::node::Node;
use super::render::{self, go_quote, go_value};
use crate::error::Cause;
use crate::validation;

/// Checks every embedded resource in `object` (not the object itself).
pub(super) fn validate(root: &Node, object: &Value, out: &mut Vec<Cause>) {
    walk(root, object, "", out);
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.into()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(node: &Node, value: &Value, path: &str, out: &mut Vec<Cause>) {
    match value {
        Value::Object(map) => {
            if node.embedded {
                check_resource(path, map, out);
            }
            for (key, v) in map {
                if let Some(property) = node.properties.get(key) {
                    walk(property, v, &child(path, key), out);
                } else if let Some(additional) = node.additional.as_deref() {
                    walk(additional, v, &format!("{path}[{key}]"), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = node.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    walk(item_node, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

fn invalid(field: &str, value: &Value, detail: impl Into<String>) -> Cause {
    render::invalid(field, &go_value(value), detail.into())
}

fn check_resource(path: &str, map: &Map<String, Value>, out: &mut Vec<Cause>) {
    for key in ["apiVersion", "kind"] {
        if !map.contains_key(key) {
            out.push(Cause::required(&child(path, key), "must not be empty"));
        }
    }
    if let Some(api_version) = map.get("apiVersion") {
        let field = child(path, "apiVersion");
        match api_version.as_str() {
            None => out.push(invalid(&field, api_version, "must be a string")),
            Some("") => out.push(invalid(&field, api_version, "must not be empty")),
            Some(s) if s != "/" && s.matches('/').count() > 1 => {
                out.push(invalid(
                    &field,
                    api_version,
                    format!("unexpected GroupVersion string: {s}"),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(kind) = map.get("kind") {
        let field = child(path, "kind");
        match kind.as_str() {
            None => out.push(invalid(&field, kind, "must be a string")),
            Some("") => out.push(invalid(&field, kind, "must not be empty")),
            Some(s) => {
                let errs = dns1035_label(&s.to_lowercase());
                if !errs.is_empty() {
                    let detail = format!(
                        "may have mixed case, but should otherwise match: {}",
                        errs.join(",")
                    );
                    out.push(invalid(&field, kind, detail));
                }
            }
        }
    }
    if let Some(metadata) = map.get("metadata") {
        check_metadata(&child(path, "metadata"), metadata, out);
    }
}

/// `IsDNS1035Label`'s messages.
fn dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let bytes = value.as_bytes();
    let inner_ok = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    let first_ok = bytes.first().is_some_and(u8::is_ascii_lowercase);
    let last_ok = bytes
        .last()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !(inner_ok && first_ok && last_ok) {
        errs.push(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                .to_string(),
        );
    }
    errs
}

/// The JSON kind Go's decoder names in `cannot unmarshal X into ...`.
fn go_json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Why Go could not decode `metadata` into an ObjectMeta, for the fields checked here.
fn decode_error(metadata: &Value) -> Option<String> {
    let Value::Object(map) = metadata else {
        return (!metadata.is_null()).then(|| {
            let kind = go_json_kind(metadata);
            format!("json: cannot unmarshal {kind} into Go value of type v1.ObjectMeta")
        });
    };
    let field_error = |field: &str, kind: &str, want: &str| {
        format!(
            "json: cannot unmarshal {kind} into Go struct field ObjectMeta.{field} of type {want}"
        )
    };
    for field in ["name", "generateName", "namespace"] {
        if let Some(v) = map.get(field).filter(|v| !v.is_string() && !v.is_null()) {
            return Some(field_error(field, go_json_kind(v), "string"));
        }
    }
    for field in ["labels", "annotations"] {
        match map.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(entries)) => {
                if let Some(v) = entries.values().find(|v| !v.is_string() && !v.is_null()) {
                    return Some(field_error(field, go_json_kind(v), "string"));
                }
            }
            Some(v) => return Some(field_error(field, go_json_kind(v), "map[string]string")),
        }
    }
    None
}

/// ObjectMeta checks kube-apiserver makes on embedded metadata: name and generateName as
/// path segments, namespace as a DNS-1123 label, label keys and values, annotation keys.
fn check_metadata(field: &str, metadata: &Value, out: &mut Vec<Cause>) {
    if let Some(err) = decode_error(metadata) {
        out.push(invalid(field, metadata, err));
        return;
    }
    let text = |key: &str| metadata.get(key).and_then(Value::as_str).unwrap_or("");
    let generate_name = text("generateName");
    for msg in path_segment_problems(generate_name, true) {
        let value = Value::String(generate_name.into());
        out.push(invalid(&child(field, "generateName"), &value, msg));
    }
    let name = text("name");
    for msg in path_segment_problems(name, false) {
        out.push(invalid(
            &child(field, "name"),
            &Value::String(name.into()),
            msg,
        ));
    }
    let namespace = text("namespace");
    if !namespace.is_empty() {
        for msg in validation::dns1123_label(namespace) {
            let value = Value::String(namespace.into());
            out.push(invalid(&child(field, "namespace"), &value, msg));
        }
    }
    let entries = |key: &str| metadata.get(key).and_then(Value::as_object).cloned();
    if let Some(labels) = entries("labels") {
        let labels_field = child(field, "labels");
        for (key, value) in &labels {
            for msg in validation::qualified_name(key) {
                out.push(invalid(&labels_field, &Value::String(key.clone()), msg));
            }
            for msg in validation::label_value(value.as_str().unwrap_or("")) {
                out.push(invalid(&labels_field, value, msg));
            }
        }
    }
    if let Some(annotations) = entries("annotations") {
        let annotations_field = child(field, "annotations");
        for key in annotations.keys() {
            for msg in validation::qualified_name(&key.to_lowercase()) {
                out.push(invalid(
                    &annotations_field,
                    &Value::String(key.clone()),
                    msg,
                ));
            }
        }
    }
}

/// `path.ValidatePathSegmentName` (only `/` and `%` for a prefix); an empty name is
/// accepted, as kube-apiserver fills in a placeholder for embedded resources.
fn path_segment_problems(name: &str, prefix: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if name.is_empty() {
        return problems;
    }
    if !prefix && (name == "." || name == "..") {
        problems.push(format!("may not be {}", go_quote(name).replace('"', "'")));
        return problems;
    }
    for c in ["/", "%"] {
        if name.contains(c) {
            problems.push(format!("may not contain '{c}'"));
        }
    }
    problems
}
