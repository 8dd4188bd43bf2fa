//! `dynrec convert kro FILE...`: prints the ReconcilerDefinition each KRO
//! ResourceGraphDefinition runs as, with comments where the semantics differ.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

/// Options of `dynrec convert`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    from: From,
}

/// The formats `dynrec convert` reads.
#[derive(clap::Subcommand, Debug)]
enum From {
    /// KRO ResourceGraphDefinitions (kro.run/v1alpha1), from YAML files.
    Kro {
        /// Files holding RGDs (other documents are skipped).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// Prints the converted definitions; every error at once.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let From::Kro { files } = args.from;
    let mut errors = Vec::new();
    for file in &files {
        let source = file.display().to_string();
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {source}"))?;
        match dynrec::kro::convert(&text, &source) {
            Ok(converted) if converted.is_empty() => {
                errors.push(format!("{source}: no ResourceGraphDefinition in this file"));
            }
            Ok(converted) => print!("{converted}"),
            Err(error) => errors.push(error.to_string()),
        }
    }
    match errors.is_empty() {
        true => Ok(ExitCode::SUCCESS),
        false => anyhow::bail!("{}", errors.join("\n")),
    }
}
