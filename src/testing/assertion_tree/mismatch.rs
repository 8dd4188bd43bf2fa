//! What an assertion tree found wrong, each with the YAML path of the field, and how it
//! prints (`status.conditions[0].status: want True, got False`).

use std::fmt;

use serde_json::Value;

/// One difference between an assertion tree and the object it was matched against.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The field's path (`spec.template.spec.containers[0].image`; an expression key keeps
    /// its parentheses: `status.(conditions[?type == 'Ready'])[0].status`).
    pub path: String,
    /// What is wrong there.
    pub problem: Problem,
}

/// What is wrong at a path.
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    /// The value differs.
    Value {
        /// The expected value (an expression's result when the tree had one).
        want: Value,
        /// The value found.
        got: Value,
    },
    /// The field is absent.
    Missing {
        /// The expected subtree.
        want: Value,
    },
    /// A list has another length than the tree's.
    Length {
        /// The tree's number of items.
        want: usize,
        /// The list found.
        got: Value,
    },
    /// A value was required (`{}` or a list) and there is none or null.
    Null,
    /// The value is of a kind that cannot be compared with the tree's (waiting will not
    /// help).
    Type {
        /// What the tree expects: `a list`, `a map`, or the expected value.
        want: String,
        /// The value found.
        got: Value,
    },
    /// A `${…}` CEL check does not hold (`dynrec test` expectations).
    Check {
        /// The check as written (`${ >= 1 }`).
        expression: String,
        /// The value checked, for a check on a field's value.
        got: Option<Value>,
    },
    /// An expression of the tree is invalid or failed to evaluate (waiting will not help).
    Expression {
        /// The expression.
        expression: String,
        /// Why it failed.
        error: String,
    },
}

impl Problem {
    /// Whether waiting for the object to change cannot fix it: a broken expression or a
    /// value of a kind the tree cannot be compared with (chainsaw stops polling on these).
    pub fn is_final(&self) -> bool {
        matches!(self, Problem::Type { .. } | Problem::Expression { .. })
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = match self.path.as_str() {
            "" => "(root)",
            path => path,
        };
        match &self.problem {
            Problem::Value { want, got } => {
                write!(f, "{path}: want {}, got {}", show(want), show(got))
            }
            Problem::Missing { want } => write!(f, "{path}: missing (want {})", show(want)),
            Problem::Length { want, got } => {
                let items = |n: usize| match n {
                    1 => "1 item".to_owned(),
                    n => format!("{n} items"),
                };
                let found = got.as_array().map_or(0, Vec::len);
                write!(
                    f,
                    "{path}: want {}, got {}: {}",
                    items(*want),
                    items(found),
                    show(got)
                )
            }
            Problem::Null => write!(f, "{path}: want a value, got null"),
            Problem::Type { want, got } => {
                write!(f, "{path}: want {want}, got {} {}", kind(got), show(got))
            }
            Problem::Check {
                expression,
                got: Some(got),
            } => write!(f, "{path}: want {expression}, got {}", show(got)),
            Problem::Check {
                expression,
                got: None,
            } => write!(f, "{path}: {expression} is false"),
            Problem::Expression { expression, error } => {
                write!(f, "{path}: expression ({expression}): {error}")
            }
        }
    }
}

/// Every mismatch of one match, in the tree's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mismatches(pub Vec<Mismatch>);

impl Mismatches {
    /// Whether one of them cannot be fixed by waiting (see [`Problem::is_final`]).
    pub fn is_final(&self) -> bool {
        self.0.iter().any(|mismatch| mismatch.problem.is_final())
    }
}

impl fmt::Display for Mismatches {
    /// One mismatch a line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, mismatch) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{mismatch}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Mismatches {}

/// `a string`, `a number`... for type mismatches.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// A value as YAML would show it on one line: strings bare unless YAML would read them as
/// something else (`"True"`, `"1"`, `""`), lists and maps in flow style.
pub fn show(value: &Value) -> String {
    match value {
        Value::String(text) if reads_as_string(text) => text.clone(),
        _ => value.to_string(),
    }
}

/// Whether a plain YAML scalar `text` reads back as the same string.
fn reads_as_string(text: &str) -> bool {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed != text {
        return false;
    }
    let special = [
        "true", "false", "yes", "no", "on", "off", "null", "~", "y", "n",
    ];
    if special.contains(&text.to_ascii_lowercase().as_str()) {
        return false;
    }
    if text.parse::<f64>().is_ok()
        || text.starts_with([
            '{', '[', '"', '\'', '&', '*', '!', '|', '>', '%', '@', '`', '#', '-', '?',
        ])
    {
        return false;
    }
    !text.contains(": ") && !text.contains(" #") && !text.contains('\n') && !text.ends_with(':')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Mismatch, Problem, show};

    #[test]
    fn values_print_as_yaml_reads_them() {
        let table = [
            (json!("nginx:1.27"), "nginx:1.27"),
            (json!("True"), "\"True\""),
            (json!("1"), "\"1\""),
            (json!(""), "\"\""),
            (json!(true), "true"),
            (json!(2), "2"),
            (json!(null), "null"),
            (json!({"a": [1]}), "{\"a\":[1]}"),
            (json!("a: b"), "\"a: b\""),
        ];
        for (value, want) in table {
            assert_eq!(show(&value), want);
        }
    }

    #[test]
    fn mismatches_print_with_their_path() {
        let table = [
            (
                Problem::Value {
                    want: json!("True"),
                    got: json!("False"),
                },
                "status.conditions[0].status: want \"True\", got \"False\"",
            ),
            (
                Problem::Missing {
                    want: json!("ACTIVE"),
                },
                "status.conditions[0].status: missing (want ACTIVE)",
            ),
            (
                Problem::Length {
                    want: 1,
                    got: json!([1, 2]),
                },
                "status.conditions[0].status: want 1 item, got 2 items: [1,2]",
            ),
            (
                Problem::Type {
                    want: "a list".into(),
                    got: json!("x"),
                },
                "status.conditions[0].status: want a list, got a string x",
            ),
        ];
        for (problem, want) in table {
            let mismatch = Mismatch {
                path: "status.conditions[0].status".into(),
                problem,
            };
            assert_eq!(mismatch.to_string(), want);
        }
    }
}
