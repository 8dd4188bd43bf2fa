//! Starting controllers as a program: on the cluster [`connect`] picks, with signals,
//! metrics, health probes and leader election set from command-line flags named as
//! controller-runtime's managers name them. Used by `dynrec run` and the examples.
//!
//! The flags are clap's only with the `cli` feature, and the embedded API server exists only
//! with the `embedded` feature: without it a cluster must be configured.

use std::fmt;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::cluster::{Cluster, ClusterArgs, LaunchError, connect};
use super::{LeaderConfig, Manager, ManagerError, ManagerOptions, MetricsServing};
use crate::client::Client;
use crate::reconcilers::Config;
use crate::webhook::CertSource;

/// A server's listen address as controller-runtime's flags take it: `0` for off, `:PORT`
/// for every interface, or `HOST:PORT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BindAddress(pub Option<SocketAddr>);

impl FromStr for BindAddress {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "0" {
            return Ok(Self(None));
        }
        let spelled = match text.strip_prefix(':') {
            Some(port) => format!("0.0.0.0:{port}"),
            None => text.to_string(),
        };
        spelled
            .to_socket_addrs()
            .ok()
            .and_then(|mut found| found.next())
            .map(|address| Self(Some(address)))
            .ok_or_else(|| format!("{text:?} is not `0`, `:PORT` or `HOST:PORT`"))
    }
}

impl fmt::Display for BindAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(address) => address.fmt(f),
            None => f.write_str("0"),
        }
    }
}

/// The flags of a program that runs controllers: `dynrec run` and the examples (clap's with
/// the `cli` feature; [`RunArgs::default`] gives their defaults).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RunArgs {
    /// Which cluster.
    #[cfg_attr(feature = "cli", command(flatten))]
    pub cluster: ClusterArgs,
    /// Reconcile only objects in this namespace (repeatable; default: every namespace): the
    /// caches of namespaced kinds watch only these, and the permissions checked at start
    /// are asked for in each.
    #[cfg_attr(feature = "cli", arg(long, short = 'n', value_name = "NS"))]
    pub namespace: Vec<String>,
    /// Concurrent reconciles per controller.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 2))]
    pub workers: usize,
    /// Run controllers only while holding a Lease (`--leader-elect` or
    /// `--leader-elect=false`; default: on against a cluster, off on an embedded server).
    #[cfg_attr(
        feature = "cli",
        arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
            value_name = "BOOL")
    )]
    pub leader_elect: Option<bool>,
    /// Namespace of the leader election Lease (default: the pod's namespace in a cluster,
    /// else `default`).
    #[cfg_attr(feature = "cli", arg(long, value_name = "NS"))]
    pub leader_election_namespace: Option<String>,
    /// Name of the leader election Lease (default: `dynrec-leader` for `dynrec run`,
    /// `NAME-leader` for a controller binary named NAME).
    #[cfg_attr(feature = "cli", arg(long, value_name = "NAME"))]
    pub leader_election_id: Option<String>,
    /// Serve /metrics here (`0` off, `:8443` every interface).
    #[cfg_attr(feature = "cli", arg(long, default_value = "0", value_name = "ADDR"))]
    pub metrics_bind_address: BindAddress,
    /// Serve /metrics over HTTPS to callers a TokenReview authenticates and a
    /// SubjectAccessReview allows `get` on /metrics (`--metrics-secure=false`: plain HTTP,
    /// anyone).
    #[cfg_attr(
        feature = "cli",
        arg(long, num_args = 0..=1, require_equals = true, default_value = "true",
            default_missing_value = "true", value_name = "BOOL")
    )]
    pub metrics_secure: bool,
    /// Directory of the metrics server's tls.crt and tls.key (default: a self-signed
    /// certificate made at start).
    #[cfg_attr(feature = "cli", arg(long, value_name = "DIR"))]
    pub metrics_cert_path: Option<PathBuf>,
    /// Serve /healthz and /readyz here, plain HTTP (`0` off, `:8081` every interface).
    #[cfg_attr(feature = "cli", arg(long, default_value = "0", value_name = "ADDR"))]
    pub health_probe_bind_address: BindAddress,
    /// How long a shutdown waits for in-flight reconciles, in seconds.
    #[cfg_attr(
        feature = "cli",
        arg(long, default_value_t = 30, value_name = "SECONDS")
    )]
    pub shutdown_timeout: u64,
}

impl Default for RunArgs {
    /// The flags' defaults, as if none were given.
    fn default() -> Self {
        Self {
            cluster: ClusterArgs::default(),
            namespace: Vec::new(),
            workers: 2,
            leader_elect: None,
            leader_election_namespace: None,
            leader_election_id: None,
            metrics_bind_address: BindAddress(None),
            metrics_secure: true,
            metrics_cert_path: None,
            health_probe_bind_address: BindAddress(None),
            shutdown_timeout: 30,
        }
    }
}

