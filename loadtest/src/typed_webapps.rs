//! The WebApp baseline: `examples/definitions/webapp.yaml` written by hand as a kube-runtime
//! `Controller` over the derived [`WebApp`], applying its Deployment, Service and Ingress
//! (server-side apply, as the definition does) when they are missing or differ from what it
//! wants, read from reflectors of their own, and writing the definition's status and Events.

use std::sync::Arc;

use anyhow::Result;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::typed::{Events, drive, reflect, write_status};
use crate::webapps::{self, WebApp, WebAppStatus};

/// The field manager of the baseline's applies.
const MANAGER: &str = "typed-webapps";

/// What each reconcile reads and writes with.
struct Context {
    client: kube::Client,
    deployments: Store<Deployment>,
    services: Store<Service>,
    ingresses: Store<Ingress>,
    events: Events,
}

/// Runs the controller with `workers` concurrent reconciles until the process is killed.
pub async fn run(client: kube::Client, workers: u16) -> Result<()> {
    let context = Arc::new(Context {
        deployments: reflect(&client).await?,
        services: reflect(&client).await?,
        ingresses: reflect(&client).await?,
        events: Events::new(&client, "typed-webapps"),
        client: client.clone(),
    });
    let controller = Controller::new(Api::<WebApp>::all(client.clone()), Default::default())
        .owns(Api::<Deployment>::all(client.clone()), Default::default())
        .owns(Api::<Service>::all(client.clone()), Default::default())
        .owns(Api::<Ingress>::all(client), Default::default());
    drive(controller, workers, reconcile, context).await;
    Ok(())
}

/// Applies the children that are missing or differ, removes the Ingress without a host, then
/// writes the status when it changed.
async fn reconcile(webapp: Arc<WebApp>, context: Arc<Context>) -> Result<Action, kube::Error> {
    let namespace = webapp.namespace().unwrap_or_default();
    let name = webapp.name_any();
    let spec = &webapp.spec;
    let owner = webapp.controller_owner_ref(&());
    let child = Child {
        context: &context,
        webapp: &webapp,
        owner,
    };
    let deployment = webapps::deployment(&name, &namespace, spec);
    child
        .ensure(
            &deployment,
            context.deployments.get(&key(&name, &namespace)),
        )
        .await?;
    let service = webapps::service(&name, &namespace, spec);
    child
        .ensure(&service, context.services.get(&key(&name, &namespace)))
        .await?;
    let host = spec.host.clone().filter(|h| !h.is_empty());
    match &host {
        Some(host) => {
            let ingress = webapps::ingress(&name, &namespace, host);
            child
                .ensure(&ingress, context.ingresses.get(&key(&name, &namespace)))
                .await?;
        }
        None if context.ingresses.get(&key(&name, &namespace)).is_some() => {
            let ingresses = Api::<Ingress>::namespaced(context.client.clone(), &namespace);
            ingresses.delete(&name, &DeleteParams::default()).await?;
        }
        None => {}
    }
    let available = context
        .deployments
        .get(&key(&name, &namespace))
        .and_then(|d| d.status.clone())
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    let wanted = status(&webapp, available, host.as_deref());
    if !same_status(webapp.status.as_ref(), &wanted) {
        let patch = json!({"status": wanted});
        write_status(&context.client, &context.events, &*webapp, &patch).await?;
    }
    Ok(Action::await_change())
}

/// The key of the `K` named `name` in `namespace`, for a reflector's store.
fn key<K: reflector::Lookup<DynamicType = ()>>(name: &str, namespace: &str) -> ObjectRef<K> {
    ObjectRef::new(name).within(namespace)
}

/// One WebApp's children, applied with its controller reference.
struct Child<'a> {
    context: &'a Context,
    webapp: &'a WebApp,
    owner: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>,
}

impl Child<'_> {
    /// Applies `desired` unless `current` already holds all of it; a new child is recorded
    /// as a `Created` Event, as dynrec does.
    async fn ensure<K>(&self, desired: &K, current: Option<Arc<K>>) -> Result<(), kube::Error>
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
        K: Clone + Serialize + DeserializeOwned + std::fmt::Debug,
    {
        let mut desired = desired.clone();
        desired.meta_mut().owner_references = self.owner.clone().map(|r| vec![r]);
        if let Some(current) = &current
            && contains(&to_json(current.as_ref()), &to_json(&desired))
        {
            return Ok(());
        }
        let name = desired.name_any();
        let namespace = desired.namespace().unwrap_or_default();
        let mut body = to_json(&desired);
        body["apiVersion"] = K::api_version(&()).into();
        body["kind"] = K::kind(&()).into();
        Api::<K>::namespaced(self.context.client.clone(), &namespace)
            .patch(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await?;
        if current.is_none() {
            let note = format!("Created {} {name:?}", K::kind(&()));
            let reference = self.webapp.object_ref(&());
            self.context
                .events
                .record(&reference, "Created", &note)
                .await?;
        }
        Ok(())
    }
}

fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// Whether `current` holds every field of `desired` with its value (lists item by item).
fn contains(current: &Value, desired: &Value) -> bool {
    match (current, desired) {
        (Value::Object(current), Value::Object(desired)) => desired
            .iter()
            .all(|(key, want)| current.get(key).is_some_and(|have| contains(have, want))),
        (Value::Array(current), Value::Array(desired)) => {
            current.len() == desired.len()
                && current
                    .iter()
                    .zip(desired)
                    .all(|(have, want)| contains(have, want))
        }
        _ => current == desired,
    }
}

/// The status the definition writes: the Deployment's available replicas, the URL, one
/// condition a child and Ready, for the WebApp's generation.
fn status(webapp: &WebApp, available: i32, host: Option<&str>) -> WebAppStatus {
    let generation = webapp.meta().generation;
    let wanted = webapp.spec.replicas.unwrap_or(1);
    let deployment_ready = available >= wanted;
    let condition = |type_: &str, ready: bool, reason: &str| Condition {
        type_: type_.into(),
        status: if ready { "True" } else { "False" }.into(),
        reason: reason.into(),
        message: String::new(),
        last_transition_time: Time(jiff::Timestamp::now()),
        observed_generation: generation,
    };
    let (deployment_reason, ready_reason) = if deployment_ready {
        ("DeploymentReady", "Ready")
    } else {
        ("DeploymentNotReady", "DeploymentNotReady")
    };
    let ingress_reason = if host.is_some() {
        "IngressReady"
    } else {
        "NotIncluded"
    };
    WebAppStatus {
        observed_generation: generation,
        available_replicas: available,
        url: host.map(|h| format!("http://{h}")).unwrap_or_default(),
        conditions: vec![
            condition("DeploymentReady", deployment_ready, deployment_reason),
            condition("IngressReady", true, ingress_reason),
            condition("Ready", deployment_ready, ready_reason),
            condition("ServiceReady", true, "ServiceReady"),
            condition("StatusSynced", true, "Synced"),
        ],
    }
}

/// Whether two statuses say the same, transition times aside.
fn same_status(current: Option<&WebAppStatus>, wanted: &WebAppStatus) -> bool {
    let Some(current) = current else {
        return false;
    };
    let said = |s: &WebAppStatus| {
        let conditions: Vec<_> = s
            .conditions
            .iter()
            .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
            .collect();
        (
            s.observed_generation,
            s.available_replicas,
            s.url.clone(),
            conditions,
        )
    };
    said(current) == said(wanted)
}
