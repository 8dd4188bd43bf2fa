//! KRO's own chainsaw e2e suite run by `dynrec test --kro` from `../shared/peer-suites`
//! (relative to the project root), skipped with a message when it is absent: in-process,
//! and over HTTP against `dynrec apiserver` (`--kubeconfig`). Every test of the suite must
//! pass (see docs/chainsaw.md, "KRO's e2e suite").

mod process_common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The suite's tests, all of which pass through dynrec (directory names).
const PASSING: [&str; 11] = [
    "cel-random-namespaced-function",
    "check-arbitary-objects",
    "check-external-references",
    "check-instance-creation",
    "check-instance-update",
    "check-multi-resource-rgd",
    "check-required-default-interactions",
    "check-rgd-creation",
    "check-rgd-deletion",
    "check-unknown-fields",
    "check-validation-markers",
];

/// KRO's suite, or `None` (with a message) when it is not there.
fn suite() -> Option<PathBuf> {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/peer-suites/kro/chainsaw");
    if !suite.is_dir() {
        eprintln!(
            "skipped: KRO's chainsaw suite is not at {}",
            suite.display()
        );
        return None;
    }
    Some(suite)
}

/// Runs `dynrec test --kro` on the passing tests with `cluster` arguments; asserts they
/// all pass.
fn passing_tests_pass(suite: &Path, cluster: &[&str]) {
    let dirs: Vec<String> = PASSING
        .iter()
        .map(|name| suite.join(name).to_string_lossy().into_owned())
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_dynrec"))
        .args(["test", "--kro"])
        .args(cluster)
        .args(&dirs)
        .env("RUST_LOG", "off")
        .output()
        .expect("dynrec runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(&format!("{} passed, 0 failed", PASSING.len())),
        "{stdout}"
    );
}

#[test]
fn kros_e2e_tests_pass_through_dynrec_test_kro() {
    if let Some(suite) = suite() {
        passing_tests_pass(&suite, &[]);
    }
}

#[test]
fn kros_e2e_tests_pass_against_dynrec_apiserver_over_http() {
    let Some(suite) = suite() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_server, _url) = process_common::start_apiserver(dir.path(), "127.0.0.1:0", &[]);
    let kubeconfig = dir.path().join("kubeconfig");
    passing_tests_pass(&suite, &["--kubeconfig", kubeconfig.to_str().unwrap()]);
}
