//! `dynrec rbac`: prints the least-privilege role the controllers of `dynrec run` (and the
//! definitions of `-f`), or of the examples, need — derived from their reconciler trees,
//! built against an in-process embedded API server that nothing else talks to.

// The examples' controllers, which `dynrec rbac --example` derives permissions for (each
// example uses more of its controller module than this does).
#[path = "../../examples/podspecable/controller.rs"]
#[allow(dead_code)]
mod podspecable;
#[path = "../../examples/singleton/controller.rs"]
#[allow(dead_code)]
mod singleton;
#[path = "../../examples/widgets/controller.rs"]
#[allow(dead_code)]
mod widgets;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use dynrec::apiserver::ApiServer;
use dynrec::client::{Client, Identity, Resolved};
use dynrec::definitions::{Definitions, controller_name};
use dynrec::object::Gvk;
use dynrec::rbac::{self, RoleKind, Rule};
use dynrec::reconcilers::{Config, Permission};
use dynrec::runtime::{Manager, ManagerOptions, manager_permissions, rbac_watch_permissions};

use super::definitions::{load, starting_error};

/// The example controllers `dynrec rbac --example` knows.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Example {
    /// `cargo run --example widgets`.
    Widgets,
    /// `cargo run --example podspecable`.
    Podspecable,
    /// `cargo run --example singleton`.
    Singleton,
}

/// Options of `dynrec rbac`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Definition files or directories (YAML or JSON) `dynrec run` will run; may be repeated.
    #[arg(short = 'f', long = "filename")]
    files: Vec<PathBuf>,
    /// The role of an example controller instead of `dynrec run`'s; may be repeated.
    #[arg(long, value_enum, conflicts_with = "files")]
    example: Vec<Example>,
    /// Print a Role in this namespace, plus a ClusterRole for the cluster-scoped kinds.
    #[arg(long)]
    namespace: Option<String>,
    /// The name of the role(s).
    #[arg(long, default_value = "dynrec")]
    name: String,
    /// Also print, for each definition of `-f` naming a ServiceAccount, a role and binding
    /// granting that account what the definition needs (left out of dynrec's role).
    #[arg(long, requires = "files")]
    per_definition: bool,
    /// dynrec's own ServiceAccount: with `--per-definition`, it may impersonate each
    /// definition's account through a Role in that account's namespace (not through its
    /// ClusterRole, which would cover every account of that name in every namespace).
    #[arg(
        long,
        value_name = "NAMESPACE/NAME",
        default_value = "dynrec-system/dynrec"
    )]
    dynrec_account: String,
}

