//! Evaluating `x-kubernetes-validations` on a write, as apiextensions-apiserver does: each
//! rule runs where its value exists (`self`), transition rules only where a correlated old
//! value exists (`oldSelf`: same property, same map key, same list-map keys) unless
//! `optionalOldSelf`, and an error on a value that did not change is a warning (ratcheting).
//!
//! Cost: before a rule runs, its cost is bounded by `expression nodes × (n + 1)^depth`,
//! `n` the longest list, map (or, for rules that split strings, string) in `self`/`oldSelf`
//! and `depth` how deeply its comprehensions nest. A rule above [`PER_CALL_LIMIT`] is not
//! run, and all rules of one write share [`BUDGET`], as kube's limits of the same names.

use serde_json::Value;

use super::cel_value::typed_val;
use super::node::Node;
use super::render::{field_of, go_quote};
use super::rules::{Reason, Rule};
use crate::error::Cause;
use crate::k8s_cel::{self, Compiled};
use cel::common::types::CelOptional;

/// The most one rule may cost (kube's `PerCallLimit`).
pub(super) const PER_CALL_LIMIT: u64 = 1_000_000;
/// The most all rules of one write may cost (kube's `RuntimeCELCostBudget`).
pub(super) const BUDGET: u64 = 10_000_000;
/// The longest `messageExpression` result kept.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// What the rules said about one write.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// Failed rules, one cause each.
    pub causes: Vec<Cause>,
    /// Failures on values that did not change (ratcheted into warnings).
    pub warnings: Vec<String>,
    remaining: u64,
    stopped: bool,
}

/// Runs every rule of `node` and below over `value` (and its correlated `old` value).
pub(super) fn validate(node: &Node, value: &Value, old: Option<&Value>) -> Outcome {
    let mut outcome = Outcome {
        remaining: BUDGET,
        ..Outcome::default()
    };
    walk(node, value, old, "", &mut outcome);
    outcome
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn walk(node: &Node, value: &Value, old: Option<&Value>, path: &str, out: &mut Outcome) {
    if value.is_null() || out.stopped || !node.has_rules {
        return;
    }
    for rule in &node.rules {
        run(node, rule, value, old, path, out);
        if out.stopped {
            return;
        }
    }
    for all_of in &node.all_of {
        walk(all_of, value, old, path, out);
    }
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                let old_item = old.and_then(|o| o.get(key));
                if let Some(property) = node.properties.get(key) {
                    walk(property, item, old_item, &child(path, key), out);
                } else if let Some(additional) = &node.additional {
                    walk(additional, item, old_item, &format!("{path}[{key}]"), out);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_node) = &node.items else {
                return;
            };
            for (i, item) in items.iter().enumerate() {
                let old_item = old.and_then(|o| correlated_item(node, item, o));
                walk(item_node, item, old_item, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The old item with the same keys, for a `x-kubernetes-list-type: map` list.
fn correlated_item<'a>(node: &Node, item: &Value, old: &'a Value) -> Option<&'a Value> {
    if node.list_type.as_deref() != Some("map") || node.list_map_keys.is_empty() {
        return None;
    }
    let same = |o: &&Value| node.list_map_keys.iter().all(|k| o.get(k) == item.get(k));
    old.as_array()?.iter().find(same)
}

/// The longest list or map (and, when `strings`, string) in `value`.
fn widest(value: &Value, strings: bool) -> u64 {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|v| widest(v, strings))
            .fold(items.len() as u64, u64::max),
        Value::Object(map) => map
            .values()
            .map(|v| widest(v, strings))
            .fold(map.len() as u64, u64::max),
        Value::String(s) if strings => s.len() as u64,
        _ => 0,
    }
}

/// The cost bound of running `compiled` over `value` and `old`.
fn cost(compiled: &Compiled, value: &Value, old: Option<&Value>) -> u64 {
    let nodes = compiled.nodes.max(1) as u64;
    if compiled.depth == 0 && !compiled.splits_strings {
        return nodes;
    }
    let n = old
        .map(|o| widest(o, compiled.splits_strings))
        .unwrap_or(0)
        .max(widest(value, compiled.splits_strings));
    let depth = u32::try_from(compiled.depth).unwrap_or(u32::MAX).max(1);
    (n + 1)
        .checked_pow(depth)
        .and_then(|w| w.checked_mul(nodes))
        .unwrap_or(u64::MAX)
}

/// The type kube shows as the bad value of a failed rule (`"object"`, `"string"`, ...).
fn type_name(node: &Node) -> &'static str {
    match node.types.as_slice() {
        [single] => single,
        _ => "",
    }
}

/// Why a rule could not be evaluated, in cel-go's words where they differ.
enum Failure {
    /// No overload of a function or operator takes the arguments.
    NoOverload,
    /// Any other error: `no such key: x`, `division by zero`, a function's own message...
    Other(String),
}

impl From<cel::ExecutionError> for Failure {
    fn from(err: cel::ExecutionError) -> Self {
        use cel::ExecutionError as E;
        Failure::Other(match err {
            E::NoSuchOverload(_)
            | E::UnsupportedBinaryOperator(..)
            | E::ValuesNotComparable(..) => {
                return Failure::NoOverload;
            }
            E::NoSuchKey(key) => format!("no such key: {key}"),
            E::DivisionByZero(_) => "division by zero".into(),
            E::RemainderByZero(_) => "modulus by zero".into(),
            E::Overflow(..) => "integer overflow".into(),
            E::FunctionError { message, .. } => message,
            other => other.to_string(),
        })
    }
}

