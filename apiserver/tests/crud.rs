//! Create, get, list, update and patch through `kube::Client`, in-process.

mod support;

use kube::api::{DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use support::*;

#[tokio::test]
async fn create_assigns_identity_version_and_generation() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let a = create(&cms, &configmap("a", json!({}), json!({"k": "v"}))).await;
    let b = create_configmap(&cms, "b").await;
    let rv = |o: &kube::api::DynamicObject| {
        o.metadata
            .resource_version
            .clone()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    assert!(rv(&b) > rv(&a), "resourceVersions increase cluster-wide");
    // kube-apiserver keeps no generation on ConfigMaps (their strategy never sets one).
    assert_eq!(a.metadata.generation, None);
    assert!(a.metadata.uid.is_some() && a.metadata.uid != b.metadata.uid);
    assert!(a.metadata.creation_timestamp.is_some());
    assert_eq!(a.metadata.namespace.as_deref(), Some("default"));
    let got = cms.get("a").await.unwrap();
    assert_eq!(got.data["data"]["k"], "v");
    assert_eq!(got.metadata.resource_version, a.metadata.resource_version);
}

#[tokio::test]
async fn generate_name_gets_a_random_suffix() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let body = object(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "cfg-"}}),
    );
    let a = create(&cms, &body).await;
    let b = create(&cms, &body).await;
    assert_eq!(
        a.metadata.generate_name.as_deref(),
        Some("cfg-"),
        "kept, as kube does"
    );
    let name = a.metadata.name.unwrap();
    assert!(name.starts_with("cfg-") && name.len() == 9, "{name}");
    assert_ne!(Some(name), b.metadata.name);
}

#[tokio::test]
async fn duplicate_create_is_already_exists() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    create_configmap(&cms, "a").await;
    let status = status_of(
        cms.create(
            &PostParams::default(),
            &configmap("a", json!({}), json!({})),
        )
        .await,
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "AlreadyExists")
    );
    assert_eq!(status.message, "configmaps \"a\" already exists");
    let details = status.details.unwrap();
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("a", "configmaps")
    );
}

#[tokio::test]
async fn missing_object_is_not_found_with_details() {
    let (_server, client) = server();
    let deployments = deployments(&client, "default");
    let status = status_of(deployments.get("web").await);
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
    assert_eq!(status.message, "deployments.apps \"web\" not found");
    assert_eq!(status.details.unwrap().group, "apps");
    assert!(deployments.get_opt("web").await.unwrap().is_none());
}

