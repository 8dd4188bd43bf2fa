//! What the steps of one definition share during a request: the values bound by earlier
//! steps (kept in the request's stash) and the condition set they mark.

use std::collections::BTreeSet;
use std::sync::Arc;

use kube::api::DynamicObject;
use serde_json::{Map, Value};

use super::compile::{ChildPlan, upper_camel};
use super::expr::{Bindings, Expression};
use crate::cel::metadata_json;
use crate::client::ListOptions;
use crate::object::ConditionSet;
use crate::reconcilers::{Context, Draft, ReconcileError};

const BINDING_PREFIX: &str = "dynrec.dev/binding/";

/// What every step of a definition knows.
pub struct Shared {
    /// The definition's name (on the labels of its children).
    pub definition: String,
    /// The conditions `Ready` summarizes.
    pub conditions: ConditionSet,
    /// Whether conditions are written at all (not on a kind another controller owns).
    pub owns_status: bool,
    /// A definition read from an RGD, run with KRO's conventions: a status field that
    /// cannot be computed yet is left out instead of failing its `sync` step, and children
    /// are found by KRO's labels instead of ownerReferences (so they may be in another
    /// namespace, or cluster-scoped).
    pub kro: bool,
    /// What the definition's expressions read of the bindings.
    pub reads: BindingReads,
}

/// What a definition's expressions read: the top-level fields of `self` and of its
/// metadata, and which steps' bindings. `self` is bound with only those fields, and a
/// step's result is bound only when an expression reads it.
#[derive(Clone, Debug)]
pub struct BindingReads {
    /// The fields of `self` read (`None`: `self` is read whole).
    self_fields: Option<BTreeSet<String>>,
    /// The fields of `self.metadata` read (`None`: all of it).
    metadata_fields: Option<BTreeSet<String>>,
    /// The names the expressions read (`None`: any name).
    names: Option<BTreeSet<String>>,
}

impl BindingReads {
    /// What `expressions` read.
    pub fn of(expressions: &[&Expression]) -> Self {
        let mut self_fields = Some(BTreeSet::new());
        let mut metadata_fields = Some(BTreeSet::new());
        let mut names = BTreeSet::new();
        for expression in expressions {
            names.extend(expression.variables());
            for path in expression.paths_read("self").unwrap_or_default() {
                match (path.first(), &mut self_fields) {
                    (Some(field), Some(fields)) => drop(fields.insert(field.clone())),
                    (None, _) => self_fields = None,
                    (Some(_), None) => {}
                }
                match (path.as_slice(), &mut metadata_fields) {
                    ([top, field, ..], Some(fields)) if top == "metadata" => {
                        fields.insert(field.clone());
                    }
                    ([top], _) if top == "metadata" => metadata_fields = None,
                    _ => {}
                }
            }
        }
        Self {
            self_fields,
            metadata_fields,
            names: Some(names),
        }
    }

    /// What every expression could read: `self` whole and every binding.
    pub fn everything() -> Self {
        Self {
            self_fields: None,
            metadata_fields: None,
            names: None,
        }
    }

    /// Whether an expression may read the binding `name`.
    pub fn reads(&self, name: &str) -> bool {
        self.names.as_ref().is_none_or(|names| names.contains(name))
    }

    /// `parent` as `self`: as JSON, with only the top-level fields the expressions read, and
    /// of its metadata only the fields read where they are names, integers or string maps.
    pub fn parent(&self, parent: &DynamicObject) -> Result<Value, serde_json::Error> {
        let (Some(read), Value::Object(data)) = (&self.self_fields, &parent.data) else {
            return serde_json::to_value(parent);
        };
        let mut fields = Map::with_capacity(read.len());
        if let Some(types) = &parent.types {
            for (name, value) in [("apiVersion", &types.api_version), ("kind", &types.kind)] {
                if read.contains(name) {
                    fields.insert(name.to_owned(), Value::String(value.clone()));
                }
            }
        }
        if read.contains("metadata") {
            let read = self.metadata_fields.as_ref();
            let metadata = match read
                .and_then(|read| metadata_json(&parent.metadata, read.iter().map(String::as_str)))
            {
                Some(metadata) => Value::Object(metadata),
                None => serde_json::to_value(&parent.metadata)?,
            };
            fields.insert("metadata".to_owned(), metadata);
        }
        for name in read {
            if let Some(value) = data.get(name) {
                fields.insert(name.clone(), value.clone());
            }
        }
        Ok(Value::Object(fields))
    }
}

