//! `dynrec plan -f DIR`: what reconciling every instance of each definition would change,
//! as diffs, without changing anything (server-side dry run). Exit code 0 when nothing
//! would change, 2 when something would.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use dynrec::client::Client;
use dynrec::definitions::{Definitions, plan, render};
use dynrec::runtime::{ClusterArgs, Manager, ManagerOptions, connect_in_process};

use super::definitions::{load, print_warnings};

/// Options of `dynrec plan`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Definition files or directories (YAML or JSON); may be repeated.
    #[arg(short = 'f', long = "filename", required = true)]
    files: Vec<PathBuf>,
}

/// Prints the plan of every definition.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loaded = load(&args.files)?;
    let cluster = connect_in_process(&args.cluster).await?;
    let client = Client::new(cluster.client.clone());
    let config = dynrec::reconcilers::Config::new(client.clone(), "dynrec-plan");
    let manager = Manager::new(client, ManagerOptions::default());
    let definitions = Definitions::new(&manager, &config);
    let mut changes = false;
    for definition in &loaded {
        let compiled = definitions.compile(definition).await?;
        print_warnings(&compiled, &definition.source);
        if let Some(crd) = &compiled.crd {
            let name = crd["metadata"]["name"].as_str().unwrap_or_default();
            if !crd_exists(&cluster.client, name).await {
                println!(
                    "{}: would create CustomResourceDefinition {name}",
                    compiled.name
                );
                changes = true;
                continue;
            }
        }
        let plans = plan(&cluster.client, &compiled)
            .await
            .with_context(|| format!("planning {}", compiled.name))?;
        if plans.is_empty() {
            println!("{}: no {} instances", compiled.name, compiled.for_kind);
        }
        print!("{}", render(&plans));
        changes |= plans.iter().any(|p| p.changes());
    }
    cluster.shutdown().await;
    Ok(match changes {
        true => ExitCode::from(2),
        false => ExitCode::SUCCESS,
    })
}

async fn crd_exists(kube: &kube::Client, name: &str) -> bool {
    let crds: kube::Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        kube::Api::all(kube.clone());
    crds.get_opt(name).await.ok().flatten().is_some()
}
