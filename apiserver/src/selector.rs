//! Kubernetes label selectors (`labelSelector=`) and field selectors
//! (`fieldSelector=`), parsed the way kube-apiserver parses them
//! (k8s.io/apimachinery/pkg/labels and pkg/fields) and matched against
//! objects held as `serde_json::Value`.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::validation;

/// Why a label or field selector was rejected.
///
/// Positions are 0-based byte offsets into the selector text.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SelectorError {
    /// The label selector text does not follow the grammar.
    #[error(
        "unable to parse requirement: found {found}, expected: {expected} at position {position} in selector \"{selector}\""
    )]
    Syntax {
        /// The whole selector text.
        selector: String,
        /// Where the offending token starts.
        position: usize,
        /// The offending token, quoted, or `end of string`.
        found: String,
        /// What the parser expected instead.
        expected: &'static str,
    },
    /// A label key is not a valid qualified name.
    #[error(
        "unable to parse requirement: invalid label key \"{key}\" at position {position} in selector \"{selector}\": {message}"
    )]
    InvalidLabelKey {
        /// The whole selector text.
        selector: String,
        /// Where the key starts.
        position: usize,
        /// The rejected key.
        key: String,
        /// Kubernetes' validation messages, joined with `; `.
        message: String,
    },
    /// A label value is not a valid label value.
    #[error(
        "unable to parse requirement: invalid label value \"{value}\" for key \"{key}\" at position {position} in selector \"{selector}\": {message}"
    )]
    InvalidLabelValue {
        /// The whole selector text.
        selector: String,
        /// Where the value starts.
        position: usize,
        /// The key the value belongs to.
        key: String,
        /// The rejected value.
        value: String,
        /// Kubernetes' validation messages, joined with `; `.
        message: String,
    },
    /// The operand of `>` or `<` is not a 64-bit integer.
    #[error(
        "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer, found \"{value}\" for key \"{key}\" at position {position} in selector \"{selector}\""
    )]
    NotAnInteger {
        /// The whole selector text.
        selector: String,
        /// Where the value starts.
        position: usize,
        /// The key the value belongs to.
        key: String,
        /// The rejected value.
        value: String,
    },
    /// A field selector term has no `=`, `==` or `!=` operator.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    InvalidFieldTerm {
        /// The whole selector text.
        selector: String,
        /// The term that could not be split.
        term: String,
    },
    /// A field selector value contains a backslash escape other than `\\`, `\,`, `\=`.
    #[error("invalid field selector: invalid escape sequence: {sequence}")]
    InvalidEscape {
        /// The bad sequence (`\x`, or a lone trailing `\`).
        sequence: String,
    },
    /// A field selector value contains an unescaped `,` or `=`.
    #[error("invalid field selector: unescaped character in value: '{character}'")]
    UnescapedCharacter {
        /// The character that must be escaped.
        character: char,
    },
    /// The field is not selectable for this kind (kube-apiserver's exact wording).
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}

// ---------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------

/// A parsed label selector (`labelSelector=` query parameter): an AND of requirements.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// One `key <op> values` requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Operator,
}

/// Requirement operators; `=`/`==` are `In` with one value, `!=` is `NotIn`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Operator {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    GreaterThan(i64),
    LessThan(i64),
}

impl LabelSelector {
    /// Parses a label selector; the empty string (or only whitespace) selects everything.
    pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
        let requirements = Parser::new(s).parse()?;
        Ok(LabelSelector { requirements })
    }

    /// True if every requirement holds for `labels` (`None` = object has no labels).
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl Requirement {
    fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let value = labels.and_then(|l| l.get(&self.key)).map(scalar_text);
        match &self.op {
            Operator::In(values) => value.is_some_and(|v| values.iter().any(|x| *x == *v)),
            Operator::NotIn(values) => value.is_none_or(|v| values.iter().all(|x| *x != *v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan(bound) => parse_int(value.as_deref()).is_some_and(|n| n > *bound),
            Operator::LessThan(bound) => parse_int(value.as_deref()).is_some_and(|n| n < *bound),
        }
    }
}

fn parse_int(value: Option<&str>) -> Option<i64> {
    value.and_then(|v| v.parse::<i64>().ok())
}

/// The text a JSON scalar compares as: strings as-is, null as "", others as JSON text.
fn scalar_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s.as_str()),
        Value::Null => Cow::Borrowed(""),
        other => Cow::Owned(other.to_string()),
    }
}

// ----- lexer ---------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    OpenPar,
    ClosedPar,
    Comma,
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    In,
    NotIn,
    Identifier,
}

#[derive(Debug, Clone, Copy)]
struct Item<'a> {
    tok: Tok,
    lit: &'a str,
    pos: usize,
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the selector into tokens; the last item is always `End`.
///
/// Works on bytes: every delimiter is ASCII, so slices stay on char boundaries.
fn lex(s: &str) -> Vec<Item<'_>> {
    let bytes = s.as_bytes();
    let mut items = Vec::new();
    let mut pos = 0;
    loop {
        while bytes.get(pos).is_some_and(|&b| is_whitespace(b)) {
            pos += 1;
        }
        let Some(&b) = bytes.get(pos) else {
            items.push(Item {
                tok: Tok::End,
                lit: "",
                pos,
            });
            return items;
        };
        let (tok, len) = if is_special(b) {
            special_token(b, bytes.get(pos + 1).copied())
        } else {
            identifier_token(&bytes[pos..])
        };
        let lit = s.get(pos..pos + len).unwrap_or_default();
        items.push(Item { tok, lit, pos });
        pos += len;
    }
}

