//! Type-checks expressions and templates at load: every name an expression reads must be a
//! binding in scope, every field it selects must exist in the schema of what it reads
//! (unless the schema leaves the place open), conditions must be bools, lists lists, and a
//! template's values must have the types its kind's schema asks for.

use std::collections::{BTreeMap, BTreeSet};

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use super::error::DefinitionError;
use super::expr::{Expression, Template, Text, field_path};
use super::presence::{absent_field, facts, known, unbound_step};
use super::render::{describe, presence_test, render};
use super::schema::{Field, Schema};
use super::ty::{Ty, same};

/// The bindings an expression may read, with their types.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    vars: BTreeMap<String, Ty>,
    /// Bindings that may be null (of steps with `includeWhen`, optional refs).
    maybe_null: BTreeSet<String>,
    /// Paths known present here (guarded by an `includeWhen` or an `if`).
    facts: Vec<String>,
    /// Whether the step checked here is excluded when a binding it reads is null (instead
    /// of failing), so such reads are not warned about.
    excludes_dependents: bool,
    /// Whether KRO's `runtime` library is bound (in a custom status condition only).
    runtime: bool,
}

impl Scope {
    /// The same scope with `name` bound to a value of type `ty`.
    pub fn with(&self, name: &str, ty: Ty) -> Scope {
        let mut scope = self.clone();
        scope.bind(name, ty);
        scope
    }

    /// Binds `name` in this scope.
    pub fn bind(&mut self, name: &str, ty: Ty) {
        self.vars.insert(name.to_owned(), ty);
        self.maybe_null.remove(name);
    }

    /// Binds `name` to a value of type `ty`, or null.
    pub fn bind_maybe_null(&mut self, name: &str, ty: Ty) {
        self.bind(name, ty);
        self.maybe_null.insert(name.to_owned());
    }

    /// The same scope, for a step excluded when a binding it reads is null.
    pub fn excluding_dependents(&self) -> Scope {
        Scope {
            excludes_dependents: true,
            ..self.clone()
        }
    }

    /// Knows `paths` present here (what a child's template sets, on its binding).
    pub fn know(&mut self, paths: impl IntoIterator<Item = String>) {
        self.facts.extend(paths);
    }

    /// The same scope where `condition` is known to be `holds`.
    pub fn given(&self, condition: &Expression, holds: bool) -> Scope {
        let mut scope = self.clone();
        scope.facts.extend(facts(condition.ast(), holds));
        scope
    }

    /// The same scope with KRO's `runtime` library bound (for KRO's custom conditions).
    pub fn with_runtime(&self) -> Scope {
        Scope {
            runtime: true,
            ..self.clone()
        }
    }

    /// The schema of `self`, when known.
    pub fn self_schema(&self) -> Option<Schema> {
        match self.vars.get("self") {
            Some(Ty::Object(schema)) => Some(schema.clone()),
            _ => None,
        }
    }

    /// Whether `name` is bound.
    pub fn has(&self, name: &str) -> bool {
        self.vars.contains_key(name)
    }
}

/// An error at an expression node, before it is given its path and position.
struct NodeError {
    id: u64,
    message: String,
}

/// The type of `expression` in `scope`, or why it is wrong; a read that may find nothing
/// at run time (the first of the expression) is added to `found`'s warnings, and the
/// bindings that may be null it reads plainly in a step that excludes its dependents to its
/// `needs`.
pub fn check(
    expression: &Expression,
    scope: &Scope,
    found: &mut Findings,
) -> Result<Ty, DefinitionError> {
    let mut checker = Checker {
        scope,
        locals: Vec::new(),
        facts: scope.facts.clone(),
        absent: None,
        needs: BTreeSet::new(),
    };
    let ty = checker
        .infer(expression.ast())
        .map_err(|e| located(expression, e))?;
    found
        .warnings
        .extend(checker.absent.map(|e| located(expression, e)));
    found.needs.extend(checker.needs);
    Ok(ty)
}

/// A node's message as an error of the expression, with its position.
fn located(expression: &Expression, e: NodeError) -> DefinitionError {
    let error = DefinitionError::about(expression.path(), expression.source(), e.message);
    match expression.position_of(e.id) {
        Some((line, column)) => error.at_position(line, column),
        None => error,
    }
}

/// Checks that `expression` is a bool condition.
pub fn check_condition(
    expression: &Expression,
    scope: &Scope,
    found: &mut Findings,
) -> Result<(), DefinitionError> {
    expect(
        expression,
        scope,
        found,
        |t| matches!(t, Ty::Bool | Ty::Dyn),
        "a bool",
    )
}

/// Checks that `expression` yields a list, and returns the type of its items.
pub fn check_list(
    expression: &Expression,
    scope: &Scope,
    found: &mut Findings,
) -> Result<Ty, DefinitionError> {
    match check(expression, scope, found)? {
        Ty::List(items) => Ok(*items),
        Ty::Dyn => Ok(Ty::Dyn),
        other => Err(DefinitionError::about(
            expression.path(),
            expression.source(),
            format!(
                "expected a list, the expression yields {}{}",
                other.describe(),
                unwrap_hint(&other)
            ),
        )),
    }
}

fn expect(
    expression: &Expression,
    scope: &Scope,
    found: &mut Findings,
    ok: impl Fn(&Ty) -> bool,
    wanted: &str,
) -> Result<(), DefinitionError> {
    let ty = check(expression, scope, found)?;
    if ok(&ty) {
        return Ok(());
    }
    Err(DefinitionError::about(
        expression.path(),
        expression.source(),
        format!(
            "expected {wanted}, the expression yields {}{}",
            ty.describe(),
            unwrap_hint(&ty)
        ),
    ))
}

/// For an optional: how to take its value.
fn unwrap_hint(ty: &Ty) -> String {
    match ty {
        Ty::Optional(inner) => format!(" (take its value with .orValue({}))", inner.zero()),
        _ => String::new(),
    }
}

/// What checking a template finds.
#[derive(Default)]
pub struct Findings {
    /// What is wrong.
    pub errors: Vec<DefinitionError>,
    /// Reads that may find nothing at run time.
    pub warnings: Vec<DefinitionError>,
    /// Bindings that may be null which the step reads (it is excluded when one is null).
    pub needs: BTreeSet<String>,
}

