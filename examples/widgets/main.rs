//! The widgets controller: a CRD kind created at run time, a ResourceReconciler with a
//! SyncReconciler and a ChildReconciler (one ConfigMap per Widget), Ready reflected from the
//! child. The controller itself is in `controller.rs`, beside this file.
//!
//! `cargo run --release --example widgets` runs it on the embedded API server (or on your
//! cluster with `--kubeconfig PATH`); then, in another shell:
//!
//! ```sh
//! KUBECONFIG=.dynrec/kubeconfig kubectl apply -f - <<'YAML'
//! apiVersion: example.com/v1
//! kind: Widget
//! metadata: {name: w1}
//! spec: {greeting: hi, size: 2}
//! YAML
//! KUBECONFIG=.dynrec/kubeconfig kubectl get widgets,configmaps
//! ```

mod controller;

use dynrec::runtime::RunArgs;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    Ok(controller::run(RunArgs::from_command_line()).await?)
}
