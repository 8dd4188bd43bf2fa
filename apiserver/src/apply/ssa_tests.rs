//! Tests of server-side apply and of the recording of updates.

use serde_json::{Value, json};

use super::*;

const NOW: &str = "2024-05-01T10:00:00Z";

fn by(manager: &str) -> Writer<'_> {
    Writer {
        manager,
        api_version: "apps/v1",
        part: Part::Main,
        now: NOW,
    }
}

fn schema() -> MergeSchema {
    MergeSchema::for_builtin("apps", "Deployment")
}

fn deployment(spec: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    })
}

fn with_containers(containers: Value) -> Value {
    deployment(json!({"template": {"spec": {"containers": containers}}}))
}

fn apply_ok(live: Option<&Value>, config: &Value, manager: &str) -> Value {
    apply(live, config, &by(manager), false, &schema()).unwrap()
}

fn entry<'a>(object: &'a Value, manager: &str) -> Option<&'a Value> {
    object["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager)
}

fn fields(object: &Value, manager: &str) -> Value {
    entry(object, manager).map_or(Value::Null, |e| e["fieldsV1"].clone())
}

fn conflict(result: Result<Value, ApplyError>) -> ApplyConflict {
    match result {
        Err(ApplyError::Conflict(conflict)) => conflict,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

fn names(object: &Value) -> Vec<&str> {
    object["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default()
}

#[test]
fn a_small_deployment_is_encoded_as_kube_apiserver_encodes_it() {
    let config = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [
                    {"name": "nginx", "image": "nginx:1.14.2", "ports": [{"containerPort": 80}]}
                ]}
            }
        }
    });
    let created = apply_ok(None, &config, "kubectl");
    let expected = json!([{
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": NOW,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                        ".": {},
                        "f:image": {},
                        "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                            ".": {},
                            "f:containerPort": {}
                        }}
                    }}}
                }
            }
        }
    }]);
    assert_eq!(created["metadata"]["managedFields"], expected);
    assert_eq!(
        created["spec"], config["spec"],
        "create-on-apply stores the config"
    );
}

#[test]
fn a_create_is_recorded_as_kube_apiserver_records_kubectl_create() {
    let created = deployment(json!({
        "progressDeadlineSeconds": 600,
        "replicas": 1,
        "revisionHistoryLimit": 10,
        "selector": {"matchLabels": {"app": "nginx"}},
        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {
                "containers": [{
                    "name": "nginx",
                    "image": "nginx",
                    "imagePullPolicy": "Always",
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"
                }],
                "dnsPolicy": "ClusterFirst",
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "securityContext": {},
                "terminationGracePeriodSeconds": 30
            }
        }
    }));
    let mut created = created;
    created["metadata"]["labels"] = json!({"app": "nginx"});
    created["metadata"]["uid"] = json!("786d3456");
    let recorded = record_update(None, &created, &by("kubectl-create"), &schema());
    let entry = entry(&recorded, "kubectl-create").unwrap();
    assert_eq!(entry["operation"], "Update");
    assert_eq!(
        entry["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:progressDeadlineSeconds": {},
                "f:replicas": {},
                "f:revisionHistoryLimit": {},
                "f:selector": {},
                "f:strategy": {
                    "f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                    "f:type": {}
                },
                "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {
                        "f:containers": {"k:{\"name\":\"nginx\"}": {
                            ".": {},
                            "f:image": {},
                            "f:imagePullPolicy": {},
                            "f:name": {},
                            "f:resources": {},
                            "f:terminationMessagePath": {},
                            "f:terminationMessagePolicy": {}
                        }},
                        "f:dnsPolicy": {},
                        "f:restartPolicy": {},
                        "f:schedulerName": {},
                        "f:securityContext": {},
                        "f:terminationGracePeriodSeconds": {}
                    }
                }
            }
        })
    );
}

