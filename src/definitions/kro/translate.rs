//! A ResourceGraphDefinition compiled onto the definition model: the instance kind becomes
//! the definition's `for:` and `schema:` (the CRD KRO generates), each resource a step
//! (`child`, `childSet` for `forEach`, `ref` for `externalRef`), `schema.status` a `sync`
//! step, and KRO's variables dynrec's (`schema` is `self`). The steps keep the resources'
//! order, so the step at `spec.steps[i]` is the resource at `spec.resources[i]`, and every
//! error of the definition is reported at its place in the RGD.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::collection::{check_identity, collection};
use super::expressions::{Renames, rename_in_text, rename_in_value};
use super::model::{ExternalRef, GROUP, KIND, Resource, ResourceGraphDefinition, VERSION};
use super::simpleschema::{kind_of, spec_schema};
use crate::definitions::error::locate_path;
use crate::definitions::{
    ChildSetStep, ChildStep, DefinitionError, DefinitionErrors, DefinitionMeta, DefinitionSpec,
    KindRef, KroConventions, ManagerKind, ParentSchema, ReconcilerDefinition, RefSelector, RefStep,
    Step, SyncStep,
};

/// The finalizer KRO holds on instances (and on RGDs) until their resources are gone.
pub const FINALIZER: &str = "kro.run/finalizer";
/// The label naming the RGD of an instance or a child.
pub const RGD_NAME_LABEL: &str = "kro.run/resource-graph-definition-name";
/// The label KRO puts on everything it owns.
pub const OWNED_LABEL: &str = "kro.run/owned";
/// The label holding the UID of a child's instance (how KRO finds its children).
pub const INSTANCE_ID_LABEL: &str = "kro.run/instance-id";

/// Names KRO's expressions may not use as resource ids here: KRO's `schema`, and the
/// names dynrec binds.
const RESERVED_IDS: [&str; 5] = ["schema", "self", "each", "child", "now"];

/// A definition translated from an RGD, with where its paths come from.
#[derive(Clone, Debug)]
pub struct Translated {
    /// The definition.
    pub definition: ReconcilerDefinition,
    /// Path prefixes of the definition and the RGD paths they stand for, longest first.
    pub origins: Vec<(String, String)>,
}

/// An RGD from its JSON form; a field unknown or of the wrong type is an error naming its
/// path.
pub fn parse_rgd(value: Value) -> Result<ResourceGraphDefinition, DefinitionError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let path = if path == "." { String::new() } else { path };
        DefinitionError::new(path, err.into_inner().to_string())
    })
}

