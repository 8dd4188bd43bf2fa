//! KRO ResourceGraphDefinitions over the embedded API server, as `dynrec run --kro` runs
//! them: an RGD applied to the cluster becomes a running definition with the instance CRD
//! KRO generates, and the RGD, its instances and their children carry the status, labels
//! and finalizers KRO writes.

use std::time::Duration;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

mod kro_common;

use kro_common::{Running, condition, eventually, object_where};

const GRAPH: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: web-graph}
spec:
  schema:
    apiVersion: v1alpha1
    kind: WebGraph
    spec:
      image: string | default="nginx:1.27"
      replicas: integer | default=1 minimum=1 maximum=5
      tags: "[]string | minItems=1"
    status:
      configName: ${config.metadata.name}
      available: ${deployment.status.availableReplicas}
      tags: ${schema.spec.tags}
      labels: ${config.metadata.labels}
  resources:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: "${schema.metadata.name}"}
      spec:
        replicas: ${schema.spec.replicas}
        selector: {matchLabels: {app: "${schema.metadata.name}"}}
        template:
          metadata: {labels: {app: "${schema.metadata.name}"}}
          spec:
            containers:
            - name: main
              image: ${schema.spec.image}
              env:
              - {name: CONFIG, value: "${config.metadata.name}"}
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}-config"}
      data: {tags: "${schema.spec.tags.join(',')}"}
"#;

#[tokio::test]
async fn an_rgd_in_the_cluster_runs_with_kros_status_crd_labels_and_reverse_deletion() {
    let running = Running::start().await;
    running.apply(GRAPH).await.unwrap();
    let rgd = object_where(
        &running.rgds(),
        "web-graph",
        "the RGD to be Active",
        |rgd| rgd["status"]["state"] == "Active",
    )
    .await;
    // The order comes from the expressions: the deployment reads the config.
    assert_eq!(
        rgd["status"]["topologicalOrder"],
        json!(["config", "deployment"])
    );
    let ready = condition(&rgd, "Ready").unwrap();
    assert_eq!(
        (
            ready["status"].as_str(),
            ready["observedGeneration"].as_i64()
        ),
        (Some("True"), Some(1))
    );
    assert!(
        rgd["metadata"]["finalizers"]
            .as_array()
            .unwrap()
            .contains(&json!("kro.run/finalizer"))
    );
    for type_ in ["GraphAccepted", "KindReady", "ControllerReady"] {
        assert_eq!(condition(&rgd, type_).unwrap()["status"], "True", "{type_}");
    }

    // The instance CRD, as KRO generates it from the SimpleSchema.
    let crds = running.api("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    let crd = crds.get("webgraphs.kro.run").await.unwrap();
    let version = &crd.data["spec"]["versions"][0];
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(
        spec["properties"]["replicas"],
        json!({"type": "integer", "default": 1, "minimum": 1, "maximum": 5})
    );
    assert_eq!(spec["properties"]["tags"]["minItems"], 1);
    // Each status field typed as its expression's result, as KRO infers it.
    let status = &version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
    assert_eq!(status["configName"], json!({"type": "string"}));
    assert_eq!(status["available"], json!({"type": "number"}));
    assert_eq!(
        status["tags"],
        json!({"type": "array", "items": {"type": "string"}})
    );
    assert_eq!(
        status["labels"],
        json!({"type": "object", "additionalProperties": {"type": "string"}})
    );
    assert_eq!(status["state"], json!({"type": "string"}));
    let columns: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["State", "Ready", "Age"]);

    // The API server enforces the markers.
    let refused = running
        .apply("apiVersion: kro.run/v1alpha1\nkind: WebGraph\nmetadata: {name: bad, namespace: default}\nspec: {tags: [], replicas: 9}")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("spec.tags") && refused.contains("spec.replicas"),
        "{refused}"
    );

    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: WebGraph\nmetadata: {name: shop, namespace: default}\nspec: {tags: [a, b]}")
        .await
        .unwrap();
    let instances = running.api("kro.run/v1alpha1", "WebGraph");
    let instance = object_where(&instances, "shop", "the instance to be ACTIVE", |i| {
        i["status"]["state"] == "ACTIVE"
    })
    .await;
    assert_eq!(instance["metadata"]["labels"]["kro.run/owned"], "true");
    assert_eq!(
        instance["metadata"]["labels"]["kro.run/resource-graph-definition-name"],
        "web-graph"
    );
    assert!(
        instance["metadata"]["finalizers"]
            .as_array()
            .unwrap()
            .contains(&json!("kro.run/finalizer"))
    );
    assert_eq!(instance["status"]["configName"], "shop-config");
    // No kubelet fills in the deployment's status: as in KRO, that field is left out and
    // the instance is ACTIVE all the same.
    assert!(instance["status"].get("available").is_none());
    // KRO's conditions, in KRO's order, with its reasons; the steps' own are not shown.
    let conditions: Vec<(&str, &str, &str)> = instance["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["observedGeneration"], 1, "{c}");
            (
                c["type"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
                c["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        conditions,
        [
            ("InstanceManaged", "True", "Managed"),
            ("GraphResolved", "True", "Resolved"),
            ("ResourcesReady", "True", "AllResourcesReady"),
            ("Ready", "True", "Ready"),
        ]
    );

    let deployments = running.api("apps/v1", "Deployment");
    let config_maps = running.api("v1", "ConfigMap");
    let deployment = deployments.get("shop").await.unwrap();
    let labels = deployment.metadata.labels.clone().unwrap();
    assert_eq!(labels["kro.run/instance-name"], "shop");
    assert_eq!(labels["kro.run/instance-kind"], "WebGraph");
    assert_eq!(
        labels["kro.run/resource-graph-definition-name"],
        "web-graph"
    );
    assert_eq!(deployment.data["spec"]["replicas"], 1);
    let config = config_maps.get("shop-config").await.unwrap();
    assert_eq!(config.data["data"]["tags"], "a,b");

    // Deletion in reverse dependency order: the config stays while the deployment that
    // reads it is still there (held by a finalizer here).
    deployments
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["test/hold"]}})),
        )
        .await
        .unwrap();
    instances
        .delete("shop", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the deployment to be deleted", || async {
        let d = deployments.get("shop").await.ok()?;
        d.metadata.deletion_timestamp.is_some().then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        config_maps.get_opt("shop-config").await.unwrap().is_some(),
        "the config went before the deployment reading it"
    );
    deployments
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    eventually("the instance and its config to be gone", || async {
        let config = config_maps.get_opt("shop-config").await.ok()?;
        let instance = instances.get_opt("shop").await.ok()?;
        (config.is_none() && instance.is_none()).then_some(())
    })
    .await;

    // Deleting the RGD stops its controller and keeps its CRD (KRO's default).
    running
        .rgds()
        .delete("web-graph", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the RGD to be gone", || async {
        running
            .rgds()
            .get_opt("web-graph")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    assert!(crds.get_opt("webgraphs.kro.run").await.unwrap().is_some());
    running.stop().await;
}