/// Evaluates one program over `self` and `oldSelf` (both described by `node`).
fn evaluate(
    node: &Node,
    compiled: &Compiled,
    value: &Value,
    old: Option<&Value>,
    optional_old_self: bool,
) -> Result<cel::Value, Failure> {
    let env = k8s_cel::env().map_err(Failure::Other)?;
    let mut ctx = cel::Context::with_env(env);
    ctx.add_variable_as_val("self", typed_val(node, value));
    match (old, optional_old_self) {
        (Some(old), false) => ctx.add_variable_as_val("oldSelf", typed_val(node, old)),
        (Some(old), true) => {
            ctx.add_variable_as_val("oldSelf", Box::new(CelOptional::of(typed_val(node, old))))
        }
        (None, true) => ctx.add_variable_as_val("oldSelf", Box::new(CelOptional::none())),
        (None, false) => {}
    }
    Ok(compiled.program.execute(&ctx)?)
}

fn stop(out: &mut Outcome, path: &str, node: &Node, detail: String) {
    out.causes.push(invalid(path, node, &detail));
    out.stopped = true;
}

fn invalid(path: &str, node: &Node, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        field: field_of(path),
        message: format!("Invalid value: {}: {detail}", go_quote(type_name(node))),
    }
}

/// `message`, else `failed rule: <rule>`.
fn default_message(rule: &Rule) -> String {
    if rule.message.is_empty() {
        format!("failed rule: {}", rule.rule.trim())
    } else {
        rule.message.clone()
    }
}

/// `message`, else the rule, as kube names a rule in evaluation errors.
fn rule_name(rule: &Rule) -> &str {
    if rule.message.is_empty() {
        rule.rule.trim()
    } else {
        &rule.message
    }
}

fn run(
    node: &Node,
    rule: &Rule,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Outcome,
) {
    let compiled = &rule.compiled;
    if compiled.uses_old_self && old.is_none() && !rule.optional_old_self {
        return;
    }
    let estimate = cost(compiled, value, old);
    if estimate > PER_CALL_LIMIT {
        let detail = format!(
            "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
            rule_name(rule)
        );
        return stop(out, path, node, detail);
    }
    if estimate > out.remaining {
        let detail = "validation failed due to running out of cost budget, no further validation rules will be run".to_string();
        return stop(out, path, node, detail);
    }
    out.remaining -= estimate;
    let old_self = if compiled.uses_old_self { old } else { None };
    match evaluate(node, compiled, value, old_self, rule.optional_old_self) {
        Ok(cel::Value::Bool(true)) => {}
        Ok(cel::Value::Bool(false)) => fail(node, rule, value, old, path, out),
        Ok(other) => {
            let detail = format!(
                "rule evaluated to {:?}, not a bool, evaluating rule: {}",
                other.type_of(),
                rule_name(rule)
            );
            out.causes.push(invalid(path, node, &detail));
        }
        Err(Failure::NoOverload) => {
            let detail = format!(
                "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                rule_name(rule)
            );
            out.causes.push(invalid(path, node, &detail));
        }
        Err(Failure::Other(err)) => {
            let detail = format!("{err} evaluating rule: {}", rule_name(rule));
            out.causes.push(invalid(path, node, &detail));
        }
    }
}

/// Reports a rule that evaluated to false.
fn fail(
    node: &Node,
    rule: &Rule,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Outcome,
) {
    let path = if rule.field_path.is_empty() {
        path.to_string()
    } else {
        child(path, &rule.field_path)
    };
    let detail = rule
        .message_expression
        .as_ref()
        .and_then(|expression| message(node, expression, value, old, out))
        .unwrap_or_else(|| default_message(rule));
    let field = field_of(&path);
    let cause = match rule.reason {
        Reason::Invalid => invalid(&path, node, &detail),
        Reason::Forbidden => Cause::forbidden(&field, &detail),
        Reason::Required => Cause::required(&field, &detail),
        Reason::Duplicate => Cause {
            reason: "FieldValueDuplicate",
            field: field.clone(),
            message: format!("Duplicate value: {}", go_quote(type_name(node))),
        },
    };
    let unchanged = old.is_some_and(|o| o == value);
    if unchanged && !rule.compiled.uses_old_self {
        out.warnings
            .push(format!("{}: {}", cause.field, cause.message));
    } else {
        out.causes.push(cause);
    }
}

/// The message a `messageExpression` yields, or `None` (the rule's message is used).
fn message(
    node: &Node,
    expression: &Compiled,
    value: &Value,
    old: Option<&Value>,
    out: &mut Outcome,
) -> Option<String> {
    let estimate = cost(expression, value, old);
    if estimate > PER_CALL_LIMIT.min(out.remaining) {
        return None;
    }
    out.remaining -= estimate;
    let old_self = if expression.uses_old_self { old } else { None };
    match evaluate(node, expression, value, old_self, false) {
        Ok(cel::Value::String(s)) => {
            let trimmed = s.trim();
            let usable = !trimmed.is_empty()
                && trimmed.len() <= MAX_MESSAGE_BYTES
                && !trimmed.contains('\n');
            usable.then(|| trimmed.to_string())
        }
        _ => None,
    }
}