/// The operator starting with `b` (longest match) and its length.
fn special_token(b: u8, next: Option<u8>) -> (Tok, usize) {
    match (b, next) {
        (b'=', Some(b'=')) => (Tok::DoubleEquals, 2),
        (b'!', Some(b'=')) => (Tok::NotEquals, 2),
        (b'=', _) => (Tok::Equals, 1),
        (b'!', _) => (Tok::Not, 1),
        (b'(', _) => (Tok::OpenPar, 1),
        (b')', _) => (Tok::ClosedPar, 1),
        (b',', _) => (Tok::Comma, 1),
        (b'>', _) => (Tok::GreaterThan, 1),
        _ => (Tok::LessThan, 1),
    }
}

/// An identifier or keyword running up to the next delimiter, and its length.
fn identifier_token(rest: &[u8]) -> (Tok, usize) {
    let len = rest
        .iter()
        .position(|&b| is_special(b) || is_whitespace(b))
        .unwrap_or(rest.len());
    let tok = match &rest[..len] {
        b"in" => Tok::In,
        b"notin" => Tok::NotIn,
        _ => Tok::Identifier,
    };
    (tok, len)
}

// ----- parser --------------------------------------------------------------

/// In value position the keywords `in`/`notin` are plain identifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    KeyAndOperator,
    Values,
}

/// A value as written, with its position (for error messages).
type RawValue<'a> = (&'a str, usize);

struct Parser<'a> {
    selector: &'a str,
    items: Vec<Item<'a>>,
    index: usize,
}

impl<'a> Parser<'a> {
    fn new(selector: &'a str) -> Self {
        Parser {
            selector,
            items: lex(selector),
            index: 0,
        }
    }