/// Checks a template against the schema of what it builds (`None`: unknown, only the
/// expressions are checked).
pub fn check_template(
    template: &Template,
    schema: Option<&Schema>,
    path: &str,
    scope: &Scope,
    found: &mut Findings,
) {
    match template {
        Template::Map(fields) => {
            if let Some(schema) = schema
                && !matches!(schema.type_name().as_deref(), None | Some("object"))
            {
                found.errors.push(mismatch(path, schema, "a map"));
                return;
            }
            for (name, value) in fields {
                let field = field_path(path, name);
                let inner = match schema.map(|s| s.field(name)) {
                    None | Some(Field::Open(None)) => None,
                    Some(Field::Known(s) | Field::Open(Some(s))) => Some(s),
                    Some(Field::Unknown(known)) => {
                        found.errors.push(DefinitionError::new(
                            &field,
                            format!(
                                "unknown field {name:?}; the schema has: {}",
                                known.join(", ")
                            ),
                        ));
                        continue;
                    }
                };
                check_template(value, inner.as_ref(), &field, scope, found);
            }
        }
        Template::List(items) => {
            if let Some(schema) = schema
                && !matches!(schema.type_name().as_deref(), None | Some("array"))
            {
                found.errors.push(mismatch(path, schema, "a list"));
                return;
            }
            let item_schema = schema.and_then(Schema::items);
            for (i, item) in items.iter().enumerate() {
                check_template(
                    item,
                    item_schema.as_ref(),
                    &format!("{path}[{i}]"),
                    scope,
                    found,
                );
            }
        }
        Template::Text(text) => {
            let mut ty = Ty::String;
            for expression in text.expressions() {
                match check(expression, scope, found) {
                    Ok(Ty::Optional(inner)) => {
                        found.errors.push(unwritable_optional(expression, &inner));
                        ty = Ty::Dyn;
                    }
                    Ok(t) if holds_bytes(&t) => {
                        found.errors.push(unwritable_bytes(expression, &t));
                        ty = Ty::Dyn;
                    }
                    Ok(t) if matches!(text, Text::Whole(_)) => ty = t,
                    Ok(_) => {}
                    Err(e) => {
                        // Said once: the value's type is unknown to the checks after.
                        found.errors.push(e);
                        ty = Ty::Dyn;
                    }
                }
            }
            if let Some(schema) = schema
                && !fits(&ty, schema)
            {
                let what = match text {
                    Text::Whole(e) => format!("${{{}}} yields {}", e.source(), ty.describe()),
                    _ => "the value is a string".to_owned(),
                };
                found.errors.push(DefinitionError::new(
                    path,
                    format!("expected {}, {what}", wanted(schema)),
                ));
            }
        }
        Template::Plain(value) => {
            let ty = match value {
                Value::Bool(_) => Ty::Bool,
                Value::Number(_) => Ty::Number,
                _ => Ty::Null,
            };
            if let Some(schema) = schema
                && !matches!(ty, Ty::Null)
                && !fits(&ty, schema)
            {
                found.errors.push(mismatch(path, schema, &ty.describe()));
            }
        }
    }
}

/// Whether a value of type `ty` may stand where `schema` is.
fn fits(ty: &Ty, schema: &Schema) -> bool {
    let wanted = match schema.type_name() {
        Some(t) => t,
        None => return true,
    };
    match ty {
        Ty::Dyn | Ty::Null => true,
        Ty::Bool => wanted == "boolean",
        Ty::Number => wanted == "integer" || wanted == "number",
        Ty::String | Ty::Timestamp | Ty::Duration => wanted == "string",
        Ty::List(_) => wanted == "array",
        Ty::Map(_) | Ty::Object(_) => wanted == "object",
        Ty::Optional(_) | Ty::Bytes => false,
    }
}

/// Whether a value of type `ty` is bytes, or a list of them (nested).
fn holds_bytes(ty: &Ty) -> bool {
    match ty {
        Ty::Bytes => true,
        Ty::List(items) => holds_bytes(items),
        _ => false,
    }
}

/// Bytes cannot be written into an object (nor JSON, nor a string): they must be encoded,
/// as KRO says (`pkg/cel/conversion`), with `base64.encode` or as hex with `'%x'.format`.
fn unwritable_bytes(expression: &Expression, ty: &Ty) -> DefinitionError {
    let source = expression.source();
    let (what, encoded, hex) = match ty {
        Ty::Bytes => (
            "bytes".to_owned(),
            format!("base64.encode({source})"),
            format!("'%x'.format([{source}])"),
        ),
        _ => (
            "a list of bytes".to_owned(),
            format!("({source}).map(b, base64.encode(b))"),
            format!("({source}).map(b, '%x'.format([b]))"),
        ),
    };
    DefinitionError::new(
        expression.path(),
        format!(
            "${{{source}}} yields {what}, which cannot be written into an object: encode them, as base64 with ${{{encoded}}} or as hex with ${{{hex}}}"
        ),
    )
}

/// An optional cannot be written into an object: its value or a default must be.
fn unwritable_optional(expression: &Expression, inner: &Ty) -> DefinitionError {
    let source = expression.source();
    DefinitionError::new(
        expression.path(),
        format!(
            "${{{source}}} yields optional({}), which cannot be written into an object: use ${{{source}.orValue({})}}",
            inner.name(),
            inner.zero()
        ),
    )
}

fn wanted(schema: &Schema) -> String {
    match schema.type_name().as_deref() {
        Some("integer") => "an integer".into(),
        Some("number") => "a number".into(),
        Some("boolean") => "a bool".into(),
        Some("array") => "a list".into(),
        Some("object") => "a map".into(),
        Some(other) => format!("a {other}"),
        None => "any value".into(),
    }
}

fn mismatch(path: &str, schema: &Schema, found: &str) -> DefinitionError {
    DefinitionError::new(path, format!("expected {}, found {found}", wanted(schema)))
}

struct Checker<'a> {
    scope: &'a Scope,
    locals: Vec<(String, Ty)>,
    /// Paths known present where the node being checked is.
    facts: Vec<String>,
    /// The first read that may find nothing.
    absent: Option<NodeError>,
    /// The bindings that may be null read plainly, where the step excludes its dependents.
    needs: BTreeSet<String>,
}

/// Why `omit()` (KRO's `pkg/cel/library/omit.go`) is refused, and what to write instead.
const UNBOUND_OMIT: &str = "omit() (KRO's sentinel removing a template field) is not bound in dynrec: leave the field out with an optional entry of the map holding it, e.g. ${{'name': x, ?'policy': c ? optional.of(p) : optional.none()}}";

/// Why KRO's `runtime` library of custom status conditions is refused.
const UNBOUND_RUNTIME: &str = "runtime (KRO's library of custom status conditions: runtime.newCondition, runtime.condition) is only available in spec.schema.status.conditions";

/// The type of a KRO condition (`runtime.newCondition(...)`, `runtime.condition(...)`):
/// an object of four strings.
pub fn kro_condition_ty() -> Ty {
    let string = serde_json::json!({"type": "string"});
    let condition = serde_json::json!({"type": "object", "properties": {
        "type": string, "status": string, "reason": string, "message": string}});
    // Under a root, so that it is not an object's root (no apiVersion, kind, metadata).
    let holder = Schema::of_crd(serde_json::json!({"properties": {"condition": condition}}));
    match holder.field("condition") {
        Field::Known(schema) => Ty::Object(schema),
        _ => Ty::Dyn,
    }
}

/// Names that are CEL types or constants, not bindings.
pub const TYPE_NAMES: [&str; 11] = [
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
];

