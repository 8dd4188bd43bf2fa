//! `dynrec run`: runs controllers described as data — the definitions in `-f` files or
//! directories and those stored in the cluster — on the configured cluster, or on the
//! embedded API server when none is configured (where, without `-f`, it runs the bundled
//! examples).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use dynrec::client::Client;
use dynrec::definitions::{
    CompiledDefinition, Definitions, IMPERSONATION_PATH, IdentityPolicy, Loaded, ServiceAccountRef,
    StartError, WebhookEndpoint, impersonation_webhook, impersonation_webhook_configuration,
    parse_documents,
};
use dynrec::kro::ResourceGraphDefinitions;
use dynrec::reconcilers::Config;
use dynrec::runtime::{BindAddress, Manager, RunArgs, connect, manager_options, shutdown_signal};
use dynrec::webhook::{CertSource, WebhookServer, service_certificate};

use super::definitions::{load, print_warnings, starting_error};

/// The examples `dynrec run` runs on the embedded default.
const BUNDLED: [(&str, &str); 3] = [
    (
        "examples/definitions/widgets.yaml",
        include_str!("../../examples/definitions/widgets.yaml"),
    ),
    (
        "examples/definitions/webapp.yaml",
        include_str!("../../examples/definitions/webapp.yaml"),
    ),
    (
        "examples/definitions/configsets.yaml",
        include_str!("../../examples/definitions/configsets.yaml"),
    ),
];

/// Options of `dynrec run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    run: RunArgs,
    /// Definition files or directories (YAML or JSON); may be repeated.
    #[arg(short = 'f', long = "filename")]
    files: Vec<PathBuf>,
    /// The ServiceAccount (`NAME` in dynrec's namespace, or `NAMESPACE/NAME`) a definition
    /// naming none in `spec.serviceAccount` acts as, instead of dynrec itself.
    #[arg(long, value_name = "[NAMESPACE/]NAME")]
    default_service_account: Option<String>,
    /// Refuse definitions that name no ServiceAccount (their status says why).
    #[arg(long)]
    require_service_account: bool,
    /// Make the checker's warnings (reads it cannot prove present) errors, as
    /// `spec.strict: true` does.
    #[arg(long)]
    strict: bool,
    /// Serve, on this address (`:9443` for every interface), the admission webhook refusing
    /// a definition that names a ServiceAccount its author may not impersonate, and register
    /// it (a ValidatingWebhookConfiguration with its URL and self-signed certificate).
    #[arg(long, value_name = "ADDRESS")]
    impersonation_webhook: Option<BindAddress>,
    /// Register the webhook behind this Service (port: the webhook's), with a self-signed
    /// certificate for `NAME.NAMESPACE.svc` that every replica shares through the Secret
    /// `NAME-tls` (made by the first to start).
    #[arg(
        long,
        value_name = "NAMESPACE/NAME",
        requires = "impersonation_webhook"
    )]
    webhook_service: Option<String>,
    /// Also act as KRO's controller: run every `kro.run/v1alpha1` ResourceGraphDefinition
    /// in the cluster as a definition and write its status as KRO does (installs KRO's
    /// CRD). Off by default, so dynrec and KRO never fight over the same objects.
    #[arg(long)]
    kro: bool,
}

/// Runs the definitions until SIGINT or SIGTERM.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let stop = shutdown_signal();
    let mut loaded = load(&args.files)?;
    let cluster = connect(&args.run.cluster).await?;
    if args.files.is_empty() && cluster.embedded && !args.kro {
        for (source, text) in BUNDLED {
            loaded.extend(parse_documents(text, source)?);
        }
    }
    let client = Client::in_namespaces(cluster.client.clone(), args.run.namespace.clone());
    let config = Config::new(client.clone(), "dynrec");
    let mut manager = Manager::new(client, manager_options(&args.run, &cluster, "dynrec"));
    let identities = IdentityPolicy {
        default_service_account: args
            .default_service_account
            .as_deref()
            .map(|account| service_account(account, cluster.client.default_namespace()))
            .transpose()?,
        require_service_account: args.require_service_account,
    };
    let definitions = Definitions::new(&manager, &config)
        .with_identities(identities)
        .strict(args.strict);
    definitions
        .install_crd()
        .await
        .context("installing the ReconcilerDefinition CRD")?;
    definitions.register(&mut manager)?;
    if args.kro {
        run_graphs(&definitions, &config, &mut manager).await?;
        println!("running the cluster's ResourceGraphDefinitions (--kro)");
    }
    if let Some(BindAddress(Some(address))) = args.impersonation_webhook {
        let service = args
            .webhook_service
            .as_deref()
            .map(service_name)
            .transpose()?;
        serve_impersonation_webhook(&mut manager, &config, address, service).await?;
    }
    for definition in &loaded {
        match definitions.start_from_file(definition).await {
            Ok(compiled) => started(&compiled, definition),
            Err(error @ StartError::KindNotServed { .. }) => {
                eprintln!("warning: {error}");
                tokio::spawn(start_when_served(definitions.clone(), definition.clone()));
            }
            Err(error) => {
                return Err(starting_error(definition, error));
            }
        }
    }
    manager.run(stop).await?;
    definitions.mark_files_stopped().await;
    cluster.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// Installs the ResourceGraphDefinition CRD and registers KRO's controller (`--kro`).
