//! Running the `dynrec` binary as a test: the bundled examples, the command with its output,
//! and that output for assertion messages.

#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The bundled example definitions.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/definitions")
}

/// `dynrec ARGS` with `RUST_LOG=error`.
pub fn dynrec(args: &[&str]) -> Output {
    run(args, Some("error"))
}

/// `dynrec ARGS` without RUST_LOG, as a user runs it.
pub fn dynrec_as_user(args: &[&str]) -> Output {
    run(args, None)
}

fn run(args: &[&str], rust_log: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dynrec"));
    command.args(args);
    match rust_log {
        Some(filter) => command.env("RUST_LOG", filter),
        None => command.env_remove("RUST_LOG"),
    };
    command.output().expect("dynrec runs")
}

/// The exit code, stdout and stderr, for assertion messages.
pub fn text(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
