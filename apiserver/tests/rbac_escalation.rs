//! RBAC escalation prevention and ClusterRole aggregation in the embedded server, as
//! kube-apiserver enforces them: kube's cases (grant what you hold, more than you hold,
//! with `escalate`, with `bind`, aggregated roles) answered with kube's messages.

mod support;

use dynrec_apiserver::ApiServer;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use support::rbac::{rbac_object, rbac_server};
use support::{create, create_namespace, typed};

/// The static user of [`rbac_server`] (`alice`, groups `auditors` and
/// `system:authenticated`), as kube names it in escalation messages.
const ALICE: &str = r#"user "alice" (groups=["auditors" "system:authenticated"])"#;
const NOT_HELD: &str = "is attempting to grant RBAC permissions not currently held:";

/// Roles, ClusterRoles and their bindings as `client` writes them.
fn rbac_api(client: &kube::Client, kind: &str, namespace: Option<&str>) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", kind);
    let resource = ApiResource::from_gvk(&gvk);
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

fn role(kind: &str, name: &str, namespace: Option<&str>, rules: Value) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata,
        "rules": rules})
}

fn binding(kind: &str, name: &str, namespace: Option<&str>, role_kind: &str, role: &str) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]})
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// Grants `alice` `rules` in the namespace `t` (a Role and a RoleBinding named `held`).
async fn alice_holds(server: &ApiServer, rules: Value) {
    rbac_object(server, role("Role", "held", Some("t"), rules)).await;
    rbac_object(
        server,
        binding("RoleBinding", "held", Some("t"), "Role", "held"),
    )
    .await;
}

/// Grants `alice` `rules` everywhere (a ClusterRole and a ClusterRoleBinding).
async fn alice_holds_everywhere(server: &ApiServer, name: &str, rules: Value) {
    rbac_object(server, role("ClusterRole", name, None, rules)).await;
    rbac_object(
        server,
        binding("ClusterRoleBinding", name, None, "ClusterRole", name),
    )
    .await;
}

/// What a write answers: `Ok` or the status message with its code.
async fn write_as_alice(server: &ApiServer, object: &Value) -> Result<(), (u16, String)> {
    let alice = server.client_with_token(Some("static-token"));
    let kind = object["kind"].as_str().unwrap();
    let api = rbac_api(&alice, kind, object["metadata"]["namespace"].as_str());
    match api
        .create(&PostParams::default(), &typed(object.clone()))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) => Err((status.code, status.message)),
        Err(other) => panic!("{other}"),
    }
}

fn writes_rbac() -> Value {
    rule(
        &["rbac.authorization.k8s.io"],
        &["roles", "rolebindings"],
        &["create", "update", "patch"],
    )
}

