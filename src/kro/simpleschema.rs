//! KRO's SimpleSchema (`string | required=true default=foo`, nested objects, `[]T`,
//! `map[string]T`, custom `types`) turned into the OpenAPI v3 schema KRO generates for the
//! instance CRD (kro's `pkg/simpleschema`): the same types, markers and defaults.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::definitions::DefinitionError;

/// How deep `[]`/`map[string]` may nest (KRO's limit).
const MAX_NESTING: usize = 16;

/// The schema of `spec` (a map of SimpleSchema fields) given the custom `types`; errors
/// name the field's path under `path`.
pub fn spec_schema(spec: &Value, types: &Value, path: &str) -> Result<Value, DefinitionError> {
    let resolver = Resolver::new(types, "spec.schema.types")?;
    match spec {
        Value::Null => Ok(json!({"type": "object"})),
        Value::Object(fields) => resolver.object(fields, path),
        other => Err(DefinitionError::new(
            path,
            format!("expected a map of fields, found {}", kind_of(other)),
        )),
    }
}

/// One parsed type: `string`, `object`, `[]T`, `map[string]T` or a custom type's name.
#[derive(Debug, PartialEq)]
enum Type {
    Atomic(&'static str),
    Object,
    Slice(Box<Type>),
    Map(Box<Type>),
    Custom(String),
}

impl Type {
    fn parse(text: &str) -> Result<Type, String> {
        Self::parse_nested(text.trim(), 0)
    }

    fn parse_nested(text: &str, depth: usize) -> Result<Type, String> {
        if depth > MAX_NESTING {
            return Err(format!(
                "type nesting too deep (max {MAX_NESTING}): {text:?}"
            ));
        }
        let text = text.trim();
        match text {
            "" => return Err("empty type".into()),
            "string" => return Ok(Type::Atomic("string")),
            "integer" => return Ok(Type::Atomic("integer")),
            "boolean" => return Ok(Type::Atomic("boolean")),
            "float" | "number" => return Ok(Type::Atomic("number")),
            "object" => return Ok(Type::Object),
            _ => {}
        }
        if let Some(element) = text.strip_prefix("[]") {
            if element.trim().is_empty() {
                return Err("empty slice element type".into());
            }
            return Ok(Type::Slice(Box::new(Self::parse_nested(
                element,
                depth + 1,
            )?)));
        }
        if text.starts_with("map[") {
            let Some(value) = text.strip_prefix("map[string]") else {
                return Err(format!("{text:?}: a map's key must be string"));
            };
            if value.trim().is_empty() {
                return Err(format!("{text:?}: the map's value type is missing"));
            }
            return Ok(Type::Map(Box::new(Self::parse_nested(value, depth + 1)?)));
        }
        Ok(Type::Custom(text.to_owned()))
    }

    /// The custom types it names.
    fn names<'a>(&'a self, into: &mut Vec<&'a str>) {
        match self {
            Type::Slice(t) | Type::Map(t) => t.names(into),
            Type::Custom(name) => into.push(name),
            Type::Atomic(_) | Type::Object => {}
        }
    }
}

/// A custom type's schema and whether it carries `required=true`.
#[derive(Clone)]
struct Custom {
    schema: Value,
    required: bool,
}

/// The custom types, built in the order of their dependencies.
struct Resolver {
    types: BTreeMap<String, Custom>,
}

impl Resolver {
    fn new(types: &Value, path: &str) -> Result<Self, DefinitionError> {
        let mut resolver = Resolver {
            types: BTreeMap::new(),
        };
        let declared = match types {
            Value::Null => return Ok(resolver),
            Value::Object(declared) => declared,
            other => {
                return Err(DefinitionError::new(
                    path,
                    format!("expected a map of types, found {}", kind_of(other)),
                ));
            }
        };
        let mut depends: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for (name, spec) in declared {
            let mut names = BTreeSet::new();
            type_names(spec, &mut names)
                .map_err(|message| DefinitionError::new(format!("{path}.{name}"), message))?;
            depends.insert(name, names);
        }
        let mut built: BTreeSet<&str> = BTreeSet::new();
        while built.len() < declared.len() {
            let next = depends.iter().find(|(name, deps)| {
                !built.contains(*name)
                    && deps
                        .iter()
                        .all(|d| built.contains(d.as_str()) || !declared.contains_key(d))
            });
            let Some((&name, _)) = next else {
                let waiting: Vec<&str> = depends
                    .keys()
                    .copied()
                    .filter(|n| !built.contains(n))
                    .collect();
                return Err(DefinitionError::new(
                    path,
                    format!("cyclic dependency between the types {}", waiting.join(", ")),
                ));
            };
            let custom = resolver.custom(name, &declared[name], &format!("{path}.{name}"))?;
            resolver.types.insert(name.to_owned(), custom);
            built.insert(name);
        }
        Ok(resolver)
    }

