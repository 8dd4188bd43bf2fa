//! `meta.k8s.io/v1 Table` responses: what `kubectl get` prints (NAME, AGE, and a CRD's
//! `additionalPrinterColumns` evaluated as JSONPath).

use jiff::Timestamp;
use jsonpath_rust::parser::{model::JpQuery, parse_json_path};
use jsonpath_rust::query::js_path_process;
use serde_json::{Value, json};

use crate::meta;

/// One column of a table.
pub struct Column {
    name: String,
    kind: String,
    format: String,
    description: String,
    priority: i64,
    source: Source,
}

/// Where a column's cells come from.
enum Source {
    Name,
    Age,
    Path(Box<JpQuery>),
    /// Computed from the object, as kube's printer for the kind computes it.
    Computed(fn(&Value) -> String),
    /// A JSONPath that did not parse: cells are empty, as kube-apiserver leaves them.
    Invalid,
}

impl Column {
    fn name_column() -> Self {
        Column {
            name: "Name".into(),
            kind: "string".into(),
            format: "name".into(),
            description: "Name must be unique within a namespace.".into(),
            priority: 0,
            source: Source::Name,
        }
    }

    fn age_column() -> Self {
        Column {
            name: "Age".into(),
            kind: "date".into(),
            format: String::new(),
            description: "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
            priority: 0,
            source: Source::Age,
        }
    }

    /// A `string` column whose cells `cell` computes from each object, as kube's printer
    /// for a built-in kind computes them.
    pub fn computed(name: &str, description: &str, cell: fn(&Value) -> String) -> Self {
        Column {
            name: name.into(),
            kind: "string".into(),
            format: String::new(),
            description: description.into(),
            priority: 0,
            source: Source::Computed(cell),
        }
    }

    fn from_printer_column(column: &Value) -> Self {
        let text = |field: &str| column[field].as_str().unwrap_or_default().to_string();
        let path = text("jsonPath");
        let source = match parse_json_path(&format!("${}", path.trim_start_matches('$'))) {
            Ok(query) => Source::Path(Box::new(query)),
            Err(_) => Source::Invalid,
        };
        Column {
            name: text("name"),
            kind: text("type"),
            format: text("format"),
            description: text("description"),
            priority: column["priority"].as_i64().unwrap_or(0),
            source,
        }
    }

    fn definition(&self) -> Value {
        json!({"name": self.name, "type": self.kind, "format": self.format,
            "description": self.description, "priority": self.priority})
    }

    /// A cell as kube's `tableconvertor` makes it from the first JSONPath result: a
    /// `string` column prints it (a list or map as JSON, so kubectl shows `["reviews"]`),
    /// other columns keep a value of their type (or none).
    fn cell(&self, object: &Value, now: Timestamp) -> Value {
        let value = match &self.source {
            Source::Name => return Value::from(meta::name(object)),
            Source::Age => object["metadata"]["creationTimestamp"].clone(),
            Source::Invalid => return Value::Null,
            Source::Computed(cell) => return Value::from(cell(object)),
            Source::Path(query) => match js_path_process(query, object) {
                Ok(found) => match found.first().map(|r| r.val) {
                    None | Some(Value::Null) => return Value::Null,
                    Some(value) => value.clone(),
                },
                Err(_) => return Value::Null,
            },
        };
        match self.kind.as_str() {
            "string" => Value::from(print_result(&value)),
            "date" => value.as_str().map_or(Value::Null, |text| {
                text.parse::<Timestamp>()
                    .map_or(Value::from("<invalid>"), |t| {
                        Value::from(human_duration(now, t))
                    })
            }),
            "integer" => match &value {
                Value::Number(n) => n
                    .as_i64()
                    .or_else(|| n.as_f64().map(|f| f as i64))
                    .map_or(Value::Null, Value::from),
                _ => Value::Null,
            },
            "number" => value.as_f64().map_or(Value::Null, Value::from),
            "boolean" => value.as_bool().map_or(Value::Null, Value::from),
            _ => Value::Null,
        }
    }
}

