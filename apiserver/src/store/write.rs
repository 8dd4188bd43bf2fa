//! Create, update and patch, with kube-apiserver's rules for metadata, status and generation.

use std::sync::Arc;

use serde_json::Value;

use super::body::{PatchBody, apply_patch, check_body, check_stored_size};
use super::delete::lingers;
use super::schemas::{self, FieldValidation};
use super::server_fields::{
    SERVER_OWNED_META, check_finalizers_while_deleting, keep_server_fields, part_only,
    remove_field, spec_changed, status_only, unchanged,
};
use super::state::State;
use super::watch::ChangeKind;
use super::{builtin_defaults, initial_status};
use crate::error::{ApiError, ApiResult, Cause};
use crate::meta;
use crate::resources::ResourceInfo;
use crate::{config_data, meta_validation, validation};

/// Options every write takes.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer, but store nothing.
    pub dry_run: bool,
    /// `fieldValidation`: what unknown fields of custom objects do.
    pub field_validation: FieldValidation,
    /// `fieldManager`: who owns the fields this write sets (required for apply).
    pub field_manager: Option<String>,
    /// The client's `User-Agent`, from which the manager of other writes is derived.
    pub user_agent: Option<String>,
    /// `force`: an apply takes ownership of conflicting fields.
    pub force: bool,
    /// Under RBAC authorization, the check of this writer's writes of Roles, ClusterRoles
    /// and their bindings for escalation (the front end makes it from `auth`), run on the
    /// object as it would be stored.
    pub escalation_check: Option<EscalationCheck>,
}

/// A check a write must pass, given the store, the kind, the old object (on update) and the
/// object as it would be stored; the store runs it inside the write's transaction.
#[derive(Clone)]
pub struct EscalationCheck(pub Arc<CheckWrite>);

/// The function of an [`EscalationCheck`].
pub type CheckWrite =
    dyn Fn(&State, &ResourceInfo, Option<&Value>, &Value) -> ApiResult<()> + Send + Sync;

impl std::fmt::Debug for EscalationCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EscalationCheck")
    }
}

/// The result of a patch: the object, and whether the patch created it (apply).
#[derive(Clone, Debug)]
pub struct Patched {
    /// The object as stored.
    pub object: Arc<Value>,
    /// Whether a server-side apply created it.
    pub created: bool,
}

/// Which part of the object a write may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The main endpoint: everything but status (where a status subresource exists).
    Main,
    /// The `status` subresource: only status.
    Status,
    /// A subresource that changes one field and nothing else, named by its path:
    /// `pods/ephemeralcontainers` (`spec.ephemeralContainers`),
    /// `certificatesigningrequests/approval` (`status.conditions`), `namespaces/finalize`
    /// (`spec.finalizers`).
    Part(&'static [&'static str]),
}

/// Letters kube-apiserver uses for generated name suffixes.
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

impl State {
    /// Creates an object.
    pub fn create(
        &mut self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        body: Value,
        options: &WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        self.create_object(info, namespace, body, options, true)
    }

    /// Creates an object whose managedFields are already computed (create-on-apply).
    pub(super) fn create_recorded(
        &mut self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        body: Value,
        options: &WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        self.create_object(info, namespace, body, options, false)
    }

    fn create_object(
        &mut self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        body: Value,
        options: &WriteOptions,
        record: bool,
    ) -> ApiResult<Arc<Value>> {
        let mut object = check_body(info, body)?;
        crate::typecheck::check(info, &object)?;
        crate::workloads::validate(info, &object)?;
        crate::hpa_validation::validate(info, &object)?;
        let namespace = self.resolve_namespace(info, namespace, &object)?;
        let name = self.choose_name(info, &object)?;
        self.validate_object(info, &name, &object, None)?;
        self.check_can_create_in(info, &namespace, &name)?;
        if self.get(&info.key(), &namespace, &name).is_some() {
            return Err(ApiError::already_exists(info, &name));
        }
        for field in SERVER_OWNED_META {
            meta::remove_meta(&mut object, field);
        }
        meta::set_meta(&mut object, "name", Value::from(name.clone()));
        if info.namespaced {
            meta::set_meta(&mut object, "namespace", Value::from(namespace));
        } else {
            meta::remove_meta(&mut object, "namespace");
        }
        let uid = uuid::Uuid::new_v4().to_string();
        meta::set_meta(&mut object, "uid", Value::from(uid));
        meta::set_meta(
            &mut object,
            "creationTimestamp",
            Value::from(meta::now_rfc3339()),
        );
        if info.generation {
            meta::set_meta(&mut object, "generation", Value::from(1));
        }
        if info.status_subresource && !initial_status::kept_on_create(info) {
            remove_field(&mut object, "status");
        }
        builtin_defaults::apply(info, &mut object);
        initial_status::apply(info, &mut object);
        self.prepare_create_of_kind(info, &mut object)?;
        self.enforce_schema(info, &mut object, None, options.field_validation)?;
        if let Some(check) = &options.escalation_check {
            (check.0)(self, info, None, &object)?;
        }
        if record {
            object = self.record_managed_fields(info, None, &object, Target::Main, options);
        }
        if options.dry_run {
            meta::set_meta(&mut object, "resourceVersion", Value::from(""));
            return Ok(Arc::new(object));
        }
        check_stored_size(&object)?;
        let rv = self.objects.next_rv();
        meta::set_meta(&mut object, "resourceVersion", Value::from(rv.to_string()));
        let stored = self.commit_put(&info.key(), object, ChangeKind::Added);
        self.after_write_of_kind(info, &stored);
        self.check_new_owners(None, &stored);
        self.run_pending();
        Ok(stored)
    }

