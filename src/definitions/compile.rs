//! Compiles a [`ReconcilerDefinition`] into plans: every expression parsed and checked
//! against the schemas of what it reads, steps ordered by the bindings they read (a cycle is
//! an error), and every error collected with its path, so one load reports them all.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::check::{Findings, Scope, check_condition, check_list, check_template};
use super::error::{DefinitionError, DefinitionErrors};
use super::expr::{Expression, Template, Text, condition};
use super::kro::{CustomConditions, Spellings};
use super::model::{
    ChildSetStep, ChildStep, GROUP, KIND, KroConventions, ManagerKind, ReconcilerDefinition,
    RefStep, Step, SyncStep, VERSION,
};
use super::object_template::ObjectTemplate;
use super::presence::{said_once, set_by_template};
use super::schema::{Lookup, Schema, Schemas};
use super::status_types::inferred_properties;
use super::ty::Ty;
use crate::object::Gvk;

/// A child step, compiled.
#[derive(Debug)]
pub struct ChildPlan {
    /// The step's binding.
    pub id: String,
    /// Where the step is in the definition.
    pub path: String,
    /// The child's kind.
    pub gvk: Gvk,
    /// The child.
    pub template: Template,
    /// The child's template compiled into a builder of the object.
    pub object: ObjectTemplate,
    /// All true, or the child is deleted.
    pub include_when: Vec<Expression>,
    /// All true over `child` for the child to be ready.
    pub ready_when: Vec<Expression>,
    /// The condition the step sets.
    pub condition: String,
    /// How the child is written.
    pub manager: ManagerKind,
    /// The steps that may be excluded (or missing) whose bindings it reads: when one is,
    /// this step is excluded too.
    pub depends_on: Vec<String>,
    /// The earlier child and ref steps whose bindings it reads, with their conditions: an
    /// RGD's resource waits until those are True, as KRO's dependents wait for their
    /// dependencies to be ready.
    pub waits_for: Vec<(String, String)>,
}

/// A child-set step, compiled.
#[derive(Debug)]
pub struct ChildSetPlan {
    /// The step's binding and the children's shared fields.
    pub child: ChildPlan,
    /// The list of items.
    pub for_each: Expression,
    /// An item's id.
    pub item_id: Text,
}

/// A sync step, compiled.
#[derive(Debug)]
pub struct SyncPlan {
    /// The step's name.
    pub id: String,
    /// Where the step is in the definition.
    pub path: String,
    /// Merged into the parent's status.
    pub status: Template,
    /// The condition the step sets.
    pub condition: String,
}

/// A ref step, compiled.
#[derive(Debug)]
pub struct RefPlan {
    /// The step's binding.
    pub id: String,
    /// Where the step is in the definition.
    pub path: String,
    /// The referenced kind.
    pub gvk: Gvk,
    /// Its name (absent with a selector).
    pub name: Option<Text>,
    /// Its namespace (default: the parent's).
    pub namespace: Option<Text>,
    /// Labels of the selected objects (empty without a selector).
    pub match_labels: Vec<(String, Text)>,
    /// Whether a selector is used (the binding is a list).
    pub selects: bool,
    /// Whether a missing object binds `null`.
    pub optional: bool,
    /// The condition the step sets.
    pub condition: String,
}

/// A compiled step.
#[derive(Debug)]
pub enum Plan {
    /// A child step (`ChildPlan`).
    Child(Arc<ChildPlan>),
    /// A child-set step (`ChildSetPlan`).
    ChildSet(Arc<ChildSetPlan>),
    /// A sync step (`SyncPlan`).
    Sync(Arc<SyncPlan>),
    /// A ref step (`RefPlan`).
    Ref(Arc<RefPlan>),
    /// Steps under a condition.
    If {
        /// Where the step is.
        path: String,
        /// The condition.
        condition: Expression,
        /// Run when true.
        then: Vec<Plan>,
        /// Run when false.
        otherwise: Vec<Plan>,
    },
    /// Steps with a finalizer held.
    Finalizer {
        /// The finalizer.
        name: String,
        /// The steps.
        steps: Vec<Plan>,
    },
}

impl Plan {
    /// The condition types this step and the steps in it set.
    pub fn conditions(&self) -> Vec<String> {
        match self {
            Plan::Child(c) => vec![c.condition.clone()],
            Plan::ChildSet(c) => vec![c.child.condition.clone()],
            Plan::Sync(s) => vec![s.condition.clone()],
            Plan::Ref(r) => vec![r.condition.clone()],
            Plan::If {
                then, otherwise, ..
            } => then
                .iter()
                .chain(otherwise)
                .flat_map(Plan::conditions)
                .collect(),
            Plan::Finalizer { steps, .. } => steps.iter().flat_map(Plan::conditions).collect(),
        }
    }

