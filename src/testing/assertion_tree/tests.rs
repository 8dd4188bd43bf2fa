//! Table tests of the assertion-tree matcher: each row is a tree (YAML), an object (YAML)
//! and the mismatches expected, one a line ("" when it matches).

use serde_json::{Value, json};

use super::{Bindings, matches, template};

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("test YAML parses")
}

fn outcome(expected: &str, actual: &str, bindings: &Bindings) -> String {
    match matches(&yaml(expected), &yaml(actual), bindings) {
        Ok(()) => String::new(),
        Err(mismatches) => mismatches.to_string(),
    }
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: chainsaw-x
  labels: {app: web}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: main
        image: nginx
      - name: sidecar
        image: envoy
status:
  conditions:
  - type: Available
    status: "True"
  - type: Ready
    status: "False"
    observedGeneration: 1
"#;

#[test]
fn matches_as_chainsaw_does() {
    let bindings = Bindings::new().with("namespace", json!("chainsaw-x"));
    let table: &[(&str, &str, &str)] = &[
        ("maps are subsets", "spec: {replicas: 2}", ""),
        ("numbers by value", "spec: {replicas: 2.0}", ""),
        (
            "a wrong scalar",
            "spec: {template: {spec: {containers: [{image: nginx:1.27}, {}]}}}",
            "spec.template.spec.containers[0].image: want nginx:1.27, got nginx",
        ),
        (
            "a missing field",
            "status: {state: ACTIVE}",
            "status.state: missing (want ACTIVE)",
        ),
        (
            "lists need the same length",
            "spec: {template: {spec: {containers: [{name: main}]}}}",
            "spec.template.spec.containers: want 1 item, got 2 items: \
             [{\"name\":\"main\",\"image\":\"nginx\"},{\"name\":\"sidecar\",\"image\":\"envoy\"}]",
        ),
        (
            "lists item by item",
            "spec: {template: {spec: {containers: [{name: main}, {name: sidecar}]}}}",
            "",
        ),
        (
            "a filter expression key",
            "status:\n  (conditions[?type == 'Ready']):\n  - status: 'True'\n    observedGeneration: 1",
            "status.(conditions[?type == 'Ready'])[0].status: want \"True\", got \"False\"",
        ),
        (
            "a filter that keeps nothing",
            "status:\n  (conditions[?type == 'Gone']):\n  - status: 'True'",
            "status.(conditions[?type == 'Gone']): want 1 item, got 0 items: []",
        ),
        (
            "a boolean expression key",
            "spec: {(replicas > `1` && replicas < `4`): true}",
            "",
        ),
        (
            "a boolean expression that is false",
            "spec: {(replicas > `3`): true}",
            "spec.(replicas > `3`): want true, got false",
        ),
        (
            "a binding in a value",
            "metadata: {namespace: ($namespace)}",
            "",
        ),
        (
            "a binding that differs",
            "metadata: {name: ($namespace)}",
            "metadata.name: want chainsaw-x, got web",
        ),
        (
            "an escaped key is literal",
            "metadata: {labels: {\\(app)\\: x}}",
            "metadata.labels.\\(app)\\: missing (want x)",
        ),
        (
            "foreach checks every item",
            "spec: {template: {spec: {~.(containers): {image: nginx}}}}",
            "spec.template.spec.~.(containers)[1].image: want nginx, got envoy",
        ),
        (
            "foreach binds the index",
            "spec: {template: {spec: {~i.(containers): {($i): 0}}}}",
            "spec.template.spec.~i.(containers)[1].($i): want 0, got 1",
        ),
        (
            "a projection bound with ->",
            "spec:\n  (replicas) -> r: 2\n  template: {spec: {(length(containers) == $r): true}}",
            "",
        ),
        ("{} wants a value", "spec: {template: {}}", ""),
        (
            "{} of a missing field",
            "spec: {strategy: {}}",
            "spec.strategy: missing (want {})",
        ),
        (
            "kinds that cannot be compared",
            "status: {conditions: [{status: true}, {}]}",
            "status.conditions[0].status: want true (a boolean), got a string \"True\"",
        ),
        (
            "a list where a map is",
            "metadata: {labels: [app]}",
            "metadata.labels: want a list, got a map {\"app\":\"web\"}",
        ),
        (
            "a map where a scalar is",
            "spec: {replicas: {value: 2}}",
            "spec.replicas: want a map, got a number 2",
        ),
        (
            "every mismatch is reported",
            "metadata: {name: api, namespace: other}",
            "metadata.name: want api, got web\nmetadata.namespace: want other, got chainsaw-x",
        ),
        (
            "an invalid expression",
            "spec: {(replicas >): true}",
            "spec.(replicas >): expression (replicas >): Parse error: Unexpected nud token -- found Eof at column 11",
        ),
        (
            "an unknown binding",
            "metadata: {name: ($name)}",
            "metadata.name: expression ($name): no binding $name (bound: namespace)",
        ),
        (
            "CEL is refused with a reason",
            "spec: {(cel;object.spec.replicas == 2): true}",
            "spec.(cel;object.spec.replicas == 2): expression (object.spec.replicas == 2): \
             CEL is not supported in assertion trees; write the expression in JMESPath (the default engine)",
        ),
    ];
    for (name, expected, want) in table {
        assert_eq!(outcome(expected, DEPLOYMENT, &bindings), *want, "{name}");
    }
}

#[test]
fn final_problems_are_those_waiting_cannot_fix() {
    let tree = yaml("spec: {replicas: 3}");
    let wrong = matches(&tree, &yaml(DEPLOYMENT), &Bindings::new()).unwrap_err();
    assert!(!wrong.is_final());
    let tree = yaml("spec: {replicas: '2'}");
    let incomparable = matches(&tree, &yaml(DEPLOYMENT), &Bindings::new()).unwrap_err();
    assert!(incomparable.is_final());
}

#[test]
fn templates_expression_values_only() {
    let bindings = Bindings::new().with("namespace", json!("ns-1"));
    let resource = yaml(
        "metadata:\n  name: (join('-', [$namespace, 'cm']))\n  namespace: ($namespace)\ndata: {(k): v}",
    );
    let templated = template(&resource, &bindings).unwrap();
    assert_eq!(
        templated,
        json!({"metadata": {"name": "ns-1-cm", "namespace": "ns-1"}, "data": {"(k)": "v"}})
    );
    let broken = template(&yaml("metadata: {name: ($nope)}"), &bindings).unwrap_err();
    assert_eq!(
        broken.to_string(),
        "metadata.name: expression ($nope): no binding $nope (bound: namespace)"
    );
}

#[test]
fn later_bindings_hide_earlier_ones() {
    let bindings = Bindings::new()
        .with("a", json!(1))
        .with("b", json!(2))
        .with("a", json!(3));
    assert_eq!(bindings.get("a"), Some(&json!(3)));
    assert_eq!(bindings.get("b"), Some(&json!(2)));
    assert_eq!(bindings.get("c"), None);
    assert_eq!(bindings.names(), ["a", "b"]);
}
