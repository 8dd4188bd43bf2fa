//! Reads definitions from YAML or JSON files (several documents a file, several files a
//! directory); a field that is unknown or of the wrong type is an error naming its path.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::error::{DefinitionError, DefinitionErrors};
use super::model::{KIND, ReconcilerDefinition, STEP_KINDS};

/// A definition and where it came from.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The file (and document) or cluster object it was read from.
    pub source: String,
    /// The definition.
    pub definition: ReconcilerDefinition,
    /// For a definition read from a KRO ResourceGraphDefinition: the prefixes of its paths
    /// and the RGD paths they stand for (its errors name the RGD's).
    pub origins: Vec<(String, String)>,
    /// For a definition read from a KRO ResourceGraphDefinition: its expressions as
    /// written (its messages quote those, not their translation).
    pub spellings: crate::definitions::kro::Spellings,
}

impl Loaded {
    /// A definition read as written (not translated).
    pub fn new(source: impl Into<String>, definition: ReconcilerDefinition) -> Self {
        Self {
            source: source.into(),
            definition,
            origins: Vec::new(),
            spellings: Default::default(),
        }
    }

    /// An error of this definition at its place in what was written, and its source.
    pub fn locate(&self, error: DefinitionError) -> DefinitionError {
        self.as_written(error).in_source(&self.source)
    }

    /// An error of this definition at its place in what was written, in its words (a KRO
    /// RGD's paths and expressions).
    pub fn as_written(&self, error: DefinitionError) -> DefinitionError {
        let located = crate::definitions::kro::locate(error, &self.origins);
        self.spellings.respell(located)
    }
}

/// Whether a document is a KRO ResourceGraphDefinition.
fn is_rgd(document: &Value) -> bool {
    document["kind"].as_str() == Some(crate::definitions::kro::KIND)
        && document["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("kro.run/"))
}

/// A KRO ResourceGraphDefinition (its JSON form), as the definition it runs as.
pub fn parse_rgd_value(value: Value, source: &str) -> Result<Loaded, DefinitionErrors> {
    let in_source = |DefinitionErrors(errors): DefinitionErrors| {
        DefinitionErrors(errors.into_iter().map(|e| e.in_source(source)).collect())
    };
    let rgd = crate::definitions::kro::parse_rgd(value).map_err(|e| in_source(e.into()))?;
    let translated = crate::definitions::kro::translate(&rgd).map_err(in_source)?;
    let spellings = crate::definitions::kro::Spellings::of(&rgd, &translated);
    Ok(Loaded {
        source: source.to_owned(),
        definition: translated.definition,
        origins: translated.origins,
        spellings,
    })
}

/// Parses every `ReconcilerDefinition` and KRO `ResourceGraphDefinition` document of
/// `text` (other kinds are skipped).
pub fn parse_documents(text: &str, source: &str) -> Result<Vec<Loaded>, DefinitionErrors> {
    let documents = yaml_documents(text, source)
        .map_err(|err| DefinitionError::new("", format!("not YAML: {err}")).in_source(source))?;
    parse_values(documents, source)
}

/// As [`parse_documents`], of a file's documents already read.
pub fn parse_values(documents: Vec<Value>, source: &str) -> Result<Vec<Loaded>, DefinitionErrors> {
    let mut loaded = Vec::new();
    let mut errors = Vec::new();
    for (index, document) in documents.into_iter().enumerate() {
        if document.is_null() {
            continue;
        }
        let where_ = format!("{source} (document {})", index + 1);
        if is_rgd(&document) {
            match parse_rgd_value(document, &where_) {
                Ok(found) => loaded.push(found),
                Err(DefinitionErrors(found)) => errors.extend(found),
            }
            continue;
        }
        if document["kind"].as_str() != Some(KIND) {
            tracing::debug!(source = %where_, kind = ?document["kind"], "not a ReconcilerDefinition; skipped");
            continue;
        }
        match parse_value(document) {
            Ok(definition) => loaded.push(Loaded::new(where_, definition)),
            Err(err) => errors.push(err.in_source(where_)),
        }
    }
    match errors.is_empty() {
        true => Ok(loaded),
        false => Err(DefinitionErrors(errors)),
    }
}

/// The YAML documents of `text` as kubectl reads a file (sigs.k8s.io/yaml): a key written
/// twice in one mapping keeps its last value. kubectl says nothing of it; a warning names
/// the first such key and its line, since the earlier value is lost.
pub fn yaml_documents(text: &str, source: &str) -> Result<Vec<Value>, serde_saphyr::Error> {
    match serde_saphyr::from_multiple(text) {
        Err(err) => match duplicate_key(&err) {
            Some((key, line, column)) => {
                tracing::warn!(
                    "{source}: line {line} column {column}: the key {key} is written twice in one mapping; the last value is kept, as kubectl keeps it"
                );
                let options = serde_saphyr::options! {
                    duplicate_keys: serde_saphyr::DuplicateKeyPolicy::LastWins,
                };
                serde_saphyr::from_multiple_with_options(text, options)
            }
            None => Err(err),
        },
        parsed => parsed,
    }
}

/// The key (quoted), line and column of a mapping's key written twice, if that is `err`.
fn duplicate_key(mut err: &serde_saphyr::Error) -> Option<(String, u64, u64)> {
    while let serde_saphyr::Error::WithSnippet { error, .. } = err {
        err = error;
    }
    match err {
        serde_saphyr::Error::DuplicateMappingKey { key, location } => Some((
            key.as_deref()
                .map_or_else(|| "(not a string)".to_owned(), |k| format!("{k:?}")),
            location.line(),
            location.column(),
        )),
        _ => None,
    }
}

/// A definition from its JSON form (a file's document or a cluster object).
pub fn parse_value(value: Value) -> Result<ReconcilerDefinition, DefinitionError> {
    serde_path_to_error::deserialize(&value).map_err(|err| {
        let at = value_at(&value, err.path());
        let path = err.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let message = match at {
            Some(Value::Object(step)) if is_step(&path) && step.len() != 1 => step_shape(step),
            _ => err.into_inner().to_string(),
        };
        DefinitionError::new(path, message)
    })
}

/// The value at `path` of `value`, if there is one.
fn value_at<'a>(value: &'a Value, path: &serde_path_to_error::Path) -> Option<&'a Value> {
    use serde_path_to_error::Segment;
    path.iter().try_fold(value, |value, segment| match segment {
        Segment::Seq { index } => value.get(index),
        Segment::Map { key } | Segment::Enum { variant: key } => value.get(key),
        Segment::Unknown => None,
    })
}

