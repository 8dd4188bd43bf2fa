//! KRO's maps and lists libraries (`pkg/cel/library/maps.go`, `lists.go`):
//! `map.merge(other)` (the other's keys win), `x.deepMerge(other)` (nested maps merged,
//! anything else replaced), and `lists.setAtIndex(list, i, value)`,
//! `lists.insertAtIndex(list, i, value)` and `lists.removeAtIndex(list, i)`, each a new list.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::functions::Function;
use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, MAP_TYPE};
use cel::common::value::CowVal;
use cel::objects::Map;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::dynamic::{owned, value_of};

/// Registers the functions on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    let merge: Function = merge;
    let deep_merge: Function = deep_merge;
    env.add_member_overload("merge", "map_merge", MAP_TYPE, vec![MAP_TYPE], merge)?;
    env.add_member_overload(
        "deepMerge",
        "dyn_deepmerge_dyn",
        DYN_TYPE,
        vec![DYN_TYPE],
        deep_merge,
    )?;
    let with_value: [(&str, Function); 2] = [
        ("lists.setAtIndex", set_at_index),
        ("lists.insertAtIndex", insert_at_index),
    ];
    for (name, function) in with_value {
        let id = format!("{name}_list_int_T");
        env.add_overload(name, &id, vec![LIST_TYPE, INT_TYPE, DYN_TYPE], function)?;
    }
    let remove: Function = remove_at_index;
    env.add_overload(
        "lists.removeAtIndex",
        "lists.removeAtIndex_list_int",
        vec![LIST_TYPE, INT_TYPE],
        remove,
    )?;
    Ok(())
}

/// The arguments as values.
fn values(args: &[CowVal<'_, '_>]) -> Result<Vec<Value>, ExecutionError> {
    args.iter().map(value_of).collect()
}

fn merge<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match values(&args)?.as_slice() {
        [Value::Map(base), Value::Map(other)] => {
            let mut merged = (*base.map).clone();
            merged.extend(other.map.iter().map(|(k, v)| (k.clone(), v.clone())));
            owned(Value::Map(Map {
                map: Arc::new(merged),
            }))
        }
        other => Err(no_such_overload("merge", other)),
    }
}

fn deep_merge<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match values(&args)?.as_slice() {
        [base @ Value::Map(_), other @ Value::Map(_)] => owned(merged(base, other)),
        other => Err(no_such_overload("deepMerge", other)),
    }
}

/// `other` merged onto `base`: maps key by key, anything else replaced by `other`.
fn merged(base: &Value, other: &Value) -> Value {
    let (Value::Map(base), Value::Map(other)) = (base, other) else {
        return other.clone();
    };
    let mut entries: HashMap<_, _> = (*base.map).clone();
    for (key, value) in other.map.iter() {
        let value = match entries.get(key) {
            Some(existing) => merged(existing, value),
            None => value.clone(),
        };
        entries.insert(key.clone(), value);
    }
    Value::Map(Map {
        map: Arc::new(entries),
    })
}

fn no_such_overload(function: &str, args: &[Value]) -> ExecutionError {
    ExecutionError::no_such_member_overload(
        function,
        args.iter().map(|a| a.type_of().to_string()).collect(),
    )
}

/// The list, index and (for the functions that take one) value of a `lists.*` call, the
/// index checked to be in `0..size` (or `0..=size` when `may_append`).
fn list_call(
    function: &str,
    args: &[CowVal<'_, '_>],
    may_append: bool,
) -> Result<(Vec<Value>, usize, Option<Value>), ExecutionError> {
    let mut values = values(args)?.into_iter();
    let (Some(Value::List(list)), Some(Value::Int(index))) = (values.next(), values.next()) else {
        return Err(ExecutionError::function_error(
            function,
            format!("{function}: expected a list and an integer index"),
        ));
    };
    let size = list.len();
    let limit = if may_append { size + 1 } else { size };
    let close = if may_append { "]" } else { ")" };
    let index = usize::try_from(index)
        .ok()
        .filter(|i| *i < limit)
        .ok_or_else(|| {
            ExecutionError::function_error(
                function,
                format!("{function}: index {index} out of bounds [0, {size}{close}"),
            )
        })?;
    Ok((Arc::unwrap_or_clone(list), index, values.next()))
}

fn set_at_index<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (mut list, index, value) = list_call("lists.setAtIndex", &args, false)?;
    list[index] = value.unwrap_or(Value::Null);
    owned(Value::List(Arc::new(list)))
}

fn insert_at_index<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (mut list, index, value) = list_call("lists.insertAtIndex", &args, true)?;
    list.insert(index, value.unwrap_or(Value::Null));
    owned(Value::List(Arc::new(list)))
}

fn remove_at_index<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (mut list, index, _) = list_call("lists.removeAtIndex", &args, false)?;
    list.remove(index);
    owned(Value::List(Arc::new(list)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::cel::evaluate_closed;

    #[test]
    fn maps_and_lists_as_kro() {
        // Cases from KRO's pkg/cel/library/maps_test.go and lists_test.go.
        let cases = [
            ("{}.merge({'a': 1})", json!({"a": 1})),
            ("{'a': 1}.merge({'a': 2, 'b': 2})", json!({"a": 2, "b": 2})),
            (
                "{'a': {'x': 1}}.deepMerge({'a': {'y': 2}})",
                json!({"a": {"x": 1, "y": 2}}),
            ),
            (
                "{'a': {'x': 1}}.deepMerge({'a': {'x': 9}})",
                json!({"a": {"x": 9}}),
            ),
            ("{'a': [1]}.deepMerge({'a': [2]})", json!({"a": [2]})),
            ("lists.setAtIndex([1, 2, 3], 1, 99)", json!([1, 99, 3])),
            (
                "lists.insertAtIndex([1, 2, 3], 0, 99)",
                json!([99, 1, 2, 3]),
            ),
            (
                "lists.insertAtIndex([1, 2, 3], 3, 99)",
                json!([1, 2, 3, 99]),
            ),
            ("lists.removeAtIndex([1, 2, 3], 2)", json!([1, 2])),
        ];
        for (expression, want) in cases {
            assert_eq!(evaluate_closed(expression), Ok(want), "{expression}");
        }
        let cases = [
            (
                "lists.setAtIndex([1], 1, 0)",
                "lists.setAtIndex: index 1 out of bounds [0, 1)",
            ),
            (
                "lists.insertAtIndex([1], 2, 0)",
                "lists.insertAtIndex: index 2 out of bounds [0, 1]",
            ),
            (
                "lists.removeAtIndex([], 0)",
                "lists.removeAtIndex: index 0 out of bounds [0, 0)",
            ),
            ("lists.removeAtIndex([1], -1)", "index -1 out of bounds"),
        ];
        for (expression, want) in cases {
            let error = evaluate_closed(expression).unwrap_err();
            assert!(error.contains(want), "{expression}: {error}");
        }
    }
}
