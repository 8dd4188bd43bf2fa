//! Command-line interface of the `dynrec` binary.

mod apiserver;
mod chainsaw;
mod controllers;
mod convert;
mod definitions;
mod ducks;
mod plan;
mod rbac;
mod run;
mod test;

use clap::{Parser, Subcommand};
use dynrec::runtime::LogArgs;
use tracing::level_filters::LevelFilter;

/// dynrec: a dynamic, schema-free reconciler engine for Kubernetes.
#[derive(Parser, Debug)]
#[command(name = "dynrec", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    logs: LogArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the embedded Kubernetes API server over HTTP.
    Apiserver(apiserver::Args),
    /// Run controllers described as data (on the embedded API server when no cluster is
    /// configured, where without -f it runs the bundled examples).
    Run(run::Args),
    /// Print what reconciling every instance of each definition would change (dry run);
    /// exit code 2 when something would change.
    Plan(plan::Args),
    /// Run YAML table tests of definitions on the embedded API server, or end to end on a
    /// cluster (--kubeconfig, --embedded).
    Test(test::Args),
    /// Print the kinds of the cluster that implement each known duck, and why.
    Ducks(ducks::Args),
    /// Print the least-privilege ClusterRole (or Role) the controllers need, each rule
    /// naming the reconcilers that need it.
    Rbac(rbac::Args),
    /// Print the ReconcilerDefinition another format's controller runs as (`convert kro
    /// FILE...` for KRO ResourceGraphDefinitions), with comments where semantics differ.
    Convert(convert::Args),
}

/// Parses the command line, runs the command, and reports errors.
pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // plan, ducks, rbac and convert print their results; their logs are only warnings unless asked
    // for. test prints each case's result: the logs of the reconciles under test (a failing
    // step logs an ERROR even in a passing case) show only with -v or --log-level.
    let default_level = match cli.command {
        Command::Test(_) => LevelFilter::OFF,
        Command::Plan(_) | Command::Ducks(_) | Command::Rbac(_) | Command::Convert(_) => {
            LevelFilter::WARN
        }
        _ => LevelFilter::INFO,
    };
    cli.logs.init(default_level);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Apiserver(args) => apiserver::run(args)
                .await
                .map(|()| std::process::ExitCode::SUCCESS),
            Command::Run(args) => run::run(args).await,
            Command::Plan(args) => plan::run(args).await,
            Command::Test(args) => test::run(args).await,
            Command::Ducks(args) => ducks::run(args).await,
            Command::Rbac(args) => rbac::run(args).await,
            Command::Convert(args) => convert::run(args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
