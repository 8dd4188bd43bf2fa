//! The HTTPS server that serves admission webhooks by path, plus `/healthz`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::FutureExt;
use jiff::Timestamp;
use kube::core::admission::AdmissionResponse;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::adapter::{AdmissionWebhookAdapter, allowed};
use super::certs::{CertError, CertSource};
use super::request::HttpRequestInfo;
use crate::reconcilers::ValidationError;

/// Why the webhook server could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebhookServerError {
    /// The certificate could not be made or read.
    #[error(transparent)]
    Cert(#[from] CertError),
    /// rustls refused the settings.
    #[error("cannot configure TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// The address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// A webhook's path is not usable.
    #[error("webhook path {0:?} must start with '/' and be served once (and not be /healthz)")]
    Path(String),
    /// A webhook's reconciler tree is incomplete.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
}

/// Records one answered admission request: the webhook's name, whether it was allowed,
/// and how long it took (the Manager records it in its metrics).
pub type AdmissionRecorder = Arc<dyn Fn(&str, bool, Duration) + Send + Sync>;

/// Admission webhooks served over HTTPS, each at its own path.
pub struct WebhookServer {
    certs: CertSource,
    webhooks: BTreeMap<String, Arc<AdmissionWebhookAdapter>>,
    record: AdmissionRecorder,
}

/// What every request handler shares.
#[derive(Clone)]
struct Shared {
    webhooks: Arc<BTreeMap<String, Arc<AdmissionWebhookAdapter>>>,
    record: AdmissionRecorder,
}

impl WebhookServer {
    /// A server with no webhooks yet, using `certs`.
    pub fn new(certs: CertSource) -> Self {
        Self {
            certs,
            webhooks: BTreeMap::new(),
            record: Arc::new(|_, _, _| {}),
        }
    }

    /// Serves `adapter` at `path` (e.g. `/mutate-widgets`); the adapter is validated here.
    pub fn webhook(
        mut self,
        path: &str,
        adapter: AdmissionWebhookAdapter,
    ) -> Result<Self, WebhookServerError> {
        if !path.starts_with('/') || path == "/healthz" || self.webhooks.contains_key(path) {
            return Err(WebhookServerError::Path(path.to_string()));
        }
        adapter.validate()?;
        self.webhooks.insert(path.to_string(), Arc::new(adapter));
        Ok(self)
    }

    /// Calls `record` for each answered admission request (`Manager::serve_webhooks`
    /// records them in the manager's metrics).
    pub fn recording(mut self, record: AdmissionRecorder) -> Self {
        self.record = record;
        self
    }

    /// Binds `address` (port 0 picks a free one) and serves until the returned handle is
    /// dropped or stopped.
    pub async fn bind(self, address: SocketAddr) -> Result<WebhookServing, WebhookServerError> {
        let (acceptor, ca_pem) = tls_acceptor(&self.certs)?;
        let bind_error = |source| WebhookServerError::Bind { address, source };
        let listener = TcpListener::bind(address).await.map_err(bind_error)?;
        let address = listener.local_addr().map_err(bind_error)?;
        let shared = Shared {
            webhooks: Arc::new(self.webhooks),
            record: self.record,
        };
        let app = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .fallback(post(review))
            .with_state(shared);
        tracing::info!(%address, "serving admission webhooks over https");
        let task = tokio::spawn(accept(listener, acceptor, app));
        Ok(WebhookServing {
            address,
            ca_pem,
            task,
        })
    }
}

/// A TLS acceptor (HTTP/1.1) serving the certificate of `certs`, and the PEM of the
/// certificate clients must trust when it is self-signed.
pub(crate) fn tls_acceptor(
    certs: &CertSource,
) -> Result<(tokio_rustls::TlsAcceptor, Option<String>), WebhookServerError> {
    let (resolver, ca_pem) = certs.resolver()?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca_pem))
}

/// Accepts TLS connections until the task is dropped, each served by `app` on its own task.
pub(crate) async fn accept(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    app: Router,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(err) => {
                // Out of file descriptors, most likely: let some connections close.
                tracing::warn!(%err, "https server cannot accept a connection");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let tls = match acceptor.accept(stream).await {
                Ok(tls) => tls,
                Err(err) => return tracing::debug!(%err, "TLS handshake failed"),
            };
            let io = hyper_util::rt::TokioIo::new(tls);
            if let Err(err) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!(%err, "https connection ended");
            }
        });
    }
}

/// Answers one AdmissionReview posted to a webhook's path.
async fn review(
    State(shared): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let Some(adapter) = shared.webhooks.get(&path) else {
        return (StatusCode::NOT_FOUND, format!("no webhook at {path}\n")).into_response();
    };
    let review: Value = match serde_json::from_slice(&body) {
        Ok(review) => review,
        Err(err) => {
            let message = format!("the body is not an AdmissionReview: {err}\n");
            return (StatusCode::BAD_REQUEST, message).into_response();
        }
    };
    let Some(request) = review.get("request") else {
        let message = "the AdmissionReview has no request\n";
        return (StatusCode::BAD_REQUEST, message).into_response();
    };
    let http = HttpRequestInfo {
        method,
        path,
        headers,
    };
    let started = Instant::now();
    let handled = AssertUnwindSafe(adapter.handle(&http, request, Timestamp::now())).catch_unwind();
    let response = handled
        .await
        .unwrap_or_else(|panic| panicked(request, &*panic));
    (shared.record)(adapter.name(), response.allowed, started.elapsed());
    let mut body = serde_json::to_value(response.into_review()).unwrap_or_default();
    if let Some(api_version) = review.get("apiVersion") {
        body["apiVersion"] = api_version.clone();
    }
    let json = [(axum::http::header::CONTENT_TYPE, "application/json")];
    (json, body.to_string()).into_response()
}

/// The denial of a request whose reconciler panicked (as controller-runtime recovers it).
fn panicked(request: &Value, panic: &(dyn std::any::Any + Send)) -> AdmissionResponse {
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    tracing::error!(%message, "admission webhook panicked");
    let uid = request.get("uid").and_then(Value::as_str).unwrap_or("");
    let mut response = allowed(uid);
    response.allowed = false;
    response.result.code = 500;
    response.result.message = format!("panic: {message} [recovered]");
    response
}

/// A running webhook server.
pub struct WebhookServing {
    address: SocketAddr,
    ca_pem: Option<String>,
    task: JoinHandle<()>,
}

impl WebhookServing {
    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The `https://` URL of `path` on this server (by IP address).
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.address)
    }

    /// The PEM of the self-signed certificate clients must trust (`None` for files).
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// Stops accepting connections.
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for WebhookServing {
    fn drop(&mut self) {
        self.task.abort();
    }
}