#[test]
fn a_different_value_for_a_field_another_manager_applied_conflicts_unless_forced() {
    let live = apply_ok(
        None,
        &deployment(json!({"replicas": 1, "minReadySeconds": 5})),
        "a",
    );
    let config = deployment(json!({"replicas": 2}));
    let err = conflict(apply(Some(&live), &config, &by("b"), false, &schema()));
    assert_eq!(
        err.conflicts,
        vec![("a".to_string(), ".spec.replicas".to_string())]
    );
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
    );
    let status = err.to_api_error().to_status();
    assert_eq!(status["code"], 409);
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"a\"", "field": ".spec.replicas"}])
    );

    let forced = apply(Some(&live), &config, &by("b"), true, &schema()).unwrap();
    assert_eq!(forced["spec"]["replicas"], 2);
    assert_eq!(fields(&forced, "b"), json!({"f:spec": {"f:replicas": {}}}));
    assert_eq!(
        fields(&forced, "a"),
        json!({"f:spec": {"f:minReadySeconds": {}}})
    );
}

#[test]
fn several_conflicts_are_grouped_by_manager() {
    let live = apply_ok(
        None,
        &deployment(json!({"replicas": 1, "paused": false})),
        "a",
    );
    let live = apply_ok(Some(&live), &deployment(json!({"minReadySeconds": 1})), "b");
    let config = deployment(json!({"replicas": 2, "paused": true, "minReadySeconds": 3}));
    let err = conflict(apply(Some(&live), &config, &by("c"), false, &schema()));
    assert_eq!(
        err.message,
        "Apply failed with 3 conflicts: conflicts with \"a\":\n- .spec.paused\n- .spec.replicas\nconflicts with \"b\":\n- .spec.minReadySeconds"
    );
}

