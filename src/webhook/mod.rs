//! Admission webhooks: any sub-reconciler as a mutating or validating webhook
//! ([`AdmissionWebhookAdapter`], reconciler.io's adapter of the same name), served over
//! HTTPS by a [`WebhookServer`].
//!
//! The adapter reconciles the request's object (the old object for DELETE) and answers
//! with a JSON patch from the object it received to the one the reconciler left, its
//! warnings, or a denial carrying the reconcile error's message. A reconciler reaches the
//! request and the response being built through [`admission_request`] and
//! [`admission_response`].

mod adapter;
mod certs;
mod request;
mod server;
mod service_cert;

pub use adapter::{AdmissionWebhookAdapter, HandleHook};
pub use certs::{CertError, CertSource};
pub use request::{
    AdmissionResponseHandle, HttpRequestInfo, admission_request, admission_response, http_request,
};
pub use server::{AdmissionRecorder, WebhookServer, WebhookServerError, WebhookServing};
pub(crate) use server::{accept, tls_acceptor};
pub use service_cert::{ServiceCertError, service_cert_secret, service_certificate};

pub use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