    fn peek(&self, ctx: Ctx) -> Item<'a> {
        let end = Item {
            tok: Tok::End,
            lit: "",
            pos: self.selector.len(),
        };
        let mut item = self.items.get(self.index).copied().unwrap_or(end);
        if ctx == Ctx::Values && matches!(item.tok, Tok::In | Tok::NotIn) {
            item.tok = Tok::Identifier;
        }
        item
    }

    fn next(&mut self, ctx: Ctx) -> Item<'a> {
        let item = self.peek(ctx);
        if self.index + 1 < self.items.len() {
            self.index += 1;
        }
        item
    }

    fn syntax(&self, item: Item<'_>, expected: &'static str) -> SelectorError {
        let found = if item.tok == Tok::End {
            "end of string".to_string()
        } else {
            format!("'{}'", item.lit)
        };
        SelectorError::Syntax {
            selector: self.selector.to_string(),
            position: item.pos,
            found,
            expected,
        }
    }

    /// `<requirement> ("," <requirement>)*`, or nothing at all.
    fn parse(mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let item = self.peek(Ctx::Values);
            match item.tok {
                Tok::End => return Ok(requirements),
                Tok::Identifier | Tok::Not => {}
                _ => return Err(self.syntax(item, "!, identifier, or 'end of string'")),
            }
            requirements.push(self.parse_requirement()?);
            let after = self.next(Ctx::Values);
            match after.tok {
                Tok::End => return Ok(requirements),
                Tok::Comma => self.expect_requirement_after_comma()?,
                _ => return Err(self.syntax(after, "',' or 'end of string'")),
            }
        }
    }

    fn expect_requirement_after_comma(&self) -> Result<(), SelectorError> {
        let item = self.peek(Ctx::Values);
        match item.tok {
            Tok::Identifier | Tok::Not => Ok(()),
            _ => Err(self.syntax(item, "identifier after ','")),
        }
    }

    /// `[!] KEY [ ("in"|"notin") "(" VALUES ")" | ("="|"=="|"!="|">"|"<") VALUE ]`
    fn parse_requirement(&mut self) -> Result<Requirement, SelectorError> {
        let (key, unary) = self.parse_key()?;
        if let Some(op) = unary {
            return Ok(Requirement {
                key: key.to_string(),
                op,
            });
        }
        let op_item = self.next(Ctx::KeyAndOperator);
        let values = match op_item.tok {
            Tok::In | Tok::NotIn => self.parse_value_set()?,
            Tok::Equals | Tok::DoubleEquals | Tok::NotEquals | Tok::GreaterThan | Tok::LessThan => {
                self.parse_exact_value()?
            }
            _ => return Err(self.syntax(op_item, "in, notin, =, ==, !=, >, <")),
        };
        let op = self.build_operator(key, op_item.tok, &values)?;
        Ok(Requirement {
            key: key.to_string(),
            op,
        })
    }

    /// Reads `[!] KEY`, validates the key and infers `Exists`/`DoesNotExist`.
    fn parse_key(&mut self) -> Result<(&'a str, Option<Operator>), SelectorError> {
        let mut item = self.next(Ctx::Values);
        let negated = item.tok == Tok::Not;
        if negated {
            item = self.next(Ctx::Values);
        }
        if item.tok != Tok::Identifier {
            return Err(self.syntax(item, "identifier"));
        }
        let errs = validation::qualified_name(item.lit);
        if !errs.is_empty() {
            return Err(SelectorError::InvalidLabelKey {
                selector: self.selector.to_string(),
                position: item.pos,
                key: item.lit.to_string(),
                message: errs.join("; "),
            });
        }
        let unary = if negated {
            Some(Operator::DoesNotExist)
        } else if matches!(self.peek(Ctx::Values).tok, Tok::End | Tok::Comma) {
            Some(Operator::Exists)
        } else {
            None
        };
        Ok((item.lit, unary))
    }

    /// `"(" [VALUE] ("," [VALUE])* ")"`; empty entries mean the empty value.
    fn parse_value_set(&mut self) -> Result<Vec<RawValue<'a>>, SelectorError> {
        let open = self.next(Ctx::Values);
        if open.tok != Tok::OpenPar {
            return Err(self.syntax(open, "'('"));
        }
        let first = self.peek(Ctx::Values);
        match first.tok {
            Tok::ClosedPar => {
                self.next(Ctx::Values);
                Ok(vec![("", first.pos)])
            }
            Tok::Identifier | Tok::Comma => {
                let values = self.parse_value_list()?;
                let close = self.next(Ctx::Values);
                if close.tok != Tok::ClosedPar {
                    return Err(self.syntax(close, "')'"));
                }
                Ok(values)
            }
            _ => Err(self.syntax(first, "',', ')' or identifier")),
        }
    }

    /// The comma-separated list inside the parentheses, up to (not including) `)`.
    fn parse_value_list(&mut self) -> Result<Vec<RawValue<'a>>, SelectorError> {
        let mut values = Vec::new();
        loop {
            let item = self.next(Ctx::Values);
            match item.tok {
                Tok::Identifier => {
                    values.push((item.lit, item.pos));
                    let follow = self.peek(Ctx::Values);
                    match follow.tok {
                        Tok::Comma => {}
                        Tok::ClosedPar => return Ok(values),
                        _ => return Err(self.syntax(follow, "',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if values.is_empty() {
                        values.push(("", item.pos)); // "(,"
                    }
                    let follow = self.peek(Ctx::Values);
                    match follow.tok {
                        Tok::ClosedPar => {
                            values.push(("", follow.pos)); // ",)"
                            return Ok(values);
                        }
                        Tok::Comma => {
                            self.next(Ctx::Values);
                            values.push(("", follow.pos)); // ",,"
                        }
                        _ => {}
                    }
                }
                _ => return Err(self.syntax(item, "',', or identifier")),
            }
        }
    }

    /// The single (possibly empty) value after `=`, `==`, `!=`, `>`, `<`.
    fn parse_exact_value(&mut self) -> Result<Vec<RawValue<'a>>, SelectorError> {
        let item = self.peek(Ctx::Values);
        if matches!(item.tok, Tok::End | Tok::Comma) {
            return Ok(vec![("", item.pos)]);
        }
        let item = self.next(Ctx::Values);
        if item.tok != Tok::Identifier {
            return Err(self.syntax(item, "identifier"));
        }
        Ok(vec![(item.lit, item.pos)])
    }

    /// Validates the values and turns the operator token into an `Operator`.
    fn build_operator(
        &self,
        key: &str,
        tok: Tok,
        values: &[RawValue<'a>],
    ) -> Result<Operator, SelectorError> {
        let bound = match tok {
            Tok::GreaterThan | Tok::LessThan => Some(self.integer_operand(key, values)?),
            _ => None,
        };
        for &(value, position) in values {
            self.check_label_value(key, value, position)?;
        }
        let mut set: Vec<String> = values.iter().map(|(v, _)| (*v).to_string()).collect();
        set.sort();
        set.dedup();
        Ok(match (tok, bound) {
            (Tok::GreaterThan, Some(n)) => Operator::GreaterThan(n),
            (Tok::LessThan, Some(n)) => Operator::LessThan(n),
            (Tok::NotIn | Tok::NotEquals, _) => Operator::NotIn(set),
            _ => Operator::In(set),
        })
    }

    fn integer_operand(&self, key: &str, values: &[RawValue<'a>]) -> Result<i64, SelectorError> {
        let (value, position) = values.first().copied().unwrap_or(("", self.selector.len()));
        value
            .parse::<i64>()
            .map_err(|_| SelectorError::NotAnInteger {
                selector: self.selector.to_string(),
                position,
                key: key.to_string(),
                value: value.to_string(),
            })
    }

    fn check_label_value(
        &self,
        key: &str,
        value: &str,
        position: usize,
    ) -> Result<(), SelectorError> {
        let errs = validation::label_value(value);
        if errs.is_empty() {
            return Ok(());
        }
        Err(SelectorError::InvalidLabelValue {
            selector: self.selector.to_string(),
            position,
            key: key.to_string(),
            value: value.to_string(),
            message: errs.join("; "),
        })
    }
}

/// A `LabelSelector` as `metav1.FormatLabelSelector` writes it: `app=web,tier in (a,b)`.
pub fn format_label_selector(selector: &Value) -> String {
    let mut parts: Vec<String> = selector["matchLabels"]
        .as_object()
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    for expression in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = expression["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let values = values.join(",");
        parts.push(match expression["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({values})"),
        });
    }
    parts.join(",")
}

