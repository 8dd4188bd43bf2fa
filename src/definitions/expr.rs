//! Expressions and templates of a definition: `${...}` CEL inside string values, compiled
//! once at load and evaluated over named bindings (`self`, `each`, step ids).
//!
//! A string that is exactly one `${expr}` takes the expression's value (a number stays a
//! number, an object an object); a string with text around or several expressions is
//! interpolated, each value written as text.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use cel::Program;
use cel::common::ast::IdedExpr;
use cel::common::types::CelTimestamp;
use jiff::Timestamp;
use serde_json::{Map, Value};

use super::error::DefinitionError;
use crate::cel::{CelError, Direct, VariableReads, env, invalid, to_chrono};

/// The values an expression may read, by name.
pub type Bindings = BTreeMap<String, Arc<Value>>;

/// One compiled CEL expression, with where it was written.
#[derive(Clone)]
pub struct Expression {
    source: String,
    path: String,
    program: Arc<Program>,
    reads: Arc<VariableReads>,
    /// Its direct form, if it has one (see `crate::cel::Direct`).
    direct: Option<Arc<Direct>>,
    /// How it was written, when a translation renamed its variables.
    written: Option<Arc<dyn Written>>,
}

/// How an expression was written before a translation renamed its variables (a KRO RGD's
/// `schema`, read as `self`): what every message about it quotes, in the written names.
pub trait Written: fmt::Debug + Send + Sync {
    /// The expression as written (without `${}`).
    fn text(&self) -> &str;
    /// A message about the translated expression, in the written names.
    fn respell(&self, message: &str) -> String;
}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ${{{}}}", self.path, self.source)
    }
}

/// `${...}` as written: how every message quotes the expression.
impl fmt::Display for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${{{}}}", self.written())
    }
}

/// Why an expression could not be evaluated (at reconcile time).
#[derive(Clone, Debug, thiserror::Error)]
#[error("{path}: ${{{expression}}}: {message}")]
pub struct EvalError {
    /// Where the expression is written in the definition.
    pub path: String,
    /// The expression.
    pub expression: String,
    /// What went wrong.
    pub message: String,
}

impl EvalError {
    /// Whether it failed only because the data it reads is not there yet: a key absent, a
    /// name not bound, an index past a list's end. KRO waits for such an expression to
    /// evaluate (its `celDataPendingPatterns`) instead of calling it an error.
    pub fn is_data_pending(&self) -> bool {
        ["no such key", "undeclared reference", "index out of range"]
            .iter()
            .any(|pending| self.message.starts_with(pending))
    }
}

impl Expression {
    /// Compiles `source` (without `${}`), written at `path` in the definition.
    pub fn compile(source: &str, path: &str) -> Result<Self, DefinitionError> {
        let env = env().map_err(|e| DefinitionError::new(path, e.to_string()))?;
        let program = env.compile(source).map_err(|errors| {
            let CelError::Invalid {
                line,
                column,
                message,
                snippet,
                ..
            } = invalid(source, &errors)
            else {
                return DefinitionError::new(path, "invalid expression");
            };
            DefinitionError::new(path, format!("${{{source}}}: {message}"))
                .at(line, column, snippet)
        })?;
        let reads = Arc::new(VariableReads::of(program.expression()));
        let direct = Direct::compile_over_bindings(program.expression()).map(Arc::new);
        Ok(Self {
            source: source.to_owned(),
            path: path.to_owned(),
            program: Arc::new(program),
            reads,
            direct,
            written: None,
        })
    }

    /// The expression compiled (without `${}`): for a translated one, the translation.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The expression as its author wrote it (without `${}`), which messages quote: the
    /// source, or for a translated one (a KRO RGD's) the text before the translation.
    pub fn written(&self) -> &str {
        self.written.as_deref().map_or(&self.source, |w| w.text())
    }

    /// Gives a translated expression the text it was written as.
    pub fn written_as(&mut self, written: Arc<dyn Written>) {
        self.written = Some(written);
    }

    /// Where it is written in the definition.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The root of its syntax tree.
    pub fn ast(&self) -> &IdedExpr {
        self.program.expression()
    }

    /// The 1-based line and column where the node `id` starts in the expression.
    pub fn position_of(&self, id: u64) -> Option<(usize, usize)> {
        let (start, _) = self.program.source_info().offset_for(id)?;
        let before = self.source.get(..start as usize)?;
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        Some((line, column))
    }

    /// The names the expression reads (free identifiers, not comprehension variables).
    pub fn variables(&self) -> Vec<String> {
        self.reads.names().map(str::to_owned).collect()
    }

    /// The paths below the variable `name` the expression reads whole (`[]`: all of it),
    /// if it reads `name` at all.
    pub(crate) fn paths_read(&self, name: &str) -> Option<Vec<Vec<String>>> {
        self.reads.paths_read(name)
    }

