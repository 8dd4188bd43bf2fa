//! CRD validation rules (`x-kubernetes-validations`) are evaluated as kube-apiserver
//! evaluates them: `self`, `oldSelf`, transition rules, messages, reasons, field paths,
//! Kubernetes' CEL libraries, compile errors on the CRD and a cost limit.

#![recursion_limit = "256"]

mod support;

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use support::*;

/// A Gateway-like kind whose schema carries rules at the object, list-item and scalar level.
fn gateway_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gateways.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Gateway", "plural": "gateways"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {
                        "type": "object",
                        "x-kubernetes-validations": [
                            {"rule": "self.minReplicas <= self.maxReplicas",
                             "message": "minReplicas must not exceed maxReplicas"},
                            {"rule": "!has(self.tls) || self.listeners.all(l, l.protocol == 'HTTPS')",
                             "message": "every listener must be HTTPS when tls is set",
                             "fieldPath": ".listeners", "reason": "FieldValueForbidden"}
                        ],
                        "properties": {
                            "minReplicas": {"type": "integer"},
                            "maxReplicas": {"type": "integer"},
                            "tls": {"type": "boolean"},
                            "className": {"type": "string", "x-kubernetes-validations": [
                                {"rule": "self == oldSelf", "message": "className is immutable"}]},
                            "replicas": {"type": "integer", "x-kubernetes-validations": [
                                {"rule": "self >= oldSelf", "message": "replicas may not decrease",
                                 "reason": "FieldValueForbidden"}]},
                            "version": {"type": "string", "x-kubernetes-validations": [
                                {"rule": "self.startsWith('v') || oldSelf.hasValue()",
                                 "message": "new versions must start with v",
                                 "optionalOldSelf": true}]},
                            "listeners": {
                                "type": "array",
                                "x-kubernetes-validations": [
                                    {"rule": "size(self) <= 3", "message": "at most 3 listeners"}],
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"],
                                "items": {"type": "object", "required": ["name"],
                                    "x-kubernetes-validations": [
                                        {"rule": "self.port > 0 && self.port < 65536",
                                         "messageExpression": "'port ' + string(self.port) + ' is out of range'"}],
                                    "properties": {
                                        "name": {"type": "string"},
                                        "port": {"type": "integer"},
                                        "protocol": {"type": "string"}
                                    }}
                            }
                        }
                    }
                }}}}]}
    })
}

fn gateways(client: &kube::Client) -> Api<DynamicObject> {
    api(
        client,
        "example.com",
        "v1",
        "Gateway",
        "gateways",
        "default",
    )
}

fn gateway(name: &str, spec: Value) -> DynamicObject {
    object(json!({"apiVersion": "example.com/v1", "kind": "Gateway",
        "metadata": {"name": name}, "spec": spec}))
}

fn good_spec() -> Value {
    json!({"minReplicas": 1, "maxReplicas": 3, "className": "fast", "replicas": 2,
        "version": "v1", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]})
}

/// The causes of a 422, as `field: message`.
fn causes(status: &kube::core::Status) -> Vec<(String, String, String)> {
    status
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.reason.clone(), c.field.clone(), c.message.clone()))
                .collect()
        })
        .unwrap_or_default()
}

async fn merge(
    api: &Api<DynamicObject>,
    name: &str,
    patch: Value,
) -> Result<DynamicObject, kube::Error> {
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
}

#[tokio::test]
async fn an_object_rule_failure_is_a_422_in_kubes_words() {
    let (_server, client) = server_with_crd(gateway_crd()).await;
    let api = gateways(&client);
    let mut spec = good_spec();
    spec["minReplicas"] = json!(5);
    let status = status_of(
        api.create(&PostParams::default(), &gateway("gw", spec))
            .await,
    );
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
    assert_eq!(
        status.message,
        "Gateway.example.com \"gw\" is invalid: spec: Invalid value: \"object\": minReplicas must not exceed maxReplicas"
    );
    assert_eq!(
        causes(&status),
        [(
            "FieldValueInvalid".to_string(),
            "spec".to_string(),
            "Invalid value: \"object\": minReplicas must not exceed maxReplicas".to_string()
        )]
    );
    api.create(&PostParams::default(), &gateway("gw", good_spec()))
        .await
        .expect("a valid object is accepted");
}

