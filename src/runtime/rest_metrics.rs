//! client-go's REST client metrics for every request a [`Cluster`](super::Cluster)'s client
//! sends: `rest_client_requests_total{code,method,host}` and
//! `rest_client_request_duration_seconds{verb,host}` (until the response's headers), kept for
//! the whole process as client-go keeps them, and shown by every [`Metrics`](super::Metrics).

use std::sync::LazyLock;
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    code: String,
    method: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    verb: String,
    host: String,
}

type LatencyFamily = Family<LatencyLabels, Histogram, fn() -> Histogram>;

/// The process's REST client series.
struct RestMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: LatencyFamily,
}

static REST: LazyLock<RestMetrics> = LazyLock::new(|| RestMetrics {
    requests: Family::default(),
    latency: Family::new_with_constructor(latency_histogram),
});

/// client-go's buckets of `rest_client_request_duration_seconds`.
fn latency_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
    ])
}

/// Adds the process's REST client series to `registry`.
pub(super) fn register(registry: &mut Registry) {
    registry.register(
        "rest_client_requests",
        "Number of HTTP requests, partitioned by status code, method, and host.",
        REST.requests.clone(),
    );
    registry.register(
        "rest_client_request_duration_seconds",
        "Request latency in seconds. Broken down by verb and host.",
        REST.latency.clone(),
    );
}

/// `client` with each of its requests counted and timed under `host` (the API server's
/// `host:port`).
pub(super) fn instrument(client: kube::Client, host: String) -> kube::Client {
    let namespace = client.default_namespace().to_string();
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let client = client.clone();
        let host = host.clone();
        async move {
            let method = request.method().as_str().to_string();
            let started = Instant::now();
            let response = client.send(request).await;
            let code = match &response {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            REST.latency
                .get_or_create(&LatencyLabels {
                    verb: method.clone(),
                    host: host.clone(),
                })
                .observe(started.elapsed().as_secs_f64());
            REST.requests
                .get_or_create(&RequestLabels { code, method, host })
                .inc();
            response
        }
    });
    kube::Client::new(service, namespace)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parking_lot::Mutex;

    use super::*;
    use crate::client::{Client, Identity};

    /// A `kube::Client` answering every request 200, recording the user each impersonates.
    fn answering(users: Arc<Mutex<Vec<String>>>) -> kube::Client {
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
            let users = users.clone();
            async move {
                let user = request.headers().get("Impersonate-User");
                users
                    .lock()
                    .push(user.and_then(|u| u.to_str().ok()).unwrap_or("").to_owned());
                let body = kube::client::Body::from(br#"{"major":"1","minor":"32"}"#.to_vec());
                Ok::<_, std::convert::Infallible>(http::Response::new(body))
            }
        });
        kube::Client::new(service, "default")
    }

    #[tokio::test]
    async fn requests_of_impersonating_clients_are_counted_too() {
        let users = Arc::new(Mutex::new(Vec::new()));
        let host = "impersonation.test:443";
        let client = Client::new(instrument(answering(users.clone()), host.to_owned()));
        let tenant = client.acting_as(Identity::service_account("team-a", "deployer"));
        client.kube().apiserver_version().await.unwrap();
        tenant.kube().apiserver_version().await.unwrap();
        assert_eq!(
            *users.lock(),
            ["", "system:serviceaccount:team-a:deployer"],
            "one request as dynrec, one impersonating"
        );
        let text = crate::runtime::Metrics::new().render().unwrap();
        let counted =
            format!(r#"rest_client_requests_total{{code="200",host="{host}",method="GET"}} 2"#);
        assert!(
            text.lines().any(|line| line == counted),
            "{counted} in:\n{text}"
        );
    }
}
