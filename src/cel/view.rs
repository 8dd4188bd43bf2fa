//! CEL values read in place from a resource, for the direct evaluator (`direct`): a
//! [`View`] borrows from the resource's JSON, or from a `DynamicObject` and its typed
//! `metadata`, and reads as the interpreter's binding of the same resource does (a JSON
//! integer is an `int`, a `uint` only beyond `i64`, any other number a `double`; of a
//! `DynamicObject`, `apiVersion`, `kind` and `metadata` are its typed fields, as serialized).
//! Scalars are compared with the `cel` crate's own operators, so `1 == 1.0`, `1u < 2` and
//! `'a' < 'b'` are decided as the interpreter decides them.
//!
//! Whatever a view does not model (an error, a metadata field it does not read in place, a
//! comparison of lists or maps) is [`Unknown`]: the caller leaves that evaluation to the
//! interpreter, whose answer and error message are then those of CEL itself.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use cel::common::types::{CelBool, CelDouble, CelInt, CelNull, CelString, CelUInt};
use cel::common::value::Val;
use kube::api::{DynamicObject, ObjectMeta};
use serde_json::{Map, Number, Value as Json};

/// The direct evaluator cannot tell: the interpreter decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Unknown;

/// A CEL value borrowed from a resource or from a compiled expression's literals.
#[derive(Clone, Copy, Debug)]
pub(crate) enum View<'a> {
    /// `null`.
    Null,
    /// A `bool`.
    Bool(bool),
    /// An `int`.
    Int(i64),
    /// A `uint`.
    UInt(u64),
    /// A `double`.
    Double(f64),
    /// A `string`.
    String(&'a str),
    /// A list of JSON values.
    List(&'a [Json]),
    /// A map with string keys.
    Map(Fields<'a>),
}

/// The maps a [`View`] reads fields of.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fields<'a> {
    /// A JSON object.
    Json(&'a Map<String, Json>),
    /// A `DynamicObject` whose data is a JSON object.
    Object(&'a DynamicObject),
    /// An object's typed metadata, as it serializes.
    Metadata(&'a ObjectMeta),
    /// Labels or annotations.
    Strings(&'a BTreeMap<String, String>),
}

impl<'a> View<'a> {
    /// A JSON value as CEL sees it.
    pub(crate) fn of_json(json: &'a Json) -> Self {
        match json {
            Json::Null => View::Null,
            Json::Bool(b) => View::Bool(*b),
            Json::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => View::Int(i),
                (None, Some(u)) => View::UInt(u),
                (None, None) => View::Double(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => View::String(s),
            Json::Array(items) => View::List(items),
            Json::Object(fields) => View::Map(Fields::Json(fields)),
        }
    }

    /// An object whose data is a JSON object (as any object read from the API server's is);
    /// any other is left to the interpreter.
    pub(crate) fn of_object(object: &'a DynamicObject) -> Result<Self, Unknown> {
        match object.data {
            Json::Object(_) => Ok(View::Map(Fields::Object(object))),
            _ => Err(Unknown),
        }
    }

    /// The field `name` of a map: `None` if the map lacks it.
    pub(crate) fn field(self, name: &str) -> Result<Option<View<'a>>, Unknown> {
        match self {
            View::Map(fields) => fields.get(name),
            _ => Err(Unknown),
        }
    }

    /// The bool this is.
    pub(crate) fn as_bool(self) -> Result<bool, Unknown> {
        match self {
            View::Bool(b) => Ok(b),
            _ => Err(Unknown),
        }
    }

    /// The string this is.
    pub(crate) fn as_str(self) -> Result<&'a str, Unknown> {
        match self {
            View::String(s) => Ok(s),
            _ => Err(Unknown),
        }
    }

    /// CEL's `==` of two scalars.
    pub(crate) fn equals(self, other: View<'_>) -> Result<bool, Unknown> {
        Ok(self.scalar()?.val().equals(other.scalar()?.val()))
    }

    /// CEL's ordering of two scalars (`<`, `<=`, `>`, `>=`), where they can be ordered.
    pub(crate) fn compare(self, other: View<'_>) -> Result<Ordering, Unknown> {
        let (lhs, rhs) = (self.scalar()?, other.scalar()?);
        let comparer = lhs.val().as_comparer().ok_or(Unknown)?;
        comparer.compare(rhs.val()).map_err(|_| Unknown)
    }

    /// This scalar as the `cel` crate's value of it.
    fn scalar(self) -> Result<Scalar<'a>, Unknown> {
        Ok(match self {
            View::Null => Scalar::Null(CelNull),
            View::Bool(b) => Scalar::Bool(b.into()),
            View::Int(i) => Scalar::Int(i.into()),
            View::UInt(u) => Scalar::UInt(u.into()),
            View::Double(d) => Scalar::Double(d.into()),
            View::String(s) => Scalar::String(s.into()),
            View::List(_) | View::Map(_) => return Err(Unknown),
        })
    }
}

/// The JSON of `metadata` holding only the fields `names` (those it has), as it serializes,
/// if the view reads each of them in place (names, integers and string maps); `None`
/// otherwise.
pub(crate) fn metadata_json<'n>(
    metadata: &ObjectMeta,
    names: impl IntoIterator<Item = &'n str>,
) -> Option<Map<String, Json>> {
    let mut fields = Map::new();
    for name in names {
        if let Some(view) = metadata_field(metadata, name).ok()? {
            fields.insert(name.to_owned(), view.to_json()?);
        }
    }
    Some(fields)
}

impl View<'_> {
    /// The JSON this view reads, if it is a scalar or a map of strings.
    pub(crate) fn to_json(self) -> Option<Json> {
        Some(match self {
            View::Null => Json::Null,
            View::Bool(b) => Json::Bool(b),
            View::Int(i) => Json::from(i),
            View::UInt(u) => Json::from(u),
            View::Double(d) => Json::Number(Number::from_f64(d)?),
            View::String(s) => Json::String(s.to_owned()),
            View::Map(Fields::Strings(map)) => Json::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), Json::String(v.clone())))
                    .collect(),
            ),
            View::List(_) | View::Map(_) => return None,
        })
    }
}

