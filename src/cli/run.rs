//! `dynrec run`: run the widgets demo controller, on the configured cluster or on the
//! embedded API server when none is configured.

use anyhow::Context;
use dynrec::runtime::RunArgs;

/// Options of `dynrec run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    run: RunArgs,
}

/// Runs the widgets controller until SIGINT or SIGTERM.
pub async fn run(args: Args) -> anyhow::Result<()> {
    dynrec::demo::widgets::run(args.run)
        .await
        .context("running the widgets controller")
}
