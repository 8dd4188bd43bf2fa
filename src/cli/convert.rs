//! `dynrec convert kro FILE...`: prints the ReconcilerDefinition each KRO
//! ResourceGraphDefinition runs as, with comments where the semantics differ — once it
//! compiles as `dynrec run -f` compiles it: every expression type-checked against the
//! schemas of the kinds it reads and writes, which an in-process embedded API server
//! serves (the built-in kinds, the CRDs of the files, the RGDs' instance kinds).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::definitions::{
    CompiledDefinition, DefinitionErrors, Definitions, Loaded, parse_values, yaml_documents,
};
use dynrec::reconcilers::Config;
use dynrec::runtime::{Manager, ManagerOptions};
use serde_json::Value;

use super::definitions::print_warnings;

/// Options of `dynrec convert`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    from: From,
}

/// The formats `dynrec convert` reads.
#[derive(clap::Subcommand, Debug)]
enum From {
    /// KRO ResourceGraphDefinitions (kro.run/v1alpha1), from YAML files; the
    /// CustomResourceDefinitions of the files are the kinds they are checked against
    /// besides the built-in ones.
    Kro {
        /// Files holding RGDs and CRDs (other documents are skipped).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// A file given to convert.
struct Input {
    source: String,
    documents: Vec<Value>,
}

impl Input {
    /// Its CustomResourceDefinitions.
    fn crds(&self) -> impl Iterator<Item = &Value> {
        let is_crd = |d: &&Value| d["kind"] == "CustomResourceDefinition";
        self.documents.iter().filter(is_crd)
    }
}

/// Prints the converted definitions of the files whose RGDs compile; every error at once.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let From::Kro { files } = args.from;
    let mut inputs = Vec::new();
    let mut errors = Vec::new();
    for file in &files {
        let source = file.display().to_string();
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {source}"))?;
        match yaml_documents(&text, &source) {
            Ok(documents) => inputs.push(Input { source, documents }),
            Err(err) => errors.push(format!("{source}: not YAML: {err}")),
        }
    }
    let mut converted = Vec::new();
    for input in &inputs {
        match dynrec::kro::convert(&input.documents, &input.source) {
            Ok(text) if text.is_empty() && input.crds().next().is_none() => errors.push(format!(
                "{}: no ResourceGraphDefinition or CustomResourceDefinition in this file",
                input.source
            )),
            Ok(text) => converted.push((input, text)),
            Err(error) => errors.push(error.to_string()),
        }
    }
    let refused = check(&inputs).await?;
    errors.extend(refused.iter().map(|(_, error)| error.to_string()));
    for (input, text) in converted {
        if !refused.iter().any(|(source, _)| *source == input.source) {
            print!("{text}");
        }
    }
    match errors.is_empty() {
        true => Ok(ExitCode::SUCCESS),
        false => anyhow::bail!("{}", errors.join("\n")),
    }
}

/// Compiles the RGDs of `inputs` as `dynrec run -f` does, printing the checker's warnings;
/// returns the errors of those refused, by file. An RGD's instance CRD is served once it
/// compiles, so an RGD may use the kind of another, in whichever order they are given.
async fn check(inputs: &[Input]) -> anyhow::Result<Vec<(String, DefinitionErrors)>> {
    let server = ApiServer::new();
    let crds = inputs.iter().flat_map(|input| input.crds().cloned());
    server
        .seed(crds)
        .map_err(|e| anyhow::anyhow!("the files' CustomResourceDefinitions: {e}"))?;
    let client = Client::new(server.client());
    let config = Config::new(client.clone(), "dynrec-convert");
    let definitions = Definitions::new(&Manager::new(client, ManagerOptions::default()), &config);
    let mut pending: Vec<(&str, Loaded)> = Vec::new();
    for input in inputs {
        // An RGD that does not translate is refused by the conversion already.
        let loaded = parse_values(input.documents.clone(), &input.source).unwrap_or_default();
        let rgds = loaded
            .into_iter()
            .filter(|l| l.definition.spec.kro.is_some());
        pending.extend(rgds.map(|l| (input.source.as_str(), l)));
    }
    let mut served = BTreeSet::new();
    let mut results: Vec<(&str, &Loaded, Result<CompiledDefinition, DefinitionErrors>)>;
    loop {
        results = Vec::new();
        let known = served.len();
        for (file, loaded) in &pending {
            let compiled = definitions.compile(loaded).await;
            if let Ok(Some(crd)) = compiled.as_ref().map(|c| c.crd.as_ref())
                && served.insert(crd["metadata"]["name"].to_string())
            {
                server
                    .seed([crd.clone()])
                    .map_err(|e| anyhow::anyhow!("{}: its instance CRD: {e}", loaded.source))?;
            }
            results.push((file, loaded, compiled));
        }
        let waiting = results
            .iter()
            .any(|(_, _, c)| c.as_ref().is_ok_and(|c| !c.not_served.is_empty()));
        // Another round only when a kind one waits for may have appeared.
        if !waiting || served.len() == known {
            break;
        }
    }
    let mut refused = Vec::new();
    for (file, loaded, compiled) in results {
        match compiled {
            Ok(compiled) => print_warnings(&compiled, &loaded.source),
            Err(errors) => refused.push((file.to_owned(), errors)),
        }
    }
    Ok(refused)
}