    /// A custom type: an alias (`string | default=foo`) or a struct (a map of fields).
    fn custom(&self, name: &str, spec: &Value, path: &str) -> Result<Custom, DefinitionError> {
        match spec {
            Value::String(text) => {
                let mut parent = Vec::new();
                let schema = self.field(name, text, &mut parent, path)?;
                Ok(Custom {
                    schema,
                    required: !parent.is_empty(),
                })
            }
            Value::Object(fields) => Ok(Custom {
                schema: self.object(fields, path)?,
                required: false,
            }),
            other => Err(DefinitionError::new(
                path,
                format!(
                    "expected a type or a map of fields, found {}",
                    kind_of(other)
                ),
            )),
        }
    }

    /// An object of named fields; `default: {}` when a field has a default and none is
    /// required (as KRO sets it, so the defaults apply to an absent object).
    fn object(&self, fields: &Map<String, Value>, path: &str) -> Result<Value, DefinitionError> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for (name, spec) in fields {
            let here = format!("{path}.{name}");
            let schema = match spec {
                Value::String(text) => self.field(name, text, &mut required, &here)?,
                Value::Object(nested) => self.object(nested, &here)?,
                other => {
                    return Err(DefinitionError::new(
                        here,
                        format!(
                            "expected a type or a map of fields, found {}",
                            kind_of(other)
                        ),
                    ));
                }
            };
            properties.insert(name.clone(), schema);
        }
        let child_default = properties.values().any(|p| p.get("default").is_some());
        let mut schema = json!({"type": "object", "properties": properties});
        required.sort();
        required.dedup();
        if !required.is_empty() {
            schema["required"] = json!(required);
        } else if child_default {
            schema["default"] = json!({});
        }
        Ok(schema)
    }

    /// One field written as `TYPE | MARKERS`; `required=true` adds `name` to `required`.
    fn field(
        &self,
        name: &str,
        text: &str,
        required: &mut Vec<String>,
        path: &str,
    ) -> Result<Value, DefinitionError> {
        let error = |message: String| DefinitionError::new(path, format!("{text:?}: {message}"));
        let (type_text, markers) = match text.split_once('|') {
            Some((t, m)) => (t, parse_markers(m).map_err(error)?),
            None => (text, Vec::new()),
        };
        let ty = Type::parse(type_text).map_err(error)?;
        let mut schema = self.schema(&ty).map_err(error)?;
        if let Type::Custom(custom) = &ty
            && self.types.get(custom).is_some_and(|c| c.required)
        {
            required.push(name.to_owned());
        }
        for (key, value) in markers {
            apply_marker(&mut schema, &key, &value, name, required)
                .map_err(|message| error(format!("marker {key}: {message}")))?;
        }
        if schema.get("x-kubernetes-list-map-keys").is_some()
            && schema.get("x-kubernetes-list-type") != Some(&json!("map"))
        {
            return Err(error(
                "listMapKey set while listType is not map; set listType=map".into(),
            ));
        }
        Ok(schema)
    }

    fn schema(&self, ty: &Type) -> Result<Value, String> {
        Ok(match ty {
            Type::Atomic(name) => json!({"type": name}),
            Type::Object => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            Type::Slice(element) => json!({"type": "array", "items": self.schema(element)?}),
            Type::Map(value) => {
                json!({"type": "object", "additionalProperties": self.schema(value)?})
            }
            Type::Custom(name) => match self.types.get(name) {
                Some(custom) => custom.schema.clone(),
                None => {
                    let known: Vec<&str> = self.types.keys().map(String::as_str).collect();
                    return Err(match known.is_empty() {
                        true => format!("unknown type {name:?} (no custom types are declared)"),
                        false => format!(
                            "unknown type {name:?}; the custom types are: {}",
                            known.join(", ")
                        ),
                    });
                }
            },
        })
    }
}

