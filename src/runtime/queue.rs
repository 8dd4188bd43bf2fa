//! A work queue of keys, de-duplicated per key, with per-key backoff, run by a bounded
//! pool of workers.

use std::{
    cmp::Reverse,
    collections::{BinaryHeap, HashMap, hash_map::Entry},
    fmt::Debug,
    future::{Future, pending},
    hash::Hash,
    panic::AssertUnwindSafe,
    pin::pin,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use futures::FutureExt;
use parking_lot::Mutex;
use tokio::{
    sync::{Notify, watch},
    task::{JoinError, JoinSet},
    time::{Instant, Interval, MissedTickBehavior, interval_at, sleep_until, timeout},
};
use tracing::{Instrument, Span, debug, error, info, warn};

use crate::reconcilers::DEFAULT_RESYNC;

/// Per-key exponential backoff: `initial`, doubling on each consecutive failure, capped at `max`.
#[derive(Clone, Debug, PartialEq)]
pub struct Backoff {
    /// The delay after the first failure.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
    /// Up to this fraction of the delay is added at random (0 for none, at most 1).
    pub jitter: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(5),
            max: Duration::from_secs(300),
            jitter: 0.1,
        }
    }
}

impl Backoff {
    /// The delay before the next attempt after `failures` consecutive failures (at least 1).
    pub fn delay(&self, failures: u32) -> Duration {
        let factor = 1u32.checked_shl(failures.saturating_sub(1));
        let base = factor
            .and_then(|f| self.initial.checked_mul(f))
            .map_or(self.max, |d| d.min(self.max));
        let jitter = self.jitter.clamp(0.0, 1.0);
        if jitter == 0.0 {
            return base;
        }
        base.mul_f64(1.0 + jitter * rand::random::<f64>())
            .min(self.max)
    }
}

/// How a [`WorkQueue`] schedules retries, resyncs and shutdown.
#[derive(Clone, Debug)]
pub struct QueueConfig {
    /// Backoff after an error or a plain requeue.
    pub backoff: Backoff,
    /// Every key the queue knows is re-added this often; `None` for never.
    pub resync: Option<Duration>,
    /// How long shutdown waits for in-flight work before abandoning it.
    pub shutdown_timeout: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            backoff: Backoff::default(),
            resync: Some(DEFAULT_RESYNC),
            shutdown_timeout: Duration::from_secs(30),
        }
    }
}

/// What processing a key came to; decides whether and when the key runs again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkOutcome {
    /// Done: the key's backoff resets and it runs again only when re-added.
    Success,
    /// Run again soon, after the key's next backoff delay.
    Requeue,
    /// Done for now: the key's backoff resets and it runs again after this delay.
    RequeueAfter(Duration),
    /// Failed: run again after the key's next backoff delay.
    Error,
}

/// A failure to run a [`WorkQueue`].
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// `run` was called on a queue that already ran.
    #[error("the work queue was already started")]
    AlreadyStarted,
    /// Shutdown gave up on work that was still running.
    #[error("{abandoned} work items were still running after the shutdown bound of {bound:?}")]
    ShutdownTimedOut {
        /// How many items were cancelled.
        abandoned: usize,
        /// The bound that passed.
        bound: Duration,
    },
}

/// A snapshot of a queue's counters, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Keys waiting to run, now or later (held keys included).
    pub depth: usize,
    /// Keys being processed.
    pub in_flight: usize,
    /// Requests accepted by `add`, `add_after` and resyncs.
    pub adds: u64,
    /// Keys scheduled again after an error or a requeue.
    pub retries: u64,
    /// How long the keys being processed have been, added up (client-go's unfinished work).
    pub unfinished_work: Duration,
    /// How long the longest-running key being processed has been.
    pub longest_running: Duration,
}

/// A time a queue measured, as it happens: how long a key waited from due to taken, or
/// how long its processing took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueTiming {
    /// A key waited this long between being due and being taken by a worker.
    Queued(Duration),
    /// A key's processing took this long.
    Worked(Duration),
}

/// Receives a queue's [`QueueTiming`]s (the Manager records them as metrics).
pub type QueueObserver = Arc<dyn Fn(QueueTiming) + Send + Sync>;

/// A queue of keys processed by a pool of workers; cheap to clone.
///
/// A key waits at most once (the earliest due time wins) and is never processed by two
/// workers at once: a request for a key in flight is held and runs after it finishes.
pub struct WorkQueue<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

