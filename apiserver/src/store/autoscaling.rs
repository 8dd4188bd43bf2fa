//! The HorizontalPodAutoscaler controller kube-controller-manager runs, inside the store:
//! a write of an HPA, or of (or deletion of) an object an HPA scales, queues that HPA, and
//! the write runs [`crate::autoscaler`]'s passes over the queued HPAs before it is answered,
//! until they settle (a rescale is followed by the pass kube's next sync makes). No timer:
//! with no metrics, nothing but a write changes what a pass decides.

use std::sync::Arc;

use serde_json::Value;

use super::state::State;
use super::write::{Target, WriteOptions};
use crate::autoscaler::{self, TargetScale};
use crate::error::ApiError;
use crate::meta;
use crate::resources::{ResourceInfo, ResourceKey};
use crate::scale::{scale_of, with_replicas};

/// The field manager of the controller's writes, as in a cluster.
const MANAGER: &str = "kube-controller-manager";

/// Where HPAs are stored (both versions).
fn hpa_key() -> ResourceKey {
    ResourceKey {
        group: "autoscaling".into(),
        plural: "horizontalpodautoscalers".into(),
    }
}

/// The group of an `apiVersion`.
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// The target a pass reads and scales.
struct ScaleTarget {
    info: Arc<ResourceInfo>,
    object: Arc<Value>,
    scale: Value,
}

impl State {
    /// Queues the HPAs a committed write concerns: the HPA written, or those scaling the
    /// object written.
    pub(super) fn queue_autoscalers_after_write(&mut self, info: &ResourceInfo, object: &Value) {
        if info.key() == hpa_key() {
            self.autoscale_queue
                .push(meta::namespace(object), meta::name(object));
        } else if info.scale.is_some() {
            self.queue_autoscalers_of(object);
        }
    }

    /// Queues the HPAs that scaled a removed object.
    pub(super) fn queue_autoscalers_after_removal(&mut self, key: &ResourceKey, last: &Value) {
        let scalable = self
            .registry()
            .versions_of(&key.group)
            .iter()
            .filter_map(|v| self.registry().get(&key.group, v, &key.plural))
            .any(|info| info.scale.is_some());
        if scalable {
            self.queue_autoscalers_of(last);
        }
    }

    fn queue_autoscalers_of(&mut self, object: &Value) {
        let namespace = meta::namespace(object);
        let group = group_of(object["apiVersion"].as_str().unwrap_or_default());
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = meta::name(object);
        let targeting: Vec<String> = self
            .objects
            .list(&hpa_key(), Some(namespace), None)
            .filter(|hpa| {
                let target = &hpa["spec"]["scaleTargetRef"];
                target["kind"] == kind
                    && target["name"] == name
                    && group_of(target["apiVersion"].as_str().unwrap_or_default()) == group
            })
            .map(|hpa| meta::name(&hpa).to_string())
            .collect();
        for hpa in targeting {
            self.autoscale_queue.push(namespace, &hpa);
        }
    }

    /// Runs a pass over each queued HPA, until none is queued (unless passes are already
    /// running further up: they take what is queued).
    pub(super) fn run_autoscalers(&mut self) {
        if !self.autoscale_queue.start() {
            return;
        }
        while let Some((namespace, name)) = self.autoscale_queue.pop() {
            self.autoscale(&namespace, &name);
        }
        self.autoscale_queue.finish();
    }

    /// One pass over an HPA: scale its target into range, then write its status if it
    /// changed.
    fn autoscale(&mut self, namespace: &str, name: &str) {
        let Some(hpa) = self.get(&hpa_key(), namespace, name) else {
            return;
        };
        let now = meta::now_rfc3339();
        let target = self.scale_target(&hpa);
        let read = match &target {
            Ok(target) => Ok(TargetScale::of(&target.scale)),
            Err(error) => Err(error.as_str()),
        };
        let pass = autoscaler::reconcile(&hpa, read, &now);
        if pass.rescale.is_some() && !self.autoscale_queue.first_rescale(namespace, name) {
            return;
        }
        let mut status = pass.status;
        if let (Some(replicas), Ok(target)) = (pass.rescale, &target)
            && let Err(error) = self.write_scale(target, replicas)
        {
            let current = TargetScale::of(&target.scale).replicas;
            status = autoscaler::rescale_failed(&hpa, current, &error.message, &now);
        }
        self.write_hpa_status(namespace, name, status);
    }

    /// The target of `hpa`'s `scaleTargetRef` and its Scale, or why it cannot be read, as
    /// kube's controller words it.
    fn scale_target(&self, hpa: &Value) -> Result<ScaleTarget, String> {
        let reference = &hpa["spec"]["scaleTargetRef"];
        let api_version = reference["apiVersion"].as_str().unwrap_or_default();
        let kind = reference["kind"].as_str().unwrap_or_default();
        let name = reference["name"].as_str().unwrap_or_default();
        if api_version.split('/').count() > 2 {
            return Err(format!("unexpected GroupVersion string: {api_version}"));
        }
        let group = group_of(api_version);
        let registry = self.registry();
        let info = registry
            .versions_of(group)
            .iter()
            .flat_map(|version| registry.in_group_version(group, version))
            .find(|info| info.kind == kind)
            .ok_or_else(|| format!("no matches for kind {kind:?} in group {group:?}"))?;
        if info.scale.is_none() {
            return Err("the server could not find the requested resource".into());
        }
        let object = self
            .get(&info.key(), meta::namespace(hpa), name)
            .ok_or_else(|| {
                let resource = match info.group.as_str() {
                    "" => format!("{}/scale", info.plural),
                    group => format!("{}/scale.{group}", info.plural),
                };
                format!("{resource} {name:?} not found")
            })?;
        let scale = scale_of(&info, &object).map_err(|error| error.message)?;
        Ok(ScaleTarget {
            info,
            object,
            scale,
        })
    }

    /// Writes `replicas` through the target's scale, as the controller's scale client does.
    fn write_scale(&mut self, target: &ScaleTarget, replicas: i64) -> Result<(), ApiError> {
        let mut scale = target.scale.clone();
        scale["spec"]["replicas"] = Value::from(replicas);
        let updated = with_replicas(&target.info, &target.object, &scale)?;
        self.replace(
            &target.info,
            &target.object,
            updated,
            Target::Main,
            &controller_write(),
        )?;
        Ok(())
    }

    /// Writes an HPA's status through its `status` subresource, unless it is unchanged.
    fn write_hpa_status(&mut self, namespace: &str, name: &str, status: Value) {
        let Some(hpa) = self.get(&hpa_key(), namespace, name) else {
            return;
        };
        if hpa["status"] == status {
            return;
        }
        let version = hpa["apiVersion"]
            .as_str()
            .and_then(|v| v.split_once('/'))
            .map_or("v2", |(_, version)| version);
        let Some(info) = self
            .registry()
            .get("autoscaling", version, "horizontalpodautoscalers")
        else {
            return;
        };
        let mut updated = (*hpa).clone();
        updated["status"] = status;
        // A status kube would refuse is not written: the HPA keeps the status it has.
        let _ = self.replace(&info, &hpa, updated, Target::Status, &controller_write());
    }
}

/// The options of the controller's writes.
fn controller_write() -> WriteOptions {
    WriteOptions {
        field_manager: Some(MANAGER.into()),
        ..WriteOptions::default()
    }
}
