//! Type-checks expressions and templates at load: every name an expression reads must be a
//! binding in scope, every field it selects must exist in the schema of what it reads
//! (unless the schema leaves the place open), conditions must be bools, lists lists, and a
//! template's values must have the types its kind's schema asks for.

use std::collections::BTreeMap;

use cel::common::ast::{Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use super::error::DefinitionError;
use super::expr::{Expression, Template, Text, field_path};
use super::schema::{Field, Schema};

/// What is known of a value's type.
#[derive(Clone, Debug)]
pub enum Ty {
    /// Anything (unknown schema, open field, result of an unchecked function).
    Dyn,
    /// A bool.
    Bool,
    /// A number (int, uint or double).
    Number,
    /// A string.
    String,
    /// null.
    Null,
    /// A timestamp (`now`, `timestamp(...)`).
    Timestamp,
    /// A duration.
    Duration,
    /// A list of items of a type.
    List(Box<Ty>),
    /// A map of values of a type.
    Map(Box<Ty>),
    /// An object with a schema.
    Object(Schema),
}

impl Ty {
    /// The type a schema node describes.
    pub fn of(schema: &Schema) -> Ty {
        match schema.type_name().as_deref() {
            Some("object") => match schema.map_values() {
                Some(values) => Ty::Map(Box::new(Ty::of(&values))),
                None => Ty::Object(schema.clone()),
            },
            Some("array") => Ty::List(Box::new(schema.items().map_or(Ty::Dyn, |s| Ty::of(&s)))),
            Some("string") => Ty::String,
            Some("integer" | "number") => Ty::Number,
            Some("boolean") => Ty::Bool,
            _ => Ty::Dyn,
        }
    }

    /// An object of a schema, or anything when the schema is unknown.
    pub fn of_optional(schema: Option<&Schema>) -> Ty {
        schema.map_or(Ty::Dyn, |s| Ty::Object(s.clone()))
    }

    /// How a message names the type.
    pub fn describe(&self) -> &'static str {
        match self {
            Ty::Dyn => "any value",
            Ty::Bool => "a bool",
            Ty::Number => "a number",
            Ty::String => "a string",
            Ty::Null => "null",
            Ty::Timestamp => "a timestamp",
            Ty::Duration => "a duration",
            Ty::List(_) => "a list",
            Ty::Map(_) | Ty::Object(_) => "a map",
        }
    }

    /// A coarse class: two values of different classes can never be equal or compared.
    fn class(&self) -> Option<u8> {
        match self {
            Ty::Dyn | Ty::Null => None,
            Ty::Bool => Some(0),
            Ty::Number => Some(1),
            Ty::String => Some(2),
            Ty::Timestamp => Some(3),
            Ty::Duration => Some(4),
            Ty::List(_) => Some(5),
            Ty::Map(_) | Ty::Object(_) => Some(6),
        }
    }

    fn same_class(&self, other: &Ty) -> bool {
        match (self.class(), other.class()) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }
}

/// The bindings an expression may read, with their types.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    vars: BTreeMap<String, Ty>,
}

impl Scope {
    /// The same scope with `name` bound to a value of type `ty`.
    pub fn with(&self, name: &str, ty: Ty) -> Scope {
        let mut scope = self.clone();
        scope.vars.insert(name.to_owned(), ty);
        scope
    }

