//! Admission webhooks on the embedded API server: the widgets controller, plus a mutating
//! webhook that defaults a Widget's `spec.size` (and labels the Widgets' ConfigMaps) and a
//! validating one that refuses the greeting "boo" (both in `controller.rs`, beside this file), served
//! over TLS by the Manager and called by the embedded server.
//!
//! `cargo run --example webhook` writes `.dynrec/webhook.kubeconfig` (or the path given as
//! the first argument); then, in another shell:
//!
//! ```sh
//! kubectl --kubeconfig .dynrec/webhook.kubeconfig apply -f examples/webhook-widgets.yaml
//! ```
//!
//! creates `w1` with `spec.size: 1` added by the webhook, and refuses `boo` with
//! `admission webhook "greetings.widgets.example.com" denied the request: greeting "boo" is forbidden`.

// Only the widgets controller, not its `run`, is used here.
#[path = "controller.rs"]
mod webhooks;
#[path = "../widgets/controller.rs"]
#[allow(dead_code)]
mod widgets;

use std::path::PathBuf;

use dynrec::apiserver::{ApiServer, kubeconfig};
use dynrec::client::Client;
use dynrec::reconcilers::Config;
use dynrec::runtime::{Manager, ManagerOptions, shutdown_signal};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter("info").init();
    let path = std::env::args().nth(1).map_or_else(
        || PathBuf::from(".dynrec/webhook.kubeconfig"),
        PathBuf::from,
    );
    let server = ApiServer::new();
    let serving = server.serve("127.0.0.1:0".parse()?).await?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, kubeconfig(&serving.url(), None, None))?;
    widgets::install_crd(&server.client()).await?;
    let client = Client::new(server.client());
    let config = Config::new(client.clone(), "widgets");
    let mut manager = Manager::new(client.clone(), ManagerOptions::default());
    let webhook_server = webhooks::server(&config)?;
    let webhooks_serving = manager
        .serve_webhooks(webhook_server, "127.0.0.1:0".parse()?)
        .await?;
    webhooks::register(&client, webhooks_serving).await?;
    println!(
        "API server at {}; webhooks at {}; kubeconfig: {}",
        serving.url(),
        webhooks_serving.url("/"),
        path.display()
    );
    widgets::register(&mut manager, &config)?;
    manager.run(shutdown_signal()).await?;
    Ok(())
}
