//! CRD structural schemas: validation, pruning and defaulting of custom objects
//! as kube-apiserver does them (apiextensions-apiserver with kube-openapi's validator).
//!
//! kube-apiserver decodes a custom object by pruning it, dropping nulls the schema
//! does not allow and applying defaults, and then validates it; callers should do the
//! same: [`StructuralSchema::prune`], [`StructuralSchema::apply_defaults`], then
//! [`StructuralSchema::validate`].

mod compile;
mod default;
mod embedded;
mod format;
mod junctors;
mod node;
mod prune;
mod render;
mod validate;

#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::error::Cause;
use node::Node;

/// A CRD version's `openAPIV3Schema`, compiled once (regexes compiled, structure walked).
#[derive(Debug)]
pub struct StructuralSchema {
    root: Node,
    cel_rules: bool,
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
}

impl StructuralSchema {
    /// Compiles a schema; a bad `pattern` is an error naming its path.
    pub fn compile(schema: &Value) -> Result<StructuralSchema, SchemaError> {
        let mut cel_rules = false;
        let root = compile::compile(schema, &mut cel_rules)?;
        Ok(StructuralSchema { root, cel_rules })
    }

    /// Every violation, one cause per problem, in kube-apiserver's words and field paths.
    pub fn validate(&self, object: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        validate::validate(&self.root, object, "", &mut causes);
        embedded::validate(&self.root, object, &mut causes);
        causes
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

    /// Whether the schema has `x-kubernetes-validations` (CEL rules, not checked by this server).
    pub fn has_cel_rules(&self) -> bool {
        self.cel_rules
    }
}