    /// Stores a fixture object as given, bypassing admission: a missing uid or
    /// creationTimestamp is filled in, a missing resourceVersion becomes `default_rv`, the
    /// namespace is created when missing, and later writes get resourceVersions above it.
    /// CustomResourceDefinitions and Namespaces are created normally (so that their kinds
    /// are served, and namespaces are active).
    pub fn seed(
        &mut self,
        info: &ResourceInfo,
        mut object: Value,
        default_rv: u64,
    ) -> ApiResult<Arc<Value>> {
        let key = info.key();
        if key == crate::resources::crd_resource_key()
            || key == crate::resources::namespace_resource_key()
        {
            return self.create(info, None, object, &WriteOptions::default());
        }
        let namespace = meta::namespace(&object).to_string();
        if info.namespaced && self.namespace(&namespace).is_none() {
            let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
            let ns_info = self
                .registry()
                .get("", "v1", "namespaces")
                .ok_or_else(|| ApiError::internal("namespaces are not served"))?;
            self.create(&ns_info, None, ns, &WriteOptions::default())?;
        }
        if meta::uid(&object).is_empty() {
            let uid = uuid::Uuid::new_v4().to_string();
            meta::set_meta(&mut object, "uid", Value::from(uid));
        }
        if meta::meta_str(&object, "creationTimestamp").is_empty() {
            let now = Value::from(meta::now_rfc3339());
            meta::set_meta(&mut object, "creationTimestamp", now);
        }
        let rv = match meta::resource_version(&object).parse::<u64>() {
            Ok(rv) => rv,
            Err(_) => default_rv,
        };
        meta::set_meta(&mut object, "resourceVersion", Value::from(rv.to_string()));
        self.objects.raise_rv(rv);
        let stored = self.commit_put(&info.key(), object, ChangeKind::Added);
        self.after_write_of_kind(info, &stored);
        self.run_autoscalers();
        Ok(stored)
    }

    /// Replaces an object (PUT), honouring the resourceVersion in the body as a precondition.
    pub fn update(
        &mut self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        body: Value,
        target: Target,
        options: &WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        let old = self
            .get(&info.key(), namespace, name)
            .ok_or_else(|| ApiError::not_found(info, name))?;
        let new = check_body(info, body)?;
        let body_namespace = meta::namespace(&new);
        if info.namespaced && !body_namespace.is_empty() && body_namespace != namespace {
            return Err(namespace_mismatch());
        }
        if meta::resource_version(&new).is_empty() && !info.allows_unconditional_update() {
            return Err(ApiError::invalid(
                info,
                name,
                vec![Cause::invalid(
                    "metadata.resourceVersion",
                    &Value::from("0x0"),
                    "must be specified for an update",
                )],
            ));
        }
        self.replace(info, &old, new, target, options)
    }

