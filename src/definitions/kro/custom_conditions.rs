//! KRO's custom status conditions (an RGD's `spec.schema.status.conditions`, KRO's
//! `pkg/graph/conditions.go` and `pkg/runtime/conditions.go`): each entry a `${...}`
//! returning `runtime.newCondition(...)` or a list of them, checked at load and evaluated
//! after the instance's resources, over them and over `schema` whose
//! `status.conditions` are KRO's four built-in conditions.

use std::collections::BTreeSet;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

use super::conditions::BUILT_IN;
use crate::definitions::check::{Findings, Scope, check, kro_condition_ty};
use crate::definitions::error::DefinitionError;
use crate::definitions::expr::{Bindings, Expression, condition};
use crate::definitions::ty::Ty;
use crate::object::Condition;

/// The statuses a condition may have.
const STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// An RGD's custom conditions, compiled and checked.
#[derive(Debug)]
pub struct CustomConditions {
    entries: Vec<Expression>,
}

/// What evaluating the custom conditions gave.
#[derive(Debug, Default)]
pub struct Evaluation {
    /// The conditions produced, in the entries' order (without reason, message, time).
    pub conditions: Vec<Condition>,
    /// Whether an entry produced nothing (its data not there yet, or a failure).
    pub incomplete: bool,
    /// Why entries failed, or which computed types collided and were dropped.
    pub failures: Vec<String>,
}

impl CustomConditions {
    /// Compiles and checks the entries (`sources`, written at `path[i]`) in `scope`: each
    /// must return a condition or a list of them, no two may declare the same literal
    /// type, literal statuses must be valid, and `runtime.condition(schema, 'X')` must name
    /// one of KRO's built-in conditions.
    pub fn compile(
        sources: &[String],
        path: &str,
        scope: &Scope,
    ) -> Result<Self, Vec<DefinitionError>> {
        let scope = scope.with_runtime();
        let mut errors = Vec::new();
        let mut entries = Vec::new();
        for (i, source) in sources.iter().enumerate() {
            let at = format!("{path}[{i}]");
            let checked = condition(source, &at).and_then(|expression| {
                let ty = check(&expression, &scope, &mut Findings::default())?;
                returns_conditions(&expression, &ty)?;
                Ok(expression)
            });
            match checked {
                Ok(expression) => entries.push(expression),
                Err(error) => errors.push(error),
            }
        }
        let mut declared = BTreeSet::new();
        for entry in &entries {
            let mut types = Vec::new();
            new_condition_types(entry.ast(), &mut types);
            for (id, type_) in types {
                if !declared.insert(type_.clone()) {
                    errors.push(at_node(
                        entry,
                        id,
                        format!(
                            "condition type {type_:?} is declared by more than one conditions entry"
                        ),
                    ));
                }
            }
        }
        for entry in &entries {
            if let Err(error) = check_runtime_calls(entry, entry.ast(), &declared) {
                errors.push(error);
            }
        }
        match errors.is_empty() {
            true => Ok(Self { entries }),
            false => Err(errors),
        }
    }

