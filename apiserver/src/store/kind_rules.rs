//! Behaviour particular to a few kinds: Namespaces (phase, the `kubernetes` finalizer) and
//! CustomResourceDefinitions (defaults, validation, status conditions, serving the kinds
//! they define), and what Pods, Services and Events get on top of every write.

use std::sync::Arc;

use serde_json::{Value, json};

use super::aggregation::cluster_roles_key;
use super::crd::{self, CRD_CLEANUP_FINALIZER};
use super::events::events_v1_key;
use super::state::State;
use super::write::Target;
use super::{builtin_defaults, crd_defaults};
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::resources::{ResourceInfo, ResourceKey, crd_resource_key, namespace_resource_key};

/// The namespace finalizer (in `spec.finalizers`) held until the namespace is empty.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";

impl State {
    /// Kind-specific preparation of a new object.
    pub(super) fn prepare_create_of_kind(
        &self,
        info: &ResourceInfo,
        object: &mut Value,
    ) -> ApiResult<()> {
        if let Some(crd) = self.crd_of(info)
            && meta::is_deleting(&crd)
        {
            return Err(ApiError::method_not_allowed(format!(
                "create not allowed while custom resource definition {} is terminating",
                meta::name(&crd)
            )));
        }
        let key = info.key();
        if !info.custom && info.group.is_empty() && info.plural == "pods" {
            let qos = builtin_defaults::qos_class(&object["spec"]);
            object["status"] = json!({"phase": "Pending", "qosClass": qos});
        } else if !info.custom && info.group.is_empty() && info.plural == "services" {
            self.allocate_service(info, object)?;
        }
        if key == namespace_resource_key() {
            object["spec"] = json!({"finalizers": [NAMESPACE_FINALIZER]});
            object["status"] = json!({"phase": "Active"});
        } else if key == crd_resource_key() {
            crd_defaults::apply(object);
            crd::validate(info, object)?;
            let mut finalizers = meta::finalizers(object);
            if !finalizers.iter().any(|f| f == CRD_CLEANUP_FINALIZER) {
                finalizers.push(CRD_CLEANUP_FINALIZER.to_string());
            }
            meta::set_finalizers(object, &finalizers);
            object["status"] = crd::status(object, &Value::Null, self.kinds.names_clash(object));
        }
        Ok(())
    }

    /// Kind-specific checks and fix-ups of an update.
    pub(super) fn prepare_update_of_kind(
        &self,
        info: &ResourceInfo,
        old: &Value,
        new: &mut Value,
        target: Target,
    ) -> ApiResult<()> {
        let key = info.key();
        if !info.custom && info.group.is_empty() && info.plural == "services" {
            State::keep_service_allocation(old, new);
        }
        if key == namespace_resource_key() && target == Target::Main {
            new["spec"]["finalizers"] = old["spec"]["finalizers"].clone();
        } else if key == crd_resource_key() {
            crd_defaults::apply(new);
            crd::validate(info, new)?;
            new["status"] = crd::status(new, &old["status"], self.kinds.names_clash(new));
            if meta::is_deleting(old) {
                new["status"] = old["status"].clone();
            }
        }
        Ok(())
    }

    /// Kind-specific effects of a committed create or update.
    pub(super) fn after_write_of_kind(&mut self, info: &ResourceInfo, stored: &Arc<Value>) {
        if info.key() == events_v1_key() {
            self.mirror_event(stored);
        }
        if info.key() == namespace_resource_key() {
            self.populate_namespace(stored);
        }
        if info.key() == cluster_roles_key() {
            self.aggregate_cluster_roles();
        }
        self.queue_autoscalers_after_write(info, stored);
        self.after_load_of_kind(&info.key(), stored);
    }

    /// Kind-specific effects of an object read back from durable storage.
    pub(super) fn after_load_of_kind(&mut self, key: &ResourceKey, object: &Arc<Value>) {
        if *key == crd_resource_key() && crd::names_accepted(object) {
            self.kinds.serve(object);
        }
    }

    /// The `additionalPrinterColumns` of a custom kind's version, if its CRD declares any.
    pub fn printer_columns(&self, info: &ResourceInfo) -> Option<Vec<Value>> {
        let crd = self.crd_of(info)?;
        crd::version(&crd, &info.version)?["additionalPrinterColumns"]
            .as_array()
            .cloned()
    }

    /// The CRD that defines a custom kind.
    pub(super) fn crd_of(&self, info: &ResourceInfo) -> Option<Arc<Value>> {
        if !info.custom {
            return None;
        }
        let name = format!("{}.{}", info.plural, info.group);
        self.get(&crd_resource_key(), "", &name)
    }

    /// Marks an object whose deletion starts (namespace phase, CRD condition).
    pub(super) fn mark_terminating(&self, key: &ResourceKey, object: &mut Value) {
        if *key == namespace_resource_key() {
            object["status"]["phase"] = Value::from("Terminating");
        } else if *key == crd_resource_key() {
            crd::set_condition(
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
        if !crd::names_accepted(crd) {
            return;
        }
        let key = crd::custom_key(crd);
        self.kinds.stop_serving(crd);
        self.objects.remove_kind(&key);
        self.watch.close_kind(&key);
    }
}
