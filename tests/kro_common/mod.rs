//! The harness of the tests running RGDs in-process: a manager running the RGD controller
//! on a fresh embedded API server, and waiting (bounded) for what objects become.
#![allow(dead_code)] // each test binary uses a part

use std::time::{Duration, Instant};

use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::definitions::Definitions;
use dynrec::kro::ResourceGraphDefinitions;
use dynrec::reconcilers::Config;
use dynrec::runtime::{Manager, ManagerOptions};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::Value;

pub const DEADLINE: Duration = Duration::from_secs(15);

/// A manager running the RGD controller on a fresh embedded server.
pub struct Running {
    pub kube: kube::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    pub async fn start() -> Self {
        let server = ApiServer::new();
        let kube = server.client();
        let client = Client::new(kube.clone());
        let config = Config::new(client.clone(), "test");
        let mut manager = Manager::new(client, ManagerOptions::default());
        let definitions = Definitions::new(&manager, &config);
        definitions.install_crd().await.unwrap();
        definitions.register(&mut manager).unwrap();
        let graphs = ResourceGraphDefinitions::new(&definitions, &config);
        graphs.install_crd().await.unwrap();
        graphs.register(&mut manager).unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            manager
                .run(async move {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
            drop(server);
        });
        Self {
            kube,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn api(&self, api_version: &str, kind: &str) -> Api<DynamicObject> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let plural = match kind {
            "ResourceGraphDefinition" => "resourcegraphdefinitions".to_owned(),
            "CustomResourceDefinition" => "customresourcedefinitions".to_owned(),
            other => dynrec::kro::plural(other),
        };
        let ar = ApiResource::from_gvk_with_plural(&gvk, &plural);
        match kind {
            "ResourceGraphDefinition" | "CustomResourceDefinition" => {
                Api::all_with(self.kube.clone(), &ar)
            }
            _ => Api::namespaced_with(self.kube.clone(), "default", &ar),
        }
    }

    pub fn rgds(&self) -> Api<DynamicObject> {
        self.api("kro.run/v1alpha1", "ResourceGraphDefinition")
    }

    /// Applies an RGD and waits until it is Active.
    pub async fn apply_active_rgd(&self, yaml: &str) {
        let rgd = self.apply(yaml).await.unwrap();
        let name = rgd.metadata.name.unwrap();
        object_where(&self.rgds(), &name, "the RGD to be Active", |rgd| {
            rgd["status"]["state"] == "Active"
        })
        .await;
    }

    /// Applies a YAML object (server-side apply, forced).
    pub async fn apply(&self, yaml: &str) -> Result<DynamicObject, kube::Error> {
        let value: Value = serde_saphyr::from_str(yaml).unwrap();
        let api = self.api(
            value["apiVersion"].as_str().unwrap(),
            value["kind"].as_str().unwrap(),
        );
        let name = value["metadata"]["name"].as_str().unwrap().to_owned();
        api.patch(
            &name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(value),
        )
        .await
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap();
        }
    }
}

/// Polls `check` until it returns `Some`.
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The object once `holds` is true of it.
pub async fn object_where(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    holds: impl Fn(&Value) -> bool,
) -> Value {
    eventually(what, || async {
        let object = api.get_opt(name).await.ok().flatten()?;
        let value = serde_json::to_value(&object).unwrap();
        holds(&value).then_some(value)
    })
    .await
}

pub fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}