impl Checker<'_> {
    fn infer(&mut self, expr: &IdedExpr) -> Result<Ty, NodeError> {
        let fail = |message: String| NodeError {
            id: expr.id,
            message,
        };
        match &expr.expr {
            Expr::Literal(literal) => Ok(match literal {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Int(_) | LiteralValue::UInt(_) | LiteralValue::Double(_) => {
                    Ty::Number
                }
                LiteralValue::String(_) => Ty::String,
                LiteralValue::Null => Ty::Null,
                LiteralValue::Bytes(_) => Ty::Bytes,
            }),
            Expr::Ident(name) => {
                if let Some(ty) = self.bound(name) {
                    return Ok(ty);
                }
                if name == "now" {
                    return Ok(Ty::Timestamp);
                }
                if TYPE_NAMES.contains(&name.as_str()) {
                    return Ok(Ty::Dyn);
                }
                if name == "runtime" {
                    return Err(fail(UNBOUND_RUNTIME.to_owned()));
                }
                let known: Vec<&str> = self.scope.vars.keys().map(String::as_str).collect();
                Err(fail(format!(
                    "unknown binding {name:?}; known here: {}",
                    known.join(", ")
                )))
            }
            Expr::Select(select) => {
                let operand = self.infer(&select.operand)?;
                let (inner, optional) = match operand {
                    Ty::Optional(inner) => (*inner, true),
                    other => (other, false),
                };
                let ty = self
                    .select(&inner, &select.field)
                    .map_err(|message| NodeError {
                        id: expr.id,
                        message: format!("{} {message}", describe(&select.operand)),
                    })?;
                if !select.test && !optional {
                    self.note_absent_field(expr, &select.operand, &inner, &select.field, &ty);
                }
                Ok(match (select.test, optional) {
                    (true, _) => Ty::Bool,
                    (false, true) => Ty::Optional(Box::new(ty)),
                    (false, false) => ty,
                })
            }
            Expr::Call(call) => {
                if let Some(meant) = self.misspelt_macro(call) {
                    return Err(fail(format!(
                        "{}() is not a function; did you mean {meant}()? (a macro: its first arguments name the variables it binds)",
                        call.func_name
                    )));
                }
                let mut args = Vec::with_capacity(call.args.len());
                for (i, arg) in call.args.iter().enumerate() {
                    let given = match (call.func_name.as_str(), i) {
                        ("_&&_", 1) | ("_?_:_", 1) => facts(&call.args[0], true),
                        ("_||_", 1) | ("_?_:_", 2) => facts(&call.args[0], false),
                        _ => Vec::new(),
                    };
                    let depth = self.facts.len();
                    self.facts.extend(given);
                    let ty = self.infer(arg);
                    self.facts.truncate(depth);
                    args.push(ty?);
                }
                if let Some(target) = &call.target
                    && self.is_optional_library(target)
                {
                    return optional_constructor(&call.func_name, &args).map_err(fail);
                }
                if let Some(library) = call.target.as_deref().and_then(|t| self.library(t)) {
                    return library_function(library, &call.func_name, &args).map_err(fail);
                }
                let target = match &call.target {
                    Some(target) => Some((self.infer(target)?, &**target)),
                    None => None,
                };
                let target = target.as_ref().map(|(ty, e)| (ty, *e));
                reject_optionals(&call.func_name, target, &args, &call.args)?;
                if let Some((ty, target)) = target
                    && OPTIONAL_METHODS.contains(&call.func_name.as_str())
                {
                    return optional_method(&call.func_name, ty, target, &args).map_err(fail);
                }
                if call.func_name == "_[_]"
                    && let ([container, ..], [of, key]) = (args.as_slice(), call.args.as_slice())
                    && !is_expansion_binding(of)
                {
                    self.note_absent_entry(expr, container, key);
                }
                if call.func_name == "omit" && call.target.is_none() {
                    return Err(fail(UNBOUND_OMIT.to_owned()));
                }
                self.call(&call.func_name, &args, &call.args).map_err(fail)
            }
            Expr::List(list) => {
                let mut item = None;
                for (i, element) in list.elements.iter().enumerate() {
                    let ty = match self.infer(element)? {
                        Ty::Optional(inner) if list.optional_indices.contains(&i) => *inner,
                        ty => ty,
                    };
                    item = Some(match item {
                        None => ty,
                        Some(prev) if same(&prev, &ty) => prev,
                        Some(_) => Ty::Dyn,
                    });
                }
                Ok(Ty::List(Box::new(item.unwrap_or(Ty::Dyn))))
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(e) = &entry.expr {
                        let key = self.infer(&e.key)?;
                        reject_optional(&key, &e.key, "a map key")?;
                        self.infer(&e.value)?;
                    }
                }
                Ok(Ty::Map(Box::new(Ty::Dyn)))
            }
            Expr::Struct(_) | Expr::Unspecified => Ok(Ty::Dyn),
            Expr::Comprehension(c) => {
                let range = self.infer(&c.iter_range)?;
                reject_optional(&range, &c.iter_range, "a macro's range")?;
                let (first, second) = match &range {
                    Ty::List(item) => (Ty::Number, (**item).clone()),
                    Ty::Map(value) => (Ty::String, (**value).clone()),
                    Ty::Object(_) => (Ty::String, Ty::Dyn),
                    _ => (Ty::Dyn, Ty::Dyn),
                };
                let accu = self.infer(&c.accu_init)?;
                let depth = self.locals.len();
                match &c.iter_var2 {
                    Some(second_var) => {
                        self.locals.push((c.iter_var.clone(), first));
                        self.locals.push((second_var.clone(), second));
                    }
                    None => {
                        let only = match &range {
                            Ty::List(_) => second,
                            _ => first,
                        };
                        self.locals.push((c.iter_var.clone(), only));
                    }
                }
                self.locals.push((c.accu_var.clone(), accu));
                let result = (|| {
                    self.infer(&c.loop_cond)?;
                    let step = self.infer(&c.loop_step)?;
                    if let Some(slot) = self.locals.last_mut() {
                        slot.1 = step;
                    }
                    self.infer(&c.result)
                })();
                self.locals.truncate(depth);
                result
            }
        }
    }

    /// Notes `expr` (`operand.field`) when it may find nothing and nothing guards it.
    fn note_absent_field(
        &mut self,
        expr: &IdedExpr,
        operand: &IdedExpr,
        operand_ty: &Ty,
        field: &str,
        ty: &Ty,
    ) {
        if self.absent.is_some() {
            return;
        }
        if let Expr::Ident(name) = &operand.expr
            && self.scope.maybe_null.contains(name)
            && !self.locals.iter().any(|(local, _)| local == name)
            && !known(&self.facts, name)
        {
            if self.scope.excludes_dependents {
                self.needs.insert(name.clone());
                return;
            }
            self.absent = Some(NodeError {
                id: expr.id,
                message: unbound_step(name, field),
            });
            return;
        }
        let why = match operand_ty {
            Ty::Object(schema) if !schema.always_has(field) => {
                "the schema neither requires nor defaults it"
            }
            Ty::Map(_) => "a map need not have the key",
            _ => return,
        };
        let (Some(path), Some(base)) = (render(expr), render(operand)) else {
            return;
        };
        if !known(&self.facts, &path) {
            self.absent = Some(NodeError {
                id: expr.id,
                message: absent_field(&path, &format!("{base}.?{field}"), why, ty.zero()),
            });
        }
    }

    /// Notes `expr` (`container[key]`) when the key may be missing and nothing guards it.
    fn note_absent_entry(&mut self, expr: &IdedExpr, container: &Ty, key: &IdedExpr) {
        let (why, ty) = match (container, &key.expr) {
            (Ty::Map(values), _) => ("a map need not have the key", (**values).clone()),
            (Ty::Object(schema), Expr::Literal(LiteralValue::String(field)))
                if !schema.always_has(field.inner()) =>
            {
                (
                    "the schema neither requires nor defaults it",
                    self.select(container, field.inner()).unwrap_or(Ty::Dyn),
                )
            }
            _ => return,
        };
        let Expr::Call(call) = &expr.expr else { return };
        let (Some(path), Some(base), Some(key)) = (
            render(expr),
            call.args.first().and_then(render),
            render(key),
        ) else {
            return;
        };
        if self.absent.is_none() && !known(&self.facts, &path) {
            self.absent = Some(NodeError {
                id: expr.id,
                message: absent_field(&path, &format!("{base}[?{key}]"), why, ty.zero())
                    .replace(&format!("has({path})"), &format!("{key} in {base}")),
            });
        }
    }

    /// The macro a call on a target to no macro meant, when its name is a near miss and
    /// its first argument a name nothing binds (`x.transfromMap(k, v, ...)`).
    fn misspelt_macro(&self, call: &cel::common::ast::CallExpr) -> Option<&'static str> {
        let first_unbound = matches!(
            call.args.first().map(|a| &a.expr),
            Some(Expr::Ident(name)) if self.bound(name).is_none()
        );
        if call.target.is_none() || !first_unbound {
            return None;
        }
        super::macro_spelling::misspelt_macro(&call.func_name)
    }

    /// The type of a comprehension variable or binding in scope.
    fn bound(&self, name: &str) -> Option<Ty> {
        if let Some((_, ty)) = self.locals.iter().rev().find(|(n, _)| n == name) {
            return Some(ty.clone());
        }
        self.scope.vars.get(name).cloned()
    }

    /// Whether `target` is the `optional` of `optional.of(x)` (not a binding of that name).
    fn is_optional_library(&self, target: &IdedExpr) -> bool {
        matches!(&target.expr, Expr::Ident(name) if name == "optional" && self.bound(name).is_none())
    }

    /// The library `target` names (`strings` of `strings.quote(x)`), unless a binding has
    /// its name.
    fn library(&self, target: &IdedExpr) -> Option<&'static str> {
        match &target.expr {
            Expr::Ident(name) if self.bound(name).is_none() => {
                match name == "runtime" && self.scope.runtime {
                    true => Some("runtime"),
                    false => LIBRARIES.iter().copied().find(|l| l == name),
                }
            }
            _ => None,
        }
    }

    /// The type of `field` selected on a value of type `operand`.
    fn select(&self, operand: &Ty, field: &str) -> Result<Ty, String> {
        match operand {
            Ty::Object(schema) => match schema.field(field) {
                Field::Known(s) | Field::Open(Some(s)) => Ok(Ty::of(&s)),
                Field::Open(None) => Ok(Ty::Dyn),
                Field::Unknown(known) => Err(format!(
                    "has no field {field:?}; its fields are: {}",
                    known.join(", ")
                )),
            },
            Ty::Map(values) => Ok((**values).clone()),
            Ty::Dyn | Ty::Null => Ok(Ty::Dyn),
            other => Err(format!(
                "is {}, which has no field {field:?}",
                other.describe()
            )),
        }
    }

    /// The type of an element of `container` at `index` (`a[i]`, `a[?i]`).
    fn index(&self, container: &Ty, index: Option<&IdedExpr>) -> Result<Ty, String> {
        Ok(match container {
            Ty::List(item) => (**item).clone(),
            Ty::Map(value) => (**value).clone(),
            Ty::Object(schema) => match index.map(|e| &e.expr) {
                Some(Expr::Literal(LiteralValue::String(key))) => {
                    self.select(&Ty::Object(schema.clone()), key.inner())?
                }
                _ => Ty::Dyn,
            },
            _ => Ty::Dyn,
        })
    }

    fn call(&self, function: &str, args: &[Ty], arg_exprs: &[IdedExpr]) -> Result<Ty, String> {
        let pair = || {
            (
                args.first().cloned().unwrap_or(Ty::Dyn),
                args.get(1).cloned().unwrap_or(Ty::Dyn),
            )
        };
        Ok(match function {
            "_&&_" | "_||_" | "!_" | "_?_:_" => {
                let operands = if function == "_?_:_" {
                    &args[..1]
                } else {
                    args
                };
                for (ty, expr) in operands.iter().zip(arg_exprs) {
                    if ty.is_known_other_than(&Ty::Bool) {
                        return Err(format!(
                            "{} takes a bool, and {} is {}",
                            operator_name(function),
                            describe(expr),
                            ty.describe()
                        ));
                    }
                }
                match (function, args) {
                    ("_?_:_", [_, a, b]) => branches(a, b)?,
                    _ => Ty::Bool,
                }
            }
            "@in" | "@not_strictly_false" => Ty::Bool,
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let (a, b) = pair();
                if !a.same_class(&b) {
                    return Err(format!(
                        "cannot compare {} with {}",
                        a.describe(),
                        b.describe()
                    ));
                }
                Ty::Bool
            }
            "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => {
                let (a, b) = pair();
                if !a.same_class(&b)
                    && !matches!(
                        (&a, &b),
                        (Ty::Timestamp, Ty::Duration) | (Ty::Duration, Ty::Timestamp)
                    )
                {
                    return Err(format!(
                        "cannot combine {} with {} ({})",
                        a.describe(),
                        b.describe(),
                        operator_name(function)
                    ));
                }
                match (a, b) {
                    (Ty::List(a), Ty::List(b)) => Ty::List(Box::new(join(*a, *b))),
                    (a, b) if same(&a, &b) => a,
                    _ => Ty::Dyn,
                }
            }
            "-_" => args.first().cloned().unwrap_or(Ty::Dyn),
            "_[_]" => match args.first() {
                Some(Ty::Optional(inner)) => {
                    Ty::Optional(Box::new(self.index(inner, arg_exprs.get(1))?))
                }
                Some(container) => self.index(container, arg_exprs.get(1))?,
                None => Ty::Dyn,
            },
            "_?._" => {
                let inner = match args.first() {
                    Some(Ty::Optional(inner)) => (**inner).clone(),
                    Some(other) => other.clone(),
                    None => Ty::Dyn,
                };
                let field = match arg_exprs.get(1).map(|e| &e.expr) {
                    Some(Expr::Literal(LiteralValue::String(field))) => field.inner().to_owned(),
                    _ => return Ok(Ty::Optional(Box::new(Ty::Dyn))),
                };
                let ty = self.select(&inner, &field).map_err(|message| {
                    let operand = arg_exprs.first().map(describe).unwrap_or_default();
                    format!("{operand} {message}")
                })?;
                Ty::Optional(Box::new(ty))
            }
            "_[?_]" => {
                let inner = match args.first() {
                    Some(Ty::Optional(inner)) => (**inner).clone(),
                    Some(other) => other.clone(),
                    None => Ty::Dyn,
                };
                Ty::Optional(Box::new(self.index(&inner, arg_exprs.get(1))?))
            }
            dynrec_k8s_cel::ITERATION_KEYS => iteration_keys(args.first().unwrap_or(&Ty::Dyn))?,
            dynrec_k8s_cel::MAP_INSERT => map_insert(args)?,
            "semver" => {
                expect_string("semver", args.first())?;
                Ty::Dyn
            }
            "isSemver" => {
                expect_string("isSemver", args.first())?;
                Ty::Bool
            }
            "major" | "minor" | "patch" | "compareTo" => Ty::Number,
            "isGreaterThan" | "isLessThan" => Ty::Bool,
            "size" | "int" | "uint" | "double" | "indexOf" | "lastIndexOf" => Ty::Number,
            "string" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring"
            | "format" | "join" | "charAt" | "quote" => Ty::String,
            "matches" | "startsWith" | "endsWith" | "contains" | "bool" => Ty::Bool,
            "split" => Ty::List(Box::new(Ty::String)),
            "timestamp" => Ty::Timestamp,
            "bytes" => Ty::Bytes,
            "duration" => Ty::Duration,
            _ => Ty::Dyn,
        })
    }
}

