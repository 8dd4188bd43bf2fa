//! KRO's `runtime` library of custom status conditions (`pkg/cel/library/runtime.go`):
//! `runtime.newCondition({type: 'X', status: 'True', reason: '', message: ''})` builds a
//! condition, `runtime.condition(obj, 'X')` reads one from `obj.status.conditions[]` (an
//! empty condition when there is none). A condition is a map of the four strings `type`,
//! `status`, `reason` and `message`.
//!
//! As KRO's parse-time macro does, `newCondition`'s argument must be a map literal whose
//! keys are the bare names `type`, `status`, `reason` and `message` (`type` and `status`
//! required): they are rewritten into string keys, and anything else is a parse error at
//! its position. Which expressions may use `runtime` is the definitions' checker's concern.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::common::functions::Function;
use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::{Key, Map as CelMap};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::dynamic::{owned, value_of};

/// The name KRO binds its library to.
const RUNTIME: &str = "runtime";
/// A condition's fields, the only keys of `newCondition`'s argument.
const FIELDS: [&str; 4] = ["type", "status", "reason", "message"];
/// The statuses a condition may have.
pub(crate) const STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// Registers `runtime.newCondition`, `runtime.condition` and the macro checking
/// `newCondition`'s keys on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    let new_condition: Function = new_condition;
    let condition: Function = condition;
    env.add_macro(Macro::receiver("newCondition", 1, expand_new_condition))?;
    env.add_overload(
        "runtime.newCondition",
        "runtime.newCondition_map",
        vec![DYN_TYPE],
        new_condition,
    )?;
    env.add_overload(
        "runtime.condition",
        "runtime.condition_dyn_string",
        vec![DYN_TYPE, STRING_TYPE],
        condition,
    )?;
    Ok(())
}

/// Rewrites the bare keys of `runtime.newCondition({...})` into strings, refusing what
/// KRO's macro refuses; any other `x.newCondition(...)` is left as written.
#[allow(clippy::ptr_arg)] // the expander's signature is `Macro::receiver`'s
fn expand_new_condition(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let is_runtime =
        matches!(target, Some(IdedExpr { expr: Expr::Ident(name), .. }) if name == RUNTIME);
    let Some(argument) = args.first_mut().filter(|_| is_runtime) else {
        return Ok(None);
    };
    let argument_id = argument.id;
    let Expr::Map(map) = &mut argument.expr else {
        return Err(helper.new_error(
            argument_id,
            "runtime.newCondition: argument must be a map literal",
        ));
    };
    let mut seen = Vec::new();
    for entry in &mut map.entries {
        let EntryExpr::MapEntry(entry) = &mut entry.expr else {
            continue;
        };
        let Expr::Ident(name) = &entry.key.expr else {
            return Err(helper.new_error(
                entry.key.id,
                "runtime.newCondition: keys must be bare identifiers (type, status, reason, message); quoted or computed keys are not allowed",
            ));
        };
        if !FIELDS.contains(&name.as_str()) {
            return Err(helper.new_error(
                entry.key.id,
                format!(
                    "runtime.newCondition: unknown key {name:?} (allowed: type, status, reason, message)"
                ),
            ));
        }
        if seen.contains(name) {
            return Err(helper.new_error(
                entry.key.id,
                format!("runtime.newCondition: duplicate key {name:?}"),
            ));
        }
        seen.push(name.clone());
        entry.key.expr = Expr::Literal(LiteralValue::String(name.clone().into()));
    }
    for required in ["type", "status"] {
        if !seen.iter().any(|s| s == required) {
            return Err(helper.new_error(
                argument_id,
                format!("runtime.newCondition: '{required}' is required"),
            ));
        }
    }
    Ok(None)
}

/// `runtime.newCondition(map)`: the condition, its values checked (computed ones are
/// only known here).
fn new_condition<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let fail = |message: String| ExecutionError::function_error("runtime.newCondition", message);
    let Some(Value::Map(given)) = args.first().map(value_of).transpose()? else {
        return Err(fail("argument must be a map".into()));
    };
    let mut fields = HashMap::new();
    for field in FIELDS {
        let value = match given.map.get(&Key::String(Arc::new(field.to_owned()))) {
            None => String::new(),
            Some(Value::String(s)) => s.to_string(),
            Some(other) => {
                return Err(fail(format!(
                    "{field} must be a string, got {}",
                    other.type_of()
                )));
            }
        };
        match field {
            "type" if value.is_empty() => return Err(fail("type must not be empty".into())),
            "status" if !STATUSES.contains(&value.as_str()) => {
                return Err(fail(format!(
                    "status must be one of True, False, Unknown (got {value:?})"
                )));
            }
            _ => {}
        }
        fields.insert(field, value);
    }
    owned(condition_value(|field| {
        fields.remove(field).unwrap_or_default()
    }))
}

