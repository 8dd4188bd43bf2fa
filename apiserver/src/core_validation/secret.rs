//! Secret types as kube's `ValidateSecret` checks them (the keys each type needs, dockercfg
//! contents that are JSON objects, a service-account token's annotation), a type that does
//! not change, and the data of an `immutable` ConfigMap or Secret that does not change.

use base64::Engine;
use serde_json::{Map, Value};

use crate::error::Cause;

/// kube's message for a field an `immutable` object may not change.
const IMMUTABLE: &str = "field is immutable when `immutable` is set";

/// The problems of a Secret (`old`: the stored one, on an update).
pub(super) fn causes(secret: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let type_of = |secret: &Value| secret["type"].as_str().unwrap_or("Opaque").to_string();
    if let Some(old) = old
        && type_of(secret) != type_of(old)
    {
        let value = Value::from(type_of(secret));
        causes.push(Cause::invalid("type", &value, "field is immutable"));
    }
    causes.extend(immutable_causes(secret, old, true));
    causes.extend(type_causes(secret, &type_of(secret)));
    causes
}

/// An `immutable` ConfigMap or Secret keeps `immutable: true` and its data.
pub(super) fn immutable_causes(object: &Value, old: Option<&Value>, is_secret: bool) -> Vec<Cause> {
    let Some(old) = old.filter(|old| old["immutable"] == true) else {
        return Vec::new();
    };
    let mut causes = Vec::new();
    if object["immutable"] != true {
        causes.push(Cause::forbidden("immutable", IMMUTABLE));
    }
    let bags: &[&str] = if is_secret {
        &["data"]
    } else {
        &["data", "binaryData"]
    };
    for bag in bags {
        let (new_bag, old_bag) = if is_secret {
            (secret_data(object), secret_data(old))
        } else {
            (bag_of(object, bag), bag_of(old, bag))
        };
        if new_bag != old_bag {
            causes.push(Cause::forbidden(bag, IMMUTABLE));
        }
    }
    causes
}

/// A ConfigMap's `data` or `binaryData` (absent and empty alike).
fn bag_of(object: &Value, bag: &str) -> Map<String, Value> {
    object[bag].as_object().cloned().unwrap_or_default()
}

/// A Secret's data as kube validates it: `stringData` written into `data`, base64-encoded.
fn secret_data(secret: &Value) -> Map<String, Value> {
    let mut data = bag_of(secret, "data");
    for (key, text) in bag_of(secret, "stringData") {
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(text.as_str().unwrap_or_default());
        data.insert(key, Value::from(encoded));
    }
    data
}

/// The keys the Secret's type needs, as `ValidateSecret` words their absence.
fn type_causes(secret: &Value, secret_type: &str) -> Vec<Cause> {
    let value = |key: &str| secret_value(secret, key);
    let required = |field: &str| Cause::required(field, "");
    match secret_type {
        "kubernetes.io/service-account-token" => {
            let name = &secret["metadata"]["annotations"]["kubernetes.io/service-account.name"];
            if name.as_str().unwrap_or_default().is_empty() {
                return vec![required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                )];
            }
            Vec::new()
        }
        "kubernetes.io/dockercfg" => docker_config_causes(value(".dockercfg"), ".dockercfg"),
        "kubernetes.io/dockerconfigjson" => {
            docker_config_causes(value(".dockerconfigjson"), ".dockerconfigjson")
        }
        // kube builds these paths from "data[%s]" without formatting it: its message
        // really reads `data[%s][username]`.
        "kubernetes.io/basic-auth"
            if value("username").is_none() && value("password").is_none() =>
        {
            vec![
                required("data[%s][username]"),
                required("data[%s][password]"),
            ]
        }
        "kubernetes.io/ssh-auth" if value("ssh-privatekey").is_none_or(|v| v.is_empty()) => {
            vec![required("data[%s][ssh-privatekey]")]
        }
        "kubernetes.io/tls" => ["tls.crt", "tls.key"]
            .into_iter()
            .filter(|key| value(key).is_none())
            .map(|key| required(&format!("data[{key}]")))
            .collect(),
        _ => Vec::new(),
    }
}

/// A data key's bytes: `stringData` (which kube writes into `data` first) or `data`'s
/// base64; `None` when the key is absent.
fn secret_value(secret: &Value, key: &str) -> Option<Vec<u8>> {
    if let Some(text) = secret["stringData"][key].as_str() {
        return Some(text.as_bytes().to_vec());
    }
    let encoded = secret["data"].get(key)?;
    let text = encoded.as_str().unwrap_or_default();
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap_or_else(|_| text.as_bytes().to_vec()),
    )
}

/// A docker config key is required and must decode as a JSON object, as Go's
/// `json.Unmarshal` into a map reports it.
fn docker_config_causes(contents: Option<Vec<u8>>, key: &str) -> Vec<Cause> {
    let field = format!("data[{key}]");
    let Some(contents) = contents else {
        return vec![Cause::required(&field, "")];
    };
    match go_map_unmarshal_error(&contents) {
        None => Vec::new(),
        Some(problem) => vec![Cause::invalid(
            &field,
            &Value::from("<secret contents redacted>"),
            &problem,
        )],
    }
}

/// Go's error for `json.Unmarshal(contents, &map[string]interface{}{})`, for the mistakes
/// users make: truncated JSON, another JSON type, a first character that starts no value.
fn go_map_unmarshal_error(contents: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(contents) {
        Ok(Value::Object(_) | Value::Null) => None,
        Ok(other) => {
            let kind = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            Some(format!(
                "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(error) if error.is_eof() => Some("unexpected end of JSON input".into()),
        Err(error) => {
            let text = String::from_utf8_lossy(contents);
            let first = text.trim_start().chars().next().unwrap_or(' ');
            if "{[\"-0123456789tfn".contains(first) {
                Some(error.to_string())
            } else {
                Some(format!(
                    "invalid character '{first}' looking for beginning of value"
                ))
            }
        }
    }
}
