//! The controller's own view of a churn step, from its Prometheus histograms: how long work
//! waited in its queue and how long reconciles took, the two figures of the sharding thesis's
//! SLO (p99 queue time ≤ 1 s, p99 reconcile ≤ 5 s). dynrec serves them as controller-runtime
//! names them; the typed baseline (kube-runtime) has none.

use std::net::SocketAddr;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long work waited in the queue before a worker took it.
const QUEUE: &str = "workqueue_queue_duration_seconds";
/// How long a reconcile took.
const RECONCILE: &str = "controller_runtime_reconcile_time_seconds";

/// The p99s of one step, from the change of the histograms over it.
#[derive(Debug, Serialize)]
pub struct ControllerLatency {
    /// Items the queue handed to workers during the step.
    pub dequeued: f64,
    /// p99 time in the queue, milliseconds.
    pub p99_queue_ms: Option<f64>,
    /// Reconciles during the step.
    pub reconciles: f64,
    /// p99 reconcile time, milliseconds.
    pub p99_reconcile_ms: Option<f64>,
}

/// The histograms at one moment.
pub struct Snapshot(String);

/// Reads the controller's `/metrics` served over plain HTTP at `address`.
pub async fn scrape(address: SocketAddr) -> Result<Snapshot> {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .with_context(|| format!("connect to the controller's metrics at {address}"))?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let Some((head, body)) = response.split_once("\r\n\r\n") else {
        bail!("the metrics response from {address} has no body");
    };
    if !head.starts_with("HTTP/1.1 200") {
        bail!(
            "the metrics at {address} answered {}",
            head.lines().next().unwrap_or_default()
        );
    }
    Ok(Snapshot(body.to_string()))
}

impl ControllerLatency {
    /// The p99s of what happened between `before` and `after`.
    pub fn between(before: &Snapshot, after: &Snapshot) -> Self {
        let queue = Buckets::change(before, after, QUEUE);
        let reconcile = Buckets::change(before, after, RECONCILE);
        Self {
            dequeued: queue.count(),
            p99_queue_ms: queue.quantile(0.99).map(|s| s * 1000.0),
            reconciles: reconcile.count(),
            p99_reconcile_ms: reconcile.quantile(0.99).map(|s| s * 1000.0),
        }
    }
}

/// A histogram's cumulative buckets, `(le, count)` in ascending `le`, summed over its series.
#[derive(Debug, PartialEq)]
struct Buckets(Vec<(f64, f64)>);

impl Buckets {
    /// The buckets of `name` in the Prometheus text `snapshot`, every series added up.
    fn read(snapshot: &Snapshot, name: &str) -> Self {
        let prefix = format!("{name}_bucket{{");
        let mut buckets: Vec<(f64, f64)> = Vec::new();
        for line in snapshot.0.lines().filter(|l| l.starts_with(&prefix)) {
            let Some((labels, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Some(le) = labels
                .split_once("le=\"")
                .and_then(|(_, rest)| rest.split_once('"'))
                .and_then(|(le, _)| le.parse::<f64>().ok())
            else {
                continue;
            };
            let count: f64 = value.parse().unwrap_or(0.0);
            match buckets.iter_mut().find(|(l, _)| *l == le) {
                Some((_, total)) => *total += count,
                None => buckets.push((le, count)),
            }
        }
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        Self(buckets)
    }

    /// What `name` counted between two snapshots.
    fn change(before: &Snapshot, after: &Snapshot, name: &str) -> Self {
        let before = Self::read(before, name);
        let after = Self::read(after, name);
        Self(
            after
                .0
                .iter()
                .map(|&(le, count)| {
                    let earlier = before.0.iter().find(|(l, _)| *l == le).map_or(0.0, |b| b.1);
                    (le, count - earlier)
                })
                .collect(),
        )
    }

    /// Observations in all (the `+Inf` bucket).
    fn count(&self) -> f64 {
        self.0.last().map_or(0.0, |b| b.1)
    }

    /// The `q` quantile as Prometheus's `histogram_quantile` estimates it: linear within the
    /// bucket it falls in; the highest finite bound when it falls in `+Inf`; none when empty.
    fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let mut lower = (0.0, 0.0);
        for &(le, count) in &self.0 {
            if count >= rank {
                if le.is_infinite() {
                    return Some(lower.0);
                }
                let within = count - lower.1;
                let fraction = if within > 0.0 {
                    (rank - lower.1) / within
                } else {
                    1.0
                };
                return Some(lower.0 + (le - lower.0) * fraction);
            }
            lower = (le, count);
        }
        Some(lower.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(text: &str) -> Snapshot {
        Snapshot(text.to_string())
    }

    const BEFORE: &str = r#"# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="a",le="0.005"} 10
controller_runtime_reconcile_time_seconds_bucket{controller="a",le="0.01"} 10
controller_runtime_reconcile_time_seconds_bucket{controller="a",le="+Inf"} 10
controller_runtime_reconcile_time_seconds_sum{controller="a"} 0.01
controller_runtime_reconcile_time_seconds_count{controller="a"} 10
"#;

    const AFTER: &str = r#"# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="a",le="0.005"} 60
controller_runtime_reconcile_time_seconds_bucket{controller="a",le="0.01"} 110
controller_runtime_reconcile_time_seconds_bucket{controller="a",le="+Inf"} 110
controller_runtime_reconcile_time_seconds_bucket{controller="b",le="0.005"} 0
controller_runtime_reconcile_time_seconds_bucket{controller="b",le="0.01"} 0
controller_runtime_reconcile_time_seconds_bucket{controller="b",le="+Inf"} 100
"#;

    #[test]
    fn a_step_is_the_change_of_every_series_summed() {
        let change = Buckets::change(&snapshot(BEFORE), &snapshot(AFTER), RECONCILE);
        assert_eq!(
            change,
            Buckets(vec![(0.005, 50.0), (0.01, 100.0), (f64::INFINITY, 200.0)])
        );
    }

    #[test]
    fn quantiles_interpolate_within_their_bucket_as_prometheus_does() {
        let buckets = Buckets(vec![(0.005, 50.0), (0.01, 100.0), (f64::INFINITY, 100.0)]);
        assert_eq!(buckets.quantile(0.5), Some(0.005));
        assert_eq!(buckets.quantile(0.75), Some(0.0075));
        // In `+Inf`: the highest finite bound, as histogram_quantile answers.
        let slow = Buckets(vec![(0.005, 1.0), (0.01, 1.0), (f64::INFINITY, 100.0)]);
        assert_eq!(slow.quantile(0.99), Some(0.01));
        assert_eq!(Buckets(vec![]).quantile(0.99), None);
    }

    #[test]
    fn the_latency_of_a_step_reads_both_histograms() {
        let latency = ControllerLatency::between(&snapshot(BEFORE), &snapshot(AFTER));
        assert_eq!(latency.reconciles, 200.0);
        assert_eq!(latency.dequeued, 0.0);
        assert_eq!(latency.p99_queue_ms, None);
        assert_eq!(latency.p99_reconcile_ms, Some(10.0));
    }
}
