//! The controller of the ResourceGraphDefinitions stored in a cluster (`dynrec run
//! --kro`): each RGD is compiled and started as a definition (its instance CRD created,
//! its controller registered, a change swapped in), and its status is written as KRO
//! writes it — `state: Active`, the conditions `GraphAccepted`, `KindReady`,
//! `ControllerReady` and `Ready`, and `topologicalOrder`. Deleting an RGD stops its
//! controller and leaves its CRD and instances (KRO's default, CRD deletion disabled).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kube::api::DynamicObject;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tracing::{info, warn};

use super::model::{GROUP, KIND, VERSION};
use super::translate::FINALIZER;
use crate::definitions::object_controller::{ObjectController, StartsFromObjects};
use crate::definitions::{CompiledDefinition, Definitions, StartError, parse_rgd_value};
use crate::object::{ConditionSet, Gvk};
use crate::reconcilers::{
    Config, Context, Draft, Outcome, ReconcileError, ReconcileResult, ResourceReconciler,
};
use crate::runtime::{Manager, ManagerError};

/// KRO's conditions of an RGD (`Ready` follows them).
const RGD_CONDITIONS: [&str; 3] = ["GraphAccepted", "KindReady", "ControllerReady"];
/// How often an RGD whose kinds are not all served yet is tried again.
const RETRY: Duration = Duration::from_secs(2);
/// The field manager of the RGD CRD.
const FIELD_MANAGER: &str = "dynrec";

/// The kind of an RGD.
pub fn rgd_gvk() -> Gvk {
    Gvk::new(GROUP, VERSION, KIND)
}

/// KRO's `ResourceGraphDefinition` CRD, as KRO publishes it.
pub fn rgd_crd() -> Result<Value, serde_json::Error> {
    serde_saphyr::from_str(include_str!("resourcegraphdefinitions.crd.yaml"))
        .map_err(<serde_json::Error as serde::de::Error>::custom)
}

/// Runs the RGDs of a cluster as definitions. Cheap to clone.
#[derive(Clone)]
pub struct ResourceGraphDefinitions {
    definitions: Definitions,
    config: Config,
    /// The generation each running RGD was started at.
    running: Arc<Mutex<BTreeMap<String, Started>>>,
}

/// A running RGD: the generation it was started at, and its compiled definition.
type Started = (Option<i64>, Arc<CompiledDefinition>);

impl ResourceGraphDefinitions {
    /// RGDs started through `definitions`; `config` is the controller's own.
    pub fn new(definitions: &Definitions, config: &Config) -> Self {
        Self {
            definitions: definitions.clone(),
            config: config.clone(),
            running: Arc::default(),
        }
    }

    /// Installs KRO's `ResourceGraphDefinition` CRD and waits until it is served.
    pub async fn install_crd(&self) -> Result<(), crate::client::Error> {
        let crd: DynamicObject = rgd_crd()
            .and_then(serde_json::from_value)
            .map_err(|source| crate::client::Error::Serialize {
                what: "the ResourceGraphDefinition CRD",
                source,
            })?;
        self.config.client.install_crd(&crd, FIELD_MANAGER).await?;
        Ok(())
    }

    /// Registers the RGD controller with `manager`.
    pub fn register(&self, manager: &mut Manager) -> Result<(), ManagerError> {
        manager.register(self.reconciler())
    }

    /// The controller of RGDs: a `ResourceReconciler` holding KRO's finalizer.
    pub fn reconciler(&self) -> ResourceReconciler {
        let controller = ObjectController {
            kind: rgd_gvk(),
            step: KIND,
            controller: "resourcegraphdefinitions",
            finalizer: FINALIZER,
            conditions: &RGD_CONDITIONS,
        };
        controller.reconciler(self, &self.config)
    }

    fn stop(&self, name: &str) {
        if self.running.lock().remove(name).is_some() {
            self.definitions.stop(name);
            info!(rgd = %name, "ResourceGraphDefinition deleted: its controller stopped (its CRD and instances stay)");
        }
    }

