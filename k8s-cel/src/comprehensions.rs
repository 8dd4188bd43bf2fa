//! cel-go's two-variable comprehensions (`ext.TwoVarComprehensions`, in KRO's CEL and
//! Kubernetes' since 1.33): `all(i, v, p)`, `exists(i, v, p)`, `existsOne(i, v, p)` (and
//! `exists_one`), `transformList(i, v, [f,] e)`, `transformMap(k, v, [f,] e)` and
//! `transformMapEntry(k, v, [f,] e)`, over a list (index, value) or a map (key, value).
//!
//! The `cel` crate evaluates one-variable comprehensions only, so each macro expands into
//! one: the target is bound once, the comprehension runs over its indices or keys (sorted,
//! so results do not depend on a map's order) as the first variable, and the second is
//! bound to the target's element at it around each expression the user wrote. The hidden
//! helpers have names no CEL source can write.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{
    CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr, operators,
};
use cel::common::functions::Function;
use cel::common::types::{CelBool, CelInt, DYN_TYPE, MAP_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{DeclarationError, Env, ExecutionError, Value};

use crate::bind::binding;

/// The hidden function listing a comprehension's first variable: a list's indices or a
/// map's keys.
pub const ITERATION_KEYS: &str = "@iterationKeys";
/// The hidden function adding an entry, or a map's entries, to a map (cel-go's
/// `cel.@mapInsert`); it fails on a key already there.
pub const MAP_INSERT: &str = "@mapInsert";
/// The name the target is bound to.
const TARGET: &str = "@target";
/// The accumulator, as the standard macros name it.
const RESULT: &str = "@result";

/// What a two-variable macro computes.
#[derive(Clone, Copy)]
enum Kind {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
    TransformMapEntry,
}

/// Registers the macros and their hidden functions on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    let macros = [
        ("all", 3, Kind::All),
        ("exists", 3, Kind::Exists),
        ("existsOne", 3, Kind::ExistsOne),
        ("exists_one", 3, Kind::ExistsOne),
        ("transformList", 3, Kind::TransformList),
        ("transformList", 4, Kind::TransformList),
        ("transformMap", 3, Kind::TransformMap),
        ("transformMap", 4, Kind::TransformMap),
        ("transformMapEntry", 3, Kind::TransformMapEntry),
        ("transformMapEntry", 4, Kind::TransformMapEntry),
    ];
    for (name, arity, kind) in macros {
        env.add_macro(Macro::receiver(name, arity, move |helper, target, args| {
            expand(kind, helper, target, args).map(Some)
        }))?;
    }
    for (name, forms) in ARITIES {
        env.add_macro(Macro::receiver_var_arg(name, move |helper, _, args| {
            let at = args.first().map_or(0, |arg| arg.id);
            Err(wrong_arity(helper, at, name, forms, args.len()))
        }))?;
    }
    let keys: Function = iteration_keys;
    env.add_overload(ITERATION_KEYS, "@iterationKeys_dyn", vec![DYN_TYPE], keys)?;
    let insert_entry: Function = insert_entry;
    env.add_overload(
        MAP_INSERT,
        "@mapInsert_map_key_value",
        vec![MAP_TYPE, DYN_TYPE, DYN_TYPE],
        insert_entry,
    )?;
    let insert_entries: Function = insert_entries;
    env.add_overload(
        MAP_INSERT,
        "@mapInsert_map_map",
        vec![MAP_TYPE, MAP_TYPE],
        insert_entries,
    )?;
    Ok(())
}

/// The forms of each macro, for the error of a call with another number of arguments.
const ARITIES: [(&str, &str); 7] = [
    ("all", "(var, predicate) or (key, value, predicate)"),
    ("exists", "(var, predicate) or (key, value, predicate)"),
    ("existsOne", "(var, predicate) or (key, value, predicate)"),
    ("exists_one", "(var, predicate) or (key, value, predicate)"),
    (
        "transformList",
        "(key, value, transform) or (key, value, filter, transform)",
    ),
    (
        "transformMap",
        "(key, value, transform) or (key, value, filter, transform)",
    ),
    (
        "transformMapEntry",
        "(key, value, transform) or (key, value, filter, transform)",
    ),
];

/// The error of `name` called with `given` arguments, none of its `forms`.
fn wrong_arity(
    helper: &MacroExprHelper<'_>,
    at: u64,
    name: &str,
    forms: &str,
    given: usize,
) -> ParseError {
    helper.new_error(
        at,
        format!("{name}() takes {forms}, not {given} argument(s)"),
    )
}