/// A scalar as the `cel` crate's value, on the stack.
enum Scalar<'a> {
    Null(CelNull),
    Bool(CelBool),
    Int(CelInt),
    UInt(CelUInt),
    Double(CelDouble),
    String(CelString<'a>),
}

impl Scalar<'_> {
    fn val(&self) -> &dyn Val {
        match self {
            Scalar::Null(v) => v,
            Scalar::Bool(v) => v,
            Scalar::Int(v) => v,
            Scalar::UInt(v) => v,
            Scalar::Double(v) => v,
            Scalar::String(v) => v,
        }
    }
}

impl<'a> Fields<'a> {
    /// How many entries the map has, where it is counted in place.
    pub(crate) fn len(self) -> Result<usize, Unknown> {
        match self {
            Fields::Json(map) => Ok(map.len()),
            Fields::Strings(map) => Ok(map.len()),
            Fields::Object(_) | Fields::Metadata(_) => Err(Unknown),
        }
    }

    fn get(self, name: &str) -> Result<Option<View<'a>>, Unknown> {
        match self {
            Fields::Json(map) => Ok(json_field(map, name).map(View::of_json)),
            Fields::Object(object) => Ok(object_field(object, name)),
            Fields::Metadata(metadata) => metadata_field(metadata, name),
            Fields::Strings(map) => Ok(map.get(name).map(|s| View::String(s))),
        }
    }
}

/// The field `name` of a JSON map. A small map (most of a resource's are) is scanned: that
/// costs less than hashing the name for its index.
fn json_field<'a>(map: &'a Map<String, Json>, name: &str) -> Option<&'a Json> {
    match map.len() {
        0..=8 => map
            .iter()
            .find_map(|(key, value)| (key == name).then_some(value)),
        _ => map.get(name),
    }
}

