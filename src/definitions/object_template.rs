//! A child's template compiled into a builder of its object: the parts without `${}` are
//! built once at load and cloned, each distinct expression is evaluated at most once a
//! build (in the order the template first uses it, so the first error is the one a walk
//! of the template meets), and the object is assembled directly — its type from the
//! template's literal `apiVersion` and `kind`, its metadata moved into place, its other
//! fields as its body — instead of as one JSON tree read back into an object.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DynamicObject, TypeMeta};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::expr::{Bindings, EvalError, Expression, Segment, Template, Text, write_text};

/// A child template compiled into a builder (see the module doc).
#[derive(Clone, Debug)]
pub struct ObjectTemplate {
    root: Node,
    /// The template's type, when its `apiVersion` and `kind` are literal strings.
    types: Option<TypeMeta>,
    /// The distinct expressions, by first use.
    holes: Vec<Expression>,
}

/// Why a template did not build an object.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// An expression failed, or its value does not fit where it is written.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The values do not make an object (a name that is not a string, ...).
    #[error("does not make an object: {0}")]
    Object(#[from] serde_json::Error),
}

/// A part of the template.
#[derive(Clone, Debug)]
enum Node {
    /// No expression in it: built once.
    Constant(Value),
    /// Exactly one `${}`: the value of the hole.
    Whole(usize),
    /// Text and holes, joined as a string.
    Interpolated(Vec<Part>),
    List(Vec<Node>),
    Map(Vec<(String, Node)>),
}

/// A part of an interpolated string.
#[derive(Clone, Debug)]
enum Part {
    Literal(String),
    Hole(usize),
}

impl ObjectTemplate {
    /// Compiles `template` (already checked) into a builder.
    pub fn new(template: &Template) -> Self {
        let mut holes = Vec::new();
        // The top level stays a map even when constant: the object is assembled from it.
        let root = match template {
            Template::Map(fields) => Node::Map(
                fields
                    .iter()
                    .map(|(key, t)| (key.clone(), Node::of(t, &mut holes)))
                    .collect(),
            ),
            other => Node::of(other, &mut holes),
        };
        let literal = |name: &str| match &root {
            Node::Map(fields) => fields.iter().find_map(|(key, node)| match node {
                Node::Constant(Value::String(text)) if key == name => Some(text.clone()),
                _ => None,
            }),
            _ => None,
        };
        let types = match (literal("apiVersion"), literal("kind")) {
            (Some(api_version), Some(kind)) => Some(TypeMeta { api_version, kind }),
            _ => None,
        };
        Self { root, types, holes }
    }

    /// The object over `bindings` and `now`.
    pub fn build(&self, bindings: &Bindings, now: Timestamp) -> Result<DynamicObject, BuildError> {
        let mut holes = Holes {
            expressions: &self.holes,
            values: vec![None; self.holes.len()],
            bindings,
            now,
        };
        let (Some(types), Node::Map(fields)) = (&self.types, &self.root) else {
            let value = self.root.evaluate(&mut holes)?;
            return Ok(crate::object::from_json(value)?);
        };
        let mut metadata = ObjectMeta::default();
        let mut body = Map::with_capacity(fields.len());
        for (key, node) in fields {
            match key.as_str() {
                "apiVersion" | "kind" => {}
                "metadata" => metadata = object_meta(node.evaluate(&mut holes)?)?,
                _ => drop(body.insert(key.clone(), node.evaluate(&mut holes)?)),
            }
        }
        Ok(DynamicObject {
            types: Some(types.clone()),
            metadata,
            data: Value::Object(body),
        })
    }
}

