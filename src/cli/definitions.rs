//! Reading definitions named on the command line.

use std::path::PathBuf;

use dynrec::definitions::{CompiledDefinition, DefinitionErrors, Loaded, load_dir};

/// The definitions of every file or directory in `paths`; all errors at once.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Loaded>, DefinitionErrors> {
    let mut loaded = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        match load_dir(path) {
            Ok(found) => loaded.extend(found),
            Err(DefinitionErrors(found)) => errors.extend(found),
        }
    }
    match errors.is_empty() {
        true => Ok(loaded),
        false => Err(DefinitionErrors(errors)),
    }
}

/// Prints what the checker of `compiled` warns about, on stderr.
pub fn print_warnings(compiled: &CompiledDefinition, source: &str) {
    for warning in &compiled.warnings {
        eprintln!("warning: {source}: {warning}");
    }
}
