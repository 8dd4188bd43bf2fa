//! `metadata` validated as apimachinery's `ValidateObjectMeta` validates it for every kind,
//! built-in and custom: generateName, label keys and values, annotation keys and their
//! total size, ownerReferences and finalizers, with kube's field paths and messages. Also
//! the warning kube gives for a finalizer name without a domain.

use serde_json::{Map, Value};

use crate::error::Cause;
use crate::validation;

/// kube's `TotalAnnotationSizeLimitB`: keys and values together, 256 KiB.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Finalizers kube itself defines, which need no domain.
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// The problems of an object's metadata, in the order kube reports them. `name_rules`
/// checks a name (for `generateName`, whose trailing `-` is masked as kube masks it).
pub fn causes(object: &Value, name_rules: fn(&str) -> Vec<String>) -> Vec<Cause> {
    let metadata = &object["metadata"];
    let mut causes = Vec::new();
    let generate_name = metadata["generateName"].as_str().unwrap_or_default();
    if !generate_name.is_empty() {
        let masked = match generate_name.strip_suffix('-') {
            Some(stem) => format!("{stem}a"),
            None => generate_name.to_string(),
        };
        for problem in name_rules(&masked) {
            causes.push(invalid("metadata.generateName", generate_name, &problem));
        }
    }
    if let Some(labels) = metadata["labels"].as_object() {
        labels_causes(labels, &mut causes);
    }
    if let Some(annotations) = metadata["annotations"].as_object() {
        annotations_causes(annotations, &mut causes);
    }
    if let Some(references) = metadata["ownerReferences"].as_array() {
        owner_references_causes(references, &mut causes);
    }
    for finalizer in strings(&metadata["finalizers"]) {
        for problem in validation::qualified_name(finalizer) {
            causes.push(invalid("metadata.finalizers", finalizer, &problem));
        }
    }
    causes
}

/// kube's warnings about metadata: a finalizer name without a domain path.
pub fn warnings(object: &Value) -> Vec<String> {
    strings(&object["metadata"]["finalizers"])
        .filter(|finalizer| !finalizer.contains('/') && !STANDARD_FINALIZERS.contains(finalizer))
        .map(|finalizer| {
            format!(
                "metadata.finalizers: {finalizer:?}: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
            )
        })
        .collect()
}

