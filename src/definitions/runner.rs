//! Runs definitions as controllers of a [`Manager`]: from files at start, and from the
//! cluster while it runs — a new `ReconcilerDefinition` starts a controller, a changed one is
//! compiled and swapped in (a bad change keeps the last good version running and says so in
//! its status), a deleted one stops its controller. The controller of in-cluster definitions
//! is itself a `ResourceReconciler` with a `WithFinalizer` and a `SyncReconciler`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use kube::api::{DynamicObject, Patch, PatchParams};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tracing::{info, warn};

use super::build::{Inventory, controller_name, root_reconciler};
use super::cached_fields::child_kind_reads;
use super::compile::{CompiledDefinition, compile_at, kinds_to_check};
use super::crd::{definition_crd, definition_gvk};
use super::error::{DefinitionError, DefinitionErrors};
use super::load::{Loaded, parse_value};
use super::model::{ReconcilerDefinition, ServiceAccountRef};
use super::object_controller::{ObjectController, StartsFromObjects};
use super::published;
use super::schema::Schemas;
use crate::client::{Client, Identity};
use crate::object::{ConditionSet, Gvk, ObjectKey, READY};
use crate::reconcilers::{
    Config, Context, Draft, Outcome, Permission, ReconcileError, ReconcileResult,
    ResourceReconciler, RootReconciler,
};
use crate::runtime::{
    ControllerHandle, FALLBACK_RECHECK, Manager, ManagerError, RbacChanges, absent_account,
    missing, summarize,
};

/// The finalizer that keeps an in-cluster definition until its controller has stopped.
pub const FINALIZER: &str = "dynrec.dev/controller";
/// The field manager dynrec applies CRDs with.
const FIELD_MANAGER: &str = "dynrec";
/// How often an in-cluster definition's instance count is refreshed (status is written only
/// when it changed).
const STATUS_REFRESH: Duration = Duration::from_secs(5);
/// The conditions of an in-cluster definition (`Ready` follows them).
const DEFINITION_CONDITIONS: [&str; 2] = ["Compiled", "PermissionsReady"];

/// A definition whose controller runs.
struct Running {
    generation: Option<i64>,
    compiled: Arc<CompiledDefinition>,
    /// Where it was loaded from (a file, or the cluster object).
    source: String,
    /// The definition as its file holds it, for one loaded from a file (which its
    /// object in the cluster must keep).
    file: Option<Loaded>,
    /// The config its reconcilers act through (impersonating its ServiceAccount, if any).
    config: Config,
    /// What its reconcilers need on the API server.
    permissions: Vec<Permission>,
}

/// The last check of a definition's permissions.
#[derive(Clone)]
struct PermissionsCheck {
    /// When it was made.
    at: Instant,
    /// The count of RBAC changes then (see [`RbacChanges::count`]).
    rbac_count: u64,
    /// The refused verbs, a line each.
    refused: Vec<String>,
}

impl PermissionsCheck {
    /// Whether its answer still holds: no RBAC change since, and asked less than the
    /// fallback poll ago (for a missing permission, less than [`RbacChanges::recheck_after`]).
    fn holds(&self, rbac: &RbacChanges) -> bool {
        let poll = match self.refused.is_empty() {
            true => FALLBACK_RECHECK,
            false => rbac.recheck_after(),
        };
        self.rbac_count == rbac.count() && self.at.elapsed() < poll
    }
}

/// Who definitions act as when they name no ServiceAccount (the lockdown switches of
/// `dynrec run`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdentityPolicy {
    /// The ServiceAccount a definition naming none acts as (`--default-service-account`).
    pub default_service_account: Option<ServiceAccountRef>,
    /// Refuse definitions that name no ServiceAccount (`--require-service-account`).
    pub require_service_account: bool,
}