    /// Evaluates every entry over `bindings` (`self` the instance with KRO's built-in
    /// conditions as its `status.conditions`): an entry reading what is not there yet is
    /// skipped, one that fails is a failure, and conditions of a type produced twice are
    /// all dropped (a failure too).
    pub fn evaluate(&self, bindings: &Bindings, now: Timestamp) -> Evaluation {
        let mut evaluation = Evaluation::default();
        for entry in &self.entries {
            let pending = entry
                .variables()
                .iter()
                .any(|name| name != "now" && name != "runtime" && !bindings.contains_key(name));
            if pending {
                evaluation.incomplete = true;
                continue;
            }
            match entry.evaluate(bindings, now) {
                Ok(value) => match produced(&value) {
                    Some(conditions) => evaluation.conditions.extend(conditions),
                    None => {
                        evaluation.incomplete = true;
                        evaluation.failures.push(
                            entry
                                .error("condition expressions must return runtime.newCondition(...) or a list of them")
                                .to_string(),
                        );
                    }
                },
                Err(error) if error.message.starts_with("no such key") => {
                    evaluation.incomplete = true;
                }
                Err(error) => {
                    evaluation.incomplete = true;
                    evaluation.failures.push(error.to_string());
                }
            }
        }
        let mut seen = BTreeSet::new();
        let duplicates: BTreeSet<String> = evaluation
            .conditions
            .iter()
            .filter(|c| !seen.insert(c.type_.clone()))
            .map(|c| c.type_.clone())
            .collect();
        if !duplicates.is_empty() {
            evaluation
                .conditions
                .retain(|c| !duplicates.contains(&c.type_));
            evaluation.incomplete = true;
            evaluation.failures.push(format!(
                "duplicate condition type(s) {duplicates:?} dropped"
            ));
        }
        evaluation
    }
}

/// The conditions to write, as KRO stamps them: `lastTransitionTime` kept from the
/// `previous` condition of the type while its status is the same, `observedGeneration`
/// the instance's `generation`; when the evaluation was `incomplete`, the previous
/// conditions of the types it did not produce are kept as they were.
pub fn stamp(
    evaluation: Evaluation,
    previous: &[Condition],
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    let mut written: Vec<Condition> = evaluation
        .conditions
        .into_iter()
        .map(|mut condition| {
            let before = previous.iter().find(|p| p.type_ == condition.type_);
            condition.last_transition_time = match before {
                Some(p) if p.status == condition.status && p.last_transition_time.is_some() => {
                    p.last_transition_time.clone()
                }
                _ => Some(Time(now)),
            };
            condition.observed_generation = generation;
            condition
        })
        .collect();
    if evaluation.incomplete {
        let kept: Vec<Condition> = previous
            .iter()
            .filter(|p| !written.iter().any(|c| c.type_ == p.type_))
            .cloned()
            .collect();
        written.extend(kept);
    }
    written
}

/// The conditions a value holds: one condition, or a list of them.
fn produced(value: &Value) -> Option<Vec<Condition>> {
    let one = |value: &Value| {
        let field = |name: &str| value.get(name).and_then(Value::as_str);
        let (type_, status) = (field("type")?, field("status")?);
        if type_.is_empty() || !STATUSES.contains(&status) {
            return None;
        }
        let mut condition = Condition::new(type_, status);
        condition.reason = field("reason").filter(|r| !r.is_empty()).map(String::from);
        condition.message = field("message").filter(|m| !m.is_empty()).map(String::from);
        Some(condition)
    };
    match value {
        Value::Array(items) => items.iter().map(one).collect(),
        other => one(other).map(|c| vec![c]),
    }
}

/// Whether an entry's type is a condition or a list of them (or unknown until run).
fn returns_conditions(expression: &Expression, ty: &Ty) -> Result<(), DefinitionError> {
    let condition = kro_condition_ty().openapi();
    let fits = |ty: &Ty| matches!(ty, Ty::Dyn) || ty.openapi() == condition;
    let ok = match ty {
        Ty::List(item) => fits(item),
        other => fits(other),
    };
    match ok {
        true => Ok(()),
        false => Err(DefinitionError::about(
            expression.path(),
            expression.source(),
            format!(
                "condition expressions must return runtime.newCondition(...) or a list of them, got {}",
                ty.describe()
            ),
        )),
    }
}

/// The map argument of a `runtime.<function>(...)` call.
fn runtime_call<'a>(expr: &'a IdedExpr, function: &str) -> Option<&'a [IdedExpr]> {
    let Expr::Call(call) = &expr.expr else {
        return None;
    };
    let on_runtime = matches!(call.target.as_deref(), Some(IdedExpr { expr: Expr::Ident(name), .. }) if name == "runtime");
    (on_runtime && call.func_name == function).then_some(call.args.as_slice())
}