#[tokio::test]
async fn namespaced_create_needs_an_existing_live_namespace() {
    let (_server, client) = server();
    let status = status_of(
        configmaps(&client, "nowhere")
            .create(
                &PostParams::default(),
                &configmap("a", json!({}), json!({})),
            )
            .await,
    );
    assert_eq!(
        (status.code, status.message.as_str()),
        (404, "namespaces \"nowhere\" not found")
    );

    create_namespace(&client, "demo").await;
    let demo = configmaps(&client, "demo");
    create_configmap(&demo, "held").await;
    demo.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["x/y"]}})),
    )
    .await
    .unwrap();
    namespaces(&client)
        .delete("demo", &Default::default())
        .await
        .unwrap();
    let status = status_of(
        demo.create(
            &PostParams::default(),
            &configmap("b", json!({}), json!({})),
        )
        .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert!(
        status.message.contains("because it is being terminated"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn list_filters_by_label_selector_operators() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    for (name, labels) in [
        ("web", json!({"app": "web", "tier": "front"})),
        ("api", json!({"app": "api", "tier": "back"})),
        ("db", json!({"app": "db"})),
    ] {
        create(&cms, &configmap(name, labels, json!({}))).await;
    }
    let names = |selector: &'static str| {
        let cms = cms.clone();
        async move {
            let list = cms
                .list(&ListParams::default().labels(selector))
                .await
                .unwrap();
            let mut names: Vec<String> = list
                .items
                .into_iter()
                .filter_map(|o| o.metadata.name)
                .collect();
            names.sort();
            names
        }
    };
    assert_eq!(names("app=web").await, vec!["web"]);
    // Every namespace also holds the kube-root-ca.crt ConfigMap, which has no labels.
    assert_eq!(
        names("app!=web").await,
        vec!["api", "db", "kube-root-ca.crt"]
    );
    assert_eq!(names("app in (web,db)").await, vec!["db", "web"]);
    assert_eq!(
        names("app notin (web,db)").await,
        vec!["api", "kube-root-ca.crt"]
    );
    assert_eq!(names("tier").await, vec!["api", "web"]);
    assert_eq!(names("!tier").await, vec!["db", "kube-root-ca.crt"]);
    assert_eq!(names("tier,app!=api").await, vec!["web"]);
    let status = status_of(cms.list(&ListParams::default().labels("app in (")).await);
    assert_eq!(status.code, 400);
}

#[tokio::test]
async fn list_filters_by_field_selector_and_reports_its_resource_version() {
    let (server, client) = server();
    let cms = configmaps(&client, "default");
    create_configmap(&cms, "a").await;
    create_configmap(&cms, "b").await;
    let list = cms
        .list(&ListParams::default().fields("metadata.name=b"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        list.metadata.resource_version,
        Some(server.resource_version().to_string())
    );
    let all = cluster_api(&client, "", "v1", "ConfigMap", "configmaps");
    let others = all
        .list(&ListParams::default().fields("metadata.namespace!=default"))
        .await
        .unwrap();
    let mut others: Vec<(String, String)> = others
        .items
        .into_iter()
        .map(|o| {
            (
                o.metadata.namespace.unwrap_or_default(),
                o.metadata.name.unwrap_or_default(),
            )
        })
        .collect();
    others.sort();
    let root_ca = |ns: &str| (ns.to_string(), "kube-root-ca.crt".to_string());
    assert_eq!(
        others,
        vec![
            root_ca("kube-node-lease"),
            root_ca("kube-public"),
            root_ca("kube-system")
        ],
        "outside default only the root CA ConfigMaps every namespace gets"
    );
    let status = status_of(
        cms.list(&ListParams::default().fields("spec.nothing=1"))
            .await,
    );
    assert_eq!(
        (status.code, status.message.as_str()),
        (400, "field label not supported: spec.nothing")
    );
}

#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    for i in 0..7 {
        create_configmap(&cms, &format!("cm{i}")).await;
    }
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(3);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page = cms.list(&params).await.unwrap();
        assert!(page.items.len() <= 3);
        seen.extend(page.items.into_iter().filter_map(|o| o.metadata.name));
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    let mut expected: Vec<String> = (0..7).map(|i| format!("cm{i}")).collect();
    expected.push("kube-root-ca.crt".into());
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn stale_update_is_a_conflict_and_a_configmap_never_gets_a_generation() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let created = create(&cms, &configmap("a", json!({}), json!({"k": "1"}))).await;
    let mut first = created.clone();
    first.data["data"]["k"] = json!("2");
    let updated = cms
        .replace("a", &PostParams::default(), &first)
        .await
        .unwrap();
    assert_eq!(updated.metadata.generation, None);
    let mut stale = created.clone();
    stale.data["data"]["k"] = json!("3");
    let status = status_of(cms.replace("a", &PostParams::default(), &stale).await);
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert!(
        status.message.contains("the object has been modified"),
        "{}",
        status.message
    );
    // A label change is an update like any other.
    let mut relabelled = updated.clone();
    relabelled.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
    let relabelled = cms
        .replace("a", &PostParams::default(), &relabelled)
        .await
        .unwrap();
    assert_eq!(relabelled.metadata.generation, None);
    // Writing the same object again changes nothing, not even the resourceVersion.
    let again = cms
        .replace("a", &PostParams::default(), &relabelled)
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        relabelled.metadata.resource_version
    );
}