pub(super) async fn run_graphs(
    definitions: &Definitions,
    config: &Config,
    manager: &mut Manager,
) -> anyhow::Result<()> {
    let graphs = ResourceGraphDefinitions::new(definitions, config);
    graphs
        .install_crd()
        .await
        .context("installing the ResourceGraphDefinition CRD")?;
    graphs.register(manager)?;
    Ok(())
}

/// How often a definition waiting for its kinds tries again.
const KIND_RETRY: Duration = Duration::from_secs(2);

/// Starts a definition once the cluster serves its kinds (a CRD still to come).
async fn start_when_served(definitions: Definitions, definition: Loaded) {
    loop {
        tokio::time::sleep(KIND_RETRY).await;
        match definitions.start_from_file(&definition).await {
            Ok(compiled) => return started(&compiled, &definition),
            Err(StartError::KindNotServed { .. }) => {}
            Err(error) => {
                return eprintln!("error: {:#}", starting_error(&definition, error));
            }
        }
    }
}

fn started(compiled: &CompiledDefinition, definition: &Loaded) {
    print_warnings(compiled, &definition.source);
    println!(
        "definition {} reconciles {} ({})",
        compiled.name, compiled.for_kind, definition.source
    );
}

/// Serves the impersonation webhook on `address` and registers it with the cluster: at its
/// URL, or behind `service` (namespace, name) with the certificate its Secret keeps.
async fn serve_impersonation_webhook(
    manager: &mut Manager,
    config: &Config,
    address: SocketAddr,
    service: Option<(String, String)>,
) -> anyhow::Result<()> {
    let certs = match &service {
        Some((namespace, name)) => service_certificate(config.client.own_kube(), namespace, name)
            .await
            .context("the impersonation webhook's certificate")?,
        None => CertSource::SelfSigned(Vec::new()),
    };
    let server =
        WebhookServer::new(certs).webhook(IMPERSONATION_PATH, impersonation_webhook(config))?;
    let serving = manager.serve_webhooks(server, address).await?;
    let endpoint = match service {
        Some((namespace, name)) => WebhookEndpoint::Service {
            namespace,
            name,
            port: serving.local_addr().port(),
        },
        None => WebhookEndpoint::Url(serving.url(IMPERSONATION_PATH)),
    };
    let configuration = impersonation_webhook_configuration(&endpoint, serving.ca_pem());
    let configuration = serde_json::from_value(configuration)?;
    config
        .client
        .apply(&configuration, "dynrec", true)
        .await
        .context("registering the impersonation webhook")?;
    println!(
        "impersonation webhook served at {}",
        serving.url(IMPERSONATION_PATH)
    );
    Ok(())
}

/// `NAMESPACE/NAME` of `--webhook-service`.
fn service_name(text: &str) -> anyhow::Result<(String, String)> {
    match text.split_once('/') {
        Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() => {
            Ok((namespace.to_owned(), name.to_owned()))
        }
        _ => anyhow::bail!("--webhook-service {text:?}: expected NAMESPACE/NAME"),
    }
}

/// `NAMESPACE/NAME`, or `NAME` in `namespace` (dynrec's own, as Flux's
/// `--default-service-account` names one in the namespace of what it applies).
fn service_account(text: &str, namespace: &str) -> anyhow::Result<ServiceAccountRef> {
    let qualified = match text.contains('/') {
        true => text.to_owned(),
        false => format!("{namespace}/{text}"),
    };
    qualified
        .parse()
        .map_err(|err| anyhow::anyhow!("--default-service-account: {err}"))
}
