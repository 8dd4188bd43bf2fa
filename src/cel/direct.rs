//! A direct evaluator for the common shapes of CEL conditions, compiled from the syntax tree
//! next to the interpreter's program: fields of `self` and of the variable of an `exists()`
//! or `all()` over a list, literals, `has()`, the comparisons, `&&`, `||`, `!`, and
//! `startsWith`, `endsWith` and `contains` on strings, evaluated over a [`View`] of the
//! resource in place, with no CEL context or value built.
//!
//! It answers only what it knows to be the interpreter's answer: where CEL would fail (a
//! missing field, a type no overload takes, a result not a bool) or a value is not modelled,
//! the answer is [`Unknown`] and the interpreter evaluates the expression, so failures and
//! their messages are CEL's own. As in CEL, `&&` and `||` are commutative over what is not
//! known: `x && false` is false and `x || true` is true whatever `x` is.

use std::cmp::Ordering;

use cel::common::ast::{CallExpr, ComprehensionExpr, Expr, IdedExpr, LiteralValue, operators};

use super::view::{Unknown, View};

/// An expression in the shapes the direct evaluator knows.
#[derive(Debug)]
pub(crate) struct Direct {
    root: Node,
}

/// A part of a direct form, evaluated as the interpreter evaluates its expression.
#[derive(Debug)]
enum Node {
    Literal(Literal),
    /// A variable and the fields selected on it, in order: `self.spec.size`, `c.type`.
    Path(Variable, Box<[String]>),
    /// `has(path.field)`.
    Has(Variable, Box<[String]>, String),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Compare(Comparison, Box<Node>, Box<Node>),
    /// `target.function(argument)` of a string function.
    Strings(StringTest, Box<Node>, Box<Node>),
    /// `range.exists(x, predicate)` or `range.all(x, predicate)`.
    Quantified(Quantifier, Box<Node>, Box<Node>),
}

/// What a path starts from.
#[derive(Clone, Copy, Debug)]
enum Variable {
    /// `self`, the resource.
    Resource,
    /// The element an enclosing `exists()` or `all()` is at: 0 for the innermost.
    Element(usize),
}

/// A literal the direct evaluator compares with (bytes are left to the interpreter).
#[derive(Debug)]
enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    String(String),
}

#[derive(Clone, Copy, Debug)]
enum Comparison {
    Equal,
    NotEqual,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

#[derive(Clone, Copy, Debug)]
enum StringTest {
    StartsWith,
    EndsWith,
    Contains,
}

#[derive(Clone, Copy, Debug)]
enum Quantifier {
    Exists,
    All,
}

/// The resource and the elements of the enclosing `exists()` and `all()`, innermost first.
#[derive(Clone, Copy)]
struct Scope<'s, 'a> {
    resource: View<'a>,
    elements: Option<&'s Elements<'s, 'a>>,
}

struct Elements<'s, 'a> {
    element: View<'a>,
    outer: Option<&'s Elements<'s, 'a>>,
}

impl Direct {
    /// The direct form of an expression over `self`, if all of it has one.
    pub(crate) fn compile(expr: &IdedExpr) -> Option<Self> {
        Some(Self {
            root: Node::compile(expr, &mut Vec::new())?,
        })
    }

    /// The expression's value over `resource` (as `self`), if it is a bool the evaluator
    /// knows to be CEL's.
    pub(crate) fn test(&self, resource: View<'_>) -> Result<bool, Unknown> {
        let scope = Scope {
            resource,
            elements: None,
        };
        self.root.test(scope)
    }
}

impl Node {
    /// `elements` holds the variables of the enclosing macros, outermost first.
    fn compile(expr: &IdedExpr, elements: &mut Vec<String>) -> Option<Self> {
        match &expr.expr {
            Expr::Literal(literal) => Literal::of(literal).map(Node::Literal),
            Expr::Select(select) if select.test => {
                let (variable, fields) = path(&select.operand, elements)?;
                Some(Node::Has(variable, fields.into(), select.field.clone()))
            }
            Expr::Ident(_) | Expr::Select(_) => {
                let (variable, fields) = path(expr, elements)?;
                Some(Node::Path(variable, fields.into()))
            }
            Expr::Call(call) => Node::call(call, elements),
            Expr::Comprehension(comprehension) => Node::quantified(comprehension, elements),
            _ => None,
        }
    }