/// Whether `expr` names a binding a macro's expansion made (`@target` of a two-variable
/// comprehension): no CEL source can write such a name, and its reads need no guard.
fn is_expansion_binding(expr: &IdedExpr) -> bool {
    matches!(&expr.expr, Expr::Ident(name) if name.starts_with('@'))
}

/// The type of what a two-variable comprehension's first variable runs over: a list's
/// indices or a map's keys, or why the target is no range, in cel-go's words.
fn iteration_keys(target: &Ty) -> Result<Ty, String> {
    Ok(Ty::List(Box::new(match target {
        Ty::List(_) => Ty::Number,
        Ty::Map(_) | Ty::Object(_) => Ty::String,
        Ty::Dyn | Ty::Null => Ty::Dyn,
        other => {
            return Err(format!(
                "expression of type {} cannot be range of a comprehension (must be list, map, or dynamic)",
                other.describe()
            ));
        }
    })))
}

/// The type of the map `transformMap` (`@mapInsert(map, key, value)`) or
/// `transformMapEntry` (`@mapInsert(map, entries)`) builds.
fn map_insert(args: &[Ty]) -> Result<Ty, String> {
    let any_map = Ty::Map(Box::new(Ty::Dyn));
    Ok(match args {
        [_, _, value] => Ty::Map(Box::new(value.clone())),
        [_, Ty::Map(value)] => Ty::Map(value.clone()),
        [_, other] if other.is_known_other_than(&any_map) => {
            return Err(format!(
                "transformMapEntry's transform gives the entries to add as a map (e.g. {{key: value}}), not {}",
                other.describe()
            ));
        }
        _ => any_map,
    })
}