#[tokio::test]
async fn an_external_reference_holds_the_instance_in_progress_until_it_exists() {
    let running = Running::start().await;
    running
        .apply(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: echo}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Echo
    spec: {source: string | default=settings}
  resources:
  - id: input
    externalRef:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.spec.source}"}
  - id: copy
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}-copy"}
      data: {value: '${input.?data.value.orValue("none")}'}
"#,
        )
        .await
        .unwrap();
    object_where(&running.rgds(), "echo", "the RGD to be Active", |rgd| {
        rgd["status"]["state"] == "Active"
    })
    .await;
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: Echo\nmetadata: {name: e1, namespace: default}\nspec: {}")
        .await
        .unwrap();
    let echoes = running.api("kro.run/v1alpha1", "Echo");
    let waiting = object_where(
        &echoes,
        "e1",
        "the instance to wait for its reference",
        |e| {
            e["status"]["state"] == "IN_PROGRESS"
                && condition(e, "ResourcesReady").is_some_and(|c| c["status"] == "False")
        },
    )
    .await;
    let message = condition(&waiting, "Ready").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with("awaiting resource readiness: InputResolved: ")
            && message.contains("ConfigMap default/settings does not exist"),
        "{message}"
    );
    let config_maps = running.api("v1", "ConfigMap");
    assert!(config_maps.get_opt("e1-copy").await.unwrap().is_none());
    running
        .apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {value: hello}")
        .await
        .unwrap();
    object_where(&echoes, "e1", "the instance to be ACTIVE", |e| {
        e["status"]["state"] == "ACTIVE"
    })
    .await;
    let copy = config_maps.get("e1-copy").await.unwrap();
    assert_eq!(copy.data["data"]["value"], "hello");
    running.stop().await;
}

