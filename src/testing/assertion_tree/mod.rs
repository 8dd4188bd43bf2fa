//! Chainsaw's assertion trees (kyverno-json's): an expected YAML tree matched against an
//! actual object, where
//!
//! - a map matches a subset: only the keys written are compared (`{}` asks for a value that
//!   is not null);
//! - a list matches a list of the same length, item by item (each item again a subset);
//! - scalars compare equal, numbers by value (`1` matches `1.0`); values of kinds that
//!   cannot be compared (`"True"` against `true`) are a mismatch waiting cannot fix;
//! - a key or string value in parentheses is a JMESPath expression (`(jp;...)` names the
//!   engine): a key's is evaluated on the actual map and its result matched against the
//!   subtree (`(conditions[?type == 'Ready']): [{status: 'True'}]`), a value's is evaluated
//!   on the actual value and its result compared (`name: ($namespace)`);
//! - `~.(items)` or `~name.(items)` checks the subtree once per item (binding `$name` to the
//!   index or map key), `(expr) -> name` binds the result to `$name` for the rest of the
//!   tree, `\(text)\` is the literal `(text)`;
//! - `$bindings` ([`Bindings`]) are read in expressions, and chainsaw's and kyverno's string
//!   and base64 functions (`to_upper`, `split`, `base64_decode`...) come with JMESPath's.
//!
//! ```
//! use dynrec::testing::assertion_tree::{Bindings, matches};
//! use serde_json::json;
//!
//! let expected = json!({"status": {"(conditions[?type == 'Ready'])": [{"status": "True"}]}});
//! let actual = json!({"status": {"conditions": [
//!     {"type": "Synced", "status": "True"},
//!     {"type": "Ready", "status": "False"},
//! ]}});
//! let mismatches = matches(&expected, &actual, &Bindings::new()).unwrap_err();
//! assert_eq!(
//!     mismatches.to_string(),
//!     "status.(conditions[?type == 'Ready'])[0].status: want \"True\", got \"False\""
//! );
//! ```

mod cel_check;
mod jmespath;
mod mismatch;
mod syntax;

use std::sync::Arc;

use serde_json::Value;

pub use mismatch::{Mismatch, Mismatches, Problem, show};
use syntax::Syntax;

/// Named values expressions read as `$name` (chainsaw's `$namespace`, `$values`...).
/// Adding one returns new bindings; a later binding hides an earlier one of the same name.
#[derive(Clone, Debug, Default)]
pub struct Bindings(Option<Arc<Binding>>);

#[derive(Debug)]
struct Binding {
    name: String,
    value: Value,
    outer: Option<Arc<Binding>>,
}

impl Bindings {
    /// No bindings.
    pub fn new() -> Self {
        Self::default()
    }

    /// These bindings and `$name` bound to `value`.
    pub fn with(&self, name: impl Into<String>, value: Value) -> Self {
        Self(Some(Arc::new(Binding {
            name: name.into(),
            value,
            outer: self.0.clone(),
        })))
    }

    /// The value of `$name` (`name` without the `$`).
    pub fn get(&self, name: &str) -> Option<&Value> {
        let mut next = self.0.as_deref();
        while let Some(binding) = next {
            if binding.name == name {
                return Some(&binding.value);
            }
            next = binding.outer.as_deref();
        }
        None
    }

    /// The names bound, sorted, each once.
    pub fn names(&self) -> Vec<&str> {
        let mut names = Vec::new();
        let mut next = self.0.as_deref();
        while let Some(binding) = next {
            names.push(binding.name.as_str());
            next = binding.outer.as_deref();
        }
        names.sort_unstable();
        names.dedup();
        names
    }
}

/// Matches `actual` against the assertion tree `expected`; every mismatch, in the tree's
/// order, when it does not match.
pub fn matches(expected: &Value, actual: &Value, bindings: &Bindings) -> Result<(), Mismatches> {
    let mut matcher = Matcher::default();
    matcher.node(expected, actual, "", bindings);
    match matcher.found.is_empty() {
        true => Ok(()),
        false => Err(Mismatches(matcher.found)),
    }
}

/// As [`matches()`], with `dynrec test`'s `${…}` CEL checks as well: a value `${ >= 1 }`
/// checks the field's value, another `${expr}` value computes the expected value, and a
/// root key `check: ${expr}` (or a list of them) is a condition on the whole object; each
/// reads `value` (the field) and `object` (all of `actual`).
pub fn matches_with_cel(
    expected: &Value,
    actual: &Value,
    bindings: &Bindings,
) -> Result<(), Mismatches> {
    let mut matcher = Matcher {
        object: Some(actual.clone()),
        ..Matcher::default()
    };
    matcher.node(expected, actual, "", bindings);
    match matcher.found.is_empty() {
        true => Ok(()),
        false => Err(Mismatches(matcher.found)),
    }
}