#[tokio::test]
async fn role_writes_are_checked_against_the_writer_s_own_permissions_as_kube_does() {
    struct Case {
        name: &'static str,
        holds: Value,
        writes: Value,
        answer: Result<(), (u16, String)>,
    }
    let reader = rule(&[""], &["configmaps"], &["get", "list"]);
    let cases = [
        Case {
            name: "grant what you hold",
            holds: json!([writes_rbac(), reader.clone()]),
            writes: role(
                "Role",
                "r",
                Some("t"),
                json!([rule(&[""], &["configmaps"], &["get"])]),
            ),
            answer: Ok(()),
        },
        Case {
            name: "grant more than you hold",
            holds: json!([writes_rbac(), reader.clone()]),
            writes: role(
                "Role",
                "r",
                Some("t"),
                json!([
                    rule(&[""], &["configmaps"], &["get", "delete", "watch"]),
                    rule(&[""], &["secrets"], &["get"]),
                ]),
            ),
            answer: Err((
                403,
                format!(
                    "roles.rbac.authorization.k8s.io \"r\" is forbidden: {ALICE} {NOT_HELD}\n\
                 {{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\" \"watch\"]}}\n\
                 {{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}}"
                ),
            )),
        },
        Case {
            name: "grant more than you hold, with escalate",
            holds: json!([
                writes_rbac(),
                reader.clone(),
                rule(&["rbac.authorization.k8s.io"], &["roles"], &["escalate"])
            ]),
            writes: role(
                "Role",
                "r",
                Some("t"),
                json!([rule(&["*"], &["*"], &["*"])]),
            ),
            answer: Ok(()),
        },
        Case {
            name: "wildcards you hold cover what they match",
            holds: json!([writes_rbac(), rule(&["apps"], &["*"], &["*"])]),
            writes: role(
                "Role",
                "r",
                Some("t"),
                json!([rule(
                    &["apps"],
                    &["deployments", "deployments/scale"],
                    &["get", "update"]
                ),]),
            ),
            answer: Ok(()),
        },
        Case {
            name: "names you hold cover those names only",
            holds: json!([writes_rbac(), {"apiGroups": [""], "resources": ["secrets"],
                "resourceNames": ["a"], "verbs": ["get"]}]),
            writes: role(
                "Role",
                "r",
                Some("t"),
                json!([{"apiGroups": [""],
                "resources": ["secrets"], "resourceNames": ["a", "b"], "verbs": ["get"]}]),
            ),
            answer: Err((
                403,
                format!(
                    "roles.rbac.authorization.k8s.io \"r\" is forbidden: {ALICE} {NOT_HELD}\n\
                 {{APIGroups:[\"\"], Resources:[\"secrets\"], ResourceNames:[\"b\"], Verbs:[\"get\"]}}"
                ),
            )),
        },
        Case {
            name: "bind a role you hold all of",
            holds: json!([writes_rbac(), reader.clone()]),
            writes: binding("RoleBinding", "b", Some("t"), "Role", "held"),
            answer: Ok(()),
        },
        Case {
            name: "bind cluster-admin without bind",
            holds: json!([writes_rbac(), reader.clone()]),
            writes: binding(
                "RoleBinding",
                "b",
                Some("t"),
                "ClusterRole",
                "cluster-admin",
            ),
            answer: Err((
                403,
                format!(
                    "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: {ALICE} {NOT_HELD}\n\
                 {{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}}\n\
                 {{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}}"
                ),
            )),
        },
        Case {
            name: "bind cluster-admin with bind on it",
            holds: json!([writes_rbac(), {"apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["clusterroles"], "resourceNames": ["cluster-admin"], "verbs": ["bind"]}]),
            writes: binding(
                "RoleBinding",
                "b",
                Some("t"),
                "ClusterRole",
                "cluster-admin",
            ),
            answer: Ok(()),
        },
        Case {
            name: "bind with bind on another role",
            holds: json!([writes_rbac(), {"apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["clusterroles"], "resourceNames": ["view"], "verbs": ["bind"]}]),
            writes: binding(
                "RoleBinding",
                "b",
                Some("t"),
                "ClusterRole",
                "system:aggregate-to-admin",
            ),
            answer: Err((
                403,
                format!(
                    "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: {ALICE} {NOT_HELD}\n\
                 {{APIGroups:[\"authorization.k8s.io\"], Resources:[\"localsubjectaccessreviews\"], Verbs:[\"create\"]}}\n\
                 {{APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"rolebindings\"], Verbs:[\"get\" \"list\" \"watch\" \"delete\" \"deletecollection\"]}}\n\
                 {{APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"roles\"], Verbs:[\"get\" \"list\" \"watch\" \"delete\" \"deletecollection\"]}}"
                ),
            )),
        },
        Case {
            name: "bind a role that does not exist",
            holds: json!([writes_rbac()]),
            writes: binding("RoleBinding", "b", Some("t"), "Role", "ghost"),
            answer: Err((
                404,
                "roles.rbac.authorization.k8s.io \"ghost\" not found".into(),
            )),
        },
    ];
    for case in cases {
        let server = rbac_server();
        create_namespace(&server.client(), "t").await;
        alice_holds(&server, case.holds).await;
        let answer = write_as_alice(&server, &case.writes).await;
        assert_eq!(answer, case.answer, "{}", case.name);
    }
}

#[tokio::test]
async fn cluster_scoped_writes_need_cluster_wide_permissions() {
    let server = rbac_server();
    create_namespace(&server.client(), "t").await;
    // Holding configmaps in one namespace does not let alice grant them cluster-wide.
    alice_holds(&server, json!([rule(&[""], &["configmaps"], &["get"])])).await;
    alice_holds_everywhere(
        &server,
        "rbac-writer",
        json!([rule(
            &["rbac.authorization.k8s.io"],
            &["clusterroles", "clusterrolebindings"],
            &["create"]
        )]),
    )
    .await;
    let wider = role(
        "ClusterRole",
        "wider",
        None,
        json!([rule(&[""], &["configmaps"], &["get"])]),
    );
    assert_eq!(
        write_as_alice(&server, &wider).await,
        Err((
            403,
            format!(
                "clusterroles.rbac.authorization.k8s.io \"wider\" is forbidden: {ALICE} {NOT_HELD}\n\
             {{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"get\"]}}"
            )
        ))
    );
    let to_admin = binding(
        "ClusterRoleBinding",
        "me-admin",
        None,
        "ClusterRole",
        "cluster-admin",
    );
    let refused = write_as_alice(&server, &to_admin).await.unwrap_err();
    assert_eq!(refused.0, 403);
    assert!(refused.1.starts_with(&format!(
        "clusterrolebindings.rbac.authorization.k8s.io \"me-admin\" is forbidden: {ALICE} {NOT_HELD}\n"
    )));
    // The same role is fine once alice holds its rule everywhere.
    alice_holds_everywhere(
        &server,
        "reader",
        json!([rule(&[""], &["configmaps"], &["get"])]),
    )
    .await;
    assert_eq!(write_as_alice(&server, &wider).await, Ok(()));
}

#[tokio::test]
async fn an_update_that_adds_permissions_is_checked_as_a_create_is() {
    let server = rbac_server();
    create_namespace(&server.client(), "t").await;
    alice_holds(
        &server,
        json!([writes_rbac(), rule(&[""], &["configmaps"], &["get"])]),
    )
    .await;
    let narrow = role(
        "Role",
        "r",
        Some("t"),
        json!([rule(&[""], &["configmaps"], &["get"])]),
    );
    assert_eq!(write_as_alice(&server, &narrow).await, Ok(()));
    let alice = server.client_with_token(Some("static-token"));
    let roles = rbac_api(&alice, "Role", Some("t"));
    let widen = json!({"rules": [rule(&[""], &["configmaps", "secrets"], &["get"])]});
    let refused = roles
        .patch("r", &PatchParams::default(), &Patch::Merge(&widen))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = refused else {
        panic!("{refused}")
    };
    assert_eq!(
        status.message,
        format!(
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: {ALICE} {NOT_HELD}\n\
             {{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}}"
        )
    );
    // A change of labels alone keeps what the role grants, and what alice holds covers it.
    let label = json!({"metadata": {"labels": {"team": "a"}}});
    roles
        .patch("r", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
}

#[tokio::test]
async fn an_aggregation_rule_needs_every_permission() {
    let server = rbac_server();
    alice_holds_everywhere(
        &server,
        "role-writer",
        json!([rule(
            &["rbac.authorization.k8s.io"],
            &["clusterroles"],
            &["create"]
        )]),
    )
    .await;
    let mut aggregated = role("ClusterRole", "gatherer", None, json!([]));
    aggregated["aggregationRule"] =
        json!({"clusterRoleSelectors": [{"matchLabels": {"gather": "true"}}]});
    assert_eq!(
        write_as_alice(&server, &aggregated).await,
        Err((403, "clusterroles.rbac.authorization.k8s.io \"gatherer\" is forbidden: must have cluster-admin privileges to use the aggregationRule".into()))
    );
}

/// The rules of a ClusterRole as stored.
async fn cluster_role_rules(client: &kube::Client, name: &str) -> Value {
    let role = rbac_api(client, "ClusterRole", None)
        .get(name)
        .await
        .unwrap();
    role.data["rules"].clone()
}

#[tokio::test]
async fn aggregated_cluster_roles_gather_the_rules_of_the_roles_they_select_and_follow_them() {
    let server = rbac_server();
    let admin = server.client();
    let widgets = rule(&["example.com"], &["widgets"], &["get", "list", "watch"]);
    let before = cluster_role_rules(&admin, "admin").await;
    assert!(
        before
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resources"] == json!(["rolebindings", "roles"]))
    );
    assert!(!before.as_array().unwrap().contains(&widgets));
    // A role labelled to aggregate into `view` reaches `view`, `edit` and `admin`, as kube's.
    let mut viewer = role(
        "ClusterRole",
        "widget-viewer",
        None,
        json!([widgets.clone()]),
    );
    viewer["metadata"]["labels"] = json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"});
    rbac_object(&server, viewer).await;
    for name in ["view", "edit", "admin"] {
        let rules = cluster_role_rules(&admin, name).await;
        assert!(
            rules.as_array().unwrap().contains(&widgets),
            "{name}: {rules}"
        );
    }
    // A user bound to `view` may now read widgets.
    rbac_object(
        &server,
        binding(
            "ClusterRoleBinding",
            "alice-view",
            None,
            "ClusterRole",
            "view",
        ),
    )
    .await;
    let review: k8s_openapi::api::authorization::v1::SelfSubjectAccessReview = typed(json!({
        "spec": {"resourceAttributes": {"group": "example.com", "resource": "widgets", "verb": "list"}}}));
    let alice = server.client_with_token(Some("static-token"));
    let answer = Api::all(alice)
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    assert_eq!(answer.status.map(|s| s.allowed), Some(true));
    // Deleting the role takes its rules out again.
    rbac_api(&admin, "ClusterRole", None)
        .delete("widget-viewer", &Default::default())
        .await
        .unwrap();
    let after = cluster_role_rules(&admin, "admin").await;
    assert!(!after.as_array().unwrap().contains(&widgets), "{after}");
    assert_eq!(after, before);
}

#[tokio::test]
async fn the_administrator_is_never_checked() {
    let server = rbac_server();
    let admin = server.client();
    let roles = rbac_api(&admin, "ClusterRole", None);
    let mut anything = role(
        "ClusterRole",
        "anything",
        None,
        json!([rule(&["*"], &["*"], &["*"])]),
    );
    anything["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]});
    create(&roles, &typed(anything)).await;
}

#[tokio::test]
async fn a_binding_s_role_ref_cannot_change_as_kube_refuses_it() {
    let server = rbac_server();
    let admin = server.client();
    create_namespace(&admin, "t").await;
    let bindings = rbac_api(&admin, "RoleBinding", Some("t"));
    let viewers = binding("RoleBinding", "viewers", Some("t"), "ClusterRole", "view");
    create(&bindings, &typed(viewers)).await;
    let to_edit = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole", "name": "edit"}});
    let refused = bindings
        .patch("viewers", &PatchParams::default(), &Patch::Merge(&to_edit))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = refused else {
        panic!("{refused}")
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        status.message,
        "RoleBinding.rbac.authorization.k8s.io \"viewers\" is invalid: roleRef: Invalid value: \
         rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: \
         cannot change roleRef"
    );
    // The same on a ClusterRoleBinding; its subjects may still change.
    let cluster_bindings = rbac_api(&admin, "ClusterRoleBinding", None);
    let readers = binding("ClusterRoleBinding", "readers", None, "ClusterRole", "view");
    create(&cluster_bindings, &typed(readers)).await;
    let refused = cluster_bindings
        .patch("readers", &PatchParams::default(), &Patch::Merge(&to_edit))
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("cannot change roleRef"),
        "{refused}"
    );
    let more_subjects = json!({"subjects": [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]});
    let changed = cluster_bindings
        .patch(
            "readers",
            &PatchParams::default(),
            &Patch::Merge(&more_subjects),
        )
        .await
        .unwrap();
    assert_eq!(changed.data["subjects"][0]["name"], "bob");
}
