//! A cross-kind duck reconciler over `PodSpecable`: for every kind that implements the duck
//! (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, ReplicationController by their
//! OpenAPI schema, CronJob through dynrec's built-in `DuckMapping`, any CRD labelled
//! `duck.knative.dev/podspecable=true` or with a pod template at `spec.template`, and any
//! kind a `DuckMapping` maps, also those created while it runs) it injects the entries of the ConfigMap `injected-env` (in the
//! workload's namespace) as environment variables into each container. Editing the
//! ConfigMap re-reconciles every workload. The controller is in `controller.rs`, beside this
//! file.
//!
//! ```sh
//! cargo run --release --example podspecable
//! KUBECONFIG=.dynrec/kubeconfig kubectl create configmap injected-env --from-literal=GREETING=hi
//! KUBECONFIG=.dynrec/kubeconfig kubectl create deployment web --image=nginx
//! KUBECONFIG=.dynrec/kubeconfig kubectl get deployment web -o jsonpath='{.spec.template.spec.containers[0].env}'
//! ```

// `register_now` is for `dynrec rbac --example podspecable`, which shares this module.
#[allow(dead_code)]
mod controller;

use dynrec::runtime::RunArgs;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    Ok(controller::run(RunArgs::from_command_line()).await?)
}
