//! The merge schema of a custom kind: read from its CRD version's `openAPIV3Schema`, or
//! schemaless when it has none.

use std::collections::BTreeMap;

use serde_json::Value;

use super::builtin;
use super::schema::{KeyField, ListKind, ListNode, MergeSchema, Node, ObjectNode};

impl MergeSchema {
    /// From a CRD version's `openAPIV3Schema`: `x-kubernetes-list-type` (atomic | set | map) with
    /// `x-kubernetes-list-map-keys`, `x-kubernetes-map-type` (granular | atomic); lists are
    /// atomic unless the schema says otherwise. `metadata` follows the built-in rules.
    pub fn from_openapi(schema: &Value) -> MergeSchema {
        let mut root = match convert(schema) {
            Node::Object(object) => object,
            _ => ObjectNode {
                other: Some(Box::new(Node::Deduced)),
                ..ObjectNode::default()
            },
        };
        root.atomic = false;
        root.fields.insert("metadata".into(), builtin::metadata());
        MergeSchema {
            root: Node::Object(root),
        }
    }

    /// Schemaless: every list atomic, every map granular (metadata rules still apply).
    pub fn schemaless() -> MergeSchema {
        let mut fields = BTreeMap::new();
        fields.insert("metadata".to_string(), builtin::metadata());
        MergeSchema {
            root: Node::Object(ObjectNode {
                fields,
                other: Some(Box::new(Node::Deduced)),
                atomic: false,
                zero: false,
            }),
        }
    }
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool).unwrap_or(false)
}

fn convert(schema: &Value) -> Node {
    if flag(schema, "x-kubernetes-int-or-string") {
        return Node::Leaf;
    }
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => convert_list(schema),
        Some("object") => convert_object(schema, preserve),
        None if properties.is_some() || additional.is_some() => convert_object(schema, preserve),
        None if preserve || flag(schema, "x-kubernetes-embedded-resource") => Node::Deduced,
        _ => Node::Leaf,
    }
}

fn convert_object(schema: &Value, preserve: bool) -> Node {
    let fields = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| props.iter().map(|(k, v)| (k.clone(), convert(v))).collect())
        .unwrap_or_default();
    let other = match schema.get("additionalProperties") {
        Some(Value::Object(inner)) if !inner.is_empty() => {
            Some(Box::new(convert(&Value::Object(inner.clone()))))
        }
        Some(Value::Bool(true)) | Some(Value::Object(_)) => Some(Box::new(Node::Deduced)),
        _ if preserve => Some(Box::new(Node::Deduced)),
        _ => None,
    };
    let atomic = schema.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
    Node::Object(ObjectNode {
        fields,
        other,
        atomic,
        zero: false,
    })
}

fn convert_list(schema: &Value) -> Node {
    let items = schema.get("items").cloned().unwrap_or(Value::Null);
    let item = convert(&items);
    let kind = match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListKind::Set,
        Some("map") => {
            let keys: Vec<KeyField> = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(Value::as_str)
                        .map(|name| KeyField {
                            name: name.to_string(),
                            default: items
                                .get("properties")
                                .and_then(|p| p.get(name))
                                .and_then(|p| p.get("default"))
                                .cloned(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            if keys.is_empty() {
                ListKind::Atomic
            } else {
                ListKind::Map(keys)
            }
        }
        _ => ListKind::Atomic,
    };
    let (smp_merge, smp_key) = match &kind {
        ListKind::Atomic => (false, None),
        ListKind::Set => (true, None),
        ListKind::Map(keys) => (true, keys.first().map(|k| k.name.clone())),
    };
    Node::List(ListNode {
        kind,
        item: Box::new(item),
        zero: false,
        smp_merge,
        smp_key,
    })
}
