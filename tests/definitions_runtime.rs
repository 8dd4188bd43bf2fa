//! Definitions at run time over the embedded API server: stored in the cluster, compiled and
//! swapped while the manager runs, and the behaviour of their steps as users see it.

/// The widgets example's controller (each user of it uses a part).
#[path = "../examples/widgets/controller.rs"]
#[allow(dead_code)]
mod widgets;

use std::time::{Duration, Instant};

use dynrec::apiserver::ApiServer;
use dynrec::client::{CachedFields, Client};
use dynrec::definitions::{Definitions, parse_documents};
use dynrec::object::Gvk;
use dynrec::reconcilers::Config;
use dynrec::runtime::{Manager, ManagerOptions};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(10);

/// A running manager with the definitions controller, on a fresh embedded server.
struct Running {
    kube: kube::Client,
    client: Client,
    definitions: Definitions,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    async fn start() -> Self {
        let server = ApiServer::new();
        let kube = server.client();
        let client = Client::new(kube.clone());
        let config = Config::new(client.clone(), "test");
        let mut manager = Manager::new(client.clone(), ManagerOptions::default());
        let definitions = Definitions::new(&manager, &config);
        definitions.install_crd().await.unwrap();
        definitions.register(&mut manager).unwrap();
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
            client,
            definitions,
            stop: Some(stop),
            task: Some(task),
        }
    }

    fn api(&self, api_version: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
        let gvk = Gvk::from_api_version(api_version, kind).unwrap();
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind),
            plural,
        );
        match kind {
            "ReconcilerDefinition" | "CustomResourceDefinition" => {
                Api::all_with(self.kube.clone(), &ar)
            }
            _ => Api::namespaced_with(self.kube.clone(), "default", &ar),
        }
    }

    fn definitions_api(&self) -> Api<DynamicObject> {
        self.api(
            "dynrec.dev/v1alpha1",
            "ReconcilerDefinition",
            "reconcilerdefinitions",
        )
    }

    fn config_maps(&self) -> Api<DynamicObject> {
        self.api("v1", "ConfigMap", "configmaps")
    }

    /// Applies a YAML object (server-side apply, forced).
    async fn apply(&self, api: &Api<DynamicObject>, yaml: &str) -> DynamicObject {
        let value: Value = serde_saphyr::from_str(yaml).unwrap();
        let name = value["metadata"]["name"].as_str().unwrap().to_owned();
        api.patch(
            &name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(value),
        )
        .await
        .unwrap_or_else(|e| panic!("apply {name}: {e}"))
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap();
        }
    }
}

