//! Child processes with deadlines: a command run to completion with its output collected
//! ([`run`]), a JSON stream read event by event ([`Watch`]), and kubectl found on the PATH.
//! Every child is killed when its guard drops, so a failing test leaves nothing running.

use std::ffi::OsStr;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Kills and reaps a child process when dropped, so a failing test leaves nothing running.
/// It derefs to the [`Child`], so a guarded process is used as the process itself.
pub struct ChildGuard(pub Child);

impl std::ops::Deref for ChildGuard {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for ChildGuard {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a finished command printed.
pub struct Run {
    /// The command line, for messages.
    pub command: String,
    /// How it exited.
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Run {
    /// Whether the command exited successfully.
    pub fn succeeded(&self) -> bool {
        self.status.success()
    }

    /// The command, its exit status and its output, for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "command: {}\n{}\nstdout:\n{}\nstderr:\n{}",
            self.command, self.status, self.stdout, self.stderr
        )
    }

    /// Fails the test unless the command succeeded.
    pub fn expect_ok(self, what: &str) -> Run {
        assert!(
            self.succeeded(),
            "expected {what} to succeed\n{}",
            self.describe()
        );
        self
    }

    /// Fails the test if the command succeeded.
    pub fn expect_failure(self, what: &str) -> Run {
        assert!(
            !self.succeeded(),
            "expected {what} to fail\n{}",
            self.describe()
        );
        self
    }

    /// Stdout parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("expected JSON on stdout ({err})\n{}", self.describe()))
    }
}

/// Collects a pipe in a thread; the bytes stay readable while the process still runs.
struct Collector {
    bytes: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Collector {
    fn start(pipe: Option<impl Read + Send + 'static>) -> Collector {
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let (finished, done) = mpsc::channel();
        let sink = bytes.clone();
        thread::spawn(move || {
            if let Some(mut pipe) = pipe {
                let mut chunk = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    lock(&sink).extend_from_slice(&chunk[..n]);
                }
            }
            let _ = finished.send(());
        });
        Collector { bytes, done }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&lock(&self.bytes)).into_owned()
    }
}

fn lock(bytes: &Mutex<Vec<u8>>) -> std::sync::MutexGuard<'_, Vec<u8>> {
    bytes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn command_line(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Starts `command` with no stdin and piped stdout and stderr: its command line, and it.
fn spawn_piped(command: &mut Command) -> (String, ChildGuard) {
    let shown = command_line(command);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command
        .spawn()
        .unwrap_or_else(|err| panic!("cannot start {shown}: {err}"));
    (shown, ChildGuard(child))
}

/// Runs a command to completion, killing it (and failing the test) past the deadline.
pub fn run(command: &mut Command, deadline: Duration) -> Run {
    let (shown, mut child) = spawn_piped(command);
    let stdout = Collector::start(child.0.stdout.take());
    let stderr = Collector::start(child.0.stderr.take());
    let until = Instant::now() + deadline;
    let status = loop {
        match child.0.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.0.kill();
                panic!(
                    "{shown} did not finish within {deadline:?}\nstdout:\n{}\nstderr:\n{}",
                    stdout.text(),
                    stderr.text()
                );
            }
            Err(err) => panic!("cannot wait for {shown}: {err}"),
        }
    };
    // The pipes close when the process exits; give the collectors a moment to finish.
    for collector in [&stdout, &stderr] {
        let left = until.saturating_duration_since(Instant::now());
        let _ = collector
            .done
            .recv_timeout(left.max(Duration::from_secs(1)));
    }
    Run {
        command: shown,
        status,
        stdout: stdout.text(),
        stderr: stderr.text(),
    }
}

/// A watching child process (such as `kubectl get -w -o json`); its stdout is read JSON
/// object by object.
pub struct Watch {
    /// Killed when the watch drops.
    _process: ChildGuard,
    command: String,
    events: mpsc::Receiver<Result<Value, String>>,
    event_deadline: Duration,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Collector,
}

/// Copies what is read into a buffer, for failure messages.
struct Tee<R> {
    inner: R,
    copy: Arc<Mutex<Vec<u8>>>,
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        lock(&self.copy).extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl Watch {
    /// Starts `command`; each [`Watch::next_event`] waits at most `event_deadline`.
    pub fn start(command: &mut Command, event_deadline: Duration) -> Watch {
        let (shown, mut process) = spawn_piped(command);
        let stderr = Collector::start(process.0.stderr.take());
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let (sender, events) = mpsc::channel();
        if let Some(pipe) = process.0.stdout.take() {
            let tee = Tee {
                inner: pipe,
                copy: stdout.clone(),
            };
            thread::spawn(move || {
                let reader = BufReader::new(tee);
                for value in serde_json::Deserializer::from_reader(reader).into_iter::<Value>() {
                    let end = value.is_err();
                    if sender.send(value.map_err(|err| err.to_string())).is_err() || end {
                        return;
                    }
                }
            });
        }
        Watch {
            _process: process,
            command: shown,
            events,
            event_deadline,
            stdout,
            stderr,
        }
    }

    /// The next printed event that `wanted` accepts; fails the test past the deadline.
    pub fn next_event(&self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let until = Instant::now() + self.event_deadline;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let failure = match self.events.recv_timeout(left) {
                Ok(Ok(event)) if wanted(&event) => return event,
                Ok(Ok(_)) => continue,
                Ok(Err(err)) => format!("it printed something that is not JSON ({err})"),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    format!("it printed no such event within {:?}", self.event_deadline)
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => "its output ended".to_string(),
            };
            panic!(
                "expected the watching kubectl to print {what}, but {failure}\ncommand: {}\nstdout:\n{}\nstderr:\n{}",
                self.command,
                String::from_utf8_lossy(&lock(&self.stdout)),
                self.stderr.text()
            );
        }
    }
}

/// `kubectl` from the PATH; `None` (after saying why the test is skipped) when it is absent,
/// except under `CI=true`, where its absence fails the test.
pub fn kubectl_on_path() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("kubectl"))
            .find(|candidate| is_executable(candidate))
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "kubectl is not on the PATH, and CI=true: the kubectl tests must run in CI"
        );
        eprintln!(
            "skipped: kubectl is not on the PATH, so this test cannot drive it against dynrec apiserver (with CI=true this fails)"
        );
    }
    found
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.with_extension("exe").is_file()
}
