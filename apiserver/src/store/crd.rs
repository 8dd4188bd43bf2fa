//! CustomResourceDefinitions read and written as the server does: the kind one defines,
//! its versions, its validation, and the status (accepted names, conditions) it is given.

use serde_json::{Value, json};

use super::schemas;
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::resources::{ResourceInfo, ResourceKey};
use crate::validation;

/// The finalizer every CRD carries until its instances are gone.
pub const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The storage key of the kind a CRD defines.
pub fn custom_key(crd: &Value) -> ResourceKey {
    ResourceKey {
        group: crd["spec"]["group"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        plural: crd["spec"]["names"]["plural"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    }
}

/// A CRD's entry for one of its versions.
pub fn version<'a>(crd: &'a Value, name: &str) -> Option<&'a Value> {
    crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == name)
}

/// Whether a CRD's names were accepted (it serves its kind).
pub fn names_accepted(crd: &Value) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "NamesAccepted" && c["status"] == "True")
        })
}

/// The status the server gives a CRD: accepted names, stored versions, conditions;
/// `conflict` says whether its names clash with a kind already served.
pub fn status(crd: &Value, old_status: &Value, conflict: bool) -> Value {
    let key = custom_key(crd);
    let mut names = crd["spec"]["names"].clone();
    let kind = names["kind"].as_str().unwrap_or_default().to_string();
    let mut status = if old_status.is_object() {
        old_status.clone()
    } else {
        json!({})
    };
    if names["singular"].as_str().unwrap_or_default().is_empty() {
        names["singular"] = Value::from(kind.to_lowercase());
    }
    if names["listKind"].as_str().unwrap_or_default().is_empty() {
        names["listKind"] = Value::from(format!("{kind}List"));
    }
    let mut stored = meta::string_list(&status["storedVersions"]);
    if let Some(version) = storage_version(crd)
        && !stored.contains(&version)
    {
        stored.push(version);
    }
    status["storedVersions"] = Value::from(stored);
    let mut holder = json!({"status": status});
    if conflict {
        holder["status"]["acceptedNames"] = json!({"kind": "", "plural": ""});
        let message = format!("\"{}\" is already in use", key.plural);
        set_condition(
            &mut holder,
            "NamesAccepted",
            "False",
            "NameConflict",
            &message,
        );
        set_condition(
            &mut holder,
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        );
    } else {
        holder["status"]["acceptedNames"] = names;
        set_condition(
            &mut holder,
            "NamesAccepted",
            "True",
            "NoConflicts",
            "no conflicts found",
        );
        set_condition(
            &mut holder,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        );
    }
    holder["status"].take()
}

fn storage_version(crd: &Value) -> Option<String> {
    crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["storage"].as_bool() == Some(true))
        .and_then(|v| v["name"].as_str())
        .map(str::to_string)
}

/// Sets a condition in `status.conditions`, keeping its transition time when its status holds.
pub fn set_condition(object: &mut Value, kind: &str, status: &str, reason: &str, message: &str) {
    if !object["status"]["conditions"].is_array() {
        object["status"]["conditions"] = json!([]);
    }
    let Some(conditions) = object["status"]["conditions"].as_array_mut() else {
        return;
    };
    let now = meta::now_rfc3339();
    let existing = conditions.iter_mut().find(|c| c["type"] == kind);
    let condition = json!({"type": kind, "status": status, "reason": reason,
        "message": message, "lastTransitionTime": now});
    match existing {
        Some(c) if c["status"] == status => {
            c["reason"] = Value::from(reason);
            c["message"] = Value::from(message);
        }
        Some(c) => *c = condition,
        None => conditions.push(condition),
    }
}

/// Checks a CRD the way kube-apiserver does for the fields this server relies on.
pub fn validate(info: &ResourceInfo, crd: &Value) -> ApiResult<()> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    let kind = spec["names"]["kind"].as_str().unwrap_or_default();
    let mut causes = Vec::new();
    if group.is_empty() {
        causes.push(Cause::required("spec.group", ""));
    } else if !group.contains('.') {
        causes.push(Cause::invalid(
            "spec.group",
            &Value::from(group),
            "should be a domain with at least one dot",
        ));
    }
    if plural.is_empty() {
        causes.push(Cause::required("spec.names.plural", ""));
    } else if let Some(problem) = validation::dns1123_label(plural).first() {
        causes.push(Cause::invalid(
            "spec.names.plural",
            &Value::from(plural),
            problem,
        ));
    }
    if kind.is_empty() {
        causes.push(Cause::required("spec.names.kind", ""));
    }
    let expected = format!("{plural}.{group}");
    if meta::name(crd) != expected {
        causes.push(Cause::invalid(
            "metadata.name",
            &Value::from(meta::name(crd)),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    match spec["scope"].as_str() {
        Some("Namespaced" | "Cluster") => {}
        other => causes.push(Cause {
            reason: "FieldValueNotSupported",
            field: "spec.scope".into(),
            message: format!(
                "Unsupported value: {:?}: supported values: \"Cluster\", \"Namespaced\"",
                other.unwrap_or_default()
            ),
        }),
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    } else {
        let storage = versions
            .iter()
            .filter(|v| v["storage"].as_bool() == Some(true))
            .count();
        if storage != 1 {
            causes.push(Cause::invalid(
                "spec.versions",
                &Value::from(format!("{storage} storage versions")),
                "must have exactly one version marked as storage version",
            ));
        }
        for (i, version) in versions.iter().enumerate() {
            if version["name"].as_str().unwrap_or_default().is_empty() {
                causes.push(Cause::required(&format!("spec.versions[{i}].name"), ""));
            }
        }
    }
    if let Err(schema_causes) = schemas::compile_versions(crd) {
        causes.extend(schema_causes);
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(info, meta::name(crd), causes))
    }
}
