//! One run: for each engine in turn, a fresh API server (or the user's cluster), the
//! controller as a process, the phases of [`crate::phases`], and the report.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::engine_kind::EngineKind;
use crate::metrics::{self, ControllerLatency};
use crate::phases::{self, ChildWatch, StepPlan};
use crate::process::{Process, Usage, own_usage, quiet};
use crate::report::{EngineReport, Report, ServerMemory, Stored};
use crate::server::Server;
use crate::workload::{Workload, converged};

/// The namespace the instances live in.
const NAMESPACE: &str = "loadtest";

/// What to run and how hard.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Instances to create and converge
    #[arg(long, default_value_t = 1000, value_parser = at_least_one)]
    instances: usize,
    /// Creates a second (0: as fast as the server takes them, 64 in flight)
    #[arg(long, default_value_t = 0.0, value_parser = zero_or_more)]
    create_rate: f64,
    /// The churn steps: changes a second, in order
    #[arg(long, value_delimiter = ',', default_value = "50,100,200,400", value_parser = more_than_zero)]
    churn: Vec<f64>,
    /// How long each churn step changes instances, seconds
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    step_seconds: u64,
    /// The SLO a churn step must keep: p99 of change → child shows it, milliseconds
    #[arg(long, default_value_t = 1000.0, value_parser = more_than_zero)]
    slo_ms: f64,
    /// Concurrent reconciles of each controller
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    workers: u16,
    /// Which controllers, in order
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "dynrec,typed"
    )]
    engines: Vec<EngineKind>,
    /// The instances: Widgets (a ConfigMap each) or WebApps (a Deployment, Service and Ingress
    /// each)
    #[arg(long, value_enum, default_value = "widgets")]
    workload: Workload,
    /// The dynrec binary (default: `dynrec` beside this binary)
    #[arg(long)]
    dynrec: Option<PathBuf>,
    /// The definition dynrec runs (default: the workload's, from examples/definitions). It
    /// must write the child the driver watches as the workload's own does (Widgets: a
    /// ConfigMap `<widget>-config` whose data.greeting is the Widget's spec.greeting; WebApps: a
    /// Deployment named as the WebApp whose first container's image is its spec.image) and
    /// set Ready with status.observedGeneration
    #[arg(long)]
    definition: Option<PathBuf>,
    /// Run against this cluster instead of a `dynrec apiserver` started per engine (its
    /// memory is then not reported); the run uses, then deletes, the namespace `loadtest`
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Where result.json, churn.svg and the processes' logs go
    #[arg(long, default_value = "target/loadtest")]
    out: PathBuf,
    /// The longest a converge or a catch-up may take, seconds
    #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..))]
    limit_seconds: u64,
}

/// A count of one or more.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(err) => Err(err.to_string()),
    }
}

/// A finite number above zero.
fn more_than_zero(text: &str) -> Result<f64, String> {
    finite_where(text, |n| n > 0.0, "must be more than 0")
}

/// A finite number of zero or more.
fn zero_or_more(text: &str) -> Result<f64, String> {
    finite_where(text, |n| n >= 0.0, "must be 0 or more")
}

/// A finite number for which `holds` is true, or why not.
fn finite_where(text: &str, holds: fn(f64) -> bool, rule: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(n) if !n.is_finite() => Err("must be a finite number".into()),
        Ok(n) if holds(n) => Ok(n),
        Ok(_) => Err(rule.into()),
        Err(err) => Err(err.to_string()),
    }
}

