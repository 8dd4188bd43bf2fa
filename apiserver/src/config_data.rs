//! The keys of ConfigMaps and Secrets, validated as kube's `ValidateConfigMap` and
//! `ValidateSecret` validate them: each key a config key (`data[bad key!]`), no key in
//! both `data` and `binaryData`, and the data at most 1 MiB in all.

use serde_json::{Map, Value};

use crate::error::Cause;
use crate::resources::ResourceInfo;
use crate::validation;

/// kube's `MaxSecretSize`, which bounds ConfigMaps too: 1 MiB.
const MAX_DATA_SIZE: usize = 1024 * 1024;

/// The problems of a ConfigMap's or Secret's data; none for other kinds.
pub fn causes(info: &ResourceInfo, object: &Value) -> Vec<Cause> {
    if info.custom || !info.group.is_empty() {
        return Vec::new();
    }
    let bag = |key: &str| object[key].as_object();
    let mut causes = Vec::new();
    match info.plural.as_str() {
        "configmaps" => {
            let mut total = 0;
            for (name, other) in [("data", "binaryData"), ("binaryData", "data")] {
                total += keys_causes(name, bag(name), bag(other), &mut causes);
            }
            if total > MAX_DATA_SIZE {
                // kube names the whole object with an empty path, which prints as `[]`.
                causes.push(Cause::too_long("[]", MAX_DATA_SIZE));
            }
        }
        "secrets" => {
            // stringData is written into data before kube validates it.
            let mut data = bag("data").cloned().unwrap_or_default();
            if let Some(strings) = bag("stringData") {
                data.extend(strings.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            if keys_causes("data", Some(&data), None, &mut causes) > MAX_DATA_SIZE {
                causes.push(Cause::too_long("data", MAX_DATA_SIZE));
            }
        }
        _ => {}
    }
    causes
}

/// Checks the keys of one bag (`data[key]`), and that none is also in `other`; returns
/// the size of its values.
fn keys_causes(
    name: &str,
    bag: Option<&Map<String, Value>>,
    other: Option<&Map<String, Value>>,
    causes: &mut Vec<Cause>,
) -> usize {
    let Some(bag) = bag else {
        return 0;
    };
    let other_name = if name == "data" { "binaryData" } else { "data" };
    let mut keys: Vec<&String> = bag.keys().collect();
    keys.sort();
    for key in keys {
        let field = format!("{name}[{key}]");
        let value = Value::from(key.as_str());
        for problem in validation::config_map_key(key) {
            causes.push(Cause::invalid(&field, &value, &problem));
        }
        if other.is_some_and(|other| other.contains_key(key)) {
            let problem = format!("duplicate of key present in {other_name}");
            causes.push(Cause::invalid(&field, &value, &problem));
        }
    }
    bag.values().map(|v| v.as_str().map_or(0, str::len)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use serde_json::json;

    fn messages(plural: &str, object: Value) -> Vec<String> {
        let registry = Registry::with_builtins();
        let info = registry.get("", "v1", plural).unwrap();
        causes(&info, &object)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn config_map_keys() {
        let rules: [(Value, Vec<&str>); 5] = [
            (json!({"data": {"app.conf": "x", "KEY_1": "y"}}), vec![]),
            (
                json!({"data": {"bad key!": "x"}}),
                vec![
                    "data[bad key!]: Invalid value: \"bad key!\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                ],
            ),
            (
                json!({"data": {"..x": "x"}}),
                vec!["data[..x]: Invalid value: \"..x\": must not start with '..'"],
            ),
            (
                json!({"data": {"k": "x"}, "binaryData": {"k": "eA=="}}),
                vec![
                    "data[k]: Invalid value: \"k\": duplicate of key present in binaryData",
                    "binaryData[k]: Invalid value: \"k\": duplicate of key present in data",
                ],
            ),
            (
                json!({"data": {"a": "x".repeat(MAX_DATA_SIZE + 1)}}),
                vec!["[]: Too long: may not be more than 1048576 bytes"],
            ),
        ];
        for (object, expected) in rules {
            assert_eq!(messages("configmaps", object.clone()), expected, "{object}");
        }
    }

    #[test]
    fn secret_keys_include_string_data() {
        assert_eq!(
            messages("secrets", json!({"stringData": {"bad/key": "x"}})),
            vec![
                "data[bad/key]: Invalid value: \"bad/key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ]
        );
        assert!(messages("secrets", json!({"data": {"tls.crt": "eA=="}})).is_empty());
        assert!(messages("pods", json!({"data": {"bad key": "x"}})).is_empty());
    }
}