/// The custom type names a type declaration reads.
fn type_names(spec: &Value, into: &mut BTreeSet<String>) -> Result<(), String> {
    match spec {
        Value::String(text) => {
            let type_text = text.split('|').next().unwrap_or_default();
            let ty = Type::parse(type_text)?;
            let mut names = Vec::new();
            ty.names(&mut names);
            into.extend(names.into_iter().map(String::from));
            Ok(())
        }
        Value::Object(fields) => fields.values().try_for_each(|f| type_names(f, into)),
        other => Err(format!(
            "expected a type or a map of fields, found {}",
            kind_of(other)
        )),
    }
}

/// The markers after `|`: `key=value` separated by spaces; values may be quoted
/// (`"a b"`, with `\"` inside) or bracketed (`[1, 2]`, `{"a": 1}`).
fn parse_markers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut markers = Vec::new();
    let mut key: Option<String> = None;
    let mut buffer = String::new();
    let (mut quoted, mut escaped, mut depth) = (false, false, 0i32);
    let mut finish = |key: &mut Option<String>, buffer: &mut String| {
        if let Some(key) = key.take() {
            markers.push((key, marker_value(buffer)));
            buffer.clear();
        }
    };
    for c in text.chars() {
        match c {
            '=' if key.is_none() && !quoted && depth == 0 => {
                let name = buffer.trim().to_owned();
                if name.is_empty() {
                    return Err("a marker without a name before `=`".into());
                }
                if !MARKERS.contains(&name.as_str()) {
                    return Err(format!(
                        "unknown marker {name:?}; the markers are: {}",
                        MARKERS.join(", ")
                    ));
                }
                key = Some(name);
                buffer.clear();
            }
            '"' if !escaped => {
                quoted = !quoted;
                buffer.push(c);
            }
            '\\' if quoted && !escaped => {
                escaped = true;
                buffer.push(c);
            }
            '{' | '[' if !quoted => {
                depth += 1;
                buffer.push(c);
            }
            '}' | ']' if !quoted => {
                depth -= 1;
                if depth < 0 {
                    return Err("an unmatched closing bracket".into());
                }
                buffer.push(c);
            }
            c if c.is_whitespace() && !quoted && depth == 0 => finish(&mut key, &mut buffer),
            c => {
                escaped = false;
                buffer.push(c);
            }
        }
    }
    if quoted {
        return Err("an unclosed quote".into());
    }
    if depth > 0 {
        return Err("an unclosed bracket".into());
    }
    if key.is_none() && !buffer.trim().is_empty() {
        return Err(format!("the marker {:?} has no `=value`", buffer.trim()));
    }
    finish(&mut key, &mut buffer);
    Ok(markers)
}

/// The markers KRO knows.
const MARKERS: [&str; 16] = [
    "required",
    "default",
    "description",
    "minimum",
    "maximum",
    "validation",
    "enum",
    "immutable",
    "pattern",
    "uniqueItems",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "listType",
    "listMapKey",
];

/// A marker's value: unquoted and unescaped when quoted, else trimmed.
fn marker_value(raw: &str) -> String {
    let raw = raw.trim();
    let Some(inner) = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .filter(|_| raw.len() >= 2)
    else {
        return raw.to_owned();
    };
    let mut out = String::new();
    let mut escaped = false;
    for c in inner.chars() {
        match (escaped, c) {
            (true, c) => {
                if c != '"' && c != '\\' {
                    out.push('\\');
                }
                out.push(c);
                escaped = false;
            }
            (false, '\\') => escaped = true,
            (false, c) => out.push(c),
        }
    }
    out
}

