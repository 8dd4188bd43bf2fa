//! Differences from kube-apiserver that other projects' test suites found (issue 37): the
//! bytes of Status bodies, default statuses, field selectors, componentstatuses and
//! protected namespaces, each as kube-apiserver answers.

mod support;

use serde_json::json;
use support::*;

/// Sends a request; returns the status code and the body as text.
async fn text_of(client: &kube::Client, method: &str, uri: &str, body: &str) -> (u16, String) {
    raw_text(client, method, uri, "application/json", body).await
}

#[tokio::test]
async fn status_bodies_are_written_in_kubes_field_order_without_an_empty_group() {
    let (_server, client) = server();
    let uri = "/api/v1/namespaces/default/configmaps";
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    post_json(&client, uri, body).await;
    let (code, text) = text_of(&client, "POST", uri, body).await;
    assert_eq!(code, 409);
    assert_eq!(
        text,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" already exists","reason":"AlreadyExists","details":{"name":"x","kind":"configmaps"},"code":409}
"#
    );
    let (code, text) = text_of(
        &client,
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/web",
        "",
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(
        text,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"web\" not found","reason":"NotFound","details":{"name":"web","group":"apps","kind":"deployments"},"code":404}
"#
    );
    let (code, text) = text_of(
        &client,
        "POST",
        uri,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad"}}"#,
    )
    .await;
    assert_eq!(code, 422);
    assert!(
        text.contains(r#""details":{"name":"Bad","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"#),
        "{text}"
    );
    assert!(text.ends_with("}]},\"code\":422}\n"), "{text}");
    let (code, text) = text_of(&client, "DELETE", &format!("{uri}/x"), "").await;
    assert_eq!(code, 200);
    assert!(
        text.starts_with(r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"x","kind":"configmaps","uid":""#),
        "{text}"
    );
}

#[tokio::test]
async fn new_objects_get_the_status_kubes_registries_write() {
    let (_server, client) = server();
    let cases = [
        (
            "/api/v1/namespaces/default/services",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                "spec": {"ports": [{"port": 80}]}, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}),
            json!({"loadBalancer": {}}),
        ),
        (
            "/api/v1/namespaces/default/persistentvolumeclaims",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
            json!({"phase": "Pending"}),
        ),
        (
            "/apis/apps/v1/namespaces/default/replicasets",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
                "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
            json!({"replicas": 0}),
        ),
    ];
    for (uri, body, status) in cases {
        let (code, created) = post_json(&client, uri, &body.to_string()).await;
        assert_eq!(code, 201, "{created}");
        assert_eq!(created["status"], status, "{uri}");
    }
    // A Node keeps the status it is created with, and gets the zero fields it lacks.
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"nodeInfo": {"architecture": "arm64"}}});
    let (code, created) = post_json(&client, "/api/v1/nodes", &node.to_string()).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["status"]["nodeInfo"]["architecture"], "arm64");
    assert_eq!(created["status"]["nodeInfo"]["kubeletVersion"], "");
    assert_eq!(
        created["status"]["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 0}})
    );
}

async fn names_listed(client: &kube::Client, uri: &str) -> Vec<String> {
    let (code, list) = get_json(client, uri).await;
    assert_eq!(code, 200, "{list}");
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn field_selectors_compare_omitted_fields_as_their_go_zero_value() {
    let (_server, client) = server();
    for (name, spec) in [
        ("plain", json!({})),
        ("cordoned", json!({"unschedulable": true})),
    ] {
        let node =
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec});
        post_json(&client, "/api/v1/nodes", &node.to_string()).await;
    }
    let schedulable = "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse";
    assert_eq!(names_listed(&client, schedulable).await, ["plain"]);
    let cordoned = "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue";
    assert_eq!(names_listed(&client, cordoned).await, ["cordoned"]);
    let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p"}, "source": {"component": "kubelet"}});
    post_json(
        &client,
        "/api/v1/namespaces/default/events",
        &event.to_string(),
    )
    .await;
    let by_source = "/api/v1/namespaces/default/events?fieldSelector=source%3Dkubelet";
    assert_eq!(names_listed(&client, by_source).await, ["e1"]);
    let (code, status) = get_json(&client, "/api/v1/nodes?fieldSelector=spec.podCIDR%3Dx").await;
    assert_eq!(code, 400);
    assert_eq!(status["message"], "field label not supported: spec.podCIDR");
}

