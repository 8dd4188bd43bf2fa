//! Duck controllers: one per kind that implements a registered duck, started and stopped
//! through the manager's [`ControllerHandle`] as CRDs and `DuckMapping`s appear, change and
//! go.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kube::api::DynamicObject;
use tokio::sync::watch;
use tracing::{info, warn};

use super::mapping_status;
use super::survey::{Catalog, Survey};
use super::{DuckMapping, DuckType, KindMatch, mapping_crd, mapping_gvk};
use crate::client::{Cache, CacheEvents, Client, Error, Resolved};
use crate::object::Gvk;
use crate::reconcilers::{Config, Permission, ResourceReconciler, StatusPolicy};
use crate::runtime::{
    ControllerHandle, Manager, Metrics, RbacChanges, Readiness, Waiting, wait_until_allowed,
};

/// The field manager dynrec installs the `DuckMapping` CRD as.
const FIELD_MANAGER: &str = "dynrec-ducks";

/// The follower's component in `/readyz` while it waits for a permission.
const FOLLOWER: &str = "duck follower";

/// How long start-up waits for the `DuckMapping` kind to be served after installing it.
const MAPPING_KIND_WAIT: Duration = Duration::from_secs(10);

/// Builds the root reconciler of a duck for one matching kind (its [`KindMatch::projection`]
/// says where the kind keeps the duck's fields).
pub trait DuckFactory:
    Fn(&KindMatch, &Config) -> ResourceReconciler + Send + Sync + 'static
{
}

impl<F> DuckFactory for F where
    F: Fn(&KindMatch, &Config) -> ResourceReconciler + Send + Sync + 'static
{
}

/// Duck reconcilers registered once each, run for every kind that implements their duck.
///
/// Each controller is named `{Duck}/{Kind}.{version}.{group}` (or with the prefix given to
/// [`DuckControllers::register_as`]) and never owns its kind's status (see
/// [`StatusPolicy::Shared`](crate::reconcilers::StatusPolicy::Shared)). Controllers of several duck reconcilers on one
/// kind share the kind's watch (the client's shared cache).
pub struct DuckControllers {
    client: Client,
    config: Config,
    handle: ControllerHandle,
    metrics: Metrics,
    readiness: Readiness,
    rbac: RbacChanges,
    registrations: Vec<Registration>,
    kinds: watch::Sender<Vec<KindMatch>>,
}

/// One duck reconciler: the prefix of its controllers' names, its duck and its factory.
struct Registration {
    prefix: String,
    duck: DuckType,
    factory: Arc<dyn DuckFactory>,
}

impl DuckControllers {
    /// Duck controllers on `manager`, built with `config`.
    pub fn new(manager: &Manager, config: &Config) -> Self {
        Self {
            client: manager.client().clone(),
            config: config.clone(),
            handle: manager.handle(),
            metrics: manager.metrics(),
            readiness: manager.readiness(),
            rbac: manager.rbac_changes(),
            registrations: Vec::new(),
            kinds: watch::Sender::new(Vec::new()),
        }
    }

    /// Runs the reconciler `factory` builds for every kind that implements `duck`, in
    /// controllers named after the duck.
    pub fn register(self, duck: DuckType, factory: impl DuckFactory) -> Self {
        let prefix = duck.name().to_string();
        self.register_as(prefix, duck, factory)
    }

    /// Like [`DuckControllers::register`], with controllers named `{prefix}/{Kind}...`: for
    /// a second reconciler of the same duck.
    pub fn register_as(
        mut self,
        prefix: impl Into<String>,
        duck: DuckType,
        factory: impl DuckFactory,
    ) -> Self {
        self.registrations.push(Registration {
            prefix: prefix.into(),
            duck,
            factory: Arc::new(factory),
        });
        self
    }

    /// The kinds the duck controllers run for, updated as they start and stop.
    pub fn kinds(&self) -> watch::Receiver<Vec<KindMatch>> {
        self.kinds.subscribe()
    }

    /// Installs the `DuckMapping` CRD (when allowed), then follows the cluster's CRDs and
    /// mappings and keeps one controller per matching kind, for as long as `manager` runs.
    pub fn start(self, manager: &mut Manager) {
        manager.run_alongside(async move {
            if let Err(err) = self.follow().await {
                warn!(%err, "duck controllers stopped following CRDs");
            }
        });
    }

    /// Registers a controller for each kind that implements a registered duck now, and
    /// follows nothing (for `dynrec rbac`, which lists what the controllers need).
    pub async fn register_now(self) -> Result<(), Error> {
        let survey = cluster_survey(&self.client, &self.ducks()).await?;
        self.reconcile(&survey.matches, &mut BTreeMap::new());
        Ok(())
    }

