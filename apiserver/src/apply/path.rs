//! Path elements of field sets, in structured-merge-diff's `fieldsV1` and message encodings.

use serde_json::{Map, Value};

use crate::json_order::canonical;

/// One step of a field path. Keys and values are held as canonical JSON, so that equal
/// elements compare equal and sort like structured-merge-diff's (fields, keys, values, indexes).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pe {
    /// A field of an object: `f:name`.
    Field(String),
    /// An item of a list keyed by fields: `k:{"name":"a"}`.
    Key(String),
    /// An item of a set-like list: `v:"x"`.
    Value(String),
    /// An item of a list by position: `i:0`.
    Index(usize),
}

/// A path from the root of an object.
pub type Path = Vec<Pe>;

impl Pe {
    /// The element for the key fields of a list item (serialized with sorted field names).
    pub fn key(fields: Map<String, Value>) -> Pe {
        Pe::Key(canonical(&Value::Object(fields)))
    }

    /// The element for a set item.
    pub fn value(value: &Value) -> Pe {
        Pe::Value(canonical(value))
    }

    /// The `fieldsV1` encoding: `f:name`, `k:{..}`, `v:..`, `i:N`.
    pub fn encode(&self) -> String {
        match self {
            Pe::Field(name) => format!("f:{name}"),
            Pe::Key(key) => format!("k:{key}"),
            Pe::Value(value) => format!("v:{value}"),
            Pe::Index(index) => format!("i:{index}"),
        }
    }

    /// Parses the `fieldsV1` encoding, canonicalizing keys and values.
    pub fn decode(text: &str) -> Option<Pe> {
        let (prefix, rest) = text.split_once(':')?;
        match prefix {
            "f" => Some(Pe::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest).ok()? {
                Value::Object(fields) => Some(Pe::key(fields)),
                _ => None,
            },
            "v" => serde_json::from_str::<Value>(rest)
                .ok()
                .map(|v| Pe::value(&v)),
            "i" => rest.parse().ok().map(Pe::Index),
            _ => None,
        }
    }

    /// How kube-apiserver prints the element in messages: `.name`, `[name="a"]`, `[="x"]`, `[0]`.
    pub fn display(&self) -> String {
        match self {
            Pe::Field(name) => format!(".{name}"),
            Pe::Key(key) => {
                let fields = match serde_json::from_str::<Value>(key) {
                    Ok(Value::Object(fields)) => fields,
                    _ => Map::new(),
                };
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("[{}]", parts.join(","))
            }
            Pe::Value(value) => format!("[={value}]"),
            Pe::Index(index) => format!("[{index}]"),
        }
    }
}

/// A path as kube-apiserver prints it: `.spec.containers[name="a"].image`.
pub fn display(path: &[Pe]) -> String {
    path.iter().map(Pe::display).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn elements_round_trip_through_their_encoding() {
        let key = Pe::decode(r#"k:{"protocol":"TCP","containerPort":80}"#);
        assert_eq!(
            key.as_ref().map(Pe::encode).as_deref(),
            Some(r#"k:{"containerPort":80,"protocol":"TCP"}"#)
        );
        assert_eq!(Pe::decode(r#"v:"a""#), Some(Pe::value(&json!("a"))));
        assert_eq!(Pe::decode("f:spec"), Some(Pe::Field("spec".into())));
        assert_eq!(Pe::decode("x:1"), None);
    }

    #[test]
    fn paths_print_like_kube_apiserver() {
        let mut key = Map::new();
        key.insert("name".into(), json!("a"));
        let path = vec![
            Pe::Field("spec".into()),
            Pe::Field("containers".into()),
            Pe::key(key),
            Pe::Field("image".into()),
        ];
        assert_eq!(display(&path), r#".spec.containers[name="a"].image"#);
        assert_eq!(display(&[Pe::value(&json!("x"))]), r#"[="x"]"#);
    }
}