#[tokio::test]
async fn componentstatuses_report_the_store_healthy_and_the_absent_controllers_not() {
    let (_server, client) = server();
    let (code, scheduler) = get_json(&client, "/api/v1/componentstatuses/scheduler").await;
    assert_eq!(code, 200, "{scheduler}");
    assert_eq!(
        scheduler["conditions"],
        json!([{"type": "Healthy", "status": "False",
            "message": "Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused"}])
    );
    let mut names = names_listed(&client, "/api/v1/componentstatuses").await;
    names.sort();
    assert_eq!(names, ["controller-manager", "etcd-0", "scheduler"]);
    let (_, etcd) = get_json(&client, "/api/v1/componentstatuses/etcd-0").await;
    assert_eq!(etcd["conditions"][0]["status"], "True");
    assert_eq!(etcd["conditions"][0]["message"], "ok");
    // `kubectl get cs` prints kube's columns.
    let table = get_table(&client, "/api/v1/componentstatuses").await;
    assert_eq!(column_names(&table), ["Name", "Status", "Message", "Error"]);
    let mut rows: Vec<serde_json::Value> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["cells"].clone())
        .collect();
    rows.sort_by_key(|cells| cells[0].as_str().unwrap().to_string());
    assert_eq!(
        rows[0],
        json!([
            "controller-manager",
            "Unhealthy",
            "Get \"https://127.0.0.1:10257/healthz\": dial tcp 127.0.0.1:10257: connect: connection refused",
            ""
        ])
    );
    assert_eq!(rows[1], json!(["etcd-0", "Healthy", "ok", ""]));
    let one = get_table(&client, "/api/v1/componentstatuses/scheduler").await;
    assert_eq!(one["rows"][0]["cells"][1], "Unhealthy");
}

#[tokio::test]
async fn the_protected_namespaces_may_not_be_deleted() {
    let (_server, client) = server();
    for namespace in ["default", "kube-system", "kube-public"] {
        let uri = format!("/api/v1/namespaces/{namespace}");
        let (code, status) = raw(&client, "DELETE", &uri, "application/json", "").await;
        assert_eq!(code, 403, "{status}");
        assert_eq!(
            status["message"],
            format!("namespaces \"{namespace}\" is forbidden: this namespace may not be deleted")
        );
        assert_eq!(get_json(&client, &uri).await.0, 200);
    }
    create_namespace(&client, "mine").await;
    let (code, _) = raw(
        &client,
        "DELETE",
        "/api/v1/namespaces/mine",
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn metadata_and_config_map_keys_are_validated_on_every_write_as_kube_does() {
    let (_server, client) = server();
    let uri = "/api/v1/namespaces/default/configmaps";
    let refused = [
        (
            json!({"name": "a", "labels": {"app": "x".repeat(64)}}),
            json!({}),
            "metadata.labels",
        ),
        (
            json!({"name": "a", "finalizers": ["Bad Finalizer/x"]}),
            json!({}),
            "metadata.finalizers",
        ),
        (
            json!({"name": "a", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o"}]}),
            json!({}),
            "metadata.ownerReferences.uid",
        ),
        (
            json!({"name": "a"}),
            json!({"bad key!": "v"}),
            "data[bad key!]",
        ),
    ];
    for (metadata, data, field) in refused {
        let body =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data});
        let (code, status) = post_json(&client, uri, &body.to_string()).await;
        assert_eq!(code, 422, "{status}");
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["details"]["causes"][0]["field"], field, "{status}");
    }
    // An update is validated as a create is.
    create_configmap(&configmaps(&client, "default"), "fine").await;
    let patch = r#"{"metadata": {"labels": {"bad key": "v"}}}"#;
    let (code, status) = merge_patch(&client, &format!("{uri}/fine"), patch).await;
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .starts_with("ConfigMap \"fine\" is invalid: metadata.labels: Invalid value: \"bad key\": name part must consist of"),
        "{status}"
    );
}