/// The definition `rgd` runs as (all its errors at once).
pub fn translate(rgd: &ResourceGraphDefinition) -> Result<Translated, DefinitionErrors> {
    let mut errors = Vec::new();
    let expected = format!("{GROUP}/{VERSION}");
    if rgd.api_version != expected || rgd.kind != KIND {
        errors.push(DefinitionError::new(
            "",
            format!(
                "expected apiVersion {expected:?} and kind {KIND:?}, found {:?} and {:?}",
                rgd.api_version, rgd.kind
            ),
        ));
    }
    let schema = &rgd.spec.schema;
    let group = schema.group.clone().unwrap_or_else(|| GROUP.to_owned());
    let namespaced = match schema.scope.as_deref() {
        None | Some("Namespaced") => true,
        Some("Cluster") => false,
        Some(other) => {
            errors.push(DefinitionError::new(
                "spec.schema.scope",
                format!("{other:?} is neither Namespaced nor Cluster"),
            ));
            true
        }
    };
    if schema.api_version.contains('/') {
        errors.push(DefinitionError::new(
            "spec.schema.apiVersion",
            format!(
                "{:?}: give the version only (the group is spec.schema.group, default {GROUP})",
                schema.api_version
            ),
        ));
    }
    let instance = Instance {
        rgd: rgd.name().to_owned(),
        rgd_uid: rgd
            .metadata
            .get("uid")
            .and_then(Value::as_str)
            .map(String::from),
        group: group.clone(),
        version: schema.api_version.clone(),
        kind: schema.kind.clone(),
        namespaced,
        resource_ids: rgd.spec.resources.iter().map(|r| r.id.clone()).collect(),
    };
    let spec = spec_schema(&schema.spec, &schema.types, "spec.schema.spec")
        .map_err(|e| errors.push(e))
        .unwrap_or_default();
    let (fields, conditions) = custom_conditions(&schema.status)
        .map_err(|e| errors.push(e))
        .unwrap_or_default();
    let status = status_schema(&fields, "spec.schema.status")
        .map_err(|e| errors.push(e))
        .unwrap_or_default();
    let mut steps = Vec::new();
    let mut origins = Vec::new();
    for (i, resource) in rgd.spec.resources.iter().enumerate() {
        let at = format!("spec.resources[{i}] (id {})", resource.id);
        match resource_step(resource, &instance, &at) {
            Ok((step, kind_origins)) => {
                let step_path = format!("spec.steps[{}].{}", steps.len(), step.kind());
                for (from, to) in kind_origins {
                    origins.push((format!("{step_path}{from}"), format!("{at}{to}")));
                }
                origins.push((step_path, at));
                steps.push(step);
            }
            Err(error) => errors.push(error),
        }
    }
    if fields.as_object().is_some_and(|s| !s.is_empty()) {
        let sync_path = format!("spec.steps[{}].sync", steps.len());
        origins.push((format!("{sync_path}.status"), "spec.schema.status".into()));
        origins.push((sync_path, "spec.schema.status".into()));
        steps.push(Step::Sync(SyncStep {
            id: "status".into(),
            status: rename_in_value(&fields, &schema_renames()),
            condition: None,
        }));
    }
    origins.extend([
        (
            "spec.schema.openAPIV3Schema".into(),
            "spec.schema.spec".into(),
        ),
        ("spec.schema".into(), "spec.schema".into()),
        ("spec.for".into(), "spec.schema".into()),
        ("spec.steps".into(), "spec.resources".into()),
        (
            "spec.kro.conditions".into(),
            "spec.schema.status.conditions".into(),
        ),
    ]);
    if !errors.is_empty() {
        return Err(DefinitionErrors(errors));
    }
    origins.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    let mut other = BTreeMap::new();
    for key in ["labels", "annotations", "uid", "resourceVersion"] {
        if let Some(value) = rgd.metadata.get(key) {
            other.insert(key.to_owned(), value.clone());
        }
    }
    let definition = ReconcilerDefinition {
        api_version: format!(
            "{}/{}",
            crate::definitions::GROUP,
            crate::definitions::VERSION
        ),
        kind: crate::definitions::KIND.into(),
        metadata: DefinitionMeta {
            name: rgd.name().to_owned(),
            generation: rgd.metadata.get("generation").and_then(Value::as_i64),
            other,
        },
        spec: DefinitionSpec {
            for_kind: KindRef {
                api_version: format!("{group}/{}", schema.api_version),
                kind: schema.kind.clone(),
            },
            schema: Some(ParentSchema {
                scope: if namespaced { "Namespaced" } else { "Cluster" }.into(),
                plural: Some(plural(&schema.kind)),
                short_names: schema.short_names.clone(),
                categories: schema.categories.clone(),
                printer_columns: match schema.additional_printer_columns.is_empty() {
                    true => default_printer_columns(),
                    false => schema.additional_printer_columns.clone(),
                },
                open_api_v3_schema: instance_schema(spec, status),
            }),
            owns_status: None,
            conditions: Vec::new(),
            steps,
            strict: false,
            service_account: None,
            kro: Some(KroConventions {
                resource_graph_definition: rgd.name().to_owned(),
                conditions: conditions
                    .iter()
                    .map(|c| rename_in_text(c, &schema_renames()))
                    .collect(),
            }),
        },
        status: None,
    };
    Ok(Translated {
        definition,
        origins,
    })
}

/// What the labels of an instance's children name.
struct Instance {
    rgd: String,
    rgd_uid: Option<String>,
    group: String,
    version: String,
    kind: String,
    namespaced: bool,
    /// The graph's resource ids (no iterator may take one).
    resource_ids: Vec<String>,
}

fn schema_renames() -> Renames {
    Renames::from([("schema".to_owned(), "self".to_owned())])
}