#[tokio::test]
async fn list_item_rules_use_message_expression_and_each_failure_is_a_cause() {
    let (_server, client) = server_with_crd(gateway_crd()).await;
    let api = gateways(&client);
    let mut spec = good_spec();
    spec["listeners"] = json!([
        {"name": "http", "port": 0, "protocol": "HTTP"},
        {"name": "admin", "port": 70000, "protocol": "HTTP"}
    ]);
    spec["tls"] = json!(true);
    let status = status_of(
        api.create(&PostParams::default(), &gateway("gw", spec))
            .await,
    );
    assert_eq!(status.code, 422);
    let mut found = causes(&status);
    found.sort();
    assert_eq!(
        found,
        [
            (
                "FieldValueForbidden".to_string(),
                "spec.listeners".to_string(),
                "Forbidden: every listener must be HTTPS when tls is set".to_string()
            ),
            (
                "FieldValueInvalid".to_string(),
                "spec.listeners[0]".to_string(),
                "Invalid value: \"object\": port 0 is out of range".to_string()
            ),
            (
                "FieldValueInvalid".to_string(),
                "spec.listeners[1]".to_string(),
                "Invalid value: \"object\": port 70000 is out of range".to_string()
            ),
        ]
    );
    assert!(
        status
            .message
            .starts_with("Gateway.example.com \"gw\" is invalid: ["),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn transition_rules_run_on_updates_only() {
    let (_server, client) = server_with_crd(gateway_crd()).await;
    let api = gateways(&client);
    // Created with any className and replicas: rules on oldSelf are skipped on create.
    create(&api, &gateway("gw", good_spec())).await;
    let status = status_of(merge(&api, "gw", json!({"spec": {"className": "slow"}})).await);
    assert_eq!(
        status.message,
        "Gateway.example.com \"gw\" is invalid: spec.className: Invalid value: \"string\": className is immutable"
    );
    let status = status_of(merge(&api, "gw", json!({"spec": {"replicas": 1}})).await);
    assert_eq!(
        causes(&status),
        [(
            "FieldValueForbidden".to_string(),
            "spec.replicas".to_string(),
            "Forbidden: replicas may not decrease".to_string()
        )]
    );
    merge(
        &api,
        "gw",
        json!({"spec": {"replicas": 5, "className": "fast"}}),
    )
    .await
    .expect("an allowed transition");
}

#[tokio::test]
async fn optional_old_self_rules_run_on_create_with_no_old_value() {
    let (_server, client) = server_with_crd(gateway_crd()).await;
    let api = gateways(&client);
    let mut spec = good_spec();
    spec["version"] = json!("1.0");
    let status = status_of(
        api.create(&PostParams::default(), &gateway("gw", spec))
            .await,
    );
    assert_eq!(
        causes(&status)[0].2,
        "Invalid value: \"string\": new versions must start with v"
    );
    create(&api, &gateway("gw", good_spec())).await;
    merge(&api, "gw", json!({"spec": {"version": "1.0"}}))
        .await
        .expect("oldSelf has a value on update");
}

#[tokio::test]
async fn a_rule_that_does_not_compile_refuses_the_crd_naming_rule_path_and_position() {
    let (_server, client) = server();
    let crds = crds(&client);
    let mut crd = gateway_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        json!([{"rule": "self.minReplicas <="}, {"rule": "self.maxReplicas.frobnicate() > 1"}]);
    let status = status_of(crds.create(&PostParams::default(), &object(crd)).await);
    assert_eq!(status.code, 422);
    let found = causes(&status);
    assert_eq!(found.len(), 2, "{found:?}");
    let base = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(found[0].1, format!("{base}[0].rule"));
    assert_eq!(found[1].1, format!("{base}[1].rule"));
    assert!(
        found[0].2.starts_with(
            "Invalid value: apiextensions.ValidationRule{Rule:\"self.minReplicas <=\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:"
        ),
        "{}",
        found[0].2
    );
    assert!(
        found[1].2.contains("compilation failed: ERROR: <input>:1:")
            && found[1].2.contains("undeclared reference to 'frobnicate'"),
        "{}",
        found[1].2
    );
    assert!(
        status.message.starts_with(
            "CustomResourceDefinition.apiextensions.k8s.io \"gateways.example.com\" is invalid: ["
        ),
        "{}",
        status.message
    );
}

/// A kind whose rules call Kubernetes' CEL libraries.
fn library_crd() -> Value {
    let rules = json!([
        {"rule": "isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https'", "message": "endpoint must be an https URL"},
        {"rule": "!isURL(self.endpoint) || url(self.endpoint).getHostname() != 'localhost' && url(self.endpoint).getPort() != '22'", "message": "bad host"},
        {"rule": "quantity(self.memory).isLessThan(quantity('2Gi'))", "message": "memory must be below 2Gi"},
        {"rule": "isIP(self.address) && ip(self.address).family() == 4 && cidr('10.0.0.0/8').containsIP(self.address)", "message": "address must be in 10.0.0.0/8"},
        {"rule": "self.weights.isSorted() && self.weights.sum() == 100 && self.weights.min() > 0 && self.weights.max() <= 90", "message": "weights"},
        {"rule": "self.tags.indexOf('a') <= self.tags.lastIndexOf('a') && self.tags.map(t, t.upperAscii()).join(',').lowerAscii() == self.tags.join(',')", "message": "tags"},
        {"rule": "self.name.matches('^[a-z]+$') && self.name.find('[0-9]+') == '' && self.name.substring(0, 1).charAt(0) != 'x'", "message": "name"},
        {"rule": "duration(self.timeout) <= duration('1h30m') && self.tags.exists_one(t, t == 'a') && self.tags.filter(t, t != 'a').all(t, t.size() < 5)", "message": "timeout"},
        {"rule": "sets.contains(self.tags, ['a']) && sets.equivalent(self.tags, ['b', 'a', 'a']) && !sets.intersects(self.tags, ['z'])", "message": "sets"},
        {"rule": "url('https://a.io/v1?x=1').getQuery()['x'][0] == '1' && url('https://a.io/v1?x=1').getEscapedPath() == '/v1' && ip('127.0.0.1').isLoopback() && !ip('10.1.2.3').isLoopback() && ip('fe80::1').isLinkLocalUnicast() && cidr('10.0.0.0/8').prefixLength() == 8 && string(cidr('10.1.0.0/8').masked()) == '10.0.0.0/8' && string(ip('10.0.0.1')) == '10.0.0.1' && cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", "message": "network"},
        {"rule": "quantity('1Gi').compareTo(quantity('1024Mi')) == 0 && quantity('1.5').asApproximateFloat() == 1.5 && quantity('2').add(3).asInteger() == 5 && quantity('500m').sub(quantity('1')).sign() == -1 && !quantity('500m').isInteger()", "message": "quantities"},
        {"rule": "cel.bind(total, self.weights.sum(), total == 100 && total > self.weights.max())", "message": "bound"},
        {"rule": "'a-b-c'.split('-').size() == 3 && ' x '.trim() == 'x' && 'aXa'.replace('X', 'a') == 'aaa' && 'abc'.indexOf('c') == 2 && '%s-%d'.format(['a', 1]) == 'a-1' && 'abc'.lastIndexOf('c') == 2 && 'abc'.upperAscii() == 'ABC'", "message": "strings"}
    ]);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "probes.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Probe", "plural": "probes"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-validations": rules,
                        "properties": {
                            "endpoint": {"type": "string"}, "memory": {"type": "string"},
                            "address": {"type": "string"}, "name": {"type": "string"},
                            "timeout": {"type": "string"},
                            "weights": {"type": "array", "items": {"type": "integer"}},
                            "tags": {"type": "array", "items": {"type": "string"}}
                        }}
                }}}}]}
    })
}

