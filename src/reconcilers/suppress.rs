//! `SuppressTransientErrors`: the first errors of a generation neither fail loudly nor write
//! status; only when they persist do they pass through.
//!
//! Departures from reconciler.io: the kind listed for the stale-counter purge defaults to
//! the reconciled kind of the request (Go needs a `ListType`); the nested reconciler is
//! always validated (reconciler.io validates nested reconcilers only when asked to validate
//! recursively).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use kube::api::DynamicObject;
use parking_lot::Mutex;
use tracing::{Instrument, debug, info, warn};

use crate::trace::debug_span;

use super::nested::{owner, validate_nested};
use super::{Context, Draft, Outcome, ReconcileError, Setup, SubReconciler, ValidationError};
use crate::client::ListOptions;
use crate::object::Gvk;

/// How often counters of objects that no longer exist are dropped.
const PURGE_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);

/// Consecutive transient errors of one object at one generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counter {
    generation: i64,
    count: u8,
}

/// Turns the first `threshold - 1` consecutive non-durable errors of a resource generation
/// into quiet errors that skip the status update; later ones pass through unchanged.
pub struct SuppressTransientErrors {
    name: String,
    threshold: u8,
    list_type: Option<Gvk>,
    reconciler: Box<dyn SubReconciler<DynamicObject>>,
    counters: Mutex<HashMap<String, Counter>>,
    last_purge: Mutex<Option<Timestamp>>,
}

impl SuppressTransientErrors {
    /// Suppresses the transient errors of `reconciler`, with a threshold of 3.
    pub fn new(reconciler: impl SubReconciler<DynamicObject> + 'static) -> Self {
        Self {
            name: "SuppressTransientErrors".into(),
            threshold: 3,
            list_type: None,
            reconciler: Box::new(reconciler),
            counters: Mutex::new(HashMap::new()),
            last_purge: Mutex::new(None),
        }
    }

    /// The error count of a generation from which errors pass through (0 keeps the default 3).
    pub fn threshold(mut self, threshold: u8) -> Self {
        if threshold != 0 {
            self.threshold = threshold;
        }
        self
    }

    /// The kind listed to find deleted objects (default: the reconciled kind).
    pub fn list_type(mut self, gvk: Gvk) -> Self {
        self.list_type = Some(gvk);
        self
    }

    /// Names the reconciler (default `SuppressTransientErrors`).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Counts a transient error; whether it is to be suppressed.
    fn count(&self, resource: &DynamicObject) -> bool {
        let uid = resource.metadata.uid.clone().unwrap_or_default();
        let generation = resource.metadata.generation.unwrap_or_default();
        let mut counters = self.counters.lock();
        let counter = counters.entry(uid).or_insert(Counter {
            generation,
            count: 0,
        });
        if counter.generation != generation {
            *counter = Counter {
                generation,
                count: 0,
            };
        }
        counter.count = counter.count.saturating_add(1);
        counter.count < self.threshold
    }

    /// Every 24 hours (by the request's clock), drops the counters of objects not listed.
    async fn purge_stale_counters(&self, ctx: &Context) {
        let now = ctx.now();
        let due = {
            let mut last_purge = self.last_purge.lock();
            match *last_purge {
                None => {
                    *last_purge = Some(now);
                    false
                }
                Some(last) => now.duration_since(last).unsigned_abs() >= PURGE_INTERVAL,
            }
        };
        if !due {
            return;
        }
        let gvk = self
            .list_type
            .as_ref()
            .unwrap_or(ctx.original_resource_type());
        info!(name = %self.name, %gvk, "purging stale error counters");
        let listed = ctx.config().client.list(gvk, &ListOptions::default()).await;
        let objects = match listed {
            Ok(objects) => objects,
            Err(err) => {
                warn!(name = %self.name, %gvk, %err, "purge failed to list resources");
                return;
            }
        };
        let live: HashSet<String> = objects
            .into_iter()
            .filter_map(|object| object.metadata.uid.clone())
            .collect();
        self.counters.lock().retain(|uid, _| {
            let keep = live.contains(uid);
            if !keep {
                debug!(uid, "purging counter");
            }
            keep
        });
        *self.last_purge.lock() = Some(now);
    }

    /// The number of resources with a live error counter (for tests and metrics).
    pub fn tracked_resources(&self) -> usize {
        self.counters.lock().len()
    }
}

#[async_trait]
impl SubReconciler<DynamicObject> for SuppressTransientErrors {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&self, setup: &mut Setup) -> Result<(), ValidationError> {
        self.reconciler.setup(setup)
    }

    fn validate(&self) -> Result<(), ValidationError> {
        let owner = owner("SuppressTransientErrors", &self.name);
        validate_nested(owner, "Reconciler", self.reconciler.as_ref())
    }

    async fn reconcile(&self, ctx: &Context, resource: &mut Draft) -> Outcome {
        let span = debug_span!("suppress_transient_errors", name = %self.name);
        let outcome = self
            .reconciler
            .reconcile(ctx, resource)
            .instrument(span)
            .await;
        let outcome = match outcome.error {
            Some(error) if !error.is_durable() => {
                let error = if self.count(resource) {
                    debug!(name = %self.name, %error, "suppressing a transient error");
                    ReconcileError::join([
                        error,
                        ReconcileError::skip_status_update(),
                        ReconcileError::quiet(),
                    ])
                } else {
                    Some(error)
                };
                Outcome::with(outcome.result, error)
            }
            error => {
                let uid = resource.metadata.uid.clone().unwrap_or_default();
                self.counters.lock().remove(&uid);
                Outcome::with(outcome.result, error)
            }
        };
        self.purge_stale_counters(ctx).await;
        outcome
    }
}