impl Node {
    /// The node of `template`, its expressions added to `holes` (once each, by source).
    fn of(template: &Template, holes: &mut Vec<Expression>) -> Self {
        let mut hole = |expression: &Expression| {
            let known = holes.iter().position(|e| e.source() == expression.source());
            known.unwrap_or_else(|| {
                holes.push(expression.clone());
                holes.len() - 1
            })
        };
        let node = match template {
            Template::Plain(value) => return Node::Constant(value.clone()),
            Template::Text(Text::Literal(text)) => return Node::Constant(text.clone().into()),
            Template::Text(Text::Whole(expression)) => Node::Whole(hole(expression)),
            Template::Text(Text::Interpolated(segments)) => Node::Interpolated(
                segments
                    .iter()
                    .map(|segment| match segment {
                        Segment::Literal(text) => Part::Literal(text.clone()),
                        Segment::Expr(expression) => Part::Hole(hole(expression)),
                    })
                    .collect(),
            ),
            Template::List(items) => Node::List(items.iter().map(|t| Node::of(t, holes)).collect()),
            Template::Map(fields) => Node::Map(
                fields
                    .iter()
                    .map(|(key, t)| (key.clone(), Node::of(t, holes)))
                    .collect(),
            ),
        };
        node.folded()
    }

    /// A list or map whose items are all constant, as one constant.
    fn folded(self) -> Self {
        let constant = |node: &Node| match node {
            Node::Constant(value) => Some(value.clone()),
            _ => None,
        };
        match &self {
            Node::List(items) => match items.iter().map(constant).collect::<Option<Vec<_>>>() {
                Some(items) => Node::Constant(Value::Array(items)),
                None => self,
            },
            Node::Map(fields) => {
                let values = fields
                    .iter()
                    .map(|(key, node)| Some((key.clone(), constant(node)?)))
                    .collect::<Option<Map<_, _>>>();
                match values {
                    Some(map) => Node::Constant(Value::Object(map)),
                    None => self,
                }
            }
            _ => self,
        }
    }

    /// The value over the holes' bindings.
    fn evaluate(&self, holes: &mut Holes<'_>) -> Result<Value, EvalError> {
        Ok(match self {
            Node::Constant(value) => value.clone(),
            Node::Whole(hole) => holes.value(*hole)?.clone(),
            Node::Interpolated(parts) => {
                let expressions = holes.expressions;
                let mut out = String::new();
                for part in parts {
                    match part {
                        Part::Literal(text) => out.push_str(text),
                        Part::Hole(hole) => {
                            write_text(&mut out, holes.value(*hole)?, &expressions[*hole])?;
                        }
                    }
                }
                Value::String(out)
            }
            Node::List(items) => Value::Array(
                items
                    .iter()
                    .map(|item| item.evaluate(holes))
                    .collect::<Result<_, _>>()?,
            ),
            Node::Map(fields) => {
                let mut map = Map::with_capacity(fields.len());
                for (key, node) in fields {
                    map.insert(key.clone(), node.evaluate(holes)?);
                }
                Value::Object(map)
            }
        })
    }
}

/// The values of a build's expressions, each evaluated when first needed.
struct Holes<'a> {
    expressions: &'a [Expression],
    values: Vec<Option<Value>>,
    bindings: &'a Bindings,
    now: Timestamp,
}

impl Holes<'_> {
    fn value(&mut self, hole: usize) -> Result<&Value, EvalError> {
        let value = match self.values[hole].take() {
            Some(value) => value,
            None => self.expressions[hole].evaluate(self.bindings, self.now)?,
        };
        Ok(self.values[hole].insert(value))
    }
}