/// Runs every engine of `args` and writes the report.
pub async fn run(args: RunArgs) -> Result<()> {
    let dynrec = match &args.dynrec {
        Some(path) => path.clone(),
        None => std::env::current_exe()?.with_file_name("dynrec"),
    };
    if !dynrec.exists() {
        bail!(
            "no dynrec binary at {} (build it: cargo build --release --bin dynrec, or pass --dynrec)",
            dynrec.display()
        );
    }
    let mut report = Report {
        date: jiff::Timestamp::now().to_string(),
        machine: machine(),
        args: std::env::args().collect(),
        engines: Vec::new(),
        driver: own_usage()?,
    };
    for &engine in &args.engines {
        let dir = args.out.join(engine.name());
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        eprintln!("{engine}: {} instances …", args.instances);
        let measured = measure(&args, engine, &dynrec, &dir).await;
        // Written after each engine, so that a later engine's failure keeps the figures.
        match measured {
            Ok(figures) => report.engines.push(figures),
            Err(err) if report.engines.is_empty() => return Err(err.context(engine.name())),
            Err(err) => {
                write(&args.out, &report)?;
                return Err(err.context(format!(
                    "{engine} (the engines before it are in {}/result.json)",
                    args.out.display()
                )));
            }
        }
        report.driver = own_usage()?;
        write(&args.out, &report)?;
    }
    print!("{}", report.summary());
    println!("written: {}/result.json, churn.svg", args.out.display());
    Ok(())
}

/// Writes the report's JSON and its plot into `out`.
fn write(out: &Path, report: &Report) -> Result<()> {
    std::fs::write(
        out.join("result.json"),
        serde_json::to_string_pretty(report)?,
    )?;
    std::fs::write(out.join("churn.svg"), report.svg())?;
    Ok(())
}

/// Every phase against one engine.
async fn measure(
    args: &RunArgs,
    engine: EngineKind,
    dynrec: &Path,
    dir: &Path,
) -> Result<EngineReport> {
    let mut server = match &args.kubeconfig {
        Some(kubeconfig) => Server::existing(kubeconfig.clone()),
        None => Server::start(dynrec, dir)?,
    };
    let client = server.client().await?;
    create_namespace(&client).await?;
    let kubeconfig = server.kubeconfig.clone();
    let metrics = (engine == EngineKind::Dynrec)
        .then(free_loopback_address)
        .transpose()?;
    let start_controller = || controller(args, engine, dynrec, &kubeconfig, dir, metrics);
    let workload = args.workload;
    if engine == EngineKind::Typed {
        install_typed_crd(&client, workload).await?;
    }
    let mut controller = start_controller()?;
    wait_for_controller(&client, workload, args.limit(), &mut controller).await?;
    let server_before = server_usage(&mut server)?;

    let converge = phases::converge(
        &client,
        NAMESPACE,
        workload,
        args.instances,
        args.create_rate,
        args.limit(),
    )
    .await?;
    let controller_after_converge = controller.usage()?;
    let stored = stored_once_recorded(&client, workload, engine, args.instances + 1).await?;
    let server_memory = server_usage(&mut server)?
        .map(|after| ServerMemory::new(server_before.unwrap_or_default(), after, stored));

    let watch = ChildWatch::start(&client, NAMESPACE, workload, args.limit()).await?;
    let mut churn = Vec::new();
    for &rate in &args.churn {
        let plan = StepPlan {
            rate,
            length: Duration::from_secs(args.step_seconds),
            // Ten times the SLO: past that a change counts as unseen (and the step fails).
            drain: Duration::from_secs_f64(args.slo_ms / 1000.0 * 10.0),
            slo_ms: args.slo_ms,
        };
        let before = scrape(metrics).await?;
        let mut step =
            phases::churn_step(&client, NAMESPACE, workload, &watch, args.instances, &plan).await?;
        if let (Some(before), Some(after)) = (before, scrape(metrics).await?) {
            step.controller = Some(ControllerLatency::between(&before, &after));
        }
        eprintln!(
            "{engine}: churn {rate}/s: p99 {:.1} ms{}",
            step.p99_ms,
            if step.meets_slo {
                ""
            } else {
                " (misses the SLO)"
            }
        );
        churn.push(step);
    }
    let sustained_changes_per_second = churn
        .iter()
        .filter(|s| s.meets_slo)
        .map(|s| s.target_rate)
        .reduce(f64::max);

    controller.stop().await;
    phases::change_all(&client, NAMESPACE, workload, &watch, args.instances).await?;
    let fills = phases::cache_fills(&client, NAMESPACE, workload).await?;
    let restarted = Instant::now();
    let mut controller = start_controller()?;
    let restart = phases::caught_up(&watch, restarted, args.limit(), fills).await?;
    let controller_at_end = controller.usage()?;
    controller.stop().await;
    if args.kubeconfig.is_some() {
        delete_namespace(&client, args.limit()).await?;
    }
    Ok(EngineReport {
        engine: engine.name().to_string(),
        workload: format!("{workload:?}").to_lowercase(),
        converge,
        controller_after_converge,
        churn,
        sustained_changes_per_second,
        restart,
        controller_at_end,
        server: server_memory,
    })
}

