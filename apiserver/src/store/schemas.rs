//! Structural schemas of custom kinds: compiled from a CRD's versions, and applied to every
//! write of their objects (prune, default, validate), with `fieldValidation` deciding what
//! unknown fields do.

use serde_json::Value;

use crate::error::{ApiError, ApiResult, Cause};
use crate::resources::ResourceInfo;
use crate::schema::{SchemaError, StructuralSchema};

/// What to do about fields the schema does not know (`fieldValidation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Refuse the write, naming the fields.
    Strict,
    /// Drop them and say so in a `Warning` header (kube-apiserver's default).
    #[default]
    Warn,
    /// Drop them silently.
    Ignore,
}

impl FieldValidation {
    /// Parses the query parameter value.
    pub fn parse(value: Option<&str>) -> ApiResult<Self> {
        match value {
            None | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of Strict, Warn or Ignore, not {other:?}"
            ))),
        }
    }
}

/// Compiles the schema of every served version of a CRD; a bad schema names its version,
/// and rules that do not compile are one cause each, at kube-apiserver's path
/// (`spec.validation.openAPIV3Schema...` when every version has the same schema).
pub fn compile_versions(crd: &Value) -> Result<Vec<(String, StructuralSchema)>, Vec<Cause>> {
    let versions = crd["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let identical = versions
        .windows(2)
        .all(|pair| pair[0]["schema"] == pair[1]["schema"]);
    let mut compiled = Vec::new();
    let mut causes = Vec::new();
    for (index, version) in versions.iter().enumerate() {
        let schema = &version["schema"]["openAPIV3Schema"];
        if schema.is_null() {
            continue;
        }
        let name = version["name"].as_str().unwrap_or_default().to_string();
        match StructuralSchema::compile(schema) {
            Ok(structural) => compiled.push((name, structural)),
            Err(SchemaError::Rules(errors)) => {
                if identical && index > 0 {
                    continue;
                }
                let prefix = if identical {
                    "spec.validation".to_string()
                } else {
                    format!("spec.versions[{index}].schema")
                };
                causes.extend(errors.into_iter().map(|e| Cause {
                    reason: e.reason,
                    field: format!("{prefix}.{}", e.path),
                    message: e.message,
                }));
            }
            Err(err) => {
                let field = format!("spec.versions[{index}].schema.openAPIV3Schema");
                causes.push(Cause::invalid(
                    &field,
                    &Value::from("schema"),
                    &err.to_string(),
                ));
                return Err(causes);
            }
        }
    }
    if causes.is_empty() {
        Ok(compiled)
    } else {
        Err(causes)
    }
}

/// Prunes, defaults and validates an object of a custom kind against its version's
/// `schema` (replacing `old`, if it is an update), as kube-apiserver decodes and validates
/// one. Unknown fields are refused, warned about or dropped as `validation` says; warnings
/// are added to `warnings`.
pub fn enforce(
    schema: &StructuralSchema,
    info: &ResourceInfo,
    object: &mut Value,
    old: Option<&Value>,
    validation: FieldValidation,
    warnings: &mut Vec<String>,
) -> ApiResult<()> {
    let unknown = schema.prune(object);
    if !unknown.is_empty() {
        let described: Vec<String> = unknown
            .iter()
            .map(|p| format!("unknown field \"{p}\""))
            .collect();
        match validation {
            FieldValidation::Strict => {
                return Err(ApiError::bad_request(format!(
                    "strict decoding error: {}",
                    described.join(", ")
                )));
            }
            FieldValidation::Warn => warnings.extend(described),
            FieldValidation::Ignore => {}
        }
    }
    schema.apply_defaults(object);
    let checked = schema.validate_write(object, old);
    if !checked.causes.is_empty() {
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        return Err(ApiError::invalid(info, &name, checked.causes));
    }
    warnings.extend(checked.warnings);
    Ok(())
}
