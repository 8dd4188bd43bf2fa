//! CEL values as JSON and back, and KRO's `json` library (`pkg/cel/library/json.go`):
//! `json.unmarshal(string)` parses JSON into a CEL value (numbers as doubles, as Go's
//! `encoding/json` reads them), `json.marshal(value)` writes one as compact JSON with its
//! map keys sorted, as Go's `json.Marshal` does.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::functions::Function;
use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::{Key, Map as CelMap};
use cel::{DeclarationError, Env, ExecutionError, Value as CelValue};
use serde_json::{Map, Number, Value};

use super::dynamic::{owned, value_of};

/// Registers `json.unmarshal` and `json.marshal` on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    let unmarshal: Function = unmarshal;
    let marshal: Function = marshal;
    env.add_overload(
        "json.unmarshal",
        "json.unmarshal_string",
        vec![STRING_TYPE],
        unmarshal,
    )?;
    env.add_overload("json.marshal", "json.marshal_dyn", vec![DYN_TYPE], marshal)?;
    Ok(())
}

fn unmarshal<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let fail = |message: String| ExecutionError::function_error("json.unmarshal", message);
    let text = match args.first().map(value_of).transpose()? {
        Some(CelValue::String(text)) => text,
        _ => return Err(fail("json.unmarshal argument must be a string".into())),
    };
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| fail(format!("json.unmarshal failed to parse JSON: {e}")))?;
    owned(from_json(&json))
}

fn marshal<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let fail = |message: String| ExecutionError::function_error("json.marshal", message);
    let value = args
        .first()
        .map(value_of)
        .transpose()?
        .ok_or_else(|| ExecutionError::invalid_argument_count(1, 0))?;
    let json =
        to_json(&value).map_err(|e| fail(format!("json.marshal failed to convert value: {e}")))?;
    owned(CelValue::String(Arc::new(go_json(&json))))
}

/// `json` as Go's `json.Marshal` writes it: compact, map keys sorted, whole doubles
/// without a fraction, and `<`, `>` and `&` escaped.
fn go_json(json: &Value) -> String {
    fn whole_numbers(json: &Value) -> Value {
        match json {
            Value::Number(n) => match n.as_f64() {
                Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => {
                    Value::from(f as i128 as i64)
                }
                _ => json.clone(),
            },
            Value::Array(items) => Value::Array(items.iter().map(whole_numbers).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), whole_numbers(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    whole_numbers(json)
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// A JSON value as a CEL value, its numbers as doubles (Go's `json.Unmarshal` into `any`).
fn from_json(json: &Value) -> CelValue {
    match json {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(from_json).collect())),
        Value::Object(map) => CelValue::Map(CelMap {
            map: Arc::new(
                map.iter()
                    .map(|(k, v)| (Key::String(Arc::new(k.clone())), from_json(v)))
                    .collect::<HashMap<_, _>>(),
            ),
        }),
    }
}

/// A CEL value as JSON (timestamps as RFC 3339, durations in seconds), or why it has none.
pub(crate) fn to_json(value: &CelValue) -> Result<Value, String> {
    Ok(match value {
        CelValue::Null => Value::Null,
        CelValue::Bool(b) => Value::Bool(*b),
        CelValue::Int(i) => Value::from(*i),
        CelValue::UInt(u) => Value::from(*u),
        CelValue::Float(f) => Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("{f} is not a JSON number"))?,
        CelValue::String(s) => Value::String(s.to_string()),
        CelValue::List(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        CelValue::Map(map) => {
            // CEL maps are hash maps: their keys are written sorted, so equal maps read alike.
            let mut entries: Vec<(String, &CelValue)> =
                map.map.iter().map(|(k, v)| (k.to_string(), v)).collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let mut object = Map::with_capacity(entries.len());
            for (key, value) in entries {
                object.insert(key, to_json(value)?);
            }
            Value::Object(object)
        }
        CelValue::Timestamp(t) => Value::String(t.to_rfc3339()),
        CelValue::Duration(d) => Value::String(format!("{}s", d.num_seconds())),
        CelValue::Bytes(_) => return Err("bytes cannot be written into an object".into()),
        other => {
            return Err(format!(
                "a {} cannot be written into an object",
                other.type_of()
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::cel::evaluate_closed;

    #[test]
    fn json_unmarshal_and_marshal_as_kro() {
        // Cases from KRO's pkg/cel/library/json_test.go.
        let cases = [
            (r#"json.unmarshal('{"name": "test"}').name"#, json!("test")),
            (r#"json.unmarshal('[1,2,3]')[0]"#, json!(1.0)),
            (r#"json.unmarshal('{"a": {"b": true}}').a.b"#, json!(true)),
            (r#"json.unmarshal('null')"#, json!(null)),
            (r#"json.unmarshal('"text"')"#, json!("text")),
            (
                r#"json.marshal({"name": "test", "count": 42})"#,
                json!(r#"{"count":42,"name":"test"}"#),
            ),
            (r#"json.marshal([1, 2, 3])"#, json!("[1,2,3]")),
            (r#"json.marshal(1.0)"#, json!("1")),
            (r#"json.marshal(1.5)"#, json!("1.5")),
            (
                r#"json.marshal('<a&b>')"#,
                json!(r#""\u003ca\u0026b\u003e""#),
            ),
            (
                r#"json.marshal(json.unmarshal('{"b": [1, "x"], "a": null}'))"#,
                json!(r#"{"a":null,"b":[1,"x"]}"#),
            ),
        ];
        for (expression, want) in cases {
            assert_eq!(evaluate_closed(expression), Ok(want), "{expression}");
        }
    }

    #[test]
    fn bad_json_is_an_error_naming_the_function() {
        let error = evaluate_closed("json.unmarshal('{bad')").unwrap_err();
        assert!(
            error.contains("json.unmarshal failed to parse JSON"),
            "{error}"
        );
        let error = evaluate_closed("json.marshal(b'abc')").unwrap_err();
        assert!(
            error.contains("json.marshal failed to convert value"),
            "{error}"
        );
    }
}