/// The two variable names, as cel-go checks them.
fn variables(
    helper: &MacroExprHelper<'_>,
    args: &[IdedExpr],
) -> Result<(String, String), ParseError> {
    let name = |arg: &IdedExpr| match &arg.expr {
        Expr::Ident(name) if name == RESULT || name == "__result__" => {
            Err(helper.new_error(arg.id, "iteration variable overwrites accumulator variable"))
        }
        Expr::Ident(name) => Ok(name.clone()),
        _ => Err(helper.new_error(arg.id, "argument must be a simple name")),
    };
    let (first, second) = (name(&args[0])?, name(&args[1])?);
    if first == second {
        return Err(helper.new_error(args[1].id, format!("duplicate variable name: {first}")));
    }
    Ok((first, second))
}

fn expand(
    kind: Kind,
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<IdedExpr, ParseError> {
    let (key, value) = variables(helper, args)?;
    let mut exprs = args.split_off(2);
    let (Some(target), Some(last)) = (target.take(), exprs.pop()) else {
        // The macro is registered on a receiver with 3 or 4 arguments: both are there.
        return Err(helper.new_error(
            args[1].id,
            "a two-variable comprehension needs a target and an expression",
        ));
    };
    let filter = exprs.pop();
    let with_value = |helper: &mut MacroExprHelper<'_>, expr: IdedExpr| {
        let index = vec![ident(helper, TARGET), ident(helper, &key)];
        let element = call(helper, operators::INDEX, index);
        binding(helper, value.clone(), element, expr)
    };
    let last = with_value(helper, last);
    let filter = filter.map(|f| with_value(helper, f));
    let (init, cond, step, result) = match kind {
        Kind::All => (
            literal(helper, LiteralValue::Boolean(CelBool::from(true))),
            {
                let accu = ident(helper, RESULT);
                call(helper, operators::NOT_STRICTLY_FALSE, vec![accu])
            },
            {
                let accu = ident(helper, RESULT);
                call(helper, operators::LOGICAL_AND, vec![accu, last])
            },
            ident(helper, RESULT),
        ),
        Kind::Exists => (
            literal(helper, LiteralValue::Boolean(CelBool::from(false))),
            {
                let accu = ident(helper, RESULT);
                let not = call(helper, operators::LOGICAL_NOT, vec![accu]);
                call(helper, operators::NOT_STRICTLY_FALSE, vec![not])
            },
            {
                let accu = ident(helper, RESULT);
                call(helper, operators::LOGICAL_OR, vec![accu, last])
            },
            ident(helper, RESULT),
        ),
        Kind::ExistsOne => (
            literal(helper, LiteralValue::Int(CelInt::from(0))),
            literal(helper, LiteralValue::Boolean(CelBool::from(true))),
            {
                let accu = ident(helper, RESULT);
                let one = literal(helper, LiteralValue::Int(CelInt::from(1)));
                let counted = call(helper, operators::ADD, vec![accu, one]);
                let unchanged = ident(helper, RESULT);
                call(
                    helper,
                    operators::CONDITIONAL,
                    vec![last, counted, unchanged],
                )
            },
            {
                let accu = ident(helper, RESULT);
                let one = literal(helper, LiteralValue::Int(CelInt::from(1)));
                call(helper, operators::EQUALS, vec![accu, one])
            },
        ),
        Kind::TransformList | Kind::TransformMap | Kind::TransformMapEntry => {
            let (init, step) = match kind {
                Kind::TransformList => {
                    let init = helper.next_expr(Expr::List(ListExpr::new(Vec::new())));
                    let accu = ident(helper, RESULT);
                    let item = helper.next_expr(Expr::List(ListExpr::new(vec![last])));
                    (init, call(helper, operators::ADD, vec![accu, item]))
                }
                Kind::TransformMap => {
                    let init = helper.next_expr(Expr::Map(MapExpr {
                        entries: Vec::new(),
                    }));
                    let accu = ident(helper, RESULT);
                    let at = ident(helper, &key);
                    (init, call(helper, MAP_INSERT, vec![accu, at, last]))
                }
                _ => {
                    let init = helper.next_expr(Expr::Map(MapExpr {
                        entries: Vec::new(),
                    }));
                    let accu = ident(helper, RESULT);
                    (init, call(helper, MAP_INSERT, vec![accu, last]))
                }
            };
            let step = match filter {
                Some(filter) => {
                    let unchanged = ident(helper, RESULT);
                    call(
                        helper,
                        operators::CONDITIONAL,
                        vec![filter, step, unchanged],
                    )
                }
                None => step,
            };
            (
                init,
                literal(helper, LiteralValue::Boolean(CelBool::from(true))),
                step,
                ident(helper, RESULT),
            )
        }
    };
    let keys = {
        let bound = ident(helper, TARGET);
        call(helper, ITERATION_KEYS, vec![bound])
    };
    let comprehension = helper.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: keys,
        iter_var: key,
        iter_var2: None,
        accu_var: RESULT.to_owned(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    })));
    Ok(binding(helper, TARGET.to_owned(), target, comprehension))
}