#[test]
fn fields_applied_before_and_omitted_now_are_removed() {
    let live = apply_ok(
        None,
        &deployment(json!({"replicas": 1, "minReadySeconds": 5})),
        "a",
    );
    let next = apply_ok(Some(&live), &deployment(json!({"replicas": 1})), "a");
    assert_eq!(next["spec"], json!({"replicas": 1}));
    assert_eq!(fields(&next, "a"), json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn an_omitted_field_another_manager_owns_stays() {
    let live = apply_ok(
        None,
        &deployment(json!({"replicas": 1, "minReadySeconds": 5})),
        "a",
    );
    let live = apply_ok(Some(&live), &deployment(json!({"minReadySeconds": 5})), "b");
    let next = apply_ok(Some(&live), &deployment(json!({"replicas": 1})), "a");
    assert_eq!(next["spec"], json!({"replicas": 1, "minReadySeconds": 5}));
    assert_eq!(
        fields(&next, "b"),
        json!({"f:spec": {"f:minReadySeconds": {}}})
    );
}

#[test]
fn the_same_value_applied_by_two_managers_is_shared() {
    let live = apply_ok(None, &deployment(json!({"replicas": 3})), "a");
    let shared = apply_ok(Some(&live), &deployment(json!({"replicas": 3})), "b");
    for manager in ["a", "b"] {
        assert_eq!(
            fields(&shared, manager),
            json!({"f:spec": {"f:replicas": {}}})
        );
    }
    let err = conflict(apply(
        Some(&shared),
        &deployment(json!({"replicas": 4})),
        &by("c"),
        false,
        &schema(),
    ));
    assert_eq!(err.conflicts.len(), 2, "{err:?}");
}

#[test]
fn keyed_list_items_are_owned_one_by_one() {
    let live = apply_ok(
        None,
        &with_containers(json!([{"name": "a", "image": "x"}])),
        "a",
    );
    let both = apply_ok(
        Some(&live),
        &with_containers(json!([{"name": "b", "image": "y"}])),
        "b",
    );
    assert_eq!(names(&both), vec!["a", "b"]);
    let a_only = apply_ok(Some(&both), &deployment(json!({"replicas": 1})), "a");
    assert_eq!(names(&a_only), vec!["b"]);
    assert_eq!(a_only["spec"]["replicas"], 1);
}

#[test]
fn a_keyed_item_keeps_fields_it_does_not_mention() {
    let live = apply_ok(
        None,
        &with_containers(json!([{"name": "a", "image": "x", "args": ["1"]}])),
        "a",
    );
    let live = apply_ok(
        Some(&live),
        &with_containers(json!([{"name": "a", "command": ["sh"]}])),
        "b",
    );
    let container = &live["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container,
        &json!({"name": "a", "image": "x", "args": ["1"], "command": ["sh"]})
    );
}

#[test]
fn atomic_lists_are_replaced_whole_and_conflict_whole() {
    let live = apply_ok(
        None,
        &with_containers(json!([{"name": "a", "args": ["1", "2"]}])),
        "a",
    );
    let err = conflict(apply(
        Some(&live),
        &with_containers(json!([{"name": "a", "args": ["3"]}])),
        &by("b"),
        false,
        &schema(),
    ));
    assert_eq!(
        err.conflicts,
        vec![(
            "a".to_string(),
            ".spec.template.spec.containers[name=\"a\"].args".to_string()
        )]
    );
    let replaced = apply_ok(
        Some(&live),
        &with_containers(json!([{"name": "a", "args": ["3"]}])),
        "a",
    );
    assert_eq!(
        replaced["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["3"])
    );
}

#[test]
fn set_items_are_owned_one_by_one() {
    let with_finalizers = |f: Value| {
        let mut d = deployment(json!({"replicas": 1}));
        d["metadata"]["finalizers"] = f;
        d
    };
    let live = apply_ok(None, &with_finalizers(json!(["x"])), "a");
    let live = apply_ok(Some(&live), &with_finalizers(json!(["y"])), "b");
    assert_eq!(live["metadata"]["finalizers"], json!(["x", "y"]));
    assert_eq!(
        fields(&live, "b"),
        json!({"f:metadata": {"f:finalizers": {"v:\"y\"": {}}}, "f:spec": {"f:replicas": {}}})
    );
    let live = apply_ok(Some(&live), &deployment(json!({"replicas": 1})), "a");
    assert_eq!(live["metadata"]["finalizers"], json!(["y"]));
}

#[test]
fn an_update_manager_owns_what_it_changed() {
    let created = record_update(
        None,
        &deployment(json!({"replicas": 1})),
        &by("kubectl-create"),
        &schema(),
    );
    let err = conflict(apply(
        Some(&created),
        &deployment(json!({"replicas": 3})),
        &by("ctl"),
        false,
        &schema(),
    ));
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-create\" using apps/v1: .spec.replicas"
    );
    assert_eq!(
        err.to_api_error().to_status()["details"]["causes"][0]["message"],
        "conflict with \"kubectl-create\" using apps/v1"
    );

    let mut edited = created.clone();
    edited["spec"]["replicas"] = json!(5);
    let edited = record_update(Some(&created), &edited, &by("kubectl-edit"), &schema());
    assert_eq!(
        entry(&edited, "kubectl-create"),
        None,
        "its only field was taken"
    );
    assert_eq!(
        fields(&edited, "kubectl-edit"),
        json!({"f:spec": {"f:replicas": {}}})
    );
}

#[test]
fn an_update_that_changes_nothing_leaves_managed_fields_alone() {
    let created = record_update(
        None,
        &deployment(json!({"replicas": 1})),
        &by("a"),
        &schema(),
    );
    let again = record_update(
        Some(&created),
        &created,
        &Writer {
            now: "2030-01-01T00:00:00Z",
            ..by("b")
        },
        &schema(),
    );
    assert_eq!(again, created);
}

#[test]
fn managed_fields_written_by_a_client_replace_or_clear_the_stored_ones() {
    let created = record_update(
        None,
        &deployment(json!({"replicas": 1})),
        &by("a"),
        &schema(),
    );
    let mut cleared = created.clone();
    cleared["metadata"]["managedFields"] = json!([{}]);
    let cleared = record_update(Some(&created), &cleared, &by("b"), &schema());
    assert_eq!(cleared["metadata"].get("managedFields"), None);

    let mut kept = created.clone();
    kept["metadata"]["managedFields"] = json!([]);
    kept["spec"]["paused"] = json!(true);
    let kept = record_update(Some(&created), &kept, &by("b"), &schema());
    assert_eq!(fields(&kept, "a"), json!({"f:spec": {"f:replicas": {}}}));
    assert_eq!(fields(&kept, "b"), json!({"f:spec": {"f:paused": {}}}));
}

#[test]
fn a_repeated_apply_changes_nothing() {
    let config = with_containers(json!([{"name": "a", "image": "x"}]));
    let first = apply_ok(None, &config, "a");
    let later = Writer {
        now: "2030-01-01T00:00:00Z",
        ..by("a")
    };
    let second = apply(Some(&first), &config, &later, false, &schema()).unwrap();
    assert_eq!(second, first);
}

#[test]
fn status_applies_own_status_only() {
    let live = apply_ok(None, &deployment(json!({"replicas": 1})), "a");
    let config = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "status": {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]}
    });
    let writer = Writer {
        part: Part::Status,
        ..by("controller")
    };
    let applied = apply(Some(&live), &config, &writer, false, &schema()).unwrap();
    assert_eq!(applied["status"]["replicas"], 1);
    let entry = entry(&applied, "controller").unwrap();
    assert_eq!(entry["subresource"], "status");
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}}})
    );
    assert_eq!(fields(&applied, "a"), json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn crd_schemas_give_keyed_lists_and_atomic_maps() {
    let schema = MergeSchema::from_openapi(&json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["id"],
                        "items": {"type": "object", "properties": {"id": {"type": "string"}, "v": {"type": "integer"}}}
                    },
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
                    "tags": {"type": "array", "items": {"type": "string"}}
                }
            }
        }
    }));
    let widget = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
    let writer = |m| Writer {
        manager: m,
        api_version: "example.com/v1",
        part: Part::All,
        now: NOW,
    };
    let live = apply(
        None,
        &widget(json!({"items": [{"id": "a", "v": 1}], "selector": {"x": "1"}, "tags": ["t"]})),
        &writer("a"),
        false,
        &schema,
    )
    .unwrap();
    assert_eq!(
        fields(&live, "a"),
        json!({"f:spec": {"f:items": {"k:{\"id\":\"a\"}": {".": {}, "f:id": {}, "f:v": {}}}, "f:selector": {}, "f:tags": {}}})
    );
    let live = apply(
        Some(&live),
        &widget(json!({"items": [{"id": "b", "v": 2}]})),
        &writer("b"),
        false,
        &schema,
    )
    .unwrap();
    assert_eq!(
        live["spec"]["items"],
        json!([{"id": "a", "v": 1}, {"id": "b", "v": 2}])
    );
    let err = conflict(apply(
        Some(&live),
        &widget(json!({"selector": {"y": "2"}})),
        &writer("b"),
        false,
        &schema,
    ));
    assert_eq!(
        err.conflicts,
        vec![("a".to_string(), ".spec.selector".to_string())]
    );
}