struct Shared<K> {
    config: QueueConfig,
    state: Mutex<State<K>>,
    wake: Notify,
    shutdown: watch::Sender<bool>,
    started: AtomicBool,
    adds: AtomicU64,
    retries: AtomicU64,
    observer: Option<QueueObserver>,
}

/// What the queue knows of one key.
#[derive(Default)]
struct KeyState {
    /// When the key is due and its ticket in the heap.
    due: Option<(Instant, u64)>,
    in_flight: bool,
    /// Consecutive failures, for the backoff.
    failures: u32,
    /// Forgotten while in flight: dropped when it finishes unless re-added.
    forgotten: bool,
    /// When its processing started, while in flight.
    started: Option<Instant>,
}

/// A key's place in the schedule; stale when the key's ticket has changed.
struct Slot<K> {
    due: Instant,
    ticket: u64,
    key: K,
}

impl<K> PartialEq for Slot<K> {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.ticket) == (other.due, other.ticket)
    }
}

impl<K> Eq for Slot<K> {}

impl<K> PartialOrd for Slot<K> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Slot<K> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.ticket).cmp(&(other.due, other.ticket))
    }
}

struct State<K> {
    keys: HashMap<K, KeyState>,
    schedule: BinaryHeap<Reverse<Slot<K>>>,
    next_ticket: u64,
    depth: usize,
    in_flight: usize,
}

impl<K: Clone + Eq + Hash> State<K> {
    /// Makes the key due at `at` unless it is due earlier; whether anything changed.
    fn schedule(&mut self, key: K, at: Instant) -> bool {
        let entry = self.keys.entry(key.clone()).or_default();
        entry.forgotten = false;
        if entry.due.is_some_and(|(due, _)| due <= at) {
            return false;
        }
        if entry.due.is_none() {
            self.depth += 1;
        }
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        entry.due = Some((at, ticket));
        if !entry.in_flight {
            self.schedule.push(Reverse(Slot {
                due: at,
                ticket,
                key,
            }));
        }
        true
    }

    /// Takes the earliest key due by `now` with how long it waited since it was due, or
    /// tells when the next one is due.
    fn pop_ready(&mut self, now: Instant) -> Result<(K, Duration), Option<Instant>> {
        while let Some(Reverse(slot)) = self.schedule.peek() {
            let current = self.keys.get(&slot.key).is_some_and(|entry| {
                !entry.in_flight && entry.due == Some((slot.due, slot.ticket))
            });
            if current && slot.due > now {
                return Err(Some(slot.due));
            }
            let Some(Reverse(slot)) = self.schedule.pop() else {
                break;
            };
            if current && let Some(entry) = self.keys.get_mut(&slot.key) {
                entry.due = None;
                entry.in_flight = true;
                entry.started = Some(now);
                self.depth -= 1;
                self.in_flight += 1;
                return Ok((slot.key, now.saturating_duration_since(slot.due)));
            }
        }
        Err(None)
    }

    /// Records the end of a key's processing: the follow-up it needs, if any, and how long
    /// the processing took.
    fn finish(
        &mut self,
        key: &K,
        outcome: WorkOutcome,
        backoff: &Backoff,
    ) -> (Option<Duration>, Option<Duration>) {
        let Some(entry) = self.keys.get_mut(key) else {
            return (None, None);
        };
        entry.in_flight = false;
        self.in_flight -= 1;
        let took = entry.started.take().map(|started| started.elapsed());
        if entry.forgotten {
            self.keys.remove(key);
            return (None, took);
        }
        if let Some((due, ticket)) = entry.due {
            let key = key.clone();
            self.schedule.push(Reverse(Slot { due, ticket, key }));
        }
        let follow_up = match outcome {
            WorkOutcome::Success => {
                entry.failures = 0;
                None
            }
            WorkOutcome::RequeueAfter(delay) => {
                entry.failures = 0;
                Some(delay)
            }
            WorkOutcome::Requeue | WorkOutcome::Error => {
                entry.failures = entry.failures.saturating_add(1);
                Some(backoff.delay(entry.failures))
            }
        };
        (follow_up, took)
    }

    /// How long the keys in flight have been processed, added up, and the longest.
    fn unfinished(&self, now: Instant) -> (Duration, Duration) {
        self.keys
            .values()
            .filter_map(|entry| entry.started)
            .map(|started| now.saturating_duration_since(started))
            .fold(
                (Duration::ZERO, Duration::ZERO),
                |(sum, longest), running| (sum + running, longest.max(running)),
            )
    }