    /// Evaluates over `bindings` and `now`. An expression the direct evaluator knows is
    /// read from the bindings' JSON in place; otherwise (or where it cannot tell) only the
    /// bindings the expression names are bound, each converted only as far as the
    /// expression reads it.
    pub fn evaluate(&self, bindings: &Bindings, now: Timestamp) -> Result<Value, EvalError> {
        if let Some(value) = self.direct.as_ref().and_then(|d| d.value(bindings).ok()) {
            return Ok(value);
        }
        let env = env().map_err(|e| self.error(e.to_string()))?;
        let mut ctx = cel::Context::with_env(env);
        for name in self.reads.names() {
            if name == "now" {
                if let Some(now) = to_chrono(now) {
                    ctx.add_variable_as_val("now", Box::new(CelTimestamp::from(now)));
                }
            } else if let Some(value) = bindings.get(name) {
                self.reads.bind_json(&mut ctx, name, value);
            }
        }
        let value = self
            .program
            .execute(&ctx)
            .map_err(|e| self.error(crate::cel::describe(&e)))?;
        crate::cel::to_json(&value).map_err(|message| self.error(message))
    }

    /// Evaluates a condition: true, false, or an error naming the wrong type.
    pub fn test(&self, bindings: &Bindings, now: Timestamp) -> Result<bool, EvalError> {
        match self.evaluate(bindings, now)? {
            Value::Bool(b) => Ok(b),
            other => Err(self.error(format!(
                "expected a bool, the result is {}",
                json_type(&other)
            ))),
        }
    }

    /// An evaluation error of this expression, quoting it as written.
    pub fn error(&self, message: impl Into<String>) -> EvalError {
        let message = message.into();
        EvalError {
            path: self.path.clone(),
            expression: self.written().to_owned(),
            message: match &self.written {
                Some(written) => written.respell(&message),
                None => message,
            },
        }
    }
}

/// The JSON type of a value, as a message names it.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(n) if n.is_f64() => "a double",
        Value::Number(_) => "an int",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// A string value of a template: literal text and expressions.
#[derive(Clone, Debug)]
pub enum Text {
    /// No expression: used as written.
    Literal(String),
    /// Exactly one `${expr}`: takes the expression's value.
    Whole(Expression),
    /// Text and expressions, joined as a string.
    Interpolated(Vec<Segment>),
}

/// A part of an interpolated string.
#[derive(Clone, Debug)]
pub enum Segment {
    /// Text as written.
    Literal(String),
    /// An expression whose value is written as text.
    Expr(Expression),
}

impl Text {
    /// Parses the `${...}` in `text`, written at `path`.
    pub fn parse(text: &str, path: &str) -> Result<Self, DefinitionError> {
        let pieces = split(text).map_err(|message| DefinitionError::new(path, message))?;
        if pieces.iter().all(|p| matches!(p, Piece::Text(_))) {
            return Ok(Text::Literal(text.to_owned()));
        }
        if let [Piece::Expr(source)] = pieces.as_slice() {
            return Ok(Text::Whole(Expression::compile(source, path)?));
        }
        let segments = pieces
            .into_iter()
            .map(|piece| match piece {
                Piece::Text(t) => Ok(Segment::Literal(t)),
                Piece::Expr(source) => Expression::compile(&source, path).map(Segment::Expr),
            })
            .collect::<Result<_, _>>()?;
        Ok(Text::Interpolated(segments))
    }

    /// The expressions in it.
    pub fn expressions(&self) -> Vec<&Expression> {
        match self {
            Text::Literal(_) => Vec::new(),
            Text::Whole(e) => vec![e],
            Text::Interpolated(segments) => segments
                .iter()
                .filter_map(|s| match s {
                    Segment::Expr(e) => Some(e),
                    Segment::Literal(_) => None,
                })
                .collect(),
        }
    }

    /// The expressions in it, to give them their written text.
    pub fn expressions_mut(&mut self) -> Vec<&mut Expression> {
        match self {
            Text::Literal(_) => Vec::new(),
            Text::Whole(e) => vec![e],
            Text::Interpolated(segments) => segments
                .iter_mut()
                .filter_map(|s| match s {
                    Segment::Expr(e) => Some(e),
                    Segment::Literal(_) => None,
                })
                .collect(),
        }
    }

    /// Its value over `bindings`.
    pub fn evaluate(&self, bindings: &Bindings, now: Timestamp) -> Result<Value, EvalError> {
        match self {
            Text::Literal(t) => Ok(Value::String(t.clone())),
            Text::Whole(e) => e.evaluate(bindings, now),
            Text::Interpolated(segments) => {
                let mut out = String::new();
                for segment in segments {
                    match segment {
                        Segment::Literal(t) => out.push_str(t),
                        Segment::Expr(e) => write_text(&mut out, &e.evaluate(bindings, now)?, e)?,
                    }
                }
                Ok(Value::String(out))
            }
        }
    }

