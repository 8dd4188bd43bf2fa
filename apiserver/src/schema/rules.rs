//! `x-kubernetes-validations`: compiling a schema node's CEL rules when its CRD is written,
//! with kube-apiserver's checks and error paths (`...x-kubernetes-validations[0].rule`).

use serde_json::Value;

use super::render::go_quote;
use crate::k8s_cel::{self, Compiled};

/// What a failed rule reports (`reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reason {
    /// `FieldValueInvalid`, the default.
    Invalid,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueDuplicate`.
    Duplicate,
}

/// One compiled rule.
#[derive(Debug)]
pub(super) struct Rule {
    /// The rule as written.
    pub rule: String,
    /// `message`, trimmed ("" when unset).
    pub message: String,
    /// `messageExpression`, compiled.
    pub message_expression: Option<Compiled>,
    /// `reason`.
    pub reason: Reason,
    /// `fieldPath`, as a field path relative to the node (`spec.x` form, "" when unset).
    pub field_path: String,
    /// `optionalOldSelf`.
    pub optional_old_self: bool,
    /// The compiled rule.
    pub compiled: Compiled,
}

/// A rule that cannot be used, reported on the CRD as kube-apiserver reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleError {
    /// The schema path, from `openAPIV3Schema`, e.g.
    /// `openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule`.
    pub path: String,
    /// The cause's reason, e.g. `FieldValueInvalid`.
    pub reason: &'static str,
    /// What follows `path: `, e.g. `Invalid value: ...: compilation failed: ...`.
    pub message: String,
}

const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Compiles the rules of the node at `path`; problems are appended to `errors`.
pub(super) fn compile(rules: &Value, path: &str, errors: &mut Vec<RuleError>) -> Vec<Rule> {
    if rules.is_null() {
        return Vec::new();
    }
    let Some(list) = rules.as_array() else {
        errors.push(RuleError {
            path: format!("{path}.x-kubernetes-validations"),
            reason: "FieldValueInvalid",
            message: "Invalid value: \"\": must be a list of validation rules".into(),
        });
        return Vec::new();
    };
    let mut compiled = Vec::new();
    for (i, rule) in list.iter().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        if let Some(rule) = compile_one(rule, &at, errors) {
            compiled.push(rule);
        }
    }
    compiled
}

fn text<'a>(rule: &'a Value, key: &str) -> &'a str {
    rule[key].as_str().unwrap_or_default()
}

fn compile_one(rule: &Value, at: &str, errors: &mut Vec<RuleError>) -> Option<Rule> {
    let source = text(rule, "rule");
    let mut fail = |field: &str, reason: &'static str, message: String| {
        errors.push(RuleError {
            path: format!("{at}.{field}"),
            reason,
            message,
        })
    };
    if source.trim().is_empty() {
        fail("rule", "FieldValueRequired", "Required value".into());
        return None;
    }
    let reason = match rule.get("reason").and_then(Value::as_str) {
        None | Some("FieldValueInvalid") => Reason::Invalid,
        Some("FieldValueForbidden") => Reason::Forbidden,
        Some("FieldValueRequired") => Reason::Required,
        Some("FieldValueDuplicate") => Reason::Duplicate,
        Some(other) => {
            let supported: Vec<String> = REASONS.iter().map(|r| go_quote(r)).collect();
            fail(
                "reason",
                "FieldValueNotSupported",
                format!(
                    "Unsupported value: {}: supported values: {}",
                    go_quote(other),
                    supported.join(", ")
                ),
            );
            return None;
        }
    };
    let variables = ["self", "oldSelf"];
    let compiled = match k8s_cel::compile(source, &variables) {
        Ok(compiled) => compiled,
        Err(err) => {
            let message = format!(
                "Invalid value: {}: compilation failed: {err}",
                go_rule(rule)
            );
            fail("rule", "FieldValueInvalid", message);
            return None;
        }
    };
    let optional_old_self = rule["optionalOldSelf"].as_bool().unwrap_or(false);
    if optional_old_self && !compiled.uses_old_self {
        fail(
            "optionalOldSelf",
            "FieldValueForbidden",
            "Forbidden: may not be set if oldSelf is not used in rule".into(),
        );
        return None;
    }
    let message = text(rule, "message").trim().to_string();
    if message.contains('\n') {
        fail(
            "message",
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: message must not contain line breaks",
                go_quote(&message)
            ),
        );
        return None;
    }
    let expression = text(rule, "messageExpression");
    let message_expression = if expression.trim().is_empty() {
        None
    } else {
        match k8s_cel::compile(expression, &variables) {
            Ok(compiled) => Some(compiled),
            Err(err) => {
                let message = format!(
                    "Invalid value: {}: messageExpression compilation failed: {err}",
                    go_rule(rule)
                );
                fail("messageExpression", "FieldValueInvalid", message);
                return None;
            }
        }
    };
    let field_path = match normalize_field_path(text(rule, "fieldPath")) {
        Ok(path) => path,
        Err(problem) => {
            let value = go_quote(text(rule, "fieldPath"));
            fail(
                "fieldPath",
                "FieldValueInvalid",
                format!("Invalid value: {value}: fieldPath must be a valid path: {problem}"),
            );
            return None;
        }
    };
    Some(Rule {
        rule: source.to_string(),
        message,
        message_expression,
        reason,
        field_path,
        optional_old_self,
        compiled,
    })
}

/// `.spec.x['a.b']` as the field path `spec.x.a.b`, as kube's `ValidFieldPath` renders it.
fn normalize_field_path(path: &str) -> Result<String, String> {
    let mut parts = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return Err("unexpected end of JSON path".into());
            }
            parts.push(after[..end].to_string());
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after
                .find("']")
                .ok_or_else(|| "unexpected end of JSON path".to_string())?;
            parts.push(after[..end].replace("\\'", "'"));
            rest = &after[end + 2..];
        } else {
            return Err(format!("expected [ or . but got: {rest}"));
        }
    }
    Ok(parts.join("."))
}

/// A rule as Go's `%#v` prints kube's internal `apiextensions.ValidationRule`; a set
/// `reason` or `optionalOldSelf` is shown by value (Go shows a pointer's address).
fn go_rule(rule: &Value) -> String {
    let reason = match rule.get("reason").and_then(Value::as_str) {
        Some(r) => format!("(*apiextensions.FieldValueErrorReason)({})", go_quote(r)),
        None => "(*apiextensions.FieldValueErrorReason)(nil)".into(),
    };
    let optional = match rule.get("optionalOldSelf").and_then(Value::as_bool) {
        Some(b) => format!("(*bool)({b})"),
        None => "(*bool)(nil)".into(),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        go_quote(text(rule, "rule")),
        go_quote(text(rule, "message")),
        go_quote(text(rule, "messageExpression")),
        go_quote(text(rule, "fieldPath")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_are_normalized() {
        assert_eq!(normalize_field_path(".spec.x").unwrap(), "spec.x");
        assert_eq!(normalize_field_path(".a['b.c'].d").unwrap(), "a.b.c.d");
        assert_eq!(normalize_field_path("").unwrap(), "");
        assert!(normalize_field_path("spec").is_err());
        assert!(normalize_field_path(".a['b").is_err());
    }
}
