//! Objects of any kind: GVKs, object keys, field paths, status conventions and merge patches.

mod condition_set;
mod crd_schema;
mod gvk;
mod json;
mod key;
mod line_diff;
mod merge;
mod path;
pub(crate) mod prefetch;
mod status;

pub use condition_set::{
    ConditionError, ConditionManager, ConditionSet, INITIALIZING, READY, SUCCEEDED,
};
pub use crd_schema::structural_schema;
pub use gvk::{GroupKind, Gvk, GvkError};
pub use json::from_json;
pub use key::{ObjectKey, ObjectKeyError};
pub use line_diff::line_diff;
pub use merge::merge_patch;
pub use path::{FieldPath, Fields, PathError};
pub use status::{ConditionFields, StatusExt};

pub use dynrec_duck::Condition;
