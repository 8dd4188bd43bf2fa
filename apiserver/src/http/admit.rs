//! Where the request path meets admission webhooks (`crate::admission`): each write on
//! the main endpoint is admitted first; the object to write may come back changed.

use serde_json::Value;

use super::Shared;
use super::call::Call;
use crate::admission::{self, Admitted, Attributes, Proposal, Write};
use crate::auth::User;
use crate::error::ApiResult;
use crate::store::{PatchBody, State, Target, WriteOptions, apply_patch};

/// The attributes and request facts of a write of `operation` on `call`'s kind.
fn write<'a>(
    call: &'a Call,
    operation: &'static str,
    name: &'a str,
    user: &'a User,
    dry_run: bool,
) -> Write<'a> {
    Write {
        attributes: Attributes {
            operation,
            group: &call.info.group,
            version: &call.info.version,
            plural: &call.info.plural,
            namespaced: call.info.namespaced,
            // A namespaced create without a namespace is refused by the store afterwards.
            namespace: call.object_namespace().unwrap_or_default(),
        },
        name,
        user,
        dry_run,
    }
}

/// Admits a create of `object`.
pub(super) async fn create(
    shared: &Shared,
    call: &Call,
    user: &User,
    object: &Value,
) -> ApiResult<Admitted> {
    let options = dry_run(call.write_options()?);
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let write = write(call, "CREATE", name, user, call.write_options()?.dry_run);
    let namespace = call.object_namespace().ok().filter(|ns| !ns.is_empty());
    let dry_write = |state: &mut State, mutated: Option<Value>| {
        state.create(
            &call.info,
            namespace,
            mutated.unwrap_or_else(|| object.clone()),
            &options,
        )
    };
    let mut sent = object.clone();
    let metadata = sent.get_mut("metadata").and_then(Value::as_object_mut);
    if let (Some(metadata), Some(namespace)) = (metadata, namespace) {
        metadata.insert("namespace".into(), Value::from(namespace));
    }
    let proposal = Proposal {
        dry_write: &dry_write,
        sent: Some(sent),
    };
    admission::admit(&shared.state, &write, None, Some(proposal)).await
}

/// Admits an update (PUT, or a patch that changes an existing object into `patched`
/// when `patch` is given) of `name`.
pub(super) async fn update(
    shared: &Shared,
    call: &Call,
    user: &User,
    name: &str,
    change: Change<'_>,
) -> ApiResult<Admitted> {
    let options = dry_run(call.write_options()?);
    let namespace = call.object_namespace()?;
    let old = shared.state.read().get(&call.info.key(), namespace, name);
    let Some(old) = old else {
        // The store answers NotFound (or a server-side apply creates the object).
        return Ok(Admitted::default());
    };
    let write = write(call, "UPDATE", name, user, call.write_options()?.dry_run);
    let dry_write = |state: &mut State, mutated: Option<Value>| match (mutated, &change) {
        (Some(object), _) => {
            state.update(&call.info, namespace, name, object, Target::Main, &options)
        }
        (None, Change::Replace(object)) => {
            let object = (*object).clone();
            state.update(&call.info, namespace, name, object, Target::Main, &options)
        }
        (None, Change::Patch(patch)) => state
            .patch(&call.info, namespace, name, patch, Target::Main, &options)
            .map(|patched| patched.object),
    };
    let sent = match change {
        Change::Replace(object) => Some(object.clone()),
        Change::Patch(patch @ (PatchBody::Merge(_) | PatchBody::Json(_))) => {
            let mut patched = (*old).clone();
            apply_patch(&mut patched, patch).ok().map(|()| patched)
        }
        Change::Patch(_) => None,
    };
    let proposal = Proposal {
        dry_write: &dry_write,
        sent,
    };
    admission::admit(&shared.state, &write, Some(old), Some(proposal)).await
}

/// How an update changes the object.
pub(super) enum Change<'a> {
    /// A PUT of this object.
    Replace(&'a Value),
    /// A PATCH.
    Patch(&'a PatchBody),
}

/// Admits a delete of `name`.
pub(super) async fn delete(
    shared: &Shared,
    call: &Call,
    user: &User,
    name: &str,
    dry_run: bool,
) -> ApiResult<Admitted> {
    let namespace = call.object_namespace()?;
    let old = shared.state.read().get(&call.info.key(), namespace, name);
    let Some(old) = old else {
        return Ok(Admitted::default());
    };
    let write = write(call, "DELETE", name, user, dry_run);
    admission::admit(&shared.state, &write, Some(old), None).await
}

/// The options as a dry run.
fn dry_run(options: WriteOptions) -> WriteOptions {
    WriteOptions {
        dry_run: true,
        ..options
    }
}