/// Whether `path` names a step (`spec.steps[0]`, `spec.steps[1].if.then[0]`).
fn is_step(path: &str) -> bool {
    let Some((list, index)) = path.strip_suffix(']').and_then(|p| p.rsplit_once('[')) else {
        return false;
    };
    index.parse::<usize>().is_ok()
        && ["steps", "then", "else"]
            .iter()
            .any(|steps| list.rsplit('.').next() == Some(steps))
}

/// What is wrong with a step that is not one key naming its kind.
fn step_shape(step: &serde_json::Map<String, Value>) -> String {
    let kinds: Vec<&str> = step
        .keys()
        .filter(|k| STEP_KINDS.contains(&k.as_str()))
        .map(String::as_str)
        .collect();
    let others: Vec<&str> = step
        .keys()
        .filter(|k| !STEP_KINDS.contains(&k.as_str()))
        .map(String::as_str)
        .collect();
    let advice = match (kinds.as_slice(), others.as_slice()) {
        ([], []) => "it has none".to_owned(),
        ([kind], others) => format!(
            "move {} under {kind} (`- {kind}: {{{}: ...}}`)",
            others.join(", "),
            others[0]
        ),
        ([], others) => format!("it has {}, none of them a step's kind", others.join(", ")),
        (kinds, _) => format!(
            "it names {} kinds ({}): write each as its own step",
            kinds.len(),
            kinds.join(", ")
        ),
    };
    format!(
        "a step is a map with one key, its kind ({}), holding the step's fields: {advice}",
        STEP_KINDS.join(", ")
    )
}

/// The definitions of one file.
pub fn load_file(path: &Path) -> Result<Vec<Loaded>, DefinitionErrors> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|err| {
        DefinitionError::new("", format!("cannot read: {err}")).in_source(&source)
    })?;
    parse_documents(&text, &source)
}