/// An error unless the first argument of `function` may be a string.
fn expect_string(function: &str, arg: Option<&Ty>) -> Result<(), String> {
    match arg {
        Some(ty) if ty.is_known_other_than(&Ty::String) => Err(format!(
            "{function}() takes a version string, not {}",
            ty.describe()
        )),
        _ => Ok(()),
    }
}

/// The items of two lists joined (`[] + [x]` is a list of what `x` is).
fn join(a: Ty, b: Ty) -> Ty {
    match (a, b) {
        (Ty::Dyn, only) | (only, Ty::Dyn) => only,
        (a, b) if same(&a, &b) => a,
        (Ty::Optional(a), Ty::Optional(b)) => Ty::Optional(Box::new(join(*a, *b))),
        _ => Ty::Dyn,
    }
}

/// The type of `c ? a : b`; one optional branch needs the other optional too.
fn branches(a: &Ty, b: &Ty) -> Result<Ty, String> {
    Ok(match (a, b) {
        (a, b) if same(a, b) => a.clone(),
        (Ty::Optional(a), Ty::Optional(b)) if same(a, b) => Ty::Optional(a.clone()),
        (Ty::Optional(_), Ty::Optional(_)) => Ty::Optional(Box::new(Ty::Dyn)),
        (Ty::Optional(_), other) | (other, Ty::Optional(_)) if !matches!(other, Ty::Dyn) => {
            return Err(format!(
                "one branch of ?: is {} and the other {}: unwrap the optional with .orValue(...), or wrap the other with optional.of(...)",
                a.describe(),
                b.describe()
            ));
        }
        _ => Ty::Dyn,
    })
}

/// The function libraries called by a qualified name: cel's `strings.quote`,
/// `base64.encode`/`decode` and `lists.range`, and KRO's `random.seededString`,
/// `random.seededInt`, `hash.fnv64a`, `hash.sha256`, `hash.md5`, `json.unmarshal`,
/// `json.marshal` and `lists.setAtIndex`/`insertAtIndex`/`removeAtIndex`.
const LIBRARIES: [&str; 6] = ["strings", "random", "hash", "base64", "lists", "json"];

/// The type of a library function's result, or why the call is wrong.
fn library_function(library: &str, function: &str, args: &[Ty]) -> Result<Ty, String> {
    let (params, result): (&[Ty], Ty) = match (library, function) {
        ("strings", "quote") => (&[Ty::String], Ty::String),
        ("random", "seededString") => (&[Ty::Number, Ty::String], Ty::String),
        ("random", "seededInt") => (&[Ty::Number, Ty::Number, Ty::String], Ty::Number),
        ("hash", "fnv64a" | "sha256" | "md5") => (&[Ty::String], Ty::Bytes),
        ("json", "unmarshal") => (&[Ty::String], Ty::Dyn),
        ("json", "marshal") => (&[Ty::Dyn], Ty::String),
        ("base64", "encode") => (&[Ty::Bytes], Ty::String),
        ("base64", "decode") => (&[Ty::String], Ty::Bytes),
        ("lists", "range") => (&[Ty::Number], Ty::List(Box::new(Ty::Number))),
        ("lists", "setAtIndex" | "insertAtIndex") => (&[Ty::Dyn, Ty::Number, Ty::Dyn], Ty::Dyn),
        ("lists", "removeAtIndex") => (&[Ty::Dyn, Ty::Number], Ty::Dyn),
        ("runtime", "newCondition") => (&[Ty::Dyn], kro_condition_ty()),
        ("runtime", "condition") => (&[Ty::Dyn, Ty::String], kro_condition_ty()),
        _ => {
            return Err(format!(
                "{library}.{function} is not a function; the libraries have strings.quote(string), random.seededString(int, string), random.seededInt(int, int, string), hash.fnv64a(string), hash.sha256(string), hash.md5(string), json.unmarshal(string), json.marshal(value), base64.encode(bytes), base64.decode(string), lists.range(int), lists.setAtIndex(list, int, value), lists.insertAtIndex(list, int, value) and lists.removeAtIndex(list, int)"
            ));
        }
    };
    let fits = args.len() == params.len()
        && args
            .iter()
            .zip(params)
            .all(|(a, p)| !a.is_known_other_than(p));
    match fits {
        true => Ok(result),
        false => Err(format!(
            "{library}.{function} takes ({}), not ({}){}",
            params
                .iter()
                .map(Ty::describe)
                .collect::<Vec<_>>()
                .join(", "),
            args.iter().map(Ty::describe).collect::<Vec<_>>().join(", "),
            match (params, args) {
                ([Ty::Bytes], [Ty::String]) => ": convert the string with bytes(...)",
                _ => "",
            }
        )),
    }
}

