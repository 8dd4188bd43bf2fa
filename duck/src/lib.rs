//! Duck types for dynrec: typed projections of any Kubernetes object.
//!
//! A duck is a serde type that knows only part of an object, e.g. [`PodSpecable`] knows
//! `spec.template`. [`Duck::project`] reads any object of any kind into it: fields the duck
//! does not know are ignored, and a known field with the wrong type is a [`ProjectionError`]
//! naming its path. Ducks are written back only by patch (see `dynrec`'s `DuckClient`).

mod addressable;
mod condition;
mod kresource;
mod podspecable;

pub use addressable::{Address, Addressable, AddressableStatus};
pub use condition::Condition;
pub use kresource::{KResource, KResourceStatus};
pub use podspecable::{PodSpecable, PodSpecableSpec};

use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

/// A typed, partial view of objects of any kind.
pub trait Duck: Serialize + DeserializeOwned + JsonSchema + Clone + Send + Sync + 'static {
    /// The duck's name, used in errors and logs.
    const NAME: &'static str;

    /// Reads an object (in its JSON form) as this duck, ignoring fields the duck does not know.
    fn project(object: &Value) -> Result<Self, ProjectionError> {
        serde_path_to_error::deserialize(object).map_err(|err| {
            let path = err.path().to_string();
            ProjectionError {
                duck: Self::NAME,
                path,
                source: err.into_inner(),
            }
        })
    }
}

/// An object could not be read as a duck: a field the duck knows has the wrong shape.
#[derive(Debug, thiserror::Error)]
#[error("object is not a {duck}: at {path}: {source}")]
pub struct ProjectionError {
    /// The duck's name.
    pub duck: &'static str,
    /// The path of the offending field, e.g. `spec.template.spec.containers[0].env`.
    pub path: String,
    /// What serde found wrong there.
    #[source]
    pub source: serde_json::Error,
}