fn strings(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn invalid(field: &str, value: &str, problem: &str) -> Cause {
    Cause::invalid(field, &Value::from(value), problem)
}

/// Sorted, so that the causes are the same on every request (Go visits maps at random).
fn sorted(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// `ValidateLabels`: each key a qualified name, each value a label value.
fn labels_causes(labels: &Map<String, Value>, causes: &mut Vec<Cause>) {
    for (key, value) in sorted(labels) {
        for problem in validation::qualified_name(key) {
            causes.push(invalid("metadata.labels", key, &problem));
        }
        let value = value.as_str().unwrap_or_default();
        for problem in validation::label_value(value) {
            causes.push(invalid("metadata.labels", value, &problem));
        }
    }
}

/// `ValidateAnnotations`: each key (lowercased) a qualified name; keys and values at most
/// 256 KiB together.
fn annotations_causes(annotations: &Map<String, Value>, causes: &mut Vec<Cause>) {
    let mut total = 0;
    for (key, value) in sorted(annotations) {
        for problem in validation::qualified_name(&key.to_lowercase()) {
            causes.push(invalid("metadata.annotations", key, &problem));
        }
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        causes.push(Cause::too_long(
            "metadata.annotations",
            TOTAL_ANNOTATION_SIZE_LIMIT,
        ));
    }
}

/// `ValidateOwnerReferences`: apiVersion (with a version), kind, name and uid set, no
/// Event as an owner, at most one reference with `controller: true`.
fn owner_references_causes(references: &[Value], causes: &mut Vec<Cause>) {
    const PATH: &str = "metadata.ownerReferences";
    let mut first_controller: Option<String> = None;
    for reference in references {
        let text = |key: &str| reference[key].as_str().unwrap_or_default();
        let api_version = text("apiVersion");
        let version = api_version.rsplit('/').next().unwrap_or_default();
        if version.is_empty() {
            causes.push(invalid(
                &format!("{PATH}.apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        for key in ["kind", "name", "uid"] {
            if text(key).is_empty() {
                causes.push(invalid(&format!("{PATH}.{key}"), "", "must not be empty"));
            }
        }
        if api_version == "v1" && text("kind") == "Event" {
            causes.push(Cause::invalid(
                PATH,
                reference,
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if reference["controller"].as_bool() == Some(true) {
            let this = format!("{}/{}", text("kind"), text("name"));
            match &first_controller {
                Some(first) => causes.push(Cause::invalid(
                    PATH,
                    &Value::from(references.to_vec()),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                    ),
                )),
                None => first_controller = Some(this),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(metadata: Value) -> Vec<String> {
        causes(
            &json!({ "metadata": metadata }),
            validation::dns1123_subdomain,
        )
        .into_iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
    }

    const NAME_PART: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    #[test]
    fn label_keys_and_values() {
        let rules: [(Value, Vec<String>); 5] = [
            (json!({"ok": "fine", "example.com/app": "web"}), vec![]),
            (
                json!({"bad key": "v"}),
                vec![format!("metadata.labels: Invalid value: \"bad key\": {NAME_PART}")],
            ),
            (
                json!({"k": "x".repeat(64)}),
                vec![format!(
                    "metadata.labels: Invalid value: \"{}\": must be no more than 63 characters",
                    "x".repeat(64)
                )],
            ),
            (
                json!({"k": "a/b"}),
                vec!["metadata.labels: Invalid value: \"a/b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string()],
            ),
            (
                json!({"Example.com/app": "v"}),
                vec!["metadata.labels: Invalid value: \"Example.com/app\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string()],
            ),
        ];
        for (labels, expected) in rules {
            assert_eq!(messages(json!({ "labels": labels })), expected, "{labels}");
        }
    }

    #[test]
    fn annotation_keys_and_total_size() {
        assert!(messages(json!({"annotations": {"Example.COM/Key": "v"}})).is_empty());
        assert_eq!(
            messages(json!({"annotations": {"bad key": "v"}})),
            vec![format!(
                "metadata.annotations: Invalid value: \"bad key\": {NAME_PART}"
            )]
        );
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        assert_eq!(
            messages(json!({"annotations": {"a": big}})),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        let fits = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 1);
        assert!(messages(json!({"annotations": {"a": fits}})).is_empty());
    }

    #[test]
    fn finalizers_are_qualified_names_and_warned_without_a_domain() {
        assert_eq!(
            messages(json!({"finalizers": ["Bad Finalizer/x"]})),
            vec![
                "metadata.finalizers: Invalid value: \"Bad Finalizer/x\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        let object = json!({"metadata": {"finalizers": ["example.com/ok", "mine", "kubernetes"]}});
        assert_eq!(
            warnings(&object),
            vec![
                "metadata.finalizers: \"mine\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
            ]
        );
    }

    #[test]
    fn owner_references_need_their_fields_and_one_controller_at_most() {
        let owner = |name: &str, controller: bool| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": "u", "controller": controller});
        assert!(
            messages(json!({"ownerReferences": [owner("a", true), owner("b", false)]})).is_empty()
        );
        assert_eq!(
            messages(
                json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "a"}]})
            ),
            vec!["metadata.ownerReferences.uid: Invalid value: \"\": must not be empty"]
        );
        assert_eq!(
            messages(
                json!({"ownerReferences": [{"apiVersion": "apps/", "kind": "", "name": "a", "uid": "u"}]})
            ),
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty",
            ]
        );
        let two = messages(json!({"ownerReferences": [owner("a", true), owner("b", true)]}));
        assert_eq!(two.len(), 1);
        assert!(
            two[0].ends_with("Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/a and ConfigMap/b"),
            "{two:?}"
        );
    }

    #[test]
    fn generate_name_is_checked_with_its_trailing_dash_masked() {
        assert!(messages(json!({"generateName": "web-"})).is_empty());
        let bad = messages(json!({"generateName": "Web-"}));
        assert_eq!(bad.len(), 1);
        assert!(
            bad[0].starts_with(
                "metadata.generateName: Invalid value: \"Web-\": a lowercase RFC 1123 subdomain"
            ),
            "{bad:?}"
        );
    }
}
