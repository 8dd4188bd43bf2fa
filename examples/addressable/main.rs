//! A second cross-kind duck reconciler, over `Addressable` (`status.address.url`): for every
//! kind that implements the duck (CRDs labelled `duck.knative.dev/addressable=true`, with an
//! `status.address.url` string in their schema, or mapped by a `DuckMapping`, also those
//! created while it runs) it lists every object's URL in the ConfigMap `addressables` of the
//! namespace `default`, following objects, their addresses and the kinds as they come and
//! go. The controller is in `controller.rs`, beside this file.
//!
//! ```sh
//! cargo run --example addressable
//! KUBECONFIG=.dynrec/kubeconfig kubectl apply -f my-broker-crd.yaml   # labelled addressable
//! KUBECONFIG=.dynrec/kubeconfig kubectl get configmap addressables -o yaml
//! ```

mod controller;

use dynrec::runtime::RunArgs;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    Ok(controller::run(RunArgs::from_command_line()).await?)
}
