//! allOf, anyOf, oneOf and not, as kube-openapi's `schemaPropsValidator` checks them.
//!
//! kube-apiserver reports the junctor's own error against the object itself
//! (`<nil>: Invalid value: ""`), followed by the errors of the branch it kept.

use serde_json::Value;

use super::node::Node;
use super::render;
use crate::error::Cause;

/// Validates a value against a schema node, appending causes (the validator the branches
/// of a junctor are checked with).
pub(super) type Validator = fn(&Node, &Value, &str, &mut Vec<Cause>);

/// Checks the junctors of `node` on a non-null `value`, each branch with `validate`.
pub(super) fn check(
    node: &Node,
    value: &Value,
    name: &str,
    out: &mut Vec<Cause>,
    validate: Validator,
) {
    if !node.all_of.is_empty() {
        let mut valid = 0;
        let mut errors = Vec::new();
        for branch in &node.all_of {
            let found = run(validate, branch, value, name);
            valid += usize::from(found.is_empty());
            errors.extend(found);
        }
        if valid != node.all_of.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            let detail = format!("\"{name}\" must validate all the schemas (allOf){none}");
            out.push(render::junctor(detail));
        }
        out.extend(errors);
    }
    if !node.any_of.is_empty() {
        let results: Vec<Vec<Cause>> = node
            .any_of
            .iter()
            .map(|b| run(validate, b, value, name))
            .collect();
        if !results.iter().any(Vec::is_empty) {
            let detail = format!("\"{name}\" must validate at least one schema (anyOf)");
            out.push(render::junctor(detail));
            out.extend(results.into_iter().next().unwrap_or_default());
        }
    }
    if !node.one_of.is_empty() {
        let results: Vec<Vec<Cause>> = node
            .one_of
            .iter()
            .map(|b| run(validate, b, value, name))
            .collect();
        let valid = results.iter().filter(|r| r.is_empty()).count();
        if valid != 1 {
            let found = match valid {
                0 => "Found none valid".to_string(),
                n => format!("Found {n} valid alternatives"),
            };
            let detail =
                format!("\"{name}\" must validate one and only one schema (oneOf). {found}");
            out.push(render::junctor(detail));
            if valid == 0 {
                out.extend(results.into_iter().next().unwrap_or_default());
            }
        }
    }
    if let Some(not) = &node.not
        && run(validate, not, value, name).is_empty()
    {
        let detail = format!("\"{name}\" must not validate the schema (not)");
        out.push(render::junctor(detail));
    }
}

fn run(validate: Validator, branch: &Node, value: &Value, name: &str) -> Vec<Cause> {
    let mut found = Vec::new();
    validate(branch, value, name, &mut found);
    found
}