    /// The ids of the child and child-set steps in it (their children carry the id).
    pub fn child_steps(&self) -> Vec<(String, Gvk)> {
        match self {
            Plan::Child(c) => vec![(c.id.clone(), c.gvk.clone())],
            Plan::ChildSet(c) => vec![(c.child.id.clone(), c.child.gvk.clone())],
            Plan::Sync(_) | Plan::Ref(_) => Vec::new(),
            Plan::If {
                then, otherwise, ..
            } => then
                .iter()
                .chain(otherwise)
                .flat_map(Plan::child_steps)
                .collect(),
            Plan::Finalizer { steps, .. } => steps.iter().flat_map(Plan::child_steps).collect(),
        }
    }

    /// The kinds of the objects the ref steps in it read.
    pub fn ref_kinds(&self) -> Vec<Gvk> {
        match self {
            Plan::Ref(r) => vec![r.gvk.clone()],
            Plan::If {
                then, otherwise, ..
            } => then
                .iter()
                .chain(otherwise)
                .flat_map(Plan::ref_kinds)
                .collect(),
            Plan::Finalizer { steps, .. } => steps.iter().flat_map(Plan::ref_kinds).collect(),
            _ => Vec::new(),
        }
    }
}

/// A definition, compiled and checked.
#[derive(Debug)]
pub struct CompiledDefinition {
    /// The definition's name.
    pub name: String,
    /// Its generation (in a cluster).
    pub generation: Option<i64>,
    /// The reconciled kind.
    pub for_kind: Gvk,
    /// The parent's CRD, when the definition defines it.
    pub crd: Option<Value>,
    /// The steps, in the order they run.
    pub steps: Vec<Plan>,
    /// The condition types `Ready` summarizes.
    pub conditions: Vec<String>,
    /// Whether the definition writes conditions and `observedGeneration` on the parent.
    pub owns_status: bool,
    /// What the checker could not prove safe (errors under `--strict`).
    pub warnings: Vec<DefinitionError>,
    /// The kinds it reads or writes whose group/version the cluster does not serve yet: the
    /// definition waits for them (its templates are checked again when they appear).
    pub not_served: BTreeSet<Gvk>,
    /// KRO's conventions on the instances, for a definition read from an RGD.
    pub kro: Option<KroConventions>,
    /// KRO's custom status conditions, compiled (when the RGD has some).
    pub custom_conditions: Option<Arc<CustomConditions>>,
}

impl CompiledDefinition {
    /// The ids of its top-level child, child-set and ref steps, in the order they run (an
    /// RGD's `status.topologicalOrder`).
    pub fn step_order(&self) -> Vec<String> {
        self.steps
            .iter()
            .filter_map(|plan| match plan {
                Plan::Child(c) => Some(c.id.clone()),
                Plan::ChildSet(c) => Some(c.child.id.clone()),
                Plan::Ref(r) => Some(r.id.clone()),
                _ => None,
            })
            .collect()
    }

    /// The kinds of the children it makes, by step id (every step, nested ones too).
    pub fn child_steps(&self) -> Vec<(String, Gvk)> {
        self.steps.iter().flat_map(Plan::child_steps).collect()
    }

    /// Every kind the definition reads or writes: the parent, children and refs.
    pub fn kinds(&self) -> BTreeSet<Gvk> {
        let mut kinds = BTreeSet::from([self.for_kind.clone()]);
        kinds.extend(self.child_steps().into_iter().map(|(_, gvk)| gvk));
        kinds.extend(self.steps.iter().flat_map(Plan::ref_kinds));
        kinds
    }
}

/// Names dynrec binds, which cannot be step ids (nor can CEL's type names).
const BOUND_BY_DYNREC: [&str; 5] = ["self", "each", "child", "now", "null"];

