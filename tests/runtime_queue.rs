//! The work queue: de-duplication, one worker per key, parallel workers, requeues,
//! per-key backoff that resets, resync and bounded shutdown. All on paused time.

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use dynrec::runtime::{Backoff, QueueConfig, QueueError, WorkOutcome, WorkQueue};
use parking_lot::Mutex;
use tokio::{
    task::JoinHandle,
    time::{Instant, sleep, timeout},
};

const MS: Duration = Duration::from_millis(1);

/// A queue config with exact backoff (5 ms doubling, no jitter) and no resync.
fn config() -> QueueConfig {
    QueueConfig {
        backoff: Backoff {
            initial: 5 * MS,
            max: Duration::from_secs(300),
            jitter: 0.0,
        },
        resync: None,
        shutdown_timeout: Duration::from_secs(10),
    }
}

/// Every call of a handler: which key, and when (relative to the log's creation).
#[derive(Clone)]
struct Log {
    start: Instant,
    calls: Arc<Mutex<Vec<(&'static str, Duration)>>>,
}

impl Log {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            calls: Arc::default(),
        }
    }

    fn record(&self, key: &'static str) {
        self.calls.lock().push((key, self.start.elapsed()));
    }

    /// When `key` was processed, relative to the start.
    fn times(&self, key: &str) -> Vec<Duration> {
        let calls = self.calls.lock();
        calls
            .iter()
            .filter(|(k, _)| *k == key)
            .map(|(_, t)| *t)
            .collect()
    }

    fn count(&self) -> usize {
        self.calls.lock().len()
    }
}

/// Runs the queue in a task with `workers` workers.
fn start<H, F>(
    queue: &WorkQueue<&'static str>,
    workers: usize,
    handler: H,
) -> JoinHandle<Result<(), QueueError>>
where
    H: Fn(&'static str) -> F + Send + 'static,
    F: Future<Output = WorkOutcome> + Send + 'static,
{
    let queue = queue.clone();
    tokio::spawn(async move { queue.run(workers, handler).await })
}

/// Runs the queue, logging every call; `outcome` gets the call's number (from 1).
fn start_logged<F>(
    queue: &WorkQueue<&'static str>,
    workers: usize,
    outcome: impl Fn(usize) -> F + Send + 'static,
) -> (Log, JoinHandle<Result<(), QueueError>>)
where
    F: Future<Output = WorkOutcome> + Send + 'static,
{
    let log = Log::new();
    let handler_log = log.clone();
    let run = start(queue, workers, move |key| {
        handler_log.record(key);
        outcome(handler_log.count())
    });
    (log, run)
}

/// Shuts the queue down and waits for `run` to return.
async fn stop(
    queue: &WorkQueue<&'static str>,
    run: JoinHandle<Result<(), QueueError>>,
) -> Result<(), QueueError> {
    queue.shutdown();
    match timeout(Duration::from_secs(60), run).await {
        Ok(joined) => joined.expect("the run task panicked"),
        Err(_) => panic!("the queue did not stop"),
    }
}

/// Counts calls in flight and the most seen at once.
#[derive(Clone, Default)]
struct Overlap {
    now: Arc<AtomicUsize>,
    max: Arc<AtomicUsize>,
}

impl Overlap {
    /// Holds one slot for `busy`.
    async fn hold(&self, busy: Duration) {
        let current = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(current, Ordering::SeqCst);
        sleep(busy).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
    }

    /// A handler body: busy for 100 ms, then done.
    fn busy(&self) -> impl Future<Output = WorkOutcome> + Send + use<> {
        let overlap = self.clone();
        async move {
            overlap.hold(100 * MS).await;
            WorkOutcome::Success
        }
    }

    fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }
}

#[tokio::test(start_paused = true)]
async fn a_key_added_many_times_is_processed_once() {
    let queue = WorkQueue::new(config());
    queue.add_after("a", Duration::from_secs(30));
    queue.add("a");
    queue.add("a");
    queue.add("b");
    assert_eq!(queue.len(), 2, "one entry per key");
    let (log, run) = start_logged(&queue, 2, |_| async { WorkOutcome::Success });
    sleep(Duration::from_secs(60)).await;
    assert_eq!(
        log.times("a"),
        vec![Duration::ZERO],
        "the earlier due time wins"
    );
    assert_eq!(log.times("b"), vec![Duration::ZERO]);
    let stats = queue.stats();
    assert_eq!(
        (stats.depth, stats.in_flight, stats.adds, stats.retries),
        (0, 0, 4, 0)
    );
    stop(&queue, run).await.expect("clean shutdown");
}