/// Prints the role.
pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let server = ApiServer::new();
    let client = Client::new(server.client());
    let config = Config::new(client.clone(), "dynrec");
    let mut manager = Manager::new(client.clone(), ManagerOptions::default());
    // What the Manager itself needs, with leader election on as in a cluster.
    let mut permissions = manager_permissions(true);
    permissions.extend(rbac_watch_permissions());
    let mut accounts = BTreeMap::new();
    if args.example.is_empty() {
        let run = run_controllers(&args, &mut manager, &config).await?;
        permissions.extend(run.permissions);
        accounts = run.accounts;
    }
    for example in &args.example {
        permissions.extend(example_controllers(*example, &mut manager, &config).await?);
    }
    let dynrec_account = args
        .dynrec_account
        .split_once('/')
        .filter(|(namespace, name)| !namespace.is_empty() && !name.is_empty())
        .with_context(|| {
            format!(
                "--dynrec-account {:?}: expected NAMESPACE/NAME",
                args.dynrec_account
            )
        })?;
    if !args.per_definition {
        permissions.extend(
            accounts
                .values()
                .flat_map(|grant| grant.impersonation.clone()),
        );
    }
    let mut grants = Vec::new();
    for (controller, needs) in manager.handle().permissions_by_controller() {
        match accounts.get(&controller).filter(|_| args.per_definition) {
            Some(grant) => {
                permissions.extend(shared_watches(&needs));
                let needs: Vec<Permission> = needs.into_iter().chain(grant.crd.clone()).collect();
                grants.push((grant.clone(), needs));
            }
            None => permissions.extend(needs),
        }
    }
    let scopes = Scopes::of(
        &client,
        permissions.iter().chain(grants.iter().flat_map(|g| &g.1)),
    )
    .await;
    let rules = rbac::rules(&permissions, &scopes.plurals);
    let kind = match &args.namespace {
        Some(namespace) => RoleKind::Namespaced(namespace.clone()),
        None => RoleKind::Cluster,
    };
    let is_namespaced = |rule: &Rule| scopes.namespaced.contains(&rule.gvk);
    print!(
        "{}",
        rbac::render(&args.name, &rules, &kind, is_namespaced, &header(&args))
    );
    for (grant, needs) in grants {
        print!("---\n{}", grant.render(&needs, &scopes));
        print!(
            "---\n{}",
            grant.render_impersonation(dynrec_account, &scopes)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What dynrec's own identity needs of a definition acting as an account: `list` and
/// `watch` of every kind it watches, cluster-wide — dynrec keeps one watch per kind for
/// every definition, while each reads and writes as its account.
fn shared_watches(needs: &[Permission]) -> Vec<Permission> {
    needs
        .iter()
        .filter(|p| p.subresource.is_empty() && p.verbs.iter().any(|v| v == "watch"))
        .map(|p| {
            let by = format!("{} (the shared watch, opened as dynrec)", p.by);
            Permission::new(&p.gvk, "", &["list", "watch"], by)
        })
        .collect()
}

/// The plurals kinds are served under, and which kinds are namespaced.
struct Scopes {
    plurals: BTreeMap<Gvk, String>,
    namespaced: BTreeSet<Gvk>,
}

impl Scopes {
    /// Those of the kinds `permissions` name (kinds the server does not know are guessed).
    async fn of(client: &Client, permissions: impl Iterator<Item = &Permission>) -> Self {
        let mut scopes = Scopes {
            plurals: BTreeMap::new(),
            namespaced: BTreeSet::new(),
        };
        for permission in permissions {
            if let Ok(resolved) = client.resolver().resolve(&permission.gvk).await {
                scopes
                    .plurals
                    .insert(permission.gvk.clone(), resolved.resource.plural.clone());
                if resolved.namespaced {
                    scopes.namespaced.insert(permission.gvk.clone());
                }
            }
        }
        scopes
    }
}

/// A definition acting as a ServiceAccount, whose needs `--per-definition` grants that
/// account.
#[derive(Clone)]
struct Grant {
    definition: String,
    account: Identity,
    /// Whether the definition's kind is namespaced (its namespaced needs are then granted
    /// in the account's namespace, where its preflight checks them).
    namespaced: bool,
    /// Applying the CRD the definition defines, which it does as the account.
    crd: Option<Permission>,
    /// What dynrec needs to act as the account: `impersonate` it, and `get` it (whether it
    /// exists).
    impersonation: Vec<Permission>,
}

impl Grant {
    /// A Role and RoleBinding in the account's namespace letting dynrec's own account
    /// (`dynrec`: namespace, name) impersonate it; kube asks about an impersonated
    /// ServiceAccount in its namespace, so the Role reaches that account alone.
    fn render_impersonation(&self, dynrec: (&str, &str), scopes: &Scopes) -> String {
        let name = format!("dynrec-impersonate-{}", self.definition);
        let rules = rbac::rules(&self.impersonation, &scopes.plurals);
        let header = format!(
            "dynrec may act as the ServiceAccount of the definition {:?}, and no other of its name.",
            self.definition
        );
        let namespace = Some(self.account.namespace.as_str());
        rbac::render_grant(&name, &rules, namespace, |_| true, dynrec, &header)
    }

    /// Roles and bindings granting the account `needs`: in its namespace (or cluster-wide),
    /// and in each namespace a child template names.
    fn render(&self, needs: &[Permission], scopes: &Scopes) -> String {
        let name = format!("dynrec-{}", self.definition);
        let account = (self.account.namespace.as_str(), self.account.name.as_str());
        let is_namespaced = |rule: &Rule| scopes.namespaced.contains(&rule.gvk);
        let header = |whom: &str| {
            format!(
                "What the definition {:?} needs, granted to the ServiceAccount it acts as{whom}.",
                self.definition
            )
        };
        let (elsewhere, here): (Vec<Permission>, Vec<Permission>) = needs
            .iter()
            .cloned()
            .partition(|p| p.namespace.is_some() && scopes.namespaced.contains(&p.gvk));
        let own = self.namespaced.then_some(self.account.namespace.as_str());
        let rules = rbac::rules(&here, &scopes.plurals);
        let mut out = rbac::render_grant(&name, &rules, own, is_namespaced, account, &header(""));
        let mut namespaces: BTreeMap<&str, Vec<Permission>> = BTreeMap::new();
        for permission in &elsewhere {
            let namespace = permission.namespace.as_deref().unwrap_or_default();
            namespaces
                .entry(namespace)
                .or_default()
                .push(permission.clone());
        }
        for (namespace, needs) in namespaces {
            let rules = rbac::rules(&needs, &scopes.plurals);
            let whom = format!(" in the namespace {namespace} its children are written to");
            out.push_str("---\n");
            out.push_str(&rbac::render_grant(
                &name,
                &rules,
                Some(namespace),
                is_namespaced,
                account,
                &header(&whom),
            ));
        }
        out
    }
}

/// The comment on top: the command that printed it.
fn header(args: &Args) -> String {
    let mut command = vec!["dynrec rbac".to_string()];
    command.extend(
        args.example
            .iter()
            .map(|e| format!("--example {e:?}").to_lowercase()),
    );
    command.extend(args.files.iter().map(|f| format!("-f {}", f.display())));
    if let Some(namespace) = &args.namespace {
        command.push(format!("--namespace {namespace}"));
    }
    if args.name != "dynrec" {
        command.push(format!("--name {}", args.name));
    }
    if args.per_definition {
        command.push("--per-definition".into());
    }
    if args.dynrec_account != "dynrec-system/dynrec" {
        command.push(format!("--dynrec-account {}", args.dynrec_account));
    }
    format!(
        "Generated by `{}`: what the controllers need, each verb with the reconcilers needing it.",
        command.join(" ")
    )
}

/// What `dynrec run` needs besides its controllers, and the definitions acting as
/// ServiceAccounts, by controller name.
struct RunNeeds {
    permissions: Vec<Permission>,
    accounts: BTreeMap<String, Grant>,
}

/// Registers `dynrec run`'s controllers (in-cluster definitions, and those of `-f`); returns
/// what it needs besides them: applying CRDs, and, for each ServiceAccount a definition
/// names, `impersonate` on it and SubjectAccessReviews (its preflight).
async fn run_controllers(
    args: &Args,
    manager: &mut Manager,
    config: &Config,
) -> anyhow::Result<RunNeeds> {
    let loaded = load(&args.files)?;
    let definitions = Definitions::new(manager, config);
    definitions.install_crd().await?;
    definitions.register(manager)?;
    let mut needs = RunNeeds {
        permissions: vec![Permission::new(
            &Resolved::crd().gvk,
            "",
            &["create", "patch"],
            "dynrec run (applies the ReconcilerDefinition CRD and the CRDs definitions define)",
        )],
        accounts: BTreeMap::new(),
    };
    for definition in &loaded {
        let compiled = definitions
            .start(definition)
            .await
            .map_err(|error| starting_error(definition, error))?;
        let Some(account) = definitions.identity(&compiled.name) else {
            continue;
        };
        let why = format!("dynrec run (the definition {:?} acts as it)", compiled.name);
        let exists = format!(
            "dynrec run (whether the ServiceAccount of the definition {:?} exists)",
            compiled.name
        );
        let impersonation = vec![
            Permission::new(&service_accounts(), "", &["impersonate"], why)
                .named([account.name.clone()]),
            Permission::new(&service_accounts(), "", &["get"], exists)
                .named([account.name.clone()]),
        ];
        needs.permissions.push(Permission::new(
            &subject_access_reviews(),
            "",
            &["create"],
            "dynrec run (the preflight of definitions acting as ServiceAccounts)",
        ));
        let namespaced = config
            .client
            .resolve(&compiled.for_kind)
            .await
            .is_ok_and(|r| r.namespaced);
        let crd = compiled.crd.as_ref().map(|crd| {
            let name = crd["metadata"]["name"].as_str().unwrap_or_default();
            let why = "dynrec run (applies the CRD the definition defines, as its account)";
            Permission::new(&Resolved::crd().gvk, "", &["create", "patch"], why)
                .named([name.to_owned()])
        });
        let grant = Grant {
            definition: compiled.name.clone(),
            account,
            namespaced,
            crd,
            impersonation,
        };
        needs
            .accounts
            .insert(controller_name(&compiled.name), grant);
    }
    Ok(needs)
}

fn service_accounts() -> Gvk {
    Gvk::new("", "v1", "ServiceAccount")
}

fn subject_access_reviews() -> Gvk {
    Gvk::new("authorization.k8s.io", "v1", "SubjectAccessReview")
}

/// Registers an example's controllers; returns what it needs besides them.
async fn example_controllers(
    example: Example,
    manager: &mut Manager,
    config: &Config,
) -> anyhow::Result<Vec<Permission>> {
    match example {
        Example::Widgets => {
            widgets::install_crd(config.client.kube()).await?;
            widgets::register(manager, config)?;
            Ok(vec![Permission::new(
                &Resolved::crd().gvk,
                "",
                &["create", "patch"],
                "the widgets example (applies the Widget CRD)",
            )])
        }
        Example::Singleton => {
            singleton::register(manager, config)?;
            Ok(Vec::new())
        }
        Example::Podspecable => {
            // Its controllers start per kind as the duck follower finds them: register those
            // of the kinds that implement the duck now.
            let before = manager.handle().names().len();
            let follower = podspecable::register_now(manager, config).await?;
            anyhow::ensure!(
                manager.handle().names().len() > before,
                "no kind implements PodSpecable"
            );
            Ok(follower)
        }
    }
}