#[test]
fn schemaless_objects_own_every_key() {
    let thing = json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"a": {"b": 1}, "list": [1]}});
    let writer = Writer {
        manager: "m",
        api_version: "example.com/v1",
        part: Part::All,
        now: NOW,
    };
    let created = record_update(None, &thing, &writer, &MergeSchema::schemaless());
    assert_eq!(
        fields(&created, "m"),
        json!({"f:spec": {".": {}, "f:a": {".": {}, "f:b": {}}, "f:list": {}}})
    );
}

#[test]
fn bad_configurations_are_errors() {
    let invalid = |result: Result<Value, ApplyError>| match result {
        Err(ApplyError::Invalid(e)) => e,
        other => panic!("expected an invalid configuration, got {other:?}"),
    };
    let e = invalid(apply(None, &json!("x"), &by("a"), false, &schema()));
    assert_eq!(e.code, 400);

    let mut with_managed = deployment(json!({}));
    with_managed["metadata"]["managedFields"] = json!([]);
    let e = invalid(apply(None, &with_managed, &by("a"), false, &schema()));
    assert_eq!(
        (e.code, e.message.as_str()),
        (400, "metadata.managedFields must be nil")
    );

    let e = invalid(apply(
        None,
        &with_containers(json!([{"image": "x"}])),
        &by("a"),
        false,
        &schema(),
    ));
    assert_eq!(
        e.message,
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
    );

    let dup = with_containers(json!([{"name": "a"}, {"name": "a"}]));
    let e = invalid(apply(None, &dup, &by("a"), false, &schema()));
    assert!(
        e.message
            .ends_with(".spec.template.spec.containers: duplicate entries for key [name=\"a\"]"),
        "{}",
        e.message
    );

    let not_a_map = with_containers(json!(["a"]));
    assert!(matches!(
        apply(None, &not_a_map, &by("a"), false, &schema()),
        Err(ApplyError::Invalid(_))
    ));
}

