//! Which reads may find nothing at run time, and which guards make them safe: `has(a.b)`,
//! `a != null`, combined with `&&`, `||`, `!` and `?:`, in the expression itself, in the
//! `includeWhen` of its step or in the condition of an `if` around it.

use cel::common::ast::{Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use super::error::DefinitionError;
use super::render::{quote, render};

/// The paths (`self.spec.name`, `service`) known to be present where `expr` is `holds`.
pub fn facts(expr: &IdedExpr, holds: bool) -> Vec<String> {
    match &expr.expr {
        Expr::Select(select) if select.test && holds => render(&select.operand)
            .map(|operand| vec![format!("{operand}.{}", select.field)])
            .unwrap_or_default(),
        Expr::Call(call) if call.target.is_none() => {
            match (call.func_name.as_str(), call.args.as_slice(), holds) {
                ("!_", [inner], _) => facts(inner, !holds),
                ("_&&_", [a, b], true) | ("_||_", [a, b], false) => {
                    let mut both = facts(a, holds);
                    both.extend(facts(b, holds));
                    both
                }
                ("@in", [key, map], true) => match (render(key), render(map)) {
                    (Some(key), Some(map)) => vec![format!("{map}[{key}]")],
                    _ => Vec::new(),
                },
                ("_!=_", [a, b], true) | ("_==_", [a, b], false) => {
                    match (is_null(a), is_null(b)) {
                        (false, true) => render(a).into_iter().collect(),
                        (true, false) => render(b).into_iter().collect(),
                        _ => Vec::new(),
                    }
                }
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

fn is_null(expr: &IdedExpr) -> bool {
    matches!(expr.expr, Expr::Literal(LiteralValue::Null))
}

/// Whether `facts` say `path` is present (`has(a.b.c)` says `a.b` is too).
pub fn known(facts: &[String], path: &str) -> bool {
    facts.iter().any(|fact| {
        fact == path
            || fact
                .strip_prefix(path)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    })
}

/// The warning for a read `operand.field` (or `operand[key]`) that may find nothing; `zero`
/// is a default of its type (`{}` for an object, read through with `.?` instead).
pub fn absent_field(path: &str, optional_read: &str, why: &str, zero: &str) -> String {
    let read = match zero {
        "{}" => format!("{optional_read} and what is under it with .?field"),
        _ => format!("{optional_read}.orValue({zero})"),
    };
    format!("{path} may be absent ({why}): read it as {read}, or guard it with has({path})")
}

/// The warning for a read of a step's binding that may be null (the step excluded).
pub fn unbound_step(name: &str, field: &str) -> String {
    format!(
        "{name} may be null here (its step has includeWhen, or is an optional ref): read {name}.?{field}, or guard with {name} != null"
    )
}

/// The paths (`deployment.spec.selector.matchLabels`) a child's template sets, present on
/// its binding once the child exists: every field with a value, down to the leaves (each
/// also as a map entry, `matchLabels['app']`), a `${...}` value's field but nothing under
/// it, and no field whose key is computed.
pub fn set_by_template(name: &str, template: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    collect_set(name, template, &mut paths);
    paths
}

fn collect_set(path: &str, value: &Value, paths: &mut Vec<String>) {
    let inner: Vec<(String, &Value)> = match value {
        Value::Object(fields) => fields
            .iter()
            .filter(|(key, value)| !key.contains("${") && !value.is_null())
            .map(|(key, value)| {
                let indexed = format!("{path}[{}]", quote(key));
                match is_name(key) {
                    // Read as a field (`.app`), or as a map's entry (`['app']`).
                    true => {
                        paths.push(indexed);
                        (format!("{path}.{key}"), value)
                    }
                    false => (indexed, value),
                }
            })
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter(|(_, item)| !item.is_null())
            .map(|(i, item)| (format!("{path}[{i}]"), item))
            .collect(),
        _ => Vec::new(),
    };
    if inner.is_empty() {
        paths.push(path.to_owned());
    }
    for (read, value) in inner {
        collect_set(&read, value, paths);
    }
}

/// Whether `key` can be read as a field (`.key`), as the checker renders such a read.
fn is_name(key: &str) -> bool {
    key.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// `warnings` with those saying the same of the same read (one absent field read by
/// several expressions) said once, at the first place, listing the others.
pub fn said_once(warnings: Vec<DefinitionError>) -> Vec<DefinitionError> {
    let mut kept: Vec<DefinitionError> = Vec::new();
    for warning in warnings {
        let same = kept.iter_mut().find(|k| {
            k.expression.is_some() && warning.expression.is_some() && k.message == warning.message
        });
        match same {
            Some(first) => first.also.push(warning.path),
            None => kept.push(warning),
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_template_sets_its_fields_not_computed_keys_nor_what_is_under_an_expression() {
        let template = json!({"metadata": {"labels": {"app": "web", "app.kubernetes.io/name": "web"}},
            "spec": {"selector": "${self.spec.selector}", "ports": [{"port": 80}], "none": null,
                     "data": {"${self.spec.key}": "v"}}});
        let set: std::collections::BTreeSet<String> =
            set_by_template("web", &template).into_iter().collect();
        assert_eq!(
            set,
            [
                "web['metadata']",
                "web.metadata['labels']",
                "web.metadata.labels['app']",
                "web.metadata.labels.app",
                "web.metadata.labels['app.kubernetes.io/name']",
                "web['spec']",
                "web.spec['data']",
                "web.spec.data",
                "web.spec['ports']",
                "web.spec.ports[0]['port']",
                "web.spec.ports[0].port",
                "web.spec['selector']",
                "web.spec.selector",
            ]
            .map(String::from)
            .into()
        );
    }
}