/// A top-level field of an object: `apiVersion` and `kind` from its types when it has them,
/// `metadata` from its typed metadata (always there), anything else from its data.
fn object_field<'a>(object: &'a DynamicObject, name: &str) -> Option<View<'a>> {
    let typed = match (name, &object.types) {
        ("apiVersion", Some(types)) => Some(View::String(&types.api_version)),
        ("kind", Some(types)) => Some(View::String(&types.kind)),
        ("metadata", _) => Some(View::Map(Fields::Metadata(&object.metadata))),
        _ => None,
    };
    typed.or_else(|| {
        let data = object.data.as_object()?;
        json_field(data, name).map(View::of_json)
    })
}

/// A field of typed metadata as its JSON has it: fields that are `None` are absent, and the
/// fields of other than string, integer or string-map type are left to the interpreter.
fn metadata_field<'a>(metadata: &'a ObjectMeta, name: &str) -> Result<Option<View<'a>>, Unknown> {
    let string = |field: &'a Option<String>| field.as_deref().map(View::String);
    let strings = |field: &'a Option<BTreeMap<String, String>>| {
        field.as_ref().map(|map| View::Map(Fields::Strings(map)))
    };
    Ok(match name {
        "name" => string(&metadata.name),
        "namespace" => string(&metadata.namespace),
        "uid" => string(&metadata.uid),
        "resourceVersion" => string(&metadata.resource_version),
        "generateName" => string(&metadata.generate_name),
        "selfLink" => string(&metadata.self_link),
        "generation" => metadata.generation.map(View::Int),
        "deletionGracePeriodSeconds" => metadata.deletion_grace_period_seconds.map(View::Int),
        "labels" => strings(&metadata.labels),
        "annotations" => strings(&metadata.annotations),
        "creationTimestamp" | "deletionTimestamp" | "finalizers" | "managedFields"
        | "ownerReferences" => return Err(Unknown),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The metadata fields read in place, and one no metadata has.
    const MODELLED: [&str; 11] = [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generateName",
        "selfLink",
        "generation",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "missing",
    ];

    #[test]
    fn metadata_reads_as_it_serializes() {
        let full = json!({"name": "a", "namespace": "", "generation": 2, "labels": {},
            "annotations": {"x": "y"}, "uid": "u", "resourceVersion": "7",
            "generateName": "g-", "selfLink": "/s", "deletionGracePeriodSeconds": 30});
        for metadata in [json!({}), full] {
            let typed: ObjectMeta = serde_json::from_value(metadata).unwrap();
            let serialized = serde_json::to_value(&typed).unwrap();
            for name in MODELLED {
                let view = Fields::Metadata(&typed).get(name).unwrap();
                match (view, serialized.get(name)) {
                    (None, None) => {}
                    (Some(View::Map(Fields::Strings(map))), Some(json)) => {
                        assert_eq!(&serde_json::to_value(map).unwrap(), json, "{name}")
                    }
                    (Some(view), Some(json)) => {
                        assert!(
                            view.equals(View::of_json(json)).unwrap(),
                            "{name}: {view:?}"
                        )
                    }
                    (view, json) => panic!("{name}: {view:?} but {json:?}"),
                }
            }
        }
        let typed = ObjectMeta::default();
        for name in ["creationTimestamp", "finalizers", "ownerReferences"] {
            let view = Fields::Metadata(&typed).get(name);
            assert!(matches!(view, Err(Unknown)), "{name}: {view:?}");
        }
    }

    #[test]
    fn scalars_compare_as_cel_compares_them() {
        use Ordering::*;
        let cases = [
            (View::Int(1), View::Double(1.0), Ok(Equal)),
            (View::Int(-1), View::UInt(0), Ok(Less)),
            (View::UInt(3), View::Int(2), Ok(Greater)),
            (View::String("a"), View::String("b"), Ok(Less)),
            (View::Int(1), View::String("1"), Err(Unknown)),
            (View::Null, View::Null, Err(Unknown)),
            (View::Double(f64::NAN), View::Int(1), Err(Unknown)),
        ];
        for (a, b, expected) in cases {
            assert_eq!(a.compare(b), expected, "{a:?} {b:?}");
        }
        assert_eq!(View::Int(1).equals(View::String("1")), Ok(false));
        assert_eq!(View::Null.equals(View::Null), Ok(true));
        assert_eq!(View::List(&[]).equals(View::Null), Err(Unknown));
    }
}