/// The instance once its `ResourcesReady` is False with a message containing `text`.
async fn waiting_with(instances: &Api<DynamicObject>, name: &str, text: &str) -> Value {
    object_where(
        instances,
        name,
        &format!("ResourcesReady saying {text:?}"),
        |i| {
            condition(i, "ResourcesReady").is_some_and(|c| {
                c["status"] == "False" && c["message"].as_str().is_some_and(|m| m.contains(text))
            })
        },
    )
    .await
}

#[tokio::test]
async fn data_not_there_yet_and_dependencies_not_ready_are_waited_for_as_kro_waits() {
    let running = Running::start().await;
    let config_maps = running.api("v1", "ConfigMap");
    running
        .apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {other: x}")
        .await
        .unwrap();
    // A template reading a key its source does not have yet.
    running
        .apply_active_rgd(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: copier}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Copier
    spec: {}
    status: {value: "${settings.data.value}"}
  resources:
  - id: settings
    externalRef: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}}
  - id: copy
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}-copy"}
      data: {value: "${settings.data.value}"}
"#,
        )
        .await;
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: Copier\nmetadata: {name: c, namespace: default}\nspec: {}")
        .await
        .unwrap();
    let copiers = running.api("kro.run/v1alpha1", "Copier");
    let waiting = waiting_with(&copiers, "c", "no such key: value").await;
    assert_eq!(
        condition(&waiting, "Ready").unwrap()["message"],
        "awaiting resource readiness: CopyReady: spec.resources[1] (id copy).template.data.value: ${settings.data.value}: no such key: value"
    );
    assert_eq!(waiting["status"]["state"], "IN_PROGRESS", "{waiting}");
    running
        .apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {other: x, value: hello}")
        .await
        .unwrap();
    object_where(&copiers, "c", "the copier to be ACTIVE", |i| {
        i["status"]["state"] == "ACTIVE"
    })
    .await;
    assert_eq!(
        config_maps.get("c-copy").await.unwrap().data["data"]["value"],
        "hello"
    );
    let copier = copiers.get("c").await.unwrap();
    assert_eq!(copier.data["status"]["value"], "hello");
    // A status field that cannot be computed any more is gone, as KRO rebuilds its status.
    running
        .apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {other: x}")
        .await
        .unwrap();
    object_where(&copiers, "c", "status.value to be gone", |i| {
        i["status"].get("value").is_none() && i["status"]["state"] == "IN_PROGRESS"
    })
    .await;
    // A readyWhen reading a status field its controller has not written yet.
    running
        .apply_active_rgd(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: app}
spec:
  schema: {apiVersion: v1alpha1, kind: App, spec: {}}
  resources:
  - id: deployment
    readyWhen: ["${deployment.status.availableReplicas == deployment.spec.replicas}"]
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: "${schema.metadata.name}"}
      spec:
        replicas: 1
        selector: {matchLabels: {app: "${schema.metadata.name}"}}
        template:
          metadata: {labels: {app: "${schema.metadata.name}"}}
          spec: {containers: [{name: main, image: nginx}]}
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}-config"}
      data: {deployment: "${deployment.metadata.name}"}
"#,
        )
        .await;
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: App\nmetadata: {name: a, namespace: default}\nspec: {}")
        .await
        .unwrap();
    let apps = running.api("kro.run/v1alpha1", "App");
    let waiting = waiting_with(&apps, "a", "no such key: availableReplicas").await;
    let message = condition(&waiting, "Ready").unwrap()["message"].to_string();
    assert!(
        message.starts_with(
            "\"awaiting resource readiness: DeploymentReady: Deployment a: readyWhen ${"
        ) && message.ends_with("} waits for its data: no such key: availableReplicas\""),
        "{message}"
    );
    assert_eq!(waiting["status"]["state"], "IN_PROGRESS", "{waiting}");
    // As KRO's dependents, the ConfigMap reading the Deployment waits for it to be ready.
    assert!(config_maps.get_opt("a-config").await.unwrap().is_none());
    running
        .api("apps/v1", "Deployment")
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 1, "availableReplicas": 1}})),
        )
        .await
        .unwrap();
    object_where(&apps, "a", "the app to be ACTIVE", |i| {
        i["status"]["state"] == "ACTIVE"
    })
    .await;
    assert_eq!(
        config_maps.get("a-config").await.unwrap().data["data"]["deployment"],
        "a"
    );
    running.stop().await;
}

