//! `dynrec test --chainsaw DIR...`: runs chainsaw `Test`s (each directory's
//! `chainsaw-test.yaml`, or those of the directories under it) on the embedded API server
//! in-process, or on the cluster of `--kubeconfig`, with dynrec running, in-process, the
//! ReconcilerDefinitions the tests apply (and those of `-f`) and, with `--kro`, their KRO
//! ResourceGraphDefinitions. Exit code 0 when every test passes, 1 otherwise.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use dynrec::client::Client;
use dynrec::definitions::Definitions;
use dynrec::reconcilers::Config;
use dynrec::runtime::{ClusterArgs, Manager, ManagerOptions, connect_in_process};
use dynrec::testing::chainsaw::{Test, load_test, run_test};

use super::definitions::{load, print_warnings};

/// How long the controllers get to stop once the tests are done.
const STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs every chainsaw test under `dirs`; with `kro`, dynrec is also KRO's controller.
pub async fn run(
    dirs: &[PathBuf],
    files: &[PathBuf],
    cluster: &ClusterArgs,
    kro: bool,
) -> anyhow::Result<ExitCode> {
    let loaded = load(files)?;
    let mut tests = Vec::new();
    for dir in dirs {
        let before = tests.len();
        collect_tests(dir, &mut tests)?;
        if tests.len() == before {
            bail!(
                "{}: no chainsaw-test.yaml in this directory or under it",
                dir.display()
            );
        }
    }
    let mut cluster = cluster.clone();
    if cluster.kubeconfig.is_none() && cluster.context.is_none() {
        cluster.embedded = true;
    }
    let cluster = connect_in_process(&cluster).await?;
    let client = Client::new(cluster.client.clone());
    let config = Config::new(client.clone(), "dynrec");
    let mut manager = Manager::new(client.clone(), ManagerOptions::default());
    let definitions = Definitions::new(&manager, &config);
    definitions
        .install_crd()
        .await
        .context("installing the ReconcilerDefinition CRD")?;
    definitions.register(&mut manager)?;
    if kro {
        super::run::run_graphs(&definitions, &config, &mut manager).await?;
    }
    for definition in &loaded {
        let compiled = definitions
            .start_from_file(definition)
            .await
            .with_context(|| format!("starting the definition of {}", definition.source))?;
        print_warnings(&compiled, &definition.source);
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controllers = tokio::spawn(manager.run(async {
        let _ = stopped.await;
    }));
    let runner = Client::new(cluster.client.clone());
    let (mut passed, mut failed) = (0, 0);
    let mut print = |line: &str| println!("{line}");
    for test in &tests {
        match run_test(test, &runner, &mut print).await.passed {
            true => passed += 1,
            false => failed += 1,
        }
    }
    let _ = stop.send(());
    match tokio::time::timeout(STOP_TIMEOUT, controllers).await {
        Ok(Ok(Err(error))) => eprintln!("warning: the controllers stopped with an error: {error}"),
        Err(_) => eprintln!("warning: the controllers did not stop within {STOP_TIMEOUT:?}"),
        _ => {}
    }
    cluster.shutdown().await;
    println!("{passed} passed, {failed} failed");
    Ok(match failed {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

/// The test of `dir`, or the tests of the directories under it (in path order).
fn collect_tests(dir: &Path, tests: &mut Vec<Test>) -> anyhow::Result<()> {
    if !dir.is_dir() {
        bail!(
            "{}: not a directory (give the directory of a chainsaw-test.yaml)",
            dir.display()
        );
    }
    if dir.join("chainsaw-test.yaml").is_file() || dir.join("chainsaw-test.yml").is_file() {
        tests.push(load_test(dir)?);
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_dir())
        .collect();
    subdirs.sort();
    for subdir in subdirs {
        collect_tests(&subdir, tests)?;
    }
    Ok(())
}