fn ident(helper: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    helper.next_expr(Expr::Ident(name.to_owned()))
}

fn literal(helper: &mut MacroExprHelper<'_>, value: LiteralValue) -> IdedExpr {
    helper.next_expr(Expr::Literal(value))
}

fn call(helper: &mut MacroExprHelper<'_>, function: &str, args: Vec<IdedExpr>) -> IdedExpr {
    helper.next_expr(Expr::Call(CallExpr {
        func_name: function.to_owned(),
        target: None,
        args,
    }))
}

/// A list's indices, or a map's keys in order.
fn iteration_keys<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [target] = args.as_slice() else {
        return Err(ExecutionError::function_error(
            "comprehension",
            "expects one target",
        ));
    };
    let keys: Vec<Value> = match Value::try_from(target.as_ref()) {
        Ok(Value::List(items)) => (0..items.len() as i64).map(Value::Int).collect(),
        Ok(Value::Map(map)) => {
            let mut keys: Vec<&Key> = map.map.keys().collect();
            keys.sort();
            keys.into_iter()
                .map(|key| Value::from(key.clone()))
                .collect()
        }
        _ => {
            return Err(ExecutionError::UnexpectedType {
                got: target.get_type().name().to_owned(),
                want: "list or map".to_owned(),
            });
        }
    };
    owned(Value::List(Arc::new(keys)))
}

/// `map` with `key: value` added.
fn insert_entry<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [map, key, value] = args.as_slice() else {
        return Err(no_insert());
    };
    let mut entries = entries(map)?;
    insert(&mut entries, key_of(key)?, Value::try_from(value.as_ref())?)?;
    owned(Value::Map(Map {
        map: Arc::new(entries),
    }))
}

/// `map` with the entries of `update` added.
fn insert_entries<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [map, update] = args.as_slice() else {
        return Err(no_insert());
    };
    let mut entries = entries(map)?;
    for (key, value) in self::entries(update)? {
        insert(&mut entries, key, value)?;
    }
    owned(Value::Map(Map {
        map: Arc::new(entries),
    }))
}

fn no_insert() -> ExecutionError {
    ExecutionError::function_error("transformMapEntry", "expects a map of entries")
}

/// The entries of a map value.
fn entries(map: &CowVal<'_, '_>) -> Result<HashMap<Key, Value>, ExecutionError> {
    match Value::try_from(map.as_ref())? {
        Value::Map(map) => Ok((*map.map).clone()),
        other => Err(ExecutionError::function_error(
            "transformMapEntry",
            format!("the transform must give a map, not {}", other.type_of()),
        )),
    }
}

fn key_of(value: &CowVal<'_, '_>) -> Result<Key, ExecutionError> {
    match Value::try_from(value.as_ref())? {
        Value::Int(n) => Ok(Key::Int(n)),
        Value::UInt(n) => Ok(Key::Uint(n)),
        Value::Bool(b) => Ok(Key::Bool(b)),
        Value::String(s) => Ok(Key::String(s)),
        other => Err(ExecutionError::function_error(
            "transformMap",
            format!("unsupported key type: {}", other.type_of()),
        )),
    }
}

/// Adds `key: value`, failing with cel-go's words if the key is there.
fn insert(entries: &mut HashMap<Key, Value>, key: Key, value: Value) -> Result<(), ExecutionError> {
    if entries.contains_key(&key) {
        let shown = match &key {
            Key::Int(n) => n.to_string(),
            Key::Uint(n) => n.to_string(),
            Key::Bool(b) => b.to_string(),
            Key::String(s) => s.to_string(),
        };
        return Err(ExecutionError::function_error(
            "transformMapEntry",
            format!("insert failed: key {shown} already exists"),
        ));
    }
    entries.insert(key, value);
    Ok(())
}

/// A result as an owned CEL value.
fn owned<'b, 'v>(value: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Box::<dyn Val>::try_from(value).map(CowVal::Owned)
}
