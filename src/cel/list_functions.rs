//! Kubernetes' CEL list functions (`k8s.io/apiserver/pkg/cel/library/lists.go`), which
//! KRO's environment includes: `isSorted()`, `sum()`, `min()`, `max()`, `indexOf(x)` and
//! `lastIndexOf(x)` on lists.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::functions::Function;
use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::dynamic::{owned, value_of};

/// Registers the list functions on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    let unary: [(&str, Function); 4] = [
        ("isSorted", is_sorted),
        ("sum", sum),
        ("min", min),
        ("max", max),
    ];
    for (name, function) in unary {
        env.add_member_overload(name, &format!("list.{name}()"), LIST_TYPE, vec![], function)?;
    }
    let searches: [(&str, Function); 2] = [("indexOf", index_of), ("lastIndexOf", last_index_of)];
    for (name, function) in searches {
        let id = format!("list.{name}(dyn)");
        env.add_member_overload(name, &id, LIST_TYPE, vec![DYN_TYPE], function)?;
    }
    Ok(())
}

/// The items of the list the function is called on, and its other arguments.
fn items(
    function: &str,
    args: &[CowVal<'_, '_>],
) -> Result<(Arc<Vec<Value>>, Vec<Value>), ExecutionError> {
    let mut values = args.iter().map(value_of);
    match values.next().transpose()? {
        Some(Value::List(items)) => Ok((items, values.collect::<Result<_, _>>()?)),
        Some(other) => Err(ExecutionError::function_error(
            function,
            format!("called on a {}, not a list", other.type_of()),
        )),
        None => Err(ExecutionError::missing_argument_or_target()),
    }
}

/// The order of two items, or an error naming their types.
fn compare(function: &str, a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    a.partial_cmp(b).ok_or_else(|| {
        ExecutionError::function_error(
            function,
            format!("{} and {} cannot be compared", a.type_of(), b.type_of()),
        )
    })
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (items, _) = items("isSorted", &args)?;
    let mut sorted = true;
    for pair in items.windows(2) {
        sorted &= compare("isSorted", &pair[0], &pair[1])? != Ordering::Greater;
    }
    owned(Value::Bool(sorted))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (items, _) = items("sum", &args)?;
    let overflow = || ExecutionError::function_error("sum", "integer overflow");
    let mut total = match items.first() {
        Some(Value::UInt(_)) => Value::UInt(0),
        Some(Value::Float(_)) => Value::Float(0.0),
        Some(Value::Duration(_)) => Value::Duration(chrono::Duration::zero()),
        _ => Value::Int(0),
    };
    for item in items.iter() {
        total = match (&total, item) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a.checked_add(*b).ok_or_else(overflow)?),
            (Value::UInt(a), Value::UInt(b)) => {
                Value::UInt(a.checked_add(*b).ok_or_else(overflow)?)
            }
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            (Value::Duration(a), Value::Duration(b)) => {
                Value::Duration(a.checked_add(b).ok_or_else(overflow)?)
            }
            (total, item) => {
                return Err(ExecutionError::function_error(
                    "sum",
                    format!(
                        "a {} cannot be added to a sum of {}",
                        item.type_of(),
                        total.type_of()
                    ),
                ));
            }
        };
    }
    owned(total)
}

/// The item that `keep` prefers over all others (the least, or the greatest).
fn extreme<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    keep: Ordering,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (items, _) = items(function, &args)?;
    let mut best = items.first().ok_or_else(|| {
        ExecutionError::function_error(function, format!("{function} called on empty list"))
    })?;
    for item in items.iter().skip(1) {
        if compare(function, item, best)? == keep {
            best = item;
        }
    }
    owned(best.clone())
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme("min", args, Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme("max", args, Ordering::Greater)
}

/// The index of the first (or, `from_end`, the last) item equal to the argument, or -1.
fn search<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    from_end: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (items, others) = items(function, &args)?;
    let wanted = others
        .first()
        .ok_or_else(|| ExecutionError::invalid_argument_count(1, 0))?;
    let found = match from_end {
        false => items.iter().position(|item| item == wanted),
        true => items.iter().rposition(|item| item == wanted),
    };
    let index = found.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX));
    owned(Value::Int(index))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    search("indexOf", args, false)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    search("lastIndexOf", args, true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::cel::evaluate_closed;

    #[test]
    fn list_functions_as_kubernetes() {
        // Cases from k8s.io/apiserver/pkg/cel/library/lists_test.go.
        let cases = [
            ("[].isSorted()", json!(true)),
            ("[1, 2, 3].isSorted()", json!(true)),
            ("[1, 3, 2].isSorted()", json!(false)),
            ("['a', 'b', 'b'].isSorted()", json!(true)),
            ("[].sum()", json!(0)),
            ("[1, 2, 3].sum()", json!(6)),
            ("[100, 200, 300].sum()", json!(600)),
            ("[1.5, 2.5].sum()", json!(4.0)),
            ("[1u, 2u].sum()", json!(3)),
            (
                "[duration('1s'), duration('2s')].sum() == duration('3s')",
                json!(true),
            ),
            ("[3, 1, 2].min()", json!(1)),
            ("[3, 1, 2].max()", json!(3)),
            ("['b', 'a'].min()", json!("a")),
            ("[1, 2, 1].indexOf(1)", json!(0)),
            ("[1, 2, 1].lastIndexOf(1)", json!(2)),
            ("[1, 2, 1].indexOf(5)", json!(-1)),
            ("['a', 'b'].indexOf('b')", json!(1)),
            ("'abcb'.indexOf('b')", json!(1)),
            ("'abcb'.lastIndexOf('b')", json!(3)),
        ];
        for (expression, want) in cases {
            assert_eq!(evaluate_closed(expression), Ok(want), "{expression}");
        }
    }

    #[test]
    fn list_function_errors_say_what_was_wrong() {
        let cases = [
            ("[].min()", "min called on empty list"),
            ("[].max()", "max called on empty list"),
            ("[1, 'a'].isSorted()", "int and string cannot be compared"),
            ("[1, 'a'].sum()", "a string cannot be added to a sum of int"),
            ("[9223372036854775807, 1].sum()", "integer overflow"),
        ];
        for (expression, want) in cases {
            let error = evaluate_closed(expression).unwrap_err();
            assert!(error.contains(want), "{expression}: {error}");
        }
    }
}
