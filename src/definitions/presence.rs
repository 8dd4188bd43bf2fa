//! Which reads may find nothing at run time, and which guards make them safe: `has(a.b)`,
//! `a != null`, combined with `&&`, `||`, `!` and `?:`, in the expression itself, in the
//! `includeWhen` of its step or in the condition of an `if` around it.

use cel::common::ast::{Expr, IdedExpr, LiteralValue};

use super::render::render;

/// The paths (`self.spec.name`, `service`) known to be present where `expr` is `holds`.
pub fn facts(expr: &IdedExpr, holds: bool) -> Vec<String> {
    match &expr.expr {
        Expr::Select(select) if select.test && holds => render(&select.operand)
            .map(|operand| vec![format!("{operand}.{}", select.field)])
            .unwrap_or_default(),
        Expr::Call(call) if call.target.is_none() => {
            match (call.func_name.as_str(), call.args.as_slice(), holds) {
                ("!_", [inner], _) => facts(inner, !holds),
                ("_&&_", [a, b], true) | ("_||_", [a, b], false) => {
                    let mut both = facts(a, holds);
                    both.extend(facts(b, holds));
                    both
                }
                ("@in", [key, map], true) => match (render(key), render(map)) {
                    (Some(key), Some(map)) => vec![format!("{map}[{key}]")],
                    _ => Vec::new(),
                },
                ("_!=_", [a, b], true) | ("_==_", [a, b], false) => {
                    match (is_null(a), is_null(b)) {
                        (false, true) => render(a).into_iter().collect(),
                        (true, false) => render(b).into_iter().collect(),
                        _ => Vec::new(),
                    }
                }
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

fn is_null(expr: &IdedExpr) -> bool {
    matches!(expr.expr, Expr::Literal(LiteralValue::Null))
}

/// Whether `facts` say `path` is present (`has(a.b.c)` says `a.b` is too).
pub fn known(facts: &[String], path: &str) -> bool {
    facts.iter().any(|fact| {
        fact == path
            || fact
                .strip_prefix(path)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    })
}

/// The warning for a read `operand.field` (or `operand[key]`) that may find nothing; `zero`
/// is a default of its type (`{}` for an object, read through with `.?` instead).
pub fn absent_field(path: &str, optional_read: &str, why: &str, zero: &str) -> String {
    let read = match zero {
        "{}" => format!("{optional_read} and what is under it with .?field"),
        _ => format!("{optional_read}.orValue({zero})"),
    };
    format!("{path} may be absent ({why}): read it as {read}, or guard it with has({path})")
}

/// The warning for a read of a step's binding that may be null (the step excluded).
pub fn unbound_step(name: &str, field: &str) -> String {
    format!(
        "{name} may be null here (its step has includeWhen, or is an optional ref): read {name}.?{field}, or guard with {name} != null"
    )
}
