//! `dynrec run`: runs controllers described as data — the definitions in `-f` files or
//! directories and those stored in the cluster — on the configured cluster, or on the
//! embedded API server when none is configured (where, without `-f`, it runs the bundled
//! examples).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use dynrec::client::Client;
use dynrec::definitions::{Definitions, Loaded, parse_documents};
use dynrec::reconcilers::Config;
use dynrec::runtime::{Manager, RunArgs, connect, manager_options, shutdown_signal};

use super::definitions::load;

/// The examples `dynrec run` runs on the embedded default.
const BUNDLED: [(&str, &str); 3] = [
    (
        "examples/definitions/widgets.yaml",
        include_str!("../../examples/definitions/widgets.yaml"),
    ),
    (
        "examples/definitions/webapp.yaml",
        include_str!("../../examples/definitions/webapp.yaml"),
    ),
    (
        "examples/definitions/configsets.yaml",
        include_str!("../../examples/definitions/configsets.yaml"),
    ),
];

/// Options of `dynrec run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    run: RunArgs,
    /// Definition files or directories (YAML or JSON); may be repeated.
    #[arg(short = 'f', long = "filename")]
    files: Vec<PathBuf>,
}

/// Runs the definitions until SIGINT or SIGTERM.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut loaded = load(&args.files)?;
    let cluster = connect(&args.run.cluster).await?;
    if args.files.is_empty() && cluster.embedded {
        for (source, text) in BUNDLED {
            loaded.extend(parse_documents(text, source)?);
        }
    }
    let client = Client::in_namespaces(cluster.client.clone(), args.run.namespace.clone());
    let config = Config::new(client.clone(), "dynrec");
    let mut manager = Manager::new(client, manager_options(&args.run, &cluster, "dynrec"));
    let definitions = Definitions::new(&manager, &config);
    definitions
        .install_crd()
        .await
        .context("installing the ReconcilerDefinition CRD")?;
    definitions.register(&mut manager)?;
    for definition in &loaded {
        let started = definitions.start(definition).await;
        let compiled = started.with_context(|| format!("starting {}", name_of(definition)))?;
        println!(
            "definition {} reconciles {} ({})",
            compiled.name, compiled.for_kind, definition.source
        );
    }
    manager.run(shutdown_signal()).await?;
    cluster.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

fn name_of(loaded: &Loaded) -> String {
    format!(
        "definition {:?} of {}",
        loaded.definition.metadata.name, loaded.source
    )
}
