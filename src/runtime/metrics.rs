//! Prometheus metrics under the names controller-runtime and client-go give them, so that
//! the dashboards and alerts of controller-runtime users work unchanged:
//! `controller_runtime_*` for reconciles, `workqueue_*` for the queues,
//! `leader_election_master_status` and `rest_client_*`; `dynrec_*` for what is dynrec's own
//! (shared caches, duck controllers, admission webhooks).

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

use super::{QueueStats, QueueTiming, WorkOutcome};
use crate::client::Client;

/// How a reconcile ended, as controller-runtime's `result` label.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum ResultLabel {
    /// Finished with nothing more to do.
    Success,
    /// Failed.
    Error,
    /// Asked to run again (with backoff).
    Requeue,
    /// Asked to run again after a delay.
    RequeueAfter,
}

impl ResultLabel {
    /// Every result, in the order controller-runtime starts their counters at zero.
    pub const ALL: [ResultLabel; 4] = [
        Self::Error,
        Self::RequeueAfter,
        Self::Requeue,
        Self::Success,
    ];

    /// The label value: `success`, `error`, `requeue` or `requeue_after`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Requeue => "requeue",
            Self::RequeueAfter => "requeue_after",
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
            WorkOutcome::Requeue => Self::Requeue,
            WorkOutcome::RequeueAfter(_) => Self::RequeueAfter,
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

/// A work queue's labels: controller-runtime names each queue after its controller.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
    controller: String,
}

/// A work queue's depth labels: also its priority (none here).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DepthLabels {
    name: String,
    controller: String,
    priority: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    name: String,
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
type QueueDurationFamily = Family<QueueLabels, Histogram, fn() -> Histogram>;
type AdmissionDurationFamily = Family<WebhookLabels, Histogram, fn() -> Histogram>;
type QueueSource = Box<dyn Fn() -> QueueStats + Send + Sync>;

/// A registered queue: its controller's worker count and its counters.
struct QueueEntry {
    workers: usize,
    stats: QueueSource,
}

