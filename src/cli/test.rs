//! `dynrec test -f DIR CASES...`: runs YAML table tests of definitions on the table-test
//! harness and the embedded API server (one per case); with a cluster (`--kubeconfig`,
//! `--context`, `--embedded`), end to end on that cluster with the definitions running
//! in-process. Prints each case's result and, for a failing one, what differs, then
//! `N passed, M failed`. A directory of cases runs every case file under it. Exit code 0
//! when every case passes, 1 otherwise.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::definitions::{CompiledDefinition, Definitions};
use dynrec::reconcilers::Config;
use dynrec::runtime::{CLUSTER_TARGET, ClusterArgs, Manager, ManagerOptions};
use dynrec::testing::chainsaw::parse_duration;
use dynrec::testing::{
    CrashReport, DefinitionCase, DefinitionCases, ExpectAt, Phase, Recorded, explore_case,
    live_skip_reason, parse_cases, rewrite_expectations, run_case, run_case_live,
};

use super::definitions::{load, print_warnings};

/// Options of `dynrec test`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Definition files or directories (YAML or JSON); may be repeated.
    #[arg(short = 'f', long = "filename", required_unless_present_any = ["chainsaw", "kro"])]
    files: Vec<PathBuf>,
    /// Case files, or directories whose .yaml, .yml and .json files (recursively) are
    /// case files.
    #[arg(required = true, value_name = "CASES")]
    cases: Vec<PathBuf>,
    /// Make the checker's warnings (reads it cannot prove present) errors, as
    /// `spec.strict: true` does.
    #[arg(long)]
    strict: bool,
    /// Write what each failing reconcile did into its case file as the expected result
    /// (only the `expect:` blocks change), and print what changed in the file.
    #[arg(long)]
    update: bool,
    /// The CASES are chainsaw test directories (a `chainsaw-test.yaml` each, or directories
    /// holding such): run them with dynrec running the definitions they apply (and -f's).
    #[arg(long)]
    chainsaw: bool,
    /// Run the CASES as chainsaw test directories (as --chainsaw) with dynrec also acting
    /// as KRO's controller for every ResourceGraphDefinition they apply.
    #[arg(long)]
    kro: bool,
    /// The cluster: definition cases given one (--kubeconfig, --context, --embedded) run
    /// end to end on it, with the definitions running in-process, instead of on an
    /// embedded API server per case. Chainsaw tests run on a new embedded API server
    /// in-process unless --kubeconfig or --context names one.
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Explore crashes: run each case's reconciles once per write they make, the process
    /// dying right after that write, then fresh reconciles until nothing changes; fail
    /// where the end state is not the uncrashed run's (an object missing, orphaned,
    /// duplicated or different, a finalizer left on a deleted object), also for the
    /// reconciled object's deletion. In-process only.
    #[arg(long, conflicts_with_all = ["update", "chainsaw", "kro"])]
    crash_points: bool,
    /// Definition cases on a cluster: how long each reconcile's expectation may take to
    /// hold, and the cleanup to finish (e.g. 30s, 2m, 500ms). Chainsaw tests take their
    /// timeouts from the test files (`spec.timeouts`), so not with --chainsaw or --kro.
    #[arg(
        long,
        value_parser = parse_duration,
        default_value = "30s",
        value_name = "DURATION",
        conflicts_with_all = ["chainsaw", "kro"]
    )]
    timeout: Duration,
}

/// How the cases run: on an embedded API server each, or on a cluster.
enum Runner {
    InProcess,
    Live(Box<super::controllers::Controllers>, Duration),
}

impl Runner {
    /// A case's phases, or why it could not run to its end.
    async fn run(
        &self,
        definition: &Arc<CompiledDefinition>,
        case: &DefinitionCase,
    ) -> Result<Vec<Phase>, String> {
        match self {
            Runner::InProcess => run_case(definition, case).await,
            Runner::Live(controllers, timeout) => {
                run_case_live(&controllers.client, case, *timeout).await
            }
        }
    }
}

