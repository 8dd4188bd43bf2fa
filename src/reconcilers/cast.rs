//! `CastResource`: run a reconciler of a typed projection (a duck, or any serde type) of the
//! resource, and apply back only what it changed.
//!
//! Departures from reconciler.io:
//! - The changes are applied as a JSON Patch from the projected original to the projected
//!   result, onto the resource; a change under a field the resource lacks (a default of the
//!   projection) creates the missing parents, and removing an absent field is a no-op.
//!   Fields the projection does not know are therefore preserved, and a field it sets that
//!   the resource lacks is kept (reconciler.io drops it when the resource's Go type has no
//!   such field; a dynamic resource has no type to drop it by).
//! - When the changed resource is no longer a valid object, the resource is left unchanged
//!   (reconciler.io leaves it partly rewritten).
//! - The nested reconciler is always validated (reconciler.io validates nested reconcilers
//!   only when asked to validate recursively).

use std::any::type_name;
use std::marker::PhantomData;

use async_trait::async_trait;
use json_patch::{AddOperation, Patch, PatchOperation, jsonptr::Pointer};
use kube::api::DynamicObject;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use tracing::{Instrument, debug};

use crate::trace::debug_span;

use super::nested::{owner, validate_nested};
use super::{Context, Draft, Outcome, ReconcileError, Setup, SubReconciler, ValidationError};
use crate::object::Gvk;

/// The resource could not be projected into the cast type, or the changes not applied back.
#[derive(Debug, thiserror::Error)]
pub enum CastError {
    /// The resource or its projection could not be turned into JSON.
    #[error("cannot serialize the {what}: {source}")]
    Serialize {
        /// What was serialized.
        what: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The resource does not have the shape of the cast type.
    #[error("cannot cast the resource to {type_name}: at {path}: {source}")]
    Project {
        /// The cast type.
        type_name: &'static str,
        /// The offending field.
        path: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The changes of the cast type could not be applied to the resource.
    #[error("cannot apply the changes of {type_name} to the resource: {source}")]
    Apply {
        /// The cast type.
        type_name: &'static str,
        /// The patch error.
        #[source]
        source: json_patch::PatchError,
    },
    /// The patched resource is no longer a valid object.
    #[error("the resource patched by {type_name} is not a valid object: {source}")]
    Restore {
        /// The cast type.
        type_name: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
}

/// Projects the resource into `T`, runs a `SubReconciler<T>` on it, and applies what it
/// changed (status included, even when it fails) back onto the resource.
pub struct CastResource<T> {
    name: String,
    reconciler: Box<dyn SubReconciler<T>>,
    cast: PhantomData<fn() -> T>,
}

impl<T> CastResource<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// Runs `reconciler` on the resource projected into `T`.
    pub fn new(reconciler: impl SubReconciler<T> + 'static) -> Self {
        let short = type_name::<T>().rsplit("::").next().unwrap_or("");
        Self {
            name: format!("{short}CastResource"),
            reconciler: Box::new(reconciler),
            cast: PhantomData,
        }
    }

    /// Names the reconciler (default `{T}CastResource`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The resource projected into `T`, and that projection as JSON.
    fn project(resource: &DynamicObject) -> Result<(T, Value), CastError> {
        let json = to_json(resource, "resource")?;
        let cast = serde_path_to_error::deserialize(&json).map_err(|err| CastError::Project {
            type_name: type_name::<T>(),
            path: err.path().to_string(),
            source: err.into_inner(),
        })?;
        let projected = to_json(&cast, "cast resource")?;
        Ok((cast, projected))
    }

    /// Applies the difference between the projected original and `cast` onto `resource`.
    fn apply_changes(projected: &Value, cast: &T, resource: &mut Draft) -> Result<(), CastError> {
        let changed = to_json(cast, "cast resource")?;
        if &changed == projected {
            return Ok(());
        }
        let patch = json_patch::diff(projected, &changed);
        debug!(cast = type_name::<T>(), %patch, "applying the changes of the cast resource");
        let mut json = to_json(resource.get(), "resource")?;
        apply_leniently(&mut json, patch).map_err(|source| CastError::Apply {
            type_name: type_name::<T>(),
            source,
        })?;
        *resource.to_mut() = serde_json::from_value(json).map_err(|source| CastError::Restore {
            type_name: type_name::<T>(),
            source,
        })?;
        Ok(())
    }
}

impl From<CastError> for ReconcileError {
    fn from(error: CastError) -> Self {
        ReconcileError::from_error(error)
    }
}

fn to_json(value: &impl Serialize, what: &'static str) -> Result<Value, CastError> {
    serde_json::to_value(value).map_err(|source| CastError::Serialize { what, source })
}

/// Applies a patch made between projections onto the full object: an add or replace under
/// a missing parent creates it, and a replace or remove of a missing field becomes an add or
/// nothing.
fn apply_leniently(doc: &mut Value, patch: Patch) -> Result<(), json_patch::PatchError> {
    for operation in patch.0 {
        let operation = match operation {
            PatchOperation::Replace(replace) if doc.pointer(replace.path.as_str()).is_none() => {
                PatchOperation::Add(AddOperation {
                    path: replace.path,
                    value: replace.value,
                })
            }
            PatchOperation::Remove(remove) if doc.pointer(remove.path.as_str()).is_none() => {
                continue;
            }
            operation => operation,
        };
        if let PatchOperation::Add(add) = &operation {
            create_parents(doc, &add.path);
        }
        json_patch::patch(doc, std::slice::from_ref(&operation))?;
    }
    Ok(())
}

/// Creates the missing objects on the way to `path`'s parent.
fn create_parents(doc: &mut Value, path: &Pointer) {
    let Some(parent) = path.parent() else {
        return;
    };
    let mut current = doc;
    for token in parent.tokens() {
        let key = token.decoded();
        current = match current {
            Value::Object(map) => map
                .entry(key.into_owned())
                .or_insert_with(|| Value::Object(Default::default())),
            Value::Array(items) => match key.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                Some(item) => item,
                None => return,
            },
            _ => return,
        };
    }
}

#[async_trait]
impl<T> SubReconciler<DynamicObject> for CastResource<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.reconciler.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("CastResource", &self.name);
        validate_nested(owner, "Reconciler", self.reconciler.as_ref())
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft) -> Outcome {
        let (cast, projected) = match Self::project(resource) {
            Ok(projection) => projection,
            Err(error) => return Outcome::err(error),
        };
        let mut cast = Draft::new(cast);
        let ctx = match Gvk::of(resource.get()) {
            Ok(gvk) => ctx.with_resource_type(gvk),
            Err(_) => ctx.clone(),
        };
        let span = debug_span!("cast_resource", name = %self.name, cast = type_name::<T>());
        let outcome = self
            .reconciler
            .reconcile(&ctx, &mut cast)
            .instrument(span)
            .await;
        let applied = match cast.is_changed() {
            true => Self::apply_changes(&projected, &cast, resource),
            false => Ok(()),
        };
        let errors = outcome
            .error
            .into_iter()
            .chain(applied.err().map(ReconcileError::from));
        Outcome::with(outcome.result, ReconcileError::join(errors))
    }
}