/// Paths under a step (after its own path) and the RGD paths (after the resource's) they
/// stand for.
type StepOrigins = Vec<(&'static str, String)>;

/// The step of one resource, and its paths (after the step's own) with theirs.
fn resource_step(
    resource: &Resource,
    instance: &Instance,
    at: &str,
) -> Result<(Step, StepOrigins), DefinitionError> {
    let id = resource.id.as_str();
    if RESERVED_IDS.contains(&id) {
        return Err(DefinitionError::new(
            format!("{at}.id"),
            format!(
                "{id:?} is reserved (KRO's `schema` is the instance; dynrec binds self, each, child and now)"
            ),
        ));
    }
    let base = schema_renames();
    let include_when: Vec<String> = resource
        .include_when
        .iter()
        .map(|e| rename_in_text(e, &base))
        .collect();
    match (&resource.template, &resource.external_ref) {
        (Some(_), Some(_)) => Err(DefinitionError::new(
            at,
            "give either template or externalRef, not both",
        )),
        (None, None) => Err(DefinitionError::new(
            at,
            "a resource needs a template or an externalRef",
        )),
        (None, Some(reference)) => {
            for (field, given) in [
                ("readyWhen", !resource.ready_when.is_empty()),
                ("includeWhen", !include_when.is_empty()),
                ("forEach", !resource.for_each.is_empty()),
            ] {
                if given {
                    return Err(DefinitionError::new(
                        format!("{at}.{field}"),
                        format!(
                            "dynrec does not take {field} on an externalRef (the reference is read as it is)"
                        ),
                    ));
                }
            }
            Ok((external_ref(id, reference, &base), external_origins()))
        }
        (Some(template), None) => {
            let labelled = with_labels(template, instance, id, &format!("{at}.template"))?;
            match resource.for_each.as_slice() {
                [] => {
                    // In readyWhen, the resource's own id is the child.
                    let mut ready = base.clone();
                    ready.insert(id.to_owned(), "child".to_owned());
                    Ok((
                        Step::Child(ChildStep {
                            id: id.to_owned(),
                            template: rename_in_value(&labelled, &base),
                            include_when,
                            ready_when: rename_ready(&resource.ready_when, &ready),
                            condition: None,
                            manager: ManagerKind::Apply,
                        }),
                        Vec::new(),
                    ))
                }
                _ => collection_step(resource, &labelled, instance, include_when, at),
            }
        }
    }
}

/// The childSet step of a `forEach` resource (its template labelled), and its paths.
fn collection_step(
    resource: &Resource,
    labelled: &Value,
    instance: &Instance,
    include_when: Vec<String>,
    at: &str,
) -> Result<(Step, StepOrigins), DefinitionError> {
    let id = resource.id.as_str();
    let base = schema_renames();
    let ids: Vec<&str> = instance.resource_ids.iter().map(String::as_str).collect();
    let collection = collection(&resource.for_each, id, &ids, &base, at)?;
    let metadata = &labelled["metadata"];
    let Some(name) = metadata["name"].as_str() else {
        return Err(DefinitionError::new(
            format!("{at}.template.metadata.name"),
            "a collection's template needs a name (an expression over its iterators)",
        ));
    };
    let namespace = metadata["namespace"].as_str();
    let identity: Vec<&str> = [Some(name), namespace].into_iter().flatten().collect();
    check_identity(&identity, &collection.iterators, id, at)?;
    let mut renames = base.clone();
    renames.extend(collection.iterators);
    // KRO's identity of an item is its namespace and name.
    let item_id = match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    };
    // In a collection's readyWhen, KRO's `each` (and the resource's id) is the child.
    let mut ready = base;
    ready.insert("each".to_owned(), "child".to_owned());
    ready.insert(id.to_owned(), "child".to_owned());
    let for_each_origin = match resource.for_each.len() {
        1 => ".forEach[0]",
        _ => ".forEach",
    };
    Ok((
        Step::ChildSet(ChildSetStep {
            id: id.to_owned(),
            for_each: collection.for_each,
            item_id: rename_in_text(&item_id, &renames),
            template: rename_in_value(labelled, &renames),
            include_when,
            ready_when: rename_ready(&resource.ready_when, &ready),
            condition: None,
            manager: ManagerKind::Apply,
        }),
        vec![
            (".forEach", for_each_origin.to_owned()),
            (".itemId", ".template.metadata.name".to_owned()),
        ],
    ))
}

fn rename_ready(expressions: &[String], renames: &Renames) -> Vec<String> {
    expressions
        .iter()
        .map(|e| rename_in_text(e, renames))
        .collect()
}

fn external_ref(id: &str, reference: &ExternalRef, renames: &Renames) -> Step {
    let metadata = &reference.metadata;
    Step::Ref(RefStep {
        id: id.to_owned(),
        api_version: reference.api_version.clone(),
        kind: reference.kind.clone(),
        name: metadata.name.as_ref().map(|n| rename_in_text(n, renames)),
        namespace: metadata
            .namespace
            .as_ref()
            .map(|n| rename_in_text(n, renames)),
        selector: metadata.selector.as_ref().map(|s| RefSelector {
            match_labels: s
                .match_labels
                .iter()
                .map(|(k, v)| (k.clone(), rename_in_text(v, renames)))
                .collect(),
        }),
        optional: false,
        condition: None,
    })
}