    /// What the follower needs besides its controllers: to install the `DuckMapping` CRD,
    /// to follow CRDs and mappings, and to write the mappings' status.
    pub fn follower_permissions() -> Vec<Permission> {
        let by = "the duck follower";
        vec![
            Permission::new(
                &Resolved::crd().gvk,
                "",
                &["get", "list", "watch", "create", "patch"],
                format!("{by} (follows CRDs, applies the DuckMapping CRD)"),
            ),
            Permission::new(&mapping_gvk(), "", &["get", "list", "watch"], by),
            Permission::new(&mapping_gvk(), "status", &["patch"], by),
        ]
    }

    /// The registered ducks, each once.
    fn ducks(&self) -> Vec<DuckType> {
        let mut ducks: Vec<DuckType> = Vec::new();
        for registration in &self.registrations {
            if !ducks.iter().any(|d| d.name() == registration.duck.name()) {
                ducks.push(registration.duck.clone());
            }
        }
        ducks
    }

    async fn follow(self) -> Result<(), Error> {
        let ducks = self.ducks();
        // As the manager's preflight does for controllers: wait until allowed, naming what
        // is missing in /readyz (the task ends with the manager).
        let (_running, stop) = watch::channel(false);
        let needs = Self::follower_permissions();
        let waiting = Waiting {
            readiness: &self.readiness,
            component: FOLLOWER,
            rbac: &self.rbac,
        };
        if wait_until_allowed(&self.client, &needs, false, waiting, stop).await {
            self.readiness.remove(FOLLOWER);
        }
        // Without the right to install the CRD, existing mappings apply (once served).
        let wait = match install_mapping_crd(&self.client).await {
            Ok(()) => MAPPING_KIND_WAIT,
            Err(err) => {
                warn!(%err, "cannot install the DuckMapping CRD; only existing mappings apply");
                Duration::ZERO
            }
        };
        let crds = self.client.cache(&Resolved::crd().gvk).await?;
        let mut crd_events = crds.subscribe();
        crds.wait_until_ready().await;
        let mut catalog = Catalog {
            crds: cached(&crds),
            ..Catalog::default()
        };
        catalog.read_builtins(&self.client, &ducks).await;
        let mut mappings = Mappings::open(&self.client, wait).await;
        let mut running: BTreeMap<String, KindMatch> = BTreeMap::new();
        let mut logged: HashSet<String> = HashSet::new();
        loop {
            if mappings.is_none() && self.client.resolver().known(&mapping_gvk()).is_some() {
                mappings = Mappings::open(&self.client, Duration::ZERO).await;
            }
            catalog.crds = cached(&crds);
            let mapping_objects = mappings
                .as_ref()
                .map(|m| cached(&m.cache))
                .unwrap_or_default();
            catalog.mappings = valid_mappings(&mapping_objects, &mut logged);
            let survey = catalog.survey(&ducks);
            for near in &survey.near_misses {
                if !logged.insert(near.to_string()) {
                    continue;
                }
                match &near.mapping {
                    Some(mapping) => {
                        warn!(duck = near.duck, gvk = %near.gvk, mapping, miss = %near.miss,
                        "DuckMapping does not fit its kind; no controller")
                    }
                    None => info!(duck = near.duck, gvk = %near.gvk, miss = %near.miss,
                        "kind does not implement the duck"),
                }
            }
            self.reconcile(&survey.matches, &mut running);
            mapping_status::write(&self.client, &mapping_objects, &ducks, &survey, &mut logged)
                .await;
            let mapping_event = async {
                match mappings.as_mut() {
                    Some(m) => m.events.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = crd_events.recv() => if event.is_none() {
                    return Ok(());
                },
                event = mapping_event => if event.is_none() {
                    mappings = None;
                },
            }
        }
    }

    /// Starts a controller for each new match, restarts those whose projection changed,
    /// and stops those whose kind no longer matches.
    fn reconcile(&self, matches: &[KindMatch], running: &mut BTreeMap<String, KindMatch>) {
        let wanted: BTreeMap<String, (&Registration, &KindMatch)> = self
            .registrations
            .iter()
            .flat_map(|r| {
                let of_duck = matches.iter().filter(|m| m.duck == r.duck.name());
                of_duck.map(move |m| (controller_name(&r.prefix, &m.gvk), (r, m)))
            })
            .collect();
        running.retain(|name, found| {
            let keep = wanted.contains_key(name);
            if !keep {
                info!(controller = name, gvk = %found.gvk, "kind no longer implements the duck; stopping");
                self.handle.remove(name);
                self.metrics.remove_duck_kind(name);
            }
            keep
        });
        for (name, (registration, found)) in wanted {
            if let Some(current) = running.get_mut(&name)
                && current.projection == found.projection
            {
                // Still matching, maybe for another reason (a label added): no restart.
                if current.reason != found.reason {
                    self.set_metric(&name, found);
                    *current = found.clone();
                }
                continue;
            }
            let reconciler = (registration.factory)(found, &self.config)
                .status_policy(StatusPolicy::Shared)
                .named(name.clone());
            match self.handle.register(reconciler) {
                Ok(()) => {
                    info!(controller = name, duck = found.duck, gvk = %found.gvk, reason = %found.reason,
                        "kind implements the duck; starting");
                    self.set_metric(&name, found);
                    running.insert(name, found.clone());
                }
                Err(err) => warn!(controller = name, %err, "duck controller not started"),
            }
        }
        let kinds: Vec<KindMatch> = running.values().cloned().collect();
        self.kinds.send_if_modified(|current| {
            let changed = *current != kinds;
            *current = kinds;
            changed
        });
    }

    /// Reports in `/metrics` that the controller `name` runs for `found`, and why.
    fn set_metric(&self, name: &str, found: &KindMatch) {
        let (gvk, reason) = (found.gvk.to_string(), found.reason.to_string());
        self.metrics.set_duck_kind(name, &found.duck, &gvk, &reason);
    }
}

/// The cluster's `DuckMapping`s, through their shared cache.
struct Mappings {
    cache: Cache,
    events: CacheEvents,
}

impl Mappings {
    /// The mappings' cache, if the kind is served (waiting at most `wait` until it is).
    async fn open(client: &Client, wait: Duration) -> Option<Self> {
        let gvk = mapping_gvk();
        let served = if wait.is_zero() {
            client.resolve(&gvk).await.is_ok()
        } else {
            let waited = tokio::time::timeout(wait, client.resolver().wait_for(&gvk)).await;
            matches!(waited, Ok(Ok(_)))
        };
        if !served {
            return None;
        }
        let cache = client.cache(&gvk).await.ok()?;
        let events = cache.subscribe();
        cache.wait_until_ready().await;
        Some(Self { cache, events })
    }
}

/// The valid mappings among `objects`; each invalid one is logged once per change.
fn valid_mappings(objects: &[DynamicObject], logged: &mut HashSet<String>) -> Vec<DuckMapping> {
    let mut valid = Vec::new();
    for object in objects {
        match DuckMapping::from_object(object) {
            Ok(mapping) => valid.push(mapping),
            Err(err) => {
                if logged.insert(err.to_string()) {
                    warn!(%err, "DuckMapping ignored");
                }
            }
        }
    }
    valid
}

fn cached(cache: &Cache) -> Vec<DynamicObject> {
    owned(cache.list(&Default::default()))
}

/// Objects shared with a cache, as copies the survey can keep.
fn owned(objects: Vec<Arc<DynamicObject>>) -> Vec<DynamicObject> {
    objects.into_iter().map(Arc::unwrap_or_clone).collect()
}

/// Installs (or updates) the `DuckMapping` CRD.
pub async fn install_mapping_crd(client: &Client) -> Result<(), Error> {
    let crd: DynamicObject =
        serde_json::from_value(mapping_crd()).map_err(|source| Error::Serialize {
            what: "the DuckMapping CRD",
            source,
        })?;
    client.apply(&crd, FIELD_MANAGER, true).await?;
    Ok(())
}

/// The controller named `prefix` (the duck's name by default) for `gvk`:
/// `PodSpecable/Deployment.v1.apps`, or `PodSpecable/ReplicationController.v1` in the core
/// group.
fn controller_name(prefix: &str, gvk: &Gvk) -> String {
    if gvk.group.is_empty() {
        format!("{prefix}/{}.{}", gvk.kind, gvk.version)
    } else {
        format!("{prefix}/{}.{}.{}", gvk.kind, gvk.version, gvk.group)
    }
}

/// The kinds of the cluster that implement each duck and why, and the near-misses (for
/// `dynrec ducks`): reads the `DuckMapping`s when the kind is served, installs nothing.
pub async fn cluster_survey(client: &Client, ducks: &[DuckType]) -> Result<Survey, Error> {
    let mut catalog = Catalog {
        crds: owned(
            client
                .list(&Resolved::crd().gvk, &Default::default())
                .await?,
        ),
        ..Catalog::default()
    };
    catalog.read_builtins(client, ducks).await;
    if client.resolve(&mapping_gvk()).await.is_ok() {
        let objects = owned(client.list(&mapping_gvk(), &Default::default()).await?);
        catalog.mappings = valid_mappings(&objects, &mut HashSet::new());
    }
    Ok(catalog.survey(ducks))
}