/// The kinds whose schemas compiling `definition` would use (for [`Schemas::fetch`]).
pub fn kinds_to_check(definition: &ReconcilerDefinition) -> Vec<Gvk> {
    let mut kinds = Vec::new();
    if let Ok(gvk) = Gvk::from_api_version(
        &definition.spec.for_kind.api_version,
        &definition.spec.for_kind.kind,
    ) {
        kinds.push(gvk);
    }
    fn walk(steps: &[Step], kinds: &mut Vec<Gvk>) {
        for step in steps {
            match step {
                Step::Child(c) => kinds.extend(template_kind(&c.template)),
                Step::ChildSet(c) => kinds.extend(template_kind(&c.template)),
                Step::Ref(r) => kinds.extend(Gvk::from_api_version(&r.api_version, &r.kind).ok()),
                Step::If(i) => {
                    walk(&i.then, kinds);
                    walk(&i.otherwise, kinds);
                }
                Step::Finalizer(f) => walk(&f.steps, kinds),
                Step::Sync(_) => {}
            }
        }
    }
    walk(&definition.spec.steps, &mut kinds);
    kinds
}

fn template_kind(template: &Value) -> Option<Gvk> {
    Gvk::from_api_version(template["apiVersion"].as_str()?, template["kind"].as_str()?).ok()
}

/// Compiles `definition`, checking it against `schemas` where they are known.
pub fn compile(
    definition: &ReconcilerDefinition,
    schemas: &Schemas,
) -> Result<CompiledDefinition, DefinitionErrors> {
    compile_at(definition, schemas, &[], &Spellings::default())
}

/// Compiles `definition` as [`compile`] does, its expressions and steps named at their
/// places in what was written: `origins` are path prefixes of the definition and those
/// they stand for (a KRO RGD's), so messages while reconciling name the RGD's paths, and
/// `spellings` the expressions as written, so those messages quote them in the RGD's words.
pub fn compile_at(
    definition: &ReconcilerDefinition,
    schemas: &Schemas,
    origins: &[(String, String)],
    spellings: &Spellings,
) -> Result<CompiledDefinition, DefinitionErrors> {
    let mut compiler = Compiler {
        infer_status: definition.spec.kro.is_some() && definition.spec.schema.is_some(),
        kro: definition.spec.kro.is_some(),
        inferred_status: None,
        origins: origins.to_vec(),
        spellings: spellings.clone(),
        schemas: schemas.clone(),
        errors: Vec::new(),
        warnings: Vec::new(),
        found: Findings::default(),
        not_served: BTreeSet::new(),
        ids: BTreeSet::new(),
    };
    let expected = format!("{GROUP}/{VERSION}");
    if definition.api_version != expected || definition.kind != KIND {
        compiler.error(
            "",
            format!(
                "expected apiVersion {expected:?} and kind {KIND:?}, found {:?} and {:?}",
                definition.api_version, definition.kind
            ),
        );
    }
    let name = definition.metadata.name.clone();
    if name.is_empty() {
        compiler.error("metadata.name", "a definition needs a name");
    } else if !is_label_value(&name) {
        compiler.error(
            "metadata.name",
            format!("{name:?} must be a valid label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit): its children are labelled with it"),
        );
    }
    let for_ref = &definition.spec.for_kind;
    let for_kind = match Gvk::from_api_version(&for_ref.api_version, &for_ref.kind) {
        Ok(gvk) => gvk,
        Err(err) => {
            compiler.error("spec.for", err.to_string());
            return Err(DefinitionErrors(compiler.errors));
        }
    };
    if definition.spec.schema.is_none() {
        compiler.check_kind(&for_kind, "spec.for.kind");
    }
    let crd = definition.spec.schema.as_ref().map(|schema| {
        compiler.schemas.insert(
            for_kind.clone(),
            Schema::of_crd(schema.open_api_v3_schema.clone()),
        );
        super::crd::parent_crd(&for_kind, schema)
    });
    let scope = Scope::default().with("self", Ty::of_optional(compiler.schemas.get(&for_kind)));
    let (steps, scope) = compiler.steps_in(&definition.spec.steps, "spec.steps", scope);
    let custom_conditions = definition
        .spec
        .kro
        .as_ref()
        .filter(|kro| !kro.conditions.is_empty())
        .and_then(|kro| {
            let path = compiler.at("spec.kro.conditions");
            CustomConditions::compile(&kro.conditions, &path, &scope)
                .map_err(|errors| compiler.errors.extend(errors))
                .ok()
        })
        .map(Arc::new);
    let mut conditions: Vec<String> = steps.iter().flat_map(Plan::conditions).collect();
    let mut seen = BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        if !seen.insert(condition.clone()) {
            compiler.error(
                "spec.steps",
                format!(
                    "two steps set the condition {condition:?}; give one a `condition:` of its own"
                ),
            );
        }
        if !is_condition_type(condition) {
            compiler.error(
                format!("spec.steps (condition {i})"),
                format!("{condition:?} is not a valid condition type (letters and digits, starting with a letter)"),
            );
        }
    }
    for (i, extra) in definition.spec.conditions.iter().enumerate() {
        if !is_condition_type(extra) {
            compiler.error(
                format!("spec.conditions[{i}]"),
                format!("{extra:?} is not a valid condition type"),
            );
        }
        conditions.push(extra.clone());
    }
    let mut warnings = said_once(std::mem::take(&mut compiler.found.warnings));
    if definition.spec.strict {
        compiler.errors.append(&mut warnings);
    }
    warnings.append(&mut compiler.warnings);
    if !compiler.errors.is_empty() {
        return Err(DefinitionErrors(compiler.errors));
    }
    let mut crd = crd;
    if let (Some(crd), Some(inferred)) = (&mut crd, compiler.inferred_status.take())
        && let Some(Value::Object(properties)) =
            crd.pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/status/properties")
    {
        properties.extend(inferred);
    }
    let owns_status = definition.spec.owns_status.unwrap_or(crd.is_some());
    Ok(CompiledDefinition {
        name,
        generation: definition.metadata.generation,
        for_kind,
        owns_status,
        crd,
        steps,
        conditions,
        warnings,
        not_served: compiler.not_served,
        kro: definition.spec.kro.clone(),
        custom_conditions,
    })
}