/// One JSONPath result as kube's JSONPath printer writes it: strings as they are, lists and
/// maps as JSON (keys sorted, as Go writes maps), numbers and booleans as text.
fn print_result(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => crate::json_order::canonical(other),
    }
}

/// The columns of a kind: NAME and AGE, or NAME and the CRD version's printer columns.
pub fn columns(printer_columns: Option<&Vec<Value>>) -> Vec<Column> {
    let mut columns = vec![Column::name_column()];
    match printer_columns.filter(|c| !c.is_empty()) {
        Some(custom) => columns.extend(custom.iter().map(Column::from_printer_column)),
        None => columns.push(Column::age_column()),
    }
    columns
}

/// NAME, then `columns`: the columns of a kind kube prints without an AGE.
pub fn name_and(columns: impl IntoIterator<Item = Column>) -> Vec<Column> {
    std::iter::once(Column::name_column())
        .chain(columns)
        .collect()
}

/// A Table of `objects`; each row carries the object's metadata.
pub fn table(columns: &[Column], objects: &[&Value], resource_version: &str) -> Value {
    let now = Timestamp::now();
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let cells: Vec<Value> = columns.iter().map(|c| c.cell(object, now)).collect();
            json!({"cells": cells, "object": {"kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1", "metadata": object["metadata"]}})
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": columns.iter().map(Column::definition).collect::<Vec<_>>(),
        "rows": rows,
    })
}

/// How long ago `then` was, as kubectl prints ages (apimachinery's `HumanDuration`).
pub fn human_duration(now: Timestamp, then: Timestamp) -> String {
    let seconds = now.as_second() - then.as_second();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{days}d"),
            h => format!("{days}d{h}h"),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        return match days % 365 {
            0 => format!("{years}y"),
            d => format!("{years}y{d}d"),
        };
    }
    format!("{years}y")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        let now: Timestamp = "2026-01-10T00:00:00Z".parse().unwrap();
        let ago =
            |s: i64| human_duration(now, Timestamp::from_second(now.as_second() - s).unwrap());
        assert_eq!(ago(5), "5s");
        assert_eq!(ago(119), "119s");
        assert_eq!(ago(5 * 60 + 30), "5m30s");
        assert_eq!(ago(45 * 60), "45m");
        assert_eq!(ago(5 * 3600 + 60), "5h1m");
        assert_eq!(ago(30 * 3600), "30h");
        assert_eq!(ago(3 * 86400 + 3600), "3d1h");
        assert_eq!(ago(100 * 86400), "100d");
        assert_eq!(ago(3 * 365 * 86400 + 86400), "3y1d");
    }

    #[test]
    fn printer_columns_are_evaluated_as_jsonpath() {
        let printer = vec![
            json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size"}),
            json!({"name": "Ports", "type": "string", "jsonPath": ".spec.ports[*].port"}),
            json!({"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"}),
            json!({"name": "Bad", "type": "string", "jsonPath": ".spec[["}),
            json!({"name": "Hosts", "type": "string", "jsonPath": ".spec.hosts"}),
            json!({"name": "Labels", "type": "string", "jsonPath": ".spec.labels"}),
            json!({"name": "SizeText", "type": "string", "jsonPath": ".spec.size"}),
            json!({"name": "HostsCount", "type": "integer", "jsonPath": ".spec.hosts"}),
            json!({"name": "When", "type": "date", "jsonPath": ".spec.hosts[0]"}),
        ];
        let object = json!({"metadata": {"name": "w1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"size": 3, "ports": [{"port": 80}, {"port": 443}],
                "hosts": ["reviews", "ratings"], "labels": {"b": "2", "a": "1"}}});
        let doc = table(&columns(Some(&printer)), &[&object], "7");
        assert_eq!(
            doc["rows"][0]["cells"],
            json!([
                "w1",
                3,
                "80",
                null,
                null,
                r#"["reviews","ratings"]"#,
                r#"{"a":"1","b":"2"}"#,
                "3",
                null,
                "<invalid>"
            ])
        );
        assert_eq!(doc["columnDefinitions"][1]["name"], "Size");
        let default = table(&columns(None), &[&object], "7");
        assert_eq!(default["columnDefinitions"][1]["name"], "Age");
    }
}