    fn call(call: &CallExpr, elements: &mut Vec<String>) -> Option<Self> {
        let mut compile = |expr: &IdedExpr| Node::compile(expr, elements).map(Box::new);
        match (call.target.as_deref(), call.args.as_slice()) {
            (None, [operand]) if call.func_name == operators::LOGICAL_NOT => {
                Some(Node::Not(compile(operand)?))
            }
            (None, [lhs, rhs]) => {
                let (lhs, rhs) = (compile(lhs)?, compile(rhs)?);
                match call.func_name.as_str() {
                    operators::LOGICAL_AND => Some(Node::And(lhs, rhs)),
                    operators::LOGICAL_OR => Some(Node::Or(lhs, rhs)),
                    name => Some(Node::Compare(Comparison::of(name)?, lhs, rhs)),
                }
            }
            (Some(target), [argument]) => {
                let test = StringTest::of(&call.func_name)?;
                Some(Node::Strings(test, compile(target)?, compile(argument)?))
            }
            _ => None,
        }
    }

    /// `exists()` and `all()` as the parser expands them: a fold of `||` (or `&&`) over the
    /// predicate, from `false` (or `true`), stopping once the result is `true` (or `false`).
    fn quantified(comprehension: &ComprehensionExpr, elements: &mut Vec<String>) -> Option<Self> {
        let c = comprehension;
        let accumulator =
            |expr: &IdedExpr| matches!(&expr.expr, Expr::Ident(n) if *n == c.accu_var);
        let Expr::Call(step) = &c.loop_step.expr else {
            return None;
        };
        let [folded, predicate] = step.args.as_slice() else {
            return None;
        };
        let quantifier = match (step.func_name.as_str(), &c.accu_init.expr) {
            (operators::LOGICAL_OR, Expr::Literal(LiteralValue::Boolean(b))) if !b.inner() => {
                Quantifier::Exists
            }
            (operators::LOGICAL_AND, Expr::Literal(LiteralValue::Boolean(b))) if *b.inner() => {
                Quantifier::All
            }
            _ => return None,
        };
        let condition = match (
            quantifier,
            unary(&c.loop_cond, operators::NOT_STRICTLY_FALSE),
        ) {
            (Quantifier::Exists, Some(operand)) => unary(operand, operators::LOGICAL_NOT),
            (Quantifier::All, operand) => operand,
            _ => None,
        };
        let shadows = c.iter_var == "self" || elements.contains(&c.iter_var);
        if c.iter_var2.is_some()
            || shadows
            || step.target.is_some()
            || !accumulator(folded)
            || !accumulator(&c.result)
            || !condition.is_some_and(accumulator)
        {
            return None;
        }
        let range = Box::new(Node::compile(&c.iter_range, elements)?);
        elements.push(c.iter_var.clone());
        let predicate = Node::compile(predicate, elements).map(Box::new);
        elements.pop();
        Some(Node::Quantified(quantifier, range, predicate?))
    }

    fn test(&self, scope: Scope<'_, '_>) -> Result<bool, Unknown> {
        self.evaluate(scope)?.as_bool()
    }