#[tokio::test]
async fn a_collection_makes_a_child_per_item_labelled_and_listed_in_foreach_order() {
    let running = Running::start().await;
    running
        .apply(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: teams}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Teams
    spec: {names: "[]string"}
    status:
      first: ${teamConfigs[0].data.team}
      order: ${teamConfigs.map(c, c.data.team)}
  resources:
  - id: teamConfigs
    forEach:
    - team: ${schema.spec.names}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}-${team}"}
      data: {team: "${team}"}
"#,
        )
        .await
        .unwrap();
    object_where(&running.rgds(), "teams", "the RGD to be Active", |rgd| {
        rgd["status"]["state"] == "Active"
    })
    .await;
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: Teams\nmetadata: {name: org, namespace: default}\nspec: {names: [red, blue]}")
        .await
        .unwrap();
    let config_maps = running.api("v1", "ConfigMap");
    let red = object_where(&config_maps, "org-red", "a child per item", |c| {
        c["data"]["team"] == "red"
    })
    .await;
    let labels = &red["metadata"]["labels"];
    assert_eq!(labels["kro.run/node-id"], "teamConfigs");
    // KRO's position in the forEach, not in name order (org-blue sorts first).
    assert_eq!(labels["kro.run/collection-index"], "0");
    assert_eq!(labels["kro.run/collection-size"], "2");
    let blue = config_maps.get("org-blue").await.unwrap();
    let labels = blue.metadata.labels.unwrap();
    assert_eq!(labels["kro.run/collection-index"], "1");
    assert_eq!(labels["kro.run/collection-size"], "2");
    let instances = running.api("kro.run/v1alpha1", "Teams");
    let instance = object_where(&instances, "org", "the instance to be ACTIVE", |i| {
        i["status"]["state"] == "ACTIVE"
    })
    .await;
    assert_eq!(instance["status"]["first"], "red");
    assert_eq!(instance["status"]["order"], json!(["red", "blue"]));
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: Teams\nmetadata: {name: org, namespace: default}\nspec: {names: [blue]}")
        .await
        .unwrap();
    object_where(
        &config_maps,
        "org-blue",
        "the item's labels to follow the forEach",
        |c| {
            c["metadata"]["labels"]["kro.run/collection-index"] == "0"
                && c["metadata"]["labels"]["kro.run/collection-size"] == "1"
        },
    )
    .await;
    eventually("the removed item's child to be deleted", || async {
        config_maps
            .get_opt("org-red")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    running.stop().await;
}

#[tokio::test]
async fn a_bad_rgd_is_inactive_with_an_error_naming_its_place() {
    let running = Running::start().await;
    running
        .apply(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: broken}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Broken
    spec: {name: string}
  resources:
  - id: first
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${second.metadata.name}-a"}
  - id: second
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${first.metadata.name}-b"}
      data: {x: "${schema.spec.nam}"}
"#,
        )
        .await
        .unwrap();
    let rgd = object_where(&running.rgds(), "broken", "the RGD to be refused", |rgd| {
        rgd["status"]["state"] == "Inactive"
    })
    .await;
    let accepted = condition(&rgd, "GraphAccepted").unwrap();
    assert_eq!(accepted["reason"], "InvalidResourceGraph");
    let message = accepted["message"].as_str().unwrap();
    assert!(
        message.contains("cycle between bindings: first -> second -> first"),
        "{message}"
    );
    assert!(rgd["status"].get("topologicalOrder").is_none());
    running.stop().await;
}

#[tokio::test]
async fn an_empty_graph_is_active_and_kros_random_library_names_children() {
    let running = Running::start().await;
    running
        .apply(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: noop}
spec:
  schema:
    apiVersion: v1alpha1
    kind: NoOp
    spec: {values: object | required=true}
  resources: []
"#,
        )
        .await
        .unwrap();
    running
        .apply(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: seeded}
