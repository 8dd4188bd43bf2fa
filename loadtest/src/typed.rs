//! The baseline: `examples/definitions/widgets.yaml` written by hand as a kube-runtime
//! `Controller` over the derived [`Widget`] and k8s_openapi's `ConfigMap`, run as its own
//! process (`dynrec-loadtest typed-controller`) so it is measured as dynrec is.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Config, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::widgets::{Widget, child_name, desired_data};

/// What each reconcile reads and writes with.
struct Context {
    client: kube::Client,
    /// ConfigMaps from a reflector of their own.
    config_maps: Store<ConfigMap>,
    /// The Events dynrec records too: `Created` for a child, `StatusUpdated`.
    events: Events,
}

/// Runs the controller with `workers` concurrent reconciles until the process is killed.
pub async fn run(client: kube::Client, workers: u16) -> Result<()> {
    let context = Arc::new(Context {
        client: client.clone(),
        config_maps: reflect(&client).await?,
        events: Events::new(&client, "typed-widgets"),
    });
    let controller = Controller::new(Api::<Widget>::all(client.clone()), Default::default())
        .owns(Api::<ConfigMap>::all(client), Default::default());
    drive(controller, workers, reconcile, context).await;
    Ok(())
}

/// A reflector of every `K` in the cluster, filled before this returns (kube-runtime's `owns`
/// keeps no store).
pub async fn reflect<K>(client: &kube::Client) -> Result<Store<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    let stream = watcher(Api::<K>::all(client.clone()), Default::default())
        .default_backoff()
        .reflect(writer);
    tokio::spawn(stream.for_each(|_| async {}));
    store.wait_until_ready().await?;
    Ok(store)
}

/// Runs `controller` with `workers` concurrent reconciles, a failed one retried after 100 ms
/// and printed, until the process is killed.
pub async fn drive<K, C, F, Fut>(
    controller: Controller<K>,
    workers: u16,
    reconcile: F,
    context: Arc<C>,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    C: Send + Sync + 'static,
    F: FnMut(Arc<K>, Arc<C>) -> Fut,
    Fut: Future<Output = Result<Action, kube::Error>> + Send + 'static,
{
    controller
        .with_config(Config::default().concurrency(workers))
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_millis(100)),
            context,
        )
        .for_each(|result| async move {
            if let Err(err) = result {
                eprintln!("reconcile failed: {err}");
            }
        })
        .await;
}

/// Creates or fixes the widget's ConfigMap, then marks it ready for its generation.
async fn reconcile(widget: Arc<Widget>, context: Arc<Context>) -> Result<Action, kube::Error> {
    let namespace = widget.namespace().unwrap_or_default();
    let name = child_name(&widget.name_any());
    let data = desired_data(&widget.spec);
    let config_maps = Api::<ConfigMap>::namespaced(context.client.clone(), &namespace);
    match context
        .config_maps
        .get(&ObjectRef::new(&name).within(&namespace))
    {
        None => {
            let mut child = ConfigMap {
                data: Some(data),
                ..Default::default()
            };
            child.metadata.name = Some(name.clone());
            child.metadata.namespace = Some(namespace.clone());
            child.metadata.labels = Some(BTreeMap::from([(
                "example.com/widget".to_string(),
                widget.name_any(),
            )]));
            child.metadata.owner_references = widget.controller_owner_ref(&()).map(|r| vec![r]);
            // A child an earlier reconcile made, not yet in the reflector, is fine.
            match config_maps.create(&PostParams::default(), &child).await {
                Err(kube::Error::Api(status)) if status.is_already_exists() => {}
                created => {
                    created?;
                    let note = format!("Created ConfigMap {name:?}");
                    let reference = widget.object_ref(&());
                    context.events.record(&reference, "Created", &note).await?;
                }
            }
        }
        Some(current) if current.data.as_ref() != Some(&data) => {
            let mut fixed = (*current).clone();
            fixed.data = Some(data);
            config_maps
                .replace(&name, &PostParams::default(), &fixed)
                .await?;
        }
        Some(_) => {}
    }
    let generation = widget.meta().generation;
    let status = widget.status.clone().unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    if !ready || status.observed_generation != generation {
        let condition = |type_: &str| Condition {
            type_: type_.into(),
            status: "True".into(),
            reason: type_.into(),
            message: String::new(),
            last_transition_time: Time(jiff::Timestamp::now()),
            observed_generation: generation,
        };
        let patch = json!({"status": {
            "observedGeneration": generation,
            "conditions": [condition("ConfigMapReady"), condition("Ready")],
        }});
        write_status(&context.client, &context.events, &*widget, &patch).await?;
    }
    Ok(Action::await_change())
}

/// Merge-patches the status of `object` and records `StatusUpdated`, as dynrec does.
pub async fn write_status<K>(
    client: &kube::Client,
    events: &Events,
    object: &K,
    patch: &serde_json::Value,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    K: Clone + DeserializeOwned + Debug,
{
    let namespace = object.namespace().unwrap_or_default();
    Api::<K>::namespaced(client.clone(), &namespace)
        .patch_status(
            &object.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await?;
    let reference = object.object_ref(&());
    events
        .record(&reference, "StatusUpdated", "Updated status")
        .await
}

/// The Events the baseline records, through kube-runtime's `Recorder`, one per recorded object.
///
/// A `Recorder` folds an Event into an earlier one only when both regard the same object (its
/// cache key holds the reference), so one per object records exactly the Events one for all
/// would. One for all sweeps its whole cache of the last six minutes' Events on every publish,
/// under a lock the workers share: at 10,000 Widgets that was most of the baseline's CPU, and
/// at 100,000 its converge did not finish within 15 minutes. dynrec's own recorder keeps no
/// such cache; the baseline should not pay for one either.
pub struct Events {
    client: kube::Client,
    reporter: Reporter,
    by_object: Mutex<HashMap<(String, String), Recorder>>,
}

impl Events {
    /// The Events of the baseline controller `controller`.
    pub fn new(client: &kube::Client, controller: &str) -> Self {
        Self {
            client: client.clone(),
            reporter: Reporter {
                controller: controller.into(),
                instance: None,
            },
            by_object: Mutex::default(),
        }
    }

    /// Records a Normal Event on the object, as dynrec does after each write.
    pub async fn record(
        &self,
        object: &ObjectReference,
        reason: &str,
        note: &str,
    ) -> Result<(), kube::Error> {
        let key = (
            object.namespace.clone().unwrap_or_default(),
            object.uid.clone().unwrap_or_default(),
        );
        let recorder = self
            .by_object
            .lock()
            .unwrap()
            .entry(key)
            .or_insert_with(|| Recorder::new(self.client.clone(), self.reporter.clone()))
            .clone();
        let event = Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(note.into()),
            action: reason.into(),
            secondary: None,
        };
        recorder.publish(&event, object).await
    }
}