fn external_origins() -> StepOrigins {
    vec![
        (".name", ".externalRef.metadata.name".to_owned()),
        (".namespace", ".externalRef.metadata.namespace".to_owned()),
        (".selector", ".externalRef.metadata.selector".to_owned()),
        (".apiVersion", ".externalRef.apiVersion".to_owned()),
        (".kind", ".externalRef.kind".to_owned()),
    ]
}

/// The template with the labels KRO puts on every child (those it sets win over none of
/// the template's own).
fn with_labels(
    template: &Value,
    instance: &Instance,
    id: &str,
    at: &str,
) -> Result<Value, DefinitionError> {
    let Value::Object(fields) = template else {
        return Err(DefinitionError::new(
            at,
            format!("expected an object, found {}", kind_of(template)),
        ));
    };
    let mut labels = Map::new();
    labels.insert(OWNED_LABEL.into(), json!("true"));
    labels.insert("kro.run/kro-version".into(), json!(kro_version()));
    labels.insert("kro.run/node-id".into(), json!(id));
    labels.insert(INSTANCE_ID_LABEL.into(), json!("${schema.metadata.uid}"));
    labels.insert(
        "kro.run/instance-name".into(),
        json!("${schema.metadata.name}"),
    );
    if instance.namespaced {
        labels.insert(
            "kro.run/instance-namespace".into(),
            json!("${schema.metadata.?namespace.orValue('')}"),
        );
    }
    labels.insert("kro.run/instance-group".into(), json!(instance.group));
    labels.insert("kro.run/instance-version".into(), json!(instance.version));
    labels.insert("kro.run/instance-kind".into(), json!(instance.kind));
    labels.insert(RGD_NAME_LABEL.into(), json!(instance.rgd));
    if let Some(uid) = &instance.rgd_uid {
        labels.insert("kro.run/resource-graph-definition-id".into(), json!(uid));
    }
    let mut fields = fields.clone();
    let metadata = fields
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| DefinitionError::new(format!("{at}.metadata"), "expected an object"))?;
    let own = match metadata.entry("labels").or_insert_with(|| json!({})) {
        Value::Object(own) => own,
        // Labels computed by one expression (`${schema.spec.labels}`) are written as
        // computed: a template cannot merge KRO's into them.
        Value::String(text) if super::expressions::whole_expression(text).is_some() => {
            return Ok(Value::Object(fields));
        }
        _ => {
            return Err(DefinitionError::new(
                format!("{at}.metadata.labels"),
                "expected a map of labels, or one ${...} expression",
            ));
        }
    };
    for (key, value) in labels {
        own.entry(key).or_insert(value);
    }
    Ok(Value::Object(fields))
}

/// The version written in `kro.run/kro-version`: dynrec's own, so KRO's tools see who
/// manages the object.
fn kro_version() -> String {
    format!("dynrec-v{}", env!("CARGO_PKG_VERSION"))
}

/// The status schema: a field whose value is one `${...}` may hold any value, text with
/// expressions is a string, a map an object of its fields.
fn status_schema(status: &Value, path: &str) -> Result<Value, DefinitionError> {
    match status {
        Value::Null => Ok(json!({})),
        Value::Object(fields) => {
            let mut properties = Map::new();
            for (name, value) in fields {
                properties.insert(
                    name.clone(),
                    status_field(value, &format!("{path}.{name}"))?,
                );
            }
            Ok(Value::Object(properties))
        }
        other => Err(DefinitionError::new(
            path,
            format!("expected a map of status fields, found {}", kind_of(other)),
        )),
    }
}

fn status_field(value: &Value, path: &str) -> Result<Value, DefinitionError> {
    match value {
        Value::String(text) if super::expressions::whole_expression(text).is_some() => {
            Ok(json!({"x-kubernetes-preserve-unknown-fields": true}))
        }
        Value::String(text) if !super::expressions::expressions(text).is_empty() => {
            Ok(json!({"type": "string"}))
        }
        Value::Object(_) => {
            Ok(json!({"type": "object", "properties": status_schema(value, path)?}))
        }
        _ => Err(DefinitionError::new(
            path,
            "a status field is a ${...} expression (or text holding some), or a map of such fields",
        )),
    }
}