spec:
  schema:
    apiVersion: v1alpha1
    group: test.kro.run
    kind: Seeded
    spec: {}
  resources:
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${random.seededString(10, schema.metadata.name)}"}
      data: {n: "${string(random.seededInt(0, 100, schema.metadata.name))}"}
"#,
        )
        .await
        .unwrap();
    for name in ["noop", "seeded"] {
        object_where(&running.rgds(), name, "the RGD to be Active", |rgd| {
            rgd["status"]["state"] == "Active"
        })
        .await;
    }
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: NoOp\nmetadata: {name: n1, namespace: default}\nspec: {values: {any: [1, 2]}}")
        .await
        .unwrap();
    let noops = running.api("kro.run/v1alpha1", "NoOp");
    let noop = object_where(
        &noops,
        "n1",
        "the empty graph's instance to be ACTIVE",
        |i| i["status"]["state"] == "ACTIVE",
    )
    .await;
    assert_eq!(noop["spec"]["values"], json!({"any": [1, 2]}));
    running
        .apply("apiVersion: test.kro.run/v1alpha1\nkind: Seeded\nmetadata: {name: s1, namespace: default}\nspec: {}")
        .await
        .unwrap();
    let seeded = running.api("test.kro.run/v1alpha1", "Seeded");
    object_where(&seeded, "s1", "the instance to be ACTIVE", |i| {
        i["status"]["state"] == "ACTIVE"
    })
    .await;
    let config_maps = running.api("v1", "ConfigMap");
    let named: Vec<DynamicObject> = config_maps
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| {
            c.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key("kro.run/owned"))
        })
        .collect();
    assert_eq!(named.len(), 1);
    let name = named[0].metadata.name.clone().unwrap();
    assert_eq!(name.len(), 10);
    assert!(
        name.bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()),
        "{name}"
    );
    let n: i64 = named[0].data["data"]["n"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((0..100).contains(&n));
    running.stop().await;
}

#[tokio::test]
async fn children_elsewhere_are_found_by_kros_labels_and_the_hash_library_runs() {
    let running = Running::start().await;
    running
        .apply_active_rgd(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: spread}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Spread
    spec: {}
  resources:
  - id: ns
    template:
      apiVersion: v1
      kind: Namespace
      metadata: {name: "${schema.metadata.name}-space"}
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: settings, namespace: "${ns.metadata.name}"}
      data:
        from: "${schema.metadata.namespace}"
        fnv: "${base64.encode(hash.fnv64a(schema.metadata.name))}"
"#,
        )
        .await;
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: Spread\nmetadata: {name: s1, namespace: default}\nspec: {}")
        .await
        .unwrap();
    let spreads = running.api("kro.run/v1alpha1", "Spread");
    let instance = object_where(&spreads, "s1", "the instance to be ACTIVE", |i| {
        i["status"]["state"] == "ACTIVE"
    })
    .await;
    let uid = instance["metadata"]["uid"].as_str().unwrap().to_owned();
    let namespaces: Api<DynamicObject> = Api::all_with(
        running.kube.clone(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Namespace")),
    );
    let config_maps: Api<DynamicObject> = Api::namespaced_with(
        running.kube.clone(),
        "s1-space",
        &ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap")),
    );
    let namespace = namespaces.get("s1-space").await.unwrap();
    let config_map = config_maps.get("settings").await.unwrap();
    assert_eq!(config_map.data["data"]["from"], "default");
    // KRO's hash library and cel-go's base64: FNV-1a 64 of "s1", as Go's hash/fnv has it.
    assert_eq!(config_map.data["data"]["fnv"], "CNj/B7V40Uk=");
    // As KRO: no ownerReference (one to a namespaced instance is invalid on both), the
    // instance's UID in a label instead.
    for child in [&namespace, &config_map] {
        assert!(child.metadata.owner_references.is_none(), "{child:?}");
        assert_eq!(
            child.metadata.labels.as_ref().unwrap()["kro.run/instance-id"],
            uid
        );
    }
    // A child deleted by hand is noticed (it is tracked) and created again.
    config_maps
        .delete("settings", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the deleted ConfigMap to be created again", || async {
        config_maps.get_opt("settings").await.unwrap()
    })
    .await;
    // Deleting the instance deletes its children wherever they are.
    spreads
        .delete("s1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the instance and its ConfigMap to be gone", || async {
        let gone = spreads.get_opt("s1").await.unwrap().is_none()
            && config_maps.get_opt("settings").await.unwrap().is_none();
        gone.then_some(())
    })
    .await;
    let namespace = namespaces.get_opt("s1-space").await.unwrap();
    assert!(
        namespace.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
        "the namespace child is deleted"
    );
    running.stop().await;
}

