//! Server-side apply with `managedFields`, and strategic merge patch, as kube-apiserver does them
//! (structured-merge-diff v4 and apimachinery's `strategicpatch`).
//!
//! The module works on JSON objects alone: the caller strips and restores nothing but what
//! [`apply`] and [`record_update`] document, and keeps its own rules for server-owned metadata,
//! status and preconditions.

mod builtin;
mod compare;
mod fieldset;
mod last_applied;
mod managed;
mod merge;
mod openapi;
mod path;
mod schema;
mod smp;
mod ssa;
mod walk;

#[cfg(test)]
mod smp_tests;
#[cfg(test)]
mod ssa_tests;

use serde_json::{Value, json};

use crate::error::ApiError;

pub use schema::MergeSchema;
pub use smp::strategic_merge;

/// Which part of an object a write covers, which decides whose ownership it records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The main endpoint of a kind without a status subresource: every field.
    All,
    /// The main endpoint of a kind with a status subresource: ownership of `status` is not
    /// recorded.
    Main,
    /// The `status` subresource: only ownership of `status` is recorded, in entries with
    /// `subresource: status`.
    Status,
}

/// Who writes, through which endpoint, and when.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    /// The field manager (`fieldManager`, or the one derived from the user agent).
    pub manager: &'a str,
    /// The `apiVersion` the request used, e.g. `apps/v1`.
    pub api_version: &'a str,
    /// The part of the object the endpoint writes.
    pub part: Part,
    /// The time of the write, RFC 3339 in seconds (`2024-01-02T03:04:05Z`).
    pub now: &'a str,
}

/// Fields another manager owns with a different value than the one applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyConflict {
    /// Each conflict: the other manager's name and the field path, e.g. `.spec.replicas`.
    pub conflicts: Vec<(String, String)>,
    /// kube-apiserver's message: `Apply failed with 1 conflict: conflict with "m": .spec.replicas`.
    pub message: String,
    /// How the message names the manager of each conflict (`"m"` or `"m" using apps/v1`).
    labels: Vec<String>,
}

impl ApplyConflict {
    /// The `409 Conflict` kube-apiserver answers, one `FieldManagerConflict` cause per field.
    pub fn to_api_error(&self) -> ApiError {
        let causes: Vec<Value> = self
            .conflicts
            .iter()
            .zip(&self.labels)
            .map(|((_, field), label)| {
                json!({
                    "reason": "FieldManagerConflict",
                    "message": format!("conflict with {label}"),
                    "field": field,
                })
            })
            .collect();
        ApiError {
            code: 409,
            reason: "Conflict".into(),
            message: self.message.clone(),
            details: Some(Box::new(json!({ "causes": causes }))),
        }
    }
}

/// Why an apply failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers (answer `409`, or retry with `force`).
    #[error("{}", .0.message)]
    Conflict(ApplyConflict),
    /// A configuration that cannot be applied (answered as the error says).
    #[error("{0}")]
    Invalid(ApiError),
}

impl From<ApplyError> for ApiError {
    fn from(error: ApplyError) -> ApiError {
        match error {
            ApplyError::Conflict(conflict) => conflict.to_api_error(),
            ApplyError::Invalid(error) => error,
        }
    }
}

/// Server-side apply of `config` (the applied configuration) by `writer` onto `live` (`None`:
/// create-on-apply). Returns the new object with `metadata.managedFields` updated. Fields another
/// manager owns with another value conflict unless `force`, which takes them over; fields this
/// manager applied before and omits now are removed unless another manager owns them.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    writer: &Writer,
    force: bool,
    schema: &MergeSchema,
) -> Result<Value, ApplyError> {
    ssa::apply(live, config, writer, force, schema)
}

/// Records a create, update or patch from `old` (`None`: a create) to `new` in `managedFields`:
/// the fields that changed become owned by `writer` (operation `Update`) and are taken from other
/// managers; removed fields are dropped from every manager. A `managedFields` the client wrote in
/// `new` replaces the stored one (`[{}]` clears it). Returns `new` with `managedFields` set.
pub fn record_update(
    old: Option<&Value>,
    new: &Value,
    writer: &Writer,
    schema: &MergeSchema,
) -> Value {
    ssa::record_update(old, new, writer, schema)
}
