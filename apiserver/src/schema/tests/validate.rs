//! Validation: each keyword's message and field path.

use serde_json::json;

use super::{errors, field_schema, schema};

fn widget_schema() -> super::StructuralSchema {
    schema(json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                    "ratio": {"type": "number", "exclusiveMinimum": true, "minimum": 0, "multipleOf": 0.5},
                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                    "items": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {"name": {"type": "string"}}
                        }
                    },
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                }
            }
        }
    }))
}

fn widget(spec: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

#[test]
fn a_valid_object_has_no_causes() {
    let spec = json!({
        "name": "web", "replicas": 3, "ratio": 1.5, "mode": "fast",
        "items": [{"name": "a"}], "labels": {"a": "b"}
    });
    assert_eq!(
        errors(&widget_schema(), &widget(spec)),
        Vec::<String>::new()
    );
}

#[test]
fn type_is_reported_with_the_type_name_as_value() {
    let causes = widget_schema().validate(&widget(json!({"name": "ab", "replicas": "x"})));
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].field, "spec.replicas");
    assert_eq!(causes[0].reason, "FieldValueTypeInvalid");
    assert_eq!(
        causes[0].message,
        "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
    );
}

#[test]
fn non_nullable_object_field_rejects_every_other_type() {
    // kube-apiserver's TestValidateCustomResource "!nullable".
    let s = field_schema(json!({"type": "object"}));
    let cases = [
        (json!("foo"), "string"),
        (json!(42), "integer"),
        (json!(true), "boolean"),
        (json!(1.2), "number"),
        (json!([]), "array"),
        (json!(null), "null"),
    ];
    for (value, name) in cases {
        assert_eq!(
            errors(&s, &json!({"field": value})),
            [format!(
                "field: Invalid value: \"{name}\": field in body must be of type object: \"{name}\""
            )]
        );
    }
    assert!(errors(&s, &json!({"field": {}})).is_empty());
}

#[test]
fn nullable_accepts_null_and_untyped_nullable_accepts_anything() {
    let nullable = field_schema(json!({"type": "object", "nullable": true}));
    assert!(errors(&nullable, &json!({"field": null})).is_empty());
    let untyped = field_schema(json!({"nullable": true}));
    for value in [
        json!(null),
        json!("foo"),
        json!(42),
        json!(1.2),
        json!([]),
        json!({}),
    ] {
        assert!(errors(&untyped, &json!({"field": value})).is_empty());
    }
}

#[test]
fn int_or_string_accepts_both_and_names_both() {
    let s = field_schema(json!({"x-kubernetes-int-or-string": true}));
    assert!(errors(&s, &json!({"field": 42})).is_empty());
    assert!(errors(&s, &json!({"field": "50%"})).is_empty());
    for (value, name) in [
        (json!(null), "null"),
        (json!(true), "boolean"),
        (json!(1.2), "number"),
    ] {
        assert_eq!(
            errors(&s, &json!({"field": value})),
            [format!(
                "field: Invalid value: \"{name}\": field in body must be of type integer,string: \"{name}\""
            )]
        );
    }
}

#[test]
fn int_or_string_with_any_of_reports_like_kube() {
    let s = field_schema(json!({
        "x-kubernetes-int-or-string": true, "nullable": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}]
    }));
    assert!(errors(&s, &json!({"field": null})).is_empty());
    assert!(errors(&s, &json!({"field": "x"})).is_empty());
    assert_eq!(
        errors(&s, &json!({"field": true})),
        [
            "<nil>: Invalid value: \"\": \"field\" must validate at least one schema (anyOf)",
            "field: Invalid value: \"boolean\": field in body must be of type integer,string: \"boolean\"",
            "field: Invalid value: \"boolean\": field in body must be of type integer: \"boolean\"",
        ]
    );
}

#[test]
fn required_is_reported_at_the_missing_field() {
    let causes = widget_schema().validate(&widget(json!({})));
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].field, "spec.name");
    assert_eq!(causes[0].reason, "FieldValueRequired");
    assert_eq!(causes[0].message, "Required value");
    let root = schema(
        json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}}),
    );
    assert_eq!(errors(&root, &json!({})), ["spec: Required value"]);
}

