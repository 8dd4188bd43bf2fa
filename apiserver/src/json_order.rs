//! JSON written with its object keys in a fixed order, whatever order the maps hold them in
//! (serde_json's maps keep insertion order in this build): sorted, as Go's encoding/json
//! writes maps, optionally after leading keys such as `kind`, `apiVersion`, `metadata`.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// The field order of one Go struct as encoding/json writes it: each JSON key in struct
/// order, with the shape of its value (of each element, for a list) where known. Keys not
/// listed (map keys, fields of a newer version) follow, sorted.
#[derive(Debug)]
pub struct Shape {
    /// `(key, shape of its value)` in Go struct order.
    pub fields: &'static [(&'static str, Option<&'static Shape>)],
    /// The shape of the value of every key not listed: a Go map's values.
    pub values: Option<&'static Shape>,
}

impl Shape {
    fn of(&self, key: &str) -> Option<&'static Shape> {
        match self.fields.iter().find(|(name, _)| *name == key) {
            Some((_, shape)) => *shape,
            None => self.values,
        }
    }
}

/// Finds the shape of an object from its own keys (its `kind` and `apiVersion`), if any.
pub type ShapeOf = fn(&serde_json::Map<String, Value>) -> Option<&'static Shape>;

/// A value written with the keys of every object sorted, after `leading` keys (in that
/// order) where an object has them, or in Go struct order where its shape is known.
#[derive(Clone, Copy)]
pub struct Ordered<'a> {
    value: &'a Value,
    leading: &'static [&'static str],
    shape: Option<&'static Shape>,
    shape_of: Option<ShapeOf>,
}

impl<'a> Ordered<'a> {
    /// `value` with sorted keys in every object.
    pub fn sorted(value: &'a Value) -> Self {
        Self {
            value,
            leading: &[],
            shape: None,
            shape_of: None,
        }
    }

    /// `value` with `leading` keys first in every object, then the others sorted.
    pub fn leading(value: &'a Value, leading: &'static [&'static str]) -> Self {
        Self {
            leading,
            ..Self::sorted(value)
        }
    }

    /// The same, except that an object whose shape `shape_of` finds (and every field of it
    /// whose shape is known) is written in Go struct order.
    pub fn with_shapes(self, shape_of: ShapeOf) -> Self {
        Self {
            shape_of: Some(shape_of),
            ..self
        }
    }

    fn nested(&self, value: &'a Value, shape: Option<&'static Shape>) -> Self {
        Self {
            value,
            shape,
            ..*self
        }
    }
}

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::Object(map) => {
                let shape = self.shape.or_else(|| self.shape_of.and_then(|of| of(map)));
                let first: Vec<&str> = match shape {
                    Some(shape) => shape.fields.iter().map(|(key, _)| *key).collect(),
                    None => self.leading.to_vec(),
                };
                let field_shape = |key: &str| shape.and_then(|shape| shape.of(key));
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for key in &first {
                    if let Some(value) = map.get(*key) {
                        out.serialize_entry(key, &self.nested(value, field_shape(key)))?;
                    }
                }
                let rest = || map.iter().filter(|(key, _)| !first.contains(&key.as_str()));
                let mut write = |(key, value): (&String, &Value)| {
                    out.serialize_entry(key, &self.nested(value, field_shape(key)))
                };
                // Objects read from sorted JSON are mostly in order already: no copy then.
                if rest().map(|(key, _)| key).is_sorted() {
                    rest().try_for_each(&mut write)?;
                } else {
                    let mut sorted: Vec<(&String, &Value)> = rest().collect();
                    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    sorted.into_iter().try_for_each(&mut write)?;
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&self.nested(item, self.shape))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// `value` as compact JSON with sorted keys: one text for equal values, as Go writes them.
pub fn canonical(value: &Value) -> String {
    // Writing a `Value` into a `String` cannot fail.
    serde_json::to_string(&Ordered::sorted(value)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_depth_whatever_the_insertion_order() {
        let mut inner = serde_json::Map::new();
        inner.insert("b".into(), json!(2));
        inner.insert("a".into(), json!([{"z": 1, "y": 2}]));
        let mut outer = serde_json::Map::new();
        outer.insert("metadata".into(), json!({}));
        outer.insert("spec".into(), Value::Object(inner));
        outer.insert("kind".into(), json!("K"));
        let value = Value::Object(outer);
        assert_eq!(
            canonical(&value),
            r#"{"kind":"K","metadata":{},"spec":{"a":[{"y":2,"z":1}],"b":2}}"#
        );
        let in_order = json!({"a": {"b": 1, "c": [{"d": true}]}});
        assert_eq!(canonical(&in_order), r#"{"a":{"b":1,"c":[{"d":true}]}}"#);
        let leading = serde_json::to_string(&Ordered::leading(&value, &["spec", "kind"])).unwrap();
        assert_eq!(
            leading,
            r#"{"spec":{"a":[{"y":2,"z":1}],"b":2},"kind":"K","metadata":{}}"#
        );
    }
}