/// `runtime.condition(obj, type)`: the condition of that type in `obj.status.conditions`,
/// or an empty one.
fn condition<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let fail = |message: String| ExecutionError::function_error("runtime.condition", message);
    let mut args = args.iter().map(value_of);
    let (Some(object), Some(wanted)) = (args.next().transpose()?, args.next().transpose()?) else {
        return Err(ExecutionError::invalid_argument_count(2, 0));
    };
    let Value::String(wanted) = wanted else {
        return Err(fail("type must be a string".into()));
    };
    let Value::Map(object) = object else {
        return Err(fail(format!(
            "obj must be an object, got {}",
            object.type_of()
        )));
    };
    let field = |map: &CelMap, name: &str| {
        map.map
            .get(&Key::String(Arc::new(name.to_owned())))
            .cloned()
    };
    let conditions = match field(&object, "status") {
        None => Vec::new(),
        Some(Value::Map(status)) => match field(&status, "conditions") {
            None => Vec::new(),
            Some(Value::List(list)) => list.to_vec(),
            Some(_) => return Err(fail("obj.status.conditions must be a list".into())),
        },
        Some(_) => return Err(fail("obj.status must be an object".into())),
    };
    for item in conditions {
        let Value::Map(item) = item else {
            return Err(fail(format!(
                "unexpected condition element type {}",
                item.type_of()
            )));
        };
        if field(&item, "type") == Some(Value::String(wanted.clone())) {
            return owned(condition_value(|name| match field(&item, name) {
                Some(Value::String(s)) => s.to_string(),
                _ => String::new(),
            }));
        }
    }
    owned(condition_value(|_| String::new()))
}

/// A condition whose fields `field` gives.
fn condition_value(mut field: impl FnMut(&str) -> String) -> Value {
    let map = FIELDS
        .iter()
        .map(|name| {
            (
                Key::String(Arc::new((*name).to_owned())),
                Value::String(Arc::new(field(name))),
            )
        })
        .collect::<HashMap<_, _>>();
    Value::Map(CelMap { map: Arc::new(map) })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value as Json, json};

    fn evaluate(expression: &str) -> Result<Json, String> {
        let env = super::super::env().map_err(|e| e.to_string())?;
        let program = env.compile(expression).map_err(|e| e.to_string())?;
        let mut ctx = cel::Context::with_env(env);
        ctx.add_variable(
            "obj",
            json!({"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Done"}]}}),
        )
        .map_err(|e| e.to_string())?;
        let value = program
            .execute(&ctx)
            .map_err(|e| super::super::describe(&e))?;
        super::super::to_json(&value)
    }

    #[test]
    fn conditions_are_built_and_read_as_kro_does() {
        let built = evaluate(
            "runtime.newCondition({type: 'A', status: 1 > 0 ? 'True' : 'False', reason: 'R'})",
        );
        assert_eq!(
            built,
            Ok(json!({"type": "A", "status": "True", "reason": "R", "message": ""}))
        );
        assert_eq!(
            evaluate("runtime.condition(obj, 'Ready').reason"),
            Ok(json!("Done"))
        );
        assert_eq!(
            evaluate("runtime.condition(obj, 'Other')"),
            Ok(json!({"type": "", "status": "", "reason": "", "message": ""}))
        );
    }

    #[test]
    fn wrong_keys_and_values_are_refused_in_kros_words() {
        let cases = [
            (
                "runtime.newCondition({'type': 'A', status: 'True'})",
                "keys must be bare identifiers",
            ),
            (
                "runtime.newCondition({type: 'A', state: 'True'})",
                "unknown key \"state\"",
            ),
            (
                "runtime.newCondition({type: 'A', type: 'B', status: 'True'})",
                "duplicate key \"type\"",
            ),
            (
                "runtime.newCondition({status: 'True'})",
                "'type' is required",
            ),
            ("runtime.newCondition({type: 'A'})", "'status' is required"),
            (
                "runtime.newCondition(obj)",
                "argument must be a map literal",
            ),
            (
                "runtime.newCondition({type: 'A', status: 'Yes'.lowerAscii()})",
                "status must be one of True, False, Unknown (got \"yes\")",
            ),
            (
                "runtime.newCondition({type: 'A' + '', status: 'True', reason: 1})",
                "reason must be a string, got int",
            ),
            (
                "runtime.newCondition({type: '', status: 'True'})",
                "type must not be empty",
            ),
        ];
        for (expression, want) in cases {
            let got = evaluate(expression).unwrap_err();
            assert!(got.contains(want), "{expression}: {got}");
        }
    }
}
