//! Duck controllers: one per kind that implements a registered duck, started and stopped
//! through the manager's [`ControllerHandle`] as CRDs appear, change and go.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use kube::api::DynamicObject;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use super::{DuckType, KindMatch, Miss, Verdict, match_builtins, match_crd};
use crate::client::{Client, Error, Resolved};
use crate::object::Gvk;
use crate::reconcilers::{Config, ResourceReconciler};
use crate::runtime::{ControllerHandle, Manager};

/// Builds the root reconciler of a duck for one resolved kind.
pub type DuckFactory = Arc<dyn Fn(&Gvk, &Config) -> ResourceReconciler + Send + Sync>;

/// Duck reconcilers registered once each, run for every kind that implements their duck.
///
/// Each controller is named `{Duck}/{Kind}.{version}.{group}` and never owns its kind's
/// status (see [`ResourceReconciler::status_owned`]).
pub struct DuckControllers {
    client: Client,
    config: Config,
    handle: ControllerHandle,
    ducks: Vec<(DuckType, DuckFactory)>,
}

/// The kinds matching each duck, and the near-misses, found in one look at the cluster.
struct Survey {
    matches: Vec<KindMatch>,
    near_misses: Vec<(String, Gvk, Miss)>,
}

impl DuckControllers {
    /// Duck controllers on `manager`, built with `config`.
    pub fn new(manager: &Manager, config: &Config) -> Self {
        Self {
            client: manager.client().clone(),
            config: config.clone(),
            handle: manager.handle(),
            ducks: Vec::new(),
        }
    }

    /// Runs the reconciler `factory` builds for every kind that implements `duck`.
    pub fn register(
        mut self,
        duck: DuckType,
        factory: impl Fn(&Gvk, &Config) -> ResourceReconciler + Send + Sync + 'static,
    ) -> Self {
        self.ducks.push((duck, Arc::new(factory)));
        self
    }

    /// Follows the cluster's CRDs (through the shared CRD cache) and keeps one controller
    /// per matching kind; the task ends when aborted.
    pub fn start(self) -> JoinHandle<()> {
        tokio::spawn(async move {
            if let Err(err) = self.follow().await {
                warn!(%err, "duck controllers stopped following CRDs");
            }
        })
    }

    async fn follow(self) -> Result<(), Error> {
        let ducks: Vec<DuckType> = self.ducks.iter().map(|(d, _)| d.clone()).collect();
        let builtins = served_builtins(&self.client, &ducks).await;
        let cache = self.client.cache(&Resolved::crd().gvk).await?;
        let mut events = cache.subscribe();
        let mut running: BTreeMap<String, Gvk> = BTreeMap::new();
        let mut logged: HashSet<(String, Gvk, Miss)> = HashSet::new();
        loop {
            if cache.is_ready() {
                let crds: Vec<DynamicObject> = cache
                    .list(&Default::default())
                    .iter()
                    .map(|c| (**c).clone())
                    .collect();
                let survey = survey(&ducks, &crds, &builtins);
                for (duck, gvk, miss) in &survey.near_misses {
                    if logged.insert((duck.clone(), gvk.clone(), miss.clone())) {
                        info!(duck, %gvk, %miss, "kind does not implement the duck");
                    }
                }
                self.reconcile(&survey.matches, &mut running);
            }
            match events.recv().await {
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return Ok(()),
            }
        }
    }

    /// Starts a controller for each new match and stops those whose kind no longer matches.
    fn reconcile(&self, matches: &[KindMatch], running: &mut BTreeMap<String, Gvk>) {
        let wanted: BTreeMap<String, &KindMatch> = matches
            .iter()
            .map(|m| (controller_name(&m.duck, &m.gvk), m))
            .collect();
        running.retain(|name, gvk| {
            let keep = wanted.contains_key(name);
            if !keep {
                info!(controller = name, %gvk, "kind no longer implements the duck; stopping");
                self.handle.remove(name);
            }
            keep
        });
        for (name, found) in wanted {
            if running.contains_key(&name) {
                continue;
            }
            let Some((_, factory)) = self.ducks.iter().find(|(d, _)| d.name() == found.duck) else {
                continue;
            };
            let reconciler = factory(&found.gvk, &self.config)
                .status_owned(false)
                .named(name.clone());
            match self
                .handle
                .register(found.gvk.clone(), reconciler, &self.config)
            {
                Ok(()) => {
                    info!(controller = name, duck = found.duck, gvk = %found.gvk, reason = %found.reason,
                        "kind implements the duck; starting");
                    running.insert(name, found.gvk.clone());
                }
                Err(err) => warn!(controller = name, %err, "duck controller not started"),
            }
        }
    }
}

/// The controller of `duck` for `gvk`.
fn controller_name(duck: &str, gvk: &Gvk) -> String {
    format!("{duck}/{}.{}.{}", gvk.kind, gvk.version, gvk.group)
}

/// The ducks' built-in kinds the cluster serves.
async fn served_builtins(client: &Client, ducks: &[DuckType]) -> HashSet<Gvk> {
    let mut served = HashSet::new();
    for gvk in ducks.iter().flat_map(DuckType::builtins) {
        if client.resolve(gvk).await.is_ok() {
            served.insert(gvk.clone());
        }
    }
    served
}

/// Matches every duck against the built-ins served and the CRDs.
fn survey(ducks: &[DuckType], crds: &[DynamicObject], builtins: &HashSet<Gvk>) -> Survey {
    let mut survey = Survey {
        matches: Vec::new(),
        near_misses: Vec::new(),
    };
    for duck in ducks {
        survey
            .matches
            .extend(match_builtins(duck, |gvk| builtins.contains(gvk)));
        for crd in crds {
            match match_crd(duck, crd) {
                Some((gvk, Verdict::Match(reason))) => survey.matches.push(KindMatch {
                    duck: duck.name().to_string(),
                    gvk,
                    reason,
                }),
                Some((gvk, Verdict::Miss(miss))) if miss.is_near() => {
                    survey
                        .near_misses
                        .push((duck.name().to_string(), gvk, miss))
                }
                _ => {}
            }
        }
    }
    survey
}

/// The kinds of the cluster that implement each duck, and why (for `dynrec ducks`).
pub async fn cluster_matches(client: &Client, ducks: &[DuckType]) -> Result<Vec<KindMatch>, Error> {
    let builtins = served_builtins(client, ducks).await;
    let crds: Vec<_> = (client
        .list(&Resolved::crd().gvk, &Default::default())
        .await?)
        .into_iter()
        .map(std::sync::Arc::unwrap_or_clone)
        .collect();
    Ok(survey(ducks, &crds, &builtins).matches)
}