fn is_condition_type(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
}

fn is_label_value(text: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    text.len() <= 63
        && edge(text.chars().next())
        && edge(text.chars().last())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_identifier(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `configMap` → `ConfigMap`.
pub fn upper_camel(id: &str) -> String {
    let mut chars = id.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// What child and child-set steps share, as written.
struct ChildParts<'a> {
    id: &'a str,
    template: &'a Value,
    include_when: &'a [String],
    ready_when: &'a [String],
    condition: &'a Option<String>,
    manager: ManagerKind,
}

struct Compiler {
    /// Whether the generated CRD's status fields take their expressions' types (KRO's).
    infer_status: bool,
    /// Whether the definition has KRO's conventions (a status field that cannot be
    /// computed is left out).
    kro: bool,
    /// The status fields' schemas so inferred.
    inferred_status: Option<serde_json::Map<String, Value>>,
    /// Path prefixes and the places they stand for in what was written.
    origins: Vec<(String, String)>,
    /// The expressions as written, for those the translation renamed.
    spellings: Spellings,
    schemas: Schemas,
    errors: Vec<DefinitionError>,
    /// Kinds not served yet.
    warnings: Vec<DefinitionError>,
    /// Reads that may find nothing at run time, and the bindings the current step needs.
    found: Findings,
    not_served: BTreeSet<Gvk>,
    ids: BTreeSet<String>,
}

impl Compiler {
    /// `path` at its place in what was written (a KRO RGD's path for a translated one).
    fn at(&self, path: &str) -> String {
        super::error::locate_path(path, &self.origins)
    }

    fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(DefinitionError::new(path, message));
    }

    /// An error for a kind its served group/version does not have; a warning for one whose
    /// group/version is not served yet.
    fn check_kind(&mut self, gvk: &Gvk, path: &str) {
        let api_version = gvk.api_version();
        match self.schemas.lookup(gvk) {
            Lookup::NoSuchKind(kinds) => {
                let message = format!(
                    "{api_version} has no kind {:?}; its kinds are: {}",
                    gvk.kind,
                    kinds.join(", ")
                );
                self.error(path, message);
            }
            Lookup::NotServed => {
                self.warnings.push(DefinitionError::new(
                    path,
                    format!(
                        "the cluster does not serve {api_version} (yet), so {} is not checked: the definition waits for it (KindNotServed) and is checked when it appears",
                        gvk.kind
                    ),
                ));
                self.not_served.insert(gvk.clone());
            }
            Lookup::Found(_) | Lookup::Unknown => {}
        }
    }

    fn keep<T>(&mut self, result: Result<T, DefinitionError>) -> Option<T> {
        result.map_err(|e| self.errors.push(e)).ok()
    }

    /// Compiles a list of steps in the order of their bindings.
    fn steps(&mut self, steps: &[Step], path: &str, scope: Scope) -> Vec<Plan> {
        self.steps_in(steps, path, scope).0
    }

    /// The plans of `steps`, and the scope after them (every step's binding).
    fn steps_in(&mut self, steps: &[Step], path: &str, mut scope: Scope) -> (Vec<Plan>, Scope) {
        let order = match order_by_bindings(steps, &scope) {
            Ok(order) => order,
            Err(cycle) => {
                self.error(
                    path,
                    format!("cycle between bindings: {}", cycle.join(" -> ")),
                );
                return (Vec::new(), scope);
            }
        };
        let mut plans = Vec::new();
        let mut child_conditions: BTreeMap<String, String> = BTreeMap::new();
        for index in order {
            let step = &steps[index];
            let waits_for: Vec<(String, String)> = reads(step)
                .into_iter()
                .filter_map(|id| Some((id.clone(), child_conditions.get(&id)?.clone())))
                .collect();
            let step_path = format!("{path}[{index}].{}", step.kind());
            if let Some(id) = step.id() {
                self.check_id(id, &format!("{step_path}.id"));
            }
            let planned = match step {
                Step::Child(c) => {
                    let outer = std::mem::take(&mut self.found.needs);
                    let planned = self.child(c, &step_path, &scope.excluding_dependents());
                    let needs = std::mem::replace(&mut self.found.needs, outer);
                    planned.map(|mut p| {
                        p.depends_on = needs.into_iter().collect();
                        p.waits_for = waits_for;
                        child_conditions.insert(c.id.clone(), p.condition.clone());
                        let ty = Ty::of_optional(self.schemas.get(&p.gvk));
                        match c.include_when.is_empty() && p.depends_on.is_empty() {
                            true => {
                                scope.bind(&c.id, ty);
                                scope.know(set_by_template(&c.id, &c.template));
                            }
                            false => scope.bind_maybe_null(&c.id, ty),
                        }
                        Plan::Child(Arc::new(p))
                    })
                }
                Step::ChildSet(c) => {
                    let outer = std::mem::take(&mut self.found.needs);
                    let planned = self.child_set(c, &step_path, &scope.excluding_dependents());
                    let needs = std::mem::replace(&mut self.found.needs, outer);
                    planned.map(|mut p| {
                        p.child.depends_on = needs.into_iter().collect();
                        p.child.waits_for = waits_for;
                        child_conditions.insert(c.id.clone(), p.child.condition.clone());
                        let item = Ty::of_optional(self.schemas.get(&p.child.gvk));
                        scope.bind(&c.id, Ty::List(Box::new(item)));
                        Plan::ChildSet(Arc::new(p))
                    })
                }
                Step::Sync(s) => self
                    .sync(s, &step_path, &scope)
                    .map(|p| Plan::Sync(Arc::new(p))),
                Step::Ref(r) => self.reference(r, &step_path, &scope).map(|p| {
                    let object = Ty::of_optional(self.schemas.get(&p.gvk));
                    let ty = if p.selects {
                        Ty::List(Box::new(object))
                    } else {
                        object
                    };
                    match p.optional {
                        true => scope.bind_maybe_null(&r.id, ty),
                        false => scope.bind(&r.id, ty),
                    }
                    child_conditions.insert(r.id.clone(), p.condition.clone());
                    Plan::Ref(Arc::new(p))
                }),
                Step::If(i) => {
                    let condition_path = self.at(&format!("{step_path}.condition"));
                    let condition = self.keep(condition(&i.condition, &condition_path));
                    if let Some(c) = &condition {
                        let checked = check_condition(c, &scope, &mut self.found);
                        self.keep(checked);
                    }
                    let (then_scope, else_scope) = match &condition {
                        Some(c) => (scope.given(c, true), scope.given(c, false)),
                        None => (scope.clone(), scope.clone()),
                    };
                    let then = self.steps(&i.then, &format!("{step_path}.then"), then_scope);
                    let otherwise =
                        self.steps(&i.otherwise, &format!("{step_path}.else"), else_scope);
                    condition.map(|condition| Plan::If {
                        path: self.at(&step_path),
                        condition,
                        then,
                        otherwise,
                    })
                }
                Step::Finalizer(f) => {
                    if !f.name.contains('/') {
                        self.error(
                            format!("{step_path}.name"),
                            format!(
                                "{:?} is not a qualified finalizer name (e.g. example.com/cleanup)",
                                f.name
                            ),
                        );
                    }
                    let steps = self.steps(&f.steps, &format!("{step_path}.steps"), scope.clone());
                    Some(Plan::Finalizer {
                        name: f.name.clone(),
                        steps,
                    })
                }
            };
            if planned.is_none()
                && let Some(id) = step.id()
                && !scope.has(id)
            {
                // A step that failed to compile is reported once: what reads it is
                // checked as reading a value of unknown type.
                scope.bind(id, Ty::Dyn);
            }
            plans.extend(planned);
        }
        (plans, scope)
    }

    fn check_id(&mut self, id: &str, path: &str) {
        if !is_identifier(id) {
            self.error(
                path,
                format!(
                    "{id:?} is not an identifier (letters, digits and _, not starting with a digit)"
                ),
            );
        } else if BOUND_BY_DYNREC.contains(&id) || super::check::TYPE_NAMES.contains(&id) {
            self.error(path, format!("{id:?} is reserved"));
        } else if !self.ids.insert(id.to_owned()) {
            self.error(path, format!("the id {id:?} is used by another step"));
        }
    }

    fn conditions(&mut self, texts: &[String], path: &str, scope: &Scope) -> Vec<Expression> {
        let mut expressions = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let path = self.at(&format!("{path}[{i}]"));
            if let Some(mut e) = self.keep(condition(text, &path)) {
                self.spellings.spell([&mut e]);
                let checked = check_condition(&e, scope, &mut self.found);
                if self.keep(checked).is_some() {
                    expressions.push(e);
                }
            }
        }
        expressions
    }

    fn child_template(
        &mut self,
        template: &Value,
        path: &str,
        scope: &Scope,
    ) -> Option<(Gvk, Template)> {
        let template_path = self.at(&format!("{path}.template"));
        let Some(gvk) = template_kind(template) else {
            self.error(
                &template_path,
                "a template needs apiVersion and kind as plain strings (no ${...})",
            );
            return None;
        };
        if template
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .is_none()
        {
            self.error(
                format!("{template_path}.metadata.name"),
                "a child needs a name (which may hold ${...})",
            );
        }
        self.check_kind(&gvk, &format!("{template_path}.kind"));
        let mut compiled = self.keep(Template::compile(template, &template_path))?;
        self.spellings.spell(compiled.expressions_mut());
        let schema = self.schemas.get(&gvk).cloned();
        let mut found = Findings::default();
        check_template(
            &compiled,
            schema.as_ref(),
            &template_path,
            scope,
            &mut found,
        );
        let failed = !found.errors.is_empty();
        self.errors.extend(found.errors);
        self.found.warnings.extend(found.warnings);
        self.found.needs.extend(found.needs);
        (!failed).then_some((gvk, compiled))
    }

    fn child(&mut self, step: &ChildStep, path: &str, scope: &Scope) -> Option<ChildPlan> {
        let parts = ChildParts {
            id: &step.id,
            template: &step.template,
            include_when: &step.include_when,
            ready_when: &step.ready_when,
            condition: &step.condition,
            manager: step.manager,
        };
        self.child_plan(parts, path, scope, scope)
    }

    /// The plan of one child: `includeWhen` is checked in `scope`, the template in
    /// `template_scope` (which binds `each` in a child set).
    fn child_plan(
        &mut self,
        parts: ChildParts<'_>,
        path: &str,
        scope: &Scope,
        template_scope: &Scope,
    ) -> Option<ChildPlan> {
        let include_when =
            self.conditions(parts.include_when, &format!("{path}.includeWhen"), scope);
        // What `includeWhen` tests is known to hold where the child exists.
        let given = |scope: &Scope| {
            include_when
                .iter()
                .fold(scope.clone(), |scope, e| scope.given(e, true))
        };
        let (gvk, template) = self.child_template(parts.template, path, &given(template_scope))?;
        let child = Ty::of_optional(self.schemas.get(&gvk));
        let ready_scope = given(scope)
            .with("child", child.clone())
            .with(parts.id, child);
        let ready_when =
            self.conditions(parts.ready_when, &format!("{path}.readyWhen"), &ready_scope);
        Some(ChildPlan {
            id: parts.id.to_owned(),
            path: self.at(path),
            gvk,
            object: ObjectTemplate::new(&template),
            template,
            include_when,
            ready_when,
            condition: parts
                .condition
                .clone()
                .unwrap_or_else(|| format!("{}Ready", upper_camel(parts.id))),
            manager: parts.manager,
            depends_on: Vec::new(),
            waits_for: Vec::new(),
        })
    }

    fn child_set(
        &mut self,
        step: &ChildSetStep,
        path: &str,
        scope: &Scope,
    ) -> Option<ChildSetPlan> {
        let for_each_path = self.at(&format!("{path}.forEach"));
        let mut for_each = self.keep(condition(&step.for_each, &for_each_path));
        self.spellings.spell(for_each.as_mut());
        let item = match &for_each {
            Some(for_each) => {
                let checked = check_list(for_each, scope, &mut self.found);
                self.keep(checked).unwrap_or(Ty::Dyn)
            }
            None => Ty::Dyn,
        };
        let item_scope = scope.with("each", item);
        let item_id_path = self.at(&format!("{path}.itemId"));
        let item_id = self.keep(Text::parse(&step.item_id, &item_id_path))?;
        for e in item_id.expressions() {
            let checked = super::check::check(e, &item_scope, &mut self.found);
            self.keep(checked);
        }
        let parts = ChildParts {
            id: &step.id,
            template: &step.template,
            include_when: &step.include_when,
            ready_when: &step.ready_when,
            condition: &step.condition,
            manager: step.manager,
        };
        let child = self.child_plan(parts, path, scope, &item_scope)?;
        Some(ChildSetPlan {
            child,
            for_each: for_each?,
            item_id,
        })
    }

    fn sync(&mut self, step: &SyncStep, path: &str, scope: &Scope) -> Option<SyncPlan> {
        let status_path = self.at(&format!("{path}.status"));
        let mut status = self.keep(Template::compile(&step.status, &status_path))?;
        self.spellings.spell(status.expressions_mut());
        let status_schema = match scope.self_schema() {
            Some(schema) => match schema.field("status") {
                super::schema::Field::Known(s) => Some(s),
                _ => None,
            },
            None => None,
        };
        let mut found = Findings::default();
        check_template(
            &status,
            status_schema.as_ref(),
            &status_path,
            scope,
            &mut found,
        );
        let failed = !found.errors.is_empty();
        self.errors.extend(found.errors);
        // KRO leaves out a status field that cannot be computed: no read there fails.
        if !self.kro {
            self.found.warnings.extend(found.warnings);
        }
        self.found.needs.extend(found.needs);
        if !step.status.is_object() {
            self.error(&status_path, "status must be a map of fields");
            return None;
        }
        if self.infer_status && !failed {
            self.inferred_status = inferred_properties(&status, scope);
        }
        (!failed).then(|| SyncPlan {
            id: step.id.clone(),
            path: self.at(path),
            status,
            condition: step
                .condition
                .clone()
                .unwrap_or_else(|| format!("{}Synced", upper_camel(&step.id))),
        })
    }

    fn reference(&mut self, step: &RefStep, path: &str, scope: &Scope) -> Option<RefPlan> {
        let gvk = match Gvk::from_api_version(&step.api_version, &step.kind) {
            Ok(gvk) => gvk,
            Err(err) => {
                self.error(format!("{path}.apiVersion"), err.to_string());
                return None;
            }
        };
        self.check_kind(&gvk, &format!("{path}.kind"));
        let text = |value: &str, field: &str, this: &mut Self| -> Option<Text> {
            let text_path = this.at(&format!("{path}.{field}"));
            let mut text = this.keep(Text::parse(value, &text_path))?;
            this.spellings.spell(text.expressions_mut());
            for e in text.expressions() {
                let checked = super::check::check(e, scope, &mut this.found);
                this.keep(checked);
            }
            Some(text)
        };
        let name = match &step.name {
            Some(name) => Some(text(name, "name", self)?),
            None => None,
        };
        let namespace = match &step.namespace {
            Some(ns) => Some(text(ns, "namespace", self)?),
            None => None,
        };
        let mut match_labels = Vec::new();
        if let Some(selector) = &step.selector {
            for (key, value) in &selector.match_labels {
                match_labels.push((
                    key.clone(),
                    text(value, &format!("selector.matchLabels[{key:?}]"), self)?,
                ));
            }
        }
        match (&name, &step.selector) {
            (None, None) => self.error(path, "a ref needs a name or a selector"),
            (Some(_), Some(_)) => self.error(path, "a ref takes a name or a selector, not both"),
            _ => {}
        }
        Some(RefPlan {
            id: step.id.clone(),
            path: self.at(path),
            gvk,
            name,
            namespace,
            match_labels,
            selects: step.selector.is_some(),
            optional: step.optional,
            condition: step
                .condition
                .clone()
                .unwrap_or_else(|| format!("{}Resolved", upper_camel(&step.id))),
        })
    }
}