#[tokio::test]
async fn the_most_read_kinds_are_written_in_go_struct_order() {
    let (_server, client) = server();
    let uri = "/api/v1/namespaces/default/configmaps";
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"b":"1","a":"2"}},"data":{"k":"v"},"immutable":false}"#;
    let (code, text) = text_of(&client, "POST", uri, body).await;
    assert_eq!(code, 201, "{text}");
    let uid_at = text.find(r#""uid":"#).unwrap();
    assert!(
        text.starts_with(
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"default","uid":"#
        ),
        "{text}"
    );
    let rest = &text[uid_at..];
    let order = [
        "\"resourceVersion\"",
        "\"creationTimestamp\"",
        "\"labels\":{\"a\":\"2\",\"b\":\"1\"}",
        "\"managedFields\"",
        "\"immutable\":false",
        "\"data\"",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|key| rest.find(key).unwrap_or_else(|| panic!("{key} in {rest}")))
        .collect();
    assert!(positions.is_sorted(), "{order:?} in Go's order: {rest}");
}

/// The keys of the object at `path` (object keys, or list indices as numbers) of a body
/// read with its key order kept.
fn keys_at<'a>(body: &'a serde_json::Value, path: &[&str]) -> Vec<&'a str> {
    let value = path
        .iter()
        .fold(body, |value, step| match step.parse::<usize>() {
            Ok(index) => &value[index],
            Err(_) => &value[*step],
        });
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("{path:?} in {body}"));
    object.keys().map(String::as_str).collect()
}

/// The Go struct order of the structs the test below reads, copied from k8s.io/api v0.32.9
/// (`batch/v1`, `apps/v1`, `networking/v1`, `rbac/v1` types.go).
const GO_ORDER: &[(&str, &[&str], &[&str])] = &[
    (
        "Job",
        &[],
        &["kind", "apiVersion", "metadata", "spec", "status"],
    ),
    (
        "Job",
        &["spec"],
        &[
            "parallelism",
            "completions",
            "activeDeadlineSeconds",
            "podFailurePolicy",
            "successPolicy",
            "backoffLimit",
            "backoffLimitPerIndex",
            "maxFailedIndexes",
            "selector",
            "manualSelector",
            "template",
            "ttlSecondsAfterFinished",
            "completionMode",
            "suspend",
            "podReplacementPolicy",
            "managedBy",
        ],
    ),
    (
        "CronJob",
        &["spec"],
        &[
            "schedule",
            "timeZone",
            "startingDeadlineSeconds",
            "concurrencyPolicy",
            "suspend",
            "jobTemplate",
            "successfulJobsHistoryLimit",
            "failedJobsHistoryLimit",
        ],
    ),
    ("CronJob", &["spec", "jobTemplate"], &["metadata", "spec"]),
    (
        "StatefulSet",
        &["spec"],
        &[
            "replicas",
            "selector",
            "template",
            "volumeClaimTemplates",
            "serviceName",
            "podManagementPolicy",
            "updateStrategy",
            "revisionHistoryLimit",
            "minReadySeconds",
            "persistentVolumeClaimRetentionPolicy",
            "ordinals",
        ],
    ),
    (
        "StatefulSet",
        &["spec", "template", "spec", "containers", "0"],
        &[
            "name",
            "image",
            "command",
            "args",
            "workingDir",
            "ports",
            "envFrom",
            "env",
            "resources",
            "resizePolicy",
            "restartPolicy",
            "volumeMounts",
            "volumeDevices",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "lifecycle",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "imagePullPolicy",
            "securityContext",
            "stdin",
            "stdinOnce",
            "tty",
        ],
    ),
    (
        "Ingress",
        &["spec"],
        &["ingressClassName", "defaultBackend", "tls", "rules"],
    ),
    (
        "Ingress",
        &["spec", "rules", "0", "http", "paths", "0"],
        &["path", "pathType", "backend"],
    ),
    ("Role", &[], &["kind", "apiVersion", "metadata", "rules"]),
    (
        "Role",
        &["rules", "0"],
        &[
            "verbs",
            "apiGroups",
            "resources",
            "resourceNames",
            "nonResourceURLs",
        ],
    ),
];

