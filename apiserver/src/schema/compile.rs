//! Turning an `openAPIV3Schema` JSON value into [`Node`]s.

use regex::Regex;
use serde_json::{Map, Value};

use super::node::Node;
use super::rules::{self, RuleError};
use super::{SchemaError, format, prune};

/// How deep sub-schemas may nest.
const MAX_DEPTH: usize = 100;

/// Compiles the root schema; rules that do not compile are appended to `rule_errors`.
pub(super) fn compile(
    schema: &Value,
    rule_errors: &mut Vec<RuleError>,
) -> Result<Node, SchemaError> {
    compile_node(schema, "openAPIV3Schema", 0, rule_errors)
}

fn compile_node(
    schema: &Value,
    path: &str,
    depth: usize,
    rule_errors: &mut Vec<RuleError>,
) -> Result<Node, SchemaError> {
    if depth > MAX_DEPTH {
        return Err(SchemaError::TooDeep {
            path: path.into(),
            limit: MAX_DEPTH,
        });
    }
    let Value::Object(map) = schema else {
        return Err(SchemaError::NotAnObject { path: path.into() });
    };
    let keys = Keys { map, path };
    let mut node = Node {
        nullable: keys.flag("nullable")?,
        preserve_unknown: keys.flag("x-kubernetes-preserve-unknown-fields")?,
        embedded: keys.flag("x-kubernetes-embedded-resource")?,
        required: keys.strings("required")?,
        enumeration: keys.array("enum")?.cloned().unwrap_or_default(),
        min_length: keys.count("minLength")?,
        max_length: keys.count("maxLength")?,
        min_items: keys.count("minItems")?,
        max_items: keys.count("maxItems")?,
        min_properties: keys.count("minProperties")?,
        max_properties: keys.count("maxProperties")?,
        minimum: bound(&keys, "minimum", "exclusiveMinimum")?,
        maximum: bound(&keys, "maximum", "exclusiveMaximum")?,
        multiple_of: keys.positive("multipleOf")?,
        format: keys.string("format")?.filter(|f| format::is_checked(f)),
        default: map.get("default").filter(|d| !d.is_null()).cloned(),
        ..Node::default()
    };
    node.types = types(&keys)?;
    node.pattern = pattern(&keys)?;
    if let Some(rules) = map.get("x-kubernetes-validations") {
        node.rules = rules::compile(rules, path, rule_errors);
    }
    node.list_type = keys.string("x-kubernetes-list-type")?;
    node.list_map_keys = keys.strings("x-kubernetes-list-map-keys")?;
    let next = depth + 1;
    if let Some(props) = map.get("properties") {
        let Value::Object(props) = props else {
            return Err(keys.bad("properties", "an object of schemas"));
        };
        for (name, sub) in props {
            let sub_path = format!("{path}.properties[{name}]");
            let child = compile_node(sub, &sub_path, next, rule_errors)?;
            node.properties.insert(name.clone(), child);
        }
    }
    node.additional = match map.get("additionalProperties") {
        None | Some(Value::Bool(false)) => None,
        Some(Value::Bool(true)) => Some(Box::default()),
        Some(sub) => {
            let sub_path = format!("{path}.additionalProperties");
            Some(Box::new(compile_node(sub, &sub_path, next, rule_errors)?))
        }
    };
    if let Some(items) = map.get("items") {
        if !items.is_object() {
            return Err(keys.bad("items", "a schema"));
        }
        let sub_path = format!("{path}.items");
        node.items = Some(Box::new(compile_node(items, &sub_path, next, rule_errors)?));
    }
    node.all_of = junctor(&keys, "allOf", next, rule_errors)?;
    node.any_of = junctor(&keys, "anyOf", next, rule_errors)?;
    node.one_of = junctor(&keys, "oneOf", next, rule_errors)?;
    if let Some(not) = map.get("not") {
        let sub_path = format!("{path}.not");
        node.not = Some(Box::new(compile_node(not, &sub_path, next, rule_errors)?));
    }
    node.has_rules = !node.rules.is_empty()
        || node.properties.values().any(|n| n.has_rules)
        || node.additional.as_ref().is_some_and(|n| n.has_rules)
        || node.items.as_ref().is_some_and(|n| n.has_rules)
        || node.all_of.iter().any(|n| n.has_rules);
    if let Some(mut default) = node.default.take() {
        prune::prune_default(&mut default, &node);
        node.default = Some(default);
    }
    Ok(node)
}