/// The order in which `steps` run: each after the sibling steps whose bindings it reads,
/// otherwise as written. Err holds a cycle of ids.
fn order_by_bindings(steps: &[Step], scope: &Scope) -> Result<Vec<usize>, Vec<String>> {
    let ids: BTreeMap<&str, usize> = steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.id().map(|id| (id, i)))
        .collect();
    let depends: Vec<BTreeSet<usize>> = steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            reads(step)
                .iter()
                .filter(|name| !scope.has(name))
                .filter_map(|name| ids.get(name.as_str()).copied())
                .filter(|&j| j != i)
                .collect()
        })
        .collect();
    let mut done = vec![false; steps.len()];
    let mut order = Vec::new();
    while order.len() < steps.len() {
        let next = (0..steps.len()).find(|&i| !done[i] && depends[i].iter().all(|&j| done[j]));
        match next {
            Some(i) => {
                done[i] = true;
                order.push(i);
            }
            None => {
                // Follow unmet dependencies from a waiting step until one repeats.
                let mut path = Vec::new();
                let mut current = (0..steps.len()).find(|&i| !done[i]).unwrap_or(0);
                while !path.contains(&current) {
                    path.push(current);
                    current = depends[current]
                        .iter()
                        .copied()
                        .find(|&j| !done[j])
                        .unwrap_or(current);
                }
                let start = path.iter().position(|&i| i == current).unwrap_or(0);
                let mut cycle: Vec<String> = path[start..]
                    .iter()
                    .map(|&i| steps[i].id().unwrap_or("?").to_owned())
                    .collect();
                cycle.push(steps[current].id().unwrap_or("?").to_owned());
                return Err(cycle);
            }
        }
    }
    Ok(order)
}