    fn evaluate<'a>(&'a self, scope: Scope<'_, 'a>) -> Result<View<'a>, Unknown> {
        match self {
            Node::Literal(literal) => Ok(literal.view()),
            Node::Path(variable, fields) => scope.path(*variable, fields),
            Node::Has(variable, fields, field) => {
                let operand = scope.path(*variable, fields)?;
                Ok(View::Bool(operand.field(field)?.is_some()))
            }
            Node::Not(operand) => Ok(View::Bool(!operand.test(scope)?)),
            Node::And(lhs, rhs) => logical(false, lhs, rhs, scope).map(View::Bool),
            Node::Or(lhs, rhs) => logical(true, lhs, rhs, scope).map(View::Bool),
            Node::Compare(comparison, lhs, rhs) => {
                let (lhs, rhs) = (lhs.evaluate(scope)?, rhs.evaluate(scope)?);
                comparison.apply(lhs, rhs).map(View::Bool)
            }
            Node::Strings(test, target, argument) => {
                let target = target.evaluate(scope)?.as_str()?;
                let argument = argument.evaluate(scope)?.as_str()?;
                Ok(View::Bool(test.apply(target, argument)))
            }
            Node::Quantified(quantifier, range, predicate) => {
                let View::List(items) = range.evaluate(scope)? else {
                    return Err(Unknown);
                };
                let decisive = matches!(quantifier, Quantifier::Exists);
                for item in items {
                    let elements = Elements {
                        element: View::of_json(item),
                        outer: scope.elements,
                    };
                    let inner = Scope {
                        resource: scope.resource,
                        elements: Some(&elements),
                    };
                    if predicate.test(inner)? == decisive {
                        return Ok(View::Bool(decisive));
                    }
                }
                Ok(View::Bool(!decisive))
            }
        }
    }
}

impl<'a> Scope<'_, 'a> {
    /// The value at `fields` of `variable`; a missing field is not known (an error in CEL).
    fn path(self, variable: Variable, fields: &[String]) -> Result<View<'a>, Unknown> {
        let mut value = match variable {
            Variable::Resource => self.resource,
            Variable::Element(depth) => {
                let mut elements = self.elements;
                for _ in 0..depth {
                    elements = elements.and_then(|e| e.outer);
                }
                elements.ok_or(Unknown)?.element
            }
        };
        for field in fields {
            value = value.field(field)?.ok_or(Unknown)?;
        }
        Ok(value)
    }
}

/// A variable (`self` or that of an enclosing macro) and the fields selected on it, if
/// `expr` is one: `self.spec.size` is `self` and `[spec, size]`.
fn path(expr: &IdedExpr, elements: &[String]) -> Option<(Variable, Vec<String>)> {
    match &expr.expr {
        Expr::Ident(name) => match elements.iter().rev().position(|e| e == name) {
            Some(depth) => Some((Variable::Element(depth), Vec::new())),
            None if name == "self" => Some((Variable::Resource, Vec::new())),
            None => None,
        },
        Expr::Select(select) if !select.test => {
            let (variable, mut fields) = path(&select.operand, elements)?;
            fields.push(select.field.clone());
            Some((variable, fields))
        }
        _ => None,
    }
}

/// `lhs && rhs` (`decisive` false) or `lhs || rhs` (`decisive` true): the decisive value on
/// either side decides, even if the other is not known.
fn logical(decisive: bool, lhs: &Node, rhs: &Node, scope: Scope<'_, '_>) -> Result<bool, Unknown> {
    let lhs = lhs.test(scope);
    if lhs == Ok(decisive) {
        return lhs;
    }
    match (lhs, rhs.test(scope)) {
        (_, Ok(rhs)) if rhs == decisive => Ok(decisive),
        (Ok(_), rhs) => rhs,
        (Err(unknown), _) => Err(unknown),
    }
}

/// The operand of `function(operand)`, a call of a global function of one argument.
fn unary<'e>(expr: &'e IdedExpr, function: &str) -> Option<&'e IdedExpr> {
    match &expr.expr {
        Expr::Call(call) if call.func_name == function && call.target.is_none() => {
            match call.args.as_slice() {
                [operand] => Some(operand),
                _ => None,
            }
        }
        _ => None,
    }
}

