//! Definitions loaded from files, shown in the cluster: `dynrec run -f` applies each as a
//! `ReconcilerDefinition` annotated with the file it comes from, so `kubectl get rd` lists
//! every running definition with its status. The file stays the source of truth: an edit
//! made in the cluster is reverted.

use std::path::Path;

use kube::api::DynamicObject;
use serde_json::json;

use super::load::Loaded;
use super::model::{GROUP, KIND, VERSION};

/// The annotation naming the file (and document) a definition in the cluster is loaded
/// from.
pub const SOURCE_ANNOTATION: &str = "dynrec.dev/source";

/// Where a definition was loaded from, as the annotation says it: the file's absolute path
/// (when the source names a file that exists) and the document.
pub fn source_of(loaded: &Loaded) -> String {
    let (file, document) = match loaded.source.rsplit_once(" (document ") {
        Some((file, rest)) => (file, format!(" (document {rest}")),
        None => (loaded.source.as_str(), String::new()),
    };
    match std::path::absolute(Path::new(file)) {
        Ok(path) if path.exists() => format!("{}{document}", path.display()),
        _ => loaded.source.clone(),
    }
}

/// The `ReconcilerDefinition` object of a definition loaded from a file.
pub fn cluster_object(loaded: &Loaded) -> Result<DynamicObject, serde_json::Error> {
    let object = json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {
            "name": loaded.definition.metadata.name,
            "annotations": {SOURCE_ANNOTATION: source_of(loaded)},
        },
        "spec": serde_json::to_value(&loaded.definition.spec)?,
    });
    serde_json::from_value(object)
}

/// The file a definition in the cluster says it is loaded from, if it says so.
pub fn annotated_source(object: &DynamicObject) -> Option<&str> {
    object
        .metadata
        .annotations
        .as_ref()?
        .get(SOURCE_ANNOTATION)
        .map(String::as_str)
}