// ---------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------

/// A parsed field selector (`fieldSelector=`), e.g. `metadata.name=foo,metadata.namespace!=bar`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
    /// Whether the kind is built in: its field labels are read as kube's registries read
    /// them (omitted fields as their Go zero value, labels that are not JSON paths).
    builtin: bool,
}

/// Field labels of built-in kinds that are not the JSON path of their field.
const BUILTIN_FIELD_PATHS: &[(&str, &str)] = &[("source", "source.component")];

/// Field labels of built-in kinds whose Go field is a bool or a number, with the text of
/// its zero value: kube compares an omitted field as that (`spec.unschedulable=false`
/// selects a Node created without it).
const BUILTIN_ZERO_VALUES: &[(&str, &str)] = &[
    ("spec.unschedulable", "false"),
    ("spec.hostNetwork", "false"),
    ("status.replicas", "0"),
    ("status.successful", "0"),
];

#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    value: String,
    negated: bool,
}

impl FieldSelector {
    /// Parses a field selector, accepting only fields listed in `supported`.
    ///
    /// As in Kubernetes, nothing is trimmed: `a = b` names the field `"a "`.
    /// Syntax errors are reported before unsupported fields; terms are checked
    /// in sorted order, so the reported field is deterministic.
    pub fn parse(s: &str, supported: &[&str]) -> Result<FieldSelector, SelectorError> {
        let mut parts = split_terms(s);
        parts.sort_unstable();
        let mut terms = Vec::new();
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            terms.push(parse_field_term(s, part)?);
        }
        if let Some(bad) = terms
            .iter()
            .find(|t| !supported.contains(&t.field.as_str()))
        {
            return Err(SelectorError::UnsupportedField(bad.field.clone()));
        }
        Ok(FieldSelector {
            terms,
            builtin: false,
        })
    }

    /// The same selector for a built-in kind: field labels are read as kube's registries
    /// read them (an omitted bool or number as `false` or `0`, `source` as
    /// `source.component`).
    pub fn for_builtin_kind(self) -> Self {
        FieldSelector {
            builtin: true,
            ..self
        }
    }

    /// True if every term holds for `object`. A missing (or null) field equals "" (or, on
    /// a built-in kind, its Go zero value); non-string values compare by their JSON text
    /// (`true`, `3`).
    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|t| {
            let actual = self.value_of(object, &t.field);
            (actual == t.value.as_str()) != t.negated
        })
    }

    /// The text a field label has on `object`.
    fn value_of<'v>(&self, object: &'v Value, label: &str) -> Cow<'v, str> {
        let builtin = |table: &[(&str, &'static str)]| {
            self.builtin
                .then(|| table.iter().find(|(known, _)| *known == label))
                .flatten()
                .map(|(_, value)| *value)
        };
        let path = builtin(BUILTIN_FIELD_PATHS).unwrap_or(label);
        match lookup(object, path).filter(|value| !value.is_null()) {
            Some(value) => scalar_text(value),
            None => Cow::Borrowed(builtin(BUILTIN_ZERO_VALUES).unwrap_or_default()),
        }
    }

    /// The value `field` is pinned to with `=`/`==`, if any (first such term).
    ///
    /// Meant for narrowing lookups; callers must still apply [`FieldSelector::matches`].
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| !t.negated && t.field == field)
            .map(|t| t.value.as_str())
    }
}

/// Follows a dotted path through nested JSON objects.
fn lookup<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.')
        .try_fold(object, |value, segment| value.get(segment))
}

/// Splits on commas that are not backslash-escaped (escapes are kept).
fn split_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(s.get(start..i).unwrap_or_default());
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(s.get(start..).unwrap_or_default());
    terms
}

/// Splits one term at its first operator (`!=`, `==`, `=`) and unescapes the value.
fn parse_field_term(selector: &str, term: &str) -> Result<FieldTerm, SelectorError> {
    let (field, negated, raw) =
        split_term(term).ok_or_else(|| SelectorError::InvalidFieldTerm {
            selector: selector.to_string(),
            term: term.to_string(),
        })?;
    Ok(FieldTerm {
        field: field.to_string(),
        value: unescape_value(raw)?,
        negated,
    })
}

/// `(field, negated, raw value)` split at the first operator in `term`.
fn split_term(term: &str) -> Option<(&str, bool, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let (field, rest) = term.split_at(i);
        if let Some(value) = rest.strip_prefix("!=") {
            return Some((field, true, value));
        }
        let value = rest.strip_prefix("==").or_else(|| rest.strip_prefix('='))?;
        Some((field, false, value))
    })
}