impl Literal {
    fn of(literal: &LiteralValue) -> Option<Self> {
        Some(match literal {
            LiteralValue::Null => Literal::Null,
            LiteralValue::Boolean(b) => Literal::Bool(*b.inner()),
            LiteralValue::Int(i) => Literal::Int(*i.inner()),
            LiteralValue::UInt(u) => Literal::UInt(*u.inner()),
            LiteralValue::Double(d) => Literal::Double(*d.inner()),
            LiteralValue::String(s) => Literal::String(s.inner().to_owned()),
            LiteralValue::Bytes(_) => return None,
        })
    }

    fn view(&self) -> View<'_> {
        match self {
            Literal::Null => View::Null,
            Literal::Bool(b) => View::Bool(*b),
            Literal::Int(i) => View::Int(*i),
            Literal::UInt(u) => View::UInt(*u),
            Literal::Double(d) => View::Double(*d),
            Literal::String(s) => View::String(s),
        }
    }
}

impl Comparison {
    fn of(function: &str) -> Option<Self> {
        Some(match function {
            operators::EQUALS => Comparison::Equal,
            operators::NOT_EQUALS => Comparison::NotEqual,
            operators::LESS => Comparison::Less,
            operators::LESS_EQUALS => Comparison::LessOrEqual,
            operators::GREATER => Comparison::Greater,
            operators::GREATER_EQUALS => Comparison::GreaterOrEqual,
            _ => return None,
        })
    }

    fn apply(self, lhs: View<'_>, rhs: View<'_>) -> Result<bool, Unknown> {
        Ok(match self {
            Comparison::Equal => lhs.equals(rhs)?,
            Comparison::NotEqual => !lhs.equals(rhs)?,
            Comparison::Less => lhs.compare(rhs)? == Ordering::Less,
            Comparison::LessOrEqual => lhs.compare(rhs)? != Ordering::Greater,
            Comparison::Greater => lhs.compare(rhs)? == Ordering::Greater,
            Comparison::GreaterOrEqual => lhs.compare(rhs)? != Ordering::Less,
        })
    }
}

impl StringTest {
    fn of(function: &str) -> Option<Self> {
        Some(match function {
            "startsWith" => StringTest::StartsWith,
            "endsWith" => StringTest::EndsWith,
            "contains" => StringTest::Contains,
            _ => return None,
        })
    }

    fn apply(self, target: &str, argument: &str) -> bool {
        match self {
            StringTest::StartsWith => target.starts_with(argument),
            StringTest::EndsWith => target.ends_with(argument),
            StringTest::Contains => target.contains(argument),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(source: &str) -> Option<Direct> {
        let program = super::super::env().unwrap().compile(source).unwrap();
        Direct::compile(program.expression())
    }

    #[test]
    fn the_common_shapes_have_a_direct_form() {
        for source in [
            "self.spec.size > 2",
            "has(self.status.ready) && self.status.ready",
            "!has(self.spec.x) || self.spec.x != null",
            "self.metadata.name.startsWith('a') && self.kind == 'Widget'",
            "self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
            "self.spec.items.all(i, i.tags.exists(t, t == i.name))",
            "self.spec.ratio >= 0.5 || self.spec.count < 3u || self.spec.x == null",
        ] {
            assert!(compile(source).is_some(), "{source}");
        }
    }

    #[test]
    fn other_shapes_are_left_to_the_interpreter() {
        for source in [
            "self.spec.size + 1 > 2",
            "size(self.spec.items) > 0",
            "self.metadata.labels['app'] == 'a'",
            "self.spec.?size.orValue(1) == 1",
            "now > timestamp('2026-01-01T00:00:00Z')",
            "other.spec.size > 2",
            "self.spec.x == b'a'",
            "self.spec.x ? true : false",
            "'a' in self.spec.list",
            "self.spec.items.exists_one(i, i.ok)",
            "self.spec.items.map(i, i.size).exists(s, s > 1)",
            "self.spec.items.exists(self, self.ok)",
            "self.spec.items.exists(i, self.spec.more.exists(i, i.ok))",
            "self.metadata.name.matches('^a')",
        ] {
            assert!(compile(source).is_none(), "{source}");
        }
    }
}
