//! Pruning of unknown fields.

use serde_json::json;

use super::schema;

#[test]
fn unknown_fields_are_removed_and_reported() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}},
            "name": {"type": "string"}
        }}}
    }));
    let mut object = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}, "somethingNew": 1},
        "spec": {
            "name": "n", "foo": 1,
            "items": [{"name": "a", "bar": true}],
            "map": {"k": {"x": "1", "y": "2"}}
        },
        "status": {"ready": true}
    });
    let pruned = s.prune(&mut object);
    assert_eq!(
        pruned,
        ["spec.foo", "spec.items[0].bar", "spec.map.k.y", "status"]
    );
    assert_eq!(
        object,
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}, "somethingNew": 1},
            "spec": {"name": "n", "items": [{"name": "a"}], "map": {"k": {"x": "1"}}}
        })
    );
}

#[test]
fn preserve_unknown_fields_subtrees_are_kept_but_known_fields_are_still_pruned() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}
        }}
    }));
    let mut object =
        json!({"spec": {"free": {"deep": [1, {"x": 2}]}, "known": {"a": "1", "b": "2"}}});
    assert_eq!(s.prune(&mut object), ["spec.known.b"]);
    assert_eq!(
        object,
        json!({"spec": {"free": {"deep": [1, {"x": 2}]}, "known": {"a": "1"}}})
    );
}

#[test]
fn whole_object_preserving_unknown_fields_keeps_everything() {
    let s = schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let mut object = json!({"apiVersion": "v1", "kind": "K", "metadata": {}, "spec": {"a": 1}});
    let before = object.clone();
    assert!(s.prune(&mut object).is_empty());
    assert_eq!(object, before);
}

#[test]
fn embedded_resources_keep_type_and_metadata() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"template": {
            "type": "object",
            "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object", "properties": {"image": {"type": "string"}}}}
        }}}}
    }));
    let mut object = json!({"spec": {"template": {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"a": "b"}},
        "spec": {"image": "nginx", "extra": 1},
        "other": true
    }}});
    assert_eq!(
        s.prune(&mut object),
        ["spec.template.other", "spec.template.spec.extra"]
    );
    assert_eq!(
        object,
        json!({"spec": {"template": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"a": "b"}},
            "spec": {"image": "nginx"}
        }}})
    );
}

#[test]
fn embedded_resources_inside_preserved_trees_keep_metadata() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"objects": {
            "type": "array",
            "items": {
                "type": "object",
                "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true
            }
        }}}}
    }));
    let mut object = json!({"spec": {"objects": [{"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c"}, "data": {"k": "v"}}]}});
    let before = object.clone();
    assert!(s.prune(&mut object).is_empty());
    assert_eq!(object, before);
}

#[test]
fn objects_without_a_schema_lose_their_fields() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"list": {"type": "array"}}}}
    }));
    let mut object = json!({"spec": {"list": [{"a": 1}, 2]}});
    assert_eq!(s.prune(&mut object), ["spec.list[0].a"]);
    assert_eq!(object, json!({"spec": {"list": [{}, 2]}}));
}