fn probe_spec() -> Value {
    json!({"endpoint": "https://api.example.com:8443/v1?x=1", "memory": "512Mi",
        "address": "10.1.2.3", "weights": [10, 30, 60], "tags": ["a", "b"], "name": "web",
        "timeout": "45m"})
}

#[tokio::test]
async fn kubernetes_cel_libraries_are_available_to_rules() {
    let (_server, client) = server_with_crd(library_crd()).await;
    let api = api(&client, "example.com", "v1", "Probe", "probes", "default");
    let probe = |name: &str, spec: Value| {
        object(
            json!({"apiVersion": "example.com/v1", "kind": "Probe", "metadata": {"name": name}, "spec": spec}),
        )
    };
    api.create(&PostParams::default(), &probe("ok", probe_spec()))
        .await
        .expect("every rule holds");
    let cases = [
        (
            "endpoint",
            json!("http://api.example.com"),
            "endpoint must be an https URL",
        ),
        (
            "endpoint",
            json!("not a url"),
            "endpoint must be an https URL",
        ),
        ("memory", json!("3Gi"), "memory must be below 2Gi"),
        (
            "address",
            json!("192.168.0.1"),
            "address must be in 10.0.0.0/8",
        ),
        ("weights", json!([60, 30, 10]), "weights"),
        ("name", json!("web1"), "name"),
        ("timeout", json!("2h"), "timeout"),
    ];
    for (field, value, message) in cases {
        let mut spec = probe_spec();
        spec[field] = value.clone();
        let status = status_of(
            api.create(&PostParams::default(), &probe("bad", spec))
                .await,
        );
        let found = causes(&status);
        assert_eq!(found.len(), 1, "{field}={value}: {found:?}");
        assert_eq!(
            found[0].2,
            format!("Invalid value: \"object\": {message}"),
            "{field}={value}"
        );
    }
    // A rule that fails to evaluate is reported with kube's suffix.
    let mut spec = probe_spec();
    spec["memory"] = json!("lots");
    let status = status_of(
        api.create(&PostParams::default(), &probe("bad", spec))
            .await,
    );
    let found = causes(&status);
    assert_eq!(
        found[0].2,
        "Invalid value: \"object\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: memory must be below 2Gi",
    );
}

