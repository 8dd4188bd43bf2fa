//! What a reconciler inside a webhook can reach from its context: the admission request,
//! the response being built (shared and mutable), and the HTTP request it came in.

use std::sync::Arc;

use kube::api::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse};
use parking_lot::Mutex;

use crate::reconcilers::{Context, Stasher};

/// The stash key of the admission request.
const REQUEST: Stasher<AdmissionRequest<DynamicObject>> =
    Stasher::new("dynrec/webhook:admission-request");
/// The stash key of the response being built.
const RESPONSE: Stasher<AdmissionResponseHandle> =
    Stasher::new("dynrec/webhook:admission-response");
/// The stash key of the HTTP request.
const HTTP_REQUEST: Stasher<HttpRequestInfo> = Stasher::new("dynrec/webhook:http-request");

/// The HTTP request an admission review arrived in (method, path and headers).
#[derive(Clone, Debug, Default)]
pub struct HttpRequestInfo {
    /// The request method.
    pub method: http::Method,
    /// The request path, e.g. `/mutate-widgets`.
    pub path: String,
    /// The request headers.
    pub headers: http::HeaderMap,
}

impl HttpRequestInfo {
    /// A POST to `path` with no headers.
    pub fn post(path: &str) -> Self {
        Self {
            method: http::Method::POST,
            path: path.to_string(),
            headers: http::HeaderMap::new(),
        }
    }
}

/// The response of the request being handled; clones share it, so a reconciler can deny,
/// warn or set a patch (reconciler.io's `RetrieveAdmissionResponse` pointer).
#[derive(Clone, Debug)]
pub struct AdmissionResponseHandle(Arc<Mutex<AdmissionResponse>>);

impl AdmissionResponseHandle {
    /// A handle on `response`.
    pub(super) fn new(response: AdmissionResponse) -> Self {
        Self(Arc::new(Mutex::new(response)))
    }

    /// A copy of the response as it is now.
    pub fn get(&self) -> AdmissionResponse {
        self.0.lock().clone()
    }

    /// Changes the response.
    pub fn update<T>(&self, change: impl FnOnce(&mut AdmissionResponse) -> T) -> T {
        change(&mut self.0.lock())
    }

    /// Denies the request with an HTTP-style `code` (e.g. 403) and `message`.
    pub fn deny(&self, code: u16, message: impl Into<String>) {
        self.update(|response| {
            response.allowed = false;
            response.result.code = code;
            response.result.message = message.into();
        });
    }

    /// Adds a warning the client shows its user.
    pub fn warn(&self, warning: impl Into<String>) {
        self.update(|response| {
            response
                .warnings
                .get_or_insert_with(Vec::new)
                .push(warning.into())
        });
    }
}

/// Stores what a webhook's reconcilers can reach in the context's stash.
pub(super) fn stash(ctx: &Context, http: &HttpRequestInfo, response: &AdmissionResponseHandle) {
    HTTP_REQUEST.store(ctx.stash(), http.clone());
    RESPONSE.store(ctx.stash(), response.clone());
}

/// Stores the decoded admission request in the context's stash.
pub(super) fn stash_request(ctx: &Context, request: &AdmissionRequest<DynamicObject>) {
    REQUEST.store(ctx.stash(), request.clone());
}

/// The admission request being handled, if the context is a webhook's.
pub fn admission_request(ctx: &Context) -> Option<AdmissionRequest<DynamicObject>> {
    REQUEST.retrieve(ctx.stash())
}

/// The response being built, if the context is a webhook's.
pub fn admission_response(ctx: &Context) -> Option<AdmissionResponseHandle> {
    RESPONSE.retrieve(ctx.stash())
}

/// The HTTP request the admission review came in, if the context is a webhook's.
pub fn http_request(ctx: &Context) -> Option<HttpRequestInfo> {
    HTTP_REQUEST.retrieve(ctx.stash())
}