    /// Patches an object.
    pub fn patch(
        &mut self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
        patch: &PatchBody,
        target: Target,
        options: &WriteOptions,
    ) -> ApiResult<Patched> {
        if matches!(patch, PatchBody::Apply(_)) {
            let existed = self.get(&info.key(), namespace, name).is_some();
            let object = self.apply(info, namespace, name, patch, target, options)?;
            return Ok(Patched {
                object,
                created: !existed,
            });
        }
        let old = self
            .get(&info.key(), namespace, name)
            .ok_or_else(|| ApiError::not_found(info, name))?;
        let patched = match patch {
            PatchBody::Strategic(body) => self.strategic_merge(info, &old, body)?,
            _ => {
                let mut patched = (*old).clone();
                apply_patch(&mut patched, patch)?;
                patched
            }
        };
        let patched = check_body(info, patched)?;
        if meta::namespace(&patched) != namespace || meta::name(&patched) != name {
            return Err(ApiError::bad_request(
                "metadata.name and metadata.namespace cannot be changed by a patch",
            ));
        }
        let object = self.replace(info, &old, patched, target, options)?;
        Ok(Patched {
            object,
            created: false,
        })
    }

    /// The common part of update and patch: merge server-owned fields, check, bump, commit.
    pub fn replace(
        &mut self,
        info: &ResourceInfo,
        old: &Arc<Value>,
        new: Value,
        target: Target,
        options: &WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        self.replace_object(info, old, new, target, options, true)
    }

    /// A replace whose managedFields are already computed (server-side apply).
    pub(super) fn replace_recorded(
        &mut self,
        info: &ResourceInfo,
        old: &Arc<Value>,
        new: Value,
        target: Target,
        options: &WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        self.replace_object(info, old, new, target, options, false)
    }