/// The metadata written by a template: its usual fields (names and string maps) moved into
/// place, anything else read by serde (so its errors are serde's).
fn object_meta(value: Value) -> Result<ObjectMeta, serde_json::Error> {
    let Value::Object(mut fields) = value else {
        return ObjectMeta::deserialize(value);
    };
    let usual = fields.iter().all(|(key, value)| match key.as_str() {
        "name" | "generateName" | "namespace" => value.is_string(),
        "labels" | "annotations" => value
            .as_object()
            .is_some_and(|map| map.values().all(Value::is_string)),
        _ => false,
    });
    if !usual {
        return ObjectMeta::deserialize(Value::Object(fields));
    }
    let mut text = |key: &str| match fields.remove(key) {
        Some(Value::String(text)) => Some(text),
        _ => None,
    };
    let (name, generate_name, namespace) = (text("name"), text("generateName"), text("namespace"));
    let mut strings = |key: &str| match fields.remove(key) {
        Some(Value::Object(map)) => Some(
            map.into_iter()
                .filter_map(|(k, v)| match v {
                    Value::String(v) => Some((k, v)),
                    _ => None,
                })
                .collect::<BTreeMap<_, _>>(),
        ),
        _ => None,
    };
    Ok(ObjectMeta {
        name,
        generate_name,
        namespace,
        labels: strings("labels"),
        annotations: strings("annotations"),
        ..ObjectMeta::default()
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    fn parent() -> Bindings {
        let parent = json!({"metadata": {"name": "w1", "labels": {"team": "a"}},
            "spec": {"size": 3, "ratio": 0.5, "on": true, "tags": ["x", "y"],
                "env": {"B": "2", "A": "1"}, "none": null}});
        Bindings::from([("self".to_owned(), Arc::new(parent))])
    }

    /// What the template made before it was compiled into a builder: its value read as an
    /// object.
    fn by_value(template: &Template, bindings: &Bindings) -> Result<DynamicObject, String> {
        let value = template
            .evaluate(bindings, now())
            .map_err(|e| e.to_string())?;
        crate::object::from_json(value).map_err(|e| format!("does not make an object: {e}"))
    }

    fn build(
        template: &Value,
        bindings: &Bindings,
    ) -> (Result<DynamicObject, String>, Result<DynamicObject, String>) {
        let template = Template::compile(template, "spec.steps[0].child.template").unwrap();
        let built = ObjectTemplate::new(&template)
            .build(bindings, now())
            .map_err(|e| e.to_string());
        (built, by_value(&template, bindings))
    }

    #[test]
    fn builds_what_the_template_evaluates_to() {
        for template in [
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "${self.metadata.name}-config", "namespace": "ns",
                    "labels": {"app": "${self.metadata.name}", "fixed": "yes"},
                    "annotations": {"size": "${string(self.spec.size)}"}},
                "data": {"size": "${self.spec.size}", "ratio": "${self.spec.ratio}",
                    "on": "${self.spec.on} and ${self.spec.size}", "tags": "${self.spec.tags}",
                    "env": "${self.spec.env}", "none": "${self.spec.none}",
                    "text": "a${self.spec.none}b", "constant": {"list": [1, "two", {"three": 3}]},
                    "mixed": [{"name": "${self.metadata.name}"}, "${self.spec.size + 1}", 7]}}),
            // Metadata beyond names and string maps is read by serde.
            json!({"apiVersion": "example.com/v1", "kind": "Thing",
                "metadata": {"name": "t", "ownerReferences": [{"apiVersion": "v1", "kind": "A",
                    "name": "${self.metadata.name}", "uid": "u"}], "labels": "${self.metadata.labels}"},
                "spec": {}}),
            // Without literal types, the whole value is read as an object.
            json!({"apiVersion": "${'v' + '1'}", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            json!({"metadata": {"name": "c"}, "data": {"a": "${self.spec.size}"}}),
        ] {
            let (built, expected) = build(&template, &parent());
            assert_eq!(built, expected, "{template}");
            assert!(built.is_ok(), "{built:?}");
        }
    }

    #[test]
    fn errors_are_those_of_the_template() {
        for (template, expected) in [
            // The first error in the template's order, with the path and the expression.
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                    "data": {"a": "x${self.spec.tags}", "b": "${self.spec.missing}"}}),
                "spec.steps[0].child.template.data.a: ${self.spec.tags}: a list cannot be written into a string",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                    "data": {"b": "${self.spec.missing}", "a": "x${self.spec.tags}"}}),
                "spec.steps[0].child.template.data.b: ${self.spec.missing}: no such key: missing",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "${self.spec.size}"}}),
                "does not make an object: invalid type: integer `3`, expected a string",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "c", "labels": {"size": "${self.spec.size}"}}}),
                "does not make an object: invalid type: integer `3`, expected a string",
            ),
        ] {
            let (built, by_value) = build(&template, &parent());
            assert_eq!(built.as_ref().unwrap_err(), expected, "{template}");
            assert_eq!(built, by_value, "{template}");
        }
    }
}