/// The names a step's expressions read (those of nested steps too).
fn reads(step: &Step) -> BTreeSet<String> {
    let mut texts: Vec<String> = Vec::new();
    let mut values: Vec<&Value> = Vec::new();
    match step {
        Step::Child(c) => {
            texts.extend(c.include_when.iter().cloned());
            values.push(&c.template);
        }
        Step::ChildSet(c) => {
            texts.extend(c.include_when.iter().cloned());
            texts.push(c.for_each.clone());
            values.push(&c.template);
            return names_with(texts, values, [&c.item_id]);
        }
        Step::Sync(s) => values.push(&s.status),
        Step::Ref(r) => {
            let labels = r.selector.iter().flat_map(|s| s.match_labels.values());
            return names_with(
                texts,
                values,
                r.name.iter().chain(&r.namespace).chain(labels),
            );
        }
        Step::If(i) => {
            texts.push(i.condition.clone());
            return i
                .then
                .iter()
                .chain(&i.otherwise)
                .flat_map(reads)
                .chain(names_in_text(&i.condition))
                .collect();
        }
        Step::Finalizer(f) => return f.steps.iter().flat_map(reads).collect(),
    }
    names_with(texts, values, [])
}

/// The names read by conditions (`texts`, `${}` optional), template values and template
/// strings (`${}` required: a plain string reads nothing, even one that would parse as
/// CEL, like `web-app.example.com`).
fn names_with<'a>(
    texts: Vec<String>,
    values: Vec<&Value>,
    templates: impl IntoIterator<Item = &'a String>,
) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = texts.iter().flat_map(|t| names_in_text(t)).collect();
    names.extend(templates.into_iter().flat_map(|t| names_in_template(t)));
    for value in values {
        collect_value_names(value, &mut names);
    }
    names
}

/// The free names of the `${}` expressions of a template string.
fn names_in_template(text: &str) -> Vec<String> {
    Text::parse(text, "")
        .map(|parsed| {
            parsed
                .expressions()
                .iter()
                .flat_map(|e| e.variables())
                .collect()
        })
        .unwrap_or_default()
}

fn collect_value_names(value: &Value, names: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => names.extend(names_in_template(s)),
        Value::Array(items) => items.iter().for_each(|v| collect_value_names(v, names)),
        Value::Object(fields) => fields.values().for_each(|v| collect_value_names(v, names)),
        _ => {}
    }
}

/// The free names of the expressions in `text` (a condition or a `${}` string); text that
/// does not compile reads nothing (its error is reported where it is compiled).
fn names_in_text(text: &str) -> Vec<String> {
    if let Ok(parsed) = Text::parse(text, "")
        && !matches!(parsed, Text::Literal(_))
    {
        return parsed
            .expressions()
            .iter()
            .flat_map(|e| e.variables())
            .collect();
    }
    condition(text, "")
        .map(|e| e.variables())
        .unwrap_or_default()
}