/// Runs every case file.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.chainsaw || args.kro {
        return super::chainsaw::run(
            &args.cases,
            &args.files,
            &args.cluster,
            args.strict,
            args.kro,
        )
        .await;
    }
    let loaded = load(&args.files)?;
    let case_files = case_files(&args.cases)?;
    let cluster = &args.cluster;
    let live = cluster.kubeconfig.is_some()
        || cluster.context.is_some()
        || cluster.embedded
        || cluster.data_dir.is_some();
    if live && args.update {
        bail!("--update records what an in-process reconcile writes; run it without a cluster");
    }
    if live && args.crash_points {
        bail!("--crash-points crashes in-process reconciles; run it without a cluster");
    }
    let (runner, compiled) = match live {
        true => {
            let crds = case_crds(&case_files)?;
            let controllers =
                super::controllers::start(cluster, &crds, &loaded, args.strict, false).await?;
            let compiled = controllers.started.clone();
            (Runner::Live(Box::new(controllers), args.timeout), compiled)
        }
        false => {
            // A case file that cannot be read is reported when it runs, after the
            // definitions' own errors; without the cases' CRDs, a kind only they serve is
            // loaded unchecked.
            let crds = case_crds(&case_files).unwrap_or_default();
            (
                Runner::InProcess,
                compile(&loaded, &crds, args.strict).await?,
            )
        }
    };
    let mut tally = Tally::default();
    for path in &case_files {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {source}"))?;
        let cases = parse_cases(&text, &source)?;
        let definition = pick(&compiled, &cases, &source)?;
        let (mut updates, mut updated) = (Vec::new(), Vec::new());
        for (index, case) in cases.cases.iter().enumerate() {
            if case.skip {
                println!("skip  {source}: {}", case.name);
                continue;
            }
            if let (Runner::Live(..), Some(reason)) = (&runner, live_skip_reason(case)) {
                println!("skip  {source}: {} ({reason})", case.name);
                continue;
            }
            if args.crash_points {
                tally.count(&source, case, explore_case(&definition, case).await);
                continue;
            }
            let phases = match runner.run(&definition, case).await {
                Ok(phases) => phases,
                Err(stopped) => {
                    tally.failed += 1;
                    print_stopped(&source, &case.name, &stopped);
                    continue;
                }
            };
            let failing: Vec<(usize, Phase)> = phases
                .into_iter()
                .enumerate()
                .filter(|(_, p)| !p.failures.is_empty())
                .collect();
            if failing.is_empty() {
                tally.passed += 1;
                println!("ok    {source}: {}", case.name);
            } else if args.update {
                tally.updated += 1;
                let labels: Vec<&str> = failing.iter().map(|(_, p)| p.label.as_str()).collect();
                updated.push(format!(
                    "updated {source}: {} ({})",
                    case.name,
                    labels.join(", ")
                ));
                for (phase, failed) in failing {
                    let step = phase.checked_sub(1);
                    updates.push((ExpectAt { case: index, step }, failed.recorded));
                }
            } else {
                tally.failed += 1;
                print_failure(&source, &case.name, &failing);
            }
        }
        if !updates.is_empty() {
            let borrowed: Vec<(ExpectAt, &Recorded)> =
                updates.iter().map(|(at, r)| (*at, r)).collect();
            let rewritten = rewrite_expectations(&text, &borrowed)
                .map_err(|e| anyhow::anyhow!("{source}: cannot update: {e}"))?;
            std::fs::write(path, &rewritten).with_context(|| format!("writing {source}"))?;
            for line in &updated {
                println!("{line}");
            }
            println!(
                "--- {source}\n+++ {source} (updated)\n{}",
                changed_lines(&text, &rewritten)
            );
        }
    }
    if let Runner::Live(controllers, _) = runner {
        controllers.stop().await;
    }
    println!("{tally}");
    Ok(match tally.failed {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

/// The definitions compiled for in-process runs, checked against the schemas of an embedded
/// server serving the built-in kinds and the cases' `apiResources` CRDs.
async fn compile(
    loaded: &[dynrec::definitions::Loaded],
    crds: &[kube::api::DynamicObject],
    strict: bool,
) -> anyhow::Result<Vec<Arc<CompiledDefinition>>> {
    tracing::info!(target: CLUSTER_TARGET, "cluster: embedded API server (in-process, one per case)");
    let server = ApiServer::new();
    let crds = crds.iter().map(serde_json::to_value);
    let crds = crds.collect::<Result<Vec<_>, _>>()?;
    server
        .seed(crds)
        .map_err(|e| anyhow::anyhow!("the cases' apiResources: {e}"))?;
    let client = Client::new(server.client());
    let config = Config::new(client.clone(), "dynrec-test");
    let definitions =
        Definitions::new(&Manager::new(client, ManagerOptions::default()), &config).strict(strict);
    let mut compiled = Vec::new();
    for definition in loaded {
        let checked = definitions.compile(definition).await?;
        print_warnings(&checked, &definition.source);
        compiled.push(Arc::new(checked));
    }
    Ok(compiled)
}

/// How many cases passed, failed, and had their expectations rewritten.
#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
    updated: usize,
}

impl Tally {
    /// Prints a case's crash points' result and counts it.
    fn count(
        &mut self,
        source: &str,
        case: &DefinitionCase,
        explored: Result<CrashReport, String>,
    ) {
        let report = match explored {
            Ok(report) => report,
            Err(stopped) => {
                self.failed += 1;
                return print_stopped(source, &case.name, &stopped);
            }
        };
        let points = report.crash_points;
        if report.findings.is_empty() {
            self.passed += 1;
            return println!("ok    {source}: {} ({points} crash points)", case.name);
        }
        self.failed += 1;
        let crashed = report.findings.iter().filter(|f| f.crash.is_some()).count();
        let which = match crashed {
            0 => "broken without a crash".to_string(),
            n => format!("{n} of {points} crash points broke it"),
        };
        println!("FAIL  {source}: {} ({which})", case.name);
        for finding in &report.findings {
            for line in finding.to_string().lines() {
                println!("  {line}");
            }
        }
        println!();
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)?;
        if self.updated > 0 {
            write!(f, ", {} updated", self.updated)?;
        }
        Ok(())
    }
}

