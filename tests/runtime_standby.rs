//! Two replicas with leader election, as `deploy/` runs them: the standby reports ready (it
//! is ready to take over), so a rollout and a PodDisruptionBudget see two ready pods.

/// The widgets example's controller (each user of it uses a part).
#[path = "../examples/widgets/controller.rs"]
#[allow(dead_code)]
mod widgets;

use std::time::{Duration, Instant};

use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::reconcilers::Config;
use dynrec::runtime::{LeaderConfig, Manager, ManagerOptions, Readiness};

const DEADLINE: Duration = Duration::from_secs(20);

/// Starts a replica of the widgets controller named `identity`; returns its readiness, its
/// metrics' leader flag reader and a stop switch.
fn replica(
    server: &ApiServer,
    identity: &str,
) -> (
    Readiness,
    dynrec::runtime::Metrics,
    tokio::sync::oneshot::Sender<()>,
) {
    let client = Client::new(server.client());
    let config = Config::new(client.clone(), "dynrec");
    let options = ManagerOptions {
        leader_election: Some(LeaderConfig::new("default", "dynrec-leader", identity)),
        ..ManagerOptions::default()
    };
    let mut manager = Manager::new(client, options);
    widgets::register(&mut manager, &config).unwrap();
    let (readiness, metrics) = (manager.readiness(), manager.metrics());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(manager.run(async move {
        let _ = stopped.await;
    }));
    (readiness, metrics, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standby_replica_is_ready_and_the_leader_once_its_controllers_run() {
    let server = ApiServer::new();
    widgets::install_crd(&server.client()).await.unwrap();
    let (first, first_metrics, _stop_first) = replica(&server, "first");
    let (second, second_metrics, _stop_second) = replica(&server, "second");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let leaders = [&first_metrics, &second_metrics]
            .iter()
            .filter(|m| {
                m.render().is_ok_and(|text| {
                    text.contains("\nleader_election_master_status{name=\"dynrec-leader\"} 1\n")
                })
            })
            .count();
        if leaders == 1 && first.is_ready() && second.is_ready() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "expected one leader and two ready replicas: {leaders} leaders, not ready: {:?} / {:?}",
            first.not_ready(),
            second.not_ready()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
