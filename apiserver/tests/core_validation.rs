//! The per-kind rules of kube's validation beyond metadata (issue 37): Secret types,
//! immutable ConfigMaps and Secrets, Services, workload restart policies and what a workload
//! update may not change, each answered with kube-apiserver's `422` message.

mod support;

use serde_json::{Value, json};
use support::*;

const SECRETS: &str = "/api/v1/namespaces/default/secrets";
const SERVICES: &str = "/api/v1/namespaces/default/services";
const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";
const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const STATEFUL_SETS: &str = "/apis/apps/v1/namespaces/default/statefulsets";

fn secret(name: &str, secret_type: &str, more: Value) -> Value {
    let mut secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
        "type": secret_type});
    merge(&mut secret, more);
    secret
}

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

fn pod_template(restart_policy: Option<&str>) -> Value {
    let mut spec = json!({"containers": [{"name": "app", "image": "busybox"}]});
    if let Some(policy) = restart_policy {
        spec["restartPolicy"] = json!(policy);
    }
    json!({"metadata": {"labels": {"app": "web"}}, "spec": spec})
}

fn merge(into: &mut Value, more: Value) {
    if let (Some(into), Value::Object(more)) = (into.as_object_mut(), more) {
        into.extend(more);
    }
}

/// Creates `body` at `uri`; returns the refusal's message (the create must be refused 422).
async fn refusal(client: &kube::Client, uri: &str, body: &Value) -> String {
    let (code, status) = post_json(client, uri, &body.to_string()).await;
    assert_eq!(code, 422, "{body} was not refused: {status}");
    assert_eq!(status["reason"], "Invalid");
    status["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn secret_types_need_their_keys_as_kube_checks_them() {
    let (_server, client) = server();
    let cases = [
        (
            secret("tls", "kubernetes.io/tls", json!({"data": {}})),
            r#"Secret "tls" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]"#,
        ),
        (
            secret("pull", "kubernetes.io/dockerconfigjson", json!({})),
            r#"Secret "pull" is invalid: data[.dockerconfigjson]: Required value"#,
        ),
        (
            secret(
                "pull",
                "kubernetes.io/dockerconfigjson",
                json!({"stringData": {".dockerconfigjson": "[]"}}),
            ),
            r#"Secret "pull" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go value of type map[string]interface {}"#,
        ),
        (
            secret(
                "pull",
                "kubernetes.io/dockercfg",
                json!({"data": {".dockercfg": "eyJh"}}),
            ),
            r#"Secret "pull" is invalid: data[.dockercfg]: Invalid value: "<secret contents redacted>": unexpected end of JSON input"#,
        ),
        (
            secret("token", "kubernetes.io/service-account-token", json!({})),
            r#"Secret "token" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value"#,
        ),
        (
            secret("basic", "kubernetes.io/basic-auth", json!({})),
            r#"Secret "basic" is invalid: [data[%s][username]: Required value, data[%s][password]: Required value]"#,
        ),
        (
            secret(
                "ssh",
                "kubernetes.io/ssh-auth",
                json!({"stringData": {"ssh-privatekey": ""}}),
            ),
            r#"Secret "ssh" is invalid: data[%s][ssh-privatekey]: Required value"#,
        ),
    ];
    for (body, message) in cases {
        assert_eq!(refusal(&client, SECRETS, &body).await, message);
    }
    // The same types with their keys are accepted.
    let tls = secret(
        "tls",
        "kubernetes.io/tls",
        json!({"stringData": {"tls.crt": "c", "tls.key": "k"}}),
    );
    assert_eq!(post_json(&client, SECRETS, &tls.to_string()).await.0, 201);
    let pull = secret(
        "pull",
        "kubernetes.io/dockerconfigjson",
        json!({"stringData": {".dockerconfigjson": "{\"auths\": {}}"}}),
    );
    assert_eq!(post_json(&client, SECRETS, &pull.to_string()).await.0, 201);
    // A Secret's type may not change.
    let (code, status) =
        merge_patch(&client, &format!("{SECRETS}/tls"), r#"{"type": "Opaque"}"#).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        r#"Secret "tls" is invalid: type: Invalid value: "Opaque": field is immutable"#
    );
}

#[tokio::test]
async fn immutable_config_maps_and_secrets_keep_their_data() {
    let (_server, client) = server();
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "frozen"}, "data": {"a": "1"}, "immutable": true});
    assert_eq!(
        post_json(&client, CONFIG_MAPS, &config_map.to_string())
            .await
            .0,
        201
    );
    let uri = format!("{CONFIG_MAPS}/frozen");
    let (code, status) = merge_patch(&client, &uri, r#"{"data": {"a": "2"}}"#).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
    );
    let (code, status) = merge_patch(&client, &uri, r#"{"immutable": false}"#).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "ConfigMap \"frozen\" is invalid: immutable: Forbidden: field is immutable when `immutable` is set"
    );
    // Labels may still change.
    let (code, _) = merge_patch(&client, &uri, r#"{"metadata": {"labels": {"x": "y"}}}"#).await;
    assert_eq!(code, 200);

    let frozen = secret(
        "frozen",
        "Opaque",
        json!({"data": {"a": "MQ=="}, "immutable": true}),
    );
    assert_eq!(
        post_json(&client, SECRETS, &frozen.to_string()).await.0,
        201
    );
    let uri = format!("{SECRETS}/frozen");
    let (code, status) = merge_patch(&client, &uri, r#"{"stringData": {"b": "2"}}"#).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "Secret \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
    );
}

