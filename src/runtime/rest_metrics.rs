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
