//! `dynrec apiserver`: serve the embedded API server over HTTP with a kubeconfig for it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use dynrec_apiserver::{
    ApiServer, ApiServerBuilder, Authorization, Fault, TlsIdentity, kubeconfig,
};

/// Options of `dynrec apiserver`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Where to write a kubeconfig for the server.
    #[arg(long, default_value = ".dynrec/kubeconfig")]
    kubeconfig_out: PathBuf,
    /// Allow a non-loopback listen address (requires --token).
    #[arg(long)]
    allow_remote: bool,
    /// Bearer token every request must carry; implies --tls (kubectl sends tokens only over https).
    #[arg(long)]
    token: Option<String>,
    /// Keep every object in this directory (an embedded transactional store) so a restart
    /// loses nothing that was acknowledged; without it, memory only.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// A JSON file with a list of faults to inject (see the apiserver README).
    #[arg(long)]
    faults: Option<PathBuf>,
    /// Serve https with a self-signed certificate (written into the kubeconfig); without
    /// --token, a random token is generated and written into the kubeconfig too, so
    /// kubectl has credentials and does not prompt for a user name.
    #[arg(long)]
    tls: bool,
    /// How requests are authorized: `always-allow` (the default) or `rbac` (Roles,
    /// ClusterRoles and their bindings, as kube-apiserver; implies --tls, and the kubeconfig's
    /// token is an administrator's, a member of system:masters).
    #[arg(long, value_enum, default_value = "always-allow")]
    authorization: AuthorizationMode,
    /// Accept the bearer tokens of this file as their users (kube-apiserver's
    /// --token-auth-file format: `token,user,uid[,"group1,group2"]` per line).
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Extra DNS name or IP address for the certificate (repeatable), e.g. the host name
    /// other machines use with --allow-remote.
    #[arg(long = "tls-san")]
    tls_sans: Vec<String>,
}

/// The `--authorization` modes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum AuthorizationMode {
    /// Every request is allowed.
    AlwaysAllow,
    /// Role-based access control.
    Rbac,
}

impl Args {
    fn serves_tls(&self) -> bool {
        self.tls || self.token.is_some() || self.authorization == AuthorizationMode::Rbac
    }

    /// The token requests must carry: the one given, or a generated one when serving https.
    fn effective_token(&self) -> Option<String> {
        self.token
            .clone()
            .or_else(|| self.serves_tls().then(generated_token))
    }

    /// The server's settings for authentication and authorization.
    fn access(&self, mut builder: ApiServerBuilder) -> anyhow::Result<ApiServerBuilder> {
        if let Some(path) = &self.token_auth_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the token file {}", path.display()))?;
            builder = builder
                .token_file(&text)
                .with_context(|| format!("in {}", path.display()))?;
        }
        if self.authorization == AuthorizationMode::Rbac {
            builder = builder.authorization(Authorization::Rbac);
        }
        Ok(builder)
    }

    /// Names the certificate is valid for, besides localhost and 127.0.0.1.
    fn certificate_names(&self) -> Vec<String> {
        let mut names = self.tls_sans.clone();
        if !self.listen.ip().is_unspecified() {
            names.push(self.listen.ip().to_string());
        }
        names
    }
}

/// A random bearer token (32 hex digits).
fn generated_token() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Refuses a non-loopback address unless remote access is allowed with a token.
fn check_exposure(args: &Args) -> anyhow::Result<()> {
    if args.listen.ip().is_loopback() {
        return Ok(());
    }
    if !args.allow_remote {
        bail!(
            "refusing to listen on {}: it is not a loopback address; pass --allow-remote and --token to serve other hosts",
            args.listen
        );
    }
    if args.token.as_deref().is_none_or(str::is_empty) {
        bail!(
            "--allow-remote requires --token: a server reachable from other hosts must not be open to anyone"
        );
    }
    Ok(())
}

/// Reads a JSON list of faults.
fn read_faults(path: &Path) -> anyhow::Result<Vec<Fault>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the faults file {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a JSON list of faults", path.display()))
}

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let stop = dynrec::runtime::shutdown_signal();
    check_exposure(&args)?;
    let token = args.effective_token();
    let mut builder = ApiServer::builder();
    if let Some(token) = &token {
        builder = builder.token(token.clone());
    }
    builder = args.access(builder)?;
    let server = match &args.data_dir {
        Some(dir) => builder
            .build_persistent(dir)
            .with_context(|| format!("cannot open the data directory {}", dir.display()))?,
        None => builder.build(),
    };
    if let Some(path) = &args.faults {
        for fault in read_faults(path)? {
            server.add_fault(fault);
        }
    }
    let identity = if args.serves_tls() {
        Some(TlsIdentity::self_signed(&args.certificate_names())?)
    } else {
        None
    };
    let serving = match &identity {
        Some(identity) => server.serve_tls(args.listen, identity).await,
        None => server.serve(args.listen).await,
    }
    .with_context(|| format!("cannot listen on {}", args.listen))?;
    let url = serving.url();
    if let Some(dir) = args
        .kubeconfig_out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create directory {}", dir.display()))?;
    }
    let config = kubeconfig(
        &url,
        token.as_deref(),
        identity.as_ref().map(TlsIdentity::certificate_pem),
    );
    std::fs::write(&args.kubeconfig_out, config)
        .with_context(|| format!("cannot write {}", args.kubeconfig_out.display()))?;
    println!("dynrec apiserver listening on {url}");
    println!("kubeconfig written to {}", args.kubeconfig_out.display());
    println!(
        "try: KUBECONFIG={} kubectl api-resources",
        args.kubeconfig_out.display()
    );
    stop.await;
    tracing::info!("shutting down");
    // Open watches are cut (clients resume elsewhere), so they cannot hold the shutdown.
    serving.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(listen: &str, allow_remote: bool, token: Option<&str>) -> Args {
        Args {
            listen: listen.parse().unwrap(),
            kubeconfig_out: PathBuf::from("kubeconfig"),
            allow_remote,
            token: token.map(str::to_string),
            tls: false,
            tls_sans: Vec::new(),
            faults: None,
            data_dir: None,
            authorization: AuthorizationMode::AlwaysAllow,
            token_auth_file: None,
        }
    }

    #[test]
    fn a_faults_file_names_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("faults.json");
        std::fs::write(&path, r#"[{"match": {"verb": "update"}, "action": {"fail": {"code": 500, "reason": "InternalError"}}, "times": 1}]"#).unwrap();
        assert_eq!(read_faults(&path).unwrap().len(), 1);
        std::fs::write(&path, r#"[{"action": {"explode": {}}}]"#).unwrap();
        let err = format!("{:#}", read_faults(&path).unwrap_err());
        assert!(
            err.contains("not a JSON list of faults") && err.contains("explode"),
            "{err}"
        );
    }

    #[test]
    fn remote_addresses_need_allow_remote_and_a_token() {
        assert!(check_exposure(&args("127.0.0.1:0", false, None)).is_ok());
        assert!(check_exposure(&args("[::1]:0", false, None)).is_ok());
        let refused = check_exposure(&args("0.0.0.0:0", false, None)).unwrap_err();
        assert!(refused.to_string().contains("not a loopback address"));
        let no_token = check_exposure(&args("0.0.0.0:0", true, None)).unwrap_err();
        assert!(no_token.to_string().contains("requires --token"));
        assert!(check_exposure(&args("0.0.0.0:0", true, Some("s3cret"))).is_ok());
    }
}