/// The definitions of a file, or of every `.yaml`, `.yml` and `.json` file of a directory
/// (not its subdirectories), in name order; names must be unique.
pub fn load_dir(path: &Path) -> Result<Vec<Loaded>, DefinitionErrors> {
    let files = match path.is_dir() {
        false => vec![path.to_path_buf()],
        true => {
            let entries = std::fs::read_dir(path).map_err(|err| {
                DefinitionError::new("", format!("cannot read the directory: {err}"))
                    .in_source(path.display().to_string())
            })?;
            let mut files: Vec<_> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.is_file()
                        && p.extension()
                            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
                })
                .collect();
            files.sort();
            files
        }
    };
    let mut loaded = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        match load_file(&file) {
            Ok(found) => loaded.extend(found),
            Err(DefinitionErrors(found)) => errors.extend(found),
        }
    }
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for definition in &loaded {
        let name = definition.definition.metadata.name.clone();
        if let Some(first) = seen.insert(name.clone(), definition.source.clone()) {
            errors.push(
                DefinitionError::new(
                    "metadata.name",
                    format!("the name {name:?} is also used by {first}"),
                )
                .in_source(&definition.source),
            );
        }
    }
    match errors.is_empty() {
        true => Ok(loaded),
        false => Err(DefinitionErrors(errors)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_mistyped_fields_are_refused_with_their_path() {
        let text = "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata: {name: a}\nspec:\n  for: {apiVersion: v1, kind: ConfigMap}\n  steps:\n  - child: {id: c, template: {}, includeWen: []}\n";
        let err = parse_documents(text, "a.yaml").unwrap_err().to_string();
        assert!(
            err.starts_with("a.yaml (document 1): spec.steps[0].child.includeWen: unknown field `includeWen`, expected one of"),
            "{err}"
        );
        let text = "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata: {name: a}\nspec:\n  for: {apiVersion: v1, kind: ConfigMap}\n  steps:\n  - child: {id: c, template: {}, readyWhen: yes}\n";
        let err = parse_documents(text, "a.yaml").unwrap_err().to_string();
        assert!(
            err.contains("spec.steps[0].child.readyWhen: invalid type"),
            "{err}"
        );
        let text = "kind: ConfigMap\n---\napiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata: {name: a}\nspec:\n  for: {apiVersion: v1, kind: ConfigMap}\n  steps: []\n";
        assert_eq!(parse_documents(text, "a.yaml").unwrap().len(), 1);
    }

    fn step_error(steps: &str) -> String {
        let text = format!(
            "apiVersion: dynrec.dev/v1alpha1\nkind: ReconcilerDefinition\nmetadata: {{name: a}}\nspec:\n  for: {{apiVersion: v1, kind: ConfigMap}}\n  steps:\n{steps}"
        );
        parse_documents(&text, "a.yaml").unwrap_err().to_string()
    }

    #[test]
    fn a_step_not_one_key_naming_its_kind_is_refused_saying_how_to_write_it() {
        let kinds = "(child, childSet, sync, ref, if, finalizer)";
        assert_eq!(
            step_error("  - id: c\n    child: {template: {}}\n"),
            format!(
                "a.yaml (document 1): spec.steps[0]: a step is a map with one key, its kind {kinds}, holding the step's fields: move id under child (`- child: {{id: ...}}`)"
            )
        );
        assert!(
            step_error("  - child: {id: c, template: {}}\n  - if:\n      condition: x\n      then:\n      - child: {id: d, template: {}}\n        sync: {status: {}}\n")
                .starts_with("a.yaml (document 1): spec.steps[1].if.then[0]: a step is a map with one key, its kind"),
        );
        assert!(step_error("  - {}\n").ends_with("holding the step's fields: it has none"),);
        assert!(
            step_error("  - {id: c, template: {}}\n")
                .ends_with("it has id, template, none of them a step's kind"),
        );
    }

    #[test]
    fn every_step_kind_is_a_step_s_key() {
        for kind in STEP_KINDS {
            let error = step_error(&format!("  - {kind}: 5\n"));
            assert!(
                error.contains(&format!("spec.steps[0].{kind}: invalid type")),
                "{kind}: {error}"
            );
        }
        let error = step_error("  - childs: 5\n");
        assert!(error.contains("unknown variant `childs`"), "{error}");
    }

    #[test]
    fn a_key_written_twice_keeps_its_last_value_as_kubectl_does() {
        let text = "a: 1\nb:\n  c: first\n  c: last\n---\nd: [1]\n";
        let parsed = serde_saphyr::from_multiple::<Value>(text).unwrap_err();
        assert_eq!(duplicate_key(&parsed), Some(("\"c\"".to_owned(), 4, 3)));
        let documents = yaml_documents(text, "a.yaml").unwrap();
        assert_eq!(documents[0]["b"]["c"], "last");
        assert_eq!(documents[1]["d"][0], 1);
        let error = yaml_documents("a: [1\n", "a.yaml").unwrap_err();
        assert_eq!(duplicate_key(&error), None, "{error}");
    }
}
