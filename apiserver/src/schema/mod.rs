//! CRD structural schemas: validation, pruning and defaulting of custom objects
//! as kube-apiserver does them (apiextensions-apiserver with kube-openapi's validator).
//!
//! kube-apiserver decodes a custom object by pruning it, dropping nulls the schema
//! does not allow and applying defaults, and then validates it; callers should do the
//! same: [`StructuralSchema::prune`], [`StructuralSchema::apply_defaults`], then
//! [`StructuralSchema::validate`].

mod cel_validate;
mod cel_value;
mod compile;
mod default;
mod embedded;
mod format;
mod junctors;
mod listtype;
mod node;
mod prune;
mod render;
mod rules;
mod validate;

pub use rules::RuleError;

#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::error::Cause;
use node::Node;

/// A CRD version's `openAPIV3Schema`, compiled once (regexes compiled, structure walked).
#[derive(Debug)]
pub struct StructuralSchema {
    root: Node,
}

/// What validating one write found: causes (422) and warnings (ratcheted rule failures).
#[derive(Debug, Default)]
pub struct Validation {
    /// Every violation, in kube-apiserver's order: schema, list-type, then CEL rules.
    pub causes: Vec<Cause>,
    /// Rules that failed on values the write did not change.
    pub warnings: Vec<String>,
}

/// Why a schema cannot be compiled; `path` is written as kube-apiserver writes schema
/// paths, e.g. `openAPIV3Schema.properties[spec].pattern`.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// A schema (or sub-schema) is not a JSON object.
    #[error("{path}: must be an object")]
    NotAnObject {
        /// Where the schema is.
        path: String,
    },
    /// A keyword has a value of the wrong kind.
    #[error("{path}: must be {expected}")]
    BadKeyword {
        /// Where the keyword is.
        path: String,
        /// What the keyword must be, e.g. `a non-negative integer`.
        expected: &'static str,
    },
    /// A `pattern` is not a valid regular expression.
    #[error("{path}: must be a valid regular expression, but isn't: {source}")]
    BadPattern {
        /// Where the pattern is.
        path: String,
        /// What the regex parser said.
        source: Box<regex::Error>,
    },
    /// The schema nests deeper than this server follows.
    #[error("{path}: the schema nests deeper than {limit} levels")]
    TooDeep {
        /// Where the limit was reached.
        path: String,
        /// The nesting limit.
        limit: usize,
    },
    /// `x-kubernetes-validations` rules that cannot be used (do not compile, ...).
    #[error("{}", .0.iter().map(|e| format!("{}: {}", e.path, e.message)).collect::<Vec<_>>().join(", "))]
    Rules(Vec<RuleError>),
}

impl StructuralSchema {
    /// Compiles a schema; a bad `pattern` is an error naming its path.
    pub fn compile(schema: &Value) -> Result<StructuralSchema, SchemaError> {
        let mut rule_errors = Vec::new();
        let root = compile::compile(schema, &mut rule_errors)?;
        if !rule_errors.is_empty() {
            return Err(SchemaError::Rules(rule_errors));
        }
        Ok(StructuralSchema { root })
    }

    /// Every violation of the schema and of its list types, one cause per problem, in
    /// kube-apiserver's words and field paths.
    pub fn validate(&self, object: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        validate::validate(&self.root, object, "", &mut causes);
        embedded::validate(&self.root, object, &mut causes);
        listtype::validate(&self.root, object, "", &mut causes);
        causes
    }

    /// [`StructuralSchema::validate`], then the `x-kubernetes-validations` rules over the
    /// object and the `old` one it replaces (skipped, as kube does, when a value has the
    /// wrong type).
    pub fn validate_write(&self, object: &Value, old: Option<&Value>) -> Validation {
        let mut causes = self.validate(object);
        if !self.root.has_rules {
            return Validation {
                causes,
                warnings: Vec::new(),
            };
        }
        if causes.iter().any(|c| c.reason == "FieldValueTypeInvalid") {
            causes.push(Cause {
                reason: "FieldValueInvalid",
                field: "<nil>".into(),
                message: "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
            });
            return Validation {
                causes,
                warnings: Vec::new(),
            };
        }
        let outcome = cel_validate::validate(&self.root, object, old);
        causes.extend(outcome.causes);
        Validation {
            causes,
            warnings: outcome.warnings,
        }
    }

    /// Removes fields the schema does not know (keeping `x-kubernetes-preserve-unknown-fields`
    /// subtrees, and apiVersion, kind and metadata of the object and of embedded resources);
    /// returns the pruned paths, sorted, e.g. `spec.foo` (warned as `unknown field "spec.foo"`).
    pub fn prune(&self, object: &mut Value) -> Vec<String> {
        prune::prune_object(object, &self.root)
    }

    /// Drops nulls the schema does not allow, then applies `default`s, as kube-apiserver does
    /// when it decodes an object (on create, update and read).
    pub fn apply_defaults(&self, object: &mut Value) {
        default::drop_disallowed_nulls(object, &self.root);
        default::apply(object, &self.root);
    }
}
