//! A cross-kind duck reconciler over `PodSpecable`: for every kind named on the command line
//! it injects the entries of the ConfigMap `injected-env` (in the workload's namespace) as
//! environment variables into each container. Editing the ConfigMap re-reconciles every
//! workload. The controller is in `src/demo/podspecable.rs`.
//!
//! ```sh
//! cargo run --release --example podspecable -- --kind apps/v1/Deployment --kind apps/v1/StatefulSet
//! KUBECONFIG=.dynrec/kubeconfig kubectl create configmap injected-env --from-literal=GREETING=hi
//! KUBECONFIG=.dynrec/kubeconfig kubectl create deployment web --image=nginx
//! KUBECONFIG=.dynrec/kubeconfig kubectl get deployment web -o jsonpath='{.spec.template.spec.containers[0].env}'
//! ```

use clap::Parser;
use dynrec::object::Gvk;
use dynrec::runtime::RunArgs;

#[derive(Parser)]
struct Args {
    /// A kind to reconcile, as group/version/Kind (repeatable); any kind with spec.template.
    #[arg(long = "kind", default_values_t = [String::from("apps/v1/Deployment")])]
    kinds: Vec<String>,
    #[command(flatten)]
    run: RunArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter("info").init();
    let args = Args::parse();
    let kinds = args
        .kinds
        .iter()
        .map(|kind| kind.parse::<Gvk>())
        .collect::<Result<Vec<_>, _>>()?;
    dynrec::demo::podspecable::run(args.run, kinds).await?;
    Ok(())
}