#[tokio::test]
async fn a_rule_over_its_cost_limit_is_refused_promptly() {
    let (_server, client) = server();
    let mut crd = library_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = json!([{"rule": "self.weights.all(a, self.weights.all(b, self.weights.all(c, a + b + c >= 0)))"}]);
    install_crd(&client, crd).await;
    let api = api(&client, "example.com", "v1", "Probe", "probes", "default");
    let weights: Vec<i64> = (0..500).collect();
    let body = object(json!({"apiVersion": "example.com/v1", "kind": "Probe",
        "metadata": {"name": "big"}, "spec": {"weights": weights}}));
    let started = std::time::Instant::now();
    let status = status_of(api.create(&PostParams::default(), &body).await);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains(
            "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.weights.all("
        ),
        "{}",
        status.message
    );
    let small = object(json!({"apiVersion": "example.com/v1", "kind": "Probe",
        "metadata": {"name": "small"}, "spec": {"weights": [1, 2, 3]}}));
    api.create(&PostParams::default(), &small)
        .await
        .expect("the same rule over a short list runs");
}

#[tokio::test]
async fn a_failure_on_an_unchanged_value_is_a_warning_not_an_error() {
    let (_server, client) = server();
    let mut crd = gateway_crd();
    let spec_schema =
        &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let rules = spec_schema["x-kubernetes-validations"].take();
    install_crd(&client, crd.clone()).await;
    let api = gateways(&client);
    let mut spec = good_spec();
    spec["minReplicas"] = json!(9);
    create(&api, &gateway("gw", spec)).await;
    // The rule arrives after the object was stored.
    let crds = crds(&client);
    let mut stored = crds.get("gateways.example.com").await.unwrap();
    stored.data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        rules;
    crds.replace("gateways.example.com", &PostParams::default(), &stored)
        .await
        .unwrap();
    // A change elsewhere in the object is allowed, with the failure as a warning; a change
    // to spec is checked.
    let request = http::Request::builder()
        .method("PATCH")
        .uri("/apis/example.com/v1/namespaces/default/gateways/gw")
        .header("content-type", "application/merge-patch+json")
        .body(kube::client::Body::from(
            br#"{"metadata":{"labels":{"a":"b"}}}"#.to_vec(),
        ))
        .unwrap();
    let (code, warnings) = send_for_warnings(&client, request).await;
    assert_eq!(code, 200);
    assert_eq!(
        warnings,
        ["299 - \"spec: Invalid value: \\\"object\\\": minReplicas must not exceed maxReplicas\""]
    );
    let status = status_of(merge(&api, "gw", json!({"spec": {"maxReplicas": 4}})).await);
    assert_eq!(causes(&status)[0].1, "spec");
}