/// The methods of optional values.
const OPTIONAL_METHODS: [&str; 4] = ["hasValue", "value", "orValue", "or"];

/// The type of `optional.of(x)`, `optional.ofNonZeroValue(x)` and `optional.none()`.
fn optional_constructor(function: &str, args: &[Ty]) -> Result<Ty, String> {
    match (function, args) {
        ("of" | "ofNonZeroValue", [value]) => Ok(Ty::Optional(Box::new(value.clone()))),
        ("none", []) => Ok(Ty::Optional(Box::new(Ty::Dyn))),
        _ => Err(format!(
            "optional.{function} takes {}; the optional library has optional.of(value), optional.ofNonZeroValue(value) and optional.none()",
            match function {
                "of" | "ofNonZeroValue" => "one argument",
                "none" => "no argument",
                _ => "no such function",
            }
        )),
    }
}

/// The type of `target.hasValue()`, `.value()`, `.orValue(default)` or `.or(other)`.
fn optional_method(
    function: &str,
    target: &Ty,
    target_expr: &IdedExpr,
    args: &[Ty],
) -> Result<Ty, String> {
    let inner = match target {
        Ty::Optional(inner) => (**inner).clone(),
        Ty::Dyn => Ty::Dyn,
        other => {
            let name = describe(target_expr);
            let fix = match optional_form(target_expr) {
                Some(optional) => format!("read it as {optional} to get an optional"),
                None => format!("use {name} itself"),
            };
            return Err(format!(
                "{name} is {}, not an optional: {function}() applies to optionals; {fix}",
                other.describe()
            ));
        }
    };
    let argument = args.first().cloned().unwrap_or(Ty::Dyn);
    Ok(match function {
        "hasValue" => Ty::Bool,
        "value" => inner,
        "orValue" => {
            if !inner.same_class(&argument) && !matches!(argument, Ty::Null) {
                return Err(format!(
                    "{} holds {}, its default is {}: give a default of the same type, e.g. .orValue({})",
                    describe(target_expr),
                    inner.describe(),
                    argument.describe(),
                    inner.zero()
                ));
            }
            match (&inner, &argument) {
                (_, Ty::Dyn | Ty::Null) | (Ty::Dyn, _) => Ty::Dyn,
                (inner, _) => inner.clone(),
            }
        }
        _ => match argument {
            Ty::Optional(_) | Ty::Dyn => Ty::Optional(Box::new(inner)),
            other => {
                return Err(format!(
                    "or() takes an optional, not {}: for a plain default write {}.orValue(...)",
                    other.describe(),
                    describe(target_expr)
                ));
            }
        },
    })
}

/// `a.?b` for a read written `a.b`.
fn optional_form(expr: &IdedExpr) -> Option<String> {
    match &expr.expr {
        Expr::Select(select) if !select.test => {
            Some(format!("{}.?{}", describe(&select.operand), select.field))
        }
        _ => None,
    }
}

/// An error unless `function` takes the optionals among its target and arguments: only the
/// optional reads, the optional methods, `==`/`!=` between two optionals and the branches
/// of `?:` do.
fn reject_optionals(
    function: &str,
    target: Option<(&Ty, &IdedExpr)>,
    args: &[Ty],
    arg_exprs: &[IdedExpr],
) -> Result<(), NodeError> {
    let operator = operator_name(function);
    let plain: Vec<usize> = match function {
        "_==_" | "_!=_" => match args {
            [Ty::Optional(_), Ty::Optional(_)] => vec![],
            _ => vec![0, 1],
        },
        "_?_:_" => vec![0],
        "_[_]" | "_?._" | "_[?_]" => vec![1],
        "dyn" | "type" | "of" | "ofNonZeroValue" => vec![],
        _ if OPTIONAL_METHODS.contains(&function) => vec![],
        _ => (0..args.len()).collect(),
    };
    if let Some((ty, expr)) = target
        && !OPTIONAL_METHODS.contains(&function)
    {
        reject_optional(ty, expr, &operator)?;
    }
    for i in plain {
        if let (Some(ty), Some(expr)) = (args.get(i), arg_exprs.get(i)) {
            reject_optional(ty, expr, &operator)?;
        }
    }
    Ok(())
}

/// An error if `ty` is optional, where `taker` needs a plain value.
fn reject_optional(ty: &Ty, expr: &IdedExpr, taker: &str) -> Result<(), NodeError> {
    let Ty::Optional(inner) = ty else {
        return Ok(());
    };
    let name = describe(expr);
    let test = presence_test(expr).unwrap_or_else(|| format!("{name}.hasValue()"));
    Err(NodeError {
        id: expr.id,
        message: format!(
            "{name} is {}, and {taker} takes a plain value: use {name}.orValue({}), or test {test} first",
            ty.describe(),
            inner.zero()
        ),
    })
}

