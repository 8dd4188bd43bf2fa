//! What a compiled definition reads of the objects of its child kinds, so that their shared
//! caches keep only that ([`CachedFields`]): what its expressions read of each child (by the
//! step's id, and as `child` in its `readyWhen`), and what the child object manager compares
//! (the fields the template writes, whole, with the labels, which also tell a step's children
//! from others, and the annotations where the template or a child set's item id writes
//! them; all of the metadata for server-side apply, which reads its managedFields entry).
//!
//! Kinds it also reads otherwise (as its parent or through a ref step) are read whole, and
//! so are the children of a KRO instance, whose expressions see children by other names.

use std::collections::BTreeMap;

use super::compile::{ChildPlan, CompiledDefinition, Plan};
use super::expr::{Expression, Template};
use super::model::ManagerKind;
use crate::client::CachedFields;
use crate::object::Gvk;

/// The fields the definition reads of each kind it makes children of (see the module doc).
pub(crate) fn child_kind_reads(definition: &CompiledDefinition) -> Vec<(Gvk, CachedFields)> {
    let children = child_plans(&definition.steps);
    if definition.kro.is_some() {
        let whole = children
            .iter()
            .map(|(c, _)| (c.gvk.clone(), CachedFields::Whole));
        return whole.collect();
    }
    let expressions = expressions(&definition.steps);
    let mut reads: BTreeMap<Gvk, CachedFields> = BTreeMap::new();
    for (child, in_set) in children {
        let fields = child_reads(child, in_set, &expressions);
        match reads.get_mut(&child.gvk) {
            Some(known) => known.union(&fields),
            None => drop(reads.insert(child.gvk.clone(), fields)),
        }
    }
    let whole = std::iter::once(definition.for_kind.clone())
        .chain(definition.steps.iter().flat_map(Plan::ref_kinds));
    for gvk in whole {
        if let Some(fields) = reads.get_mut(&gvk) {
            *fields = CachedFields::Whole;
        }
    }
    reads.into_iter().collect()
}

/// What the definition reads of one child step's children (`in_set`: of a child set's).
fn child_reads(child: &ChildPlan, in_set: bool, expressions: &[&Expression]) -> CachedFields {
    let Template::Map(written) = &child.template else {
        return CachedFields::Whole;
    };
    let mut fields = CachedFields::metadata();
    fields.add(&["metadata", "labels"]);
    let metadata = written.iter().find(|(name, _)| name == "metadata");
    let writes_annotations = match metadata.map(|(_, template)| template) {
        Some(Template::Map(metadata)) => metadata.iter().any(|(name, _)| name == "annotations"),
        Some(_) => true,
        None => false,
    };
    match child.manager {
        ManagerKind::Apply => fields.add(&["metadata"]),
        ManagerKind::Update if writes_annotations || in_set => {
            fields.add(&["metadata", "annotations"]);
        }
        ManagerKind::Update => {}
    }
    let body = written.iter().map(|(name, _)| name.as_str());
    for name in body.filter(|n| !["apiVersion", "kind", "metadata"].contains(n)) {
        fields.add(&[name]);
    }
    let ready_when = child
        .ready_when
        .iter()
        .filter_map(|e| e.paths_read("child"));
    let anywhere = expressions.iter().filter_map(|e| e.paths_read(&child.id));
    for path in ready_when.chain(anywhere).flatten() {
        let segments: Vec<&str> = path.iter().map(String::as_str).collect();
        fields.add(&segments);
    }
    fields
}

/// The child plans of the steps, nested ones too, each with whether it is a child set's.
fn child_plans(steps: &[Plan]) -> Vec<(&ChildPlan, bool)> {
    steps
        .iter()
        .flat_map(|step| match step {
            Plan::Child(child) => vec![(child.as_ref(), false)],
            Plan::ChildSet(set) => vec![(&set.child, true)],
            Plan::Sync(_) | Plan::Ref(_) => Vec::new(),
            Plan::If {
                then, otherwise, ..
            } => [child_plans(then), child_plans(otherwise)].concat(),
            Plan::Finalizer { steps, .. } => child_plans(steps),
        })
        .collect()
}

/// Every expression of the steps.
pub(super) fn expressions(steps: &[Plan]) -> Vec<&Expression> {
    steps
        .iter()
        .flat_map(|step| match step {
            Plan::Child(c) => child_expressions(c),
            Plan::ChildSet(set) => {
                let mut found = child_expressions(&set.child);
                found.push(&set.for_each);
                found.extend(set.item_id.expressions());
                found
            }
            Plan::Sync(sync) => sync.status.expressions(),
            Plan::Ref(r) => {
                let texts = r.name.iter().chain(&r.namespace);
                let labels = r.match_labels.iter().map(|(_, text)| text);
                texts.chain(labels).flat_map(|t| t.expressions()).collect()
            }
            Plan::If {
                condition,
                then,
                otherwise,
                ..
            } => {
                let mut found = vec![condition];
                found.extend(expressions(then));
                found.extend(expressions(otherwise));
                found
            }
            Plan::Finalizer { steps, .. } => expressions(steps),
        })
        .collect()
}

/// The expressions of a child step: its template's, `includeWhen` and `readyWhen`.
fn child_expressions(child: &ChildPlan) -> Vec<&Expression> {
    let mut found = child.template.expressions();
    found.extend(child.include_when.iter().chain(&child.ready_when));
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definitions::{Schemas, compile, parse_documents};

    fn reads_of(yaml: &str) -> Vec<(Gvk, CachedFields)> {
        let loaded = parse_documents(yaml, "test.yaml").expect("a definition");
        let compiled = compile(&loaded[0].definition, &Schemas::default()).expect("compiles");
        child_kind_reads(&compiled)
    }

    fn config_map() -> Gvk {
        Gvk::new("", "v1", "ConfigMap")
    }

    #[test]
    fn the_widgets_definition_reads_the_labels_and_data_it_writes() {
        let widgets = include_str!("../../examples/definitions/widgets.yaml");
        let expected = CachedFields::metadata()
            .with("metadata.labels")
            .with("data");
        assert_eq!(reads_of(widgets), [(config_map(), expected)]);
    }

    #[test]
    fn expressions_add_what_they_read_and_a_ref_of_the_kind_reads_it_whole() {
        let definition = |extra: &str| {
            format!(
                r#"apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata: {{name: notes}}
spec:
  for: {{apiVersion: example.com/v1, kind: Note}}
  schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
  steps:
  - child:
      id: note
      readyWhen: ["${{child.metadata.annotations.ok == 'yes'}}"]
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: "${{self.metadata.name}}"}}
  - sync:
      status: {{x: "${{note.data.x}}"}}
{extra}"#
            )
        };
        let expected = CachedFields::metadata().with("metadata").with("data.x");
        assert_eq!(reads_of(&definition("")), [(config_map(), expected)]);
        let with_ref = definition(
            "  - ref: {id: other, apiVersion: v1, kind: ConfigMap, name: \"${self.metadata.name}\"}\n",
        );
        assert_eq!(reads_of(&with_ref), [(config_map(), CachedFields::Whole)]);
    }
}
