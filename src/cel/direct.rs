//! A direct evaluator for the common shapes of CEL conditions and template expressions,
//! compiled from the syntax tree next to the interpreter's program: fields of the variables
//! (`self`, or for a template any binding) and of the variable of an `exists()` or `all()`
//! over a list, literals, `has()`, the comparisons, `&&`, `||`, `!`, `? :`, `startsWith`,
//! `endsWith` and `contains` on strings, optional fields (`x.?f`) with `orValue()`,
//! `string()`, `int()`, `size()` and `+` (see `computed`), evaluated over a [`View`] of the
//! resource in place, with no CEL context or value built.
//!
//! It answers only what it knows to be the interpreter's answer: where CEL would fail (a
//! missing field, a type no overload takes, a result not a bool) or a value is not modelled,
//! the answer is [`Unknown`] and the interpreter evaluates the expression, so failures and
//! their messages are CEL's own. As in CEL, `&&` and `||` are commutative over what is not
//! known: `x && false` is false and `x || true` is true whatever `x` is.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use cel::common::ast::{CallExpr, ComprehensionExpr, Expr, IdedExpr, LiteralValue, operators};
use serde_json::Value as Json;

use super::computed::{Computed, Conversion, add, size};
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
    /// `condition ? then : otherwise`.
    Conditional(Box<Node>, Box<Node>, Box<Node>),
    /// `operand.?field`.
    OptionalField(Box<Node>, String),
    /// `optional.orValue(default)`.
    OrValue(Box<Node>, Box<Node>),
    /// `string(x)` or `int(x)`.
    Convert(Conversion, Box<Node>),
    /// `size(x)` or `x.size()`.
    Size(Box<Node>),
    /// `lhs + rhs`.
    Add(Box<Node>, Box<Node>),
}

/// What a path starts from.
#[derive(Clone, Debug)]
enum Variable {
    /// A variable of the expression's environment: `self`, or a binding of a template.
    Free(String),
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

/// Which free variables a direct form may read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Free {
    /// Only `self` (a condition over a resource).
    Resource,
    /// Any name but `now` (a template's expression over its bindings).
    Bindings,
}

/// What compiling a direct form knows of where it is.
struct Compiler {
    free: Free,
    /// The variables of the enclosing macros, outermost first.
    elements: Vec<String>,
}

