//! The `/metrics` server: over HTTPS to callers the API server authenticates (TokenReview)
//! and authorizes for `get` on the non-resource URL `/metrics` (SubjectAccessReview), as
//! controller-runtime's `WithAuthenticationAndAuthorization` filter does; or plain HTTP to
//! anyone when asked.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;
use tokio::net::TcpListener;
use tracing::{error, info};

use super::{HealthError, Metrics};
use crate::webhook::{CertSource, WebhookServerError, accept, tls_acceptor};

/// Where and how `/metrics` is served.
#[derive(Clone, Debug)]
pub struct MetricsServing {
    /// The listen address (port 0 picks a free one).
    pub address: SocketAddr,
    /// HTTPS with this certificate, and only to callers the API server authenticates and
    /// allows `get` on `/metrics`; `None` serves plain HTTP to anyone.
    pub secure: Option<CertSource>,
}

/// Why the metrics server could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsServerError {
    /// The address could not be bound.
    #[error(transparent)]
    Bind(#[from] HealthError),
    /// The certificate or TLS settings were refused.
    #[error("metrics server: {0}")]
    Tls(#[from] WebhookServerError),
}

#[derive(Clone)]
struct Scrape {
    metrics: Metrics,
    /// The API server asked to authenticate and authorize callers; `None`: anyone.
    reviewer: Option<kube::Client>,
}

/// The bound `/metrics` server; [`MetricsServer::serve`] runs it.
pub struct MetricsServer {
    listener: TcpListener,
    address: SocketAddr,
    secure: Option<CertSource>,
    router: Router,
}

impl MetricsServer {
    /// Binds `serving.address`; callers of a secure server are checked with `reviewer`.
    pub async fn bind(
        serving: &MetricsServing,
        metrics: Metrics,
        reviewer: kube::Client,
    ) -> Result<Self, MetricsServerError> {
        let address = serving.address;
        let bind_error = |source| HealthError::Bind { address, source };
        let listener = TcpListener::bind(address).await.map_err(bind_error)?;
        let address = listener.local_addr().map_err(bind_error)?;
        let scrape = Scrape {
            metrics,
            reviewer: serving.secure.is_some().then_some(reviewer),
        };
        let router = Router::new()
            .route("/metrics", get(serve_metrics))
            .with_state(scrape);
        Ok(Self {
            listener,
            address,
            secure: serving.secure.clone(),
            router,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Serves until `shutdown` completes.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), MetricsServerError> {
        let address = self.address;
        match &self.secure {
            Some(certs) => {
                let (acceptor, _) = tls_acceptor(certs)?;
                info!(%address, secure = true, "serving /metrics over https (authenticated)");
                tokio::select! {
                    () = accept(self.listener, acceptor, self.router) => {}
                    () = shutdown => {}
                }
                Ok(())
            }
            None => {
                info!(%address, secure = false, "serving /metrics over plain http");
                axum::serve(self.listener, self.router)
                    .with_graceful_shutdown(shutdown)
                    .await
                    .map_err(|err| HealthError::Serve(err).into())
            }
        }
    }
}

async fn serve_metrics(State(scrape): State<Scrape>, headers: HeaderMap) -> Response {
    if let Some(reviewer) = &scrape.reviewer
        && let Err(refused) = authorize(reviewer, &headers).await
    {
        return refused;
    }
    match scrape.metrics.render() {
        Ok(body) => (
            [(header::CONTENT_TYPE, super::prometheus_text::CONTENT_TYPE)],
            body,
        )
            .into_response(),
        Err(err) => {
            error!(error = %err, "cannot render metrics");
            (StatusCode::INTERNAL_SERVER_ERROR, "cannot render metrics").into_response()
        }
    }
}

/// Lets the request through when its bearer token is one the API server authenticates and
/// whose user may `get` the non-resource URL `/metrics`; else 401 or 403 in
/// controller-runtime's words.
async fn authorize(reviewer: &kube::Client, headers: &HeaderMap) -> Result<(), Response> {
    let unauthorized = || (StatusCode::UNAUTHORIZED, "Unauthorized\n").into_response();
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|token| !token.is_empty())
        .ok_or_else(unauthorized)?;
    let user = authenticate(reviewer, token)
        .await
        .map_err(review_failed)?
        .ok_or_else(unauthorized)?;
    let name = user.username.clone().unwrap_or_default();
    if allowed(reviewer, user).await.map_err(review_failed)? {
        Ok(())
    } else {
        let message = format!("Authorization denied for user {name}\n");
        Err((StatusCode::FORBIDDEN, message).into_response())
    }
}

/// The user a TokenReview finds for `token`; `None` when it is not authenticated.
async fn authenticate(
    reviewer: &kube::Client,
    token: &str,
) -> Result<Option<UserInfo>, kube::Error> {
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: token.to_string(),
            ..TokenReviewSpec::default()
        },
        ..TokenReview::default()
    };
    let answered = Api::<TokenReview>::all(reviewer.clone())
        .create(&PostParams::default(), &review)
        .await?;
    let status = answered.status.unwrap_or_default();
    Ok(match status.authenticated {
        Some(true) => status.user,
        _ => None,
    })
}

/// Whether a SubjectAccessReview allows `user` to `get` `/metrics`.
async fn allowed(reviewer: &kube::Client, user: UserInfo) -> Result<bool, kube::Error> {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username,
            groups: user.groups,
            uid: user.uid,
            extra: user.extra,
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some("/metrics".to_string()),
                verb: Some("get".to_string()),
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answered = Api::<SubjectAccessReview>::all(reviewer.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answered.status.is_some_and(|status| status.allowed))
}

/// The answer when the API server could not be asked.
fn review_failed(err: kube::Error) -> Response {
    error!(%err, "cannot review a /metrics caller with the API server");
    let message = format!("cannot authenticate or authorize the request: {err}\n");
    (StatusCode::INTERNAL_SERVER_ERROR, message).into_response()
}
