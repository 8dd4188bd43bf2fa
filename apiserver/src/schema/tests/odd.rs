//! Odd input: bad schemas are errors, odd objects never panic.

use serde_json::{Value, json};

use super::super::render::{go_float, go_quote};
use super::super::{SchemaError, StructuralSchema};
use super::{errors, field_schema, schema};

fn compile_error(value: Value) -> String {
    match StructuralSchema::compile(&value) {
        Ok(_) => panic!("schema should not compile: {value}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn bad_schemas_are_errors_naming_the_place() {
    let pattern =
        compile_error(json!({"properties": {"spec": {"type": "string", "pattern": "+"}}}));
    assert!(
        pattern.starts_with(
            "openAPIV3Schema.properties[spec].pattern: must be a valid regular expression"
        ),
        "{pattern}"
    );
    let cases = [
        (json!("object"), "openAPIV3Schema: must be an object"),
        (
            json!({"properties": 5}),
            "openAPIV3Schema.properties: must be an object of schemas",
        ),
        (
            json!({"properties": {"a": []}}),
            "openAPIV3Schema.properties[a]: must be an object",
        ),
        (
            json!({"type": "strnig"}),
            "openAPIV3Schema.type: must be one of",
        ),
        (
            json!({"minLength": "3"}),
            "openAPIV3Schema.minLength: must be a non-negative integer",
        ),
        (
            json!({"maxItems": -1}),
            "openAPIV3Schema.maxItems: must be a non-negative integer",
        ),
        (
            json!({"maxLength": 1e30}),
            "openAPIV3Schema.maxLength: must be a non-negative integer",
        ),
        (
            json!({"minimum": "1"}),
            "openAPIV3Schema.minimum: must be a number",
        ),
        (
            json!({"multipleOf": 0}),
            "openAPIV3Schema.multipleOf: must be a number greater than 0",
        ),
        (
            json!({"required": [1]}),
            "openAPIV3Schema.required: must be an array of strings",
        ),
        (
            json!({"items": [{}]}),
            "openAPIV3Schema.items: must be a schema",
        ),
        (
            json!({"nullable": "yes"}),
            "openAPIV3Schema.nullable: must be a boolean",
        ),
        (
            json!({"anyOf": {}}),
            "openAPIV3Schema.anyOf: must be an array",
        ),
    ];
    for (value, expected) in cases {
        let err = compile_error(value);
        assert!(
            err.starts_with(expected),
            "{err} should start with {expected}"
        );
    }
}

#[test]
fn very_deep_schemas_are_refused() {
    let mut deep = json!({"type": "string"});
    for _ in 0..120 {
        deep = json!({"type": "object", "properties": {"a": deep}});
    }
    assert!(matches!(
        StructuralSchema::compile(&deep),
        Err(SchemaError::TooDeep { .. })
    ));
}

#[test]
fn non_object_roots_are_reported_not_panicked_on() {
    let s = schema(json!({"type": "object", "properties": {"spec": {"type": "object"}}}));
    assert_eq!(
        errors(&s, &json!([1])),
        ["<nil>: Invalid value: \"array\":  in body must be of type object: \"array\""]
    );
    for mut odd in [json!(null), json!("x"), json!(5), json!([{"a": 1}])] {
        let _ = s.validate(&odd);
        let _ = s.prune(&mut odd);
        s.apply_defaults(&mut odd);
    }
}

#[test]
fn huge_numbers_do_not_panic() {
    let s = field_schema(
        json!({"type": "integer", "minimum": -1e300, "maximum": 1e300, "multipleOf": 1e-300}),
    );
    for value in [
        json!(i64::MIN),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(1e308),
        json!(-1e308),
    ] {
        let _ = errors(&s, &json!({"field": value}));
    }
    let small = field_schema(json!({"type": "number", "maximum": 1e21}));
    assert_eq!(
        errors(&small, &json!({"field": 1e22})),
        ["field: Invalid value: 1e+22: field in body should be less than or equal to 1e+21"]
    );
}

#[test]
fn cel_rules_run_on_fields_and_their_failures_name_the_field() {
    let rules = json!([{"rule": "self.size() > 0", "message": "must not be empty"}]);
    let s = field_schema(json!({"type": "string", "x-kubernetes-validations": rules}));
    let validation = s.validate_write(&json!({"field": ""}), None);
    let causes: Vec<String> = validation
        .causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    assert_eq!(
        causes,
        ["field: Invalid value: \"string\": must not be empty"]
    );
    assert!(
        s.validate_write(&json!({"field": "x"}), None)
            .causes
            .is_empty()
    );
}

#[test]
fn values_print_as_go_prints_them() {
    assert_eq!(go_float(1.5), "1.5");
    assert_eq!(go_float(1.0), "1");
    assert_eq!(go_float(1e20), "100000000000000000000");
    assert_eq!(go_float(1e21), "1e+21");
    assert_eq!(go_float(0.0001), "0.0001");
    assert_eq!(go_float(0.00001), "1e-05");
    assert_eq!(go_float(-2.5e-7), "-2.5e-07");
    assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
}
