//! An `AggregateReconciler`: keeps one object, the ConfigMap `default/cluster-summary`,
//! listing the cluster's namespaces, and updates it when a namespace comes or goes. The
//! controller is in `controller.rs`, beside this file.
//!
//! ```sh
//! cargo run --release --example singleton
//! KUBECONFIG=.dynrec/kubeconfig kubectl create namespace demo
//! KUBECONFIG=.dynrec/kubeconfig kubectl get configmap cluster-summary -o yaml
//! ```

mod controller;

use dynrec::runtime::RunArgs;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    Ok(controller::run(RunArgs::from_command_line()).await?)
}
