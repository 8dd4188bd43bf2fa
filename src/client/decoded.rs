//! Objects as the shared caches decode them from lists and watch events: straight into a
//! `DynamicObject`. `DynamicObject`'s own `Deserialize` flattens its type fields and body,
//! so serde first reads the whole object into a buffer of its own and then reads that
//! again; and serde_json's maps keep the room they grew while being read, which a cache
//! holding an object for its lifetime would keep too. Here each field is read once, and
//! each JSON object and array is made with room for its entries only.

use std::borrow::Cow;
use std::fmt;

use futures::{Stream, StreamExt};
use kube::api::{ApiResource, DynamicObject, ObjectMeta, TypeMeta};
use kube::core::DynamicResourceScope;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A `DynamicObject` decoded for a cache.
#[derive(Clone, Debug)]
pub struct Decoded(pub DynamicObject);

/// A watch of `api` (listing first, resuming and backing off as kube's `watcher` does),
/// its objects decoded for a cache.
pub fn watch(
    api: Api<Decoded>,
) -> impl Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send {
    watcher(api, watcher::Config::default())
        .default_backoff()
        .map(|event| event.map(into_object))
}

/// The event of an object decoded for a cache, as the `DynamicObject` it holds.
fn into_object(event: watcher::Event<Decoded>) -> watcher::Event<DynamicObject> {
    use watcher::Event::*;
    match event {
        Apply(object) => Apply(object.0),
        Delete(object) => Delete(object.0),
        Init => Init,
        InitApply(object) => InitApply(object.0),
        InitDone => InitDone,
    }
}

impl Resource for Decoded {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(resource: &ApiResource) -> Cow<'_, str> {
        DynamicObject::kind(resource)
    }

    fn group(resource: &ApiResource) -> Cow<'_, str> {
        DynamicObject::group(resource)
    }

    fn version(resource: &ApiResource) -> Cow<'_, str> {
        DynamicObject::version(resource)
    }

    fn api_version(resource: &ApiResource) -> Cow<'_, str> {
        DynamicObject::api_version(resource)
    }

    fn plural(resource: &ApiResource) -> Cow<'_, str> {
        DynamicObject::plural(resource)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.0.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

impl<'de> Deserialize<'de> for Decoded {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor).map(Decoded)
    }
}

/// Reads an object's fields: the type fields and metadata typed, the rest as its body.
struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = DynamicObject;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<DynamicObject, A::Error> {
        let (mut api_version, mut kind, mut metadata) = (None, None, None);
        let mut body = Vec::new();
        while let Some(key) = fields.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" => api_version = Some(fields.next_value::<String>()?),
                "kind" => kind = Some(fields.next_value::<String>()?),
                "metadata" => metadata = Some(fields.next_value::<ObjectMeta>()?),
                _ => body.push((key, fields.next_value_seed(Compact)?)),
            }
        }
        // Only one of the two: no type fields, and the one is dropped, as `DynamicObject`'s
        // flattened `TypeMeta` takes it.
        let types = match (api_version, kind) {
            (Some(api_version), Some(kind)) => Some(TypeMeta { api_version, kind }),
            _ => None,
        };
        Ok(DynamicObject {
            types,
            metadata: metadata.unwrap_or_default(),
            data: Value::Object(sized(body)),
        })
    }
}

/// A map of exactly these entries (a later duplicate key wins, as in serde_json).
fn sized(entries: Vec<(String, Value)>) -> Map<String, Value> {
    let mut map = Map::with_capacity(entries.len());
    map.extend(entries);
    map
}

/// Reads any JSON value as serde_json's `Value` does, each object and array sized to its
/// entries.
struct Compact;

impl<'de> DeserializeSeed<'de> for Compact {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Compact {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_string()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        Compact.deserialize(deserializer)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut list = Vec::with_capacity(items.size_hint().unwrap_or(0));
        while let Some(item) = items.next_element_seed(Compact)? {
            list.push(item);
        }
        list.shrink_to_fit();
        Ok(Value::Array(list))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = fields.next_key::<String>()? {
            entries.push((key, fields.next_value_seed(Compact)?));
        }
        Ok(Value::Object(sized(entries)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Decoded both ways: here and by `DynamicObject`'s own `Deserialize`.
    fn both(object: &Value) -> (DynamicObject, DynamicObject) {
        let text = object.to_string();
        let decoded: Decoded = serde_json::from_str(&text).unwrap();
        (decoded.0, serde_json::from_str(&text).unwrap())
    }

    #[test]
    fn an_object_decodes_as_dynamic_object_decodes_it() {
        let objects = [
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x",
                        "uid": "u", "controller": true}]},
                "spec": {"replicas": 3, "ratio": 0.5, "big": u64::MAX, "neg": -2,
                    "template": {"spec": {"containers": [{"name": "c", "args": ["a", "b\n\"c"]}]}}},
                "status": {"conditions": [], "empty": {}, "none": null, "on": true}}),
            // List items may lack their type fields; an object may lack metadata.
            json!({"metadata": {"name": "cm"}, "data": {"k": "v"}}),
            json!({"data": {"k": "v"}}),
            // One type field alone.
            json!({"kind": "ConfigMap", "metadata": {"name": "cm"}}),
        ];
        for object in &objects {
            let (decoded, expected) = both(object);
            assert_eq!(decoded, expected, "{object}");
            // The same order of keys, too (map equality ignores it).
            let text = |o: &DynamicObject| serde_json::to_string(o).unwrap();
            assert_eq!(text(&decoded), text(&expected));
        }
    }

    /// (serde_json's `Map` does not tell its capacity: the cache memory bench weighs maps.)
    #[test]
    fn lists_hold_room_for_their_items_only() {
        let object = json!({"metadata": {"name": "a"}, "list": [1, 2, 3, 4, 5]});
        let (decoded, expected) = both(&object);
        assert_eq!(decoded.data["list"].as_array().unwrap().capacity(), 5);
        assert_eq!(expected.data["list"].as_array().unwrap().capacity(), 8);
    }

    #[test]
    fn what_is_not_an_object_is_an_error() {
        assert!(serde_json::from_str::<Decoded>("[1]").is_err());
        assert!(serde_json::from_str::<Decoded>(r#"{"metadata": 3}"#).is_err());
    }
}