    fn replace_object(
        &mut self,
        info: &ResourceInfo,
        old: &Arc<Value>,
        new: Value,
        target: Target,
        options: &WriteOptions,
        record: bool,
    ) -> ApiResult<Arc<Value>> {
        let name = meta::name(old).to_string();
        let new_name = meta::name(&new);
        if !new_name.is_empty() && new_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({new_name}) does not match the name on the URL ({name})"
            )));
        }
        let new_rv = meta::resource_version(&new);
        if !new_rv.is_empty() && new_rv != meta::resource_version(old) {
            return Err(ApiError::conflict_modified(info, &name));
        }
        let new_uid = meta::uid(&new);
        if !new_uid.is_empty() && new_uid != meta::uid(old) {
            return Err(ApiError::conflict(
                info,
                &name,
                &format!(
                    "Precondition failed: UID in precondition: {new_uid}, UID in object meta: {}",
                    meta::uid(old)
                ),
            ));
        }
        let mut result = match target {
            Target::Status => status_only(old, &new),
            Target::Main => keep_server_fields(info, old, new),
            Target::Part(path) => part_only(old, &new, path),
        };
        if target != Target::Status {
            builtin_defaults::apply(info, &mut result);
        }
        check_finalizers_while_deleting(info, old, &result)?;
        crate::typecheck::check(info, &result)?;
        self.validate_object(info, &name, &result, Some(old))?;
        if target == Target::Main {
            crate::workloads::validate(info, &result)?;
            crate::workload_updates::validate(info, &result, old)?;
            crate::hpa_validation::validate(info, &result)?;
        }
        self.prepare_update_of_kind(info, old, &mut result, target)?;
        self.enforce_schema(info, &mut result, Some(old), options.field_validation)?;
        if let Some(check) = &options.escalation_check {
            (check.0)(self, info, Some(old.as_ref()), &result)?;
        }
        if record {
            result = self.record_managed_fields(info, Some(old), &result, target, options);
        }
        if unchanged(old, &result) {
            return Ok(old.clone());
        }
        if info.generation && spec_changed(info, old, &result) {
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            meta::set_meta(&mut result, "generation", Value::from(generation));
        }
        if options.dry_run {
            return Ok(Arc::new(result));
        }
        if meta::is_deleting(&result) && !lingers(&info.key(), &result) {
            let removed = self.commit_remove(&info.key(), result);
            self.run_pending();
            return Ok(removed);
        }
        check_stored_size(&result)?;
        let rv = self.objects.next_rv();
        meta::set_meta(&mut result, "resourceVersion", Value::from(rv.to_string()));
        let stored = self.commit_put(&info.key(), result, ChangeKind::Modified);
        self.after_write_of_kind(info, &stored);
        self.check_new_owners(Some(old), &stored);
        self.run_pending();
        Ok(stored)
    }

    /// The namespace a new object goes into ("" for cluster-scoped kinds).
    fn resolve_namespace(
        &self,
        info: &ResourceInfo,
        url_namespace: Option<&str>,
        object: &Value,
    ) -> ApiResult<String> {
        if !info.namespaced {
            return Ok(String::new());
        }
        let body_namespace = meta::namespace(object);
        let namespace = match url_namespace {
            Some(ns) if !body_namespace.is_empty() && body_namespace != ns => {
                return Err(namespace_mismatch());
            }
            Some(ns) => ns,
            None if !body_namespace.is_empty() => body_namespace,
            None => {
                return Err(ApiError::bad_request(
                    "a namespace is required for this kind",
                ));
            }
        };
        Ok(namespace.to_string())
    }

    /// The new object's name: its own, or one generated from `generateName`.
    fn choose_name(&mut self, info: &ResourceInfo, object: &Value) -> ApiResult<String> {
        let name = meta::name(object);
        let name = if name.is_empty() {
            let prefix = meta::meta_str(object, "generateName");
            if prefix.is_empty() {
                return Err(ApiError::invalid(
                    info,
                    "",
                    vec![Cause::required(
                        "metadata.name",
                        "name or generateName is required",
                    )],
                ));
            }
            format!("{prefix}{}", self.random_suffix())
        } else {
            name.to_string()
        };
        if let Some(problem) = name_rules(info)(&name).first() {
            return Err(ApiError::invalid(
                info,
                &name,
                vec![Cause::invalid(
                    "metadata.name",
                    &Value::from(name.clone()),
                    problem,
                )],
            ));
        }
        Ok(name)
    }

    /// kube's validation of metadata (every kind), of ConfigMap and Secret data and of the
    /// core kinds' own rules (Secret types, immutable data, Services): `422`
    /// with every cause; the warnings (a finalizer without a domain, new in this write)
    /// are gathered.
    fn validate_object(
        &mut self,
        info: &ResourceInfo,
        name: &str,
        object: &Value,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        let mut causes = meta_validation::causes(object, name_rules(info));
        causes.extend(config_data::causes(info, object));
        causes.extend(crate::core_validation::causes(info, object, old));
        if let Some(old) = old {
            causes.extend(crate::binding_update::causes(info, object, old));
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid(info, name, causes));
        }
        let old_warnings = old.map(meta_validation::warnings).unwrap_or_default();
        let new_warnings = meta_validation::warnings(object);
        self.warnings.extend(
            new_warnings
                .into_iter()
                .filter(|w| !old_warnings.contains(w)),
        );
        Ok(())
    }

    fn random_suffix(&mut self) -> String {
        let bytes = uuid::Uuid::new_v4().into_bytes();
        bytes[..5]
            .iter()
            .map(|b| NAME_ALPHABET[*b as usize % NAME_ALPHABET.len()] as char)
            .collect()
    }

    /// Prunes, defaults and validates an object of a custom kind against its version's
    /// schema, gathering the write's warnings (see [`schemas::enforce`]).
    fn enforce_schema(
        &mut self,
        info: &ResourceInfo,
        object: &mut Value,
        old: Option<&Value>,
        validation: FieldValidation,
    ) -> ApiResult<()> {
        let Some(schema) = self.kinds.schema(info) else {
            return Ok(());
        };
        schemas::enforce(&schema, info, object, old, validation, &mut self.warnings)
    }

    /// Refuses creation in a namespace that is missing or terminating.
    fn check_can_create_in(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> ApiResult<()> {
        if !info.namespaced {
            return Ok(());
        }
        let ns = self
            .namespace(namespace)
            .ok_or_else(|| ApiError::namespace_not_found(namespace))?;
        if meta::is_deleting(&ns) {
            return Err(ApiError::forbidden(
                info,
                name,
                &format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ),
            ));
        }
        Ok(())
    }
}

/// How a kind's names are checked: RBAC names are path segments (`system:discovery`) and
/// APIService names version.group (`v1.` for the core group); Namespaces and Services are
/// DNS labels; the rest DNS subdomains.
fn name_rules(info: &ResourceInfo) -> fn(&str) -> Vec<String> {
    let path_segment_names = ["rbac.authorization.k8s.io", "apiregistration.k8s.io"];
    if !info.custom && path_segment_names.contains(&info.group.as_str()) {
        validation::path_segment_name
    } else if !info.custom && info.group.is_empty() && info.plural == "services" {
        validation::dns1035_label
    } else if info.key() == crate::resources::namespace_resource_key() {
        validation::dns1123_label
    } else {
        validation::dns1123_subdomain
    }
}

fn namespace_mismatch() -> ApiError {
    ApiError::bad_request(
        "the namespace of the provided object does not match the namespace sent on the request",
    )
}