#[tokio::test]
async fn several_foreach_dimensions_make_their_cartesian_product_and_an_empty_one_none() {
    let running = Running::start().await;
    running
        .apply_active_rgd(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: regional}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Regional
    spec: {regions: "[]string", tiers: "[]string"}
    status:
      made: ${size(configs)}
  resources:
  - id: configs
    forEach:
    - region: ${schema.spec.regions}
    - tier: ${schema.spec.tiers}
    readyWhen:
    - ${each.data.tier != ''}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}-${region}-${tier}"}
      data: {region: "${region}", tier: "${tier}"}
"#,
        )
        .await;
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: Regional\nmetadata: {name: app, namespace: default}\nspec: {regions: [east, west], tiers: [web, api]}")
        .await
        .unwrap();
    let instances = running.api("kro.run/v1alpha1", "Regional");
    let instance = object_where(&instances, "app", "the instance to be ACTIVE", |i| {
        i["status"]["state"] == "ACTIVE"
    })
    .await;
    assert_eq!(instance["status"]["made"], 4);
    let config_maps = running.api("v1", "ConfigMap");
    let mut made: Vec<(String, String)> = config_maps
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| {
            c.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("app-"))
        })
        .map(|c| {
            let data = &c.data["data"];
            (
                data["region"].as_str().unwrap().to_owned(),
                data["tier"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut expected = vec![
        ("east".to_owned(), "web".to_owned()),
        ("east".to_owned(), "api".to_owned()),
        ("west".to_owned(), "web".to_owned()),
        ("west".to_owned(), "api".to_owned()),
    ];
    made.sort();
    expected.sort();
    assert_eq!(made, expected);
    // 2 × 0 = 0: an empty dimension leaves no item, and the instance stays ACTIVE.
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: Regional\nmetadata: {name: app, namespace: default}\nspec: {regions: [east, west], tiers: []}")
        .await
        .unwrap();
    eventually("every item's child to be deleted", || async {
        let left = config_maps.list(&Default::default()).await.ok()?.items;
        (!left.iter().any(|c| {
            c.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("app-"))
        }))
        .then_some(())
    })
    .await;
    object_where(&instances, "app", "the empty collection to be ready", |i| {
        i["status"]["state"] == "ACTIVE" && i["status"]["made"] == 0
    })
    .await;
    running.stop().await;
}

#[tokio::test]
async fn an_error_while_reconciling_names_the_place_in_the_rgd() {
    let running = Running::start().await;
    running
        .apply_active_rgd(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: counted}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Counted
    spec: {count: string, suffix: string | default=config}
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}-${schema.spec.suffix}"}
      data: {next: "${string(int(schema.spec.count) + 1)}"}
"#,
        )
        .await;
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: Counted\nmetadata: {name: c, namespace: default}\nspec: {count: many}")
        .await
        .unwrap();
    let instances = running.api("kro.run/v1alpha1", "Counted");
    let instance = object_where(&instances, "c", "the failure in ResourcesReady", |i| {
        condition(i, "ResourcesReady").is_some_and(|c| c["status"] == "False")
    })
    .await;
    let message = condition(&instance, "ResourcesReady").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("spec.resources[0] (id config).template.data.next"),
        "{message}"
    );
    assert!(!message.contains("spec.steps"), "{message}");
    assert_eq!(instance["status"]["state"], "ERROR");
    // A write the API server refuses is an error too, said as KRO says it.
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: Counted\nmetadata: {name: d, namespace: default}\nspec: {count: '1', suffix: UPPER}")
        .await
        .unwrap();
    let refused = object_where(&instances, "d", "the refused write to be an ERROR", |i| {
        i["status"]["state"] == "ERROR"
    })
    .await;
    let message = condition(&refused, "ResourcesReady").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with("resource reconciliation failed: spec.resources[0] (id config): ")
            && message.contains("d-UPPER"),
        "{message}"
    );
    running.stop().await;
}

