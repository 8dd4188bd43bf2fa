//! Reading definitions named on the command line.

use std::path::{Path, PathBuf};

use dynrec::definitions::{CompiledDefinition, DefinitionErrors, Loaded, StartError, load_dir};

/// The definitions of every file or directory in `paths`; all errors at once. A path that
/// holds none is said on stderr (its other documents are not used).
pub fn load(paths: &[PathBuf]) -> Result<Vec<Loaded>, DefinitionErrors> {
    let mut loaded = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        match load_dir(path) {
            Ok(found) if found.is_empty() => eprintln!("warning: {}", nothing_in(path)),
            Ok(found) => loaded.extend(found),
            Err(DefinitionErrors(found)) => errors.extend(found),
        }
    }
    match errors.is_empty() {
        true => Ok(loaded),
        false => Err(DefinitionErrors(errors)),
    }
}

/// Why `path`, given with -f, adds nothing: the kinds it holds instead, and what to do with
/// a CRD (-f does not install CRDs).
fn nothing_in(path: &Path) -> String {
    let kinds: Vec<String> = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_saphyr::from_multiple::<serde_json::Value>(&text).ok())
        .unwrap_or_default()
        .iter()
        .filter_map(|document| document["kind"].as_str().map(str::to_owned))
        .collect();
    let mut said = format!(
        "{}: no ReconcilerDefinition or ResourceGraphDefinition in it, so -f takes nothing from it",
        path.display()
    );
    if !kinds.is_empty() {
        said += &format!(" (it holds {})", kinds.join(", "));
    }
    if kinds.iter().any(|kind| kind == "CustomResourceDefinition") {
        said += "; -f does not install CRDs: apply them to the cluster (kubectl apply -f), or \
                 for dynrec test list them under a case's apiResources";
    }
    said
}

/// Prints what the checker of `compiled` warns about, on stderr.
pub fn print_warnings(compiled: &CompiledDefinition, source: &str) {
    for warning in &compiled.warnings {
        eprintln!("warning: {source}: {warning}");
    }
}

/// `error` starting `definition`, with what it does not say itself: the definition's name,
/// and its file when the error does not name it (`starting definition "web" of web.yaml
/// (document 1): cannot install …`, `starting definition "web": web.yaml (document 1): spec…`).
pub fn starting_error(definition: &Loaded, error: StartError) -> anyhow::Error {
    let name = &definition.definition.metadata.name;
    let context = match error.names_its_source() {
        true => format!("starting definition {name:?}"),
        false => format!("starting definition {name:?} of {}", definition.source),
    };
    anyhow::Error::new(error).context(context)
}