#[test]
fn enum_and_type_errors_come_together_as_in_kube() {
    // kube-apiserver's TestValidateCustomResource "enum".
    let s = field_schema(json!({
        "type": "object",
        "required": ["nestedint", "nestedstring"],
        "properties": {
            "nestedint": {"type": "integer", "enum": [1, 2]},
            "nestedstring": {"type": "string", "enum": ["a", "b"]}
        }
    }));
    assert_eq!(
        errors(&s, &json!({"field": {}})),
        [
            "field.nestedint: Required value",
            "field.nestedstring: Required value"
        ]
    );
    assert_eq!(
        errors(
            &s,
            &json!({"field": {"nestedint": "x", "nestedstring": true}})
        ),
        [
            "field.nestedint: Invalid value: \"string\": field.nestedint in body must be of type integer: \"string\"",
            "field.nestedint: Unsupported value: \"x\": supported values: \"1\", \"2\"",
            "field.nestedstring: Invalid value: \"boolean\": field.nestedstring in body must be of type string: \"boolean\"",
            "field.nestedstring: Unsupported value: true: supported values: \"a\", \"b\"",
        ]
    );
    let causes = s.validate(&json!({"field": {"nestedint": 3, "nestedstring": "c"}}));
    assert!(causes.iter().all(|c| c.reason == "FieldValueNotSupported"));
    assert_eq!(causes.len(), 2);
}

#[test]
fn string_lengths_and_pattern() {
    let s = widget_schema();
    assert_eq!(
        errors(&s, &widget(json!({"name": "abcdef"}))),
        ["spec.name: Too long: may not be more than 5 bytes"]
    );
    assert_eq!(
        errors(&s, &widget(json!({"name": "a"}))),
        ["spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"]
    );
    assert_eq!(
        errors(&s, &widget(json!({"name": "AB"}))),
        ["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"]
    );
    // Lengths count characters, not bytes.
    assert!(errors(&s, &widget(json!({"name": "ééééé"}))).len() == 1);
    let one = field_schema(json!({"type": "string", "maxLength": 1}));
    assert_eq!(
        errors(&one, &json!({"field": "ab"})),
        ["field: Too long: may not be more than 1 byte"]
    );
}

#[test]
fn minimum_maximum_and_multiple_of() {
    let s = widget_schema();
    assert_eq!(
        errors(&s, &widget(json!({"name": "ab", "replicas": 0}))),
        [
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
        ]
    );
    assert_eq!(
        errors(&s, &widget(json!({"name": "ab", "replicas": 11}))),
        [
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        ]
    );
    assert_eq!(
        errors(&s, &widget(json!({"name": "ab", "ratio": 0}))),
        ["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"]
    );
    assert_eq!(
        errors(&s, &widget(json!({"name": "ab", "ratio": 0.7}))),
        ["spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5"]
    );
    let float = field_schema(json!({"type": "number", "maximum": 1.5}));
    assert_eq!(
        errors(&float, &json!({"field": 2.25})),
        ["field: Invalid value: 2.25: field in body should be less than or equal to 1.5"]
    );
    let int_multiple = field_schema(json!({"type": "integer", "multipleOf": 3}));
    assert_eq!(
        errors(&int_multiple, &json!({"field": 7})),
        ["field: Invalid value: 7: field in body should be a multiple of 3"]
    );
}

