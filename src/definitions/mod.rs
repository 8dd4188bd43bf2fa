//! Controllers as data: a `ReconcilerDefinition` (YAML with `${cel}` expressions, in files
//! or in the cluster) is compiled at load into a tree of the library's own reconcilers —
//! `ChildReconciler`, `ChildSetReconciler`, `SyncReconciler`, `IfThen`, `WithFinalizer`
//! under a `ResourceReconciler` — never a second engine beside them.
//!
//! Loading checks everything a reconcile would find out too late: unknown fields of the
//! definition, expressions that do not parse, names that are not bound, fields the schema
//! of the read object does not have, conditions that are not bools, template values of the
//! wrong type, cycles between bindings. Each error names its path in the definition and
//! the position in the expression.

mod admission;
mod bindings;
mod build;
mod cached_fields;
mod check;
mod child_permissions;
mod compile;
mod crd;
mod error;
mod expr;
pub mod kro;
mod load;
mod macro_spelling;
mod model;
mod object_controller;
mod object_template;
mod plan;
mod presence;
mod published;
mod render;
mod runner;
mod schema;
#[cfg(test)]
mod soundness;
mod status_types;
mod ty;

pub use admission::{
    IMPERSONATION_PATH, IMPERSONATION_WEBHOOK, WebhookEndpoint, impersonation_webhook,
    impersonation_webhook_configuration,
};
pub use bindings::BindingReads;
pub use build::{
    DEFINITION_LABEL, ITEM_ANNOTATION, Inventory, STEP_LABEL, controller_name, root_reconciler,
};
pub use compile::{CompiledDefinition, Plan, compile, compile_at, kinds_to_check};
pub use crd::{PLURAL, definition_crd, definition_gvk, parent_crd};
pub use error::{DefinitionError, DefinitionErrors, Position};
pub use expr::{Bindings, EvalError, Expression, Template, Written};
pub use load::{
    Loaded, load_dir, load_file, parse_documents, parse_rgd_value, parse_value, parse_values,
    yaml_documents,
};
pub use model::{
    ChildSetStep, ChildStep, DefinitionMeta, DefinitionSpec, FinalizerStep, GROUP, IfStep, KIND,
    KindRef, KroConventions, ManagerKind, ParentSchema, ReconcilerDefinition, RefSelector, RefStep,
    ServiceAccountRef, Step, SyncStep, VERSION,
};
pub use object_template::{BuildError, ObjectTemplate};
pub use plan::{InstancePlan, PlannedWrite, plan, render};
pub use published::SOURCE_ANNOTATION;
pub use runner::{Definitions, FINALIZER, IdentityPolicy, StartError};
pub use schema::{Schema, Schemas};