/// `value` with each string value that is an expression (`($namespace)`) replaced by its
/// result, as chainsaw templates the resources it applies (an expression reads the field's
/// own value as `@`); keys are kept as written.
pub fn template(value: &Value, bindings: &Bindings) -> Result<Value, Mismatches> {
    template_at(value, "", bindings)
}

fn template_at(value: &Value, path: &str, bindings: &Bindings) -> Result<Value, Mismatches> {
    Ok(match value {
        Value::Object(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (key, item) in map {
                out.insert(key.clone(), template_at(item, &child(path, key), bindings)?);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| template_at(item, &format!("{path}[{i}]"), bindings))
                .collect::<Result<_, _>>()?,
        ),
        Value::String(text) => {
            let syntax = Syntax::parse(text);
            match syntax.engine {
                Some(engine) => {
                    evaluate(engine, syntax.statement, value, bindings).map_err(|error| {
                        Mismatches(vec![Mismatch {
                            path: path.to_owned(),
                            problem: Problem::Expression {
                                expression: syntax.statement.to_owned(),
                                error,
                            },
                        }])
                    })?
                }
                None => value.clone(),
            }
        }
        _ => value.clone(),
    })
}

/// Evaluates an expression of `engine` (`default` and `jp` are JMESPath).
fn evaluate(
    engine: &str,
    statement: &str,
    input: &Value,
    bindings: &Bindings,
) -> Result<Value, String> {
    match engine {
        "default" | "jp" => jmespath::evaluate(statement, input, bindings),
        "cel" => Err("CEL is not supported in assertion trees; write the expression in JMESPath (the default engine)".to_owned()),
        other => Err(format!("unknown expression engine {other:?} (known: jp, cel)")),
    }
}

/// The path of a map's field.
fn child(path: &str, key: &str) -> String {
    match path {
        "" => key.to_owned(),
        _ => format!("{path}.{key}"),
    }
}

/// Walks a tree, collecting mismatches.
#[derive(Default)]
struct Matcher {
    found: Vec<Mismatch>,
    /// The whole actual object, when `${…}` CEL checks are on.
    object: Option<Value>,
}

impl Matcher {
    fn push(&mut self, path: &str, problem: Problem) {
        self.found.push(Mismatch {
            path: path.to_owned(),
            problem,
        });
    }

    fn node(&mut self, expected: &Value, actual: &Value, path: &str, bindings: &Bindings) {
        match expected {
            Value::Object(map) => self.map(map, actual, path, bindings),
            Value::Array(items) => self.list(items, actual, path, bindings),
            _ => self.scalar(expected, actual, path, bindings),
        }
    }

    fn map(
        &mut self,
        map: &serde_json::Map<String, Value>,
        actual: &Value,
        path: &str,
        bindings: &Bindings,
    ) {
        if map.is_empty() {
            if actual.is_null() {
                self.push(path, Problem::Null);
            }
            return;
        }
        let mut bindings = bindings.clone();
        for (key, subtree) in map {
            let at = child(path, key);
            if path.is_empty() && key == "check" && self.object_checks(subtree, &at) {
                continue;
            }
            let syntax = Syntax::parse(key);
            let projected = match syntax.engine {
                Some(engine) => match evaluate(engine, syntax.statement, actual, &bindings) {
                    Ok(projected) => projected,
                    Err(error) => {
                        let expression = syntax.statement.to_owned();
                        self.push(&at, Problem::Expression { expression, error });
                        continue;
                    }
                },
                None => match actual {
                    Value::Object(fields) => match fields.get(syntax.statement) {
                        Some(field) => field.clone(),
                        None => {
                            self.push(&at, missing(subtree));
                            continue;
                        }
                    },
                    Value::Null => {
                        self.push(&at, missing(subtree));
                        continue;
                    }
                    other => {
                        let problem = Problem::Type {
                            want: "a map".to_owned(),
                            got: other.clone(),
                        };
                        return self.push(path, problem);
                    }
                },
            };
            if let Some(name) = syntax.binding {
                bindings = bindings.with(name, projected.clone());
            }
            match syntax.foreach {
                Some(name) => self.each(name, subtree, &projected, &at, &bindings),
                None => self.node(subtree, &projected, &at, &bindings),
            }
        }
    }

