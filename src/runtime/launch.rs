//! Starting controllers as a program: on a real cluster (kubeconfig or in-cluster), or on
//! the embedded API server when no cluster is configured; with signals, metrics and
//! leader election set from command-line flags. Used by `dynrec run` and the examples.
//!
//! The flags are clap's only with the `cli` feature, and the embedded API server exists only
//! with the `embedded` feature: without it a cluster must be configured.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tracing::info;

use super::{LeaderConfig, Manager, ManagerError, ManagerOptions};
#[cfg(feature = "embedded")]
use crate::apiserver::{ApiServer, Serving, StorageError, kubeconfig};
use crate::client::Client;
use crate::reconcilers::Config;

/// Where the embedded API server writes its kubeconfig.
#[cfg(feature = "embedded")]
pub const EMBEDDED_KUBECONFIG: &str = ".dynrec/kubeconfig";

/// Command-line flags shared by `dynrec run` and the examples (clap's with the `cli` feature;
/// [`RunArgs::default`] gives their defaults).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RunArgs {
    /// Use this kubeconfig (otherwise KUBECONFIG, ~/.kube/config or the in-cluster config;
    /// with none of them, the embedded API server).
    #[cfg_attr(feature = "cli", arg(long))]
    pub kubeconfig: Option<PathBuf>,
    /// Run against the embedded API server even if a cluster is configured.
    #[cfg_attr(feature = "cli", arg(long))]
    pub embedded: bool,
    /// Keep the embedded API server's objects in this directory across restarts.
    #[cfg_attr(feature = "cli", arg(long))]
    pub data_dir: Option<PathBuf>,
    /// Workers per controller.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 2))]
    pub workers: usize,
    /// Serve /metrics, /healthz and /readyz on this address.
    #[cfg_attr(feature = "cli", arg(long))]
    pub metrics_address: Option<SocketAddr>,
    /// Leader election: on by default against a real cluster, off on the embedded server.
    #[cfg_attr(feature = "cli", arg(long))]
    pub leader_elect: Option<bool>,
    /// Namespace of the leader election Lease.
    #[cfg_attr(feature = "cli", arg(long, default_value = "default"))]
    pub lease_namespace: String,
    /// How long a shutdown waits for in-flight reconciles, in seconds.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 30))]
    pub shutdown_timeout: u64,
}

impl Default for RunArgs {
    /// The flags' defaults, as if none were given.
    fn default() -> Self {
        Self {
            kubeconfig: None,
            embedded: false,
            data_dir: None,
            workers: 2,
            metrics_address: None,
            leader_elect: None,
            lease_namespace: "default".to_string(),
            shutdown_timeout: 30,
        }
    }
}

#[cfg(feature = "cli")]
impl RunArgs {
    /// The flags of this process's command line (exiting with clap's message on bad ones),
    /// with logs to stderr at `RUST_LOG`'s level (default `info`): how a controller binary's
    /// `main` starts, e.g. `run_controllers(RunArgs::from_command_line(), ...)`.
    pub fn from_command_line() -> Self {
        /// The command line of a binary with no flags but these.
        #[derive(clap::Parser)]
        struct CommandLine {
            #[command(flatten)]
            run: RunArgs,
        }
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
        let _ = tracing_subscriber::fmt().with_env_filter(filter).try_init();
        <CommandLine as clap::Parser>::parse().run
    }
}

/// Why controllers could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The kubeconfig or in-cluster config could not be loaded.
    #[error("cannot load the cluster configuration: {0}")]
    Config(String),
    /// The embedded API server could not start (or dynrec was built without it).
    #[error("cannot start the embedded API server: {0}")]
    Embedded(String),
    /// The embedded server's durable store could not open.
    #[cfg(feature = "embedded")]
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The manager refused a controller or could not run.
    #[error(transparent)]
    Manager(#[from] ManagerError),
}

/// The cluster controllers run against.
pub struct Cluster {
    /// The client to use.
    pub client: kube::Client,
    /// Whether it is the embedded API server.
    pub embedded: bool,
    /// The embedded server, kept running while the cluster lives.
    #[cfg(feature = "embedded")]
    serving: Option<(ApiServer, Serving)>,
}

impl Cluster {
    /// Stops the embedded API server, if one runs.
    pub async fn shutdown(self) {
        #[cfg(feature = "embedded")]
        if let Some((_, serving)) = self.serving {
            serving.shutdown().await;
        }
    }
}

/// Whether a real cluster is configured: a kubeconfig flag or variable, `~/.kube/config`,
/// or the in-cluster environment.
fn cluster_configured(args: &RunArgs) -> bool {
    let home_config = std::env::var_os("HOME")
        .map(|home| Path::new(&home).join(".kube/config"))
        .is_some_and(|path| path.is_file());
    args.kubeconfig.is_some()
        || std::env::var_os("KUBECONFIG").is_some()
        || home_config
        || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}

