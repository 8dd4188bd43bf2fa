//! `dynrec convert kro`: the ReconcilerDefinition an RGD runs as, in YAML, with comments
//! saying where its semantics differ from KRO's, for users moving to the native format.

use serde_json::Value;

use super::model::ResourceGraphDefinition;
use super::translate::{parse_rgd, translate};
use crate::definitions::{DefinitionError, DefinitionErrors};

/// The ReconcilerDefinition of every RGD of a file's `documents` (other kinds are
/// skipped), each a commented YAML document.
pub fn convert(documents: &[Value], source: &str) -> Result<String, DefinitionErrors> {
    let mut out = String::new();
    let mut errors = Vec::new();
    for (index, document) in documents.iter().cloned().enumerate() {
        if document["kind"].as_str() != Some(super::model::KIND) {
            continue;
        }
        let where_ = format!("{source} (document {})", index + 1);
        let converted = parse_rgd(document)
            .map_err(DefinitionErrors::from)
            .and_then(|rgd| Ok((translate(&rgd)?, rgd)));
        match converted {
            Ok((translated, rgd)) => {
                let yaml = serde_saphyr::to_string(&translated.definition).map_err(|e| {
                    DefinitionErrors::from(
                        DefinitionError::new("", e.to_string()).in_source(&where_),
                    )
                })?;
                out.push_str(&header(&rgd, &where_));
                out.push_str("---\n");
                out.push_str(&yaml);
            }
            Err(DefinitionErrors(found)) => {
                errors.extend(found.into_iter().map(|e| e.in_source(&where_)));
            }
        }
    }
    match errors.is_empty() {
        true => Ok(out),
        false => Err(DefinitionErrors(errors)),
    }
}

/// The comments before a converted RGD: where it came from and what differs.
fn header(rgd: &ResourceGraphDefinition, source: &str) -> String {
    let resources = &rgd.spec.resources;
    let mut notes = vec![
        "expressions read the instance as `self` (KRO's `schema`), a resource's own id in readyWhen as `child`".to_owned(),
        "spec.schema is the openAPIV3Schema of the CRD KRO generates from the SimpleSchema".to_owned(),
        "spec.kro keeps KRO's conventions on instances (finalizer kro.run/finalizer, kro.run labels, status.state, observedGeneration in conditions, children deleted in reverse order); without it an instance gets dynrec's (Ready and a condition a step, children deleted by ownerReference)".to_owned(),
        "conditions are dynrec's: {Id}Ready a resource, {Id}Resolved an externalRef, and Ready (KRO's InstanceManaged, GraphResolved and ResourcesReady are not written)".to_owned(),
    ];
    if resources.iter().any(|r| !r.for_each.is_empty()) {
        notes.push("a forEach resource is a childSet: its items are the cartesian product of the dimensions (the first the outer loop), an item is `each` (with several dimensions, a map of the iterators: `each.<name>`), its id is the template's metadata.name (namespace/name when the template sets a namespace), and with spec.kro each item is labelled kro.run/collection-index and kro.run/collection-size".to_owned());
    }
    if resources.iter().any(|r| r.external_ref.is_some()) {
        notes.push("an externalRef is a ref step: a missing object makes {Id}Resolved and Ready False until it exists".to_owned());
    }
    if rgd
        .spec
        .schema
        .status
        .as_object()
        .is_some_and(|s| !s.is_empty())
    {
        notes.push("schema.status is a sync step (condition StatusSynced); with spec.kro a field that cannot be computed yet is left out as in KRO, without it the step fails until it can be".to_owned());
    }
    let mut text = format!(
        "# ResourceGraphDefinition {:?} ({source}), converted by `dynrec convert kro`.\n# Where the semantics differ from KRO's:\n",
        rgd.name()
    );
    for note in notes {
        text.push_str(&format!("# - {note}\n"));
    }
    text
}