impl RunArgs {
    /// The bound of a converge or catch-up.
    fn limit(&self) -> Duration {
        Duration::from_secs(self.limit_seconds)
    }
}

/// A loopback address no process listens on now, for the controller's metrics.
fn free_loopback_address() -> Result<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("find a free port")?;
    Ok(listener.local_addr()?)
}

/// The controller's metrics now, when it serves them.
async fn scrape(address: Option<SocketAddr>) -> Result<Option<metrics::Snapshot>> {
    match address {
        Some(address) => Ok(Some(metrics::scrape(address).await?)),
        None => Ok(None),
    }
}

/// Starts the engine's controller process against `kubeconfig`, serving its metrics over
/// plain HTTP at `metrics` when given (dynrec).
fn controller(
    args: &RunArgs,
    engine: EngineKind,
    dynrec: &Path,
    kubeconfig: &Path,
    dir: &Path,
    metrics: Option<SocketAddr>,
) -> Result<Process> {
    let log = dir.join("controller.log");
    let workers = args.workers.to_string();
    match engine {
        EngineKind::Dynrec => {
            let mut command = quiet(dynrec);
            let definition = args.definition.clone();
            command
                .arg("run")
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .arg("-f")
                .arg(definition.unwrap_or_else(|| args.workload.definition()))
                .args(["--leader-elect=false", "--workers", &workers]);
            if let Some(address) = metrics {
                command
                    .arg(format!("--metrics-bind-address={address}"))
                    .arg("--metrics-secure=false");
            }
            Process::spawn("dynrec run", command, &log)
        }
        EngineKind::Typed => {
            let mut command = quiet(&std::env::current_exe()?);
            let workload = format!("{:?}", args.workload).to_lowercase();
            command
                .arg("typed-controller")
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .args(["--workers", &workers, "--workload", &workload]);
            Process::spawn("the typed controller", command, &log)
        }
    }
}

/// Creates the run's namespace (it may exist on the embedded server's first start).
async fn create_namespace(client: &kube::Client) -> Result<()> {
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
    match Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
    {
        Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
        created => created.map(drop).context("create the namespace"),
    }
}

/// Installs the typed baseline's CRD (dynrec installs its own from the definition).
/// Applied over the CRD of the same kind that dynrec's definition installed, when an earlier
/// engine ran against the same cluster.
async fn install_typed_crd(client: &kube::Client, workload: Workload) -> Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crd = workload.typed_crd();
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch(
            &crd.name_any(),
            &PatchParams::apply("dynrec-loadtest").force(),
            &Patch::Apply(&crd),
        )
        .await
        .context("install the typed baseline's CRD")?;
    Ok(())
}