#[tokio::test(start_paused = true)]
async fn a_key_is_never_processed_by_two_workers_and_a_held_request_runs_once_after() {
    let queue = WorkQueue::new(config());
    let overlap = Overlap::default();
    let busy = overlap.clone();
    let (log, run) = start_logged(&queue, 4, move |_| busy.busy());
    queue.add("a");
    sleep(10 * MS).await;
    for _ in 0..5 {
        queue.add("a");
    }
    assert_eq!(
        queue.len(),
        1,
        "requests for a key in flight are held as one"
    );
    sleep(Duration::from_secs(1)).await;
    assert_eq!(overlap.max(), 1, "the key never ran twice at once");
    assert_eq!(
        log.times("a"),
        vec![Duration::ZERO, 100 * MS],
        "the held request ran right after"
    );
    stop(&queue, run).await.expect("clean shutdown");
}

#[tokio::test(start_paused = true)]
async fn workers_process_different_keys_in_parallel_up_to_their_number() {
    let queue = WorkQueue::new(config());
    for key in ["a", "b", "c", "d", "e", "f"] {
        queue.add(key);
    }
    let overlap = Overlap::default();
    let busy = overlap.clone();
    let (log, run) = start_logged(&queue, 3, move |_| busy.busy());
    sleep(Duration::from_secs(1)).await;
    assert_eq!(overlap.max(), 3, "three workers, three at once");
    let mut starts: Vec<Duration> = log.calls.lock().iter().map(|(_, t)| *t).collect();
    starts.sort();
    assert_eq!(
        starts,
        [0, 0, 0, 100, 100, 100].map(|ms| ms * MS),
        "two rounds of three"
    );
    stop(&queue, run).await.expect("clean shutdown");
}

#[tokio::test(start_paused = true)]
async fn requeue_after_runs_the_key_again_after_the_delay() {
    let queue = WorkQueue::new(config());
    let (log, run) = start_logged(&queue, 1, |call| async move {
        match call {
            1 => WorkOutcome::RequeueAfter(Duration::from_secs(30)),
            _ => WorkOutcome::Success,
        }
    });
    queue.add("a");
    sleep(Duration::from_secs(29)).await;
    assert_eq!(queue.len(), 1, "waiting for its requeue");
    sleep(Duration::from_secs(60)).await;
    assert_eq!(
        log.times("a"),
        vec![Duration::ZERO, Duration::from_secs(30)]
    );
    assert_eq!(
        queue.stats().retries,
        0,
        "a requested requeue is not a retry"
    );
    stop(&queue, run).await.expect("clean shutdown");
}

#[tokio::test(start_paused = true)]
async fn failures_back_off_exponentially_and_the_backoff_resets_after_a_success() {
    let queue = WorkQueue::new(config());
    let failures_left = Arc::new(AtomicUsize::new(3));
    let failures = failures_left.clone();
    let (log, run) = start_logged(&queue, 1, move |_| {
        let fail = failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        async move {
            if fail {
                WorkOutcome::Error
            } else {
                WorkOutcome::Success
            }
        }
    });
    queue.add("a");
    sleep(Duration::from_secs(1)).await;
    let times = log.times("a");
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        gaps,
        vec![5 * MS, 10 * MS, 20 * MS],
        "three failures, then success"
    );
    assert_eq!(queue.stats().retries, 3);

    failures_left.store(1, Ordering::SeqCst);
    let restart = log.start.elapsed();
    queue.add("a");
    sleep(Duration::from_secs(1)).await;
    let again: Vec<Duration> = log.times("a")[4..].iter().map(|t| *t - restart).collect();
    assert_eq!(
        again,
        vec![Duration::ZERO, 5 * MS],
        "the next failure starts from the smallest delay"
    );
    stop(&queue, run).await.expect("clean shutdown");
}

#[tokio::test(start_paused = true)]
async fn a_plain_requeue_backs_off_and_a_panic_counts_as_an_error() {
    let queue = WorkQueue::new(config());
    let (log, run) = start_logged(&queue, 1, |call| async move {
        match call {
            1 => WorkOutcome::Requeue,
            2 => panic!("reconciler bug"),
            _ => WorkOutcome::Success,
        }
    });
    queue.add("a");
    sleep(Duration::from_secs(1)).await;
    assert_eq!(log.times("a"), vec![Duration::ZERO, 5 * MS, 15 * MS]);
    assert_eq!(queue.stats().retries, 2);
    stop(&queue, run).await.expect("clean shutdown");
}

#[tokio::test(start_paused = true)]
async fn resync_re_adds_every_known_key_and_forget_drops_one() {
    let queue = WorkQueue::new(QueueConfig {
        resync: Some(Duration::from_secs(10)),
        ..config()
    });
    let (log, run) = start_logged(&queue, 2, |_| async { WorkOutcome::Success });
    queue.add("a");
    queue.add("b");
    sleep(Duration::from_secs(15)).await;
    let resynced = vec![Duration::ZERO, Duration::from_secs(10)];
    assert_eq!(log.times("a"), resynced);
    assert_eq!(log.times("b"), resynced);
    queue.forget(&"b");
    sleep(Duration::from_secs(10)).await;
    assert_eq!(log.times("a").len(), 3, "a is resynced again");
    assert_eq!(log.times("b").len(), 2, "b was forgotten");
    stop(&queue, run).await.expect("clean shutdown");
}

