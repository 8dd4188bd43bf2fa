//! The CEL interpreter's run-time errors in CEL's own words (as cel-go and the Kubernetes API
//! server write them), with values as CEL literals: `division by zero: 100 / 0`, `no such
//! key: foo`, never the interpreter's Rust `Debug` text (`Int(100)`).

use cel::objects::Key;
use cel::{ExecutionError, Value};

/// How long a value shown in a message may get before it is cut with `…`.
const MAX_LITERAL: usize = 60;

/// The message of an evaluation error, for conditions, events, logs and `plan`/`test` output.
#[allow(deprecated)] // the interpreter may still raise its deprecated variants
pub(crate) fn describe(err: &ExecutionError) -> String {
    use ExecutionError as E;
    match err {
        E::InvalidArgumentCount { expected, actual } => {
            format!("wrong number of arguments: expected {expected}, got {actual}")
        }
        E::UnsupportedTargetType { target } => {
            format!(
                "no such overload: a method cannot be called on type {}",
                type_of(target)
            )
        }
        E::NotSupportedAsMethod { method, target } => {
            format!(
                "no such overload: '{method}' is not a method of {}",
                type_of(target)
            )
        }
        E::UnsupportedKeyType(key) | E::UnsupportedMapIndex(key) => {
            format!("unsupported key type: {} ({})", type_of(key), literal(key))
        }
        E::UnexpectedType { got, want } => format!("unexpected type: got {got}, want {want}"),
        E::NoSuchKey(key) => format!("no such key: {key}"),
        E::NoSuchOverload(overload) => overload.to_string(),
        E::UndeclaredReference(name) => format!("undeclared reference to '{name}'"),
        E::MissingArgumentOrTarget => "missing argument or target".to_owned(),
        E::ValuesNotComparable(left, right) => format!(
            "cannot compare {} ({}) with {} ({})",
            literal(left),
            type_of(left),
            literal(right),
            type_of(right)
        ),
        E::UnsupportedUnaryOperator(operator, value) => format!(
            "found no matching overload for '{}' applied to '({})'",
            operator_name(operator, true),
            type_of(value)
        ),
        E::UnsupportedBinaryOperator(operator, left, right) => format!(
            "found no matching overload for '{}' applied to '({}, {})'",
            operator_name(operator, false),
            type_of(left),
            type_of(right)
        ),
        E::UnsupportedListIndex(index) => {
            format!(
                "unsupported index type: {} ({})",
                type_of(index),
                literal(index)
            )
        }
        E::UnsupportedIndex(index, target) => format!(
            "a {} cannot be indexed with {} ({})",
            type_of(target),
            literal(index),
            type_of(index)
        ),
        E::UnsupportedFunctionCallIdentifierType(_) => {
            "unsupported function call: only names can be called".to_owned()
        }
        E::UnsupportedFieldsConstruction(_) => "unsupported message construction".to_owned(),
        E::FunctionError { function, message } => format!("{function}: {message}"),
        E::DivisionByZero(dividend) => {
            format!(
                "division by zero: {} / {}",
                literal(dividend),
                zero_like(dividend)
            )
        }
        E::RemainderByZero(dividend) => {
            format!(
                "modulus by zero: {} % {}",
                literal(dividend),
                zero_like(dividend)
            )
        }
        E::Overflow(operator, left, right) => format!(
            "{}: {} {} {}",
            overflow_of(left),
            literal(left),
            operator_symbol(operator),
            literal(right)
        ),
        E::IndexOutOfBounds(index) => format!("index out of range: {}", literal(index)),
        E::DuplicateKey(key) => format!("repeated key in a map literal: {}", literal(key)),
        E::InternalError(message) => format!("internal error: {message}"),
        other => other.to_string(),
    }
}

/// The CEL type name of a value (`int`, `string`, `map`, ...).
fn type_of(value: &Value) -> String {
    match value {
        Value::Opaque(opaque) => opaque.runtime_type_name().to_owned(),
        Value::Struct(message) => message.name().to_owned(),
        other => other.type_of().to_string(),
    }
}

/// The value as a CEL literal (`100`, `1u`, `"text"`, `[1, 2]`), cut after [`MAX_LITERAL`].
fn literal(value: &Value) -> String {
    let text = full_literal(value);
    match text.char_indices().nth(MAX_LITERAL) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn full_literal(value: &Value) -> String {
    match value {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => format!("{u}u"),
        Value::Float(f) => format!("{f:?}"),
        Value::String(s) => quoted(s),
        Value::Bytes(bytes) => format!("b\"{}\"", bytes.escape_ascii()),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_owned(),
        Value::Duration(d) => format!("duration(\"{}s\")", d.num_seconds()),
        Value::Timestamp(t) => format!("timestamp(\"{}\")", t.to_rfc3339()),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(full_literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Map(map) => {
            let mut entries: Vec<String> = map
                .map
                .iter()
                .map(|(key, value)| format!("{}: {}", key_literal(key), full_literal(value)))
                .collect();
            entries.sort();
            format!("{{{}}}", entries.join(", "))
        }
        Value::Function(name, _) => name.to_string(),
        other => type_of(other),
    }
}

fn key_literal(key: &Key) -> String {
    match key {
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => format!("{u}u"),
        Key::Bool(b) => b.to_string(),
        Key::String(s) => quoted(s),
    }
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""))
}