/// Starts, swaps and stops the controllers of definitions. Cheap to clone.
#[derive(Clone)]
pub struct Definitions {
    config: Config,
    handle: ControllerHandle,
    running: Arc<Mutex<BTreeMap<String, Running>>>,
    inventories: Arc<Mutex<BTreeMap<String, Inventory>>>,
    identities: IdentityPolicy,
    checks: Arc<Mutex<BTreeMap<String, PermissionsCheck>>>,
    /// The RBAC changes that make the checks stale.
    rbac: RbacChanges,
    /// Definitions loaded from files that wait for a kind the cluster does not serve yet.
    waiting_files: Arc<Mutex<BTreeMap<String, Loaded>>>,
    /// Definitions in the cluster that another process runs from its file, by name, with
    /// the file (logged once a file).
    left_to_their_files: Arc<Mutex<BTreeMap<String, String>>>,
    /// Whether every definition is compiled as with `spec.strict: true`.
    strict: bool,
}

/// Why a definition could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The definition is not valid.
    #[error(transparent)]
    Invalid(#[from] DefinitionErrors),
    /// Its parent CRD could not be installed.
    #[error("cannot install the CRD of {kind}: {error}")]
    Crd {
        /// The parent kind.
        kind: Gvk,
        /// The API error.
        error: Box<crate::client::Error>,
    },
    /// The manager refused the reconciler tree.
    #[error(transparent)]
    Manager(#[from] ManagerError),
    /// Another definition already has this name or reconciles this kind.
    #[error("{0}")]
    Conflict(String),
    /// A kind it reads or writes is in a group/version the cluster does not serve yet.
    #[error("{origin}: waiting for the cluster to serve {}", kinds.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    KindNotServed {
        /// Where the definition came from.
        origin: String,
        /// The kinds not served.
        kinds: Vec<Gvk>,
    },
    /// It names no ServiceAccount and dynrec requires one.
    #[error(
        "spec.serviceAccount is required: dynrec runs with --require-service-account, so a definition acts only as a ServiceAccount it names"
    )]
    ServiceAccountRequired,
}

impl StartError {
    /// Whether its message already names the file (and document) the definition came from,
    /// so a caller adding context names only the definition.
    pub fn names_its_source(&self) -> bool {
        matches!(self, Self::Invalid(_) | Self::KindNotServed { .. })
    }
}

impl Definitions {
    /// Definitions run by `manager`; `config` is the one their reconcilers are built with.
    pub fn new(manager: &Manager, config: &Config) -> Self {
        Self {
            config: config.clone(),
            handle: manager.handle(),
            running: Arc::default(),
            inventories: Arc::default(),
            strict: false,
            identities: IdentityPolicy::default(),
            checks: Arc::default(),
            rbac: manager.rbac_changes(),
            waiting_files: Arc::default(),
            left_to_their_files: Arc::default(),
        }
    }

    /// Definitions acting, when they name no ServiceAccount, as `policy` says.
    pub fn with_identities(mut self, policy: IdentityPolicy) -> Self {
        self.identities = policy;
        self
    }

    /// The config a definition's reconcilers act through: impersonating its ServiceAccount,
    /// else the default one, else (unless one is required) dynrec's own.
    fn config_for(&self, definition: &ReconcilerDefinition) -> Result<Config, StartError> {
        let account = definition.spec.service_account.as_ref();
        match account.or(self.identities.default_service_account.as_ref()) {
            Some(account) => Ok(self
                .config
                .acting_as(Identity::service_account(&account.namespace, &account.name))),
            None if self.identities.require_service_account => {
                Err(StartError::ServiceAccountRequired)
            }
            None => Ok(self.config.clone()),
        }
    }

