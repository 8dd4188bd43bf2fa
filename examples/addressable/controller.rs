//! The `addressable` demo: a second duck reconciler, over `Addressable`
//! (`status.address.url`), run for every kind found at run time to implement it (CRDs
//! labelled `duck.knative.dev/addressable=true` or with that status schema, kinds a
//! `DuckMapping` maps). It keeps one ConfigMap, `addressables` in the namespace `default`,
//! listing the URL of every addressable object of every such kind: as objects get, change
//! or lose their address, are deleted, and as kinds come and go.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::DynamicObject;
use serde_json::{Value, json};
use tokio::sync::watch;
use tracing::{debug, error, warn};

use dynrec::client::{Client, Ducked, Error, ListOptions};
use dynrec::duck_types::Addressable;
use dynrec::ducks::{DuckControllers, DuckType, KindMatch};
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{
    Config, Context, Draft, Outcome, OverrideSetup, ReconcileError, ResourceReconciler,
    SyncReconciler,
};
use dynrec::runtime::{LaunchError, Manager, RunArgs, run_controllers};

/// The ConfigMap listing the addresses.
pub const CONFIG_MAP: &str = "addressables";

/// The namespace of the ConfigMap.
pub const NAMESPACE: &str = "default";

/// The reason of the Warning Event on an object whose status does not fit the duck.
pub const NOT_ADDRESSABLE: &str = "NotAddressable";

fn config_map_gvk() -> Gvk {
    Gvk::new("", "v1", "ConfigMap")
}

/// The ConfigMap key of an object: `{Kind}.{group}_{namespace}_{name}`.
pub fn entry_key(gvk: &Gvk, key: &ObjectKey) -> String {
    let group = if gvk.group.is_empty() {
        "core"
    } else {
        &gvk.group
    };
    let namespace = key.namespace.as_deref().unwrap_or_default();
    format!("{}.{group}_{namespace}_{}", gvk.kind, key.name)
}

/// The addresses of every object of every kind the duck controllers run for, kept in the
/// ConfigMap.
#[derive(Clone)]
struct Directory {
    client: Client,
    kinds: watch::Receiver<Vec<KindMatch>>,
    /// One write at a time from this process (the controllers of every kind share it).
    writing: Arc<tokio::sync::Mutex<()>>,
}

impl Directory {
    /// Every address, by [`entry_key`]; objects that do not fit the duck are left out.
    async fn entries(&self) -> Result<BTreeMap<String, Value>, Error> {
        let kinds = self.kinds.borrow().clone();
        let mut entries = BTreeMap::new();
        for kind in kinds {
            let objects = match self.client.list(&kind.gvk, &ListOptions::default()).await {
                Ok(objects) => objects,
                // The kind went away; its controller is being stopped.
                Err(err) if err.is_not_found() => continue,
                Err(err) => return Err(err),
            };
            for object in &objects {
                let Ok(ducked) =
                    Ducked::<Addressable>::project_through(&kind.gvk, object, &kind.projection)
                else {
                    continue;
                };
                if let (Some(url), Ok(key)) = (ducked.url(), ducked.key()) {
                    entries.insert(entry_key(&kind.gvk, &key), Value::from(url));
                }
            }
        }
        Ok(entries)
    }

    /// Writes the ConfigMap when its data differs from the addresses.
    async fn write(&self) -> Result<(), Error> {
        let _one_at_a_time = self.writing.lock().await;
        let data = Value::Object(self.entries().await?.into_iter().collect());
        let key = ObjectKey::namespaced(NAMESPACE, CONFIG_MAP);
        match self.client.get(&config_map_gvk(), &key).await {
            Ok(config_map) => {
                let current = &config_map.data["data"];
                let empty = data.as_object().is_some_and(|d| d.is_empty());
                if *current == data || (current.is_null() && empty) {
                    return Ok(());
                }
                let mut config_map = (*config_map).clone();
                config_map.data["data"] = data;
                self.client.update(&config_map).await.map(drop)
            }
            Err(err) if err.is_not_found() => {
                let config_map: DynamicObject = dynrec::object::from_json(json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
                    "data": data,
                }))
                .map_err(|source| Error::Serialize {
                    what: "the addressables ConfigMap",
                    source,
                })?;
                self.client.create(&config_map).await.map(drop)
            }
            Err(err) => Err(err),
        }
    }

    /// Rewrites the ConfigMap each time the kinds change (a kind going away drops its
    /// entries), retrying a failed write.
    async fn follow_kinds(self) {
        let mut kinds = self.kinds.clone();
        while kinds.changed().await.is_ok() {
            while let Err(err) = self.write().await {
                warn!(%err, "cannot write the addressables ConfigMap; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Checks one object fits the duck: a Warning Event names the path when it does not.
async fn check(
    ctx: &Context,
    found: &KindMatch,
    object: &DynamicObject,
) -> Result<(), ReconcileError> {
    if let Err(err) = Ducked::<Addressable>::project_through(&found.gvk, object, &found.projection)
    {
        error!(%err, "object is not Addressable; left out of the ConfigMap");
        let recorded =
            ctx.config()
                .recorder
                .warning(object, NOT_ADDRESSABLE, format!("Not listed: {err}"));
        if let Err(err) = recorded.await {
            debug!(%err, "event not recorded");
        }
    }
    Ok(())
}

/// The duck reconciler for one kind: checks each object, and after every request (the
/// object's deletion too) brings the ConfigMap up to date.
fn reconciler(found: &KindMatch, config: &Config, directory: &Directory) -> ResourceReconciler {
    let kind = found.clone();
    let sync = SyncReconciler::new_async(move |ctx, object: &mut Draft| {
        let (ctx, kind, object) = (ctx.clone(), kind.clone(), object.clone());
        Box::pin(async move { check(&ctx, &kind, &object).await })
    });
    // The ConfigMap is written after each request, outside the tree: declared here.
    let sync = OverrideSetup::new()
        .named("AddressableCheck")
        .with_setup(|setup| {
            let verbs = ["get", "create", "update"];
            setup.require("AddressableDirectory", &config_map_gvk(), "", &verbs);
            Ok(())
        })
        .reconciler(sync);
    let directory = directory.clone();
    ResourceReconciler::new(found.gvk.clone(), sync, config.clone()).after_reconcile(
        move |_ctx, outcome| {
            let directory = directory.clone();
            Box::pin(async move {
                match directory.write().await {
                    Ok(()) => outcome,
                    Err(err) => Outcome::err(err),
                }
            })
        },
    )
}

/// Runs the duck reconciler, while `manager` runs, for every kind that implements
/// `Addressable`, and keeps the ConfigMap listing their addresses.
pub fn register(manager: &mut Manager, config: &Config) {
    let writing = Arc::new(tokio::sync::Mutex::new(()));
    let controllers = DuckControllers::new(manager, config);
    let directory = Directory {
        client: config.client.clone(),
        kinds: controllers.kinds(),
        writing,
    };
    let for_kinds = directory.clone();
    controllers
        .register(DuckType::addressable(), move |found, config| {
            reconciler(found, config, &for_kinds)
        })
        .start(manager);
    manager.run_alongside(directory.follow_kinds());
}

/// Runs the duck reconciler until SIGINT or SIGTERM.
pub async fn run(args: RunArgs) -> Result<(), LaunchError> {
    run_controllers(args, "addressable", |manager, config, _| {
        register(manager, config);
        Ok(())
    })
    .await
}