/// How a message names what takes a value: `>` for `_>_`, `size()` for `size`.
fn operator_name(function: &str) -> String {
    match function {
        "_?_:_" => "a condition (?:)".into(),
        "_[_]" | "_[?_]" => "an index".into(),
        "!_" => "!".into(),
        "-_" => "-".into(),
        "@in" => "in".into(),
        "_?._" => "a field read".into(),
        f if f.starts_with('_') && f.ends_with('_') => f.trim_matches('_').into(),
        f => format!("{f}()"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scope() -> Scope {
        let widget = Schema::of_crd(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "greeting": {"type": "string"}, "size": {"type": "integer"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}}));
        Scope::default().with("self", Ty::Object(widget))
    }

    fn error(source: &str) -> String {
        let e = Expression::compile(source, "spec.x").unwrap();
        check(&e, &scope(), &mut Findings::default())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn known_fields_and_types_pass() {
        for source in [
            "self.spec.size > 2",
            "self.spec.greeting + '!'",
            "self.metadata.name",
            "self.spec.items.all(i, i.name != '')",
            "self.spec.items.map(i, i.name)",
            "has(self.spec.greeting) ? self.spec.greeting : 'hello'",
            "self.metadata.labels['app']",
            "self.spec.?greeting.orValue('hello')",
        ] {
            let e = Expression::compile(source, "p").unwrap();
            check(&e, &scope(), &mut Findings::default())
                .unwrap_or_else(|e| panic!("{source}: {e}"));
        }
    }

    #[test]
    fn optional_values_are_typed() {
        for source in [
            "self.spec.?size.orValue(1) > 3",
            "self.spec.?size.hasValue() && self.spec.?size.value() > 3",
            "self.spec.?greeting.orValue('') + '!'",
            "self.spec.?items.orValue([]).all(i, i.name != '')",
            "self.spec.?size == optional.of(3)",
            "optional.none().or(self.spec.?greeting).orValue('x').startsWith('x')",
            "self.?spec.?greeting.orValue('') == ''",
            "self.spec.?items[0].?name.orValue('') != ''",
            "self.metadata.?labels['app'].orValue('') == 'web'",
            "size([?self.spec.?greeting]) == 1",
            "optional.ofNonZeroValue(self.spec.size).hasValue()",
            "(self.spec.size > 2 ? self.spec.?greeting : optional.none()).orValue('')",
            "self.spec.?size.optMap(s, s + 1).orValue(0) > 1",
        ] {
            let e = Expression::compile(source, "p").unwrap();
            check(&e, &scope(), &mut Findings::default())
                .unwrap_or_else(|e| panic!("{source}: {e}"));
        }
    }

    #[test]
    fn operators_on_optionals_are_errors_naming_the_fix() {
        let cases = [
            (
                "self.spec.?size > 3 ? 'big' : 'small'",
                "${self.spec.?size > 3 ? 'big' : 'small'}: self.spec.?size is optional(number), and > takes a plain value: use self.spec.?size.orValue(0), or test has(self.spec.size) first (at 1:10 of the expression)",
            ),
            (
                "self.spec.?greeting.orValue('') + 1",
                "${self.spec.?greeting.orValue('') + 1}: cannot combine a string with a number (+) (at 1:33 of the expression)",
            ),
            (
                "size(self.spec.?items) > 0",
                "${size(self.spec.?items) > 0}: self.spec.?items is optional(list), and size() takes a plain value: use self.spec.?items.orValue([]), or test has(self.spec.items) first (at 1:15 of the expression)",
            ),
            (
                "self.spec.?size.orValue('one')",
                "${self.spec.?size.orValue('one')}: self.spec.?size holds a number, its default is a string: give a default of the same type, e.g. .orValue(0) (at 1:24 of the expression)",
            ),
            (
                "self.spec.size.orValue(1)",
                "${self.spec.size.orValue(1)}: self.spec.size is a number, not an optional: orValue() applies to optionals; read it as self.spec.?size to get an optional (at 1:23 of the expression)",
            ),
            (
                "self.spec.?size == 3",
                "${self.spec.?size == 3}: self.spec.?size is optional(number), and == takes a plain value: use self.spec.?size.orValue(0), or test has(self.spec.size) first (at 1:10 of the expression)",
            ),
            (
                "self.spec.?greeting.orValue('').startsWith(self.spec.?greeting)",
                "${self.spec.?greeting.orValue('').startsWith(self.spec.?greeting)}: self.spec.?greeting is optional(string), and startsWith() takes a plain value: use self.spec.?greeting.orValue(''), or test has(self.spec.greeting) first (at 1:53 of the expression)",
            ),
            (
                "self.spec.?greting.orValue('')",
                "${self.spec.?greting.orValue('')}: self.spec has no field \"greting\"; its fields are: greeting, items, size (at 1:10 of the expression)",
            ),
            (
                "self.spec.size > 2 ? self.spec.?greeting : 'none'",
                "${self.spec.size > 2 ? self.spec.?greeting : 'none'}: one branch of ?: is optional(string) and the other a string: unwrap the optional with .orValue(...), or wrap the other with optional.of(...) (at 1:20 of the expression)",
            ),
            (
                "self.spec.size && true",
                "${self.spec.size && true}: && takes a bool, and self.spec.size is a number (at 1:16 of the expression)",
            ),
            (
                "self.spec.?items.orValue([]).map(i, i.?name).all(n, n != '')",
                "${self.spec.?items.orValue([]).map(i, i.?name).all(n, n != '')}: n is optional(string), and != takes a plain value: use n.orValue(''), or test n.hasValue() first (at 1:53 of the expression)",
            ),
        ];
        for (source, expected) in cases {
            let message = error(source);
            let first_line = message.lines().next().unwrap_or_default();
            assert_eq!(first_line, format!("spec.x: {expected}"), "{source}");
        }
    }

    /// The warnings of `source` over a parent whose spec is required, with `name` required,
    /// `nick` defaulted and `size` neither, and a `service` step that may be excluded.
    fn warnings(source: &str) -> Vec<String> {
        let parent = Schema::of_crd(
            json!({"type": "object", "required": ["spec"], "properties": {
            "spec": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "nick": {"type": "string", "default": "x"},
                "size": {"type": "integer"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}),
        );
        let mut scope = Scope::default().with("self", Ty::Object(parent.clone()));
        scope.bind_maybe_null("service", Ty::Object(parent));
        let e = Expression::compile(source, "spec.x").unwrap();
        let mut found = Findings::default();
        check(&e, &scope, &mut found).unwrap_or_else(|e| panic!("{source}: {e}"));
        found
            .warnings
            .iter()
            .map(|w| w.to_string().lines().next().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn reads_that_may_find_nothing_are_warnings_unless_guarded() {
        for source in [
            "self.spec.name + self.spec.nick",
            "self.metadata.name + self.metadata.uid",
            "self.spec.?size.orValue(0) > 1",
            "has(self.spec.size) ? self.spec.size : 0",
            "has(self.spec.size) && self.spec.size > 1",
            "!has(self.spec.size) || self.spec.size > 1",
            "!has(self.spec.size) ? 0 : self.spec.size",
            "has(self.status) && has(self.status.ready) && self.status.ready",
            "has(self.spec.labels) && 'app' in self.spec.labels && self.spec.labels['app'] == 'x'",
            "service != null ? service.spec.name : ''",
            "service.?spec.?name.orValue('')",
        ] {
            assert_eq!(warnings(source), Vec::<String>::new(), "{source}");
        }
        let cases = [
            (
                "self.spec.size > 1",
                "spec.x: ${self.spec.size > 1}: self.spec.size may be absent (the schema neither requires nor defaults it): read it as self.spec.?size.orValue(0), or guard it with has(self.spec.size) (at 1:10 of the expression)",
            ),
            (
                "self.status.ready",
                "spec.x: ${self.status.ready}: self.status may be absent (the schema neither requires nor defaults it): read it as self.?status and what is under it with .?field, or guard it with has(self.status) (at 1:5 of the expression)",
            ),
            (
                "has(self.spec.name) ? self.spec.size : 0",
                "spec.x: ${has(self.spec.name) ? self.spec.size : 0}: self.spec.size may be absent (the schema neither requires nor defaults it): read it as self.spec.?size.orValue(0), or guard it with has(self.spec.size) (at 1:32 of the expression)",
            ),
            (
                "self.spec.labels['app'] == 'x'",
                "spec.x: ${self.spec.labels['app'] == 'x'}: self.spec.labels may be absent (the schema neither requires nor defaults it): read it as self.spec.?labels and what is under it with .?field, or guard it with has(self.spec.labels) (at 1:10 of the expression)",
            ),
            (
                "has(self.spec.labels) && self.spec.labels['app'] == 'x'",
                "spec.x: ${has(self.spec.labels) && self.spec.labels['app'] == 'x'}: self.spec.labels['app'] may be absent (a map need not have the key): read it as self.spec.labels[?'app'].orValue(''), or guard it with 'app' in self.spec.labels (at 1:42 of the expression)",
            ),
            (
                "service.metadata.name",
                "spec.x: ${service.metadata.name}: service may be null here (its step has includeWhen, or is an optional ref): read service.?metadata, or guard with service != null (at 1:8 of the expression)",
            ),
        ];
        for (source, expected) in cases {
            assert_eq!(warnings(source), [expected], "{source}");
        }
    }

    #[test]
    fn two_variable_comprehensions_and_semver_are_typed() {
        for source in [
            "self.spec.items.all(i, item, i >= 0 && item.name != '')",
            "self.spec.items.transformList(i, item, item.name + string(i))",
            "self.spec.items.transformMap(i, item, i > 0, item.name).size() > 0",
            "self.metadata.labels.transformMapEntry(k, v, {v: k})",
            "semver(self.spec.greeting).major() > 1 && isSemver(self.spec.greeting)",
        ] {
            let e = Expression::compile(source, "p").unwrap();
            check(&e, &scope(), &mut Findings::default())
                .unwrap_or_else(|e| panic!("{source}: {e}"));
        }
        for (source, message) in [
            (
                "self.spec.items.all(i, item, item.nam == '')",
                "item has no field \"nam\"",
            ),
            (
                "self.spec.items.transformList(i, item, i + 'x')",
                "cannot combine a number with a string",
            ),
            (
                "self.spec.greeting.all(k, v, true)",
                "expression of type a string cannot be range of a comprehension (must be list, map, or dynamic) (at 1:23",
            ),
            (
                "semver(self.spec.size)",
                "semver() takes a version string, not a number",
            ),
            (
                "self.spec.items.transformMapEntry(i, item, item.name)",
                "transformMapEntry's transform gives the entries to add as a map (e.g. {key: value}), not a string",
            ),
        ] {
            let e = error(source);
            assert!(e.contains(message), "{source}: {e}");
        }
        assert_eq!(
            warnings("self.spec.?labels.orValue({}).transformMap(k, v, v + '!')"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn unknown_fields_bindings_and_mismatches_are_named_with_positions() {
        let e = error("self.spec.greting == 'x'");
        assert!(
            e.contains("self.spec has no field \"greting\"; its fields are: greeting, items, size"),
            "{e}"
        );
        assert!(e.contains("(at 1:"), "{e}");
        let e = error("config.data.x");
        assert!(
            e.contains("unknown binding \"config\"; known here: self"),
            "{e}"
        );
        assert!(e.contains("(at 1:1 of the expression)"), "{e}");
        let e = error("self.spec.size == 'three'");
        assert!(e.contains("cannot compare a number with a string"), "{e}");
        let e = error("self.spec.items.all(i, i.nam == '')");
        assert!(e.contains("i has no field \"nam\""), "{e}");
        let e = error("self.spec.size.value");
        assert!(
            e.contains("self.spec.size is a number, which has no field \"value\""),
            "{e}"
        );
    }

    #[test]
    fn kros_omit_and_runtime_are_refused_naming_the_native_way() {
        let e = error("self.spec.size > 1 ? self.spec.size : omit()");
        assert!(e.contains(UNBOUND_OMIT), "{e}");
        let e = error("runtime.newCondition({type: 'A', status: 'True'})");
        assert!(e.contains(UNBOUND_RUNTIME), "{e}");
        // In KRO's custom conditions, runtime's results are conditions of four fields.
        let conditions = scope().with_runtime();
        let read = |source: &str| {
            let e = Expression::compile(source, "spec.x").unwrap();
            check(&e, &conditions, &mut Findings::default()).map_err(|e| e.to_string())
        };
        assert!(read("runtime.condition(self, 'Ready').status == 'True'").is_ok());
        let e = read("runtime.condition(self, 'Ready').state").unwrap_err();
        assert!(
            e.contains("has no field \"state\"; its fields are: message, reason, status, type"),
            "{e}"
        );
        // The way omit() points to checks, and leaves the entry out when none.
        let entry = "{'name': 'x', ?'policy': 1 > 2 ? optional.of('p') : optional.none()}";
        let e = Expression::compile(entry, "p").unwrap();
        check(&e, &scope(), &mut Findings::default()).unwrap();
        assert_eq!(crate::cel::evaluate_closed(entry), Ok(json!({"name": "x"})));
    }

    #[test]
    fn conditions_must_be_bools_and_lists_lists() {
        let e =
            Expression::compile("self.spec.size", "spec.steps[0].child.includeWhen[0]").unwrap();
        let err = check_condition(&e, &scope(), &mut Findings::default())
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "spec.steps[0].child.includeWhen[0]: ${self.spec.size}: expected a bool, the expression yields a number"
        );
        let e = Expression::compile("self.spec.greeting", "p").unwrap();
        assert!(check_list(&e, &scope(), &mut Findings::default()).is_err());
        let e = Expression::compile("self.spec.items", "p").unwrap();
        assert!(matches!(
            check_list(&e, &scope(), &mut Findings::default()).unwrap(),
            Ty::Object(_)
        ));
    }

    #[test]
    fn templates_are_checked_against_the_schema() {
        let config_map = Schema::of_crd(json!({"type": "object", "properties": {
            "data": {"type": "object", "additionalProperties": {"type": "string"}},
            "immutable": {"type": "boolean"}}}));
        let template = Template::compile(
            &json!({"data": {"g": "${self.spec.greeting}", "n": "${self.spec.size}"}, "dta": {}, "immutable": "yes"}),
            "spec.steps[0].child.template",
        )
        .unwrap();
        let mut found = Findings::default();
        check_template(
            &template,
            Some(&config_map),
            "spec.steps[0].child.template",
            &scope(),
            &mut found,
        );
        let messages: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "spec.steps[0].child.template.data.n: expected a string, ${self.spec.size} yields a number",
                "spec.steps[0].child.template.dta: unknown field \"dta\"; the schema has: apiVersion, data, immutable, kind, metadata",
                "spec.steps[0].child.template.immutable: expected a bool, the value is a string",
            ]
        );
    }
}