/// A failing case: each failing reconcile's mismatches, indented under its label.
fn print_failure(source: &str, name: &str, failing: &[(usize, Phase)]) {
    println!("FAIL  {source}: {name}");
    for (_, phase) in failing {
        println!("  {}:", phase.label);
        for line in phase.failures.iter().flat_map(|f| f.lines()) {
            println!("    {line}");
        }
    }
    println!();
}

/// A case that could not run to its end (a given object or a step's edit the server
/// refused): why, under its name.
fn print_stopped(source: &str, name: &str, why: &str) {
    println!("FAIL  {source}: {name}");
    for line in why.lines() {
        println!("  {line}");
    }
    println!();
}

/// The changed lines of a line diff with two lines of context, gaps shown as `...`.
fn changed_lines(before: &str, after: &str) -> String {
    let diff = dynrec::object::line_diff(before, after);
    let lines: Vec<&str> = diff.lines().collect();
    let changed = |line: &&str| !line.starts_with(' ');
    let near: Vec<bool> = (0..lines.len())
        .map(|i| {
            lines[i.saturating_sub(2)..(i + 3).min(lines.len())]
                .iter()
                .any(changed)
        })
        .collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if near[i] {
            out.push_str(line);
            out.push('\n');
        } else if i > 0 && near[i - 1] {
            out.push_str("...\n");
        }
    }
    out
}

/// The definition a case file is about: the one it names, or the only one loaded.
fn pick(
    compiled: &[Arc<CompiledDefinition>],
    cases: &DefinitionCases,
    source: &str,
) -> anyhow::Result<Arc<CompiledDefinition>> {
    match &cases.definition {
        Some(name) => match compiled.iter().find(|d| &d.name == name) {
            Some(found) => Ok(found.clone()),
            None => bail!("{source}: no definition named {name:?} was loaded"),
        },
        None => match compiled {
            [only] => Ok(only.clone()),
            _ => bail!(
                "{source}: name the definition (`definition:`); {} are loaded",
                compiled.len()
            ),
        },
    }
}

/// The case files named, each directory replaced by the case files under it (recursively,
/// in path order); a directory with none is an error.
/// The CRDs the cases of `files` list under `apiResources`, for a cluster to serve before
/// the definitions start (a definition waits for its kinds).
fn case_crds(files: &[PathBuf]) -> anyhow::Result<Vec<kube::api::DynamicObject>> {
    let mut crds = Vec::new();
    for path in files {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {source}"))?;
        for case in parse_cases(&text, &source)?.cases {
            for resource in case.api_resources {
                if resource["kind"] == "CustomResourceDefinition" {
                    let crd = serde_json::from_value(resource)
                        .with_context(|| format!("{source}: {}: apiResources", case.name))?;
                    crds.push(crd);
                }
            }
        }
    }
    Ok(crds)
}

fn case_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let before = files.len();
        collect_case_files(path, &mut files)?;
        if files.len() == before {
            bail!(
                "{}: no case files (.yaml, .yml or .json) in this directory",
                path.display()
            );
        }
    }
    Ok(files)
}

fn collect_case_files(dir: &Path, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect_case_files(&path, files)?;
        } else if path
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        {
            files.push(path);
        }
    }
    Ok(())
}
