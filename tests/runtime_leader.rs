//! Leader election on a Lease in the embedded API server: one leader among candidates,
//! takeover after a step-down or a crash, and prompt loss of the lease.

use std::time::Duration;

use dynrec::{
    apiserver::{ApiServer, Fault, FaultMatch},
    runtime::{LeaderConfig, LeaderElector, LeaderError},
};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, api::PostParams};
use tokio::{
    sync::{oneshot, watch},
    task::JoinHandle,
    time::{Instant, sleep, timeout},
};

const LEASE: Duration = Duration::from_secs(1);
const RETRY: Duration = Duration::from_millis(100);
/// Room a loaded 2-core machine needs beyond a bound's ideal value.
const HEADROOM: Duration = Duration::from_secs(1);

/// Short timings: lease 1 s, renew deadline 500 ms, retry 100 ms.
fn config(identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: LEASE,
        renew_deadline: Duration::from_millis(500),
        retry_period: RETRY,
        ..LeaderConfig::new("default", "dynrec-leader", identity)
    }
}

/// A running candidate: its leadership, and how to stop it.
struct Candidate {
    leading: watch::Receiver<bool>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Candidate {
    fn start(server: &ApiServer, identity: &str) -> Self {
        let elector = LeaderElector::new(server.client(), config(identity)).expect("valid config");
        let leading = elector.subscribe();
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(elector.run(async {
            let _ = stopped.await;
        }));
        Self {
            leading,
            stop,
            task,
        }
    }

    fn leads(&self) -> bool {
        *self.leading.borrow()
    }

    /// Waits up to `within` for leadership to become `leading`; how long it took.
    async fn becomes(&mut self, leading: bool, within: Duration) -> Duration {
        let started = Instant::now();
        let reached = timeout(within, self.leading.wait_for(|l| *l == leading)).await;
        assert!(
            matches!(reached, Ok(Ok(_))),
            "leadership did not become {leading} within {within:?}"
        );
        started.elapsed()
    }

    /// Steps down gracefully and waits for the candidate to finish.
    async fn step_down(self) {
        let _ = self.stop.send(());
        timeout(Duration::from_secs(5), self.task)
            .await
            .expect("the candidate stopped")
            .expect("the candidate did not panic");
    }
}

async fn holder(server: &ApiServer) -> Option<String> {
    let api: Api<Lease> = Api::namespaced(server.client(), "default");
    let lease = api.get("dynrec-leader").await.expect("the lease exists");
    lease.spec.and_then(|s| s.holder_identity)
}

/// Starts two candidates and waits for one to lead; the leader first.
async fn elect(server: &ApiServer) -> (Candidate, Candidate) {
    let mut a = Candidate::start(server, "a");
    let b = Candidate::start(server, "b");
    let mut both = (a.leading.clone(), b.leading.clone());
    let deadline = Instant::now() + 2 * LEASE;
    loop {
        if *both.0.borrow() || *both.1.borrow() {
            break;
        }
        assert!(Instant::now() < deadline, "nobody became leader");
        tokio::select! {
            _ = both.0.changed() => {}
            _ = both.1.changed() => {}
            () = sleep(RETRY) => {}
        }
    }
    if a.leads() {
        (a, b)
    } else {
        a.becomes(false, LEASE).await;
        (b, a)
    }
}

/// A server with one candidate, which leads.
async fn sole_leader() -> (ApiServer, Candidate) {
    let server = ApiServer::new();
    let mut alone = Candidate::start(&server, "alone");
    alone.becomes(true, LEASE).await;
    (server, alone)
}

#[tokio::test]
async fn only_one_of_two_candidates_leads() {
    let server = ApiServer::new();
    let (leader, follower) = elect(&server).await;
    let watching = Instant::now();
    while watching.elapsed() < 2 * LEASE {
        assert!(
            leader.leads() && !follower.leads(),
            "exactly one leader at every moment"
        );
        sleep(Duration::from_millis(20)).await;
    }
    let holder = holder(&server).await;
    assert!(
        holder.as_deref().is_some_and(|h| h == "a" || h == "b"),
        "{holder:?}"
    );
    leader.step_down().await;
    follower.step_down().await;
}

#[tokio::test]
async fn the_follower_takes_over_at_once_when_the_leader_steps_down() {
    let server = ApiServer::new();
    let (leader, mut follower) = elect(&server).await;
    let mut stepped = leader.leading.clone();
    leader.step_down().await;
    assert!(
        !*stepped.borrow_and_update(),
        "the old leader reports it no longer leads"
    );
    let took = follower.becomes(true, LEASE).await;
    assert!(took < LEASE, "took over in {took:?}");
    follower.step_down().await;
    assert_eq!(holder(&server).await, None, "released on step-down");
}

#[tokio::test]
async fn the_follower_takes_over_within_a_lease_duration_when_the_leader_stops_renewing() {
    let server = ApiServer::new();
    let (leader, mut follower) = elect(&server).await;
    leader.task.abort();
    let took = follower.becomes(true, 3 * LEASE).await;
    // Liveness, with headroom for a loaded machine (the lower bound below is the safety).
    assert!(took <= LEASE + HEADROOM, "took over in {took:?}");
    assert!(
        took >= LEASE - 2 * RETRY,
        "waited for the lease to lapse, took {took:?}"
    );
    follower.step_down().await;
}

#[tokio::test]
async fn the_leader_steps_down_when_it_cannot_renew_before_the_deadline() {
    let (server, mut alone) = sole_leader().await;
    let leases = FaultMatch {
        kind: Some("leases".into()),
        ..FaultMatch::default()
    };
    server.add_fault(Fault::fail(leases, 500, "InternalError"));
    let took = alone.becomes(false, 2 * LEASE).await;
    // Safety: it steps down before its lease could lapse and another take over.
    assert!(took < LEASE, "stepped down after {took:?}");
    server.clear_faults();
    alone.becomes(true, 2 * LEASE).await;
    alone.step_down().await;
}

#[tokio::test]
async fn the_leader_reports_promptly_when_another_holder_takes_the_lease() {
    let (server, mut alone) = sole_leader().await;
    let api: Api<Lease> = Api::namespaced(server.client(), "default");
    let mut attempts = 0;
    loop {
        let mut lease = api.get("dynrec-leader").await.expect("the lease exists");
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = Some("intruder".into());
            spec.lease_duration_seconds = Some(3600);
        }
        attempts += 1;
        match api
            .replace("dynrec-leader", &PostParams::default(), &lease)
            .await
        {
            Ok(_) => break,
            // The leader renewed in between: read again.
            Err(kube::Error::Api(status)) if status.code == 409 && attempts < 10 => {}
            Err(err) => panic!("could not take the lease: {err}"),
        }
    }
    let took = alone.becomes(false, LEASE).await;
    assert!(took < LEASE, "noticed after {took:?}");
    alone.step_down().await;
    assert_eq!(
        holder(&server).await.as_deref(),
        Some("intruder"),
        "not ours to release"
    );
}

#[tokio::test]
async fn inconsistent_timings_are_refused() {
    let server = ApiServer::new();
    let config = LeaderConfig {
        renew_deadline: Duration::from_secs(2),
        ..config("a")
    };
    let refused = LeaderElector::new(server.client(), config);
    assert!(matches!(refused, Err(LeaderError::InvalidConfig(_))));
}