/// Binds `value` as `id` for the later steps of this request.
fn bind(ctx: &Context, id: &str, value: Value) {
    ctx.stash()
        .store(&format!("{BINDING_PREFIX}{id}"), Arc::new(value));
}

/// An object as expressions read it (without `managedFields`).
pub fn child_json(object: &DynamicObject) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or(Value::Null);
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    value
}

/// An error of the step at `path` as its condition's message shows it: led by the step's
/// path unless the error names a place in the step already (an expression's error does).
pub fn step_error_message(path: &str, error: &ReconcileError) -> String {
    let message = error_message(error);
    match message.strip_prefix(path) {
        Some(rest) if rest.starts_with(['.', ':', '[']) => message,
        _ => format!("{path}: {message}"),
    }
}

/// An error as a condition's message shows it: an API server's refusal as what was
/// attempted and the server's message and reason, anything else as it displays.
pub fn error_message(error: &ReconcileError) -> String {
    if let Some(crate::client::Error::Api(api)) = error.find_cause::<crate::client::Error>()
        && let kube::Error::Api(status) = &api.source
    {
        let key = api
            .key
            .as_ref()
            .map(|k| format!(" {k}"))
            .unwrap_or_default();
        return format!(
            "{} {}{key}: {} ({})",
            api.verb, api.gvk.kind, status.message, status.reason
        );
    }
    error.to_string()
}

impl Shared {
    /// `self` (the parent as it is now, as far as the expressions read it) and every value
    /// bound so far in this request.
    pub fn bindings(
        &self,
        ctx: &Context,
        parent: &DynamicObject,
    ) -> Result<Bindings, ReconcileError> {
        let mut bindings = Bindings::new();
        let parent = self
            .reads
            .parent(parent)
            .map_err(ReconcileError::from_error)?;
        bindings.insert("self".into(), Arc::new(parent));
        for key in ctx.stash().keys() {
            if let Some(id) = key.strip_prefix(BINDING_PREFIX)
                && let Some(value) = ctx.stash().retrieve::<Arc<Value>>(&key)
            {
                bindings.insert(id.to_owned(), value);
            }
        }
        Ok(bindings)
    }

    /// Binds `value` (made by `make`) as `id` for the later steps of this request, if an
    /// expression reads it.
    pub fn bind(&self, ctx: &Context, id: &str, make: impl FnOnce() -> Value) {
        if self.reads.reads(id) {
            bind(ctx, id, make());
        }
    }

    /// Which objects of a kind may be children of `parent`: those it controls in its
    /// namespace, or, for an RGD, those labelled with its UID in any namespace.
    pub fn children_of(&self, parent: &DynamicObject) -> Option<ListOptions> {
        let uid = parent.metadata.uid.as_deref()?;
        Some(match self.kro {
            true => crate::definitions::kro::children_of(uid),
            false => ListOptions {
                namespace: parent.metadata.namespace.clone(),
                controlled_by: Some(uid.to_owned()),
                ..ListOptions::default()
            },
        })
    }

    /// Marks `condition` True.
    pub fn mark_true(
        &self,
        ctx: &Context,
        parent: &mut Draft,
        condition: &str,
        reason: &str,
        message: &str,
    ) {
        self.mark(ctx, parent, (condition, true), reason, message);
    }

    /// Marks `condition` False (and with it `Ready`).
    pub fn mark_false(
        &self,
        ctx: &Context,
        parent: &mut Draft,
        condition: &str,
        reason: &str,
        message: &str,
    ) {
        self.mark(ctx, parent, (condition, false), reason, message);
    }

    fn mark(
        &self,
        ctx: &Context,
        parent: &mut Draft,
        (condition, status): (&str, bool),
        reason: &str,
        message: &str,
    ) {
        if !self.owns_status {
            return;
        }
        let mut conditions = self.conditions.manage(parent, ctx.now());
        let marked = match status {
            true => conditions.mark_true(condition, reason, message),
            false => conditions.mark_false(condition, reason, message),
        };
        if let Err(err) = marked {
            tracing::warn!(%err, condition, "cannot set a condition");
        }
    }

