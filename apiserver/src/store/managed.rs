//! Field ownership: `metadata.managedFields` recorded on every write, server-side apply,
//! and strategic merge patch, with each kind's merge schema (list keys).

use std::sync::Arc;

use serde_json::Value;

use super::body::{PatchBody, check_body};
use super::crd;
use super::state::State;
use super::write::{Target, WriteOptions};
use crate::apply::{self, MergeSchema, Part, Writer};
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::resources::ResourceInfo;

/// The manager of a write that names none: the user agent up to its first `/`, as
/// kube-apiserver derives it.
fn default_manager(options: &WriteOptions) -> String {
    let agent = options.user_agent.as_deref().unwrap_or_default();
    let prefix = agent.split('/').next().unwrap_or_default().trim();
    if prefix.is_empty() {
        "unknown".to_string()
    } else {
        prefix.to_string()
    }
}

/// Who writes, owned, from which a [`Writer`] borrows.
struct Author {
    manager: String,
    api_version: String,
    now: String,
    part: Part,
}

impl Author {
    fn new(info: &ResourceInfo, target: Target, manager: String) -> Self {
        Self {
            manager,
            api_version: info.api_version(),
            now: meta::now_rfc3339(),
            part: part(info, target),
        }
    }

    fn writer(&self) -> Writer<'_> {
        Writer {
            manager: &self.manager,
            api_version: &self.api_version,
            part: self.part,
            now: &self.now,
        }
    }
}

fn part(info: &ResourceInfo, target: Target) -> Part {
    match target {
        Target::Status => Part::Status,
        Target::Main | Target::Part(_) if info.status_subresource => Part::Main,
        Target::Main | Target::Part(_) => Part::All,
    }
}

impl State {
    /// How lists and maps of a kind merge: the built-in keys, or the CRD version's schema.
    pub(super) fn merge_schema(&self, info: &ResourceInfo) -> MergeSchema {
        if !info.custom {
            return MergeSchema::for_builtin(&info.group, &info.kind);
        }
        let crd = self.crd_of(info);
        let schema = crd
            .as_deref()
            .and_then(|crd| crd::version(crd, &info.version))
            .map(|version| &version["schema"]["openAPIV3Schema"])
            .filter(|schema| !schema.is_null());
        match schema {
            Some(schema) => MergeSchema::from_openapi(schema),
            None => MergeSchema::schemaless(),
        }
    }

    /// Records a non-apply write in `metadata.managedFields` (operation Update).
    pub(super) fn record_managed_fields(
        &self,
        info: &ResourceInfo,
        old: Option<&Value>,
        new: &Value,
        target: Target,
        options: &WriteOptions,
    ) -> Value {
        let manager = options
            .field_manager
            .clone()
            .unwrap_or_else(|| default_manager(options));
        let author = Author::new(info, target, manager);
        apply::record_update(old, new, &author.writer(), &self.merge_schema(info))
    }

    /// Strategic merge patch of a built-in object (custom kinds answer 415, as kube-apiserver does).
    pub(super) fn strategic_merge(
        &self,
        info: &ResourceInfo,
        old: &Value,
        patch: &Value,
    ) -> ApiResult<Value> {
        if info.custom {
            return Err(ApiError {
                code: 415,
                reason: "UnsupportedMediaType".into(),
                message: format!(
                    "strategic merge patch is not supported for custom resources ({}); use a merge or JSON patch",
                    info.qualified_plural()
                ),
                details: None,
            });
        }
        apply::strategic_merge(old, patch, &self.merge_schema(info))
    }

    /// Server-side apply: merges `config` as `fieldManager` owns it, creating the object
    /// when it does not exist (except through the status subresource).
    pub fn apply(
        &mut self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        config: &PatchBody,
        target: Target,
        options: &WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        let PatchBody::Apply(config) = config else {
            return Err(ApiError::internal("apply called with another patch type"));
        };
        let Some(manager) = options.field_manager.clone() else {
            return Err(ApiError::invalid(
                info,
                name,
                vec![Cause::required(
                    "fieldManager",
                    "is required for apply patch",
                )],
            ));
        };
        let mut config = check_body(info, config.clone())?;
        let author = Author::new(info, target, manager);
        let writer = author.writer();
        let schema = self.merge_schema(info);
        match self.get(&info.key(), namespace, name) {
            Some(old) => {
                let result = apply::apply(Some(&old), &config, &writer, options.force, &schema)?;
                self.replace_recorded(info, &old, result, target, options)
            }
            None if target != Target::Main => Err(ApiError::not_found(info, name)),
            None => {
                meta::set_meta(&mut config, "name", Value::from(name));
                if info.namespaced {
                    meta::set_meta(&mut config, "namespace", Value::from(namespace));
                }
                let result = apply::apply(None, &config, &writer, options.force, &schema)?;
                let url_namespace = info.namespaced.then_some(namespace);
                self.create_recorded(info, url_namespace, result, options)
            }
        }
    }
}
