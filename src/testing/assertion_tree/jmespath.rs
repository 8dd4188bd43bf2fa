//! JMESPath expressions of assertion trees: `$bindings` and the chainsaw/kyverno functions
//! on top of the jmespath crate's standard library.
//!
//! The jmespath crate implements JMESPath as specified, without the variables that
//! chainsaw's engine (jmespath-community) adds; a `$name` outside quotes and literals is
//! therefore replaced with the bound value as a JSON literal before the expression is
//! compiled, which gives the same result for every read of a binding.

use std::sync::LazyLock;

use jmespath::functions::{ArgumentType, CustomFunction, Signature};
use jmespath::{Context, ErrorReason, JmespathError, Rcvar, Runtime, RuntimeError, Variable};
use serde_json::Value;

use super::Bindings;

/// The runtime: JMESPath's functions and the chainsaw/kyverno ones in [`extra_functions`].
static RUNTIME: LazyLock<Runtime> = LazyLock::new(|| {
    let mut runtime = Runtime::new();
    runtime.register_builtin_functions();
    for (name, function) in extra_functions() {
        runtime.register_function(name, Box::new(function));
    }
    runtime
});

/// Evaluates `expression` against `input` with `bindings`.
pub(super) fn evaluate(
    expression: &str,
    input: &Value,
    bindings: &Bindings,
) -> Result<Value, String> {
    let substituted = substitute_bindings(expression, bindings)?;
    let located = substituted == expression;
    let compiled = RUNTIME
        .compile(&substituted)
        .map_err(|error| describe(&error, located))?;
    let result = compiled
        .search(input)
        .map_err(|error| describe(&error, located))?;
    serde_json::to_value(&*result).map_err(|error| error.to_string())
}

/// The error without the expression's text (the caller names the expression), with the
/// column when it is one of the text as written (no binding was substituted).
fn describe(error: &JmespathError, located: bool) -> String {
    match located {
        true => format!("{} at column {}", error.reason, error.column + 1),
        false => error.reason.to_string(),
    }
}

/// `expression` with every `$name` outside quotes and literals replaced by its value.
fn substitute_bindings(expression: &str, bindings: &Bindings) -> Result<String, String> {
    let mut out = String::with_capacity(expression.len());
    let mut chars = expression.char_indices().peekable();
    let mut quote: Option<char> = None;
    while let Some((at, c)) = chars.next() {
        match quote {
            Some(open) => {
                out.push(c);
                if c == '\\' {
                    if let Some((_, escaped)) = chars.next() {
                        out.push(escaped);
                    }
                } else if c == open {
                    quote = None;
                }
            }
            None if matches!(c, '\'' | '"' | '`') => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '$' => {
                let rest = &expression[at + 1..];
                let len = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                if len == 0 {
                    out.push(c);
                    continue;
                }
                let name = &rest[..len];
                let value = bindings.get(name).ok_or_else(|| {
                    format!(
                        "no binding ${name} (bound: {})",
                        bindings.names().join(", ")
                    )
                })?;
                out.push('`');
                out.push_str(&value.to_string().replace('`', "\\`"));
                out.push('`');
                for _ in 0..len {
                    chars.next();
                }
            }
            None => out.push(c),
        }
    }
    Ok(out)
}

/// The functions chainsaw and kyverno add to JMESPath that dynrec supports.
fn extra_functions() -> Vec<(&'static str, CustomFunction)> {
    use ArgumentType::{Any, String as Str};
    vec![
        ("to_upper", string_fn(1, |args| args[0].to_uppercase())),
        ("to_lower", string_fn(1, |args| args[0].to_lowercase())),
        ("trim_space", string_fn(1, |args| args[0].trim().to_owned())),
        (
            "trim",
            string_fn(2, |args| {
                let cutset: Vec<char> = args[1].chars().collect();
                args[0].trim_matches(cutset.as_slice()).to_owned()
            }),
        ),
        (
            "replace_all",
            string_fn(3, |args| args[0].replace(args[1], args[2])),
        ),
        (
            "concat",
            string_fn(2, |args| format!("{}{}", args[0], args[1])),
        ),
        (
            "base64_encode",
            string_fn(1, |args| {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.encode(args[0])
            }),
        ),
        (
            "base64_decode",
            function(vec![Str], |args| {
                use base64::Engine as _;
                let text = args[0].as_string().cloned().unwrap_or_default();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(text.as_bytes())
                    .map_err(|error| error.to_string())?;
                let decoded =
                    String::from_utf8(bytes).map_err(|_| "bytes that are not UTF-8".to_owned())?;
                Ok(Variable::String(decoded))
            }),
        ),
        (
            "split",
            function(vec![Str, Str], |args| {
                let text = args[0].as_string().cloned().unwrap_or_default();
                let separator = args[1].as_string().cloned().unwrap_or_default();
                Ok(Variable::Array(
                    text.split(separator.as_str())
                        .map(|part| Rcvar::new(Variable::String(part.to_owned())))
                        .collect(),
                ))
            }),
        ),
        (
            "as_string",
            function(vec![Any], |args| {
                Ok(match args[0].as_string() {
                    Some(text) => Variable::String(text.clone()),
                    None => Variable::Null,
                })
            }),
        ),
    ]
}