    /// Drops a key's pending request and backoff.
    fn forget(&mut self, key: &K) {
        let Entry::Occupied(mut entry) = self.keys.entry(key.clone()) else {
            return;
        };
        if entry.get().due.is_some() {
            self.depth -= 1;
        }
        if entry.get().in_flight {
            let state = entry.get_mut();
            state.due = None;
            state.failures = 0;
            state.forgotten = true;
        } else {
            entry.remove();
        }
    }
}

impl<K> WorkQueue<K>
where
    K: Clone + Eq + Hash + Debug + Send + 'static,
{
    /// An empty queue.
    pub fn new(config: QueueConfig) -> Self {
        Self::build(config, None)
    }

    /// An empty queue that reports how long keys wait and run to `observer`.
    pub fn observed(config: QueueConfig, observer: QueueObserver) -> Self {
        Self::build(config, Some(observer))
    }

    fn build(config: QueueConfig, observer: Option<QueueObserver>) -> Self {
        Self {
            shared: Arc::new(Shared {
                config,
                state: Mutex::new(State {
                    keys: HashMap::new(),
                    schedule: BinaryHeap::new(),
                    next_ticket: 0,
                    depth: 0,
                    in_flight: 0,
                }),
                wake: Notify::new(),
                shutdown: watch::Sender::new(false),
                started: AtomicBool::new(false),
                adds: AtomicU64::new(0),
                retries: AtomicU64::new(0),
                observer,
            }),
        }
    }

    /// Asks for the key to be processed now.
    pub fn add(&self, key: K) {
        self.add_after(key, Duration::ZERO);
    }

    /// Asks for the key to be processed after `delay` (sooner if already due sooner).
    pub fn add_after(&self, key: K, delay: Duration) {
        if self.is_shut_down() {
            debug!(?key, "work queue shut down; request dropped");
            return;
        }
        self.shared.adds.fetch_add(1, Ordering::Relaxed);
        self.schedule(key, delay);
    }

    /// Stops tracking a key: drops its pending request, its backoff and its resyncs.
    pub fn forget(&self, key: &K) {
        self.shared.state.lock().forget(key);
    }

    /// Forgets a key unless a request for it is pending (it was added again since it was
    /// taken); a key in flight is dropped when its processing finishes. For keys whose
    /// object is gone: a request that raced with the object's re-creation is kept.
    pub fn forget_unless_pending(&self, key: &K) {
        let mut state = self.shared.state.lock();
        if state.keys.get(key).is_some_and(|entry| entry.due.is_none()) {
            state.forget(key);
        }
    }

    /// How many keys wait to be processed, now or later.
    pub fn len(&self) -> usize {
        self.shared.state.lock().depth
    }

    /// Whether no key waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queue's counters.
    pub fn stats(&self) -> QueueStats {
        let (depth, in_flight, (unfinished_work, longest_running)) = {
            let state = self.shared.state.lock();
            let unfinished = match state.in_flight {
                0 => Default::default(),
                _ => state.unfinished(Instant::now()),
            };
            (state.depth, state.in_flight, unfinished)
        };
        QueueStats {
            depth,
            in_flight,
            unfinished_work,
            longest_running,
            adds: self.shared.adds.load(Ordering::Relaxed),
            retries: self.shared.retries.load(Ordering::Relaxed),
        }
    }

    /// Re-adds every key the queue knows.
    pub fn resync(&self) {
        if self.is_shut_down() {
            return;
        }
        let now = Instant::now();
        let added = {
            let mut state = self.shared.state.lock();
            let keys: Vec<K> = state.keys.keys().cloned().collect();
            for key in &keys {
                state.schedule(key.clone(), now);
            }
            keys.len()
        };
        self.shared.adds.fetch_add(added as u64, Ordering::Relaxed);
        self.shared.wake.notify_waiters();
        debug!(keys = added, "work queue resync");
    }

    /// Stops taking work; `run` returns once in-flight work finishes (or the bound passes).
    pub fn shutdown(&self) {
        self.shared.shutdown.send_replace(true);
    }

    /// Whether shutdown was asked for.
    pub fn is_shut_down(&self) -> bool {
        *self.shared.shutdown.borrow()
    }

    /// Processes keys with `handler` on up to `workers` concurrent tasks until shutdown.
    ///
    /// A handler that panics counts as a [`WorkOutcome::Error`]. Handlers run as tasks inside the
    /// caller's tracing span; dropping this future instead of calling [`WorkQueue::shutdown`]
    /// aborts them.
    pub async fn run<H, F>(&self, workers: usize, handler: H) -> Result<(), QueueError>
    where
        H: Fn(K) -> F,
        F: Future<Output = WorkOutcome> + Send + 'static,
    {
        if self.shared.started.swap(true, Ordering::SeqCst) {
            return Err(QueueError::AlreadyStarted);
        }
        let workers = workers.max(1);
        info!(workers, "work queue running");
        let mut shutdown = self.shared.shutdown.subscribe();
        let mut resync = self.shared.config.resync.map(|period| {
            let mut timer = interval_at(Instant::now() + period, period);
            timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
            timer
        });
        let mut tasks = JoinSet::new();
        loop {
            tokio::select! {
                biased;
                _ = shutdown.wait_for(|stop| *stop) => break,
                Some(done) = tasks.join_next() => self.settle(done),
                () = tick(&mut resync) => self.resync(),
                (key, waited) = self.next_ready(), if tasks.len() < workers => {
                    self.observe(QueueTiming::Queued(waited));
                    let work = AssertUnwindSafe(handler(key.clone())).catch_unwind();
                    tasks.spawn(
                        async move {
                            let outcome = work.await.unwrap_or_else(|_| {
                                error!(?key, "work item panicked");
                                WorkOutcome::Error
                            });
                            (key, outcome)
                        }
                        .instrument(Span::current()),
                    );
                }
            }
        }
        self.drain(tasks).await
    }

    /// Waits for in-flight work, up to the shutdown bound.
    async fn drain(&self, mut tasks: JoinSet<(K, WorkOutcome)>) -> Result<(), QueueError> {
        let bound = self.shared.config.shutdown_timeout;
        info!(in_flight = tasks.len(), ?bound, "work queue shutting down");
        let finished = timeout(bound, async {
            while let Some(done) = tasks.join_next().await {
                self.settle(done);
            }
        })
        .await;
        if finished.is_ok() {
            info!("work queue stopped");
            return Ok(());
        }
        let abandoned = tasks.len();
        warn!(abandoned, ?bound, "work queue abandoned in-flight work");
        tasks.abort_all();
        Err(QueueError::ShutdownTimedOut { abandoned, bound })
    }

    /// Records a finished task and schedules its follow-up.
    fn settle(&self, done: Result<(K, WorkOutcome), JoinError>) {
        let (key, outcome) = match done {
            Ok(done) => done,
            Err(err) => {
                error!(error = %err, "work item task failed");
                return;
            }
        };
        let (follow_up, took) = {
            let mut state = self.shared.state.lock();
            let (follow_up, took) = state.finish(&key, outcome, &self.shared.config.backoff);
            if let Some(delay) = follow_up {
                state.schedule(key.clone(), Instant::now() + delay);
            }
            (follow_up, took)
        };
        if let Some(took) = took {
            self.observe(QueueTiming::Worked(took));
        }
        if follow_up.is_some() && matches!(outcome, WorkOutcome::Requeue | WorkOutcome::Error) {
            self.shared.retries.fetch_add(1, Ordering::Relaxed);
        }
        debug!(?key, ?outcome, ?follow_up, "work item finished");
        self.shared.wake.notify_waiters();
    }

    fn observe(&self, timing: QueueTiming) {
        if let Some(observer) = &self.shared.observer {
            observer(timing);
        }
    }

    fn schedule(&self, key: K, delay: Duration) {
        let changed = self
            .shared
            .state
            .lock()
            .schedule(key, Instant::now() + delay);
        if changed {
            self.shared.wake.notify_waiters();
        }
    }

    /// Waits for the next key that is due and not in flight, and marks it in flight; with
    /// how long it waited since it was due.
    async fn next_ready(&self) -> (K, Duration) {
        loop {
            let mut woken = pin!(self.shared.wake.notified());
            woken.as_mut().enable();
            let next = match self.shared.state.lock().pop_ready(Instant::now()) {
                Ok(taken) => return taken,
                Err(next) => next,
            };
            match next {
                Some(at) => {
                    tokio::select! {
                        () = sleep_until(at) => {}
                        () = woken => {}
                    }
                }
                None => woken.await,
            }
        }
    }
}

/// The next resync tick, or never.
async fn tick(timer: &mut Option<Interval>) {
    match timer {
        Some(timer) => {
            timer.tick().await;
        }
        None => pending().await,
    }
}
