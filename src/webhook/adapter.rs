//! `AdmissionWebhookAdapter`: a sub-reconciler as an admission webhook.

use jiff::Timestamp;
use std::sync::Arc;

use kube::api::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use serde_json::Value;

use super::request::{self, AdmissionResponseHandle, HttpRequestInfo};
use crate::object::{Gvk, ObjectKey};
use crate::reconcilers::{Config, Context, Draft, SubReconciler, ValidationError};

/// Called with the context and the response before the reconcile (`BeforeHandle`) or
/// after it (`AfterHandle`); the admission request is in the context
/// ([`super::admission_request`]) when it could be decoded. Change the response through
/// the argument, whose final value replaces it.
pub trait HandleHook: Fn(&Context, &mut AdmissionResponse) + Send + Sync + 'static {}

impl<F> HandleHook for F where F: Fn(&Context, &mut AdmissionResponse) + Send + Sync + 'static {}

/// Turns a sub-reconciler over `DynamicObject` into an admission webhook handler.
///
/// Requests are allowed by default. The request's object (its old object for DELETE) is
/// reconciled; a reconcile error denies the request with code 500 and the error's message
/// unless the reconciler set a result on the response itself. When the reconciler changed
/// the object and set no patch, the response carries an RFC 6902 patch from the object as
/// received to the changed one. Divergence from reconciler.io, whose patch starts from the
/// raw request bytes (so it carries every default once any patch is emitted): the patch
/// starts from the decoded object, so serializer artifacts never appear in it; there are
/// no type defaulters over dynamic objects.
pub struct AdmissionWebhookAdapter {
    name: String,
    reconciler: Box<dyn SubReconciler>,
    config: Config,
    before_handle: Option<Box<dyn HandleHook>>,
    after_handle: Option<Box<dyn HandleHook>>,
}

impl AdmissionWebhookAdapter {
    /// An adapter running `reconciler` with `config` (named `AdmissionWebhookAdapter`).
    pub fn new(reconciler: impl SubReconciler + 'static, config: Config) -> Self {
        Self {
            name: "AdmissionWebhookAdapter".into(),
            reconciler: Box::new(reconciler),
            config,
            before_handle: None,
            after_handle: None,
        }
    }

    /// Names the adapter (used in logs, metrics and validation messages).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Runs `hook` first thing for each request (reconciler.io's `BeforeHandle`).
    pub fn before_handle(mut self, hook: impl HandleHook) -> Self {
        self.before_handle = Some(Box::new(hook));
        self
    }

    /// Runs `hook` after all work for each request; it may change the response
    /// (reconciler.io's `AfterHandle`).
    pub fn after_handle(mut self, hook: impl HandleHook) -> Self {
        self.after_handle = Some(Box::new(hook));
        self
    }

    /// The adapter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Checks that the nested reconciler is complete.
    pub fn validate(&self) -> Result<(), ValidationError> {
        self.reconciler.validate().map_err(|err| {
            ValidationError(format!(
                "AdmissionWebhookAdapter {:?} must have a valid Reconciler: {err}",
                self.name
            ))
        })
    }

    /// Handles one admission request (`AdmissionReview.request`, as JSON) that arrived
    /// in `http`, at `now`; returns the completed response (code 200 unless set).
    pub async fn handle(
        &self,
        http: &HttpRequestInfo,
        request: &Value,
        now: Timestamp,
    ) -> AdmissionResponse {
        self.handle_seeded(http, request, now, &|_| {}).await
    }

    /// [`Self::handle`], calling `seed` with the request's context before anything else
    /// runs (the test harness stashes given values there and keeps the stash to check).
    pub(crate) async fn handle_seeded(
        &self,
        http: &HttpRequestInfo,
        request: &Value,
        now: Timestamp,
        seed: &(dyn Fn(&Context) + Sync),
    ) -> AdmissionResponse {
        let text = |field: &str| request.get(field).and_then(Value::as_str).unwrap_or("");
        let mut response = allowed(text("uid"));
        let key = match text("namespace") {
            "" => ObjectKey::cluster(text("name")),
            namespace => ObjectKey::namespaced(namespace, text("name")),
        };
        let kind = request.get("kind").cloned().unwrap_or_default();
        let text_of = |field: &str| kind.get(field).and_then(Value::as_str).unwrap_or("");
        let gvk = Gvk::new(text_of("group"), text_of("version"), text_of("kind"));
        let ctx = Context::new(key, gvk, self.config.clone(), now);
        seed(&ctx);
        let handle = AdmissionResponseHandle::new(response.clone());
        request::stash(&ctx, http, &handle);
        let decoded = serde_json::from_value::<AdmissionRequest<DynamicObject>>(request.clone());
        if let Ok(decoded) = &decoded {
            request::stash_request(&ctx, decoded);
        }
        if let Some(before) = &self.before_handle {
            // On a copy: the hook may also reach the handle through the context.
            let mut changed = handle.get();
            before(&ctx, &mut changed);
            handle.update(|response| *response = changed);
        }
        let reconciled = match decoded {
            Ok(decoded) => self.reconcile(&ctx, decoded, &handle).await,
            Err(err) => Err(err.to_string()),
        };
        if let Err(message) = reconciled {
            handle.update(|response| {
                response.allowed = false;
                if response.result.code == 0 && response.result.message.is_empty() {
                    response.result.code = 500;
                    response.result.message = message;
                }
            });
        }
        response = handle.get();
        if let Some(after) = &self.after_handle {
            after(&ctx, &mut response);
        }
        if response.result.code == 0 {
            response.result.code = 200;
        }
        response
    }

    /// Reconciles the request's object; sets the patch of a mutation.
    async fn reconcile(
        &self,
        ctx: &Context,
        decoded: AdmissionRequest<DynamicObject>,
        handle: &AdmissionResponseHandle,
    ) -> Result<(), String> {
        let object = match decoded.operation {
            Operation::Delete => decoded.old_object,
            _ => decoded.object,
        };
        let Some(resource) = object else {
            return Err(format!(
                "the {:?} request has no object to reconcile",
                decoded.operation
            ));
        };
        let original = Arc::new(resource);
        let mut resource = Draft::shared(original.clone());
        let outcome = self.reconciler.reconcile(ctx, &mut resource).await;
        if let Some(err) = outcome.error {
            if !err.is_quiet() {
                tracing::error!(webhook = %self.name, uid = %decoded.uid, error = %err, "reconcile error");
            }
            return Err(err.to_string());
        }
        // A reconcile that wrote nothing (a validating one) has nothing to diff.
        if !resource.is_changed() || handle.get().patch.is_some() {
            return Ok(());
        }
        let json = |object: &DynamicObject| serde_json::to_value(object).map_err(|e| e.to_string());
        let (original, mutated) = (json(&original)?, json(resource.get())?);
        if original != mutated {
            let patch = json_patch::diff(&original, &mutated);
            tracing::info!(webhook = %self.name, uid = %decoded.uid, ?patch, "mutating resource");
            let patched = handle
                .get()
                .with_patch(patch)
                .map_err(|err| err.to_string())?;
            handle.update(|response| *response = patched);
        }
        Ok(())
    }
}

/// An allowed response to the request `uid` (in an `admission.k8s.io/v1` review).
pub(super) fn allowed(uid: &str) -> AdmissionResponse {
    let mut response = AdmissionResponse::invalid("");
    response.uid = uid.to_string();
    response.allowed = true;
    response.result = Default::default();
    response
}