/// The literal string of a map literal's entry `key`, with the entry's node id.
fn literal_entry(map: &IdedExpr, key: &str) -> Option<(u64, String)> {
    let Expr::Map(map) = &map.expr else {
        return None;
    };
    map.entries.iter().find_map(|entry| match &entry.expr {
        EntryExpr::MapEntry(e) => match (&e.key.expr, &e.value.expr) {
            (Expr::Literal(LiteralValue::String(k)), Expr::Literal(LiteralValue::String(v)))
                if k.inner() == key =>
            {
                Some((e.value.id, v.inner().to_owned()))
            }
            _ => None,
        },
        EntryExpr::StructField(_) => None,
    })
}

/// The literal types of the `runtime.newCondition` calls under `expr`, with their nodes.
fn new_condition_types(expr: &IdedExpr, types: &mut Vec<(u64, String)>) {
    if let Some([map]) = runtime_call(expr, "newCondition")
        && let Some(found) = literal_entry(map, "type")
    {
        types.push(found);
    }
    for child in children(expr) {
        new_condition_types(child, types);
    }
}

/// Checks the literal values of `runtime.newCondition` and the types read from `schema`
/// with `runtime.condition` under `expr`.
fn check_runtime_calls(
    entry: &Expression,
    expr: &IdedExpr,
    declared: &BTreeSet<String>,
) -> Result<(), DefinitionError> {
    if let Some([map]) = runtime_call(expr, "newCondition") {
        if let Some((id, status)) = literal_entry(map, "status")
            && !STATUSES.contains(&status.as_str())
        {
            return Err(at_node(
                entry,
                id,
                format!(
                    "runtime.newCondition: status must be one of True, False, Unknown (got {status:?})"
                ),
            ));
        }
        if let Some((id, type_)) = literal_entry(map, "type")
            && type_.is_empty()
        {
            return Err(at_node(
                entry,
                id,
                "runtime.newCondition: type must not be empty",
            ));
        }
    }
    if let Some([object, type_]) = runtime_call(expr, "condition")
        && matches!(&object.expr, Expr::Ident(name) if name == "self")
        && let Expr::Literal(LiteralValue::String(name)) = &type_.expr
    {
        let name = name.inner();
        if !BUILT_IN.contains(&name) {
            let message = match declared.contains(name) {
                true => format!(
                    "runtime.condition(schema, {name:?}): custom conditions cannot reference each other"
                ),
                false => format!(
                    "runtime.condition(schema, {name:?}): unknown condition type; only kro's built-in types (InstanceManaged, GraphResolved, ResourcesReady, Ready) can be read from schema"
                ),
            };
            return Err(at_node(entry, type_.id, message));
        }
    }
    children(expr)
        .into_iter()
        .try_for_each(|child| check_runtime_calls(entry, child, declared))
}

/// The direct subexpressions of `expr`.
fn children(expr: &IdedExpr) -> Vec<&IdedExpr> {
    match &expr.expr {
        Expr::Call(call) => call
            .target
            .as_deref()
            .into_iter()
            .chain(&call.args)
            .collect(),
        Expr::Select(select) => vec![&select.operand],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => map
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(e) => vec![&e.key, &e.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        Expr::Struct(s) => s
            .entries
            .iter()
            .filter_map(|entry| match &entry.expr {
                EntryExpr::StructField(f) => Some(&f.value),
                EntryExpr::MapEntry(_) => None,
            })
            .collect(),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}

/// An error of `entry` at its node `id`.
fn at_node(entry: &Expression, id: u64, message: impl Into<String>) -> DefinitionError {
    let error = DefinitionError::about(entry.path(), entry.source(), message);
    match entry.position_of(id) {
        Some((line, column)) => error.at_position(line, column),
        None => error,
    }
}