#[test]
fn items_counts_and_array_paths() {
    let s = widget_schema();
    let four = json!([{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]);
    let causes = s.validate(&widget(json!({"name": "ab", "items": four})));
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldValueTooMany");
    assert_eq!(causes[0].message, "Too many: 4: must have at most 3 items");
    assert_eq!(
        errors(&s, &widget(json!({"name": "ab", "items": []}))),
        ["spec.items: Invalid value: 0: spec.items in body should have at least 1 items"]
    );
    let third_bad = json!([{"name": "a"}, {"name": "b"}, {"name": 5}]);
    assert_eq!(
        errors(&s, &widget(json!({"name": "ab", "items": third_bad}))),
        [
            "spec.items[2].name: Invalid value: \"integer\": spec.items[2].name in body must be of type string: \"integer\""
        ]
    );
    assert_eq!(
        errors(&s, &widget(json!({"name": "ab", "items": [{}]}))),
        ["spec.items[0].name: Required value"]
    );
}

#[test]
fn map_entries_are_dotted_as_kube_openapi_writes_them() {
    let s = widget_schema();
    assert_eq!(
        errors(&s, &widget(json!({"name": "ab", "labels": {"foo": 1}}))),
        [
            "spec.labels.foo: Invalid value: \"integer\": spec.labels.foo in body must be of type string: \"integer\""
        ]
    );
}

#[test]
fn properties_counts() {
    let s = field_schema(
        json!({"type": "object", "minProperties": 2, "maxProperties": 3,
        "additionalProperties": {"type": "string"}}),
    );
    assert_eq!(
        errors(&s, &json!({"field": {"a": "x"}})),
        ["field: Invalid value: 1: field in body should have at least 2 properties"]
    );
    assert_eq!(
        errors(
            &s,
            &json!({"field": {"a": "1", "b": "2", "c": "3", "d": "4"}})
        ),
        ["field: Too many: 4: must have at most 3 items"]
    );
}

#[test]
fn numbers_are_typed_as_kube_openapi_types_them() {
    let s = field_schema(json!({"type": "integer"}));
    assert!(errors(&s, &json!({"field": 2.0})).is_empty());
    assert_eq!(
        errors(&s, &json!({"field": 1.5})),
        ["field: Invalid value: \"number\": field in body must be of type integer: \"number\""]
    );
    assert_eq!(errors(&s, &json!({"field": u64::MAX})).len(), 1);
    let number = field_schema(json!({"type": "number"}));
    assert!(errors(&number, &json!({"field": 3})).is_empty());
}

#[test]
fn junctors_report_against_the_object_like_kube() {
    let s = field_schema(json!({
        "type": "string",
        "allOf": [{"minLength": 2}, {"maxLength": 3}],
        "oneOf": [{"pattern": "^a"}, {"pattern": "b$"}],
        "not": {"enum": ["ab"]}
    }));
    assert!(errors(&s, &json!({"field": "ac"})).is_empty());
    assert_eq!(
        errors(&s, &json!({"field": "ab"})),
        [
            "<nil>: Invalid value: \"\": \"field\" must not validate the schema (not)",
            "<nil>: Invalid value: \"\": \"field\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
        ]
    );
    assert_eq!(
        errors(&s, &json!({"field": "x"})),
        [
            "<nil>: Invalid value: \"\": \"field\" must validate all the schemas (allOf)",
            "<nil>: Invalid value: \"\": \"field\" must validate one and only one schema (oneOf). Found none valid",
            "field: Invalid value: \"x\": field in body should be at least 2 chars long",
            "field: Invalid value: \"x\": field in body should match '^a'",
        ]
    );
}

#[test]
fn enum_lists_numbers_and_null_as_kube_does() {
    let s = field_schema(json!({"type": "number", "nullable": true, "enum": [1, 2.5]}));
    assert!(errors(&s, &json!({"field": 1})).is_empty());
    assert_eq!(
        errors(&s, &json!({"field": null})),
        ["field: Unsupported value: null: supported values: \"1\", \"2.5\""]
    );
}

#[test]
fn root_metadata_is_checked_only_where_the_schema_restricts_it() {
    // kube-apiserver runs the schema over the whole object; CRDs may restrict metadata.name.
    let s = schema(json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}
    }}));
    assert_eq!(
        errors(
            &s,
            &json!({"metadata": {"name": "toolong", "labels": {"a": "b"}}})
        ),
        ["metadata.name: Too long: may not be more than 3 bytes"]
    );
    let plain = schema(json!({"type": "object", "properties": {"metadata": {"type": "object"}}}));
    assert!(errors(&plain, &json!({"metadata": {"name": "x/y", "anything": 1}})).is_empty());
}
