//! Defaulting, including inside arrays and maps, and of nulls.

use serde_json::json;

use super::{errors, schema};

fn defaulting_schema() -> super::StructuralSchema {
    schema(json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "default": {},
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "strategy": {
                    "type": "object",
                    "default": {"type": "Rolling"},
                    "properties": {
                        "type": {"type": "string"},
                        "maxSurge": {"type": "integer", "default": 25}
                    }
                },
                "ports": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "port": {"type": "integer"},
                        "protocol": {"type": "string", "default": "TCP"}
                    }
                }},
                "tiers": {"type": "object", "additionalProperties": {
                    "type": "object",
                    "properties": {"size": {"type": "string", "default": "small"}}
                }}
            }
        }}
    }))
}

#[test]
fn defaults_are_visible_on_read_of_a_stored_object() {
    let s = defaulting_schema();
    // An object stored before the defaults existed: reading it applies them.
    let mut stored =
        json!({"apiVersion": "example.com/v1", "kind": "W", "metadata": {"name": "w"}});
    s.apply_defaults(&mut stored);
    assert_eq!(
        stored["spec"],
        json!({"replicas": 1, "strategy": {"type": "Rolling", "maxSurge": 25}})
    );
    assert_eq!(stored["metadata"], json!({"name": "w"}));
    assert!(errors(&s, &stored).is_empty());
}

#[test]
fn defaults_apply_inside_array_items_and_map_values() {
    let s = defaulting_schema();
    let mut object = json!({"spec": {
        "replicas": 3,
        "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}],
        "tiers": {"gold": {}, "silver": {"size": "large"}}
    }});
    s.apply_defaults(&mut object);
    assert_eq!(object["spec"]["replicas"], 3);
    assert_eq!(
        object["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}])
    );
    assert_eq!(
        object["spec"]["tiers"],
        json!({"gold": {"size": "small"}, "silver": {"size": "large"}})
    );
}

#[test]
fn nulls_follow_the_kubernetes_documentation_example() {
    // https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#defaulting-and-nullable
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "foo": {"type": "string", "nullable": false, "default": "default"},
            "bar": {"type": "string", "nullable": true},
            "baz": {"type": "string"}
        }}}
    }));
    let mut object = json!({"spec": {"foo": null, "bar": null, "baz": null}});
    s.apply_defaults(&mut object);
    assert_eq!(object, json!({"spec": {"foo": "default", "bar": null}}));
}

#[test]
fn null_array_items_and_map_values_take_their_default() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "list": {"type": "array", "items": {"type": "string", "default": "x"}},
            "map": {"type": "object", "additionalProperties": {"type": "integer", "default": 7}}
        }
    }));
    let mut object = json!({"list": ["a", null], "map": {"k": null}});
    s.apply_defaults(&mut object);
    assert_eq!(object, json!({"list": ["a", "x"], "map": {"k": 7}}));
}

#[test]
fn defaults_are_pruned_like_objects() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "default": {"known": "k", "unknown": "u"},
            "properties": {"known": {"type": "string"}}
        }}
    }));
    let mut object = json!({});
    s.apply_defaults(&mut object);
    assert_eq!(object, json!({"spec": {"known": "k"}}));
}
