//! The baseline: a hand-written kube-runtime `Controller` over a derived `Widget` and
//! k8s_openapi's `ConfigMap`, reading children from a ConfigMap reflector of its own. It
//! records no Events.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use dynrec::apiserver::ApiServer;
use dynrec::object::READY;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{CustomResource, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Direct, Running, widget_key, within};

/// The typed Widget of the kube-runtime baseline (the same CRD the dynamic side reads).
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[kube(status = "WidgetStatus")]
pub struct WidgetSpec {
    pub message: String,
}

/// The typed Widget's status.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// What the typed reconcile function reads and writes with.
pub struct TypedContext {
    client: kube::Client,
    /// ConfigMaps from a reflector of their own: kube-runtime's `owns` keeps no store.
    config_maps: Store<ConfigMap>,
}

impl TypedContext {
    /// How many ConfigMaps the reflector holds.
    pub(super) fn cached_config_maps(&self) -> usize {
        self.config_maps.state().len()
    }
}

/// Reconciles widget `i` from the controller's store, now, and checks that it succeeded.
pub(super) async fn reconcile(widgets: &Store<Widget>, ctx: &Arc<TypedContext>, i: usize) {
    let key = widget_key(i);
    let reference = ObjectRef::new(&key.name).within(key.namespace.as_deref().unwrap_or_default());
    let widget = widgets.get(&reference).expect("a cached widget");
    typed_reconcile(widget, ctx.clone())
        .await
        .expect("a reconcile");
}

/// The typed reconcile: create or fix the ConfigMap, then mark Ready unless it is.
async fn typed_reconcile(
    widget: Arc<Widget>,
    ctx: Arc<TypedContext>,
) -> Result<Action, kube::Error> {
    let namespace = widget.namespace().unwrap_or_default();
    let name = widget.name_any();
    let data = BTreeMap::from([("message".to_string(), widget.spec.message.clone())]);
    let config_maps = Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace);
    let reference = ObjectRef::new(&name).within(&namespace);
    match ctx.config_maps.get(&reference) {
        None => {
            let mut child = ConfigMap {
                data: Some(data),
                ..Default::default()
            };
            child.metadata.name = Some(name.clone());
            child.metadata.namespace = Some(namespace.clone());
            child.metadata.owner_references = widget.controller_owner_ref(&()).map(|r| vec![r]);
            // A child created by an earlier reconcile the reflector has not seen yet is fine.
            match config_maps.create(&PostParams::default(), &child).await {
                Err(kube::Error::Api(status)) if status.is_already_exists() => {}
                created => drop(created?),
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
        .any(|c| c.type_ == READY && c.status == "True");
    if !ready || status.observed_generation != generation {
        let condition = Condition {
            type_: READY.into(),
            status: "True".into(),
            reason: READY.into(),
            message: String::new(),
            last_transition_time: Time(jiff::Timestamp::now()),
            observed_generation: None,
        };
        let patch =
            json!({"status": {"observedGeneration": generation, "conditions": [condition]}});
        Api::<Widget>::namespaced(ctx.client.clone(), &namespace)
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(Action::await_change())
}

/// Starts the typed controller with `workers` concurrent reconciles; returns once its
/// ConfigMap reflector and its Widget watch run.
pub(super) async fn start(server: &ApiServer, workers: usize) -> Running {
    let client = server.client();
    let (config_maps, writer) = reflector::store();
    let reflect = watcher(Api::<ConfigMap>::all(client.clone()), Default::default())
        .default_backoff()
        .reflect(writer);
    let reflecting = tokio::spawn(reflect.for_each(|_| async {}));
    within(
        "the typed ConfigMap reflector lists",
        config_maps.wait_until_ready(),
    )
    .await
    .expect("the reflector runs");
    let ctx = Arc::new(TypedContext {
        client: client.clone(),
        config_maps,
    });
    let concurrency = u16::try_from(workers).expect("fewer than 65,536 workers");
    let controller = Controller::new(Api::<Widget>::all(client.clone()), Default::default())
        .owns(Api::<ConfigMap>::all(client), Default::default())
        .with_config(kube::runtime::controller::Config::default().concurrency(concurrency));
    let widgets = controller.store();
    let running = controller.run(
        typed_reconcile,
        |_, _, _| Action::requeue(Duration::from_millis(100)),
        ctx.clone(),
    );
    let controlling = tokio::spawn(running.for_each(|result| async move {
        if let Err(err) = result {
            eprintln!("typed reconcile failed: {err}");
        }
    }));
    // Not `widgets.wait_until_ready()`: the controller's runner awaits the same readiness,
    // and kube-runtime wakes only the last of two concurrent waiters (its `DelayedInit`
    // holds one oneshot receiver), so this wait could sleep until its timeout. The
    // controller's watcher opens its watch only after its list reached the store.
    let watching = async {
        while !server.open_watches().contains_key("example.com/widgets") {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    within("the typed controller lists widgets", watching).await;
    Running {
        tasks: vec![controlling, reflecting],
        stop: None,
        direct: Direct::Typed(widgets, ctx),
    }
}