#[cfg(feature = "cli")]
impl RunArgs {
    /// The flags of this process's command line (exiting with clap's message on bad ones),
    /// with logs to stderr as `--log-format`/`--log-level`/`-v` (or `RUST_LOG`) ask, INFO by
    /// default: how a controller binary's `main` starts, e.g.
    /// `run_controllers(RunArgs::from_command_line(), ...)`.
    pub fn from_command_line() -> Self {
        /// The command line of a binary with no flags but these.
        #[derive(clap::Parser)]
        struct CommandLine {
            #[command(flatten)]
            run: RunArgs,
            #[command(flatten)]
            logs: super::LogArgs,
        }
        let parsed = <CommandLine as clap::Parser>::parse();
        parsed.logs.init(tracing::Level::INFO);
        parsed.run
    }
}

/// The in-cluster namespace of this pod, if it runs in one.
fn pod_namespace() -> Option<String> {
    let path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
    let namespace = std::fs::read_to_string(path).ok()?;
    let namespace = namespace.trim();
    (!namespace.is_empty()).then(|| namespace.to_string())
}

/// The manager options the flags ask for on this cluster, for the program `name` (which
/// names its Lease unless `--leader-election-id` does).
pub fn manager_options(args: &RunArgs, cluster: &Cluster, name: &str) -> ManagerOptions {
    let mut options = ManagerOptions {
        workers: args.workers.max(1),
        metrics: args.metrics_bind_address.0.map(|address| MetricsServing {
            address,
            secure: args.metrics_secure.then(|| match &args.metrics_cert_path {
                Some(dir) => CertSource::Files {
                    cert: dir.join("tls.crt"),
                    key: dir.join("tls.key"),
                },
                None => CertSource::SelfSigned(Vec::new()),
            }),
        }),
        health_address: args.health_probe_bind_address.0,
        ..ManagerOptions::default()
    };
    options.queue.shutdown_timeout = Duration::from_secs(args.shutdown_timeout);
    if args.leader_elect.unwrap_or(!cluster.embedded) {
        let identity = format!("{}-{}", hostname(), std::process::id());
        let namespace = args
            .leader_election_namespace
            .clone()
            .or_else(pod_namespace)
            .unwrap_or_else(|| "default".to_string());
        options.leader_election = Some(LeaderConfig::new(
            namespace,
            args.leader_election_id
                .clone()
                .unwrap_or_else(|| format!("{name}-leader")),
            identity,
        ));
    }
    options
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "dynrec".to_string())
}

/// Connects, lets `register` add controllers to a manager, and runs them until SIGINT or
/// SIGTERM (in-flight reconciles finish within the shutdown bound; the Lease is released).
pub async fn run_controllers(
    args: RunArgs,
    name: &str,
    register: impl FnOnce(&mut Manager, &Config, &kube::Client) -> Result<(), ManagerError>,
) -> Result<(), LaunchError> {
    let stop = shutdown_signal();
    let cluster = connect(&args.cluster).await?;
    let client = Client::in_namespaces(cluster.client.clone(), args.namespace.clone());
    let mut manager = Manager::new(client, manager_options(&args, &cluster, name));
    let config = manager.config(name);
    register(&mut manager, &config, &cluster.client)?;
    manager.run(stop).await?;
    cluster.shutdown().await;
    Ok(())
}

/// A future that resolves when the process gets SIGINT or SIGTERM. The signals are caught
/// from the call on (as controller-runtime's `SetupSignalHandler` at the start of `main`), so
/// call it before starting up: a signal during start-up then stops the process gracefully
/// once it has started, instead of killing it midway.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut interrupt), Ok(mut terminate)) => {
                    tokio::select! {
                        _ = interrupt.recv() => {}
                        _ = terminate.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(all(test, feature = "cli"))]
mod tests {
    use clap::Parser;

    use super::{BindAddress, RunArgs};

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        run: RunArgs,
    }

    #[test]
    fn default_is_what_no_flags_give() {
        let parsed = Flags::parse_from(["dynrec"]).run;
        assert_eq!(format!("{parsed:?}"), format!("{:?}", RunArgs::default()));
    }

    #[test]
    fn leader_elect_is_a_plain_boolean_flag() {
        let bare = Flags::parse_from(["dynrec", "--leader-elect"]).run;
        assert_eq!(bare.leader_elect, Some(true));
        let off = Flags::parse_from(["dynrec", "--leader-elect=false"]).run;
        assert_eq!(off.leader_elect, Some(false));
        let insecure = Flags::parse_from(["dynrec", "--metrics-secure=false"]).run;
        assert!(!insecure.metrics_secure);
    }

    #[test]
    fn bind_addresses_are_spelled_as_controller_runtime_s() {
        assert_eq!("0".parse::<BindAddress>().unwrap(), BindAddress(None));
        assert_eq!(
            ":8081".parse::<BindAddress>().unwrap().to_string(),
            "0.0.0.0:8081"
        );
        assert_eq!(
            "127.0.0.1:8443".parse::<BindAddress>().unwrap().to_string(),
            "127.0.0.1:8443"
        );
        let wrong = "8080".parse::<BindAddress>().unwrap_err();
        assert!(wrong.contains("`:PORT`"), "{wrong}");
    }
}
