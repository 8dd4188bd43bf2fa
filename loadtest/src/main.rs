//! `dynrec-loadtest`: measures dynrec as it is deployed — a separate process talking HTTP to
//! an API server — against a typed kube-runtime controller doing the same writes, in the
//! same run. See benches/README.md ("Over HTTP") for what it reports and how to read it.

mod engine;
mod engine_kind;
mod metrics;
mod phases;
mod process;
mod report;
mod server;
mod typed;
mod typed_webapps;
mod webapps;
mod widgets;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// mimalloc, the `dynrec` binary's allocator: the typed controller (a subcommand of this
/// binary) and the cache fills measured here then run on the allocator dynrec runs on, so
/// neither side's figures carry the other's allocator (see benches/README.md, "Over HTTP").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Load driver for dynrec and a typed baseline, each a process of its own.
#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the load against each engine in turn and report
    Run(engine::RunArgs),
    /// The typed baseline controller (started by `run`; runs until killed)
    TypedController {
        /// The cluster to reconcile the instances of
        #[arg(long)]
        kubeconfig: PathBuf,
        /// Concurrent reconciles
        #[arg(long, default_value_t = 2)]
        workers: u16,
        /// Which instances it reconciles
        #[arg(long, value_enum, default_value = "widgets")]
        workload: workload::Workload,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::Run(args) => engine::run(args).await,
        Command::TypedController {
            kubeconfig,
            workers,
            workload,
        } => typed_controller(kubeconfig, workers, workload).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("dynrec-loadtest: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the typed baseline of `workload` against the cluster of `kubeconfig`.
async fn typed_controller(
    kubeconfig: PathBuf,
    workers: u16,
    workload: workload::Workload,
) -> Result<()> {
    let client = server::Server::existing(kubeconfig).client().await?;
    match workload {
        workload::Workload::Widgets => typed::run(client, workers).await,
        workload::Workload::Webapps => typed_webapps::run(client, workers).await,
    }
}
