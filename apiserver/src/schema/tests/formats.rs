//! Formats kube-apiserver checks, and those it ignores.

use serde_json::json;

use super::{errors, field_schema};

fn check(format: &str, good: &[&str], bad: &[&str]) {
    let s = field_schema(json!({"type": "string", "format": format}));
    for value in good {
        assert!(
            errors(&s, &json!({"field": value})).is_empty(),
            "{format}: {value} should pass"
        );
    }
    for value in bad {
        assert_eq!(
            errors(&s, &json!({"field": value})),
            [format!(
                "field: Invalid value: \"{value}\": field in body must be of type {format}: \"{value}\""
            )],
            "{format}: {value} should fail"
        );
    }
}

#[test]
fn uuid_and_byte() {
    check(
        "uuid",
        &[
            "123e4567-e89b-12d3-a456-426614174000",
            "123E4567E89B12D3A456426614174000",
        ],
        &["not-a-uuid", "123e4567-e89b-12d3-a456-42661417400"],
    );
    check("byte", &["aGVsbG8=", "YWJj"], &["not base64!", "abc"]);
}

#[test]
fn dates_and_times() {
    check(
        "date",
        &["2024-02-29"],
        &["2023-02-29", "2024-13-01", "24-01-01"],
    );
    check(
        "date-time",
        &[
            "2024-01-02T15:04:05Z",
            "2024-01-02T15:04:05.123+02:00",
            "2024-01-02t15:04:05z",
        ],
        &["2024-01-02", "2024-01-02T25:00:00Z", "2024-01-02T15:04:05"],
    );
    check(
        "duration",
        &["1h30m", "1.5s", "3 days", "0"],
        &["fast", "1x"],
    );
}

#[test]
fn network_formats() {
    check(
        "hostname",
        &["example.com", "a", "my-host.example"],
        &["-bad.example", "a_b.com"],
    );
    check("ipv4", &["10.0.0.1"], &["10.0.0.256", "::1", "10.0.0"]);
    check(
        "ipv6",
        &["::1", "2001:db8::1"],
        &["10.0.0.1", "2001:db8::g"],
    );
    check(
        "cidr",
        &["10.0.0.0/8", "2001:db8::/32"],
        &["10.0.0.0/33", "10.0.0.0"],
    );
    check(
        "mac",
        &["00:1a:2b:3c:4d:5e", "00-1A-2B-3C-4D-5E"],
        &["00:1a:2b"],
    );
}

#[test]
fn formats_kube_drops_are_not_checked() {
    for format in ["int32", "int64", "float", "double", "quantity", "whatever"] {
        let s = field_schema(json!({"type": "string", "format": format}));
        assert!(
            errors(&s, &json!({"field": "anything"})).is_empty(),
            "{format}"
        );
    }
    let s = field_schema(json!({"type": "integer", "format": "int32"}));
    assert!(errors(&s, &json!({"field": 10_000_000_000_i64})).is_empty());
}

#[test]
fn a_format_on_a_non_string_value_is_a_type_error_as_in_kube_openapi() {
    let s = field_schema(json!({"type": "string", "format": "date"}));
    assert_eq!(
        errors(&s, &json!({"field": 5})),
        ["field: Invalid value: \"int64\": field in body must be of type date: \"int64\""]
    );
}
