//! Which cluster a command talks to, by one rule a cautious user can predict:
//!
//! 1. `--embedded`: a new embedded API server;
//! 2. `--kubeconfig`, `--context` or `KUBECONFIG`: that kubeconfig (`--context` alone reads
//!    `~/.kube/config`), at its current context unless `--context` names one;
//! 3. the in-cluster environment (`KUBERNETES_SERVICE_HOST`): the in-cluster config;
//! 4. otherwise the embedded API server of a `dynrec run` already serving
//!    `.dynrec/kubeconfig` in this directory, when one answers;
//! 5. otherwise a new embedded API server.
//!
//! An existing `~/.kube/config` alone never selects a cluster. Whatever the rule picks is
//! logged first (target `dynrec::cluster`): the context and server, or "embedded". A
//! kubeconfig that points at a live server is never overwritten, and the one a command
//! writes is removed when it stops.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tracing::info;

#[cfg(feature = "embedded")]
use crate::apiserver::{ApiServer, Serving, StorageError, kubeconfig};

/// Where the embedded API server writes its kubeconfig (relative to the working directory).
pub const EMBEDDED_KUBECONFIG: &str = ".dynrec/kubeconfig";

/// The target of the line that says which cluster a command talks to (the binary logs it
/// at INFO whatever the command's default level).
pub const CLUSTER_TARGET: &str = "dynrec::cluster";

/// How long a command waits for the server of an existing `.dynrec/kubeconfig` to answer.
const LIVE_CHECK: Duration = Duration::from_secs(2);

/// The flags that choose the cluster (clap's with the `cli` feature).
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct ClusterArgs {
    /// Use this kubeconfig file.
    #[cfg_attr(feature = "cli", arg(long, value_name = "PATH"))]
    pub kubeconfig: Option<PathBuf>,
    /// Use this context of the kubeconfig (of --kubeconfig, KUBECONFIG or ~/.kube/config).
    #[cfg_attr(feature = "cli", arg(long, value_name = "NAME"))]
    pub context: Option<String>,
    /// Start a new embedded API server, whatever else is configured.
    #[cfg_attr(feature = "cli", arg(long))]
    pub embedded: bool,
    /// Keep the embedded API server's objects in this directory across restarts.
    #[cfg_attr(feature = "cli", arg(long, value_name = "DIR"))]
    pub data_dir: Option<PathBuf>,
}

/// Why a cluster could not be reached.
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
    Manager(#[from] super::ManagerError),
}

/// The cluster a command talks to.
pub struct Cluster {
    /// The client to use.
    pub client: kube::Client,
    /// Whether it is an embedded API server this process started.
    pub embedded: bool,
    /// What the first line said: the context and server, or the embedded server.
    pub description: String,
    /// The kubeconfig this process wrote, removed at shutdown.
    written: Option<PathBuf>,
    /// The embedded server, kept running while the cluster lives.
    #[cfg(feature = "embedded")]
    serving: Option<(ApiServer, Serving)>,
}

impl Cluster {
    /// A cluster reached at `host` (`host:port`, the REST client metrics' label).
    fn new(client: kube::Client, host: String, embedded: bool, description: String) -> Self {
        info!(target: CLUSTER_TARGET, "cluster: {description}");
        Self {
            client: super::rest_metrics::instrument(client, host),
            embedded,
            description,
            written: None,
            #[cfg(feature = "embedded")]
            serving: None,
        }
    }