/// `type`, with `x-kubernetes-int-or-string` meaning `integer,string` as in kube-apiserver.
fn types(keys: &Keys) -> Result<Vec<&'static str>, SchemaError> {
    if keys.flag("x-kubernetes-int-or-string")? {
        return Ok(vec!["integer", "string"]);
    }
    let Some(name) = keys.string("type")? else {
        return Ok(Vec::new());
    };
    let known = ["object", "array", "string", "integer", "number", "boolean"];
    match known.into_iter().find(|k| *k == name) {
        Some(t) => Ok(vec![t]),
        None => Err(keys.bad(
            "type",
            "one of \"object\", \"array\", \"string\", \"integer\", \"number\", \"boolean\"",
        )),
    }
}

fn pattern(keys: &Keys) -> Result<Option<(String, Regex)>, SchemaError> {
    let Some(text) = keys.string("pattern")? else {
        return Ok(None);
    };
    match Regex::new(&text) {
        Ok(re) => Ok(Some((text, re))),
        Err(err) => Err(SchemaError::BadPattern {
            path: format!("{}.pattern", keys.path),
            source: Box::new(err),
        }),
    }
}

fn bound(keys: &Keys, limit: &str, exclusive: &str) -> Result<Option<(f64, bool)>, SchemaError> {
    let Some(value) = keys.get(limit) else {
        return Ok(None);
    };
    let Some(number) = value.as_f64() else {
        return Err(keys.bad(limit, "a number"));
    };
    Ok(Some((number, keys.flag(exclusive)?)))
}

fn junctor(
    keys: &Keys,
    name: &str,
    depth: usize,
    rule_errors: &mut Vec<RuleError>,
) -> Result<Vec<Node>, SchemaError> {
    let Some(list) = keys.array(name)? else {
        return Ok(Vec::new());
    };
    let mut nodes = Vec::with_capacity(list.len());
    for (i, sub) in list.iter().enumerate() {
        let sub_path = format!("{}.{name}[{i}]", keys.path);
        nodes.push(compile_node(sub, &sub_path, depth, rule_errors)?);
    }
    Ok(nodes)
}

/// Typed access to one schema object's keywords, with errors naming the keyword.
struct Keys<'a> {
    map: &'a Map<String, Value>,
    path: &'a str,
}

impl<'a> Keys<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    fn bad(&self, key: &str, expected: &'static str) -> SchemaError {
        SchemaError::BadKeyword {
            path: format!("{}.{key}", self.path),
            expected,
        }
    }

    fn flag(&self, key: &str) -> Result<bool, SchemaError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.bad(key, "a boolean")),
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>, SchemaError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(key, "a string")),
        }
    }

    fn array(&self, key: &str) -> Result<Option<&'a Vec<Value>>, SchemaError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(list)) => Ok(Some(list)),
            Some(_) => Err(self.bad(key, "an array")),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, SchemaError> {
        let list = self.array(key)?.map(Vec::as_slice).unwrap_or_default();
        list.iter()
            .map(|v| v.as_str().map(String::from))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.bad(key, "an array of strings"))
    }

    /// A non-negative integer within int64 (an integral float such as `5.0` is accepted too).
    fn count(&self, key: &str) -> Result<Option<u64>, SchemaError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let count = value.as_u64().or_else(|| {
            let f = value.as_f64()?;
            (f >= 0.0 && f.fract() == 0.0 && f < 9.2e18).then_some(f as u64)
        });
        match count {
            Some(n) if i64::try_from(n).is_ok() => Ok(Some(n)),
            _ => Err(self.bad(key, "a non-negative integer")),
        }
    }

    fn positive(&self, key: &str) -> Result<Option<f64>, SchemaError> {
        match self.get(key).map(Value::as_f64) {
            None => Ok(None),
            Some(Some(f)) if f > 0.0 => Ok(Some(f)),
            Some(_) => Err(self.bad(key, "a number greater than 0")),
        }
    }
}
