//! `cel.bind(name, init, expr)` (cel-go's bindings extension, in Kubernetes' CEL since
//! 1.28): `expr` with `name` bound to `init`, expanded at parse time into a comprehension
//! over no elements whose accumulator is `name`.

use cel::common::ast::{ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::common::types::CelBool;
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{DeclarationError, Env};

/// Registers the `cel.bind` macro on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_macro(Macro::receiver("bind", 3, expand))
}

fn expand(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let is_cel = matches!(target, Some(IdedExpr { expr: Expr::Ident(name), .. }) if name == "cel");
    if !is_cel || args.len() != 3 {
        return Ok(None);
    }
    let Expr::Ident(name) = &args[0].expr else {
        return Err(helper.new_error(
            args[0].id,
            "cel.bind() variable names must be simple identifiers",
        ));
    };
    let name = name.clone();
    let (Some(result), Some(init)) = (args.pop(), args.pop()) else {
        return Ok(None);
    };
    Ok(Some(binding(helper, name, init, result)))
}

/// `result` with `name` bound to `init`: a comprehension over no elements whose
/// accumulator is `name`.
pub(crate) fn binding(
    helper: &mut MacroExprHelper<'_>,
    name: String,
    init: IdedExpr,
    result: IdedExpr,
) -> IdedExpr {
    let iter_range = helper.next_expr(Expr::List(ListExpr::new(Vec::new())));
    let loop_cond = helper.next_expr(Expr::Literal(LiteralValue::Boolean(CelBool::from(false))));
    let loop_step = helper.next_expr(Expr::Ident(name.clone()));
    helper.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range,
        iter_var: "#unused".to_string(),
        iter_var2: None,
        accu_var: name,
        accu_init: init,
        loop_cond,
        loop_step,
        result,
    })))
}
