//! The health probes' endpoints, `/healthz` and `/readyz`: plain HTTP on their own port
//! (`/metrics` has its own server, see `metrics_server`).

use std::{collections::BTreeMap, future::Future, io, net::SocketAddr, sync::Arc};

use axum::{
    Router,
    extract::{Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::get,
};
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tracing::info;

/// The readiness component of what the Manager itself needs (not any one controller).
pub(super) const MANAGER_COMPONENT: &str = "manager";

/// Which components are ready, and why the others are not; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    components: Arc<Mutex<BTreeMap<String, Option<String>>>>,
    standby: Arc<std::sync::atomic::AtomicBool>,
}

impl Readiness {
    /// An empty registry, which is ready.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks a component ready.
    pub fn set_ready(&self, component: impl Into<String>) {
        self.components.lock().insert(component.into(), None);
    }

    /// Marks a component not ready, saying why.
    pub fn set_not_ready(&self, component: impl Into<String>, reason: impl Into<String>) {
        self.components
            .lock()
            .insert(component.into(), Some(reason.into()));
    }

    /// Stops tracking a component.
    pub fn remove(&self, component: &str) {
        self.components.lock().remove(component);
    }

    /// Marks this replica a standby (leader election on, another replica leads): its
    /// controllers do not run, and it is ready to take over unless the Manager itself is not.
    pub fn set_standby(&self, standby: bool) {
        self.standby
            .store(standby, std::sync::atomic::Ordering::SeqCst);
    }

    /// One `component: reason` line per component that is not ready (on a standby, only
    /// the Manager's own).
    pub fn not_ready(&self) -> Vec<String> {
        let standby = self.standby.load(std::sync::atomic::Ordering::SeqCst);
        self.components
            .lock()
            .iter()
            .filter(|(component, _)| !standby || component.as_str() == MANAGER_COMPONENT)
            .filter_map(|(component, reason)| {
                reason
                    .as_ref()
                    .map(|reason| format!("{component}: {reason}"))
            })
            .collect()
    }

    /// One line per component, kube-apiserver's `/readyz?verbose` style: `[+]name ok` or
    /// `[-]name: reason`.
    pub fn report(&self) -> Vec<String> {
        self.components
            .lock()
            .iter()
            .map(|(component, reason)| match reason {
                None => format!("[+]{component} ok"),
                Some(reason) => format!("[-]{component}: {reason}"),
            })
            .collect()
    }

    /// Whether every component is ready.
    pub fn is_ready(&self) -> bool {
        self.not_ready().is_empty()
    }
}

/// A failure to serve the health endpoints.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    /// The address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address asked for.
        address: SocketAddr,
        /// Why.
        source: io::Error,
    },
    /// The server failed while serving.
    #[error("health endpoint failed: {0}")]
    Serve(#[source] io::Error),
}

/// The `/healthz` and `/readyz` routes.
pub fn router(readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(serve_readiness))
        .with_state(readiness)
}

/// `/readyz`: "ok", or why components are not ready; with `?verbose`, every component
/// (each controller, named for its kind) and whether it is ready.
async fn serve_readiness(
    State(readiness): State<Readiness>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let ready = readiness.is_ready();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    if query.contains_key("verbose") {
        let mut lines = readiness.report();
        lines.push(format!(
            "readyz check {}\n",
            if ready { "passed" } else { "failed" }
        ));
        return (status, lines.join("\n")).into_response();
    }
    if ready {
        return "ok".into_response();
    }
    let mut body = readiness.not_ready().join("\n");
    body.push('\n');
    (status, body).into_response()
}

/// The health endpoints, bound to an address and ready to serve.
pub struct HealthServer {
    listener: TcpListener,
    address: SocketAddr,
    router: Router,
}

impl HealthServer {
    /// Binds `address` (port 0 picks a free one) for the given readiness.
    pub async fn bind(address: SocketAddr, readiness: Readiness) -> Result<Self, HealthError> {
        let bind_error = |source| HealthError::Bind { address, source };
        let listener = TcpListener::bind(address).await.map_err(bind_error)?;
        let address = listener.local_addr().map_err(bind_error)?;
        Ok(Self {
            listener,
            address,
            router: router(readiness),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Serves until `shutdown` completes.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), HealthError> {
        info!(address = %self.address, "serving /healthz and /readyz");
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(HealthError::Serve)
    }
}
