//! Why a definition was refused: the path inside it, the position in an expression, and
//! what was expected.

use std::fmt;

/// A definition that cannot be loaded or compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefinitionError {
    /// Where, e.g. `spec.steps[2].child.template.data.greeting`.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// Where inside the expression, when one is at fault.
    pub position: Option<Box<Position>>,
    /// The file (or cluster object) the definition came from.
    pub source: Option<String>,
    /// The expression (without `${}`) the message is about, quoted before it.
    pub expression: Option<Box<str>>,
    /// Other places where the same holds (a warning said once for all of them).
    pub also: Vec<String>,
}

/// A place in an expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// The 1-based line.
    pub line: usize,
    /// The 1-based column.
    pub column: usize,
    /// The expression's line with a caret under the column.
    pub snippet: String,
}

impl DefinitionError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
            position: None,
            source: None,
            expression: None,
            also: Vec::new(),
        }
    }

    /// An error about `expression` (its source, without `${}`) at `path`.
    pub fn about(
        path: impl Into<String>,
        expression: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            expression: Some(expression.into().into()),
            ..Self::new(path, message)
        }
    }

    /// The same error at a position of an expression.
    pub fn at(mut self, line: usize, column: usize, snippet: impl Into<String>) -> Self {
        self.position = Some(Box::new(Position {
            line,
            column,
            snippet: snippet.into(),
        }));
        self
    }

    /// The same error at a position of its expression, with the line there and a caret
    /// under the column.
    pub fn at_position(self, line: usize, column: usize) -> Self {
        let text = self
            .expression
            .as_deref()
            .and_then(|e| e.lines().nth(line.saturating_sub(1)))
            .unwrap_or_default();
        let pad: String = text
            .chars()
            .take(column.saturating_sub(1))
            .map(|_| ' ')
            .collect();
        let snippet = format!("  {text}\n  {pad}^");
        self.at(line, column, snippet)
    }

    /// The same error, saying which file or object it came from.
    pub fn in_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }
}

/// An object a `ref` step reads does not exist (yet): the definition waits for it rather
/// than failing (KRO's instance stays `IN_PROGRESS`, not `ERROR`).
#[derive(Debug, thiserror::Error)]
#[error("{0} does not exist")]
pub struct MissingObject(pub String);

/// `path` at its place in what was written: `origins` are path prefixes (longest first)
/// and those they stand for; the first that `path` starts with (followed by nothing, `.`,
/// `[` or ` `) is replaced. A path no prefix matches is kept.
pub fn locate_path(path: &str, origins: &[(String, String)]) -> String {
    let found = origins.iter().find(|(from, _)| {
        path.strip_prefix(from.as_str()).is_some_and(|rest| {
            rest.is_empty()
                || rest.starts_with('.')
                || rest.starts_with('[')
                || rest.starts_with(' ')
        })
    });
    match found {
        Some((from, to)) => format!("{to}{}", &path[from.len()..]),
        None => path.to_owned(),
    }
}

impl fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(source) = &self.source {
            write!(f, "{source}: ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        if let Some(expression) = &self.expression {
            write!(f, "${{{expression}}}: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(position) = &self.position {
            let Position {
                line,
                column,
                snippet,
            } = &**position;
            write!(f, " (at {line}:{column} of the expression)\n{snippet}")?;
        }
        if let Some((first, rest)) = self.also.split_first() {
            write!(f, "\n  and {} more: {first}", self.also.len())?;
            for place in rest {
                write!(f, ", {place}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for DefinitionError {}

/// Several errors of one definition, all reported at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefinitionErrors(pub Vec<DefinitionError>);

impl fmt::Display for DefinitionErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DefinitionErrors {}

impl From<DefinitionError> for DefinitionErrors {
    fn from(error: DefinitionError) -> Self {
        Self(vec![error])
    }
}