    /// Evaluates to a string (a name, a namespace, an id).
    pub fn evaluate_string(
        &self,
        bindings: &Bindings,
        now: Timestamp,
    ) -> Result<String, EvalError> {
        match self.evaluate(bindings, now)? {
            Value::String(s) => Ok(s),
            Value::Number(n) => Ok(n.to_string()),
            other => Err(match self {
                Text::Whole(e) => e.error(format!(
                    "expected a string, the result is {}",
                    json_type(&other)
                )),
                _ => EvalError {
                    path: String::new(),
                    expression: String::new(),
                    message: format!("expected a string, got {}", json_type(&other)),
                },
            }),
        }
    }
}

/// Writes `value`, the value of `expression` in an interpolated string, as text: a string
/// as it is, a number or bool as JSON writes it, null as nothing; a list or map is an error.
pub(super) fn write_text(
    out: &mut String,
    value: &Value,
    expression: &Expression,
) -> Result<(), EvalError> {
    match value {
        Value::String(s) => out.push_str(s),
        Value::Null => {}
        Value::Number(_) | Value::Bool(_) => out.push_str(&value.to_string()),
        other => {
            return Err(expression.error(format!(
                "{} cannot be written into a string",
                json_type(other)
            )));
        }
    }
    Ok(())
}

/// A piece of a string: text, or the source of a `${...}`.
enum Piece {
    Text(String),
    Expr(String),
}

/// Splits `text` at its `${...}`; braces and quotes inside an expression are matched.
fn split(text: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        if start > 0 {
            pieces.push(Piece::Text(rest[..start].to_owned()));
        }
        let body = &rest[start + 2..];
        let end = closing_brace(body).ok_or_else(|| {
            format!(
                "unterminated ${{ at character {} of {text:?}",
                text.len() - rest.len() + start + 1
            )
        })?;
        let source = body[..end].trim();
        if source.is_empty() {
            return Err(format!("empty ${{}} in {text:?}"));
        }
        pieces.push(Piece::Expr(source.to_owned()));
        rest = &body[end + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_owned()));
    }
    Ok(pieces)
}

/// The byte index of the `}` that closes an expression starting at `body[0]`.
fn closing_brace(body: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// A condition written as `${expr}` or as a bare expression.
pub fn condition(text: &str, path: &str) -> Result<Expression, DefinitionError> {
    let trimmed = text.trim();
    match trimmed.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
        Some(inner) if closing_brace(inner).is_none() => Expression::compile(inner.trim(), path),
        _ => Expression::compile(trimmed, path),
    }
}

/// A JSON value whose strings may hold expressions.
#[derive(Clone, Debug)]
pub enum Template {
    /// A string, maybe with expressions.
    Text(Text),
    /// A list of templates.
    List(Vec<Template>),
    /// A map of templates (keys are literal).
    Map(Vec<(String, Template)>),
    /// A number, bool or null, as written.
    Plain(Value),
}

impl Template {
    /// Compiles every string of `value`, written at `path`.
    pub fn compile(value: &Value, path: &str) -> Result<Self, DefinitionError> {
        Ok(match value {
            Value::String(s) => Template::Text(Text::parse(s, path)?),
            Value::Array(items) => Template::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| Template::compile(item, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(fields) => Template::Map(
                fields
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), Template::compile(v, &field_path(path, k))?)))
                    .collect::<Result<_, DefinitionError>>()?,
            ),
            other => Template::Plain(other.clone()),
        })
    }

    /// Every expression in the template.
    pub fn expressions(&self) -> Vec<&Expression> {
        match self {
            Template::Text(t) => t.expressions(),
            Template::List(items) => items.iter().flat_map(Template::expressions).collect(),
            Template::Map(fields) => fields.iter().flat_map(|(_, t)| t.expressions()).collect(),
            Template::Plain(_) => Vec::new(),
        }
    }

    /// Every expression in the template, to give them their written text.
    pub fn expressions_mut(&mut self) -> Vec<&mut Expression> {
        match self {
            Template::Text(t) => t.expressions_mut(),
            Template::List(items) => items
                .iter_mut()
                .flat_map(Template::expressions_mut)
                .collect(),
            Template::Map(fields) => fields
                .iter_mut()
                .flat_map(|(_, t)| t.expressions_mut())
                .collect(),
            Template::Plain(_) => Vec::new(),
        }
    }

    /// The value over `bindings`.
    pub fn evaluate(&self, bindings: &Bindings, now: Timestamp) -> Result<Value, EvalError> {
        Ok(match self {
            Template::Text(t) => t.evaluate(bindings, now)?,
            Template::List(items) => Value::Array(
                items
                    .iter()
                    .map(|t| t.evaluate(bindings, now))
                    .collect::<Result<_, _>>()?,
            ),
            Template::Map(fields) => {
                let mut map = Map::new();
                for (key, template) in fields {
                    map.insert(key.clone(), template.evaluate(bindings, now)?);
                }
                Value::Object(map)
            }
            Template::Plain(v) => v.clone(),
        })
    }

    /// The value over `bindings`, leaving out each field of a map that cannot be computed
    /// yet (KRO's status fields), with why.
    pub fn evaluate_available(
        &self,
        bindings: &Bindings,
        now: Timestamp,
    ) -> (Option<Value>, Vec<EvalError>) {
        match self {
            Template::Map(fields) => {
                let mut map = Map::new();
                let mut missing = Vec::new();
                for (key, template) in fields {
                    let (value, errors) = template.evaluate_available(bindings, now);
                    missing.extend(errors);
                    if let Some(value) = value {
                        map.insert(key.clone(), value);
                    }
                }
                (Some(Value::Object(map)), missing)
            }
            other => match other.evaluate(bindings, now) {
                Ok(value) => (Some(value), Vec::new()),
                Err(error) => (None, vec![error]),
            },
        }
    }
}

