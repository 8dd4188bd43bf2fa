//! Behaviour particular to a few kinds: Namespaces (phase, the `kubernetes` finalizer) and
//! CustomResourceDefinitions (validation, status conditions, serving the kinds they define).

use std::sync::Arc;

use serde_json::{Value, json};

use super::State;
use super::gc::{CRD_CLEANUP_FINALIZER, NAMESPACE_FINALIZER, custom_key};
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::resources::{
    ResourceInfo, ResourceKey, crd_resource_key, infos_from_crd, namespace_resource_key,
};
use crate::validation;

impl State {
    /// Kind-specific preparation of a new object.
    pub(super) fn prepare_create_of_kind(
        &self,
        info: &ResourceInfo,
        object: &mut Value,
    ) -> ApiResult<()> {
        if info.custom {
            let crd_name = format!("{}.{}", info.plural, info.group);
            if self
                .get(&crd_resource_key(), "", &crd_name)
                .is_some_and(|crd| meta::is_deleting(&crd))
            {
                return Err(ApiError::method_not_allowed(format!(
                    "create not allowed while custom resource definition {crd_name} is terminating"
                )));
            }
        }
        let key = info.key();
        if !info.custom && info.group.is_empty() && info.plural == "pods" {
            let qos = super::builtin_defaults::qos_class(&object["spec"]);
            object["status"] = json!({"phase": "Pending", "qosClass": qos});
        } else if !info.custom && info.group.is_empty() && info.plural == "services" {
            self.allocate_service(object);
        }
        if key == namespace_resource_key() {
            object["spec"] = json!({"finalizers": [NAMESPACE_FINALIZER]});
            object["status"] = json!({"phase": "Active"});
        } else if key == crd_resource_key() {
            super::crd_defaults::apply(object);
            validate_crd(info, object)?;
            let mut finalizers = meta::finalizers(object);
            if !finalizers.iter().any(|f| f == CRD_CLEANUP_FINALIZER) {
                finalizers.push(CRD_CLEANUP_FINALIZER.to_string());
            }
            meta::set_finalizers(object, &finalizers);
            object["status"] = self.crd_status(object, &Value::Null);
        }
        Ok(())
    }

    /// Kind-specific checks and fix-ups of an update.
    pub(super) fn prepare_update_of_kind(
        &self,
        info: &ResourceInfo,
        old: &Value,
        new: &mut Value,
        target: super::Target,
    ) -> ApiResult<()> {
        let key = info.key();
        if !info.custom && info.group.is_empty() && info.plural == "services" {
            State::keep_service_allocation(old, new);
        }
        if key == namespace_resource_key() && target == super::Target::Main {
            new["spec"]["finalizers"] = old["spec"]["finalizers"].clone();
        } else if key == crd_resource_key() {
            super::crd_defaults::apply(new);
            validate_crd(info, new)?;
            new["status"] = self.crd_status(new, &old["status"]);
            if meta::is_deleting(old) {
                new["status"] = old["status"].clone();
            }
        }
        Ok(())
    }

    /// Kind-specific effects of a committed create or update.
    pub(super) fn after_write_of_kind(&mut self, info: &ResourceInfo, stored: &Arc<Value>) {
        if info.key() == super::events::events_v1_key() {
            self.mirror_event(stored);
        }
        if info.key() == namespace_resource_key() {
            self.populate_namespace(stored);
        }
        self.after_load_of_kind(&info.key(), stored);
    }

    /// Kind-specific effects of an object read back from durable storage.
    pub(super) fn after_load_of_kind(&mut self, key: &ResourceKey, object: &Arc<Value>) {
        if *key == crd_resource_key() && names_accepted(object) {
            self.registry
                .set_custom(&custom_key(object), infos_from_crd(object));
            self.register_schemas(object);
        }
    }

    /// The `additionalPrinterColumns` of a custom kind's version, if its CRD declares any.
    pub fn printer_columns(&self, info: &ResourceInfo) -> Option<Vec<Value>> {
        if !info.custom {
            return None;
        }
        let crd = self.get(
            &crd_resource_key(),
            "",
            &format!("{}.{}", info.plural, info.group),
        )?;
        let version = crd["spec"]["versions"]
            .as_array()?
            .iter()
            .find(|v| v["name"] == info.version.as_str())?;
        version["additionalPrinterColumns"].as_array().cloned()
    }

    /// Marks an object whose deletion starts (namespace phase, CRD condition).
    pub(super) fn mark_terminating(&self, key: &ResourceKey, object: &mut Value) {
        if *key == namespace_resource_key() {
            object["status"]["phase"] = Value::from("Terminating");
        } else if *key == crd_resource_key() {
            set_condition(
                object,
                "Terminating",
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
            );
        }
    }

    /// A CRD is gone: stop serving its kind and end its watches.
    pub(super) fn crd_removed(&mut self, crd: &Value) {
        if !names_accepted(crd) {
            return;
        }
        let key = custom_key(crd);
        self.forget_schemas(crd);
        self.registry.remove_custom(&key);
        self.objects.remove(&key);
        self.watchers.remove(&key);
    }

    /// The status the server gives a CRD: accepted names, stored versions, conditions.
    fn crd_status(&self, crd: &Value, old_status: &Value) -> Value {
        let key = custom_key(crd);
        let mut names = crd["spec"]["names"].clone();
        let kind = names["kind"].as_str().unwrap_or_default().to_string();
        let conflict = self.registry.names_clash(&key, &kind);
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
}

/// The CRD's entry for a custom kind's version.
fn crd_version(state: &State, info: &ResourceInfo) -> Option<Value> {
    if !info.custom {
        return None;
    }
    let crd = state.get(
        &crd_resource_key(),
        "",
        &format!("{}.{}", info.plural, info.group),
    )?;
    crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == info.version.as_str())
        .cloned()
}

/// The `openAPIV3Schema` of a custom kind's version, if its CRD has one.
pub(super) fn version_schema(state: &State, info: &ResourceInfo) -> Option<Value> {
    let schema = crd_version(state, info)?["schema"]["openAPIV3Schema"].clone();
    (!schema.is_null()).then_some(schema)
}

/// Whether a CRD's names were accepted (it serves its kind).
pub(super) fn names_accepted(crd: &Value) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "NamesAccepted" && c["status"] == "True")
        })
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
fn set_condition(object: &mut Value, kind: &str, status: &str, reason: &str, message: &str) {
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
fn validate_crd(info: &ResourceInfo, crd: &Value) -> ApiResult<()> {
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
    if let Err(schema_causes) = super::schemas::compile_versions(crd) {
        causes.extend(schema_causes);
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(info, meta::name(crd), causes))
    }
}
