//! The processes under test: spawned, killed when dropped, and measured through `/proc`
//! (resident memory, its peak, and CPU time) while they run.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;

/// How many of its log's last lines an error shows when a process exited early.
const LOG_LINES_SHOWN: usize = 10;
/// How long a process asked to stop may take before it is killed (Kubernetes gives a pod
/// 30 s; a controller here stops in well under a second).
const GRACE: Duration = Duration::from_secs(10);

/// A spawned process, killed (and reaped) when dropped, so a failed run leaves none behind;
/// [`Process::stop`] stops it gracefully.
pub struct Process {
    name: &'static str,
    child: Child,
    /// Where its standard error goes.
    log: PathBuf,
}

/// What `/proc` says of a process at one moment.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Usage {
    /// Resident memory now, bytes.
    pub rss_bytes: u64,
    /// The highest resident memory so far, bytes (`VmHWM`).
    pub peak_rss_bytes: u64,
    /// User plus system CPU time so far, seconds.
    pub cpu_seconds: f64,
}

impl Process {
    /// Spawns `command` with its standard error appended to `log`.
    pub fn spawn(name: &'static str, mut command: Command, log: &Path) -> Result<Self> {
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("open {}", log.display()))?;
        let child = command
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("start {name} ({command:?})"))?;
        Ok(Self {
            name,
            child,
            log: log.to_path_buf(),
        })
    }

    /// The process itself, e.g. to read its standard output.
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// An error, with the end of its log, once it has exited.
    pub fn running(&mut self) -> Result<()> {
        let Some(status) = self.child.try_wait()? else {
            return Ok(());
        };
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let end = lines[lines.len().saturating_sub(LOG_LINES_SHOWN)..].join("\n");
        bail!(
            "{} exited early: {status}; the end of its log ({}):\n{end}",
            self.name,
            self.log.display()
        )
    }

    /// Stops it as Kubernetes stops a pod: SIGTERM, then SIGKILL if it has not exited
    /// within [`GRACE`]. `dynrec run -f` then marks its definitions stopped in the cluster
    /// (with `--kubeconfig`, the cluster outlives the run).
    pub async fn stop(mut self) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid fits pid_t");
        // SAFETY: kill(2) takes no pointers; the pid is our child's, not reaped yet, so it
        // names no other process.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Dropped: killed, if it still runs, and reaped.
    }

    /// Its memory and CPU time now; an error once it has exited.
    pub fn usage(&mut self) -> Result<Usage> {
        self.running()?;
        usage_of(&self.child.id().to_string())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The driver's own usage, to report its overhead beside what it measures.
pub fn own_usage() -> Result<Usage> {
    usage_of("self")
}

/// Reads `/proc/<pid>/status` and `/proc/<pid>/stat`.
fn usage_of(pid: &str) -> Result<Usage> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .map_or(0, |n| n * 1024)
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) start at field 3, `state`;
    // utime and stime are fields 14 and 15, in clock ticks of 1/100 s on Linux.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok(Usage {
        rss_bytes: kib("VmRSS:"),
        peak_rss_bytes: kib("VmHWM:"),
        cpu_seconds: (ticks(11) + ticks(12)) as f64 / 100.0,
    })
}

/// A command running `program` with no standard input or output of its own.
pub fn quiet(program: &Path) -> Command {
    let mut command = Command::new(program);
    command.stdin(Stdio::null()).stdout(Stdio::null());
    command
}
