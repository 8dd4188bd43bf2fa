//! Tests of the schema module, with expectations taken from kube-apiserver's own tests
//! and messages where they exist.

mod defaults;
mod embedded;
mod formats;
mod odd;
mod prune;
mod validate;

use serde_json::Value;

use super::StructuralSchema;

/// Compiles a schema that the test knows is good.
fn schema(value: Value) -> StructuralSchema {
    match StructuralSchema::compile(&value) {
        Ok(schema) => schema,
        Err(err) => panic!("schema does not compile: {err}"),
    }
}

/// `field: message` of every cause, sorted, as kube-apiserver's tests compare them.
fn errors(schema: &StructuralSchema, object: &Value) -> Vec<String> {
    let mut all: Vec<String> = schema
        .validate(object)
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    all.sort();
    all
}

/// A schema with one property `field` under the root.
fn field_schema(field: Value) -> StructuralSchema {
    schema(serde_json::json!({"type": "object", "properties": {"field": field}}))
}