#[tokio::test]
async fn formatted_strings_are_timestamps_durations_and_bytes_in_rules() {
    let (_server, client) = server();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "windows.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Window", "plural": "windows"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object",
                        "x-kubernetes-validations": [
                            {"rule": "self.end > self.start && self.start.getFullYear() >= 2020", "message": "end must follow start"},
                            {"rule": "self.timeout <= duration('1h')", "message": "timeout at most 1h"},
                            {"rule": "size(self.key) == 3", "message": "key must be 3 bytes"},
                            {"rule": "self.ratio < 2.5", "message": "ratio"}
                        ],
                        "properties": {
                            "start": {"type": "string", "format": "date-time"},
                            "end": {"type": "string", "format": "date-time"},
                            "timeout": {"type": "string", "format": "duration"},
                            "key": {"type": "string", "format": "byte"},
                            "ratio": {"type": "number"}
                        }}
                }}}}]}
    });
    install_crd(&client, crd).await;
    let api = api(&client, "example.com", "v1", "Window", "windows", "default");
    let window = |name: &str, spec: Value| {
        object(
            json!({"apiVersion": "example.com/v1", "kind": "Window", "metadata": {"name": name}, "spec": spec}),
        )
    };
    let good = json!({"start": "2024-01-01T00:00:00Z", "end": "2024-01-01T01:00:00+00:00",
        "timeout": "30m", "key": "YWJj", "ratio": 2});
    api.create(&PostParams::default(), &window("ok", good.clone()))
        .await
        .expect("every rule holds");
    for (field, value, message) in [
        (
            "end",
            json!("2023-12-31T23:00:00Z"),
            "end must follow start",
        ),
        ("timeout", json!("1h30m"), "timeout at most 1h"),
        ("key", json!("YWJjZA=="), "key must be 3 bytes"),
        ("ratio", json!(3), "ratio"),
    ] {
        let mut spec = good.clone();
        spec[field] = value;
        let status = status_of(
            api.create(&PostParams::default(), &window("bad", spec))
                .await,
        );
        let found = causes(&status);
        assert_eq!(found.len(), 1, "{field}: {found:?}");
        assert_eq!(
            found[0].2,
            format!("Invalid value: \"object\": {message}"),
            "{field}"
        );
    }
}

