//! Prometheus metrics: reconciles, queues, shared caches and leadership.

use std::{collections::BTreeMap, fmt, sync::Arc, time::Duration};

use parking_lot::Mutex;
use prometheus_client::{
    collector::Collector,
    encoding::{
        DescriptorEncoder, EncodeLabelSet, EncodeLabelValue, EncodeMetric, LabelValueEncoder, text,
    },
    metrics::{
        MetricType,
        counter::{ConstCounter, Counter},
        family::Family,
        gauge::{ConstGauge, Gauge},
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

use super::{QueueStats, WorkOutcome};
use crate::client::Client;

/// How a reconcile ended, as a metric label.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ResultLabel {
    /// Finished with nothing more to do.
    Success,
    /// Failed.
    Error,
    /// Asked to run again.
    Requeue,
}

impl ResultLabel {
    /// The label value: `success`, `error` or `requeue`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Requeue => "requeue",
        }
    }
}

impl EncodeLabelValue for ResultLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), fmt::Error> {
        self.as_str().encode(encoder)
    }
}

impl From<WorkOutcome> for ResultLabel {
    fn from(outcome: WorkOutcome) -> Self {
        match outcome {
            WorkOutcome::Success => Self::Success,
            WorkOutcome::Error => Self::Error,
            WorkOutcome::Requeue | WorkOutcome::RequeueAfter(_) => Self::Requeue,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    controller: String,
    result: ResultLabel,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AdmissionLabels {
    webhook: String,
    allowed: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    gvk: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DuckKindLabels {
    controller: String,
    duck: String,
    gvk: String,
    reason: String,
}

type DurationFamily = Family<ControllerLabels, Histogram, fn() -> Histogram>;
type AdmissionDurationFamily = Family<WebhookLabels, Histogram, fn() -> Histogram>;
type QueueSource = Box<dyn Fn() -> QueueStats + Send + Sync>;

/// The process's metrics; cheap to clone, rendered with [`Metrics::render`].
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    reconciles: Family<ReconcileLabels, Counter>,
    durations: DurationFamily,
    admissions: Family<AdmissionLabels, Counter>,
    admission_durations: AdmissionDurationFamily,
    leader: Gauge,
    sources: Arc<Sources>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics, every series registered under the `dynrec` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("dynrec");
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        registry.register(
            "reconciles",
            "Reconciles by controller and result",
            reconciles.clone(),
        );
        let durations: DurationFamily = Family::new_with_constructor(duration_histogram);
        registry.register(
            "reconcile_duration_seconds",
            "How long reconciles take, by controller",
            durations.clone(),
        );
        let admissions = Family::<AdmissionLabels, Counter>::default();
        registry.register(
            "admission_requests",
            "Admission requests by webhook and whether they were allowed",
            admissions.clone(),
        );
        let admission_durations: AdmissionDurationFamily =
            Family::new_with_constructor(duration_histogram);
        registry.register(
            "admission_duration_seconds",
            "How long admission webhooks take to answer, by webhook",
            admission_durations.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this process holds the leader lease (or runs without election)",
            leader.clone(),
        );
        let sources = Arc::new(Sources::default());
        registry.register_collector(Box::new(sources.clone()));
        Self {
            inner: Arc::new(Inner {
                registry,
                reconciles,
                durations,
                admissions,
                admission_durations,
                leader,
                sources,
            }),
        }
    }

    /// Counts one reconcile of `controller` and how long it took.
    pub fn record_reconcile(&self, controller: &str, result: ResultLabel, took: Duration) {
        let controller = controller.to_owned();
        self.inner
            .durations
            .get_or_create(&ControllerLabels {
                controller: controller.clone(),
            })
            .observe(took.as_secs_f64());
        self.inner
            .reconciles
            .get_or_create(&ReconcileLabels { controller, result })
            .inc();
    }

    /// Counts one admission request answered by `webhook`, and how long it took.
    pub fn record_admission(&self, webhook: &str, allowed: bool, took: Duration) {
        let webhook = webhook.to_owned();
        self.inner
            .admission_durations
            .get_or_create(&WebhookLabels {
                webhook: webhook.clone(),
            })
            .observe(took.as_secs_f64());
        self.inner
            .admissions
            .get_or_create(&AdmissionLabels { webhook, allowed })
            .inc();
    }

    /// Reports `controller`'s queue counters, read at each scrape, until removed.
    pub fn register_queue(
        &self,
        controller: &str,
        stats: impl Fn() -> QueueStats + Send + Sync + 'static,
    ) {
        self.inner
            .sources
            .queues
            .lock()
            .insert(controller.to_owned(), Box::new(stats));
    }

    /// Reports that the duck controller `controller` runs for `duck` on `gvk`, matched
    /// because of `reason`, until removed.
    pub fn set_duck_kind(&self, controller: &str, duck: &str, gvk: &str, reason: &str) {
        let labels = DuckKindLabels {
            controller: controller.to_owned(),
            duck: duck.to_owned(),
            gvk: gvk.to_owned(),
            reason: reason.to_owned(),
        };
        self.inner
            .sources
            .ducks
            .lock()
            .insert(controller.to_owned(), labels);
    }

    /// Stops reporting the duck controller `controller`.
    pub fn remove_duck_kind(&self, controller: &str) {
        self.inner.sources.ducks.lock().remove(controller);
    }

    /// Stops reporting `controller`'s queue.
    pub fn remove_queue(&self, controller: &str) {
        self.inner.sources.queues.lock().remove(controller);
    }

    /// Reports the client's shared caches (cached objects and open watches per GVK) at each scrape.
    pub fn observe_client(&self, client: &Client) {
        *self.inner.sources.client.lock() = Some(client.clone());
    }

    /// Sets the leader status.
    pub fn set_leader(&self, leading: bool) {
        self.inner.leader.set(i64::from(leading));
    }

    /// Every series in the Prometheus (OpenMetrics) text format.
    pub fn render(&self) -> Result<String, fmt::Error> {
        let mut out = String::new();
        text::encode(&mut out, &self.inner.registry)?;
        Ok(out)
    }
}

/// Durations from 1 ms to about 65 s.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// Values read at scrape time: queues and shared caches.
#[derive(Default)]
struct Sources {
    queues: Mutex<BTreeMap<String, QueueSource>>,
    client: Mutex<Option<Client>>,
    ducks: Mutex<BTreeMap<String, DuckKindLabels>>,
}

impl fmt::Debug for Sources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sources")
            .field("queues", &self.queues.lock().keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Collector for Sources {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let queues: Vec<(ControllerLabels, QueueStats)> = self
            .queues
            .lock()
            .iter()
            .map(|(controller, stats)| {
                let labels = ControllerLabels {
                    controller: controller.clone(),
                };
                (labels, stats())
            })
            .collect();
        encode_series(
            &mut encoder,
            "queue_depth",
            "Keys waiting in the work queue.",
            MetricType::Gauge,
            &queues,
            |s| s.depth as u64,
        )?;
        encode_series(
            &mut encoder,
            "queue_adds",
            "Requests added to the work queue.",
            MetricType::Counter,
            &queues,
            |s| s.adds,
        )?;
        encode_series(
            &mut encoder,
            "queue_retries",
            "Keys retried after an error or a requeue.",
            MetricType::Counter,
            &queues,
            |s| s.retries,
        )?;
        let kinds: Vec<(KindLabels, usize)> = match self.client.lock().as_ref() {
            Some(client) => client
                .watched_kinds()
                .into_iter()
                .filter_map(|gvk| {
                    let count = client.cached_object_count(&gvk)?;
                    Some((
                        KindLabels {
                            gvk: gvk.to_string(),
                        },
                        count,
                    ))
                })
                .collect(),
            None => Vec::new(),
        };
        encode_series(
            &mut encoder,
            "cached_objects",
            "Objects held by the shared cache of a kind.",
            MetricType::Gauge,
            &kinds,
            |n| *n as u64,
        )?;
        encode_series(
            &mut encoder,
            "open_watches",
            "Watches open on the API server, per kind.",
            MetricType::Gauge,
            &kinds,
            |_| 1,
        )?;
        let ducks: Vec<(DuckKindLabels, ())> = self
            .ducks
            .lock()
            .values()
            .map(|labels| (labels.clone(), ()))
            .collect();
        encode_series(
            &mut encoder,
            "duck_kinds",
            "1 for each kind a duck controller runs for, with why the kind matched.",
            MetricType::Gauge,
            &ducks,
            |()| 1,
        )
    }
}

/// Encodes one family of scrape-time values, one series per label set.
fn encode_series<L: EncodeLabelSet, V>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric_type: MetricType,
    series: &[(L, V)],
    value: impl Fn(&V) -> u64,
) -> Result<(), fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, metric_type)?;
    for (labels, v) in series {
        let metric = family.encode_family(labels)?;
        match metric_type {
            MetricType::Counter => ConstCounter::new(value(v)).encode(metric)?,
            _ => ConstGauge::new(value(v)).encode(metric)?,
        }
    }
    Ok(())
}