    /// The same, compiling every definition as with `spec.strict: true` when `strict`
    /// (`--strict`): reads the checker cannot prove present are errors.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    fn client(&self) -> &Client {
        &self.config.client
    }

    /// Compiles `definition` against the schemas the cluster knows.
    pub async fn compile(&self, loaded: &Loaded) -> Result<CompiledDefinition, DefinitionErrors> {
        let mut schemas = Schemas::default();
        schemas
            .fetch(self.client().kube(), kinds_to_check(&loaded.definition))
            .await;
        let mut definition = loaded.definition.clone();
        definition.spec.strict |= self.strict;
        let mut compiled = compile_at(&definition, &schemas, &loaded.origins, &loaded.spellings)
            .map_err(|DefinitionErrors(errors)| {
                DefinitionErrors(errors.into_iter().map(|e| loaded.locate(e)).collect())
            })?;
        compiled.warnings = std::mem::take(&mut compiled.warnings)
            .into_iter()
            .map(|w| loaded.as_written(w))
            .collect();
        Ok(compiled)
    }

    /// Compiles `loaded`, installs its parent CRD if it defines one, and starts (or swaps in)
    /// its controller.
    pub async fn start(&self, loaded: &Loaded) -> Result<Arc<CompiledDefinition>, StartError> {
        let config = self.config_for(&loaded.definition)?;
        let compiled = Arc::new(self.compile(loaded).await?);
        self.check_conflicts(&compiled, &loaded.source)?;
        if let Some(crd) = &compiled.crd {
            let object: DynamicObject = serde_json::from_value(crd.clone())
                .map_err(|e| DefinitionError::new("spec.schema", e.to_string()))
                .map_err(DefinitionErrors::from)?;
            config
                .client
                .apply(&object, FIELD_MANAGER, true)
                .await
                .map_err(|error| StartError::Crd {
                    kind: compiled.for_kind.clone(),
                    error: Box::new(error),
                })?;
        }
        // The parent's CRD is in place while the definition waits for the others.
        if !compiled.not_served.is_empty() {
            return Err(StartError::KindNotServed {
                origin: published::source_of(loaded),
                kinds: compiled.not_served.iter().cloned().collect(),
            });
        }
        let inventory = self.inventory(&compiled.name);
        // The caches of its child kinds keep only what it reads of them.
        let mut config = config;
        config.client = config.client.reading_only(child_kind_reads(&compiled));
        let reconciler = root_reconciler(&compiled, &config, &inventory);
        let controller = controller_name(&compiled.name);
        let permissions = reconciler
            .setup()
            .map(|setup| setup.permissions(&controller))
            .unwrap_or_default();
        self.handle.register(reconciler)?;
        self.checks.lock().remove(&compiled.name);
        info!(definition = %compiled.name, kind = %compiled.for_kind, "definition running");
        self.running.lock().insert(
            compiled.name.clone(),
            Running {
                generation: compiled.generation,
                compiled: compiled.clone(),
                source: loaded.source.clone(),
                config,
                permissions,
                file: None,
            },
        );
        Ok(compiled)
    }

    /// Starts a definition loaded from a file, and shows it in the cluster: applies it as
    /// a `ReconcilerDefinition` annotated with its file (see [`SOURCE_ANNOTATION`](super::SOURCE_ANNOTATION)), whose
    /// status this controller keeps — at once, also while it waits for a kind the cluster
    /// does not serve yet (its status says which). A cluster object of that name that is not
    /// from this file is left alone (the definition runs, unseen, and a warning says why).
    /// Once running from this file, it is not started again.
    pub async fn start_from_file(
        &self,
        loaded: &Loaded,
    ) -> Result<Arc<CompiledDefinition>, StartError> {
        let name = &loaded.definition.metadata.name;
        if let Some(compiled) = self.running_from(loaded) {
            return Ok(compiled);
        }
        let started = self.start(loaded).await;
        let newly_shown = match &started {
            Ok(_) => {
                if let Some(running) = self.running.lock().get_mut(name) {
                    running.file = Some(loaded.clone());
                }
                self.waiting_files.lock().remove(name);
                true
            }
            Err(StartError::KindNotServed { .. }) => self
                .waiting_files
                .lock()
                .insert(name.clone(), loaded.clone())
                .is_none(),
            Err(_) => false,
        };
        if newly_shown && let Err(error) = self.publish(loaded).await {
            warn!(definition = %name, %error, "the definition is not shown in the cluster");
        }
        started
    }

    /// The compiled definition running from `loaded`'s file, as loaded.
    fn running_from(&self, loaded: &Loaded) -> Option<Arc<CompiledDefinition>> {
        let running = self.running.lock();
        let running = running.get(&loaded.definition.metadata.name)?;
        let file = running.file.as_ref()?;
        (file.source == loaded.source && file.definition.spec == loaded.definition.spec)
            .then(|| running.compiled.clone())
    }

    /// Applies a file's definition to the cluster, unless another object has its name.
    async fn publish(&self, loaded: &Loaded) -> Result<(), String> {
        let name = &loaded.definition.metadata.name;
        let existing = self
            .client()
            .api_reader()
            .get(&definition_gvk(), &ObjectKey::cluster(name.clone()))
            .await;
        let source = published::source_of(loaded);
        if let Ok(existing) = existing
            && published::annotated_source(&existing) != Some(source.as_str())
        {
            return Err(format!(
                "a ReconcilerDefinition {name:?} that is not from {source} exists in the cluster"
            ));
        }
        let object = published::cluster_object(loaded).map_err(|e| e.to_string())?;
        self.client()
            .apply(&object, FIELD_MANAGER, true)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// Says in the cluster that the definitions this process shows from its files no longer
    /// run (`Ready` `False`, reason `Stopped`); `dynrec run` calls it as it stops. No other
    /// process runs them (one that runs the cluster's definitions leaves them alone), so
    /// their objects must not go on saying they are ready.
    pub async fn mark_files_stopped(&self) {
        let files: Vec<Loaded> = {
            let running = self.running.lock();
            let waiting = self.waiting_files.lock();
            let running = running.values().filter_map(|r| r.file.clone());
            running.chain(waiting.values().cloned()).collect()
        };
        for file in files {
            if let Err(error) = self.mark_stopped(&file).await {
                warn!(definition = %file.definition.metadata.name, %error, "cannot say in the cluster that the definition stopped");
            }
        }
    }

    /// Marks the object that shows `file`'s definition not ready, if it still shows it.
    async fn mark_stopped(&self, file: &Loaded) -> Result<(), String> {
        let name = &file.definition.metadata.name;
        let key = ObjectKey::cluster(name.clone());
        let reader = self.client().api_reader();
        let mut object = reader
            .get(&definition_gvk(), &key)
            .await
            .map_err(|e| e.to_string())?;
        if !shows(&object, file) {
            return Ok(());
        }
        let message = format!(
            "not running: the dynrec run that loads it from {} stopped (to run it from the cluster, remove its annotation {})",
            published::source_of(file),
            published::SOURCE_ANNOTATION
        );
        ConditionSet::living(&DEFINITION_CONDITIONS)
            .manage(&mut object, jiff::Timestamp::now())
            .mark_false(READY, "Stopped", message)
            .map_err(|e| e.to_string())?;
        // What no controller's cache holds any more.
        if let Some(status) = object.data["status"].as_object_mut() {
            status.remove("instances");
        }
        let updated = self.client().update_status(&object).await;
        updated.map(drop).map_err(|e| e.to_string())
    }

    /// One definition a name (a file's and a cluster object's of one name would replace each
    /// other) and one definition a kind (two would fight over its status).
    fn check_conflicts(
        &self,
        compiled: &CompiledDefinition,
        source: &str,
    ) -> Result<(), StartError> {
        let running = self.running.lock();
        if let Some(same_name) = running.get(&compiled.name)
            && same_name.source != source
        {
            return Err(StartError::Conflict(format!(
                "{source}: the definition {:?} already runs from {}",
                compiled.name, same_name.source
            )));
        }
        let same_kind = running
            .iter()
            .find(|(name, r)| **name != compiled.name && r.compiled.for_kind == compiled.for_kind);
        match same_kind {
            Some((name, other)) => Err(StartError::Conflict(format!(
                "{source}: {} is already reconciled by the definition {name:?} ({})",
                compiled.for_kind, other.source
            ))),
            None => Ok(()),
        }
    }

    /// Stops the controller of the definition `name` when its object in the cluster is
    /// deleted; one loaded from a file keeps running (it is shown again at the next start).
    fn stop_deleted(&self, name: &str) {
        if let Some(Running {
            file: Some(file), ..
        }) = self.running.lock().get(name)
        {
            warn!(definition = %name, source = %file.source, "the definition's object was deleted from the cluster; it keeps running from its file");
            return;
        }
        self.stop(name);
    }

    /// Stops the controller of the definition `name`.
    pub fn stop(&self, name: &str) {
        self.checks.lock().remove(name);
        if self.running.lock().remove(name).is_some() {
            self.handle.remove(&controller_name(name));
            info!(definition = %name, "definition stopped");
        }
    }

    /// The kinds a definition's children have had.
    fn inventory(&self, name: &str) -> Inventory {
        self.inventories
            .lock()
            .entry(name.to_owned())
            .or_default()
            .clone()
    }

    /// Installs the `ReconcilerDefinition` CRD and waits until it is served.
    pub async fn install_crd(&self) -> Result<(), crate::client::Error> {
        let crd: DynamicObject = serde_json::from_value(definition_crd()).map_err(|source| {
            crate::client::Error::Serialize {
                what: "the ReconcilerDefinition CRD",
                source,
            }
        })?;
        self.client().install_crd(&crd, FIELD_MANAGER).await?;
        Ok(())
    }

    /// Registers the controller of in-cluster definitions with `manager`.
    pub fn register(&self, manager: &mut Manager) -> Result<(), ManagerError> {
        manager.register(self.reconciler())
    }

    /// The controller of in-cluster definitions.
    pub fn reconciler(&self) -> ResourceReconciler {
        let controller = ObjectController {
            kind: definition_gvk(),
            step: "ReconcilerDefinition",
            controller: "reconcilerdefinitions",
            finalizer: FINALIZER,
            conditions: &DEFINITION_CONDITIONS,
        };
        controller.reconciler(self, &self.config)
    }

    /// Compiles and (re)starts an in-cluster definition when its spec changed, and writes
    /// its status.
    async fn sync(&self, ctx: &Context, object: &mut Draft) -> Outcome {
        let name = object.metadata.name.clone().unwrap_or_default();
        let conditions = ConditionSet::living(&DEFINITION_CONDITIONS);
        self.seed_inventory(&name, &object.data["status"]["managedKinds"]);
        let current = self
            .running
            .lock()
            .get(&name)
            .map(|r| (r.generation, r.compiled.clone(), r.file.clone()));
        let waiting_file = self.waiting_files.lock().get(&name).cloned();
        let file_here = match (&current, &waiting_file) {
            (Some((_, _, Some(file))), _) | (_, Some(file)) => Some(file),
            _ => None,
        };
        match (file_here, published::annotated_source(object)) {
            (Some(file), _) if shows(object, file) => {}
            (Some(file), None) => return name_taken(ctx, object, file),
            // Another process's file definition of the same name: each runs its own.
            (Some(_), Some(_)) => return Outcome::ok(ReconcileResult::default()),
            (None, _) if self.run_from_another_file(&name, object) => {
                return Outcome::ok(ReconcileResult::default());
            }
            (None, _) => {}
        }
        let mut last_error = None;
        let compiled = match (current, waiting_file) {
            (Some((_, compiled, Some(file))), _) => {
                self.keep_as_in_file(ctx, object, &file).await;
                Some(compiled)
            }
            // A file's definition waiting for its kinds: the file, not this object, starts.
            (None, Some(file)) => {
                self.keep_as_in_file(ctx, object, &file).await;
                match self.start_from_file(&file).await {
                    Ok(compiled) => Some(compiled),
                    Err(error) => {
                        last_error = Some(refusal(&error));
                        None
                    }
                }
            }
            (current, _) => {
                self.start_from_cluster(object, current, &mut last_error)
                    .await
            }
        };
        let mut manager = conditions.manage(object, ctx.now());
        let marked = match (&last_error, &compiled) {
            (None, _) => manager.mark_true("Compiled", "Compiled", ""),
            (Some((reason, error)), Some(running)) => manager.mark_false(
                "Compiled",
                reason,
                format!(
                    "{error}\nthe last good version (generation {}) keeps running",
                    running.generation.unwrap_or_default()
                ),
            ),
            (Some((reason, error)), None) => manager.mark_false("Compiled", reason, error.clone()),
        };
        let granted = match &compiled {
            Some(_) => self.permissions_condition(&name).await,
            None => (
                "NotRunning",
                "nothing to check until the definition compiles".to_owned(),
                None,
            ),
        };
        let marked = marked.and_then(|()| match granted {
            (reason, message, Some(true)) => manager.mark_true("PermissionsReady", reason, message),
            (reason, message, Some(false)) => {
                manager.mark_false("PermissionsReady", reason, message)
            }
            (reason, message, None) => manager.mark_unknown("PermissionsReady", reason, message),
        });
        if let Err(err) = marked {
            return Outcome::err(ReconcileError::from_error(err));
        }
        let status = object.data["status"].as_object_mut();
        if let (Some(status), Some(compiled)) = (status, &compiled) {
            let instances = self
                .client()
                .cached_object_count(&compiled.for_kind)
                .unwrap_or_default();
            let kinds: Vec<String> = compiled.kinds().iter().map(ToString::to_string).collect();
            let managed: BTreeSet<String> = self
                .inventory(&name)
                .lock()
                .iter()
                .map(ToString::to_string)
                .collect();
            status.insert("for".into(), json!(compiled.for_kind.to_string()));
            status.insert("controller".into(), json!(controller_name(&name)));
            status.insert("watches".into(), json!(kinds));
            status.insert("managedKinds".into(), json!(managed));
            status.insert("instances".into(), json!(instances));
            let warnings: Vec<String> = compiled.warnings.iter().map(ToString::to_string).collect();
            match warnings.is_empty() {
                true => status.remove("warnings"),
                false => status.insert("warnings".into(), json!(warnings)),
            };
            status.insert("serviceAccount".into(), json!(self.acting_as(&name)));
        }
        let spec_for = &object.data["spec"]["for"];
        let declared_for = match (spec_for["apiVersion"].as_str(), spec_for["kind"].as_str()) {
            (Some(api_version), Some(kind)) => Some(format!("{api_version}/{kind}")),
            _ => None,
        };
        if let Some(status) = object.data["status"].as_object_mut() {
            // What it is for, also while it does not run (waiting for a kind, refused).
            if let (None, Some(declared)) = (&compiled, declared_for) {
                status.insert("for".into(), json!(declared));
            }
            match last_error {
                Some((_, error)) => status.insert("lastError".into(), json!(error)),
                None => status.remove("lastError"),
            };
        }
        Outcome::ok(ReconcileResult::requeue_after(STATUS_REFRESH))
    }

    /// Whether the definition `object` (`name`), which this process does not load from a
    /// file, is one another `dynrec run -f` shows from its file (annotated with it). That
    /// process runs it and keeps its status, so this one leaves it alone: running it too
    /// would reconcile its kind twice. Stops it here should it have run from the cluster
    /// before it was annotated.
    fn run_from_another_file(&self, name: &str, object: &DynamicObject) -> bool {
        let Some(source) = published::annotated_source(object) else {
            self.left_to_their_files.lock().remove(name);
            return false;
        };
        self.stop(name);
        let mut said = self.left_to_their_files.lock();
        if said.get(name).map(String::as_str) != Some(source) {
            info!(
                definition = %name,
                %source,
                "a definition another `dynrec run -f` runs from its file: not run here (to run it from the cluster once that process has stopped, remove its annotation {})",
                published::SOURCE_ANNOTATION
            );
            said.insert(name.to_owned(), source.to_owned());
        }
        true
    }

    /// Compiles and (re)starts an in-cluster definition whose spec changed (`current`: the
    /// running one's generation, compiled form and file); on refusal, records why in
    /// `last_error` and keeps the last good version.
    async fn start_from_cluster(
        &self,
        object: &Draft,
        current: Option<(Option<i64>, Arc<CompiledDefinition>, Option<Loaded>)>,
        last_error: &mut Option<(&'static str, String)>,
    ) -> Option<Arc<CompiledDefinition>> {
        let name = object.metadata.name.clone().unwrap_or_default();
        match current {
            Some((running, compiled, None)) if running == object.metadata.generation => {
                Some(compiled)
            }
            previous => {
                let loaded = parse_value(cluster_json(object)).map(|definition| {
                    Loaded::new(format!("ReconcilerDefinition {name}"), definition)
                });
                let started = match loaded {
                    Ok(loaded) => self.start(&loaded).await.map_err(|e| refusal(&e)),
                    Err(err) => Err(("Invalid", err.to_string())),
                };
                match started {
                    Ok(compiled) => Some(compiled),
                    Err((reason, message)) => {
                        if reason != "KindNotServed" {
                            warn!(definition = %name, error = %message, "definition refused");
                        } else if compiled_reason(object) != Some(reason) {
                            info!(definition = %name, %message, "definition waits for its kinds");
                        }
                        *last_error = Some((reason, message));
                        previous.map(|(_, compiled, _)| compiled)
                    }
                }
            }
        }
    }

    /// The ServiceAccount the running definition `name` acts as; `None` for dynrec's own
    /// identity (or when it does not run).
    pub fn identity(&self, name: &str) -> Option<Identity> {
        let running = self.running.lock();
        running.get(name)?.config.client.identity().cloned()
    }

    /// The user a running definition acts as: its ServiceAccount's, or `null` for dynrec's.
    fn acting_as(&self, name: &str) -> Option<String> {
        self.identity(name).map(|identity| identity.username())
    }

    /// The `PermissionsReady` condition of a running definition — reason, message, and
    /// whether every permission its steps need is granted (`None` when it cannot be
    /// asked) — from a check made now, unless the last one still holds (see
    /// [`PermissionsCheck::holds`]). A ServiceAccount that does not exist is said first.
    async fn permissions_condition(&self, name: &str) -> (&'static str, String, Option<bool>) {
        let fresh = self
            .checks
            .lock()
            .get(name)
            .and_then(|check| check.holds(&self.rbac).then(|| check.refused.clone()));
        let refused = match fresh {
            Some(refused) => refused,
            None => {
                let Some((client, permissions, kind)) = self.running.lock().get(name).map(|r| {
                    let kind = r.compiled.for_kind.clone();
                    (r.config.client.clone(), r.permissions.clone(), kind)
                }) else {
                    return ("NotRunning", String::new(), None);
                };
                if let Some(absent) = absent_account(&client).await {
                    self.checks.lock().remove(name);
                    return (
                        "ServiceAccountNotFound",
                        format!("{absent}; the controller starts once it is created"),
                        Some(false),
                    );
                }
                let rbac_count = self.rbac.count();
                let namespaced = client.resolve(&kind).await.is_ok_and(|r| r.namespaced);
                let refused = match missing(&client, &permissions, namespaced).await {
                    Ok(refused) => summarize(&refused),
                    Err(err) => {
                        return (
                            "CannotCheck",
                            format!("cannot ask the API server: {err}"),
                            None,
                        );
                    }
                };
                let check = PermissionsCheck {
                    at: Instant::now(),
                    rbac_count,
                    refused,
                };
                self.checks.lock().insert(name.to_owned(), check.clone());
                check.refused
            }
        };
        let who = self
            .acting_as(name)
            .unwrap_or_else(|| "dynrec's own identity".into());
        match refused.is_empty() {
            true => (
                "Granted",
                format!("{who} may do everything the steps need"),
                Some(true),
            ),
            false => (
                "Missing",
                format!(
                    "{who} is missing permissions; the controller starts once they are granted: {}",
                    refused.join("; ")
                ),
                Some(false),
            ),
        }
    }

    /// Reverts an edit made in the cluster to a definition loaded from a file: the file's
    /// spec is applied again, and a Warning event names the file to edit instead.
    async fn keep_as_in_file(&self, ctx: &Context, object: &Draft, file: &Loaded) {
        let in_cluster = parse_value(cluster_json(object)).map(|d| d.spec);
        if in_cluster.as_ref() == Ok(&file.definition.spec) {
            return;
        }
        let source = published::source_of(file);
        let message = format!(
            "this definition is loaded from {source}: edit the file, not the cluster object (the change was reverted)"
        );
        warn!(definition = %file.definition.metadata.name, %source, "an edit in the cluster was reverted");
        if let Err(error) = self.revert(file).await {
            warn!(definition = %file.definition.metadata.name, %error, "cannot revert the edit");
        }
        let _ = ctx
            .config()
            .recorder
            .warning(object, "EditReverted", message)
            .await;
    }

    /// Replaces the spec of a file's definition in the cluster with the file's (an apply
    /// would keep the fields another manager added).
    async fn revert(&self, file: &Loaded) -> Result<(), String> {
        let spec = serde_json::to_value(&file.definition.spec).map_err(|e| e.to_string())?;
        let patch: json_patch::Patch =
            serde_json::from_value(json!([{"op": "replace", "path": "/spec", "value": spec}]))
                .map_err(|e| e.to_string())?;
        let key = ObjectKey::cluster(file.definition.metadata.name.clone());
        self.client()
            .patch(
                &definition_gvk(),
                &key,
                &Patch::Json(patch),
                &PatchParams::default(),
            )
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// Adds the kinds an earlier process recorded in the definition's status.
    fn seed_inventory(&self, name: &str, recorded: &Value) {
        let kinds = recorded
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(|text| text.parse::<Gvk>().ok());
        self.inventory(name).lock().extend(kinds);
    }
}

/// Whether `object` is the one that shows `file`'s definition (annotated with the file).
fn shows(object: &DynamicObject, file: &Loaded) -> bool {
    published::annotated_source(object) == Some(published::source_of(file).as_str())
}

/// Leaves alone a cluster object whose name a definition this process loads from `file`
/// has: its spec is kept (it is not the file's to revert) and not run, and its status says
/// why.
fn name_taken(ctx: &Context, object: &mut Draft, file: &Loaded) -> Outcome {
    let message = format!(
        "not running: a definition of this name is loaded from {} by a dynrec run -f, which runs that one instead; rename one of them",
        published::source_of(file)
    );
    let conditions = ConditionSet::living(&DEFINITION_CONDITIONS);
    let marked =
        conditions
            .manage(object, ctx.now())
            .mark_false("Compiled", "NameTaken", message.clone());
    if let Err(err) = marked {
        return Outcome::err(ReconcileError::from_error(err));
    }
    if let Some(status) = object.data["status"].as_object_mut() {
        status.insert("lastError".into(), json!(message));
    }
    Outcome::ok(ReconcileResult::default())
}

/// The reason and message of a definition that did not start.
fn refusal(error: &StartError) -> (&'static str, String) {
    let reason = match error {
        StartError::KindNotServed { .. } => "KindNotServed",
        _ => "Invalid",
    };
    (reason, error.to_string())
}

/// The reason of the definition's `Compiled` condition as stored.
fn compiled_reason(object: &DynamicObject) -> Option<&str> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Compiled")?["reason"]
        .as_str()
}

/// A cluster object as the loader reads it: the spec and what it needs of metadata.
fn cluster_json(object: &DynamicObject) -> Value {
    json!({
        "apiVersion": object.types.as_ref().map(|t| t.api_version.clone()).unwrap_or_default(),
        "kind": object.types.as_ref().map(|t| t.kind.clone()).unwrap_or_default(),
        "metadata": {"name": object.metadata.name, "generation": object.metadata.generation},
        "spec": object.data["spec"],
    })
}

#[async_trait]
impl StartsFromObjects for Definitions {
    async fn sync_object(&self, ctx: &Context, object: &mut Draft) -> Outcome {
        self.sync(ctx, object).await
    }

    fn stop_object(&self, name: &str) {
        self.stop_deleted(name);
    }
}