#[tokio::test]
async fn services_are_validated_as_kube_validates_them() {
    let (_server, client) = server();
    let port = |port: Value| json!({"ports": [port]});
    let cases = [
        (
            service("noports", json!({"selector": {"app": "web"}})),
            r#"Service "noports" is invalid: spec.ports: Required value"#,
        ),
        (
            service("zero", port(json!({"port": 0}))),
            r#"Service "zero" is invalid: spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"#,
        ),
        (
            service("unnamed", json!({"ports": [{"port": 80}, {"port": 443}]})),
            r#"Service "unnamed" is invalid: [spec.ports[0].name: Required value, spec.ports[1].name: Required value]"#,
        ),
        (
            service(
                "twice",
                json!({"ports": [{"name": "web", "port": 80}, {"name": "web", "port": 81}]}),
            ),
            r#"Service "twice" is invalid: spec.ports[1].name: Duplicate value: "web""#,
        ),
        (
            service("proto", port(json!({"port": 80, "protocol": "HTTP"}))),
            r#"Service "proto" is invalid: spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP""#,
        ),
        (
            service(
                "target",
                port(json!({"port": 80, "targetPort": "Web_Port"})),
            ),
            r#"Service "target" is invalid: spec.ports[0].targetPort: Invalid value: "Web_Port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"#,
        ),
        (
            service("kind", json!({"type": "Internal", "ports": [{"port": 80}]})),
            r#"Service "kind" is invalid: spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort""#,
        ),
        (
            service("external", json!({"type": "ExternalName"})),
            r#"Service "external" is invalid: spec.externalName: Required value"#,
        ),
        (
            service(
                "headless",
                json!({"type": "NodePort", "clusterIP": "None", "ports": [{"port": 80}]}),
            ),
            r#"Service "headless" is invalid: spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for NodePort services"#,
        ),
        (
            service("nodeport", port(json!({"port": 80, "nodePort": 30080}))),
            "Service \"nodeport\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
        ),
        (
            service(
                "sticky",
                json!({"sessionAffinity": "Cookie", "ports": [{"port": 80}]}),
            ),
            r#"Service "sticky" is invalid: spec.sessionAffinity: Unsupported value: "Cookie": supported values: "ClientIP", "None""#,
        ),
        (
            service("1web", port(json!({"port": 80}))),
            r#"Service "1web" is invalid: metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
        ),
    ];
    for (body, message) in cases {
        assert_eq!(refusal(&client, SERVICES, &body).await, message);
    }
    // A headless Service needs no ports, an ExternalName one no cluster IP.
    let headless = service(
        "headless",
        json!({"clusterIP": "None", "selector": {"app": "db"}}),
    );
    assert_eq!(
        post_json(&client, SERVICES, &headless.to_string()).await.0,
        201
    );
    let external = service(
        "external",
        json!({"type": "ExternalName", "externalName": "db.example.com."}),
    );
    assert_eq!(
        post_json(&client, SERVICES, &external.to_string()).await.0,
        201
    );

    // An update may not change the cluster IP; one it leaves out is kept.
    let web = service("web", port(json!({"port": 80})));
    let (code, created) = post_json(&client, SERVICES, &web.to_string()).await;
    assert_eq!(code, 201, "{created}");
    let uri = format!("{SERVICES}/web");
    let (code, _) = merge_patch(&client, &uri, r#"{"metadata": {"labels": {"a": "b"}}}"#).await;
    assert_eq!(code, 200);
    let mut replaced = created.clone();
    replaced["spec"]["clusterIP"] = json!("10.96.0.99");
    replaced["metadata"]["resourceVersion"] = Value::Null;
    let (code, status) = raw(
        &client,
        "PUT",
        &uri,
        "application/json",
        &replaced.to_string(),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        r#"Service "web" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.0.99"}: may not change once set"#
    );
}

#[tokio::test]
async fn services_get_addresses_and_node_ports_no_other_service_holds() {
    let (_server, client) = server();
    let node_port =
        |name: &str, ports: Value| service(name, json!({"type": "NodePort", "ports": ports}));
    // Cluster IP → the Service holding it; node ports of s0.
    let mut ips = std::collections::BTreeMap::new();
    let mut node_ports = std::collections::BTreeSet::new();
    let mut ports_of_s0 = Vec::new();
    for i in 0..20 {
        let name = format!("s{i}");
        let body = node_port(
            &name,
            json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}]),
        );
        let (code, created) = post_json(&client, SERVICES, &body.to_string()).await;
        assert_eq!(code, 201, "{created}");
        let ip = created["spec"]["clusterIP"].as_str().unwrap().to_string();
        ips.insert(ip, name);
        for port in created["spec"]["ports"].as_array().unwrap() {
            let port = port["nodePort"].as_u64().unwrap();
            node_ports.insert(port);
            if i == 0 {
                ports_of_s0.push(port);
            }
        }
    }
    assert_eq!(ips.len(), 20, "every Service its own cluster IP: {ips:?}");
    assert!(
        !ips.contains_key("10.96.0.1"),
        "the kubernetes Service's is kept"
    );
    assert_eq!(node_ports.len(), 40, "every port its own node port");

    // One asked for that another Service holds is refused, in kube-apiserver's words.
    let (taken_ip, holder) = ips.first_key_value().unwrap();
    let copy = service(
        "copy",
        json!({"clusterIP": taken_ip, "ports": [{"port": 80}]}),
    );
    assert_eq!(
        refusal(&client, SERVICES, &copy).await,
        format!(
            r#"Service "copy" is invalid: spec.clusterIPs: Invalid value: []string{{"{taken_ip}"}}: failed to allocate IP {taken_ip}: provided IP is already allocated"#
        )
    );
    let taken_port = ports_of_s0[0];
    let port_copy = node_port("port-copy", json!([{"port": 80, "nodePort": taken_port}]));
    assert_eq!(
        refusal(&client, SERVICES, &port_copy).await,
        format!(
            r#"Service "port-copy" is invalid: spec.ports[0].nodePort: Invalid value: {taken_port}: provided port is already allocated"#
        )
    );

    // A deleted Service's address and node ports are free again.
    let mut freed = vec![holder.clone()];
    if holder != "s0" {
        freed.push("s0".into());
    }
    for name in freed {
        let uri = format!("{SERVICES}/{name}");
        assert_eq!(
            raw(&client, "DELETE", &uri, "application/json", "").await.0,
            200
        );
    }
    assert_eq!(post_json(&client, SERVICES, &copy.to_string()).await.0, 201);
    assert_eq!(
        post_json(&client, SERVICES, &port_copy.to_string()).await.0,
        201
    );
}