/// `path.field`, or `path["odd.field"]` for a key that is not a plain name.
pub fn field_path(path: &str, field: &str) -> String {
    let plain = field
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => field.to_owned(),
        (_, true) => format!("{path}.{field}"),
        (_, false) => format!("{path}[{field:?}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bindings(parent: Value) -> Bindings {
        Bindings::from([("self".to_owned(), Arc::new(parent))])
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    #[test]
    fn whole_expressions_keep_their_type_and_text_interpolates() {
        let parent = json!({"metadata": {"name": "w1"}, "spec": {"size": 3, "tags": ["a"]}});
        let template = Template::compile(
            &json!({"n": "${self.spec.size}", "s": "${self.metadata.name}-config",
                    "t": "${self.spec.tags}", "x": "${ self.spec.size + 1 } of ${self.metadata.name}",
                    "lit": "plain", "num": 7}),
            "spec.template",
        )
        .unwrap();
        let value = template.evaluate(&bindings(parent), now()).unwrap();
        assert_eq!(
            value,
            json!({"n": 3, "s": "w1-config", "t": ["a"], "x": "4 of w1", "lit": "plain", "num": 7})
        );
    }

    #[test]
    fn braces_and_quotes_inside_expressions_are_matched() {
        let text = Text::parse("${{'a': '}'}['a']}!", "p").unwrap();
        assert_eq!(text.evaluate(&Bindings::new(), now()).unwrap(), json!("}!"));
    }

    #[test]
    fn parse_errors_name_the_path_and_position() {
        let err = Text::parse("x-${self.spec.a ==}", "spec.steps[0].child.template.data.a")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("spec.steps[0].child.template.data.a: ${self.spec.a ==}: "),
            "{err}"
        );
        assert!(err.contains("at 1:"), "{err}");
        let err = Text::parse("${self.spec", "p").unwrap_err().to_string();
        assert!(err.contains("unterminated ${ at character 1"), "{err}");
    }

    #[test]
    fn evaluation_errors_name_the_expression() {
        let text = Text::parse(
            "${self.spec.missing}",
            "spec.steps[1].child.template.data.g",
        )
        .unwrap();
        let err = text
            .evaluate(&bindings(json!({"spec": {}})), now())
            .unwrap_err();
        assert_eq!(err.path, "spec.steps[1].child.template.data.g");
        assert_eq!(err.expression, "self.spec.missing");
    }

    #[test]
    fn variables_are_free_identifiers() {
        let e =
            Expression::compile("self.spec.items.all(i, i.size < config.data.max)", "p").unwrap();
        assert_eq!(e.variables(), vec!["config".to_owned(), "self".to_owned()]);
    }

    #[test]
    fn conditions_take_bare_or_wrapped_expressions() {
        let parent = bindings(json!({"spec": {"size": 3}}));
        for text in [
            "${self.spec.size > 2}",
            "self.spec.size > 2",
            " ${ self.spec.size > 2 } ",
        ] {
            assert!(
                condition(text, "p").unwrap().test(&parent, now()).unwrap(),
                "{text}"
            );
        }
        let err = condition("self.spec.size", "p")
            .unwrap()
            .test(&parent, now())
            .unwrap_err();
        assert!(
            err.message
                .contains("expected a bool, the result is an int"),
            "{err}"
        );
    }
}
