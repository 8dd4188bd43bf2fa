//! x-kubernetes-embedded-resource: apiVersion and kind required, metadata checked.

use serde_json::json;

use super::{errors, schema};

fn template_schema() -> super::StructuralSchema {
    let embedded = json!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true
    });
    schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "template": embedded.clone(),
            "templates": {"type": "object", "additionalProperties": embedded}
        }}}
    }))
}

#[test]
fn api_version_and_kind_are_required() {
    let s = template_schema();
    assert_eq!(
        errors(&s, &json!({"spec": {"template": {}}})),
        [
            "spec.template.apiVersion: Required value: must not be empty",
            "spec.template.kind: Required value: must not be empty",
        ]
    );
    let good = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}}});
    assert!(errors(&s, &good).is_empty());
}

#[test]
fn api_version_kind_and_metadata_are_checked() {
    let s = template_schema();
    let bad = json!({"spec": {"template": {
        "apiVersion": "a/b/c", "kind": "No_Kind",
        "metadata": {"name": "a/b", "namespace": "Bad", "labels": {"k": "-bad-"}}
    }}});
    assert_eq!(
        errors(&s, &bad),
        [
            "spec.template.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
            "spec.template.kind: Invalid value: \"No_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "spec.template.metadata.labels: Invalid value: \"-bad-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
            "spec.template.metadata.namespace: Invalid value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ]
    );
    let not_meta =
        json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": "x"}}});
    assert_eq!(
        errors(&s, &not_meta),
        [
            "spec.template.metadata: Invalid value: \"x\": json: cannot unmarshal string into Go value of type v1.ObjectMeta"
        ]
    );
}

#[test]
fn embedded_resources_in_maps_use_bracketed_keys() {
    let s = template_schema();
    assert_eq!(
        errors(
            &s,
            &json!({"spec": {"templates": {"one": {"apiVersion": "v1"}}}})
        ),
        ["spec.templates[one].kind: Required value: must not be empty"]
    );
}
