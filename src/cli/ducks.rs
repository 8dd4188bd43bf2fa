//! `dynrec ducks`: the kinds of the cluster that implement each known duck, and why.

use std::process::ExitCode;

use dynrec::client::Client;
use dynrec::ducks::{DuckType, cluster_survey, table};
use dynrec::runtime::{ClusterArgs, connect_in_process};

/// Arguments of `dynrec ducks`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// Prints one line per duck and kind that implements it (only the table on stdout; an
/// embedded API server runs in-process), and the near-misses on stderr.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let cluster = connect_in_process(&args.cluster).await?;
    let client = Client::new(cluster.client.clone());
    let survey = cluster_survey(&client, &DuckType::known()).await?;
    print!("{}", table(&survey.matches));
    for near in &survey.near_misses {
        eprintln!("not matched: {near}");
    }
    cluster.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
