//! Kubernetes' CEL list library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`)
//! and cel-go's sets extension (`sets.contains`, `sets.equivalent`, `sets.intersects`).

use std::cmp::Ordering;

use cel::common::types::{CelInt, DYN_TYPE, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

/// Registers the list functions on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list.isSorted()", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list.sum()", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list.min()", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list.max()", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list.indexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list.lastIndexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    for (name, function) in [
        (
            "sets.contains",
            sets_contains as cel::common::functions::Function,
        ),
        ("sets.equivalent", sets_equivalent),
        ("sets.intersects", sets_intersects),
    ] {
        let id = format!("{name}(list,list)");
        env.add_overload(name, &id, vec![LIST_TYPE, LIST_TYPE], function)?;
    }
    Ok(())
}

/// The elements of a list value.
fn items<'a, 'v>(
    function: &str,
    list: &'a (dyn Val + 'v),
) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let iterable = list
        .as_iterable()
        .ok_or_else(|| ExecutionError::function_error(function, "not a list"))?;
    let mut iter = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = iter.next() {
        out.push(item);
    }
    Ok(out)
}

/// The target and the first argument of a member call.
fn target_and_arg<'a, 'b, 'v>(
    function: &str,
    args: &'a [CowVal<'b, 'v>],
) -> Result<(&'a (dyn Val + 'v), Option<&'a (dyn Val + 'v)>), ExecutionError> {
    let target = args
        .first()
        .ok_or_else(|| ExecutionError::function_error(function, "no target"))?;
    Ok((&**target, args.get(1).map(|a| &**a)))
}

fn compare(function: &str, a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    let comparer = a.as_comparer().ok_or_else(|| {
        ExecutionError::function_error(
            function,
            format!("{} is not comparable", a.get_type().name()),
        )
    })?;
    comparer.compare(b)
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, _) = target_and_arg("isSorted", &args)?;
    let items = items("isSorted", list)?;
    for pair in items.windows(2) {
        if compare("isSorted", pair[0], pair[1])? == Ordering::Greater {
            return Ok(CowVal::owned(cel::common::types::CelBool::from(false)));
        }
    }
    Ok(CowVal::owned(cel::common::types::CelBool::from(true)))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, _) = target_and_arg("sum", &args)?;
    let items = items("sum", list)?;
    let Some((first, rest)) = items.split_first() else {
        return Ok(CowVal::owned(CelInt::from(0)));
    };
    let mut total: Box<dyn Val + 'v> = first.clone_as_boxed();
    for item in rest {
        let adder = total.as_adder().ok_or_else(|| {
            ExecutionError::function_error(
                "sum",
                format!("{} cannot be added", item.get_type().name()),
            )
        })?;
        let next = adder.add(*item)?.into_owned().clone_as_boxed();
        total = next;
    }
    Ok(CowVal::from(total))
}

fn extreme<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    keep: Ordering,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, _) = target_and_arg(function, &args)?;
    let items = items(function, list)?;
    let Some((first, rest)) = items.split_first() else {
        return Err(ExecutionError::function_error(
            function,
            format!("{function} called on empty list"),
        ));
    };
    let mut best = *first;
    for item in rest {
        if compare(function, *item, best)? == keep {
            best = *item;
        }
    }
    Ok(CowVal::from(best.clone_as_boxed()))
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme("min", args, Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme("max", args, Ordering::Greater)
}

fn position<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    last: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, wanted) = target_and_arg(function, &args)?;
    let wanted = wanted.ok_or_else(|| ExecutionError::function_error(function, "no argument"))?;
    let items = items(function, list)?;
    let mut found = items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.equals(wanted));
    let index = if last { found.last() } else { found.next() };
    let index = index.map_or(-1, |(i, _)| i as i64);
    Ok(CowVal::owned(CelInt::from(index)))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position("indexOf", args, false)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position("lastIndexOf", args, true)
}

/// The elements of a list argument.
type Items<'a, 'v> = Vec<&'a (dyn Val + 'v)>;

/// The two list arguments of a `sets.*` function.
fn two_lists<'a, 'b, 'v>(
    function: &str,
    args: &'a [CowVal<'b, 'v>],
) -> Result<(Items<'a, 'v>, Items<'a, 'v>), ExecutionError> {
    match args {
        [a, b] => Ok((items(function, &**a)?, items(function, &**b)?)),
        _ => Err(ExecutionError::function_error(
            function,
            "expects two lists",
        )),
    }
}

/// Whether every element of `b` is in `a`.
fn contains_all(a: &[&dyn Val], b: &[&dyn Val]) -> bool {
    b.iter().all(|x| a.iter().any(|y| y.equals(*x)))
}

fn boolean<'b, 'v>(value: bool) -> CowVal<'b, 'v> {
    CowVal::owned(cel::common::types::CelBool::from(value))
}

fn sets_contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists("sets.contains", &args)?;
    Ok(boolean(contains_all(&a, &b)))
}

fn sets_equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists("sets.equivalent", &args)?;
    Ok(boolean(contains_all(&a, &b) && contains_all(&b, &a)))
}

fn sets_intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = two_lists("sets.intersects", &args)?;
    Ok(boolean(b.iter().any(|x| a.iter().any(|y| y.equals(*x)))))
}
