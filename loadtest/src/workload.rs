//! What a run drives: the instances' kind, when one has converged, what a churn change writes
//! and which child shows it, the definition dynrec runs and the typed baseline's CRD.

use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use kube::api::{ApiResource, DynamicObject};
use serde_json::Value;

use crate::engine_kind::EngineKind;
use crate::{webapps, widgets};

/// The instances of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// Widgets of examples/definitions/widgets.yaml: a ConfigMap each
    Widgets,
    /// WebApps of examples/definitions/webapp.yaml: a Deployment, Service and Ingress each
    Webapps,
}

impl Workload {
    /// The instances' kind.
    pub fn kind(self) -> ApiResource {
        match self {
            Self::Widgets => widgets::api_resource(),
            Self::Webapps => webapps::api_resource(),
        }
    }

    /// Instance `i`, as the driver creates it.
    pub fn instance(self, i: usize, namespace: &str) -> DynamicObject {
        match self {
            Self::Widgets => widgets::instance(i, namespace),
            Self::Webapps => webapps::instance(i, namespace),
        }
    }

    /// The name of instance `i`.
    pub fn name(self, i: usize) -> String {
        match self {
            Self::Widgets => widgets::name(i),
            Self::Webapps => webapps::name(i),
        }
    }

    /// The merge patch of a churn change that sets `value`, which the watched child then
    /// shows.
    pub fn change(self, value: &str) -> Value {
        match self {
            Self::Widgets => widgets::change(value),
            Self::Webapps => webapps::change(value),
        }
    }

    /// The kind of the child that shows a change.
    pub fn watched_child(self) -> ApiResource {
        match self {
            Self::Widgets => ApiResource::erase::<ConfigMap>(&()),
            Self::Webapps => ApiResource::erase::<Deployment>(&()),
        }
    }

    /// The name of instance `instance`'s watched child.
    pub fn child_name(self, instance: &str) -> String {
        match self {
            Self::Widgets => widgets::child_name(instance),
            Self::Webapps => instance.to_string(),
        }
    }

    /// The value of `instance` that a churn change sets and its watched child shows.
    pub fn changed_value(self, instance: &DynamicObject) -> Option<&str> {
        match self {
            Self::Widgets => widgets::changed_value(instance),
            Self::Webapps => webapps::changed_value(instance),
        }
    }

    /// What a definition given with `--definition` must write for the driver to time its
    /// changes: the watched child, as the workload's own definition writes it.
    pub fn child_contract(self) -> &'static str {
        match self {
            Self::Widgets => {
                "a ConfigMap named <widget>-config whose data.greeting is the Widget's \
                 spec.greeting, as examples/definitions/widgets.yaml writes it"
            }
            Self::Webapps => {
                "a Deployment named as the WebApp whose first container's image is the \
                 WebApp's spec.image, as examples/definitions/webapp.yaml writes it"
            }
        }
    }

    /// The instance a watched child belongs to, and the changed value it shows.
    pub fn shown(self, child: &DynamicObject) -> Option<(String, String)> {
        match self {
            Self::Widgets => widgets::shown(child),
            Self::Webapps => webapps::shown(child),
        }
    }

    /// The definition dynrec runs, from examples/definitions.
    pub fn definition(self) -> PathBuf {
        let file = match self {
            Self::Widgets => "widgets.yaml",
            Self::Webapps => "webapp.yaml",
        };
        // The workspace's root: the loadtest crate's parent (a path without `..`, as
        // `dynrec run -f` shows it in the cluster).
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("loadtest/ is in the workspace");
        root.join("examples/definitions").join(file)
    }

    /// The CRD the typed baseline installs (dynrec installs its own from the definition).
    pub fn typed_crd(self) -> CustomResourceDefinition {
        match self {
            Self::Widgets => widgets::Widget::crd(),
            Self::Webapps => webapps::WebApp::crd(),
        }
    }

    /// The kinds a converge stores in the namespace, by name, for the API server's memory.
    pub fn stored_kinds(self) -> Vec<(&'static str, ApiResource)> {
        let mut kinds = self.cached_kinds();
        kinds.push(("Event", ApiResource::erase::<Event>(&())));
        kinds
    }

    /// The kinds a controller of the workload caches, by name: the instances and children.
    pub fn cached_kinds(self) -> Vec<(&'static str, ApiResource)> {
        match self {
            Self::Widgets => vec![
                ("Widget", widgets::api_resource()),
                ("ConfigMap", ApiResource::erase::<ConfigMap>(&())),
            ],
            Self::Webapps => vec![
                ("WebApp", webapps::api_resource()),
                ("Deployment", ApiResource::erase::<Deployment>(&())),
                ("Service", ApiResource::erase::<Service>(&())),
                ("Ingress", ApiResource::erase::<Ingress>(&())),
            ],
        }
    }

    /// The Events `engine` records for one converged instance: `Created` a child and
    /// `StatusUpdated`. kube-runtime's `Recorder` folds Events that differ only in their note
    /// into one with a series count, so the typed baseline's three `Created` of a WebApp are
    /// one.
    pub fn events_per_instance(self, engine: EngineKind) -> usize {
        match (self, engine) {
            (Self::Widgets, _) | (Self::Webapps, EngineKind::Typed) => 2,
            (Self::Webapps, _) => 4,
        }
    }
}

/// Whether an instance has converged: Ready=True for its current generation.
pub fn converged(instance: &DynamicObject) -> bool {
    let status = &instance.data["status"];
    let observed = status["observedGeneration"].as_i64();
    let ready = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    ready && observed.is_some() && observed == instance.metadata.generation
}
