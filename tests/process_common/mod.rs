//! The `dynrec` binary as processes over loopback: `dynrec apiserver` and `dynrec run`,
//! with their logs in files, for tests that need real processes (signals, restarts). Each
//! process is under a [`ChildGuard`]: it is killed when the test ends, passed or failed.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub use dynrec_test_support::process::ChildGuard;
use std::time::{Duration, Instant};

use dynrec_test_support::process::{Run, run};

/// How long a process may take to start or stop.
pub const PROCESS_DEADLINE: Duration = Duration::from_secs(30);

/// The widgets definition `dynrec run -f` runs.
pub fn widgets_definition() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/definitions/widgets.yaml")
}

/// A log file opened for appending (a restarted process adds to it).
fn log_file(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
}

/// Starts `dynrec apiserver` in `dir` (kubeconfig `dir/kubeconfig`, log `dir/server.log`)
/// with `extra` arguments; returns it and its URL once it listens.
pub fn start_apiserver(dir: &Path, listen: &str, extra: &[&str]) -> (ChildGuard, String) {
    let mut child = ChildGuard(
        Command::new(env!("CARGO_BIN_EXE_dynrec"))
            .args(["apiserver", "--listen", listen, "--kubeconfig-out"])
            .arg(dir.join("kubeconfig"))
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(log_file(&dir.join("server.log")))
            .spawn()
            .unwrap(),
    );
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout);
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    // Keep reading: the server writes more, and a closed pipe would end it.
    std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
    let url = first
        .trim()
        .strip_prefix("dynrec apiserver listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    (child, url)
}

/// Starts `dynrec run` on `dir/kubeconfig` with the widgets definition, without leader
/// election and with `extra` flags, its log going to `log` (appended).
pub fn start_widgets_controller(
    dir: &Path,
    log: &Path,
    rust_log: Option<&str>,
    extra: &[&str],
) -> ChildGuard {
    start_controller(dir, &widgets_definition(), log, rust_log, extra)
}

/// Starts `dynrec run -f definitions` on `dir/kubeconfig`, without leader election and
/// with `extra` flags, its log going to `log` (appended).
pub fn start_controller(
    dir: &Path,
    definitions: &Path,
    log: &Path,
    rust_log: Option<&str>,
    extra: &[&str],
) -> ChildGuard {
    let mut command = run_command(dir, log, rust_log);
    command.arg("-f").arg(definitions).args(extra);
    ChildGuard(command.spawn().unwrap())
}

/// Starts `dynrec run` without files (the definitions stored in the cluster) on
/// `dir/kubeconfig`, without leader election, its log going to `log` (appended).
pub fn start_cluster_definitions(dir: &Path, log: &Path, rust_log: Option<&str>) -> ChildGuard {
    ChildGuard(run_command(dir, log, rust_log).spawn().unwrap())
}

/// `dynrec run` on `dir/kubeconfig` without leader election, its log going to `log`.
fn run_command(dir: &Path, log: &Path, rust_log: Option<&str>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dynrec"));
    command
        .arg("run")
        .arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .arg("--leader-elect=false")
        .env_remove("NO_COLOR")
        .stdout(Stdio::null())
        .stderr(log_file(log));
    match rust_log {
        Some(filter) => command.env("RUST_LOG", filter),
        None => command.env_remove("RUST_LOG"),
    };
    command
}

/// Sends `signal` (`TERM`, `KILL`) and waits for the process to end.
pub fn stop(child: &mut Child, signal: &str) {
    let pid = child.id().to_string();
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status();
    let deadline = Instant::now() + PROCESS_DEADLINE;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A client of the server at `url` (plain http on loopback).
pub fn client(url: &str) -> kube::Client {
    kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap()
}

/// Runs `kubectl` (its binary) with the kubeconfig `dir/kubeconfig`, its own discovery cache
/// in `dir`, a 10 s request timeout and `deadline` for the whole call.
pub fn kubectl(kubectl: &Path, dir: &Path, args: &[&str], deadline: Duration) -> Run {
    run(
        Command::new(kubectl)
            .env_remove("KUBECONFIG")
            .arg("--kubeconfig")
            .arg(dir.join("kubeconfig"))
            .arg("--cache-dir")
            .arg(dir.join("kube-cache"))
            .arg("--request-timeout=10s")
            .args(args)
            .stdin(Stdio::null()),
        deadline,
    )
}

/// A free loopback port (for a server to listen on, or to restart on where a kubeconfig
/// points).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