#[tokio::test]
async fn custom_resources_need_a_resource_version_to_update() {
    let (_server, client) = server();
    install_widget_crd(&client).await;
    let widgets = widgets(&client, "default");
    create(&widgets, &object(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}))).await;
    let blind = object(
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 2}}),
    );
    let status = status_of(widgets.replace("w", &PostParams::default(), &blind).await);
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("metadata.resourceVersion"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn status_subresource_separates_spec_and_status_writes() {
    let (_server, client) = server();
    install_widget_crd(&client).await;
    let widgets = widgets(&client, "default");
    let created = create(
        &widgets,
        &object(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 1}, "status": {"ready": true}})),
    )
    .await;
    assert!(
        created.data.get("status").is_none(),
        "status is dropped on create"
    );

    let with_status = widgets
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"size": 9}})),
        )
        .await
        .unwrap();
    assert_eq!(with_status.data["status"]["ready"], true);
    assert_eq!(
        with_status.data["spec"]["size"], 1,
        "the status endpoint leaves spec alone"
    );
    assert_eq!(
        with_status.metadata.generation,
        Some(1),
        "status writes keep the generation"
    );

    let main = widgets
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": false}, "spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(
        main.data["status"]["ready"], true,
        "the main endpoint keeps the stored status"
    );
    assert_eq!(main.data["spec"]["size"], 2);
    assert_eq!(main.metadata.generation, Some(2));

    let mut replaced = main.clone();
    replaced.data["status"] = json!({"ready": false, "phase": "Done"});
    let replaced = widgets
        .replace_status("w", &PostParams::default(), &replaced)
        .await
        .unwrap();
    assert_eq!(replaced.data["status"]["phase"], "Done");
}

#[tokio::test]
async fn json_patch_applies_operations_and_fails_whole_on_a_failed_test() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    create(&cms, &configmap("a", json!({}), json!({"k": "1"}))).await;
    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/data/k", "value": "1"},
        {"op": "add", "path": "/data/n", "value": "2"}
    ]))
    .unwrap();
    let patched = cms
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(ops))
        .await
        .unwrap();
    assert_eq!(patched.data["data"], json!({"k": "1", "n": "2"}));
    let failing: json_patch::Patch = serde_json::from_value(json!([
        {"op": "add", "path": "/data/z", "value": "3"},
        {"op": "test", "path": "/data/k", "value": "other"}
    ]))
    .unwrap();
    let status = status_of(
        cms.patch("a", &PatchParams::default(), &Patch::<()>::Json(failing))
            .await,
    );
    assert_eq!(status.code, 422);
    assert_eq!(
        cms.get("a").await.unwrap().data["data"],
        json!({"k": "1", "n": "2"})
    );
}

#[tokio::test]
async fn merge_patch_with_a_stale_resource_version_is_a_conflict() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    create_configmap(&cms, "a").await;
    let patch = json!({"metadata": {"resourceVersion": "1"}, "data": {"x": "y"}});
    let status = status_of(
        cms.patch("a", &PatchParams::default(), &Patch::Merge(patch))
            .await,
    );
    assert_eq!(status.code, 409);
}

#[tokio::test]
async fn bad_requests_get_clear_errors() {
    let (_server, client) = server();
    let (code, body) = post_json(
        &client,
        "/api/v1/namespaces/default/configmaps",
        "{not json",
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        body["message"].as_str().unwrap().contains("not valid JSON"),
        "{body}"
    );

    let (code, body) = post_json(
        &client,
        "/api/v1/namespaces/default/configmaps",
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#,
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        body["message"].as_str().unwrap().contains("Secret"),
        "{body}"
    );

    let (code, body) = post_json(
        &client,
        "/api/v1/namespaces/default/configmaps",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Not_Valid"}}"#,
    )
    .await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.name");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("RFC 1123 subdomain"),
        "{body}"
    );

    let (code, body) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/a",
        "text/plain",
        "{}",
    )
    .await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );

    let (code, _) = raw(
        &client,
        "PUT",
        "/api/v1/namespaces",
        "application/json",
        "{}",
    )
    .await;
    assert_eq!(code, 405);

    let (code, body) = get_json(&client, "/apis/nothing.example.com/v1/things").await;
    assert_eq!((code, body["reason"].as_str()), (404, Some("NotFound")));
}