    /// Writes a child step's state onto its condition.
    pub(super) fn reflect(
        &self,
        ctx: &Context,
        parent: &mut Draft,
        plan: &ChildPlan,
        state: Result<Readiness, String>,
    ) {
        let kind = &plan.gvk.kind;
        let condition = plan.condition.as_str();
        match state {
            Err(message) => {
                let reason = format!("{}Failed", upper_camel(&plan.id));
                self.mark_false(ctx, parent, condition, &reason, &message);
            }
            Ok(Readiness::Ready(names)) => {
                let message = match names.as_slice() {
                    [name] => format!("{kind} {name} is in place"),
                    names => format!("{} {kind} objects in place", names.len()),
                };
                self.mark_true(ctx, parent, condition, &format!("{kind}Ready"), &message);
            }
            Ok(Readiness::NotReady(message)) => {
                self.mark_false(ctx, parent, condition, &format!("{kind}NotReady"), &message);
            }
            Ok(Readiness::Missing) => {
                let message = format!("no {kind} yet");
                self.mark_false(ctx, parent, condition, &format!("No{kind}"), &message);
            }
            Ok(Readiness::Excluded(Exclusion { reason, message })) => {
                self.mark_true(ctx, parent, condition, reason, &message);
            }
        }
    }
}

/// What a child step reflects onto its condition.
pub(super) enum Readiness {
    /// Every child exists and is ready (their names).
    Ready(Vec<String>),
    /// A child exists and a `readyWhen` is false.
    NotReady(String),
    /// There is no child (yet, or the parent is going).
    Missing,
    /// `includeWhen` is false, or a step it reads is excluded.
    Excluded(Exclusion),
}

/// Why a child step is excluded, as its condition (True) says.
#[derive(Clone, Debug)]
pub(super) struct Exclusion {
    /// `NotIncluded` or `DependencyExcluded`.
    pub reason: &'static str,
    /// What is false, or which step is excluded.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn reads_of(sources: &[&str]) -> BindingReads {
        let expressions: Vec<Expression> = sources
            .iter()
            .map(|source| Expression::compile(source, "p").unwrap())
            .collect();
        BindingReads::of(&expressions.iter().collect::<Vec<_>>())
    }

    fn widget() -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"size": 3}, "status": {"conditions": [{"type": "Ready"}]}}))
        .unwrap()
    }

    #[test]
    fn self_is_bound_with_the_fields_read_and_steps_only_when_read() {
        let reads = reads_of(&[
            "self.metadata.name + configMap.data.a",
            "self.spec.size > 1",
        ]);
        assert_eq!(
            reads.parent(&widget()).unwrap(),
            json!({"metadata": {"name": "w"}, "spec": {"size": 3}})
        );
        assert!(reads.reads("configMap"));
        assert!(!reads.reads("secret"));
        let whole = serde_json::to_value(widget()).unwrap();
        for reads in [reads_of(&["size(self) > 1"]), BindingReads::everything()] {
            assert_eq!(reads.parent(&widget()).unwrap(), whole);
        }
        assert!(BindingReads::everything().reads("secret"));
    }

    #[test]
    fn metadata_is_bound_with_the_fields_read() {
        let mut widget = widget();
        widget.metadata.labels = Some([("app".to_owned(), "a".to_owned())].into());
        widget.metadata.generation = Some(2);
        widget.metadata.finalizers = Some(vec!["f".to_owned()]);
        let metadata =
            |sources: &[&str]| reads_of(sources).parent(&widget).unwrap()["metadata"].clone();
        assert_eq!(
            metadata(&[
                "self.metadata.labels.app + self.metadata.name",
                "has(self.metadata.uid)",
                "self.metadata.generation"
            ]),
            json!({"name": "w", "labels": {"app": "a"}, "generation": 2})
        );
        // A field not read in place, or metadata read whole: all of it, as it serializes.
        let whole = serde_json::to_value(&widget.metadata).unwrap();
        for sources in [
            &["self.metadata.finalizers[0]"][..],
            &["size(self.metadata) > 0"],
        ] {
            assert_eq!(metadata(sources), whole, "{sources:?}");
        }
    }
}
