//! `${…}` CEL checks, which `dynrec test` expectations add to chainsaw's assertion trees
//! ([`super::matches_with_cel`]):
//!
//! - a value `${ >= 1 }` (an expression starting with a comparison operator, `in` or a
//!   `.method()`) is a check on the actual value: it reads as `value >= 1`;
//! - any other `${expr}` value is the expected value, computed by the expression;
//! - a root key `check:` holding `${expr}` (or a list of them) is a condition on the whole
//!   object, which must be `true`.
//!
//! Every expression reads `value` (the field's actual value) and `object` (the whole actual
//! object), with the CEL of definitions (standard library, strings extension, `now`).

use std::sync::Arc;

use jiff::Timestamp;
use serde_json::Value;

use super::mismatch::Problem;
use crate::definitions::{Bindings, Expression};

/// Operators that make a `${…}` a check on the field's value (longest first).
const OPERATORS: [&str; 7] = ["==", "!=", ">=", "<=", ">", "<", "in "];

/// The expression inside `text` when it is exactly one `${expr}`.
pub(super) fn expression(text: &str) -> Option<&str> {
    let inner = text.trim().strip_prefix("${")?.strip_suffix('}')?;
    (!inner.contains("${")).then_some(inner)
}

/// Whether `expression` (from [`expression`]) is a check on the value: it starts with an
/// operator or a method call, so `value` is its left side.
fn on_value(expression: &str) -> bool {
    let start = expression.trim_start();
    start.starts_with('.') || OPERATORS.iter().any(|op| start.starts_with(op))
}

/// Checks the field value `actual` against `${expr}` (written `text`); what is wrong, if
/// anything. `object` is the whole actual object. `values_match` compares an expected value
/// with the actual one (as the tree's literals are compared).
pub(super) fn check_value(
    text: &str,
    expression: &str,
    actual: &Value,
    object: &Value,
    values_match: impl Fn(&Value, &Value) -> Option<bool>,
) -> Option<Problem> {
    if on_value(expression) {
        let source = match expression.trim_start() {
            method if method.starts_with('.') => format!("value{method}"),
            operator => format!("value {operator}"),
        };
        return condition(text, &source, actual, object).map(|problem| match problem {
            Problem::Check { expression, .. } => Problem::Check {
                expression,
                got: Some(actual.clone()),
            },
            other => other,
        });
    }
    match evaluate(expression, actual, object) {
        Err(error) => Some(failed(text, error)),
        Ok(want) => match values_match(&want, actual) {
            Some(true) => None,
            _ => Some(Problem::Value {
                want,
                got: actual.clone(),
            }),
        },
    }
}

/// Checks the condition `${expr}` (written `text`) over the whole `object`.
pub(super) fn check_object(text: &str, expression: &str, object: &Value) -> Option<Problem> {
    condition(text, expression, object, object)
}

/// Evaluates `source`, which must be `true`.
fn condition(text: &str, source: &str, actual: &Value, object: &Value) -> Option<Problem> {
    match evaluate(source, actual, object) {
        Ok(Value::Bool(true)) => None,
        Ok(Value::Bool(false)) => Some(Problem::Check {
            expression: text.trim().to_owned(),
            got: None,
        }),
        Ok(other) => Some(Problem::Expression {
            expression: text.trim().to_owned(),
            error: format!(
                "the result is {}, not a bool: {}",
                super::mismatch::kind(&other),
                super::show(&other)
            ),
        }),
        Err(error) => Some(failed(text, error)),
    }
}

/// An expression (written `text`) that does not compile or fails.
fn failed(text: &str, error: String) -> Problem {
    Problem::Expression {
        expression: text.trim().to_owned(),
        error,
    }
}

/// The value of `source` with `value` and `object` bound, or why there is none.
fn evaluate(source: &str, actual: &Value, object: &Value) -> Result<Value, String> {
    let compiled = Expression::compile(source, "").map_err(|e| e.message)?;
    let bindings = Bindings::from([
        ("value".to_owned(), Arc::new(actual.clone())),
        ("object".to_owned(), Arc::new(object.clone())),
    ]);
    compiled
        .evaluate(&bindings, Timestamp::now())
        .map_err(|e| e.message)
}