#[tokio::test]
async fn dry_run_stores_nothing() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let params = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let answered = cms
        .create(&params, &configmap("a", json!({}), json!({})))
        .await
        .unwrap();
    assert_eq!(answered.metadata.name.as_deref(), Some("a"));
    assert!(cms.get_opt("a").await.unwrap().is_none());
}

#[tokio::test]
async fn events_recorded_through_events_k8s_io_are_listed_as_core_events() {
    let (_server, client) = server();
    let v1_events = api(&client, "events.k8s.io", "v1", "Event", "events", "default");
    let event = object(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "w1.abc"}, "eventTime": "2026-01-01T00:00:00.000001Z",
        "regarding": {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w1", "namespace": "default"},
        "reason": "Created", "note": "Created ConfigMap \"w1-config\"", "type": "Normal",
        "action": "Created", "reportingController": "widgets", "reportingInstance": "r1"}));
    create(&v1_events, &event).await;
    let core_events = api(&client, "", "v1", "Event", "events", "default");
    let listed = core_events
        .list(&ListParams::default().fields("involvedObject.name=w1,involvedObject.kind=Widget"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1, "kubectl describe finds it");
    assert_eq!(
        listed.items[0].data["message"],
        "Created ConfigMap \"w1-config\""
    );
    assert_eq!(listed.items[0].data["count"], 1);
    v1_events
        .delete("w1.abc", &Default::default())
        .await
        .unwrap();
    assert!(core_events.get_opt("w1.abc").await.unwrap().is_none());
}

#[tokio::test]
async fn objects_are_written_with_kind_and_api_version_first_as_go_writes_them() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    create(&cms, &configmap("ordered", json!({}), json!({"a": "b"}))).await;
    let request = http::Request::get("/api/v1/namespaces/default/configmaps/ordered")
        .body(Vec::new())
        .unwrap();
    let text = client.request_text(request).await.unwrap();
    assert!(
        text.starts_with(r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"#),
        "{text}"
    );
    let request = http::Request::get("/api/v1/namespaces/default/configmaps")
        .body(Vec::new())
        .unwrap();
    let list = client.request_text(request).await.unwrap();
    assert!(
        list.starts_with(r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"#),
        "{list}"
    );
}

#[tokio::test]
async fn a_crd_is_defaulted_as_kube_defaults_it() {
    let (_server, client) = server();
    let crds = crds(&client);
    let bare = object(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Gizmo", "plural": "gizmos"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}
    }));
    create(&crds, &bare).await;
    let stored = crds.get("gizmos.example.com").await.unwrap();
    let spec = &stored.data["spec"];
    assert_eq!(spec["names"]["singular"], "gizmo");
    assert_eq!(spec["names"]["listKind"], "GizmoList");
    assert_eq!(spec["conversion"], json!({"strategy": "None"}));
    assert_eq!(stored.data["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(
        stored.data["status"]["acceptedNames"]["listKind"],
        "GizmoList"
    );

    // An update that drops a defaulted field gets it back.
    let mut changed = stored.clone();
    changed.data["spec"]
        .as_object_mut()
        .unwrap()
        .remove("conversion");
    let updated = crds
        .replace("gizmos.example.com", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(
        updated.data["spec"]["conversion"],
        json!({"strategy": "None"})
    );
}

#[tokio::test]
async fn a_builtin_body_of_the_wrong_type_is_a_bad_request_in_gos_words() {
    let (_server, client) = server();
    let cms = configmaps(&client, "default");
    let status = status_of(
        cms.create(
            &PostParams::default(),
            &configmap("c", json!({}), json!({"a": 1})),
        )
        .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        status.message,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    );
    create(&cms, &configmap("c", json!({}), json!({"a": "1"}))).await;
    let status = status_of(
        cms.patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": true}})),
        )
        .await,
    );
    assert_eq!(status.code, 400);
    assert!(
        status
            .message
            .ends_with("cannot unmarshal bool into Go struct field ConfigMap.data of type string"),
        "{}",
        status.message
    );
    let deployments = deployments(&client, "default");
    let mut body = web_deployment();
    body.data["spec"]["replicas"] = json!("three");
    let status = status_of(deployments.create(&PostParams::default(), &body).await);
    assert_eq!(
        status.message,
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
}

fn web_deployment() -> DynamicObject {
    object(
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}),
    )
}