    /// Binds `name` in this scope.
    pub fn bind(&mut self, name: &str, ty: Ty) {
        self.vars.insert(name.to_owned(), ty);
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

/// The type of `expression` in `scope`, or why it is wrong.
pub fn check(expression: &Expression, scope: &Scope) -> Result<Ty, DefinitionError> {
    let mut checker = Checker {
        scope,
        locals: Vec::new(),
    };
    checker.infer(expression.ast()).map_err(|e| {
        let error = DefinitionError::new(
            expression.path(),
            format!("${{{}}}: {}", expression.source(), e.message),
        );
        match expression.position_of(e.id) {
            Some((line, column)) => {
                let text = expression
                    .source()
                    .lines()
                    .nth(line - 1)
                    .unwrap_or_default();
                let pad: String = text.chars().take(column - 1).map(|_| ' ').collect();
                error.at(line, column, format!("  {text}\n  {pad}^"))
            }
            None => error,
        }
    })
}

/// Checks that `expression` is a bool condition.
pub fn check_condition(expression: &Expression, scope: &Scope) -> Result<(), DefinitionError> {
    expect(
        expression,
        scope,
        |t| matches!(t, Ty::Bool | Ty::Dyn),
        "a bool",
    )
}

/// Checks that `expression` yields a list, and returns the type of its items.
pub fn check_list(expression: &Expression, scope: &Scope) -> Result<Ty, DefinitionError> {
    match check(expression, scope)? {
        Ty::List(items) => Ok(*items),
        Ty::Dyn => Ok(Ty::Dyn),
        other => Err(DefinitionError::new(
            expression.path(),
            format!(
                "${{{}}}: expected a list, the expression yields {}",
                expression.source(),
                other.describe()
            ),
        )),
    }
}

fn expect(
    expression: &Expression,
    scope: &Scope,
    ok: impl Fn(&Ty) -> bool,
    wanted: &str,
) -> Result<(), DefinitionError> {
    let ty = check(expression, scope)?;
    if ok(&ty) {
        return Ok(());
    }
    Err(DefinitionError::new(
        expression.path(),
        format!(
            "${{{}}}: expected {wanted}, the expression yields {}",
            expression.source(),
            ty.describe()
        ),
    ))
}

/// Checks a template against the schema of what it builds (`None`: unknown, only the
/// expressions are checked).
pub fn check_template(
    template: &Template,
    schema: Option<&Schema>,
    path: &str,
    scope: &Scope,
    errors: &mut Vec<DefinitionError>,
) {
    match template {
        Template::Map(fields) => {
            if let Some(schema) = schema
                && !matches!(schema.type_name().as_deref(), None | Some("object"))
            {
                errors.push(mismatch(path, schema, "a map"));
                return;
            }
            for (name, value) in fields {
                let field = field_path(path, name);
                let inner = match schema.map(|s| s.field(name)) {
                    None | Some(Field::Open(None)) => None,
                    Some(Field::Known(s) | Field::Open(Some(s))) => Some(s),
                    Some(Field::Unknown(known)) => {
                        errors.push(DefinitionError::new(
                            &field,
                            format!(
                                "unknown field {name:?}; the schema has: {}",
                                known.join(", ")
                            ),
                        ));
                        continue;
                    }
                };
                check_template(value, inner.as_ref(), &field, scope, errors);
            }
        }
        Template::List(items) => {
            if let Some(schema) = schema
                && !matches!(schema.type_name().as_deref(), None | Some("array"))
            {
                errors.push(mismatch(path, schema, "a list"));
                return;
            }
            let item_schema = schema.and_then(Schema::items);
            for (i, item) in items.iter().enumerate() {
                check_template(
                    item,
                    item_schema.as_ref(),
                    &format!("{path}[{i}]"),
                    scope,
                    errors,
                );
            }
        }
        Template::Text(text) => {
            let mut ty = Ty::String;
            for expression in text.expressions() {
                match check(expression, scope) {
                    Ok(t) if matches!(text, Text::Whole(_)) => ty = t,
                    Ok(_) => {}
                    Err(e) => errors.push(e),
                }
            }
            if let Some(schema) = schema
                && !fits(&ty, schema)
            {
                let what = match text {
                    Text::Whole(e) => format!("${{{}}} yields {}", e.source(), ty.describe()),
                    _ => "the value is a string".to_owned(),
                };
                errors.push(DefinitionError::new(
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
                errors.push(mismatch(path, schema, ty.describe()));
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
    }
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
                LiteralValue::Bytes(_) => Ty::Dyn,
            }),
            Expr::Ident(name) => {
                if let Some((_, ty)) = self.locals.iter().rev().find(|(n, _)| n == name) {
                    return Ok(ty.clone());
                }
                if let Some(ty) = self.scope.vars.get(name) {
                    return Ok(ty.clone());
                }
                if name == "now" {
                    return Ok(Ty::Timestamp);
                }
                if TYPE_NAMES.contains(&name.as_str()) {
                    return Ok(Ty::Dyn);
                }
                let known: Vec<&str> = self.scope.vars.keys().map(String::as_str).collect();
                Err(fail(format!(
                    "unknown binding {name:?}; known here: {}",
                    known.join(", ")
                )))
            }
            Expr::Select(select) => {
                let operand = self.infer(&select.operand)?;
                let ty = self
                    .select(&operand, &select.field)
                    .map_err(|message| NodeError {
                        id: expr.id,
                        message: format!("{} {message}", describe(&select.operand)),
                    })?;
                Ok(if select.test { Ty::Bool } else { ty })
            }
            Expr::Call(call) => {
                // A method's target is checked (its fields must exist); the result type
                // depends only on the function.
                if let Some(target) = &call.target {
                    self.infer(target)?;
                }
                let args = call
                    .args
                    .iter()
                    .map(|a| self.infer(a))
                    .collect::<Result<Vec<_>, _>>()?;
                self.call(&call.func_name, &args, &call.args).map_err(fail)
            }
            Expr::List(list) => {
                let mut item = None;
                for element in &list.elements {
                    let ty = self.infer(element)?;
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
                    if let cel::common::ast::EntryExpr::MapEntry(e) = &entry.expr {
                        self.infer(&e.key)?;
                        self.infer(&e.value)?;
                    }
                }
                Ok(Ty::Map(Box::new(Ty::Dyn)))
            }
            Expr::Struct(_) | Expr::Unspecified => Ok(Ty::Dyn),
            Expr::Comprehension(c) => {
                let range = self.infer(&c.iter_range)?;
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

    fn call(&self, function: &str, args: &[Ty], arg_exprs: &[IdedExpr]) -> Result<Ty, String> {
        let pair = || {
            (
                args.first().cloned().unwrap_or(Ty::Dyn),
                args.get(1).cloned().unwrap_or(Ty::Dyn),
            )
        };
        Ok(match function {
            "_&&_" | "_||_" | "!_" | "@in" | "@not_strictly_false" => Ty::Bool,
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
                        "cannot combine {} with {} ({function})",
                        a.describe(),
                        b.describe()
                    ));
                }
                if same(&a, &b) { a } else { Ty::Dyn }
            }
            "-_" => args.first().cloned().unwrap_or(Ty::Dyn),
            "_?_:_" => match args {
                [_, a, b] if same(a, b) => a.clone(),
                _ => Ty::Dyn,
            },
            "_[_]" => {
                let (container, _) = pair();
                match container {
                    Ty::List(item) => *item,
                    Ty::Map(value) => *value,
                    Ty::Object(schema) => match arg_exprs.get(1).map(|e| &e.expr) {
                        Some(Expr::Literal(LiteralValue::String(key))) => {
                            self.select(&Ty::Object(schema), key)?
                        }
                        _ => Ty::Dyn,
                    },
                    _ => Ty::Dyn,
                }
            }
            "size" | "int" | "uint" | "double" | "indexOf" | "lastIndexOf" => Ty::Number,
            "string" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring"
            | "format" | "join" | "charAt" | "quote" => Ty::String,
            "matches" | "startsWith" | "endsWith" | "contains" | "bool" => Ty::Bool,
            "split" => Ty::List(Box::new(Ty::String)),
            "timestamp" => Ty::Timestamp,
            "duration" => Ty::Duration,
            _ => Ty::Dyn,
        })
    }
}

/// Whether two types are the same (for the result of an operator).
fn same(a: &Ty, b: &Ty) -> bool {
    matches!(
        (a, b),
        (Ty::Bool, Ty::Bool) | (Ty::Number, Ty::Number) | (Ty::String, Ty::String)
    )
}

/// How a message names an operand: its dotted path when it is one, else "the value".
fn describe(expr: &IdedExpr) -> String {
    let mut segments = Vec::new();
    let mut current = expr;
    loop {
        match &current.expr {
            Expr::Ident(name) => {
                segments.push(name.clone());
                segments.reverse();
                return segments.join(".");
            }
            Expr::Select(select) if !select.test => {
                segments.push(select.field.clone());
                current = &select.operand;
            }
            _ => return "the value".to_owned(),
        }
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
        check(&e, &scope()).unwrap_err().to_string()
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
            check(&e, &scope()).unwrap_or_else(|e| panic!("{source}: {e}"));
        }
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
    fn conditions_must_be_bools_and_lists_lists() {
        let e =
            Expression::compile("self.spec.size", "spec.steps[0].child.includeWhen[0]").unwrap();
        let err = check_condition(&e, &scope()).unwrap_err().to_string();
        assert_eq!(
            err,
            "spec.steps[0].child.includeWhen[0]: ${self.spec.size}: expected a bool, the expression yields a number"
        );
        let e = Expression::compile("self.spec.greeting", "p").unwrap();
        assert!(check_list(&e, &scope()).is_err());
        let e = Expression::compile("self.spec.items", "p").unwrap();
        assert!(matches!(check_list(&e, &scope()).unwrap(), Ty::Object(_)));
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
        let mut errors = Vec::new();
        check_template(
            &template,
            Some(&config_map),
            "spec.steps[0].child.template",
            &scope(),
            &mut errors,
        );
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
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