/// Undoes apimachinery `fields.EscapeValue` (`\\`, `\,`, `\=`).
fn unescape_value(raw: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => {
                    return Err(SelectorError::InvalidEscape {
                        sequence: format!("\\{e}"),
                    });
                }
                None => {
                    return Err(SelectorError::InvalidEscape {
                        sequence: "\\".to_string(),
                    });
                }
            },
            ',' | '=' => return Err(SelectorError::UnescapedCharacter { character: c }),
            _ => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_are_written_as_kube_writes_them() {
        let selector = json!({"matchLabels": {"app": "web", "tier": "front"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]},
                                 {"key": "gone", "operator": "DoesNotExist"}]});
        assert_eq!(
            format_label_selector(&selector),
            "app=web,tier=front,env in (a,b),!gone"
        );
    }

    fn labels(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn sel(s: &str) -> LabelSelector {
        match LabelSelector::parse(s) {
            Ok(sel) => sel,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    fn err(s: &str) -> SelectorError {
        match LabelSelector::parse(s) {
            Ok(sel) => panic!("{s:?} should not parse, got {sel:?}"),
            Err(e) => e,
        }
    }

    /// Asserts which of the label sets `selector` matches.
    fn check(selector: &str, cases: &[(Value, bool)]) {
        let s = sel(selector);
        for (set, want) in cases {
            let m = labels(set.clone());
            assert_eq!(s.matches(Some(&m)), *want, "{selector:?} against {set}");
        }
    }

    fn syntax(s: &str) -> (usize, String, &'static str) {
        match err(s) {
            SelectorError::Syntax {
                position,
                found,
                expected,
                selector,
            } => {
                assert_eq!(selector, s);
                (position, found, expected)
            }
            other => panic!("{s:?}: expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn empty_selector_matches_everything() {
        for s in ["", "   ", "\t\n"] {
            let s = sel(s);
            assert!(s.matches(None));
            assert!(s.matches(Some(&labels(json!({"a": "b"})))));
        }
        assert!(!sel("a").matches(None));
    }

    #[test]
    fn equality_operators() {
        for s in ["a=b", "a==b", " a = b ", "a == b"] {
            check(
                s,
                &[
                    (json!({"a": "b"}), true),
                    (json!({"a": "c"}), false),
                    (json!({"x": "b"}), false),
                    (json!({}), false),
                ],
            );
        }
        assert!(!sel("a=b").matches(None));
    }

    #[test]
    fn not_equals_matches_missing_key() {
        check(
            "a!=b",
            &[
                (json!({"a": "b"}), false),
                (json!({"a": "c"}), true),
                (json!({}), true),
            ],
        );
        assert!(sel("a!=b").matches(None));
    }

    #[test]
    fn empty_values() {
        check(
            "a=",
            &[
                (json!({"a": ""}), true),
                (json!({"a": "x"}), false),
                (json!({}), false),
            ],
        );
        check(
            "a=,b",
            &[
                (json!({"a": "", "b": "1"}), true),
                (json!({"a": ""}), false),
            ],
        );
        check(
            "a!=",
            &[
                (json!({"a": ""}), false),
                (json!({"a": "x"}), true),
                (json!({}), true),
            ],
        );
    }

    #[test]
    fn in_and_notin() {
        check(
            "env in (prod, staging)",
            &[
                (json!({"env": "prod"}), true),
                (json!({"env": "staging"}), true),
                (json!({"env": "dev"}), false),
                (json!({}), false),
            ],
        );
        check(
            "env notin (prod,staging)",
            &[
                (json!({"env": "prod"}), false),
                (json!({"env": "dev"}), true),
                (json!({}), true),
            ],
        );
        assert!(sel("env notin (prod)").matches(None));
        assert!(!sel("env in (prod)").matches(None));
    }

    #[test]
    fn value_sets_with_empty_entries() {
        for s in [
            "a in ()",
            "a in (,)",
            "a in (,x)",
            "a in (x,)",
            "a in (x,,y)",
        ] {
            check(s, &[(json!({"a": ""}), true), (json!({"z": ""}), false)]);
        }
        check(
            "a in (x,,y)",
            &[(json!({"a": "y"}), true), (json!({"a": "z"}), false)],
        );
        check(
            "a notin ()",
            &[(json!({"a": ""}), false), (json!({"a": "v"}), true)],
        );
    }

    #[test]
    fn exists_and_does_not_exist() {
        check(
            "a",
            &[
                (json!({"a": ""}), true),
                (json!({"a": "x"}), true),
                (json!({"b": "x"}), false),
            ],
        );
        check(
            "!a",
            &[
                (json!({"a": ""}), false),
                (json!({"b": "x"}), true),
                (json!({}), true),
            ],
        );
        check(" ! a ", &[(json!({"a": "1"}), false), (json!({}), true)]);
        assert!(!sel("a").matches(None));
        assert!(sel("!a").matches(None));
    }

    #[test]
    fn greater_and_less_than() {
        check(
            "n>5",
            &[
                (json!({"n": "6"}), true),
                (json!({"n": "5"}), false),
                (json!({"n": "x"}), false),
                (json!({}), false),
            ],
        );
        check(
            "n < 5",
            &[
                (json!({"n": "4"}), true),
                (json!({"n": "-10"}), true),
                (json!({"n": "5"}), false),
                (json!({"n": "4.5"}), false),
            ],
        );
        check(
            "n<0010",
            &[(json!({"n": "9"}), true), (json!({"n": "10"}), false)],
        );
    }

    #[test]
    fn keywords_are_identifiers_in_value_position() {
        check("in", &[(json!({"in": "x"}), true), (json!({}), false)]);
        check(
            "in in (in, notin)",
            &[(json!({"in": "notin"}), true), (json!({"in": "x"}), false)],
        );
        check("a=in", &[(json!({"a": "in"}), true)]);
        check(
            "notin notin (x)",
            &[
                (json!({"notin": "y"}), true),
                (json!({"notin": "x"}), false),
            ],
        );
    }

    #[test]
    fn several_requirements_are_anded() {
        let s = "app.kubernetes.io/name=web, tier in (fe,be),!legacy,version, env!=dev";
        check(
            s,
            &[
                (
                    json!({"app.kubernetes.io/name": "web", "tier": "fe", "version": "1"}),
                    true,
                ),
                (
                    json!({"app.kubernetes.io/name": "web", "tier": "be", "version": "1", "env": "prod"}),
                    true,
                ),
                (
                    json!({"app.kubernetes.io/name": "web", "tier": "fe", "version": "1", "env": "dev"}),
                    false,
                ),
                (
                    json!({"app.kubernetes.io/name": "web", "tier": "fe", "version": "1", "legacy": "y"}),
                    false,
                ),
                (
                    json!({"app.kubernetes.io/name": "web", "tier": "fe"}),
                    false,
                ),
                (
                    json!({"app.kubernetes.io/name": "api", "tier": "fe", "version": "1"}),
                    false,
                ),
            ],
        );
    }

    #[test]
    fn non_string_label_values_compare_by_json_text() {
        check(
            "a=true,b=3",
            &[
                (json!({"a": true, "b": 3}), true),
                (json!({"a": false, "b": 3}), false),
            ],
        );
    }

    #[test]
    fn syntax_errors_name_token_and_position() {
        assert_eq!(syntax("a in (b"), (7, "end of string".into(), "',' or ')'"));
        assert_eq!(syntax("a in b"), (5, "'b'".into(), "'('"));
        assert_eq!(
            syntax("a in ((b)"),
            (6, "'('".into(), "',', ')' or identifier")
        );
        assert_eq!(
            syntax("a in (b,"),
            (8, "end of string".into(), "',', or identifier")
        );
        assert_eq!(syntax("a in (b c)"), (8, "'c'".into(), "',' or ')'"));
        assert_eq!(
            syntax("=x"),
            (0, "'='".into(), "!, identifier, or 'end of string'")
        );
        assert_eq!(syntax("a,,b"), (2, "','".into(), "identifier after ','"));
        assert_eq!(
            syntax("a,"),
            (2, "end of string".into(), "identifier after ','")
        );
        assert_eq!(
            syntax("a b"),
            (2, "'b'".into(), "in, notin, =, ==, !=, >, <")
        );
        assert_eq!(syntax("a=b c"), (4, "'c'".into(), "',' or 'end of string'"));
        assert_eq!(syntax("a=(b)"), (2, "'('".into(), "identifier"));
        assert_eq!(syntax("!"), (1, "end of string".into(), "identifier"));
        assert_eq!(syntax("!a=b"), (2, "'='".into(), "',' or 'end of string'"));
        assert_eq!(syntax("a===b"), (3, "'='".into(), "identifier"));
    }

    #[test]
    fn syntax_error_display() {
        assert_eq!(
            err("a in ((").to_string(),
            "unable to parse requirement: found '(', expected: ',', ')' or identifier at position 6 in selector \"a in ((\""
        );
        assert_eq!(
            err("a in (b").to_string(),
            "unable to parse requirement: found end of string, expected: ',' or ')' at position 7 in selector \"a in (b\""
        );
    }

    #[test]
    fn invalid_keys_are_rejected() {
        match err("x, -bad=1") {
            SelectorError::InvalidLabelKey {
                key,
                position,
                message,
                ..
            } => {
                assert_eq!(key, "-bad");
                assert_eq!(position, 3);
                assert!(
                    message.starts_with("name part must consist of alphanumeric characters"),
                    "{message}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            err("Bad_Domain/x"),
            SelectorError::InvalidLabelKey { .. }
        ));
        assert!(matches!(
            err("a/b/c"),
            SelectorError::InvalidLabelKey { .. }
        ));
        assert!(matches!(
            err(&"k".repeat(64)),
            SelectorError::InvalidLabelKey { .. }
        ));
        assert!(matches!(
            err("ключ=1"),
            SelectorError::InvalidLabelKey { .. }
        ));
        let e = err("/x").to_string();
        assert!(e.contains("invalid label key \"/x\" at position 0"), "{e}");
        assert!(e.ends_with("prefix part must be non-empty"), "{e}");
    }

    #[test]
    fn invalid_values_are_rejected() {
        match err("a in (ok, -no)") {
            SelectorError::InvalidLabelValue {
                key,
                value,
                position,
                message,
                ..
            } => {
                assert_eq!((key.as_str(), value.as_str(), position), ("a", "-no", 10));
                assert!(
                    message.starts_with("a valid label must be an empty string"),
                    "{message}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            err(&format!("a={}", "v".repeat(64))),
            SelectorError::InvalidLabelValue { .. }
        ));
        assert!(matches!(
            err("a=ü"),
            SelectorError::InvalidLabelValue { .. }
        ));
        // Negative bounds are integers but not valid label values, as in Kubernetes.
        assert!(matches!(
            err("a>-1"),
            SelectorError::InvalidLabelValue { .. }
        ));
        assert!(matches!(
            err("a<+2"),
            SelectorError::InvalidLabelValue { .. }
        ));
    }

    #[test]
    fn comparison_requires_integer() {
        assert_eq!(
            err("n>abc"),
            SelectorError::NotAnInteger {
                selector: "n>abc".into(),
                position: 2,
                key: "n".into(),
                value: "abc".into(),
            }
        );
        assert!(matches!(err("n<"), SelectorError::NotAnInteger { .. }));
        assert!(matches!(
            err("n>99999999999999999999"),
            SelectorError::NotAnInteger { .. }
        ));
        assert!(
            err("n>x")
                .to_string()
                .contains("the value must be an integer")
        );
    }

    #[test]
    fn odd_inputs_never_panic() {
        let long_key = "a".repeat(100_000);
        let many = "a=b,".repeat(10_000) + "a=b";
        let inputs = [
            "in",
            "notin",
            "a in (b",
            "=x",
            "a,,b",
            ",",
            "(",
            ")",
            "!",
            "!!",
            "!=",
            "==",
            "a!",
            "a!!b",
            "a in",
            "a in (",
            "a in ()()",
            "a notin",
            "<",
            ">",
            "a<>b",
            "a><b",
            "\u{0}",
            "a\u{0}b",
            "ä=ö",
            "🦀 in (🦀)",
            "a=🦀",
            "日本=語",
            "a\u{200b}=b",
            "\\",
            "a=b\\",
            "((((",
            "))))",
            &long_key,
            &many,
        ];
        for input in inputs {
            let _ = LabelSelector::parse(input).map(|s| s.matches(None));
            let _ = FieldSelector::parse(input, &["metadata.name"]).map(|s| s.matches(&json!({})));
        }
        assert!(sel(&many).matches(Some(&labels(json!({"a": "b"})))));
        assert!(matches!(
            err(&long_key),
            SelectorError::InvalidLabelKey { .. }
        ));
        assert!(sel("in").matches(Some(&labels(json!({"in": ""})))));
    }

    #[test]
    fn all_short_inputs_never_panic() {
        let alphabet = ['a', '1', '=', '!', '(', ')', ',', ' ', '<', '>', '\\', 'é'];
        let mut inputs = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = inputs
                .iter()
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            for input in &longer {
                if let Ok(s) = LabelSelector::parse(input) {
                    s.matches(Some(&labels(json!({"a": "1", "1": ""}))));
                }
                if let Ok(f) = FieldSelector::parse(input, &["a", "1"]) {
                    f.matches(&json!({"a": "1"}));
                }
            }
            inputs = longer;
        }
        assert_eq!(inputs.len(), 12 * 12 * 12 * 12);
    }

    // ----- field selectors ---------------------------------------------------

    const SUPPORTED: &[&str] = &[
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "status.phase",
        "spec.unschedulable",
        "spec.replicas",
        "involvedObject.name",
    ];

    fn fsel(s: &str) -> FieldSelector {
        match FieldSelector::parse(s, SUPPORTED) {
            Ok(f) => f,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    fn ferr(s: &str) -> SelectorError {
        match FieldSelector::parse(s, SUPPORTED) {
            Ok(f) => panic!("{s:?} should not parse, got {f:?}"),
            Err(e) => e,
        }
    }

    fn pod() -> Value {
        json!({
            "metadata": {"name": "web-1", "namespace": "prod"},
            "spec": {"unschedulable": true, "replicas": 3},
            "status": {"phase": "Running"}
        })
    }

    #[test]
    fn field_empty_selector() {
        for s in ["", ",", ",,"] {
            let f = fsel(s);
            assert!(f.matches(&pod()));
        }
        assert!(!fsel("metadata.name=x").matches(&pod()));
    }

    #[test]
    fn field_equality_and_inequality() {
        assert!(fsel("metadata.name=web-1").matches(&pod()));
        assert!(fsel("metadata.name==web-1").matches(&pod()));
        assert!(!fsel("metadata.name=web-2").matches(&pod()));
        assert!(fsel("metadata.name!=web-2").matches(&pod()));
        assert!(!fsel("metadata.name!=web-1").matches(&pod()));
        assert!(fsel("metadata.name=web-1,metadata.namespace!=kube-system").matches(&pod()));
        assert!(!fsel("metadata.name=web-1,metadata.namespace=kube-system").matches(&pod()));
    }

    #[test]
    fn field_missing_equals_empty() {
        assert!(fsel("spec.nodeName=").matches(&pod()));
        assert!(!fsel("spec.nodeName!=").matches(&pod()));
        assert!(!fsel("spec.nodeName=node-a").matches(&pod()));
        assert!(fsel("spec.nodeName!=node-a").matches(&pod()));
        assert!(fsel("involvedObject.name=").matches(&json!({"involvedObject": null})));
        assert!(fsel("metadata.name=").matches(&json!("not an object")));
    }

    #[test]
    fn field_non_string_scalars() {
        assert!(fsel("spec.unschedulable=true").matches(&pod()));
        assert!(!fsel("spec.unschedulable=false").matches(&pod()));
        assert!(fsel("spec.replicas=3").matches(&pod()));
        assert!(fsel("spec.replicas!=4").matches(&pod()));
    }

    #[test]
    fn field_escaped_values() {
        let obj = json!({"metadata": {"name": "a,b=c\\d"}});
        let f = fsel("metadata.name=a\\,b\\=c\\\\d");
        assert_eq!(f.exact("metadata.name"), Some("a,b=c\\d"));
        assert!(f.matches(&obj));
        // An escaped comma does not split terms.
        let f = fsel("metadata.name!=x\\,y,status.phase=Running");
        assert!(f.matches(&pod()));
        assert!(!f.matches(&json!({"metadata": {"name": "x,y"}, "status": {"phase": "Running"}})));
    }

    #[test]
    fn field_escape_errors() {
        assert_eq!(
            ferr("metadata.name=a\\b"),
            SelectorError::InvalidEscape {
                sequence: "\\b".into()
            }
        );
        assert_eq!(
            ferr("metadata.name=a\\"),
            SelectorError::InvalidEscape {
                sequence: "\\".into()
            }
        );
        assert_eq!(
            ferr("metadata.name=a=b"),
            SelectorError::UnescapedCharacter { character: '=' }
        );
        assert_eq!(
            ferr("metadata.name!==b"),
            SelectorError::UnescapedCharacter { character: '=' }
        );
        assert_eq!(
            ferr("metadata.name=a\\q").to_string(),
            "invalid field selector: invalid escape sequence: \\q"
        );
    }

    #[test]
    fn field_term_without_operator() {
        let e = ferr("metadata.name=a,oops");
        assert_eq!(
            e,
            SelectorError::InvalidFieldTerm {
                selector: "metadata.name=a,oops".into(),
                term: "oops".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "invalid selector: 'metadata.name=a,oops'; can't understand 'oops'"
        );
        assert!(matches!(
            ferr("metadata.name!x"),
            SelectorError::InvalidFieldTerm { .. }
        ));
    }

    #[test]
    fn field_unsupported_message_is_exact() {
        assert_eq!(
            ferr("spec.foo=bar").to_string(),
            "field label not supported: spec.foo"
        );
        assert_eq!(ferr("=x").to_string(), "field label not supported: ");
        // Whitespace is not trimmed, as in Kubernetes.
        assert_eq!(
            ferr("metadata.name =x").to_string(),
            "field label not supported: metadata.name "
        );
        // Syntax errors win over unsupported fields.
        assert!(matches!(
            ferr("zzz=1,metadata.name=a\\"),
            SelectorError::InvalidEscape { .. }
        ));
        // Terms are checked in sorted order.
        assert_eq!(
            ferr("zzz=1,aaa=2"),
            SelectorError::UnsupportedField("aaa".into())
        );
    }

    #[test]
    fn field_exact() {
        let f = fsel("metadata.namespace=prod,metadata.name!=x");
        assert_eq!(f.exact("metadata.namespace"), Some("prod"));
        assert_eq!(f.exact("metadata.name"), None);
        assert_eq!(
            fsel("metadata.name==web-1").exact("metadata.name"),
            Some("web-1")
        );
        assert_eq!(fsel("metadata.name=").exact("metadata.name"), Some(""));
        assert_eq!(fsel("").exact("metadata.name"), None);
    }

    #[test]
    fn builtin_kinds_compare_an_omitted_field_as_its_go_zero_value() {
        let node = json!({"metadata": {"name": "n1"}, "spec": {}});
        let unschedulable = |s: &str| FieldSelector::parse(s, &["spec.unschedulable"]).unwrap();
        assert!(
            unschedulable("spec.unschedulable=false")
                .for_builtin_kind()
                .matches(&node)
        );
        assert!(
            !unschedulable("spec.unschedulable=true")
                .for_builtin_kind()
                .matches(&node)
        );
        // A custom kind's omitted field is "", as kube reads CRD selectable fields.
        assert!(!unschedulable("spec.unschedulable=false").matches(&node));
        assert!(unschedulable("spec.unschedulable=").matches(&node));
        let event = json!({"source": {"component": "kubelet", "host": "n1"}});
        let source = FieldSelector::parse("source=kubelet", &["source"]).unwrap();
        assert!(source.for_builtin_kind().matches(&event));
    }
}
