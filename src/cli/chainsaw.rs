//! `dynrec test --chainsaw DIR...`: runs chainsaw `Test`s (each directory's
//! `chainsaw-test.yaml`, or those of the directories under it) on the embedded API server
//! in-process, or on the cluster of `--kubeconfig`, with dynrec running, in-process, the
//! ReconcilerDefinitions the tests apply (and those of `-f`) and, with `--kro`, their KRO
//! ResourceGraphDefinitions. Exit code 0 when every test passes, 1 otherwise.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use dynrec::runtime::ClusterArgs;
use dynrec::testing::chainsaw::{Test, load_test, run_test};

use super::definitions::load;

/// Runs every chainsaw test under `dirs`; with `kro`, dynrec is also KRO's controller.
/// `strict` makes the checker's warnings about `files`' definitions errors.
pub async fn run(
    dirs: &[PathBuf],
    files: &[PathBuf],
    cluster: &ClusterArgs,
    strict: bool,
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
    let controllers = super::controllers::start(&cluster, &[], &loaded, strict, kro).await?;
    let (mut passed, mut failed) = (0, 0);
    let mut print = |line: &str| println!("{line}");
    for test in &tests {
        match run_test(test, &controllers.client, &mut print).await.passed {
            true => passed += 1,
            false => failed += 1,
        }
    }
    controllers.stop().await;
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
