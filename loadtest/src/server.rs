//! The API server the run measures against: a `dynrec apiserver` process this driver starts
//! (the default), or the cluster of a kubeconfig the user names.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context, Result, anyhow, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::process::{Process, quiet};

/// Where the measured controllers connect.
pub struct Server {
    /// The kubeconfig every process is given.
    pub kubeconfig: PathBuf,
    /// The `dynrec apiserver` process, when this driver started it (its memory is measured).
    pub process: Option<Process>,
}

impl Server {
    /// Starts `dynrec apiserver` on a free loopback port, its kubeconfig and log in `dir`.
    pub fn start(dynrec: &Path, dir: &Path) -> Result<Self> {
        let kubeconfig = dir.join("kubeconfig");
        let mut command = quiet(dynrec);
        command
            .args(["apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .stdout(Stdio::piped());
        let mut process = Process::spawn("dynrec apiserver", command, &dir.join("apiserver.log"))?;
        let stdout = process.child().stdout.take().context("apiserver stdout")?;
        let mut lines = BufReader::new(stdout);
        let mut first = String::new();
        lines.read_line(&mut first)?;
        if !first.starts_with("dynrec apiserver listening on ") {
            bail!(
                "dynrec apiserver did not start (first line {first:?}; see {})",
                dir.join("apiserver.log").display()
            );
        }
        // Keep draining: the server writes more, and a closed pipe would stop it.
        std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
        Ok(Self {
            kubeconfig,
            process: Some(process),
        })
    }

    /// The cluster of an existing kubeconfig (its memory is not measured).
    pub fn existing(kubeconfig: PathBuf) -> Self {
        Self {
            kubeconfig,
            process: None,
        }
    }

    /// A client of the server, for the driver's own reads and writes.
    pub async fn client(&self) -> Result<kube::Client> {
        // kube's error names the file and holds its cause in its message already.
        let kubeconfig = Kubeconfig::read_from(&self.kubeconfig).map_err(|err| anyhow!("{err}"))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        Ok(kube::Client::try_from(config)?)
    }
}