#[tokio::test]
async fn properties_are_named_with_kubes_escaping() {
    let (_server, client) = server();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "refs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Ref", "plural": "refs"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object",
                        "x-kubernetes-validations": [
                            {"rule": "!has(self.__namespace__) || self.__namespace__ != self.x__dash__default",
                             "message": "namespace must differ from x-default"}
                        ],
                        "properties": {
                            "namespace": {"type": "string"},
                            "x-default": {"type": "string"}
                        }}
                }}}}]}
    });
    install_crd(&client, crd).await;
    let api = api(&client, "example.com", "v1", "Ref", "refs", "default");
    let reference = |spec: Value| {
        object(
            json!({"apiVersion": "example.com/v1", "kind": "Ref", "metadata": {"name": "r"}, "spec": spec}),
        )
    };
    let status = status_of(
        api.create(
            &PostParams::default(),
            &reference(json!({"namespace": "a", "x-default": "a"})),
        )
        .await,
    );
    assert_eq!(
        causes(&status)[0].2,
        "Invalid value: \"object\": namespace must differ from x-default"
    );
    api.create(
        &PostParams::default(),
        &reference(json!({"namespace": "a", "x-default": "b"})),
    )
    .await
    .expect("different values pass");
}

#[tokio::test]
async fn a_list_level_rule_reports_the_list_and_its_type() {
    let (_server, client) = server_with_crd(gateway_crd()).await;
    let api = gateways(&client);
    let mut spec = good_spec();
    spec["listeners"] = json!([
        {"name": "a", "port": 1}, {"name": "b", "port": 2},
        {"name": "c", "port": 3}, {"name": "d", "port": 4}
    ]);
    let status = status_of(
        api.create(&PostParams::default(), &gateway("gw", spec))
            .await,
    );
    assert_eq!(
        status.message,
        "Gateway.example.com \"gw\" is invalid: spec.listeners: Invalid value: \"array\": at most 3 listeners"
    );
}

#[tokio::test]
async fn an_update_that_adds_a_rule_that_does_not_compile_is_refused() {
    let (_server, client) = server_with_crd(gateway_crd()).await;
    let crds = crds(&client);
    let mut crd = crds.get("gateways.example.com").await.unwrap();
    crd.data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["tls"]["x-kubernetes-validations"] = json!([{"rule": "self &&& true"}]);
    let status = status_of(
        crds.replace("gateways.example.com", &PostParams::default(), &crd)
            .await,
    );
    assert_eq!(status.code, 422);
    let found = causes(&status);
    assert_eq!(
        found[0].1,
        "spec.validation.openAPIV3Schema.properties[spec].properties[tls].x-kubernetes-validations[0].rule"
    );
    assert!(
        found[0].2.contains("compilation failed: ERROR: <input>:1:"),
        "{found:?}"
    );
}

#[tokio::test]
async fn rules_that_fail_to_evaluate_are_reported_in_kubes_words() {
    let (_server, client) = server();
    let mut crd = library_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = json!([{"rule": "self.name == 'x' || self.missing == 'y'"}, {"rule": "self.weights[0] + self.name == 'y'"}, {"rule": "self.weights[0] / self.weights[1] == 0"}]);
    install_crd(&client, crd).await;
    let api = api(&client, "example.com", "v1", "Probe", "probes", "default");
    let body = object(json!({"apiVersion": "example.com/v1", "kind": "Probe",
        "metadata": {"name": "p"}, "spec": {"name": "web", "weights": [1, 0]}}));
    let status = status_of(api.create(&PostParams::default(), &body).await);
    let found: Vec<String> = causes(&status).into_iter().map(|c| c.2).collect();
    assert_eq!(
        found,
        [
            "Invalid value: \"object\": no such key: missing evaluating rule: self.name == 'x' || self.missing == 'y'",
            "Invalid value: \"object\": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.weights[0] + self.name == 'y'",
            "Invalid value: \"object\": division by zero evaluating rule: self.weights[0] / self.weights[1] == 0",
        ]
    );
}
