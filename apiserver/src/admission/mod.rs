//! Admission webhooks: the server calls the webhooks that MutatingWebhookConfiguration
//! and ValidatingWebhookConfiguration objects declare, as kube-apiserver does: mutating
//! webhooks first (their JSON patches applied in turn), then schema validation of the
//! result, then validating webhooks; a denial answers the client with
//! `admission webhook "NAME" denied the request: ...`. ValidatingAdmissionPolicies bound by
//! a ValidatingAdmissionPolicyBinding are checked last, their CEL `validations` reading
//! `object`, `oldObject` and `request`.
//!
//! Differences from kube-apiserver: a webhook's `service` is reached on loopback (see
//! [`hooks`]); a write is tried as a dry run to get the object webhooks see, and, when a
//! webhook changed it, the changed object is written as a create or a full update;
//! validating webhooks are called one after the other; `matchPolicy` and
//! `matchConditions` are not supported, nor a policy's `paramKind`, `variables`,
//! `matchConditions`, `auditAnnotations` or a binding's `matchResources`.

mod call;
mod hooks;
mod policy;
mod review;
mod trust;

use std::sync::Arc;

use serde_json::Value;

pub(crate) use hooks::Attributes;

use crate::auth::User;
use crate::error::{ApiError, ApiResult};
use crate::store::{State, Store};

/// What admission decided about an allowed write.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    /// The object to write instead of the request's, when a webhook changed it.
    pub(crate) mutated: Option<Value>,
    /// Warnings from the webhooks, for the client.
    pub(crate) warnings: Vec<String>,
}

/// A write on its way to the store.
pub(crate) struct Write<'a> {
    /// What rules and selectors see.
    pub(crate) attributes: Attributes<'a>,
    /// The object's name.
    pub(crate) name: &'a str,
    /// The user making the request.
    pub(crate) user: &'a User,
    /// Whether the request is a dry run.
    pub(crate) dry_run: bool,
}

/// Makes a write as a dry run (see [`admit`]).
pub(crate) type DryWrite<'a> =
    dyn Fn(&mut State, Option<Value>) -> ApiResult<Arc<Value>> + Sync + 'a;

/// What a write proposes to store.
pub(crate) struct Proposal<'a> {
    /// Makes the write as a dry run (see [`admit`]).
    pub(crate) dry_write: &'a DryWrite<'a>,
    /// The object as the request sends it (a create's or PUT's body, the result of a merge
    /// or JSON patch), which webhooks see when the dry run fails schema validation: as in
    /// kube, mutating webhooks run before validation and may make the object valid.
    pub(crate) sent: Option<Value>,
}

/// Runs the webhooks that cover `write`. `dry_write` makes the write as a dry run: with
/// `None` the request as sent (the object webhooks see), with `Some` a changed object (to
/// validate it against the schema). A DELETE (no `dry_write` needed) passes `old` only.
pub(crate) async fn admit(
    store: &Store,
    write: &Write<'_>,
    old: Option<Arc<Value>>,
    proposal: Option<Proposal<'_>>,
) -> ApiResult<Admitted> {
    let dry_write = proposal.as_ref().map(|p| p.dry_write);
    let attributes = &write.attributes;
    let (mutating, validating, policies) = {
        let state = store.read();
        let covering = |mutating| {
            let all = hooks::hooks(&state, mutating);
            all.into_iter()
                .filter(|h| h.covers(attributes))
                .collect::<Vec<_>>()
        };
        (covering(true), covering(false), policy::any(&state))
    };
    if mutating.is_empty() && validating.is_empty() && !policies {
        return Ok(Admitted::default());
    }
    // The object webhooks see, and the schema error it has before they run, if any.
    let (candidate, invalid) = match &proposal {
        Some(proposal) => match store.transact(|state| (proposal.dry_write)(state, None)) {
            Ok((object, _)) => (Some((*object).clone()), None),
            Err(err) if err.code == 422 && proposal.sent.is_some() => {
                (proposal.sent.clone(), Some(err))
            }
            Err(err) => return Err(err),
        },
        None => (None, None),
    };
    let selected = |hooks: Vec<hooks::Hook>| {
        let state = store.read();
        let objects: Vec<&Value> = candidate.iter().chain(old.as_deref()).collect();
        let selected: Vec<_> = hooks
            .into_iter()
            .filter(|h| h.selects(&state, attributes, &objects))
            .collect();
        selected
    };
    let (mutating, validating) = (selected(mutating), selected(validating));
    let mut calls = review::Calls::new(write, old.as_deref());
    let mut object = candidate.clone();
    // The last webhook that changed the object: those before it with
    // `reinvocationPolicy: IfNeeded` are called once more.
    let mut last_change = None;
    for (index, hook) in mutating.iter().enumerate() {
        if calls.mutate(hook, &mut object).await? {
            last_change = Some(index);
        }
    }
    let reinvoked = mutating.iter().take(last_change.unwrap_or(0));
    for hook in reinvoked.filter(|h| h.reinvoke) {
        calls.mutate(hook, &mut object).await?;
    }
    let mutated = (object != candidate).then(|| object.clone()).flatten();
    if let (None, Some(err)) = (&mutated, invalid) {
        return Err(err);
    }
    let validated = match (&mutated, dry_write) {
        (Some(mutated), Some(dry_write)) => {
            let checked = store
                .transact(|state| dry_write(state, Some(mutated.clone())))?
                .0;
            Some((*checked).clone())
        }
        _ => object,
    };
    for hook in &validating {
        calls.validate(hook, validated.as_ref()).await?;
    }
    let mut warnings = calls.into_warnings();
    let bound = {
        let state = store.read();
        let objects: Vec<&Value> = validated.iter().chain(old.as_deref()).collect();
        policy::covering(&state, attributes, &objects)
    };
    for policy in &bound {
        policy.check(
            attributes,
            validated.as_ref(),
            old.as_deref(),
            &mut warnings,
        )?;
    }
    Ok(Admitted { mutated, warnings })
}

/// The error of a webhook that could not be called under `failurePolicy: Fail`.
fn call_failed(name: &str, reason: &str) -> ApiError {
    ApiError::internal(format!(
        "Internal error occurred: failed calling webhook {name:?}: failed to call webhook: {reason}"
    ))
}