/// The process's metrics; cheap to clone, rendered with [`Metrics::render`].
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    reconciles: Family<ReconcileLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    durations: DurationFamily,
    queue_durations: QueueDurationFamily,
    work_durations: QueueDurationFamily,
    admissions: Family<AdmissionLabels, Counter>,
    admission_durations: AdmissionDurationFamily,
    leader: Family<LeaseLabels, Gauge>,
    sources: Arc<Sources>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics, every series registered.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconciles.clone(),
        );
        let errors = Family::<ControllerLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            errors.clone(),
        );
        let durations: DurationFamily = Family::new_with_constructor(reconcile_histogram);
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            durations.clone(),
        );
        let queue_durations: QueueDurationFamily = Family::new_with_constructor(queue_histogram);
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queue_durations.clone(),
        );
        let work_durations: QueueDurationFamily = Family::new_with_constructor(queue_histogram);
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            work_durations.clone(),
        );
        let admissions = Family::<AdmissionLabels, Counter>::default();
        registry.register(
            "dynrec_admission_requests",
            "Admission requests by webhook and whether they were allowed",
            admissions.clone(),
        );
        let admission_durations: AdmissionDurationFamily =
            Family::new_with_constructor(duration_histogram);
        registry.register(
            "dynrec_admission_duration_seconds",
            "How long admission webhooks take to answer, by webhook",
            admission_durations.clone(),
        );
        let leader = Family::<LeaseLabels, Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            leader.clone(),
        );
        super::rest_metrics::register(&mut registry);
        let sources = Arc::new(Sources::default());
        registry.register_collector(Box::new(sources.clone()));
        Self {
            inner: Arc::new(Inner {
                registry,
                reconciles,
                errors,
                durations,
                queue_durations,
                work_durations,
                admissions,
                admission_durations,
                leader,
                sources,
            }),
        }
    }

    /// Counts one reconcile of `controller` and how long it took (and an error, if it
    /// failed).
    pub fn record_reconcile(&self, controller: &str, result: ResultLabel, took: Duration) {
        let controller = controller.to_owned();
        let labels = ControllerLabels {
            controller: controller.clone(),
        };
        self.inner
            .durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        if result == ResultLabel::Error {
            self.inner.errors.get_or_create(&labels).inc();
        }
        self.inner
            .reconciles
            .get_or_create(&ReconcileLabels { controller, result })
            .inc();
    }

    /// Records a time `controller`'s queue measured.
    pub fn record_queue_timing(&self, controller: &str, timing: QueueTiming) {
        let labels = QueueLabels {
            name: controller.to_owned(),
            controller: controller.to_owned(),
        };
        let (family, took) = match timing {
            QueueTiming::Queued(took) => (&self.inner.queue_durations, took),
            QueueTiming::Worked(took) => (&self.inner.work_durations, took),
        };
        family.get_or_create(&labels).observe(took.as_secs_f64());
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

    /// Reports `controller`'s queue counters and its `workers`, read at each scrape, until
    /// removed; its reconcile counters start at zero for every result, as
    /// controller-runtime's do when a controller starts.
    pub fn register_queue(
        &self,
        controller: &str,
        workers: usize,
        stats: impl Fn() -> QueueStats + Send + Sync + 'static,
    ) {
        for result in ResultLabel::ALL {
            let labels = ReconcileLabels {
                controller: controller.to_owned(),
                result,
            };
            let _ = self.inner.reconciles.get_or_create(&labels);
        }
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        let _ = self.inner.errors.get_or_create(&labels);
        let entry = QueueEntry {
            workers,
            stats: Box::new(stats),
        };
        self.inner
            .sources
            .queues
            .lock()
            .insert(controller.to_owned(), entry);
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

    /// Stops reporting `controller` (its queue, reconciles and their times): it is gone.
    pub fn remove_queue(&self, controller: &str) {
        self.inner.sources.queues.lock().remove(controller);
        for result in ResultLabel::ALL {
            self.inner.reconciles.remove(&ReconcileLabels {
                controller: controller.to_owned(),
                result,
            });
        }
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        self.inner.errors.remove(&labels);
        self.inner.durations.remove(&labels);
        let labels = QueueLabels {
            name: controller.to_owned(),
            controller: controller.to_owned(),
        };
        self.inner.queue_durations.remove(&labels);
        self.inner.work_durations.remove(&labels);
    }

    /// Reports the client's shared caches (cached objects and open watches per GVK) at each scrape.
    pub fn observe_client(&self, client: &Client) {
        *self.inner.sources.client.lock() = Some(client.clone());
    }

    /// Sets whether this process holds the leader election Lease `lease`.
    pub fn set_leader(&self, lease: &str, leading: bool) {
        let labels = LeaseLabels {
            name: lease.to_owned(),
        };
        self.inner
            .leader
            .get_or_create(&labels)
            .set(i64::from(leading));
    }

    /// Every series in the Prometheus text format (0.0.4), as controller-runtime serves it.
    pub fn render(&self) -> Result<String, fmt::Error> {
        let mut openmetrics = String::new();
        text::encode(&mut openmetrics, &self.inner.registry)?;
        Ok(super::prometheus_text::from_openmetrics(&openmetrics))
    }
}

/// Durations from 1 ms to about 65 s.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// controller-runtime's buckets of `controller_runtime_reconcile_time_seconds`.
fn reconcile_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

/// client-go's work queue buckets: 10 ns to 1,000 s, times ten each (its
/// `ExponentialBuckets(10e-9, 10, 12)`, written out so that no bound carries a rounding).
fn queue_histogram() -> Histogram {
    Histogram::new([
        1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0,
    ])
}

/// Values read at scrape time: queues and shared caches.
#[derive(Default)]
struct Sources {
    queues: Mutex<BTreeMap<String, QueueEntry>>,
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

/// One queue's values at a scrape.
struct QueueSample {
    workers: usize,
    stats: QueueStats,
}

impl Collector for Sources {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let queues: Vec<(String, QueueSample)> = self
            .queues
            .lock()
            .iter()
            .map(|(controller, entry)| {
                let sample = QueueSample {
                    workers: entry.workers,
                    stats: (entry.stats)(),
                };
                (controller.clone(), sample)
            })
            .collect();
        let by_controller: Vec<(ControllerLabels, &QueueSample)> = queues
            .iter()
            .map(|(controller, sample)| {
                let labels = ControllerLabels {
                    controller: controller.clone(),
                };
                (labels, sample)
            })
            .collect();
        let by_queue: Vec<(QueueLabels, &QueueSample)> = queues
            .iter()
            .map(|(controller, sample)| {
                let labels = QueueLabels {
                    name: controller.clone(),
                    controller: controller.clone(),
                };
                (labels, sample)
            })
            .collect();
        // controller-runtime's queues have no priorities: its depth says `priority=""`.
        let by_priority: Vec<(DepthLabels, &QueueSample)> = queues
            .iter()
            .map(|(controller, sample)| {
                let labels = DepthLabels {
                    name: controller.clone(),
                    controller: controller.clone(),
                    priority: String::new(),
                };
                (labels, sample)
            })
            .collect();
        let gauge = |n: usize| Value::Int(n as u64);
        encode_series(
            &mut encoder,
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            MetricType::Gauge,
            &by_controller,
            |s| gauge(s.stats.in_flight),
        )?;
        encode_series(
            &mut encoder,
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            MetricType::Gauge,
            &by_controller,
            |s| gauge(s.workers),
        )?;
        encode_series(
            &mut encoder,
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            MetricType::Gauge,
            &by_priority,
            |s| gauge(s.stats.depth),
        )?;
        encode_series(
            &mut encoder,
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            MetricType::Counter,
            &by_queue,
            |s| Value::Int(s.stats.adds),
        )?;
        encode_series(
            &mut encoder,
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            MetricType::Counter,
            &by_queue,
            |s| Value::Int(s.stats.retries),
        )?;
        encode_series(
            &mut encoder,
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
            MetricType::Gauge,
            &by_queue,
            |s| Value::Float(s.stats.unfinished_work.as_secs_f64()),
        )?;
        encode_series(
            &mut encoder,
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            MetricType::Gauge,
            &by_queue,
            |s| Value::Float(s.stats.longest_running.as_secs_f64()),
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
            "dynrec_cached_objects",
            "Objects held by the shared cache of a kind.",
            MetricType::Gauge,
            &kinds,
            |n| gauge(*n),
        )?;
        encode_series(
            &mut encoder,
            "dynrec_open_watches",
            "Watches open on the API server, per kind.",
            MetricType::Gauge,
            &kinds,
            |_| Value::Int(1),
        )?;
        let ducks: Vec<(DuckKindLabels, ())> = self
            .ducks
            .lock()
            .values()
            .map(|labels| (labels.clone(), ()))
            .collect();
        encode_series(
            &mut encoder,
            "dynrec_duck_kinds",
            "1 for each kind a duck controller runs for, with why the kind matched.",
            MetricType::Gauge,
            &ducks,
            |()| Value::Int(1),
        )
    }
}

/// A scrape-time value.
enum Value {
    Int(u64),
    Float(f64),
}

/// Encodes one family of scrape-time values, one series per label set.
fn encode_series<L: EncodeLabelSet, V>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric_type: MetricType,
    series: &[(L, V)],
    value: impl Fn(&V) -> Value,
) -> Result<(), fmt::Error> {
    // Ended with a period as the registry ends the help of what it registers (the text
    // format drops it again: see `prometheus_text`).
    let help = format!("{help}.");
    let mut family = encoder.encode_descriptor(name, &help, None, metric_type)?;
    for (labels, v) in series {
        let metric = family.encode_family(labels)?;
        match (metric_type, value(v)) {
            (MetricType::Counter, Value::Int(n)) => ConstCounter::new(n).encode(metric)?,
            (MetricType::Counter, Value::Float(x)) => ConstCounter::new(x).encode(metric)?,
            (_, Value::Int(n)) => ConstGauge::new(n as i64).encode(metric)?,
            (_, Value::Float(x)) => ConstGauge::new(x).encode(metric)?,
        }
    }
    Ok(())
}