#[tokio::test]
async fn a_deleted_instance_is_deleting_until_its_resources_are_gone() {
    let running = Running::start().await;
    running
        .apply_active_rgd(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: held}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Held
    spec: {}
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "${schema.metadata.name}"
        finalizers: [test.dynrec.dev/hold]
"#,
        )
        .await;
    running
        .apply("apiVersion: kro.run/v1alpha1\nkind: Held\nmetadata: {name: h, namespace: default}\nspec: {}")
        .await
        .unwrap();
    let instances = running.api("kro.run/v1alpha1", "Held");
    object_where(&instances, "h", "the instance to be ACTIVE", |i| {
        i["status"]["state"] == "ACTIVE"
    })
    .await;
    instances
        .delete("h", &DeleteParams::default())
        .await
        .unwrap();
    let deleting = object_where(&instances, "h", "the instance to be DELETING", |i| {
        i["status"]["state"] == "DELETING"
    })
    .await;
    let resources = condition(&deleting, "ResourcesReady").unwrap();
    assert_eq!(
        (
            &resources["status"],
            &resources["reason"],
            &resources["message"]
        ),
        (
            &json!("Unknown"),
            &json!("UnderDeletion"),
            &json!("deleting resources")
        )
    );
    running
        .api("v1", "ConfigMap")
        .patch(
            "h",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    eventually("the instance to be gone", || async {
        instances.get_opt("h").await.ok()?.is_none().then_some(())
    })
    .await;
    running.stop().await;
}

#[tokio::test]
async fn kros_semver_and_two_variable_comprehensions_run_in_an_rgd() {
    let running = Running::start().await;
    running
        .apply_active_rgd(
            r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: versioned}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Versioned
    spec:
      version: string | required=true
      ports: "map[string]integer"
    status:
      major: ${config.data.major}
      allOpen: ${schema.spec.ports.all(name, port, port > 0)}
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}-config"}
      data:
        major: ${string(semver(schema.spec.version).major())}
        newer: ${string(semver(schema.spec.version).isGreaterThan(semver('1.2.0')))}
        ports: ${schema.spec.ports.transformList(name, port, port >= 1024, name + '=' + string(port)).join(',')}
  - id: services
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${schema.metadata.name}-ports"}
      data: "${schema.spec.ports.transformMapEntry(name, port, {'port-' + name: string(port + 10000)})}"
"#,
        )
        .await;
    running
        .apply(
            "apiVersion: kro.run/v1alpha1\nkind: Versioned\nmetadata: {name: v1, namespace: default}\n\
             spec: {version: 1.27.3-rc.1, ports: {https: 8443, http: 80, admin: 9000}}",
        )
        .await
        .unwrap();
    let instances = running.api("kro.run/v1alpha1", "Versioned");
    let instance = object_where(&instances, "v1", "the instance to be ACTIVE", |i| {
        i["status"]["state"] == "ACTIVE"
    })
    .await;
    assert_eq!(instance["status"]["major"], "1", "{instance}");
    assert_eq!(instance["status"]["allOpen"], true, "{instance}");
    let config_maps = running.api("v1", "ConfigMap");
    let config = config_maps.get("v1-config").await.unwrap();
    assert_eq!(config.data["data"]["newer"], "true");
    // a map's keys are visited in order, so the list never depends on map order
    assert_eq!(config.data["data"]["ports"], "admin=9000,https=8443");
    let ports = config_maps.get("v1-ports").await.unwrap();
    assert_eq!(
        ports.data["data"],
        json!({"port-admin": "19000", "port-http": "10080", "port-https": "18443"})
    );

    // A version that is not one fails in Kubernetes' words, naming the resource.
    running
        .apply(
            "apiVersion: kro.run/v1alpha1\nkind: Versioned\nmetadata: {name: v2, namespace: default}\n\
             spec: {version: v1.2.3, ports: {http: 80}}",
        )
        .await
        .unwrap();
    let failed = object_where(&instances, "v2", "the instance to say why it failed", |i| {
        condition(i, "Ready").is_some_and(|c| {
            c["message"].as_str().is_some_and(|m| {
                m.contains("semver: Invalid character(s) found in major number \"v1\"")
            })
        })
    })
    .await;
    let ready = condition(&failed, "Ready").unwrap();
    assert_eq!(ready["status"], "False", "{failed}");
    running.stop().await;
}