    /// Stops the embedded API server, if one runs, and removes the kubeconfig written for it.
    pub async fn shutdown(self) {
        #[cfg(feature = "embedded")]
        if let Some((_, serving)) = self.serving {
            serving.shutdown().await;
        }
        if let Some(path) = self.written {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// What the rule picks before anything is connected.
enum Choice {
    Embedded,
    Kubeconfig,
    InCluster,
    /// No cluster configured: a running dynrec's server if there is one, else embedded.
    Default,
}

fn choose(args: &ClusterArgs) -> Choice {
    if args.embedded || args.data_dir.is_some() {
        Choice::Embedded
    } else if args.kubeconfig.is_some()
        || args.context.is_some()
        || std::env::var_os("KUBECONFIG").is_some()
    {
        Choice::Kubeconfig
    } else if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        Choice::InCluster
    } else {
        Choice::Default
    }
}

/// Connects by the module's rule; a new embedded server listens on a loopback port and its
/// kubeconfig is written to `.dynrec/kubeconfig` (without the `embedded` feature, an error
/// that says a cluster must be configured).
pub async fn connect(args: &ClusterArgs) -> Result<Cluster, LaunchError> {
    match choose(args) {
        Choice::Kubeconfig => from_kubeconfig(args).await,
        Choice::InCluster => in_cluster().await,
        Choice::Default => match running_dynrec().await {
            Some(cluster) => Ok(cluster),
            None => serve_embedded(args).await,
        },
        Choice::Embedded => serve_embedded(args).await,
    }
}

/// Connects like [`connect`], but a new embedded API server runs in-process only (no port,
/// no kubeconfig, nothing printed on stdout): for commands that query and exit.
pub async fn connect_in_process(args: &ClusterArgs) -> Result<Cluster, LaunchError> {
    match choose(args) {
        Choice::Kubeconfig => from_kubeconfig(args).await,
        Choice::InCluster => in_cluster().await,
        Choice::Default => match running_dynrec().await {
            Some(cluster) => Ok(cluster),
            None => in_process(args),
        },
        Choice::Embedded => in_process(args),
    }
}

async fn from_kubeconfig(args: &ClusterArgs) -> Result<Cluster, LaunchError> {
    let config_error = |e: &dyn std::fmt::Display| LaunchError::Config(e.to_string());
    let (kubeconfig, source) = match &args.kubeconfig {
        Some(path) => (
            kube::config::Kubeconfig::read_from(path)
                .map_err(|e| LaunchError::Config(format!("{}: {e}", absolute(path).display())))?,
            absolute(path).display().to_string(),
        ),
        None => (
            kube::config::Kubeconfig::read().map_err(|e| config_error(&e))?,
            std::env::var("KUBECONFIG").unwrap_or_else(|_| "~/.kube/config".to_string()),
        ),
    };
    let context = args
        .context
        .clone()
        .or_else(|| kubeconfig.current_context.clone())
        .unwrap_or_default();
    let options = kube::config::KubeConfigOptions {
        context: args.context.clone(),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| LaunchError::Config(format!("{source}: {e}")))?;
    let description = format!(
        "context {context:?} at {} (kubeconfig {source})",
        config.cluster_url
    );
    let host = authority(&config.cluster_url);
    let client = kube::Client::try_from(config).map_err(|e| config_error(&e))?;
    Ok(Cluster::new(client, host, false, description))
}

async fn in_cluster() -> Result<Cluster, LaunchError> {
    let config = kube::Config::incluster().map_err(|e| LaunchError::Config(e.to_string()))?;
    let description = format!("in-cluster at {}", config.cluster_url);
    let host = authority(&config.cluster_url);
    let client = kube::Client::try_from(config).map_err(|e| LaunchError::Config(e.to_string()))?;
    Ok(Cluster::new(client, host, false, description))
}

/// The embedded API server a running `dynrec run` serves through `.dynrec/kubeconfig`, when
/// that file exists and its server answers.
async fn running_dynrec() -> Option<Cluster> {
    let path = absolute(Path::new(EMBEDDED_KUBECONFIG));
    let (client, url) = live_client(&path).await?;
    let description = format!(
        "the embedded API server of a running dynrec at {url} (kubeconfig {})",
        path.display()
    );
    Some(Cluster::new(client, authority(&url), false, description))
}

/// A client of the kubeconfig at `path` and its server URL, if its server answers.
async fn live_client(path: &Path) -> Option<(kube::Client, http::Uri)> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path).ok()?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .ok()?;
    let url = config.cluster_url.clone();
    let client = kube::Client::try_from(config).ok()?;
    let answered = tokio::time::timeout(LIVE_CHECK, client.apiserver_version()).await;
    matches!(answered, Ok(Ok(_))).then_some((client, url))
}

/// The `host:port` of a server URL.
fn authority(url: &http::Uri) -> String {
    url.authority().map(ToString::to_string).unwrap_or_default()
}

/// `path` made absolute against the working directory, for messages and hints.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Why [`connect`] fails without the `embedded` feature when no cluster is configured.
#[cfg(not(feature = "embedded"))]
fn no_embedded_server() -> LaunchError {
    LaunchError::Embedded(
        "dynrec was built without the `embedded` feature; configure a cluster instead \
         (--kubeconfig, --context, KUBECONFIG or the in-cluster environment)"
            .to_string(),
    )
}

#[cfg(not(feature = "embedded"))]
async fn serve_embedded(_args: &ClusterArgs) -> Result<Cluster, LaunchError> {
    Err(no_embedded_server())
}

#[cfg(not(feature = "embedded"))]
fn in_process(_args: &ClusterArgs) -> Result<Cluster, LaunchError> {
    Err(no_embedded_server())
}

/// The embedded API server, durable when a data directory is given.
#[cfg(feature = "embedded")]
fn embedded_server(args: &ClusterArgs) -> Result<ApiServer, LaunchError> {
    Ok(match &args.data_dir {
        Some(dir) => ApiServer::builder().build_persistent(dir)?,
        None => ApiServer::new(),
    })
}

#[cfg(feature = "embedded")]
fn in_process(args: &ClusterArgs) -> Result<Cluster, LaunchError> {
    let server = embedded_server(args)?;
    Ok(Cluster::new(
        server.client(),
        "in-process".to_string(),
        true,
        "embedded API server (in-process)".to_string(),
    ))
}

/// Starts the embedded API server on a loopback port and writes its kubeconfig: to
/// `.dynrec/kubeconfig` unless that one's server is alive, then to `.dynrec/kubeconfig-PORT`.
#[cfg(feature = "embedded")]
async fn serve_embedded(args: &ClusterArgs) -> Result<Cluster, LaunchError> {
    let server = embedded_server(args)?;
    let address: std::net::SocketAddr = ([127, 0, 0, 1], 0).into();
    let serving = server
        .serve(address)
        .await
        .map_err(|e| LaunchError::Embedded(e.to_string()))?;
    let mut path = absolute(Path::new(EMBEDDED_KUBECONFIG));
    if live_client(&path).await.is_some() {
        path.set_file_name(format!("kubeconfig-{}", serving.address().port()));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| LaunchError::Embedded(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(&path, kubeconfig(&serving.url(), None, None))
        .map_err(|e| LaunchError::Embedded(format!("cannot write {}: {e}", path.display())))?;
    let mut cluster = Cluster::new(
        server.client(),
        serving.address().to_string(),
        true,
        format!("embedded API server at {}", serving.url()),
    );
    println!("embedded API server listening on {}", serving.url());
    println!("KUBECONFIG={} kubectl get all,crds -A", path.display());
    cluster.written = Some(path);
    cluster.serving = Some((server, serving));
    Ok(cluster)
}