/// The status fields without `conditions`, and KRO's custom conditions (`conditions`: a
/// list of `${...}`, each returning `runtime.newCondition(...)` or a list of them).
fn custom_conditions(status: &Value) -> Result<(Value, Vec<String>), DefinitionError> {
    let path = "spec.schema.status.conditions";
    let mut fields = status.clone();
    let Some(given) = fields.as_object_mut().and_then(|f| f.remove("conditions")) else {
        return Ok((fields, Vec::new()));
    };
    let Value::Array(entries) = given else {
        return Err(DefinitionError::new(
            path,
            format!(
                "status.conditions must be a list of ${{runtime.newCondition(...)}} expressions, found {}",
                kind_of(&given)
            ),
        ));
    };
    let conditions = entries
        .iter()
        .enumerate()
        .map(|(i, entry)| match entry {
            Value::String(text) if super::expressions::whole_expression(text).is_some() => {
                Ok(text.clone())
            }
            other => Err(DefinitionError::new(
                format!("{path}[{i}]"),
                format!(
                    "status.conditions[{i}] must be a CEL expression string (${{...}}), found {}",
                    kind_of(other)
                ),
            )),
        })
        .collect::<Result<_, _>>()?;
    Ok((fields, conditions))
}

/// The instance CRD's schema, as KRO synthesizes it: `state` and `conditions` added to the
/// status fields.
fn instance_schema(spec: Value, mut status: Value) -> Value {
    if !status.is_object() {
        status = json!({});
    }
    if let Some(s) = status.as_object_mut() {
        s.entry("state").or_insert(json!({"type": "string"}));
        s.entry("conditions")
            .or_insert(json!({"type": "array", "items": {
                "type": "object", "properties": {
                    "type": {"type": "string"}, "status": {"type": "string"},
                    "reason": {"type": "string"}, "message": {"type": "string"},
                    "lastTransitionTime": {"type": "string"},
                    "observedGeneration": {"type": "integer"}}}}));
    }
    json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object"}, "spec": spec,
        "status": {"type": "object", "properties": status}}})
}

/// KRO's default printer columns: State, Ready, Age.
fn default_printer_columns() -> Vec<Value> {
    vec![
        json!({"name": "State", "type": "string", "jsonPath": ".status.state",
               "description": "The state of a ResourceGraphDefinition instance"}),
        json!({"name": "Ready", "type": "string",
               "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status",
               "description": "Whether a ResourceGraphDefinition instance is ready"}),
        json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
               "description": "Age of the resource"}),
    ]
}

/// The plural of a kind, lowercased, as KRO's pluralizer (flect) forms the common cases.
pub fn plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    let consonant_y = lower.ends_with('y')
        && !lower
            .chars()
            .rev()
            .nth(1)
            .is_some_and(|c| "aeiou".contains(c));
    if consonant_y {
        format!("{}ies", &lower[..lower.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

/// An error of the translated definition at its place in the RGD.
pub fn locate(mut error: DefinitionError, origins: &[(String, String)]) -> DefinitionError {
    error.path = locate_path(&error.path, origins);
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_conditions_are_carried_in_kros_conventions() {
        let rgd = |conditions: &str| {
            let text = format!(
                "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {{name: r}}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: R\n    status:\n      conditions: {conditions}\n"
            );
            translate(&parse_rgd(serde_saphyr::from_str(&text).unwrap()).unwrap())
        };
        let translated = rgd("[\"${runtime.condition(schema, 'Ready')}\"]").unwrap();
        let kro = translated.definition.spec.kro.unwrap();
        assert_eq!(kro.conditions, ["${runtime.condition(self, 'Ready')}"]);
        assert!(
            translated.definition.spec.steps.is_empty(),
            "no status fields, no sync step"
        );
        let errors = rgd("[1]").unwrap_err().to_string();
        assert!(
            errors.starts_with("spec.schema.status.conditions[0]: status.conditions[0] must be a CEL expression string"),
            "{errors}"
        );
        let errors = rgd("x").unwrap_err().to_string();
        assert!(errors.contains("must be a list of"), "{errors}");
    }

    #[test]
    fn plurals_follow_kros_pluralizer() {
        assert_eq!(plural("WebApp"), "webapps");
        assert_eq!(plural("Policy"), "policies");
        assert_eq!(plural("Gateway"), "gateways");
        assert_eq!(plural("Class"), "classes");
    }

    #[test]
    fn errors_are_located_in_the_rgd() {
        let origins = vec![
            (
                "spec.steps[1].child".to_owned(),
                "spec.resources[1]".to_owned(),
            ),
            ("spec.steps".to_owned(), "spec.resources".to_owned()),
        ];
        let located = |path: &str| locate(DefinitionError::new(path, "x"), &origins).path;
        assert_eq!(
            located("spec.steps[1].child.template.data.a"),
            "spec.resources[1].template.data.a"
        );
        assert_eq!(
            located("spec.steps (condition 0)"),
            "spec.resources (condition 0)"
        );
        assert_eq!(located("metadata.name"), "metadata.name");
    }
}
