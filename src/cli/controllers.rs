//! Controllers run in-process against a cluster for the tests `dynrec test` runs on it
//! (`--chainsaw`, `--kro`, and definition cases with `--kubeconfig`): the
//! ReconcilerDefinition CRD and controller, the definitions of `-f` started, and, with
//! `kro`, KRO's controller; stopped when the tests are done.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use dynrec::client::Client;
use dynrec::definitions::{CompiledDefinition, Definitions, Loaded};
use dynrec::reconcilers::Config;
use dynrec::runtime::{Cluster, ClusterArgs, Manager, ManagerOptions, connect_in_process};
use kube::api::DynamicObject;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::definitions::{print_warnings, starting_error};

/// How long the controllers get to stop once the tests are done.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The controllers running against a cluster.
pub struct Controllers {
    /// A client of the cluster, for the tests.
    pub client: Client,
    /// The definitions of `-f`, as they run.
    pub started: Vec<Arc<CompiledDefinition>>,
    cluster: Cluster,
    stop: oneshot::Sender<()>,
    running: JoinHandle<Result<(), dynrec::runtime::ManagerError>>,
}

/// Connects to the cluster of `args`, installs `crds` (what the tests say the cluster
/// serves, e.g. definition cases' `apiResources`), and starts the controllers there:
/// `loaded`'s definitions (checked `strict`ly if asked), the in-cluster ones, and with `kro`
/// KRO's.
pub async fn start(
    args: &ClusterArgs,
    crds: &[DynamicObject],
    loaded: &[Loaded],
    strict: bool,
    kro: bool,
) -> anyhow::Result<Controllers> {
    let cluster = connect_in_process(args).await?;
    let client = Client::new(cluster.client.clone());
    for crd in crds {
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        client
            .install_crd(crd, "dynrec-test")
            .await
            .with_context(|| format!("installing the CRD {name} of the cases' apiResources"))?;
    }
    let config = Config::new(client.clone(), "dynrec");
    let mut manager = Manager::new(client.clone(), ManagerOptions::default());
    let definitions = Definitions::new(&manager, &config).strict(strict);
    definitions
        .install_crd()
        .await
        .context("installing the ReconcilerDefinition CRD")?;
    definitions.register(&mut manager)?;
    if kro {
        super::run::run_graphs(&definitions, &config, &mut manager).await?;
    }
    let mut started = Vec::new();
    for definition in loaded {
        let compiled = definitions
            .start_from_file(definition)
            .await
            .map_err(|error| starting_error(definition, error))?;
        print_warnings(&compiled, &definition.source);
        started.push(compiled);
    }
    let (stop, stopped) = oneshot::channel::<()>();
    let running = tokio::spawn(manager.run(async {
        let _ = stopped.await;
    }));
    Ok(Controllers {
        client: Client::new(cluster.client.clone()),
        started,
        cluster,
        stop,
        running,
    })
}

impl Controllers {
    /// Stops the controllers (a warning when they do not stop cleanly) and the cluster
    /// connection (an embedded server this process started stops).
    pub async fn stop(self) {
        let _ = self.stop.send(());
        match tokio::time::timeout(STOP_TIMEOUT, self.running).await {
            Ok(Ok(Err(error))) => {
                eprintln!("warning: the controllers stopped with an error: {error}")
            }
            Err(_) => eprintln!("warning: the controllers did not stop within {STOP_TIMEOUT:?}"),
            _ => {}
        }
        self.cluster.shutdown().await;
    }
}