#[tokio::test]
async fn workloads_keep_the_restart_policy_and_selector_kube_requires() {
    let (_server, client) = server();
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
        "spec": {"template": pod_template(None)}});
    assert_eq!(
        refusal(&client, JOBS, &job).await,
        r#"Job.batch "once" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never""#
    );
    let deployment = |name: &str, policy: Option<&str>| {
        json!({"apiVersion": "apps/v1",
        "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": pod_template(policy)}})
    };
    assert_eq!(
        refusal(&client, DEPLOYMENTS, &deployment("never", Some("Never"))).await,
        r#"Deployment.apps "never" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always""#
    );
    let body = deployment("web", None).to_string();
    assert_eq!(post_json(&client, DEPLOYMENTS, &body).await.0, 201);
    let patch = r#"{"spec": {"selector": {"matchLabels": {"app": "web", "tier": "front"}},
        "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}}}}"#;
    let (code, status) = merge_patch(&client, &format!("{DEPLOYMENTS}/web"), patch).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        r#"Deployment.apps "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"front"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"#
    );
    let (code, _) = merge_patch(
        &client,
        &format!("{DEPLOYMENTS}/web"),
        r#"{"spec": {"replicas": 3}}"#,
    )
    .await;
    assert_eq!(code, 200);

    let stateful_set = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db"}, "spec": {"serviceName": "db",
        "selector": {"matchLabels": {"app": "web"}}, "template": pod_template(None)}});
    assert_eq!(
        post_json(&client, STATEFUL_SETS, &stateful_set.to_string())
            .await
            .0,
        201
    );
    let uri = format!("{STATEFUL_SETS}/db");
    let (code, status) = merge_patch(&client, &uri, r#"{"spec": {"serviceName": "other"}}"#).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "StatefulSet.apps \"db\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
    );
    let (code, _) = merge_patch(&client, &uri, r#"{"spec": {"replicas": 2}}"#).await;
    assert_eq!(code, 200);
}