/// Polls `check` until it returns `Some`.
async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Deletes `name` and waits until it is gone (its finalizers done).
async fn delete_and_wait(api: &Api<DynamicObject>, name: &str) {
    api.delete(name, &DeleteParams::default()).await.unwrap();
    eventually(&format!("{name} is deleted"), || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

async fn data_of(api: &Api<DynamicObject>, name: &str) -> Option<Value> {
    api.get_opt(name)
        .await
        .ok()
        .flatten()
        .map(|o| o.data["data"].clone())
}

fn condition(object: &DynamicObject, type_: &str) -> Option<Value> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

const GREETER_CRD: &str = r#"
  schema:
    openAPIV3Schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            name: {type: string}
            enabled: {type: boolean}
            suffix: {type: string}
            settings: {type: string}
"#;

fn greeters(steps: &str) -> String {
    format!(
        "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata: {{name: greeters}}\nspec:\n  for: {{apiVersion: example.com/v1, kind: Greeter}}\n{GREETER_CRD}  steps:\n{steps}"
    )
}

fn note(word: &str) -> String {
    format!(
        "  - child:\n      id: note\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {{name: \"${{self.metadata.name}}-note\"}}\n        data: {{hello: \"{word} ${{self.spec.name}}\"}}\n"
    )
}

fn greeter(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Greeter\nmetadata: {{name: {name}, namespace: default}}\nspec: {spec}\n"
    )
}

async fn greeter_api(running: &Running) -> Api<DynamicObject> {
    let api = running.api("example.com/v1", "Greeter", "greeters");
    eventually("the Greeter kind is served", || async {
        api.list(&Default::default()).await.ok().map(|_| ())
    })
    .await;
    api
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_definition_starts_changes_every_instance_keeps_its_last_good_version_and_stops() {
    let running = Running::start().await;
    let definitions = running.definitions_api();
    running.apply(&definitions, &greeters(&note("hello"))).await;
    let greeters_api = greeter_api(&running).await;
    for name in ["g1", "g2"] {
        running
            .apply(&greeters_api, &greeter(name, "{name: bob}"))
            .await;
    }
    let cms = running.config_maps();
    for name in ["g1-note", "g2-note"] {
        eventually("each greeter has its note", || async {
            (data_of(&cms, name).await? == json!({"hello": "hello bob"})).then_some(())
        })
        .await;
    }
    let status = eventually("the definition reports itself ready", || async {
        let definition = definitions.get("greeters").await.ok()?;
        let ready = condition(&definition, "Ready")?;
        (ready["status"] == "True" && definition.data["status"]["instances"] == 2)
            .then_some(definition.data["status"].clone())
    })
    .await;
    assert_eq!(status["for"], "example.com/v1/Greeter");
    assert_eq!(
        status["watches"],
        json!(["v1/ConfigMap", "example.com/v1/Greeter"])
    );

    // An edit re-reconciles every instance.
    running.apply(&definitions, &greeters(&note("hi"))).await;
    for name in ["g1-note", "g2-note"] {
        eventually("each note follows the edit", || async {
            (data_of(&cms, name).await? == json!({"hello": "hi bob"})).then_some(())
        })
        .await;
    }

    // A bad edit is refused and reported; the last good version keeps running.
    let bad = greeters(&note("hey").replace("self.spec.name", "self.spec.nmae"));
    running.apply(&definitions, &bad).await;
    let compiled = eventually("the bad edit is reported", || async {
        let definition = definitions.get("greeters").await.ok()?;
        let compiled = condition(&definition, "Compiled")?;
        (compiled["status"] == "False").then_some(compiled)
    })
    .await;
    assert_eq!(compiled["reason"], "Invalid");
    let message = compiled["message"].as_str().unwrap();
    assert!(
        message.contains("spec.steps[0].child.template.data.hello: ${self.spec.nmae}: self.spec has no field \"nmae\""),
        "{message}"
    );
    assert!(
        message.contains("the last good version (generation 2) keeps running"),
        "{message}"
    );
    running
        .apply(&greeters_api, &greeter("g3", "{name: ann}"))
        .await;
    eventually("a new instance gets the last good version", || async {
        (data_of(&cms, "g3-note").await? == json!({"hello": "hi ann"})).then_some(())
    })
    .await;

    // Deleting the definition stops its controller.
    delete_and_wait(&definitions, "greeters").await;
    running
        .apply(&greeters_api, &greeter("g4", "{name: cy}"))
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        data_of(&cms, "g4-note").await,
        None,
        "a stopped definition made a note"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn include_when_step_removal_and_renames_delete_exactly_what_the_definition_made() {
    let running = Running::start().await;
    let definitions = running.definitions_api();
    let extra = "  - child:\n      id: extra\n      includeWhen: [\"${self.spec.?enabled.orValue(false)}\"]\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: \"${self.metadata.name}-${self.spec.?suffix.orValue('x')}\"}\n        data: {a: b}\n";
    running
        .apply(
            &definitions,
            &greeters(&format!("{}{extra}", note("hello"))),
        )
        .await;
    let greeters_api = greeter_api(&running).await;
    let cms = running.config_maps();
    // A ConfigMap nobody's definition made, in the same namespace, is never touched.
    running
        .apply(&cms, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bystander, namespace: default}\ndata: {k: v}\n")
        .await;
    running
        .apply(&greeters_api, &greeter("g1", "{name: bob}"))
        .await;
    eventually("the note exists", || async {
        data_of(&cms, "g1-note").await
    })
    .await;
    let g1 = greeters_api.get("g1").await.unwrap();
    let extra_condition = eventually("the excluded child is reported", || async {
        condition(&greeters_api.get("g1").await.ok()?, "ExtraReady")
    })
    .await;
    assert_eq!(
        extra_condition["reason"], "NotIncluded",
        "{extra_condition}"
    );
    assert_eq!(data_of(&cms, "g1-x").await, None);
    assert!(g1.metadata.uid.is_some());

    // includeWhen turning true creates the child; a new name replaces the old one.
    running
        .apply(&greeters_api, &greeter("g1", "{name: bob, enabled: true}"))
        .await;
    eventually("the included child exists", || async {
        data_of(&cms, "g1-x").await
    })
    .await;
    running
        .apply(
            &greeters_api,
            &greeter("g1", "{name: bob, enabled: true, suffix: \"y\"}"),
        )
        .await;
    eventually("the renamed child replaces the old one", || async {
        let renamed = data_of(&cms, "g1-y").await.is_some();
        let old = data_of(&cms, "g1-x").await.is_some();
        (renamed && !old).then_some(())
    })
    .await;
    // includeWhen turning false deletes it.
    running
        .apply(
            &greeters_api,
            &greeter("g1", "{name: bob, enabled: false, suffix: \"y\"}"),
        )
        .await;
    eventually("the excluded child is deleted", || async {
        data_of(&cms, "g1-y").await.is_none().then_some(())
    })
    .await;

    // A step removed from the definition takes its children with it.
    running
        .apply(
            &greeters_api,
            &greeter("g1", "{name: bob, enabled: true, suffix: \"z\"}"),
        )
        .await;
    eventually("the child is back", || async {
        data_of(&cms, "g1-z").await
    })
    .await;
    running.apply(&definitions, &greeters(&note("hello"))).await;
    eventually("the removed step's child is deleted", || async {
        data_of(&cms, "g1-z").await.is_none().then_some(())
    })
    .await;
    assert!(
        data_of(&cms, "g1-note").await.is_some(),
        "the kept step's child stays"
    );
    assert!(
        data_of(&cms, "bystander").await.is_some(),
        "an unrelated ConfigMap stays"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_are_tracked_missing_ones_fail_in_status_and_never_block_deletion() {
    let running = Running::start().await;
    let definitions = running.definitions_api();
    let steps = "  - ref:\n      id: settings\n      apiVersion: v1\n      kind: ConfigMap\n      name: \"${self.spec.settings}\"\n  - finalizer:\n      name: example.com/cleanup\n      steps:\n      - child:\n          id: copy\n          template:\n            apiVersion: v1\n            kind: ConfigMap\n            metadata: {name: \"${self.metadata.name}-copy\"}\n            data: {color: \"${settings.data.color}\"}\n";
    running.apply(&definitions, &greeters(steps)).await;
    let greeters_api = greeter_api(&running).await;
    let cms = running.config_maps();
    running
        .apply(&greeters_api, &greeter("g1", "{settings: palette}"))
        .await;

    let ready = eventually("the missing ref is reported", || async {
        let ready = condition(&greeters_api.get("g1").await.ok()?, "Ready")?;
        (ready["status"] == "False" && ready["reason"] == "SettingsFailed").then_some(ready)
    })
    .await;
    assert_eq!(
        ready["message"],
        "spec.steps[0].ref: ConfigMap default/palette does not exist"
    );

    // Creating (then changing) the referenced object re-reconciles through the tracker.
    let palette = |color: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: palette, namespace: default}}\ndata: {{color: {color}}}\n"
        )
    };
    running.apply(&cms, &palette("red")).await;
    eventually("the copy holds the color", || async {
        (data_of(&cms, "g1-copy").await? == json!({"color": "red"})).then_some(())
    })
    .await;
    running.apply(&cms, &palette("blue")).await;
    eventually("the copy follows the ref", || async {
        (data_of(&cms, "g1-copy").await? == json!({"color": "blue"})).then_some(())
    })
    .await;
    let g1 = greeters_api.get("g1").await.unwrap();
    assert_eq!(
        g1.metadata.finalizers,
        Some(vec!["example.com/cleanup".to_owned()])
    );

    // With the ref gone, the parent's templates no longer evaluate; deletion still ends.
    cms.delete("palette", &DeleteParams::default())
        .await
        .unwrap();
    delete_and_wait(&greeters_api, "g1").await;
    eventually("its child is collected", || async {
        data_of(&cms, "g1-copy").await.is_none().then_some(())
    })
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_expression_sets_ready_false_naming_the_step_and_the_expression() {
    let running = Running::start().await;
    let steps = "  - child:\n      id: note\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: \"${self.metadata.name}-note\"}\n        data: {first: \"${self.spec.name.split(',')[1]}\"}\n";
    running
        .apply(&running.definitions_api(), &greeters(steps))
        .await;
    let greeters_api = greeter_api(&running).await;
    running
        .apply(&greeters_api, &greeter("g1", "{name: solo}"))
        .await;
    let ready = eventually("the failure is reported", || async {
        let ready = condition(&greeters_api.get("g1").await.ok()?, "Ready")?;
        (ready["status"] == "False").then_some(ready)
    })
    .await;
    assert_eq!(ready["reason"], "NoteFailed", "{ready}");
    let message = ready["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "spec.steps[0].child.template.data.first: ${self.spec.name.split(',')[1]}: "
        ),
        "{message}"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_set_follows_its_list_and_definitions_share_one_watch_per_kind() {
    let running = Running::start().await;
    let path = format!(
        "{}/examples/definitions/configsets.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let loaded =
        parse_documents(&std::fs::read_to_string(path).unwrap(), "configsets.yaml").unwrap();
    running.definitions.start(&loaded[0]).await.unwrap();
    running
        .apply(&running.definitions_api(), &greeters(&note("hello")))
        .await;
    let sets = running.api("example.com/v1", "ConfigSet", "configsets");
    eventually("the ConfigSet kind is served", || async {
        sets.list(&Default::default()).await.ok().map(|_| ())
    })
    .await;
    let set = |entries: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: ConfigSet\nmetadata: {{name: cs, namespace: default}}\nspec: {{entries: {entries}}}\n"
        )
    };
    running
        .apply(
            &sets,
            &set("[{name: a, value: '1'}, {name: b, value: '2'}]"),
        )
        .await;
    let cms = running.config_maps();
    for (name, value) in [("cs-a", "1"), ("cs-b", "2")] {
        eventually("each entry has its ConfigMap", || async {
            (data_of(&cms, name).await? == json!({"value": value})).then_some(())
        })
        .await;
    }
    running.apply(&sets, &set("[{name: b, value: '3'}]")).await;
    eventually(
        "a removed entry loses its ConfigMap, a changed one follows",
        || async {
            let gone = data_of(&cms, "cs-a").await.is_none();
            let changed = data_of(&cms, "cs-b").await == Some(json!({"value": "3"}));
            (gone && changed).then_some(())
        },
    )
    .await;
    let status = eventually("the status counts the entries", || async {
        let cs = sets.get("cs").await.ok()?;
        (cs.data["status"]["entries"] == 1).then_some(cs.data["status"].clone())
    })
    .await;
    assert_eq!(condition_of(&status, "Ready")["status"], "True", "{status}");
    let config_map = Gvk::new("", "v1", "ConfigMap");
    let watched = running.client.watched_kinds();
    assert_eq!(
        watched.iter().filter(|k| **k == config_map).count(),
        1,
        "{watched:?}"
    );
    running.stop().await;
}

fn condition_of(status: &Value, type_: &str) -> Value {
    status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == type_).cloned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_widget_definition_behaves_as_the_rust_widget_controller() {
    // The Rust controller on one server, the definition on another; same Widgets.
    let rust = Running::start().await;
    {
        let config = Config::new(rust.client.clone(), "rust");
        let mut manager = Manager::new(rust.client.clone(), ManagerOptions::default());
        widgets::install_crd(&rust.kube).await.unwrap();
        widgets::register(&mut manager, &config).unwrap();
        tokio::spawn(manager.run(std::future::pending()));
    }
    let data = Running::start().await;
    let path = format!(
        "{}/examples/definitions/widgets.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let loaded = parse_documents(&std::fs::read_to_string(path).unwrap(), "widgets.yaml").unwrap();
    data.definitions.start(&loaded[0]).await.unwrap();

    let mut results = Vec::new();
    for running in [&rust, &data] {
        let widgets = running.api("example.com/v1", "Widget", "widgets");
        eventually("the Widget kind is served", || async {
            widgets.list(&Default::default()).await.ok().map(|_| ())
        })
        .await;
        let widget = |name: &str, spec: &str| {
            format!(
                "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}, namespace: default}}\nspec: {spec}\n"
            )
        };
        running
            .apply(&widgets, &widget("w1", "{greeting: hi, size: 2}"))
            .await;
        running.apply(&widgets, &widget("w2", "{}")).await;
        let cms = running.config_maps();
        let mut seen = Vec::new();
        for name in ["w1", "w2"] {
            let cm = eventually("the widget's ConfigMap exists", || async {
                cms.get_opt(&format!("{name}-config")).await.ok().flatten()
            })
            .await;
            let ready = eventually("the widget is ready", || async {
                let w = widgets.get(name).await.ok()?;
                let ready = condition(&w, "ConfigMapReady")?;
                (ready["status"] == "True").then_some(ready)
            })
            .await;
            let mut labels = cm.metadata.labels.clone().unwrap_or_default();
            labels.retain(|k, _| !k.starts_with("dynrec.dev/"));
            let owner = cm.metadata.owner_references.clone().unwrap_or_default();
            seen.push(json!({
                "data": cm.data["data"], "labels": labels,
                "owner": owner.iter().map(|o| (o.kind.clone(), o.name.clone(), o.controller)).collect::<Vec<_>>(),
                "condition": [ready["reason"].clone(), ready["message"].clone()],
            }));
        }
        results.push(seen);
    }
    assert_eq!(results[0], results[1], "Rust controller vs definition");
    assert_eq!(
        results[1][1]["data"],
        json!({"greeting": "hello", "size": "1"})
    );
    rust.stop().await;
    data.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_from_a_file_is_refused_with_every_error() {
    let running = Running::start().await;
    let text = greeters(&note("hello").replace("self.spec.name", "self.spec.nmae"));
    let loaded = parse_documents(&text, "greeters.yaml").unwrap();
    let err = running
        .definitions
        .start(&loaded[0])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("greeters.yaml (document 1): spec.steps[0].child.template.data.hello: ${self.spec.nmae}: self.spec has no field \"nmae\""),
        "{err}"
    );
    let good = parse_documents(&greeters(&note("hello")), "greeters.yaml").unwrap();
    running.definitions.start(&good[0]).await.unwrap();
    let mut twin = good[0].clone();
    twin.definition.metadata.name = "greeters-too".into();
    twin.source = "twin.yaml".into();
    let err = running
        .definitions
        .start(&twin)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "twin.yaml: example.com/v1/Greeter is already reconciled by the definition \"greeters\" (greeters.yaml (document 1))"
    );
    twin.definition.metadata.name = "greeters".into();
    let err = running
        .definitions
        .start(&twin)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "twin.yaml: the definition \"greeters\" already runs from greeters.yaml (document 1)"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_else_runs_one_branch_and_marks_the_other_branch_skipped() {
    let running = Running::start().await;
    let branch = |id: &str| {
        format!(
            "      - child:\n          id: {id}\n          template:\n            apiVersion: v1\n            kind: ConfigMap\n            metadata: {{name: \"${{self.metadata.name}}-{id}\"}}\n            data: {{branch: {id}}}\n"
        )
    };
    let steps = format!(
        "  - if:\n      condition: \"self.spec.?enabled.orValue(false)\"\n      then:\n{}      else:\n{}",
        branch("up"),
        branch("down")
    );
    running
        .apply(&running.definitions_api(), &greeters(&steps))
        .await;
    let greeters_api = greeter_api(&running).await;
    let cms = running.config_maps();
    running
        .apply(&greeters_api, &greeter("g1", "{enabled: false}"))
        .await;
    eventually("the else branch ran", || async {
        data_of(&cms, "g1-down").await
    })
    .await;
    let skipped = eventually("the then branch is reported skipped", || async {
        let g1 = greeters_api.get("g1").await.ok()?;
        let ready = condition(&g1, "Ready")?;
        (ready["status"] == "True")
            .then(|| condition(&g1, "UpReady"))
            .flatten()
    })
    .await;
    assert_eq!(skipped["reason"], "Skipped", "{skipped}");
    assert_eq!(data_of(&cms, "g1-up").await, None);

    running
        .apply(&greeters_api, &greeter("g1", "{enabled: true}"))
        .await;
    eventually("the then branch ran", || async {
        data_of(&cms, "g1-up").await
    })
    .await;
    let g1 = eventually("the else branch is reported skipped", || async {
        let g1 = greeters_api.get("g1").await.ok()?;
        (condition(&g1, "DownReady")?["reason"] == "Skipped").then_some(g1)
    })
    .await;
    assert_eq!(condition(&g1, "UpReady").unwrap()["status"], "True");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_for_a_kind_it_does_not_define_never_writes_its_status() {
    let running = Running::start().await;
    let definition = "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata: {name: deployment-notes}\nspec:\n  for: {apiVersion: apps/v1, kind: Deployment}\n  steps:\n  - child:\n      id: note\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: \"${self.metadata.name}-note\"}\n        data: {image: \"${self.spec.template.spec.containers[0].image}\"}\n";
    let loaded = parse_documents(definition, "notes.yaml").unwrap();
    running.definitions.start(&loaded[0]).await.unwrap();
    let deployments = running.api("apps/v1", "Deployment", "deployments");
    running
        .apply(&deployments, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: app, image: \"nginx:1.27\"}]}\n")
        .await;
    let cms = running.config_maps();
    eventually("the note exists", || async {
        (data_of(&cms, "web-note").await? == json!({"image": "nginx:1.27"})).then_some(())
    })
    .await;
    // The status as kube's deployment controller writes it (not yet observed this generation);
    // the patch is an event that reconciles the Deployment again.
    let status =
        json!({"observedGeneration": 0, "replicas": 1, "availableReplicas": 1, "conditions": null});
    deployments
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let after = deployments.get("web").await.unwrap().data["status"].clone();
    assert_eq!(
        after,
        json!({"observedGeneration": 0, "replicas": 1, "availableReplicas": 1}),
        "the Deployment's status is the deployment controller's"
    );
    running.stop().await;
}

const GADGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              owner: {type: string}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_waits_for_a_kind_not_served_yet_and_starts_when_it_appears() {
    let running = Running::start().await;
    let definitions = running.definitions_api();
    let gadget = "  - child:\n      id: gadget\n      template:\n        apiVersion: example.org/v1\n        kind: Gadget\n        metadata: {name: \"${self.metadata.name}\"}\n        spec: {owner: \"${self.metadata.name}\"}\n";
    running.apply(&definitions, &greeters(gadget)).await;
    let (compiled, ready) = eventually("the definition waits for Gadget", || async {
        let definition = definitions.get("greeters").await.ok()?;
        let compiled = condition(&definition, "Compiled")?;
        (compiled["reason"] == "KindNotServed").then(|| {
            (
                compiled,
                condition(&definition, "Ready").unwrap_or_default(),
            )
        })
    })
    .await;
    assert_eq!(compiled["status"], "False");
    assert_eq!(
        compiled["message"],
        "ReconcilerDefinition greeters: waiting for the cluster to serve example.org/v1/Gadget"
    );
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "KindNotServed");

    // The parent's CRD is already in place; the Gadget CRD comes later, and the definition
    // starts by itself.
    let greeters_api = greeter_api(&running).await;
    running
        .apply(&greeters_api, &greeter("g1", "{name: bob}"))
        .await;
    let crds = running.api(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    );
    running.apply(&crds, GADGET_CRD).await;
    let gadgets = running.api("example.org/v1", "Gadget", "gadgets");
    let made = eventually("the gadget is made", || async {
        gadgets.get_opt("g1").await.ok().flatten()
    })
    .await;
    assert_eq!(made.data["spec"], json!({"owner": "g1"}));
    // The definition's status is written after its controller starts, which may be after
    // the controller made the gadget.
    eventually("the definition says Compiled", || async {
        let definition = definitions.get("greeters").await.ok()?;
        (condition(&definition, "Compiled")?["status"] == "True").then_some(())
    })
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependents_of_an_excluded_step_are_excluded_and_come_back_with_it() {
    let running = Running::start().await;
    let definitions = running.definitions_api();
    let config_map = |id: &str, extra: &str, data: &str| {
        format!(
            "  - child:\n      id: {id}\n{extra}      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {{name: \"${{self.metadata.name}}-{id}\"}}\n        data: {data}\n"
        )
    };
    let steps = [
        config_map(
            "service",
            "      includeWhen: [\"${self.spec.enabled}\"]\n",
            "{port: \"80\"}",
        ),
        // Reads the service plainly: excluded with it.
        config_map("ingress", "", "{backend: \"${service.metadata.name}\"}"),
        // Reads the ingress: excluded with it in turn.
        config_map("route", "", "{via: \"${ingress.data.backend}\"}"),
        // Reads the service as an optional: stays, and says so.
        config_map(
            "note",
            "",
            "{service: \"${service.?metadata.?name.orValue('none')}\"}",
        ),
    ]
    .concat();
    running.apply(&definitions, &greeters(&steps)).await;
    let greeters_api = greeter_api(&running).await;
    let cms = running.config_maps();
    let flip = |enabled: bool| greeter("g1", &format!("{{name: bob, enabled: {enabled}}}"));

    running.apply(&greeters_api, &flip(true)).await;
    eventually("every child is made", || async {
        (data_of(&cms, "g1-route").await? == json!({"via": "g1-service"})
            && data_of(&cms, "g1-note").await? == json!({"service": "g1-service"}))
        .then_some(())
    })
    .await;

    running.apply(&greeters_api, &flip(false)).await;
    let parent = eventually("the dependents are excluded with the service", || async {
        let gone = data_of(&cms, "g1-service").await.is_none()
            && data_of(&cms, "g1-ingress").await.is_none()
            && data_of(&cms, "g1-route").await.is_none()
            && data_of(&cms, "g1-note").await? == json!({"service": "none"});
        let parent = greeters_api.get("g1").await.ok()?;
        let route = condition(&parent, "RouteReady")?;
        (gone && route["reason"] == "DependencyExcluded").then_some(parent)
    })
    .await;
    let ingress = condition(&parent, "IngressReady").unwrap();
    assert_eq!(ingress["status"], "True");
    assert_eq!(ingress["reason"], "DependencyExcluded");
    assert_eq!(ingress["message"], "it reads service, which is excluded");
    assert_eq!(
        condition(&parent, "RouteReady").unwrap()["message"],
        "it reads ingress, which is excluded"
    );
    assert_eq!(
        condition(&parent, "ServiceReady").unwrap()["reason"],
        "NotIncluded"
    );
    assert_eq!(condition(&parent, "Ready").unwrap()["status"], "True");

    running.apply(&greeters_api, &flip(true)).await;
    eventually("the dependents come back with the service", || async {
        (data_of(&cms, "g1-route").await? == json!({"via": "g1-service"})
            && data_of(&cms, "g1-note").await? == json!({"service": "g1-service"}))
        .then_some(())
    })
    .await;
    running.stop().await;
}

/// A definition of `kind` (plural `plural`) whose child ConfigMap's template writes only its
/// name and a label, and whose status copies `field` of the child's data.
fn copier(kind: &str, plural: &str, field: &str) -> String {
    format!(
        r#"apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata: {{name: {plural}}}
spec:
  for: {{apiVersion: example.com/v1, kind: {kind}}}
  schema:
    openAPIV3Schema:
      type: object
      properties:
        spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
        status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
  steps:
  - child:
      id: note
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: "${{self.metadata.name}}-{plural}"
          labels: {{example.com/copied: "{field}"}}
  - sync:
      status: {{copied: "${{note.data.{field}}}"}}
"#
    )
}

/// What the shared ConfigMap cache holds of `name`, looked at without widening it.
async fn cached_data(client: &Client, name: &str) -> Option<Value> {
    let config_map = Gvk::new("", "v1", "ConfigMap");
    let probe = client.reading_only([(config_map.clone(), CachedFields::metadata())]);
    let cache = probe.cache(&config_map).await.ok()?;
    let key = dynrec::object::ObjectKey::namespaced("default", name);
    cache.get(&key).map(|object| object.data.clone())
}

/// Merge-patches the ConfigMap `name`.
async fn patch_config_map(running: &Running, name: &str, body: Value) {
    let params = PatchParams::default();
    let config_maps = running.config_maps();
    config_maps
        .patch(name, &params, &Patch::Merge(body))
        .await
        .unwrap();
}

/// Starts the [`copier`] of `field` for `kind`, makes one instance, `{plural}-1`, sets its
/// ConfigMap's data to `data` and waits until its status copied `data[field]`; returns the
/// kind's API.
async fn copy_one(
    running: &Running,
    (kind, plural, field): (&str, &str, &str),
    data: Value,
) -> Api<DynamicObject> {
    let definition = copier(kind, plural, field);
    running.apply(&running.definitions_api(), &definition).await;
    let instances = running.api("example.com/v1", kind, plural);
    eventually("the kind is served", || async {
        instances.list(&Default::default()).await.ok().map(|_| ())
    })
    .await;
    let instance = format!(
        "apiVersion: example.com/v1\nkind: {kind}\nmetadata: {{name: {plural}-1, namespace: default}}\nspec: {{}}\n"
    );
    running.apply(&instances, &instance).await;
    let config_map = format!("{plural}-1-{plural}");
    let cms = running.config_maps();
    eventually("the instance's ConfigMap is made", || async {
        cms.get_opt(&config_map).await.ok().flatten()
    })
    .await;
    let expected = data["data"][field].clone();
    patch_config_map(running, &config_map, data).await;
    eventually("the instance copies the field", || async {
        let copied = instances.get(&format!("{plural}-1")).await.ok()?;
        (copied.data["status"]["copied"] == expected).then_some(())
    })
    .await;
    instances
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_kind_is_cached_as_read_widened_for_a_later_reader_and_still_repaired() {
    let running = Running::start().await;
    let cms = running.config_maps();

    // The first definition reads data.x of its children: the cache keeps data.x, not data.y.
    let firsts = copy_one(
        &running,
        ("First", "firsts", "x"),
        json!({"data": {"x": "1", "y": "2"}}),
    )
    .await;
    let cached = eventually("the cache holds the change", || async {
        cached_data(&running.client, "firsts-1-firsts")
            .await
            .filter(|data| data["data"]["x"] == "1")
    })
    .await;
    assert_eq!(cached, json!({"data": {"x": "1"}}), "cached: {cached}");
    let config_map = Gvk::new("", "v1", "ConfigMap");
    let key = dynrec::object::ObjectKey::namespaced("default", "firsts-1-firsts");
    let whole = running.client.get(&config_map, &key).await.unwrap();
    assert_eq!(
        whole.data["data"],
        json!({"x": "1", "y": "2"}),
        "a reader that declared nothing reads whole objects"
    );

    // Drift in what the template writes is repaired; what it does not write is kept.
    let label = json!({"metadata": {"labels": {"example.com/copied": "changed"}}});
    patch_config_map(&running, "firsts-1-firsts", label).await;
    let repaired = eventually("the template's label is repaired", || async {
        let cm = cms.get("firsts-1-firsts").await.ok()?;
        let labels = cm.metadata.labels.clone().unwrap_or_default();
        (labels.get("example.com/copied").map(String::as_str) == Some("x")).then_some(cm)
    })
    .await;
    assert_eq!(repaired.data["data"], json!({"x": "1", "y": "2"}));

    // A second definition reads data.y: the cache is widened before its reads are served
    // from it, and its status sees the value.
    copy_one(
        &running,
        ("Second", "seconds", "y"),
        json!({"data": {"x": "3", "y": "4"}}),
    )
    .await;
    let widened = eventually("the cache holds data.y", || async {
        cached_data(&running.client, "firsts-1-firsts")
            .await
            .filter(|data| data["data"].get("y").is_some())
    })
    .await;
    assert_eq!(widened, json!({"data": {"x": "1", "y": "2"}}));
    patch_config_map(&running, "firsts-1-firsts", json!({"data": {"x": "5"}})).await;
    eventually("the First still follows data.x", || async {
        let first = firsts.get("firsts-1").await.ok()?;
        (first.data["status"]["copied"] == "5").then_some(())
    })
    .await;
    running.stop().await;
}
