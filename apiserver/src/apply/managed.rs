//! `metadata.managedFields` entries: decoding, encoding, identity.

use serde_json::{Map, Value, json};

use super::fieldset::FieldSet;

/// One `managedFields` entry.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Entry {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub api_version: String,
    /// `""` or `status`.
    pub subresource: String,
    pub time: Option<String>,
    pub fields: FieldSet,
}

/// The operation of a server-side apply.
pub(super) const APPLY: &str = "Apply";
/// The operation of any other write.
pub(super) const UPDATE: &str = "Update";

impl Entry {
    /// Whether two entries are the same manager (kube-apiserver's manager identifier: the API
    /// version counts for updaters only).
    pub fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == APPLY || self.api_version == other.api_version)
    }

    /// kube-apiserver's manager identifier, the JSON it sorts conflicting managers by.
    pub fn identifier(&self) -> String {
        let mut id = Map::new();
        id.insert("manager".into(), Value::from(self.manager.clone()));
        id.insert("operation".into(), Value::from(self.operation.clone()));
        let mut text = Value::Object(id).to_string();
        if self.operation != APPLY {
            text.pop();
            text.push_str(&format!(
                ",\"apiVersion\":{}}}",
                Value::from(self.api_version.clone())
            ));
        }
        text
    }

    /// How conflict messages name the manager: `"name"`, or `"name" using apps/v1` for updaters.
    pub fn label(&self) -> String {
        if self.operation == APPLY {
            format!("{:?}", self.manager)
        } else {
            format!("{:?} using {}", self.manager, self.api_version)
        }
    }

    fn decode(value: &Value) -> Option<Entry> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
        Some(Entry {
            manager: text("manager").unwrap_or_default(),
            operation: text("operation")?,
            api_version: text("apiVersion").unwrap_or_default(),
            subresource: text("subresource").unwrap_or_default(),
            time: text("time"),
            fields: FieldSet::from_fields_v1(value.get("fieldsV1")?).ok()?,
        })
    }

    fn encode(&self) -> Value {
        let mut entry = json!({
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "fieldsType": "FieldsV1",
            "fieldsV1": self.fields.to_fields_v1(),
        });
        if let Some(time) = &self.time {
            entry["time"] = Value::from(time.clone());
        }
        if !self.subresource.is_empty() {
            entry["subresource"] = Value::from(self.subresource.clone());
        }
        entry
    }
}

/// The object's `metadata.managedFields` (entries that do not decode are dropped).
pub(super) fn read(object: &Value) -> Vec<Entry> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|entries| entries.iter().filter_map(Entry::decode).collect())
        .unwrap_or_default()
}

/// What a client-written `managedFields` asks for: `None` to keep the stored entries (absent,
/// empty or undecodable), `Some(empty)` to reset them (`[{}]`), or the entries to store.
pub(super) fn requested(object: &Value) -> Option<Vec<Entry>> {
    let entries = object.pointer("/metadata/managedFields")?.as_array()?;
    if entries.is_empty() {
        return None;
    }
    if entries
        .iter()
        .all(|e| e.as_object().is_some_and(Map::is_empty))
    {
        return Some(Vec::new());
    }
    let decoded: Option<Vec<Entry>> = entries.iter().map(Entry::decode).collect();
    decoded.filter(|d| d.iter().any(|e| !e.fields.is_empty()))
}

/// Sets (or, with no entries, removes) `metadata.managedFields`, sorted as kube-apiserver sorts
/// them: by operation, time, manager, API version, subresource.
pub(super) fn write(object: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.fields.is_empty());
    entries.sort_by(|a, b| {
        let key = |e: &Entry| {
            (
                e.operation.clone(),
                e.time.clone().unwrap_or_default(),
                e.manager.clone(),
                e.api_version.clone(),
                e.subresource.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
    let Some(metadata) = object.as_object_mut().map(|o| {
        o.entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()))
    }) else {
        return;
    };
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    if entries.is_empty() {
        metadata.remove("managedFields");
    } else {
        let encoded = entries.iter().map(Entry::encode).collect();
        metadata.insert("managedFields".into(), Value::Array(encoded));
    }
}

/// The object without `metadata.managedFields`.
pub(super) fn without(object: &Value) -> Value {
    let mut out = object.clone();
    if let Some(metadata) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    out
}