/// Deletes the run's namespace from the user's cluster and waits, for at most `limit`, until
/// it is gone, so that the next engine's run does not meet it terminating.
async fn delete_namespace(client: &kube::Client, limit: Duration) -> Result<()> {
    let namespaces = Api::<Namespace>::all(client.clone());
    namespaces
        .delete(NAMESPACE, &DeleteParams::default())
        .await
        .context("delete the namespace")?;
    let deadline = Instant::now() + limit;
    while namespaces.get_opt(NAMESPACE).await?.is_some() {
        if Instant::now() > deadline {
            bail!("the namespace {NAMESPACE} was not gone {limit:?} after its delete");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// Waits until the controller reconciles: a probe instance, created once the kind is served,
/// is Ready. Fails at once if the controller exits (a definition it cannot load, a flag it
/// refuses).
async fn wait_for_controller(
    client: &kube::Client,
    workload: Workload,
    limit: Duration,
    controller: &mut Process,
) -> Result<()> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &workload.kind());
    let deadline = Instant::now() + limit;
    let mut probe = workload.instance(0, NAMESPACE);
    probe.metadata.name = Some("probe".into());
    let kind = workload.kind();
    let kind = format!("{}/{} {}", kind.group, kind.version, kind.kind);
    // What the last look found, said if the wait runs out.
    let mut last = String::new();
    loop {
        controller.running()?;
        if Instant::now() > deadline {
            bail!("the controller did not make a probe {kind} Ready within {limit:?}: {last}");
        }
        match api.get_opt("probe").await {
            Ok(Some(instance)) if converged(&instance) => {
                return probe_child_shows(client, workload, &instance).await;
            }
            Ok(Some(instance)) => {
                let status = serde_json::to_string(&instance.data["status"])?;
                last = format!("the probe's status is {status}");
            }
            Ok(None) => match api.create(&PostParams::default(), &probe).await {
                Ok(_) => last = "the probe was created".into(),
                // The kind is not served yet: dynrec installs a definition's CRD when it
                // starts, if the definition has a schema.
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    last = format!(
                        "the cluster does not serve {kind} (a definition installs its CRD \
                         only when it has spec.schema)"
                    );
                }
                Err(kube::Error::Api(status)) => {
                    last = format!("the probe could not be created: {}", status.message);
                }
                Err(err) => last = format!("the probe could not be created: {err}"),
            },
            Err(err) => last = format!("the probe could not be read: {err}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Checks that the Ready probe's watched child shows the probe's value, so that a definition
/// given with `--definition` that writes other children fails the run here, rather than
/// every change counting as unseen (and the restart waiting out `--limit-seconds`).
async fn probe_child_shows(
    client: &kube::Client,
    workload: Workload,
    probe: &DynamicObject,
) -> Result<()> {
    let children: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &workload.watched_child());
    let name = workload.child_name(&probe.name_any());
    let child = children.get_opt(&name).await?;
    let shown = child.as_ref().and_then(|child| workload.shown(child));
    let value = workload.changed_value(probe);
    if shown.as_ref().map(|(_, shown)| shown.as_str()) == value {
        return Ok(());
    }
    let found = match (child, shown) {
        (None, _) => format!("there is no {} {name}", workload.watched_child().kind),
        (Some(_), None) => format!("{name} shows no value"),
        (Some(_), Some((_, shown))) => format!("{name} shows {shown:?}"),
    };
    bail!(
        "the probe {} is Ready, but its child does not show its value {:?}: {found}. The \
         driver times each change by the child that shows it, so the definition must write, \
         for each instance, {}",
        workload.kind().kind,
        value.unwrap_or_default(),
        workload.child_contract()
    )
}

/// The server process's usage, when the driver started it.
fn server_usage(server: &mut Server) -> Result<Option<Usage>> {
    server.process.as_mut().map(Process::usage).transpose()
}

/// What the namespace holds once the engine's Events of the converge are in
/// ([`Workload::events_per_instance`]), recorded just after the write that made each instance
/// Ready. They are waited for 30 s plus a second per thousand instances.
async fn stored_once_recorded(
    client: &kube::Client,
    workload: Workload,
    engine: EngineKind,
    instances: usize,
) -> Result<Vec<Stored>> {
    let deadline = Instant::now() + Duration::from_secs(30 + instances as u64 / 1000);
    loop {
        let stored = stored(client, workload).await?;
        let events = stored
            .iter()
            .find(|s| s.kind == "Event")
            .map_or(0, |s| s.count);
        if events >= workload.events_per_instance(engine) * instances || Instant::now() > deadline {
            return Ok(stored);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the namespace holds, by kind: count and JSON bytes.
async fn stored(client: &kube::Client, workload: Workload) -> Result<Vec<Stored>> {
    let mut stored = Vec::new();
    for (kind, resource) in workload.stored_kinds() {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource);
        let (mut count, mut json_bytes) = (0, 0);
        let mut params = ListParams::default().limit(1000);
        loop {
            let page = api.list(&params).await?;
            count += page.items.len();
            json_bytes += page
                .items
                .iter()
                .map(|o| serde_json::to_vec(o).map_or(0, |v| v.len()))
                .sum::<usize>();
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
        stored.push(Stored {
            kind: kind.to_string(),
            count,
            json_bytes,
        });
    }
    Ok(stored)
}

/// The machine, for the report: CPU count and model.
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    format!("{cpus} CPUs, {model}")
}