fn apply_marker(
    schema: &mut Value,
    key: &str,
    value: &str,
    name: &str,
    required: &mut Vec<String>,
) -> Result<(), String> {
    let ty = schema["type"].as_str().unwrap_or_default().to_owned();
    let only = |types: &[&str]| match types.contains(&ty.as_str()) {
        true => Ok(()),
        false => Err(format!(
            "only applies to {} fields, not {ty}",
            types.join(" or ")
        )),
    };
    match key {
        "required" => {
            if parse_bool(value)? {
                required.push(name.to_owned());
            }
        }
        "default" => schema["default"] = default_value(&ty, value)?,
        "description" => schema["description"] = json!(value),
        "minimum" | "maximum" => schema[key] = json!(parse_number(value)?),
        "validation" => {
            if value.trim().is_empty() {
                return Err("an empty rule".into());
            }
            push_rule(schema, value, "validation failed");
        }
        "immutable" => {
            if parse_bool(value)? {
                push_rule(schema, "self == oldSelf", "field is immutable");
            }
        }
        "enum" => {
            only(&["string", "integer"])?;
            let mut values = Vec::new();
            for item in value.split(',').map(str::trim) {
                if item.is_empty() {
                    return Err("empty enum values are not allowed".into());
                }
                values.push(match ty.as_str() {
                    "integer" => json!(parse_integer(item)?),
                    _ => json!(item),
                });
            }
            schema["enum"] = json!(values);
        }
        "pattern" => {
            only(&["string"])?;
            if value.is_empty() {
                return Err("an empty pattern".into());
            }
            regex::Regex::new(value).map_err(|e| format!("not a regular expression: {e}"))?;
            schema["pattern"] = json!(value);
        }
        "minLength" | "maxLength" => {
            only(&["string"])?;
            schema[key] = json!(parse_integer(value)?);
        }
        "minItems" | "maxItems" => {
            only(&["array"])?;
            schema[key] = json!(parse_integer(value)?);
        }
        "uniqueItems" => {
            only(&["array"])?;
            if parse_bool(value)? {
                set_list_type(schema, "set")?;
            }
        }
        "listType" => {
            only(&["array"])?;
            if !["atomic", "set", "map"].contains(&value) {
                return Err(format!("{value:?} is not one of atomic, set, map"));
            }
            set_list_type(schema, value)?;
        }
        "listMapKey" => {
            only(&["array"])?;
            let keys = schema["x-kubernetes-list-map-keys"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if keys.contains(&json!(value)) {
                return Err(format!("the key {value:?} is given twice"));
            }
            let mut keys = keys;
            keys.push(json!(value));
            schema["x-kubernetes-list-map-keys"] = json!(keys);
        }
        _ => return Err("unknown marker".into()),
    }
    Ok(())
}

fn set_list_type(schema: &mut Value, list_type: &str) -> Result<(), String> {
    match schema["x-kubernetes-list-type"].as_str() {
        Some(existing) if existing != list_type => Err(format!(
            "listType is already {existing} (uniqueItems=true makes it set)"
        )),
        _ => {
            schema["x-kubernetes-list-type"] = json!(list_type);
            Ok(())
        }
    }
}

fn push_rule(schema: &mut Value, rule: &str, message: &str) {
    let mut rules = schema["x-kubernetes-validations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    rules.push(json!({"rule": rule, "message": message}));
    schema["x-kubernetes-validations"] = json!(rules);
}

/// A `default=` value in the field's type (objects and arrays as JSON).
fn default_value(ty: &str, value: &str) -> Result<Value, String> {
    Ok(match ty {
        "string" => json!(value),
        "integer" => {
            json!(parse_integer(value).map_err(|_| format!("{value:?} is not an integer"))?)
        }
        "number" => json!(parse_number(value)?),
        "boolean" => json!(parse_bool(value)?),
        _ => {
            serde_json::from_str(value).map_err(|e| format!("{value:?} is not a JSON {ty}: {e}"))?
        }
    })
}

fn parse_bool(value: &str) -> Result<bool, String> {
    match value {
        "true" | "True" | "TRUE" | "1" | "t" | "T" => Ok(true),
        "false" | "False" | "FALSE" | "0" | "f" | "F" => Ok(false),
        _ => Err(format!("{value:?} is not a boolean")),
    }
}

fn parse_integer(value: &str) -> Result<i64, String> {
    value
        .parse()
        .map_err(|_| format!("{value:?} is not an integer"))
}

fn parse_number(value: &str) -> Result<serde_json::Number, String> {
    if let Ok(integer) = value.parse::<i64>() {
        return Ok(integer.into());
    }
    value
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .ok_or_else(|| format!("{value:?} is not a number"))
}

pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_of(spec: Value, types: Value) -> Value {
        spec_schema(&spec, &types, "spec.schema.spec").unwrap()
    }

    #[test]
    fn types_markers_and_defaults_are_those_kro_generates() {
        let schema = schema_of(
            json!({
                "name": "string | required=true description=\"The name\"",
                "replicas": "integer | default=1 minimum=1 maximum=10",
                "env": "string | default=\"dev\" enum=\"dev,prod\"",
                "tags": "[]string | uniqueItems=true minItems=1 maxItems=3",
                "labels": "map[string]string",
                "values": "object",
                "ratio": "float | default=0.5",
                "id": "string | immutable=true pattern=\"^[a-z]+$\"",
                "nested": {"enabled": "boolean | default=true"},
            }),
            Value::Null,
        );
        assert_eq!(
            schema,
            json!({"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "description": "The name"},
                "replicas": {"type": "integer", "default": 1, "minimum": 1, "maximum": 10},
                "env": {"type": "string", "default": "dev", "enum": ["dev", "prod"]},
                "tags": {"type": "array", "items": {"type": "string"},
                         "x-kubernetes-list-type": "set", "minItems": 1, "maxItems": 3},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "values": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "ratio": {"type": "number", "default": 0.5},
                "id": {"type": "string", "pattern": "^[a-z]+$",
                       "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "field is immutable"}]},
                "nested": {"type": "object", "default": {},
                           "properties": {"enabled": {"type": "boolean", "default": true}}},
            }})
        );
    }

    #[test]
    fn custom_types_resolve_in_dependency_order_and_carry_required() {
        let schema = schema_of(
            json!({"name": "RequiredString", "db": "Database", "endpoints": "[]Database | minItems=1"}),
            json!({
                "Database": {"host": "RequiredString", "port": "Port"},
                "Port": "integer | default=8080",
                "RequiredString": "string | required=true",
            }),
        );
        assert_eq!(schema["required"], json!(["name"]));
        assert_eq!(schema["properties"]["db"]["required"], json!(["host"]));
        assert_eq!(
            schema["properties"]["db"]["properties"]["port"],
            json!({"type": "integer", "default": 8080})
        );
        assert_eq!(schema["properties"]["endpoints"]["minItems"], json!(1));
    }

    #[test]
    fn mistakes_are_refused_with_the_field_path() {
        let err = |spec: Value, types: Value| {
            spec_schema(&spec, &types, "spec.schema.spec")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(json!({"a": {"b": "string | requird=true"}}), Value::Null),
            "spec.schema.spec.a.b: \"string | requird=true\": unknown marker \"requird\"; the markers are: required, default, description, minimum, maximum, validation, enum, immutable, pattern, uniqueItems, minLength, maxLength, minItems, maxItems, listType, listMapKey"
        );
        assert!(err(json!({"a": "Missing"}), Value::Null).contains("unknown type \"Missing\""));
        assert!(
            err(json!({"a": "integer | default=abc"}), Value::Null)
                .contains("\"abc\" is not an integer")
        );
        assert!(
            err(json!({"a": "map[int]string"}), Value::Null).contains("a map's key must be string")
        );
        assert!(
            err(json!({"a": "string | pattern=\"(\""}), Value::Null)
                .contains("not a regular expression")
        );
        assert!(
            err(json!({"a": "A"}), json!({"A": {"b": "B"}, "B": {"a": "A"}}))
                .contains("cyclic dependency between the types A, B")
        );
        assert!(
            err(json!({"a": "string | minItems=1"}), Value::Null)
                .contains("only applies to array fields")
        );
    }
}
