//! How the checker's messages name a part of an expression: written back as CEL source
//! for the shapes a message points at (names, field reads, optional reads, indexes, method
//! calls), else "the value".

use cel::common::ast::{Expr, IdedExpr, LiteralValue};

/// The expression as CEL source, when it has one of the shapes messages name.
pub fn render(expr: &IdedExpr) -> Option<String> {
    Some(match &expr.expr {
        Expr::Ident(name) => name.clone(),
        Expr::Select(select) if !select.test => {
            format!("{}.{}", render(&select.operand)?, select.field)
        }
        Expr::Select(select) => format!("has({}.{})", render(&select.operand)?, select.field),
        Expr::Literal(literal) => literal_source(literal)?,
        Expr::Call(call) => match (call.func_name.as_str(), call.args.as_slice(), &call.target) {
            ("_?._", [operand, field], None) => match &field.expr {
                Expr::Literal(LiteralValue::String(field)) => {
                    format!("{}.?{}", render(operand)?, field.inner())
                }
                _ => return None,
            },
            ("_[_]", [operand, index], None) => {
                format!("{}[{}]", render(operand)?, render(index)?)
            }
            ("_[?_]", [operand, index], None) => {
                format!("{}[?{}]", render(operand)?, render(index)?)
            }
            (function, args, Some(target)) => {
                let args: Option<Vec<String>> = args.iter().map(render).collect();
                format!("{}.{function}({})", render(target)?, args?.join(", "))
            }
            (function, args, None) if !function.contains('_') && !function.starts_with('@') => {
                let args: Option<Vec<String>> = args.iter().map(render).collect();
                format!("{function}({})", args?.join(", "))
            }
            _ => return None,
        },
        _ => return None,
    })
}

/// The expression as CEL source, or "the value".
pub fn describe(expr: &IdedExpr) -> String {
    render(expr).unwrap_or_else(|| "the value".to_owned())
}

/// `has(...)` of the field an optional read `a.?b` reads, when it is one.
pub fn presence_test(expr: &IdedExpr) -> Option<String> {
    match &expr.expr {
        Expr::Call(call) if call.func_name == "_?._" && call.target.is_none() => {
            match call.args.as_slice() {
                [operand, field] => match &field.expr {
                    Expr::Literal(LiteralValue::String(field)) => {
                        let operand = render(operand)?;
                        (!operand.contains('?'))
                            .then(|| format!("has({operand}.{})", field.inner()))
                    }
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

fn literal_source(literal: &LiteralValue) -> Option<String> {
    Some(match literal {
        LiteralValue::Boolean(b) => b.inner().to_string(),
        LiteralValue::Int(i) => i.inner().to_string(),
        LiteralValue::UInt(u) => format!("{}u", u.inner()),
        LiteralValue::Double(d) => format!("{:?}", d.inner()),
        LiteralValue::String(s) => quote(s.inner()),
        LiteralValue::Null => "null".into(),
        LiteralValue::Bytes(_) => return None,
    })
}

/// A string literal: single-quoted when that needs no escapes.
pub fn quote(text: &str) -> String {
    if text
        .chars()
        .any(|c| matches!(c, '\'' | '\\') || c.is_control())
    {
        format!("{text:?}")
    } else {
        format!("'{text}'")
    }
}