    /// Starts (or swaps in) the RGD's definition when its spec changed, and writes its
    /// status.
    async fn sync(&self, ctx: &Context, object: &mut Draft) -> Outcome {
        let name = object.metadata.name.clone().unwrap_or_default();
        let generation = object.metadata.generation;
        let current = self.running.lock().get(&name).cloned();
        let started = match current {
            Some((running, compiled)) if running == generation => Ok(compiled),
            _ => self.start(&name, object).await,
        };
        let mut requeue = ReconcileResult::done();
        let conditions = ConditionSet::living(&RGD_CONDITIONS);
        let mut manager = conditions.manage(object, ctx.now());
        let marked = match &started {
            Ok(compiled) => manager
                .mark_true(
                    "GraphAccepted",
                    "Valid",
                    "resource graph and schema are valid",
                )
                .and_then(|()| {
                    manager.mark_true(
                        "KindReady",
                        "Ready",
                        format!(
                            "kind {} has been accepted and ready",
                            compiled.for_kind.kind
                        ),
                    )
                })
                .and_then(|()| {
                    manager.mark_true("ControllerReady", "Running", "controller is running")
                }),
            Err(Refusal::Invalid(message)) => {
                manager.mark_false("GraphAccepted", "InvalidResourceGraph", message.clone())
            }
            Err(Refusal::Waiting(message)) => {
                requeue = ReconcileResult::requeue_after(RETRY);
                manager
                    .mark_true(
                        "GraphAccepted",
                        "Valid",
                        "resource graph and schema are valid",
                    )
                    .and_then(|()| manager.mark_false("KindReady", "Failed", message.clone()))
            }
            Err(Refusal::NotStarted(message)) => {
                manager.mark_false("ControllerReady", "FailedToStart", message.clone())
            }
        };
        if let Err(err) = marked {
            return Outcome::err(ReconcileError::from_error(err));
        }
        let status = &mut object.to_mut().data["status"];
        status["state"] = json!(if started.is_ok() {
            "Active"
        } else {
            "Inactive"
        });
        match &started {
            Ok(compiled) => status["topologicalOrder"] = json!(compiled.step_order()),
            Err(_) => {
                if let Some(status) = status.as_object_mut() {
                    status.remove("topologicalOrder");
                }
            }
        }
        if let (Some(generation), Some(conditions)) =
            (generation, status["conditions"].as_array_mut())
        {
            for condition in conditions {
                condition["observedGeneration"] = json!(generation);
            }
        }
        Outcome::ok(requeue)
    }

    /// Compiles the RGD and starts its definition.
    async fn start(
        &self,
        name: &str,
        object: &DynamicObject,
    ) -> Result<Arc<CompiledDefinition>, Refusal> {
        let source = format!("{KIND} {name}");
        let loaded = parse_rgd_value(rgd_json(object), &source)
            .map_err(|errors| Refusal::Invalid(errors.to_string()))?;
        match self.definitions.start(&loaded).await {
            Ok(compiled) => {
                info!(rgd = %name, kind = %compiled.for_kind, "ResourceGraphDefinition running");
                self.running.lock().insert(
                    name.to_owned(),
                    (object.metadata.generation, compiled.clone()),
                );
                Ok(compiled)
            }
            Err(error @ StartError::KindNotServed { .. }) => {
                Err(Refusal::Waiting(error.to_string()))
            }
            Err(StartError::Invalid(errors)) => {
                warn!(rgd = %name, error = %errors, "ResourceGraphDefinition refused");
                Err(Refusal::Invalid(errors.to_string()))
            }
            Err(error) => {
                warn!(rgd = %name, %error, "ResourceGraphDefinition not started");
                Err(Refusal::NotStarted(error.to_string()))
            }
        }
    }
}

/// Why an RGD does not run.
enum Refusal {
    /// The graph or its schema is wrong (`GraphAccepted=False`).
    Invalid(String),
    /// A kind it uses is not served yet (`KindReady=False`, tried again).
    Waiting(String),
    /// The controller could not start (`ControllerReady=False`).
    NotStarted(String),
}

/// An RGD object as the reader takes it: its spec and the metadata its labels name.
fn rgd_json(object: &DynamicObject) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"name": object.metadata.name, "uid": object.metadata.uid,
                     "generation": object.metadata.generation},
        "spec": object.data["spec"],
    })
}

#[async_trait]
impl StartsFromObjects for ResourceGraphDefinitions {
    async fn sync_object(&self, ctx: &Context, object: &mut Draft) -> Outcome {
        self.sync(ctx, object).await
    }

    fn stop_object(&self, name: &str) {
        self.stop(name);
    }
}