/// Connects to the configured cluster, or starts the embedded API server on a loopback port
/// and writes a kubeconfig for it to `.dynrec/kubeconfig` (without the `embedded` feature,
/// an error that says a cluster must be configured).
pub async fn connect(args: &RunArgs) -> Result<Cluster, LaunchError> {
    if args.embedded || !cluster_configured(args) {
        #[cfg(feature = "embedded")]
        return start_embedded(args).await;
        #[cfg(not(feature = "embedded"))]
        return Err(no_embedded_server());
    }
    connect_configured(args).await
}

/// Connects like [`connect`], but runs an embedded API server in-process only (no port, no
/// kubeconfig, nothing printed): for commands that query and exit.
pub async fn connect_in_process(args: &RunArgs) -> Result<Cluster, LaunchError> {
    if !args.embedded && cluster_configured(args) {
        return connect_configured(args).await;
    }
    #[cfg(feature = "embedded")]
    {
        let server = embedded_server(args)?;
        Ok(Cluster {
            client: server.client(),
            embedded: true,
            serving: None,
        })
    }
    #[cfg(not(feature = "embedded"))]
    Err(no_embedded_server())
}

async fn connect_configured(args: &RunArgs) -> Result<Cluster, LaunchError> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| LaunchError::Config(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .map_err(|e| LaunchError::Config(e.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| LaunchError::Config(e.to_string()))?,
    };
    info!(server = %config.cluster_url, "using the configured cluster");
    let client = kube::Client::try_from(config).map_err(|e| LaunchError::Config(e.to_string()))?;
    Ok(Cluster {
        client,
        embedded: false,
        #[cfg(feature = "embedded")]
        serving: None,
    })
}

/// Why [`connect`] fails without the `embedded` feature when no cluster is configured.
#[cfg(not(feature = "embedded"))]
fn no_embedded_server() -> LaunchError {
    LaunchError::Embedded(
        "dynrec was built without the `embedded` feature; configure a cluster instead \
         (--kubeconfig, KUBECONFIG, ~/.kube/config or the in-cluster environment)"
            .to_string(),
    )
}

/// The embedded API server, durable when a data directory is given.
#[cfg(feature = "embedded")]
fn embedded_server(args: &RunArgs) -> Result<ApiServer, LaunchError> {
    Ok(match &args.data_dir {
        Some(dir) => ApiServer::builder().build_persistent(dir)?,
        None => ApiServer::new(),
    })
}

#[cfg(feature = "embedded")]
async fn start_embedded(args: &RunArgs) -> Result<Cluster, LaunchError> {
    let server = embedded_server(args)?;
    let address: SocketAddr = ([127, 0, 0, 1], 0).into();
    let serving = server
        .serve(address)
        .await
        .map_err(|e| LaunchError::Embedded(e.to_string()))?;
    let path = Path::new(EMBEDDED_KUBECONFIG);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| LaunchError::Embedded(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(path, kubeconfig(&serving.url(), None, None))
        .map_err(|e| LaunchError::Embedded(format!("cannot write {}: {e}", path.display())))?;
    println!("embedded API server listening on {}", serving.url());
    println!("KUBECONFIG={EMBEDDED_KUBECONFIG} kubectl get all,crds -A");
    Ok(Cluster {
        client: server.client(),
        embedded: true,
        serving: Some((server, serving)),
    })
}

/// The manager options the flags ask for on this cluster.
pub fn manager_options(args: &RunArgs, cluster: &Cluster, controller: &str) -> ManagerOptions {
    let mut options = ManagerOptions {
        workers: args.workers.max(1),
        health_address: args.metrics_address,
        ..ManagerOptions::default()
    };
    options.queue.shutdown_timeout = Duration::from_secs(args.shutdown_timeout);
    if args.leader_elect.unwrap_or(!cluster.embedded) {
        let identity = format!("{}-{}", hostname(), std::process::id());
        options.leader_election = Some(LeaderConfig::new(
            &args.lease_namespace,
            format!("{controller}-leader"),
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
    let cluster = connect(&args).await?;
    let client = Client::new(cluster.client.clone());
    let mut manager = Manager::new(client, manager_options(&args, &cluster, name));
    let config = manager.config(name);
    register(&mut manager, &config, &cluster.client)?;
    manager.run(shutdown_signal()).await?;
    cluster.shutdown().await;
    Ok(())
}

/// Resolves when the process gets SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

#[cfg(all(test, feature = "cli"))]
mod tests {
    use clap::Parser;

    use super::RunArgs;

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
}
