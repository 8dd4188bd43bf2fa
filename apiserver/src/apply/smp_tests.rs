//! Tests of strategic merge patch.

use serde_json::{Value, json};

use super::*;

fn schema() -> MergeSchema {
    MergeSchema::for_builtin("apps", "Deployment")
}

fn pod_spec(spec: Value) -> Value {
    json!({"spec": {"template": {"spec": spec}}})
}

fn patch(original: &Value, patch: &Value) -> Value {
    strategic_merge(original, patch, &schema()).unwrap()
}

fn containers(object: &Value) -> &Value {
    &object["spec"]["template"]["spec"]["containers"]
}

fn two_containers() -> Value {
    pod_spec(json!({"containers": [
        {"name": "a", "image": "x", "imagePullPolicy": "IfNotPresent"},
        {"name": "b", "image": "y"}
    ]}))
}

#[test]
fn containers_merge_by_name() {
    let patched = patch(
        &two_containers(),
        &pod_spec(json!({"containers": [{"name": "b", "image": "z"}]})),
    );
    assert_eq!(
        containers(&patched),
        &json!([
            {"name": "a", "image": "x", "imagePullPolicy": "IfNotPresent"},
            {"name": "b", "image": "z"}
        ])
    );
}

#[test]
fn new_items_without_an_order_come_first_as_in_apimachinery() {
    let patched = patch(
        &two_containers(),
        &pod_spec(json!({"containers": [{"name": "c", "image": "w"}]})),
    );
    let names: Vec<&Value> = containers(&patched)
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, vec!["c", "a", "b"]);
}

#[test]
fn patch_delete_removes_a_list_item() {
    let patched = patch(
        &two_containers(),
        &pod_spec(json!({"containers": [{"name": "a", "$patch": "delete"}]})),
    );
    assert_eq!(containers(&patched), &json!([{"name": "b", "image": "y"}]));
}

#[test]
fn patch_delete_empties_a_map_and_replace_replaces_it() {
    let original =
        json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    let deleted = patch(
        &original,
        &json!({"spec": {"strategy": {"$patch": "delete"}}}),
    );
    assert_eq!(deleted["spec"]["strategy"], json!({}));
    let replaced = patch(
        &original,
        &json!({"spec": {"strategy": {"$patch": "replace", "type": "Recreate"}}}),
    );
    assert_eq!(replaced["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn patch_replace_in_a_list_replaces_the_list() {
    let patched = patch(
        &two_containers(),
        &pod_spec(json!({"containers": [{"$patch": "replace"}, {"name": "q", "image": "v"}]})),
    );
    assert_eq!(containers(&patched), &json!([{"name": "q", "image": "v"}]));
}

#[test]
fn set_element_order_orders_the_merged_list() {
    let patched = patch(
        &two_containers(),
        &pod_spec(json!({
            "$setElementOrder/containers": [{"name": "b"}, {"name": "c"}, {"name": "a"}],
            "containers": [{"name": "c", "image": "w"}]
        })),
    );
    let names: Vec<&Value> = containers(&patched)
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, vec!["b", "c", "a"]);
}

#[test]
fn retain_keys_clears_unlisted_fields() {
    let original =
        json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    let patched = patch(
        &original,
        &json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null}}}),
    );
    assert_eq!(patched["spec"]["strategy"], json!({"type": "Recreate"}));
    let bad = strategic_merge(
        &original,
        &json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}}),
        &schema(),
    );
    assert_eq!(bad.map_err(|e| e.code), Err(400));
}

#[test]
fn null_deletes_and_maps_merge() {
    let original = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"paused": true, "replicas": 1}});
    let patched = patch(
        &original,
        &json!({"metadata": {"labels": {"a": null, "c": "3"}}, "spec": {"paused": null, "minReadySeconds": {"x": null, "y": 1}}}),
    );
    assert_eq!(
        patched,
        json!({"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"replicas": 1, "minReadySeconds": {"y": 1}}})
    );
}

#[test]
fn primitive_lists_merge_and_delete_from_primitive_list_removes() {
    let original = json!({"metadata": {"finalizers": ["x", "y"]}});
    let added = patch(&original, &json!({"metadata": {"finalizers": ["z", "x"]}}));
    assert_eq!(added["metadata"]["finalizers"], json!(["z", "x", "y"]));
    let removed = patch(
        &original,
        &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}),
    );
    assert_eq!(removed["metadata"]["finalizers"], json!(["y"]));
}