/// A function of `arity` strings returning a string.
fn string_fn(arity: usize, f: fn(&[&str]) -> String) -> CustomFunction {
    function(vec![ArgumentType::String; arity], move |args| {
        let strings: Vec<&str> = args
            .iter()
            .map(|arg| arg.as_string().map(String::as_str).unwrap_or_default())
            .collect();
        Ok(Variable::String(f(&strings)))
    })
}

/// A function with a signature; an `Err` (what was given instead of base64 of UTF-8 text,
/// the only failure of these functions) becomes a runtime error.
fn function(
    inputs: Vec<ArgumentType>,
    f: impl Fn(&[Rcvar]) -> Result<Variable, String> + Send + Sync + 'static,
) -> CustomFunction {
    CustomFunction::new(
        Signature::new(inputs, None),
        Box::new(move |args: &[Rcvar], ctx: &mut Context<'_>| {
            f(args).map(Rcvar::new).map_err(|message| {
                JmespathError::from_ctx(
                    ctx,
                    ErrorReason::Runtime(RuntimeError::InvalidType {
                        expected: "base64 of UTF-8 text".to_owned(),
                        actual: message,
                        position: 0,
                    }),
                )
            })
        }),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{Bindings, evaluate, substitute_bindings};

    fn bindings() -> Bindings {
        Bindings::new()
            .with("namespace", json!("chainsaw-a"))
            .with("values", json!({"n": 3}))
    }

    #[test]
    fn bindings_become_literals_outside_quotes() {
        let table = [
            ("$namespace", "`\"chainsaw-a\"`"),
            ("'$namespace'", "'$namespace'"),
            ("\"$namespace\"", "\"$namespace\""),
            (
                "join('-', [$namespace, 'cm'])",
                "join('-', [`\"chainsaw-a\"`, 'cm'])",
            ),
            ("$values.n", "`{\"n\":3}`.n"),
        ];
        for (expression, want) in table {
            assert_eq!(substitute_bindings(expression, &bindings()).unwrap(), want);
        }
    }

    #[test]
    fn evaluates_expressions_with_bindings_and_extra_functions() {
        let input = json!({"conditions": [{"type": "Ready", "status": "True"}, {"type": "Other"}], "replicas": 2});
        let table: [(&str, Value); 8] = [
            ("conditions[?type == 'Ready'].status", json!(["True"])),
            ("replicas > `1` && replicas < `4`", json!(true)),
            ("join('-', [$namespace, 'cm'])", json!("chainsaw-a-cm")),
            ("$values.n", json!(3)),
            ("to_upper('abc')", json!("ABC")),
            ("split('a,b', ',')", json!(["a", "b"])),
            ("base64_decode(base64_encode('hi'))", json!("hi")),
            ("missing", Value::Null),
        ];
        for (expression, want) in table {
            assert_eq!(
                evaluate(expression, &input, &bindings()).unwrap(),
                want,
                "{expression}"
            );
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let error = evaluate("$nope", &json!({}), &bindings()).unwrap_err();
        assert_eq!(error, "no binding $nope (bound: namespace, values)");
        let error = evaluate("conditions[?", &json!({}), &bindings()).unwrap_err();
        assert!(error.contains("Parse error"), "{error}");
        let error = evaluate("no_such_fn(@)", &json!({}), &bindings()).unwrap_err();
        assert!(error.contains("no_such_fn"), "{error}");
    }
}