#[tokio::test]
async fn every_built_in_kind_is_written_in_go_struct_order() {
    let (_server, client) = server();
    let template = json!({"spec": {"containers": [{"tty": false, "image": "nginx",
        "imagePullPolicy": "Always", "env": [{"value": "1", "name": "A"}], "name": "web",
        "args": ["x"]}]}, "metadata": {"labels": {"app": "web"}}});
    let selector = json!({"matchLabels": {"app": "web"}});
    let objects = [
        (
            "/apis/batch/v1/namespaces/default/jobs",
            json!({"status": {}, "spec": {
            "suspend": true, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"image": "busybox", "name": "job"}]}}, "backoffLimit": 2,
            "parallelism": 1}, "metadata": {"name": "job"}, "kind": "Job",
            "apiVersion": "batch/v1"}),
        ),
        (
            "/apis/batch/v1/namespaces/default/cronjobs",
            json!({"apiVersion": "batch/v1",
            "kind": "CronJob", "metadata": {"name": "cron"}, "spec": {"jobTemplate": {"spec": {
            "template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"image": "busybox",
            "name": "job"}]}}}, "metadata": {"labels": {"tier": "batch"}}}, "suspend": false, "schedule": "*/5 * * * *"}}),
        ),
        (
            "/apis/apps/v1/namespaces/default/statefulsets",
            json!({"spec": {"template": template,
            "serviceName": "web", "selector": selector, "replicas": 2}, "metadata": {"name": "web"},
            "apiVersion": "apps/v1", "kind": "StatefulSet"}),
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            json!({"kind": "Ingress",
            "apiVersion": "networking.k8s.io/v1", "metadata": {"name": "web"}, "spec": {"rules": [
            {"http": {"paths": [{"backend": {"service": {"port": {"number": 80}, "name": "web"}},
            "pathType": "Prefix", "path": "/"}]}, "host": "example.com"}],
            "ingressClassName": "nginx"}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            json!({"rules": [
            {"resources": ["pods"], "verbs": ["get"], "apiGroups": [""]}],
            "metadata": {"name": "reader"}, "kind": "Role",
            "apiVersion": "rbac.authorization.k8s.io/v1"}),
        ),
    ];
    let mut read = std::collections::HashMap::new();
    for (uri, object) in objects {
        let (code, text) = text_of(&client, "POST", uri, &object.to_string()).await;
        assert_eq!(code, 201, "{text}");
        let name = object["metadata"]["name"].as_str().unwrap();
        let (code, text) = text_of(&client, "GET", &format!("{uri}/{name}"), "").await;
        assert_eq!(code, 200, "{text}");
        let body: serde_json::Value = serde_json::from_str(&text).unwrap();
        read.insert(object["kind"].as_str().unwrap().to_string(), body);
    }
    for (kind, path, go_order) in GO_ORDER {
        let written = keys_at(&read[*kind], path);
        let expected: Vec<&str> = go_order
            .iter()
            .copied()
            .filter(|key| written.contains(key))
            .collect();
        assert_eq!(written, expected, "{kind} at {path:?}");
        assert!(
            written.len() > 1,
            "{kind} at {path:?} has too few keys to show an order"
        );
    }
}