/// The values of the free variables.
#[derive(Clone, Copy)]
enum Variables<'a> {
    /// `self`.
    Resource(View<'a>),
    /// A template's bindings, as JSON.
    Bindings(&'a BTreeMap<String, Arc<Json>>),
}

/// The free variables and the elements of the enclosing `exists()` and `all()`, innermost
/// first.
#[derive(Clone, Copy)]
struct Scope<'s, 'a> {
    variables: Variables<'a>,
    elements: Option<&'s Elements<'s, 'a>>,
}

struct Elements<'s, 'a> {
    element: View<'a>,
    outer: Option<&'s Elements<'s, 'a>>,
}

impl Direct {
    /// The direct form of a condition over `self`, if all of it has one.
    pub(crate) fn compile(expr: &IdedExpr) -> Option<Self> {
        Self::compile_with(expr, Free::Resource)
    }

    /// The direct form of a template's expression over its bindings, if all of it has one.
    pub(crate) fn compile_over_bindings(expr: &IdedExpr) -> Option<Self> {
        Self::compile_with(expr, Free::Bindings)
    }

    fn compile_with(expr: &IdedExpr, free: Free) -> Option<Self> {
        let mut compiler = Compiler {
            free,
            elements: Vec::new(),
        };
        Some(Self {
            root: compiler.compile(expr)?,
        })
    }

    /// The expression's value over `resource` (as `self`), if it is a bool the evaluator
    /// knows to be CEL's.
    pub(crate) fn test(&self, resource: View<'_>) -> Result<bool, Unknown> {
        let scope = Scope {
            variables: Variables::Resource(resource),
            elements: None,
        };
        self.root.test(scope)
    }

    /// The expression's value over `bindings` as the interpreter's result is written as
    /// JSON, if it is a scalar the evaluator knows to be CEL's.
    pub(crate) fn value(&self, bindings: &BTreeMap<String, Arc<Json>>) -> Result<Json, Unknown> {
        let scope = Scope {
            variables: Variables::Bindings(bindings),
            elements: None,
        };
        self.root.evaluate(scope)?.into_json()
    }
}

impl Compiler {
    fn compile(&mut self, expr: &IdedExpr) -> Option<Node> {
        match &expr.expr {
            Expr::Literal(literal) => Literal::of(literal).map(Node::Literal),
            Expr::Select(select) if select.test => {
                let (variable, fields) = self.path(&select.operand)?;
                Some(Node::Has(variable, fields.into(), select.field.clone()))
            }
            Expr::Ident(_) | Expr::Select(_) => {
                let (variable, fields) = self.path(expr)?;
                Some(Node::Path(variable, fields.into()))
            }
            Expr::Call(call) => self.call(call),
            Expr::Comprehension(comprehension) => self.quantified(comprehension),
            _ => None,
        }
    }

    fn boxed(&mut self, expr: &IdedExpr) -> Option<Box<Node>> {
        self.compile(expr).map(Box::new)
    }

    fn call(&mut self, call: &CallExpr) -> Option<Node> {
        let function = call.func_name.as_str();
        match (call.target.as_deref(), call.args.as_slice()) {
            (None, [operand]) => {
                let operand = self.boxed(operand)?;
                match function {
                    operators::LOGICAL_NOT => Some(Node::Not(operand)),
                    "size" => Some(Node::Size(operand)),
                    _ => Some(Node::Convert(Conversion::of(function)?, operand)),
                }
            }
            (None, [operand, field]) if function == operators::OPT_SELECT => {
                let Expr::Literal(LiteralValue::String(field)) = &field.expr else {
                    return None;
                };
                let field = field.inner().to_owned();
                Some(Node::OptionalField(self.boxed(operand)?, field))
            }
            (None, [lhs, rhs]) => {
                let (lhs, rhs) = (self.boxed(lhs)?, self.boxed(rhs)?);
                match function {
                    operators::LOGICAL_AND => Some(Node::And(lhs, rhs)),
                    operators::LOGICAL_OR => Some(Node::Or(lhs, rhs)),
                    operators::ADD => Some(Node::Add(lhs, rhs)),
                    name => Some(Node::Compare(Comparison::of(name)?, lhs, rhs)),
                }
            }
            (None, [condition, then, otherwise]) if function == operators::CONDITIONAL => {
                let condition = self.boxed(condition)?;
                Some(Node::Conditional(
                    condition,
                    self.boxed(then)?,
                    self.boxed(otherwise)?,
                ))
            }
            (Some(target), []) if function == "size" => Some(Node::Size(self.boxed(target)?)),
            (Some(target), [argument]) if function == "orValue" => {
                Some(Node::OrValue(self.boxed(target)?, self.boxed(argument)?))
            }
            (Some(target), [argument]) => {
                let test = StringTest::of(function)?;
                Some(Node::Strings(
                    test,
                    self.boxed(target)?,
                    self.boxed(argument)?,
                ))
            }
            _ => None,
        }
    }

    /// `exists()` and `all()` as the parser expands them: a fold of `||` (or `&&`) over the
    /// predicate, from `false` (or `true`), stopping once the result is `true` (or `false`).
    fn quantified(&mut self, comprehension: &ComprehensionExpr) -> Option<Node> {
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
        let shadows = c.iter_var == "self" || self.elements.contains(&c.iter_var);
        if c.iter_var2.is_some()
            || shadows
            || step.target.is_some()
            || !accumulator(folded)
            || !accumulator(&c.result)
            || !condition.is_some_and(accumulator)
        {
            return None;
        }
        let range = self.boxed(&c.iter_range)?;
        self.elements.push(c.iter_var.clone());
        let predicate = self.boxed(predicate);
        self.elements.pop();
        Some(Node::Quantified(quantifier, range, predicate?))
    }

    /// Whether `name` is a free variable the direct form may read.
    fn is_free(&self, name: &str) -> bool {
        match self.free {
            Free::Resource => name == "self",
            Free::Bindings => name != "now",
        }
    }

    /// A variable and the fields selected on it, if `expr` is one: `self.spec.size` is
    /// `self` and `[spec, size]`.
    fn path(&self, expr: &IdedExpr) -> Option<(Variable, Vec<String>)> {
        match &expr.expr {
            Expr::Ident(name) => match self.elements.iter().rev().position(|e| e == name) {
                Some(depth) => Some((Variable::Element(depth), Vec::new())),
                None if self.is_free(name) => Some((Variable::Free(name.clone()), Vec::new())),
                None => None,
            },
            Expr::Select(select) if !select.test => {
                let (variable, mut fields) = self.path(&select.operand)?;
                fields.push(select.field.clone());
                Some((variable, fields))
            }
            _ => None,
        }
    }
}

impl Node {
    fn test(&self, scope: Scope<'_, '_>) -> Result<bool, Unknown> {
        self.evaluate(scope)?.view()?.as_bool()
    }

    fn evaluate<'a>(&'a self, scope: Scope<'_, 'a>) -> Result<Computed<'a>, Unknown> {
        let view = |view| Ok(Computed::View(view));
        match self {
            Node::Literal(literal) => view(literal.view()),
            Node::Path(variable, fields) => scope.path(variable, fields).map(Computed::View),
            Node::Has(variable, fields, field) => {
                let operand = scope.path(variable, fields)?;
                view(View::Bool(operand.field(field)?.is_some()))
            }
            Node::Not(operand) => view(View::Bool(!operand.test(scope)?)),
            Node::And(lhs, rhs) => view(View::Bool(logical(false, lhs, rhs, scope)?)),
            Node::Or(lhs, rhs) => view(View::Bool(logical(true, lhs, rhs, scope)?)),
            Node::Compare(comparison, lhs, rhs) => {
                let (lhs, rhs) = (lhs.evaluate(scope)?, rhs.evaluate(scope)?);
                view(View::Bool(comparison.apply(lhs.view()?, rhs.view()?)?))
            }
            Node::Strings(test, target, argument) => {
                let (target, argument) = (target.evaluate(scope)?, argument.evaluate(scope)?);
                let (target, argument) = (target.view()?.as_str()?, argument.view()?.as_str()?);
                view(View::Bool(test.apply(target, argument)))
            }
            Node::Quantified(quantifier, range, predicate) => {
                let Computed::View(View::List(items)) = range.evaluate(scope)? else {
                    return Err(Unknown);
                };
                view(View::Bool(quantify(*quantifier, items, predicate, scope)?))
            }
            Node::Conditional(condition, then, otherwise) => match condition.test(scope)? {
                true => then.evaluate(scope),
                false => otherwise.evaluate(scope),
            },
            Node::OptionalField(operand, field) => operand.evaluate(scope)?.optional_field(field),
            Node::OrValue(optional, default) => {
                let optional = optional.evaluate(scope)?;
                optional.or_value(default.evaluate(scope)?)
            }
            Node::Convert(conversion, operand) => conversion.apply(operand.evaluate(scope)?),
            Node::Size(operand) => view(View::Int(size(&operand.evaluate(scope)?)?)),
            Node::Add(lhs, rhs) => add(lhs.evaluate(scope)?, &rhs.evaluate(scope)?),
        }
    }
}