/// A handler forgets its key while processing it (as the manager does for a deleted
/// object): the key is dropped unless it was added again meanwhile.
#[tokio::test(start_paused = true)]
async fn forget_unless_pending_keeps_a_key_added_again_while_in_flight() {
    let queue = WorkQueue::new(QueueConfig {
        resync: Some(Duration::from_secs(10)),
        ..config()
    });
    let log = Log::new();
    let (handler_log, handler_queue) = (log.clone(), queue.clone());
    let run = start(&queue, 1, move |key| {
        handler_log.record(key);
        let first_call_of_b = key == "b" && handler_log.times("b").len() == 1;
        let queue = handler_queue.clone();
        async move {
            if first_call_of_b {
                // "b" is re-created while its deletion is being reconciled.
                queue.add("b");
            }
            queue.forget_unless_pending(&key);
            WorkOutcome::Success
        }
    });
    queue.add("a");
    queue.add("b");
    sleep(Duration::from_secs(25)).await;
    assert_eq!(log.times("a"), [Duration::ZERO], "a is never resynced");
    assert_eq!(
        log.times("b"),
        [Duration::ZERO, Duration::ZERO],
        "the request added during the first run is kept; then b is forgotten too"
    );
    assert!(queue.is_empty());
    stop(&queue, run).await.expect("clean shutdown");
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_taking_work_and_waits_for_work_in_flight() {
    let queue = WorkQueue::new(config());
    let finished = Arc::new(AtomicUsize::new(0));
    let handler_finished = finished.clone();
    let run = start(&queue, 1, move |_| {
        let finished = handler_finished.clone();
        async move {
            sleep(Duration::from_secs(2)).await;
            finished.fetch_add(1, Ordering::SeqCst);
            WorkOutcome::Success
        }
    });
    queue.add("slow");
    queue.add("waiting");
    sleep(100 * MS).await;
    let asked = Instant::now();
    stop(&queue, run)
        .await
        .expect("the slow item finished within the bound");
    assert_eq!(
        asked.elapsed(),
        Duration::from_secs(2) - 100 * MS,
        "waited for the slow item"
    );
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "the waiting item never started"
    );
    queue.add("late");
    assert_eq!(
        queue.len(),
        1,
        "only the never-started item waits; the late one was dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_gives_up_on_work_running_past_the_bound() {
    let queue = WorkQueue::new(QueueConfig {
        shutdown_timeout: Duration::from_secs(1),
        ..config()
    });
    let run = start(&queue, 2, |_| async {
        sleep(Duration::from_secs(3600)).await;
        WorkOutcome::Success
    });
    queue.add("stuck");
    sleep(10 * MS).await;
    let asked = Instant::now();
    let stopped = stop(&queue, run).await;
    assert!(
        matches!(
            stopped,
            Err(QueueError::ShutdownTimedOut { abandoned: 1, .. })
        ),
        "{stopped:?}"
    );
    assert_eq!(asked.elapsed(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn a_queue_runs_once() {
    let queue: WorkQueue<&'static str> = WorkQueue::new(config());
    let run = start(&queue, 1, |_| async { WorkOutcome::Success });
    sleep(MS).await;
    let again = queue.run(1, |_| async { WorkOutcome::Success }).await;
    assert!(
        matches!(again, Err(QueueError::AlreadyStarted)),
        "{again:?}"
    );
    stop(&queue, run).await.expect("clean shutdown");
}

#[test]
fn backoff_doubles_up_to_its_cap_and_jitter_only_lengthens_within_bounds() {
    let exact = config().backoff;
    let delays: Vec<Duration> = [1, 2, 3, 4].map(|n| exact.delay(n)).to_vec();
    assert_eq!(delays, vec![5 * MS, 10 * MS, 20 * MS, 40 * MS]);
    assert_eq!(exact.delay(17), Duration::from_secs(300), "capped");
    assert_eq!(
        exact.delay(u32::MAX),
        Duration::from_secs(300),
        "no overflow"
    );
    let jittered = Backoff {
        jitter: 0.5,
        ..exact
    };
    for _ in 0..100 {
        let delay = jittered.delay(2);
        assert!((10 * MS..=15 * MS).contains(&delay), "{delay:?}");
    }
    assert_eq!(
        jittered.delay(30),
        Duration::from_secs(300),
        "jitter never passes the cap"
    );
}