/// The zero of the dividend's type (`0`, `0u`, `0.0`).
fn zero_like(dividend: &Value) -> &'static str {
    match dividend {
        Value::UInt(_) => "0u",
        Value::Float(_) => "0.0",
        _ => "0",
    }
}

/// What overflowed, in cel-go's words.
fn overflow_of(operand: &Value) -> &'static str {
    match operand {
        Value::Int(_) => "integer overflow",
        Value::UInt(_) => "unsigned integer overflow",
        _ => "overflow",
    }
}

/// The interpreter's name of an arithmetic operator (`add`) as written (`+`).
fn operator_symbol(operator: &str) -> &str {
    match operator {
        "add" => "+",
        "sub" => "-",
        "mul" => "*",
        "div" => "/",
        "rem" => "%",
        other => other,
    }
}

/// An operator as a CEL overload names it (`_+_`, `-_`).
fn operator_name(operator: &str, unary: bool) -> String {
    let symbol = operator_symbol(operator);
    match (unary, symbol.chars().all(|c| c.is_ascii_punctuation())) {
        (_, false) => symbol.to_owned(),
        (true, true) => format!("{symbol}_"),
        (false, true) => format!("_{symbol}_"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of evaluating `expression` (which must fail).
    fn failure(expression: &str) -> String {
        let program = cel::Program::compile(expression).unwrap();
        let mut context = cel::Context::default();
        context.add_variable_from_value("m", std::collections::HashMap::<String, i64>::new());
        let err = program.execute(&context).unwrap_err();
        describe(&err)
    }

    #[test]
    fn interpreter_failures_read_as_cel_writes_them() {
        let cases = [
            ("100 / 0", "division by zero: 100 / 0"),
            ("100u / 0u", "division by zero: 100u / 0u"),
            ("7 % 0", "modulus by zero: 7 % 0"),
            ("m.foo", "no such key: foo"),
            ("m['foo']", "no such key: foo"),
            (
                "{'a': 1} + 1",
                "found no matching overload for '_+_' applied to '(map, int)'",
            ),
            (
                "9223372036854775807 + 1",
                "integer overflow: 9223372036854775807 + 1",
            ),
            (
                "18446744073709551615u * 2u",
                "unsigned integer overflow: 18446744073709551615u * 2u",
            ),
            ("[1, 2][5]", "index out of range: 5"),
            ("{'a': 1, 'a': 2}", "repeated key in a map literal: \"a\""),
            (
                "'abc'[0]",
                "found no matching overload for '_[_]' applied to '(string, int)'",
            ),
            ("undeclared + 1", "undeclared reference to 'undeclared'"),
        ];
        for (expression, message) in cases {
            assert_eq!(failure(expression), message, "{expression}");
        }
    }

    #[test]
    fn no_message_carries_rust_debug_text() {
        #[allow(deprecated)]
        let errors = [
            ExecutionError::DivisionByZero(Value::Float(1.5)),
            ExecutionError::ValuesNotComparable(
                Value::Int(1),
                Value::String("a".to_owned().into()),
            ),
            ExecutionError::UnsupportedUnaryOperator("minus", Value::Bool(true)),
            ExecutionError::UnsupportedKeyType(Value::List(vec![Value::Null].into())),
            ExecutionError::UnsupportedTargetType {
                target: Value::Int(1),
            },
            ExecutionError::NotSupportedAsMethod {
                method: "size".into(),
                target: Value::Bool(true),
            },
            ExecutionError::function_error("quantity", "quantity overflow"),
            ExecutionError::InvalidArgumentCount {
                expected: 1,
                actual: 2,
            },
        ];
        let messages: Vec<String> = errors.iter().map(describe).collect();
        assert_eq!(
            messages,
            [
                "division by zero: 1.5 / 0.0",
                "cannot compare 1 (int) with \"a\" (string)",
                "found no matching overload for 'minus' applied to '(bool)'",
                "unsupported key type: list ([null])",
                "no such overload: a method cannot be called on type int",
                "no such overload: 'size' is not a method of bool",
                "quantity: quantity overflow",
                "wrong number of arguments: expected 1, got 2",
            ]
        );
        let long = Value::String("x".repeat(200).into());
        assert!(describe(&ExecutionError::DuplicateKey(long)).ends_with("xxx…"));
    }
}