/// `exists()` (or `all()`) of `predicate` over `items`: whether it holds for any (or all).
fn quantify<'a>(
    quantifier: Quantifier,
    items: &'a [Json],
    predicate: &'a Node,
    scope: Scope<'_, 'a>,
) -> Result<bool, Unknown> {
    let decisive = matches!(quantifier, Quantifier::Exists);
    for item in items {
        let elements = Elements {
            element: View::of_json(item),
            outer: scope.elements,
        };
        let inner = Scope {
            variables: scope.variables,
            elements: Some(&elements),
        };
        if predicate.test(inner)? == decisive {
            return Ok(decisive);
        }
    }
    Ok(!decisive)
}

impl<'a> Scope<'_, 'a> {
    /// The value at `fields` of `variable`; a missing field is not known (an error in CEL).
    fn path(self, variable: &Variable, fields: &[String]) -> Result<View<'a>, Unknown> {
        let mut value = match variable {
            Variable::Free(name) => self.variables.get(name)?,
            Variable::Element(depth) => {
                let mut elements = self.elements;
                for _ in 0..*depth {
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

impl<'a> Variables<'a> {
    /// The free variable `name`; one not bound is not known (an error in CEL).
    fn get(self, name: &str) -> Result<View<'a>, Unknown> {
        match self {
            Variables::Resource(resource) if name == "self" => Ok(resource),
            Variables::Resource(_) => Err(Unknown),
            Variables::Bindings(bindings) => {
                bindings.get(name).map(|v| View::of_json(v)).ok_or(Unknown)
            }
        }
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
            "self.spec.size + 1 > 2",
            "size(self.spec.items) > 0",
            "self.spec.?size.orValue(1) == 1",
            "self.spec.x ? true : false",
        ] {
            assert!(compile(source).is_some(), "{source}");
        }
    }

    #[test]
    fn other_shapes_are_left_to_the_interpreter() {
        for source in [
            "self.metadata.labels['app'] == 'a'",
            "now > timestamp('2026-01-01T00:00:00Z')",
            "other.spec.size > 2",
            "self.spec.x == b'a'",
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

    /// The values of a template's bindings the differential test evaluates over.
    fn bindings() -> Vec<BTreeMap<String, Arc<Json>>> {
        let widgets = [
            serde_json::json!({"metadata": {"name": "w1", "namespace": "ns",
                "labels": {"app": "a", "tier": "web"}},
                "spec": {"greeting": "hi", "size": 3, "ratio": 0.5, "on": true, "big": 18446744073709551615u64,
                    "tags": ["x", "y"], "env": {"A": "1"}, "none": null, "empty": "", "text": "42",
                    "unicode": "héllo", "items": [{"name": "a", "ok": true}, {"name": "b", "ok": false}]}}),
            serde_json::json!({"metadata": {"name": "w2"}, "spec": {"greeting": "", "size": -7,
                "text": "+5", "ratio": 2}}),
            serde_json::json!({"metadata": {"name": "w3"}, "spec": {"size": 9223372036854775807u64,
                "greeting": 1, "text": "x"}}),
            serde_json::json!({"metadata": {"name": "w4"}, "spec": null}),
            serde_json::json!({"metadata": {"name": "w5"}, "spec": "text"}),
            serde_json::json!({"metadata": {"name": "w6"}}),
        ];
        let config_map = serde_json::json!({"data": {"size": "3", "greeting": "hello"}});
        widgets
            .into_iter()
            .map(|widget| {
                BTreeMap::from([
                    ("self".to_owned(), Arc::new(widget)),
                    ("configMap".to_owned(), Arc::new(config_map.clone())),
                    (
                        "each".to_owned(),
                        Arc::new(serde_json::json!({"name": "e", "port": 80})),
                    ),
                ])
            })
            .collect()
    }

    /// What the interpreter makes of `source` over `bindings`, as a template writes it.
    fn interpret(source: &str, bindings: &BTreeMap<String, Arc<Json>>) -> Result<Json, String> {
        let env = super::super::env().unwrap();
        let program = env.compile(source).unwrap();
        let reads = super::super::VariableReads::of(program.expression());
        let mut ctx = cel::Context::with_env(env);
        for name in reads.names() {
            if let Some(value) = bindings.get(name) {
                reads.bind_json(&mut ctx, name, value);
            }
        }
        let value = program
            .execute(&ctx)
            .map_err(|e| super::super::describe(&e))?;
        super::super::to_json(&value)
    }

    #[test]
    fn template_expressions_evaluate_as_the_interpreter_does() {
        let sources = [
            // The widgets definition's template.
            "self.metadata.name",
            "has(self.spec) && has(self.spec.greeting) && self.spec.greeting != '' ? self.spec.greeting : 'hello'",
            "string(self.?spec.?size.orValue(1))",
            // Field chains, of every binding.
            "self.spec.size",
            "self.spec.ratio",
            "self.spec.on",
            "self.spec.none",
            "self.spec.big",
            "self.spec.missing",
            "self.spec.tags",
            "self.spec.env",
            "self.metadata.labels.app",
            "configMap.data.size",
            "each.port",
            "each.name + '-' + self.metadata.name",
            "missing.x",
            // Optional chains.
            "self.?spec.?size.orValue(1)",
            "self.?spec.?greeting.orValue('none')",
            "self.?spec.?tags.orValue([])",
            "self.spec.?missing.orValue(0)",
            "self.?spec.?size.?deeper.orValue(5)",
            "self.?metadata.?labels.?tier.orValue('none')",
            "self.?spec.?size.orValue(self.spec.missing)",
            "self.?spec.?size",
            // Conversions.
            "string(self.spec.size)",
            "string(self.spec.big)",
            "string(self.spec.on)",
            "string(self.spec.ratio)",
            "string(self.spec.none)",
            "string(self.spec.greeting)",
            "int(self.spec.text)",
            "int(self.spec.size)",
            "int(self.spec.big)",
            "int(self.spec.ratio)",
            "int(self.spec.greeting)",
            "string(int(configMap.data.size) + 1)",
            // Concatenation and arithmetic.
            "self.metadata.name + '-config'",
            "'a' + self.spec.greeting + 'b'",
            "self.spec.size + 1",
            "self.spec.size + self.spec.size",
            "self.spec.size + 'x'",
            "self.spec.big + 1",
            "self.spec.size + 9223372036854775807",
            "self.spec.tags + ['z']",
            // Conditionals over comparisons.
            "self.spec.size > 2 ? 'big' : 'small'",
            "self.spec.size == 3 ? self.spec.size : 0",
            "self.spec.greeting == '' ? 'hello' : self.spec.greeting",
            "self.spec.size ? 'a' : 'b'",
            "self.spec.ratio >= 1 ? 'x' : string(self.spec.size)",
            "has(self.spec.size) ? self.spec.size : 1",
            "self.spec.on && self.spec.size > 1 ? 'yes' : 'no'",
            "self.spec.missing == 1 || true ? 'a' : 'b'",
            "self.spec.greeting.startsWith('h') ? 'h' : 'other'",
            // Sizes.
            "size(self.spec.tags)",
            "size(self.spec.env)",
            "size(self.spec.unicode)",
            "self.spec.greeting.size()",
            "size(self.metadata.labels)",
            "size(self.spec.size)",
            "size(self.spec) > 0 ? 'some' : 'none'",
            // has(), and macros.
            "has(self.spec.greeting)",
            "has(self.spec.size.x)",
            "has(self.metadata.labels.app)",
            "self.spec.items.exists(i, i.ok) ? 'ok' : 'none'",
            "self.spec.items.all(i, i.name != '') && has(self.spec.items)",
        ];
        let mut direct_answers = 0;
        for source in sources {
            let program = super::super::env().unwrap().compile(source).unwrap();
            let direct = Direct::compile_over_bindings(program.expression());
            for bindings in bindings() {
                let interpreted = interpret(source, &bindings);
                let Some(Ok(value)) = direct.as_ref().map(|d| d.value(&bindings)) else {
                    continue;
                };
                direct_answers += 1;
                assert_eq!(
                    Ok(&value),
                    interpreted.as_ref(),
                    "{source} over {bindings:?}"
                );
            }
        }
        // Most shapes over most bindings are answered directly, so the comparison is real.
        assert!(direct_answers > 140, "{direct_answers} direct answers");
    }

    #[test]
    fn the_widgets_template_is_evaluated_directly() {
        let widget = &bindings()[0];
        for source in [
            "has(self.spec) && has(self.spec.greeting) && self.spec.greeting != '' ? self.spec.greeting : 'hello'",
            "string(self.?spec.?size.orValue(1))",
        ] {
            let program = super::super::env().unwrap().compile(source).unwrap();
            let direct = Direct::compile_over_bindings(program.expression()).expect(source);
            assert!(direct.value(widget).is_ok(), "{source}");
        }
        // `now` is not read directly.
        let program = super::super::env().unwrap().compile("string(now)").unwrap();
        assert!(Direct::compile_over_bindings(program.expression()).is_none());
    }
}