    /// `~name.(...)`: the subtree against each item or map entry.
    fn each(
        &mut self,
        name: &str,
        subtree: &Value,
        projected: &Value,
        path: &str,
        bindings: &Bindings,
    ) {
        let bound = |key: Value| match name {
            "" => bindings.clone(),
            name => bindings.with(name, key),
        };
        match projected {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let at = format!("{path}[{i}]");
                    self.node(subtree, item, &at, &bound(Value::from(i)));
                }
            }
            Value::Object(entries) => {
                for (key, item) in entries {
                    let at = format!("{path}[{key}]");
                    self.node(subtree, item, &at, &bound(Value::from(key.as_str())));
                }
            }
            other => {
                let problem = Problem::Type {
                    want: "a list or a map".to_owned(),
                    got: other.clone(),
                };
                self.push(path, problem);
            }
        }
    }

    fn list(&mut self, items: &[Value], actual: &Value, path: &str, bindings: &Bindings) {
        match actual {
            Value::Null => self.push(path, Problem::Null),
            Value::Array(found) if found.len() != items.len() => {
                let problem = Problem::Length {
                    want: items.len(),
                    got: actual.clone(),
                };
                self.push(path, problem);
            }
            Value::Array(found) => {
                for (i, (item, got)) in items.iter().zip(found).enumerate() {
                    self.node(item, got, &format!("{path}[{i}]"), bindings);
                }
            }
            other => {
                let problem = Problem::Type {
                    want: "a list".to_owned(),
                    got: other.clone(),
                };
                self.push(path, problem);
            }
        }
    }

    /// A root `check:` of `${…}` conditions on the whole object, checked; false when
    /// `subtree` is not one (then `check` is a field like any other).
    fn object_checks(&mut self, subtree: &Value, path: &str) -> bool {
        let Some(object) = self.object.clone() else {
            return false;
        };
        let texts: Vec<(String, &str)> = match subtree {
            Value::String(text) => vec![(path.to_owned(), text.as_str())],
            Value::Array(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| Some((format!("{path}[{i}]"), item.as_str()?)))
                .collect(),
            _ => Vec::new(),
        };
        let checks: Vec<(String, &str, &str)> = texts
            .into_iter()
            .filter_map(|(at, text)| Some((at, text, cel_check::expression(text)?)))
            .collect();
        if checks.is_empty() || checks.len() != subtree.as_array().map_or(1, Vec::len) {
            return false;
        }
        for (at, text, expression) in checks {
            if let Some(problem) = cel_check::check_object(text, expression, &object) {
                self.push(&at, problem);
            }
        }
        true
    }

    fn scalar(&mut self, expected: &Value, actual: &Value, path: &str, bindings: &Bindings) {
        if let (Some(object), Value::String(text)) = (&self.object, expected)
            && let Some(expression) = cel_check::expression(text)
        {
            if let Some(problem) =
                cel_check::check_value(text, expression, actual, object, values_match)
            {
                self.push(path, problem);
            }
            return;
        }
        let want = match expected {
            Value::String(text) => {
                let syntax = Syntax::parse(text);
                let unsupported = match (syntax.foreach, syntax.binding) {
                    (Some(_), _) => Some("`~` (foreach) is only allowed in keys"),
                    (_, Some(_)) => Some("`->` (binding) is only allowed in keys"),
                    _ => None,
                };
                if let Some(error) = unsupported {
                    let problem = Problem::Expression {
                        expression: text.clone(),
                        error: error.to_owned(),
                    };
                    return self.push(path, problem);
                }
                match syntax.engine {
                    Some(engine) => match evaluate(engine, syntax.statement, actual, bindings) {
                        Ok(want) => want,
                        Err(error) => {
                            let expression = syntax.statement.to_owned();
                            return self.push(path, Problem::Expression { expression, error });
                        }
                    },
                    None => Value::String(syntax.statement.to_owned()),
                }
            }
            other => other.clone(),
        };
        match values_match(&want, actual) {
            Some(true) => {}
            Some(false) => self.push(
                path,
                Problem::Value {
                    want,
                    got: actual.clone(),
                },
            ),
            None => {
                let want = format!("{} ({})", show(&want), mismatch::kind(&want));
                self.push(
                    path,
                    Problem::Type {
                        want,
                        got: actual.clone(),
                    },
                );
            }
        }
    }
}

/// A missing field: what the subtree expected there.
fn missing(subtree: &Value) -> Problem {
    Problem::Missing {
        want: subtree.clone(),
    }
}

/// Whether an expression's (or literal's) value matches: lists item by item with the same
/// length, maps as subsets, scalars equal; `None` when the kinds cannot be compared.
fn values_match(want: &Value, got: &Value) -> Option<bool> {
    match (want, got) {
        (Value::Array(want), Value::Array(got)) => {
            if want.len() != got.len() {
                return Some(false);
            }
            for (want, got) in want.iter().zip(got) {
                if !values_match(want, got)? {
                    return Some(false);
                }
            }
            Some(true)
        }
        (Value::Object(want), Value::Object(got)) => {
            for (key, want) in want {
                match got.get(key) {
                    Some(got) if values_match(want, got)? => {}
                    _ => return Some(false),
                }
            }
            Some(true)
        }
        (Value::Array(_) | Value::Object(_), _) => None,
        (Value::Null, Value::Null) => Some(true),
        (Value::Null, _) | (_, Value::Null) => Some(false),
        (Value::Number(want), Value::Number(got)) => {
            Some(want == got || want.as_f64() == got.as_f64())
        }
        (Value::String(want), Value::String(got)) => Some(want == got),
        (Value::Bool(want), Value::Bool(got)) => Some(want == got),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