#[test]
fn odd_live_objects_do_not_panic() {
    let live = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "managedFields": [{"manager": 1}, "x", {"operation": "Apply", "fieldsV1": {"bad": {}}}]},
        "spec": {"template": {"spec": {"containers": [{"image": "no-name"}, "x", {"name": "a"}, {"name": "a"}]}}}
    });
    let applied = apply(
        Some(&live),
        &with_containers(json!([{"name": "b"}])),
        &by("a"),
        true,
        &schema(),
    )
    .unwrap();
    assert_eq!(
        names(&applied),
        vec!["b"],
        "an unidentifiable live list is replaced"
    );
    let updated = record_update(
        Some(&live),
        &deployment(json!("not an object")),
        &by("u"),
        &schema(),
    );
    assert_eq!(updated["spec"], "not an object");
}

#[test]
fn fields_of_an_object_never_applied_or_recorded_belong_to_before_first_apply() {
    let live = deployment(json!({"replicas": 1}));
    let err = conflict(apply(
        Some(&live),
        &deployment(json!({"replicas": 2})),
        &by("a"),
        false,
        &schema(),
    ));
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas"
    );
    let same = apply_ok(Some(&live), &deployment(json!({"replicas": 1})), "a");
    assert_eq!(
        fields(&same, "before-first-apply"),
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert_eq!(fields(&same, "a"), json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn kubectl_server_side_apply_takes_over_what_client_side_apply_last_applied() {
    const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
    let mut manifest = deployment(json!({"replicas": 1}));
    manifest["metadata"]["annotations"] =
        json!({ANNOTATION: format!("{}\n", deployment(json!({"replicas": 1})))});
    let live = record_update(None, &manifest, &by("kubectl-client-side-apply"), &schema());
    let config = deployment(json!({"replicas": 2}));

    let err = conflict(apply(Some(&live), &config, &by("other"), false, &schema()));
    assert_eq!(
        err.conflicts,
        vec![(
            "kubectl-client-side-apply".to_string(),
            ".spec.replicas".to_string()
        )]
    );

    let applied = apply(Some(&live), &config, &by("kubectl"), false, &schema()).unwrap();
    assert_eq!(applied["spec"]["replicas"], 2);
    assert_eq!(
        applied["metadata"]["annotations"][ANNOTATION],
        json!(format!("{config}\n")),
        "the annotation follows the server-side applied configuration"
    );

    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(5);
    let scaled = record_update(Some(&live), &scaled, &by("hpa"), &schema());
    let err = conflict(apply(
        Some(&scaled),
        &config,
        &by("kubectl"),
        false,
        &schema(),
    ));
    assert_eq!(
        err.conflicts,
        vec![("hpa".to_string(), ".spec.replicas".to_string())]
    );
}

#[test]
fn applying_a_changed_manifest_twice_leaves_exactly_the_new_manifest() {
    let v1 = with_containers(json!([
        {"name": "web", "image": "nginx:1.25", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    ]));
    let v2 = with_containers(json!([
        {"name": "web", "image": "nginx:1.26", "env": [{"name": "A", "value": "1"}]},
        {"name": "sidecar", "image": "busybox"}
    ]));
    let first = apply_ok(None, &v1, "kubectl");
    let mut defaulted = first.clone();
    defaulted["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] =
        json!("IfNotPresent");
    let second = apply_ok(Some(&defaulted), &v2, "kubectl");
    assert_eq!(
        containers_of(&second),
        &json!([
            {"name": "web", "image": "nginx:1.26", "env": [{"name": "A", "value": "1"}], "imagePullPolicy": "IfNotPresent"},
            {"name": "sidecar", "image": "busybox"}
        ])
    );
    assert_eq!(
        fields(&second, "kubectl")["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"]
            ["f:env"],
        json!({"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}})
    );
}

fn containers_of(object: &Value) -> &Value {
    &object["spec"]["template"]["spec"]["containers"]
}