#[test]
fn lists_without_a_merge_key_are_replaced() {
    let original = pod_spec(
        json!({"tolerations": [{"key": "a"}], "containers": [{"name": "a", "args": ["1", "2"]}]}),
    );
    let patched = patch(
        &original,
        &pod_spec(
            json!({"tolerations": [{"key": "b"}], "containers": [{"name": "a", "args": ["3"]}]}),
        ),
    );
    assert_eq!(
        patched["spec"]["template"]["spec"]["tolerations"],
        json!([{"key": "b"}])
    );
    assert_eq!(containers(&patched), &json!([{"name": "a", "args": ["3"]}]));
}

#[test]
fn kubectl_apply_of_a_changed_deployment_gives_what_a_cluster_gives() {
    let last_applied_v1 = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"default"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"image":"nginx:1.25","name":"web"}]}}}}"#;
    let last_applied_v2 = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"default"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"env":[{"name":"A","value":"1"}],"image":"nginx:1.26","name":"web"},{"image":"busybox","name":"sidecar"}]}}}}"#;
    let live = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied_v1}
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "web",
                        "image": "nginx:1.25",
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        "imagePullPolicy": "IfNotPresent",
                        "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File"
                    }],
                    "dnsPolicy": "ClusterFirst",
                    "restartPolicy": "Always"
                }
            }
        }
    });
    // What `kubectl apply` (CreateThreeWayMergePatch) sends for the v2 manifest.
    let sent = json!({
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied_v2}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
            "containers": [
                {
                    "$setElementOrder/env": [{"name": "A"}],
                    "env": [{"$patch": "delete", "name": "B"}],
                    "image": "nginx:1.26",
                    "name": "web"
                },
                {"image": "busybox", "name": "sidecar"}
            ]
        }}}
    });
    let patched = patch(&live, &sent);
    let mut expected = live.clone();
    expected["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
        json!(last_applied_v2);
    expected["spec"]["template"]["spec"]["containers"] = json!([
        {
            "name": "web",
            "image": "nginx:1.26",
            "env": [{"name": "A", "value": "1"}],
            "imagePullPolicy": "IfNotPresent",
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File"
        },
        {"name": "sidecar", "image": "busybox"}
    ]);
    assert_eq!(patched, expected);
}

#[test]
fn bad_patches_are_errors() {
    let schema = schema();
    assert_eq!(
        strategic_merge(&json!({}), &json!([1]), &schema).map_err(|e| e.code),
        Err(400)
    );
    let no_key = strategic_merge(
        &two_containers(),
        &pod_spec(json!({"containers": [{"image": "z"}]})),
        &schema,
    );
    assert!(no_key.is_err());
    let bad_directive = strategic_merge(
        &json!({"spec": {}}),
        &json!({"spec": {"$patch": "bogus"}}),
        &schema,
    );
    assert!(bad_directive.is_err());
    let bad_order = strategic_merge(
        &two_containers(),
        &pod_spec(
            json!({"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "b"}]}),
        ),
        &schema,
    );
    assert!(bad_order.is_err());
    let mixed = strategic_merge(
        &json!({"metadata": {"finalizers": ["x"]}}),
        &json!({"metadata": {"finalizers": [{"a": 1}]}}),
        &schema,
    );
    assert!(mixed.is_err());
}

#[test]
fn schemaless_lists_are_replaced() {
    let original = json!({"spec": {"items": [{"name": "a"}], "m": {"x": 1}}});
    let patched = strategic_merge(
        &original,
        &json!({"spec": {"items": [{"name": "b"}], "m": {"y": 2}}}),
        &MergeSchema::schemaless(),
    )
    .unwrap();
    assert_eq!(
        patched,
        json!({"spec": {"items": [{"name": "b"}], "m": {"x": 1, "y": 2}}})
    );
}