#[tokio::test]
async fn workloads_need_a_matching_selector_and_unique_container_names() {
    let (_server, client) = server();
    let deployments = deployments(&client, "default");
    let mut body = web_deployment();
    body.data["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
    let status = status_of(deployments.create(&PostParams::default(), &body).await);
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`"
    );
    let mut body = web_deployment();
    body.data["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "app", "image": "a"}, {"name": "app", "image": "b"}]);
    let status = status_of(deployments.create(&PostParams::default(), &body).await);
    assert_eq!(
        status.message,
        "Deployment.apps \"web\" is invalid: spec.template.spec.containers[1].name: Duplicate value: \"app\""
    );
    assert_eq!(
        status.details.unwrap().causes[0].reason,
        "FieldValueDuplicate"
    );
    let mut body = web_deployment();
    body.data["spec"]
        .as_object_mut()
        .unwrap()
        .remove("selector");
    let status = status_of(deployments.create(&PostParams::default(), &body).await);
    assert_eq!(
        status.message,
        "Deployment.apps \"web\" is invalid: spec.selector: Required value"
    );
    create(&deployments, &web_deployment()).await;
    // An update is checked too.
    let status = status_of(
        deployments
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"selector": {"matchLabels": {"app": "db"}}}})),
            )
            .await,
    );
    assert_eq!(status.code, 422, "{}", status.message);
    let pods = api(&client, "", "v1", "Pod", "pods", "default");
    let pod = object(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "", "image": "x"}]}}),
    );
    let status = status_of(pods.create(&PostParams::default(), &pod).await);
    assert_eq!(
        status.message,
        "Pod \"p\" is invalid: spec.containers[0].name: Required value"
    );
}

/// The `Warning` headers of a GET.
async fn warnings_of_get(client: &kube::Client, uri: &str) -> (u16, Vec<String>) {
    let request = http::Request::builder()
        .uri(uri)
        .body(kube::client::Body::empty())
        .unwrap();
    send_for_warnings(client, request).await
}

#[tokio::test]
async fn requests_at_a_deprecated_crd_version_carry_kubes_warning() {
    let (_server, client) = server();
    let version = |name: &str, storage: bool, extra: serde_json::Value| {
        let mut v = json!({"name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let crd = object(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "versions": [
                version("v1alpha1", false, json!({"deprecated": true})),
                version("v1beta1", false, json!({"deprecated": true})),
                version("v1", true, json!({})),
                version("v2alpha1", false, json!({"deprecated": true,
                    "deprecationWarning": "v2alpha1 goes away in 2027"})),
            ]}
    }));
    crds(&client)
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let base = "/apis/example.com";
    let (code, warnings) = warnings_of_get(
        &client,
        &format!("{base}/v1beta1/namespaces/default/gadgets"),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        warnings,
        ["299 - \"example.com/v1beta1 Gadget is deprecated; use example.com/v1 Gadget\""]
    );
    let (code, warnings) = warnings_of_get(
        &client,
        &format!("{base}/v1beta1/namespaces/default/gadgets/nope"),
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(warnings.len(), 1, "a failed request is warned too");
    let (_, warnings) = warnings_of_get(
        &client,
        &format!("{base}/v2alpha1/namespaces/default/gadgets"),
    )
    .await;
    assert_eq!(warnings, ["299 - \"v2alpha1 goes away in 2027\""]);
    let (_, warnings) =
        warnings_of_get(&client, &format!("{base}/v1/namespaces/default/gadgets")).await;
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[tokio::test]
async fn crd_schemas_with_free_form_keywords_pass_the_type_check() {
    let (_server, client) = server();
    let crds = crds(&client);
    let crd = object(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Thing", "plural": "things"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object",
                        "default": {"mode": "a"},
                        "properties": {
                            "extra": {"type": "object", "additionalProperties": true},
                            "port": {"x-kubernetes-int-or-string": true, "default": 80},
                            "mode": {"type": "string", "enum": ["a", "b"]},
                            "items": {"type": "array", "items": {"type": "integer"}}
                        }}
                }}}}]}
    }));
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("JSONSchemaPropsOrBool, JSON defaults and int-or-string are not type errors");
}

#[tokio::test]
async fn limits_are_kubes_a_body_over_3_mib_and_an_object_over_etcds_1_5_mib() {
    let (_server, client) = server();
    install_widget_crd(&client).await;
    let cms = configmaps(&client, "default");
    let sized =
        |name: &str, bytes: usize| configmap(name, json!({}), json!({"blob": "x".repeat(bytes)}));

    let status = status_of(
        cms.create(&PostParams::default(), &sized("huge", 3_200_000))
            .await,
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (413, "RequestEntityTooLarge")
    );
    assert_eq!(status.message, "Request entity too large: limit is 3145728");

    // A ConfigMap's data is at most 1 MiB: kube's validation refuses it before etcd does.
    let status = status_of(
        cms.create(&PostParams::default(), &sized("big", 2_000_000))
            .await,
    );
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes"
    );

    // A custom object has no such bound: etcd refuses it.
    let widgets = widgets(&client, "default");
    let sized_widget = |name: &str, bytes: usize| {
        object(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": {"blob": "x".repeat(bytes)}}))
    };
    let status = status_of(
        widgets
            .create(&PostParams::default(), &sized_widget("big", 2_000_000))
            .await,
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (500, "InternalError")
    );
    assert_eq!(status.message, "etcdserver: request is too large");
    assert!(
        widgets.get_opt("big").await.unwrap().is_none(),
        "never stored"
    );

    let fits = create(&widgets, &sized_widget("fits", 1_000_000)).await;
    let mut grown = fits.clone();
    grown.data["spec"]["blob"] = json!("y".repeat(1_600_000));
    let status = status_of(
        widgets
            .replace("fits", &PostParams::default(), &grown)
            .await,
    );
    assert_eq!(status.code, 500);
    let kept = widgets.get("fits").await.unwrap();
    assert_eq!(
        kept.metadata.resource_version,
        fits.metadata.resource_version
    );
}

#[tokio::test]
async fn deeply_nested_bodies_are_refused_with_400_and_the_server_keeps_answering() {
    let (_server, client) = server();
    let deep = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"deep"}},"x":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let uri = "/api/v1/namespaces/default/configmaps";
    let (code, status) = post_json(&client, uri, &deep).await;
    assert_eq!(
        (code, &status["reason"]),
        (400, &json!("BadRequest")),
        "{status}"
    );
    let patch_uri = "/api/v1/namespaces/default/configmaps/deep?fieldManager=t";
    for content_type in [
        "application/merge-patch+json",
        "application/apply-patch+yaml",
        "application/strategic-merge-patch+json",
    ] {
        let (code, status) = raw(&client, "PATCH", patch_uri, content_type, &deep).await;
        assert_eq!(code, 400, "{content_type}: {status}");
        assert_eq!(status["kind"], "Status", "{content_type}");
    }
    let yaml = format!(
        "metadata:\n  name: deep\nx: {}1{}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let (code, status) = raw(
        &client,
        "PATCH",
        patch_uri,
        "application/apply-patch+yaml",
        &yaml,
    )
    .await;
    assert_eq!(code, 400, "{status}");
    configmaps(&client, "default")
        .list(&ListParams::default())
        .await
        .unwrap();
}
