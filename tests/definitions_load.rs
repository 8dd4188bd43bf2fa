//! Loading definitions: a bad definition is refused with the path inside it, the position in
//! the expression and what was expected; checked against the schemas the embedded server
//! publishes (ConfigMap, Deployment) and the definition's own (Widget).

use dynrec::apiserver::ApiServer;
use dynrec::definitions::{CompiledDefinition, Schemas, compile, kinds_to_check, parse_documents};

/// A Widget definition whose steps are `steps` (YAML, indented under `steps:`).
fn definition(steps: &str) -> String {
    format!(
        r#"apiVersion: dynrec.dev/v1alpha1
kind: ReconcilerDefinition
metadata: {{name: widgets}}
spec:
  for: {{apiVersion: example.com/v1, kind: Widget}}
  schema:
    openAPIV3Schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            greeting: {{type: string}}
            size: {{type: integer}}
            items: {{type: array, items: {{type: object, properties: {{name: {{type: string}}}}}}}}
  steps:
{steps}"#
    )
}

/// The errors loading and compiling `text` gives, as one string ("" when it compiles).
async fn errors_of(text: &str) -> String {
    let loaded = match parse_documents(text, "widgets.yaml") {
        Ok(loaded) => loaded,
        Err(errors) => return errors.to_string(),
    };
    let server = ApiServer::new();
    let mut out = Vec::new();
    for loaded in loaded {
        let mut schemas = Schemas::default();
        schemas
            .fetch(&server.client(), kinds_to_check(&loaded.definition))
            .await;
        if let Err(errors) = compile(&loaded.definition, &schemas) {
            out.push(errors.to_string());
        }
    }
    out.join("\n")
}

/// The first definition of `text`, compiled (it must compile).
async fn compiled(text: &str) -> CompiledDefinition {
    let loaded = parse_documents(text, "widgets.yaml").unwrap();
    let server = ApiServer::new();
    let mut schemas = Schemas::default();
    schemas
        .fetch(&server.client(), kinds_to_check(&loaded[0].definition))
        .await;
    compile(&loaded[0].definition, &schemas).unwrap()
}

const CONFIG_MAP: &str = "        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: \"${self.metadata.name}\"}\n";

fn child(id: &str, extra: &str, data: &str) -> String {
    format!(
        "  - child:\n      id: {id}\n{extra}      template:\n{CONFIG_MAP}        data: {data}\n"
    )
}

#[tokio::test]
async fn bad_definitions_are_refused_with_path_position_and_expectation() {
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "unknown field of a step",
            definition("  - child: {id: c, template: {}, includeWen: []}\n"),
            "widgets.yaml (document 1): spec.steps[0].child.includeWen: unknown field `includeWen`, expected one of `id`, `template`, `includeWhen`, `readyWhen`, `condition`, `manager`",
        ),
        (
            "unknown step kind",
            definition("  - chlid: {id: c}\n"),
            "spec.steps[0]: unknown variant `chlid`, expected one of `child`, `childSet`, `sync`, `ref`, `if`, `finalizer`",
        ),
        (
            "wrong type",
            definition("  - child: {id: c, template: {}, readyWhen: true}\n"),
            "spec.steps[0].child.readyWhen: invalid type: boolean `true`, expected a sequence",
        ),
        (
            "includeWhen that is not a bool",
            definition(&child(
                "c",
                "      includeWhen: [\"${self.spec.size}\"]\n",
                "{}",
            )),
            "spec.steps[0].child.includeWhen[0]: ${self.spec.size}: expected a bool, the expression yields a number",
        ),
        (
            "unknown binding",
            definition(&child("c", "", "{x: \"${config.data.x}\"}")),
            "spec.steps[0].child.template.data.x: ${config.data.x}: unknown binding \"config\"; known here: self (at 1:1 of the expression)\n  config.data.x\n  ^",
        ),
        (
            "unknown field of the parent",
            definition(&child("c", "", "{g: \"${self.spec.greting}\"}")),
            "spec.steps[0].child.template.data.g: ${self.spec.greting}: self.spec has no field \"greting\"; its fields are: greeting, items, size (at 1:10 of the expression)",
        ),
        (
            "a value of the wrong type for the child's schema",
            definition(&child("c", "", "{n: \"${self.spec.size}\"}")),
            "spec.steps[0].child.template.data.n: expected a string, ${self.spec.size} yields a number",
        ),
        (
            "an unknown field of the child's kind",
            definition(
                "  - child:\n      id: c\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: x}\n        dat: {}\n",
            ),
            "spec.steps[0].child.template.dat: unknown field \"dat\"; the schema has: apiVersion, binaryData, data, immutable, kind, metadata",
        ),
        (
            "expression that does not parse",
            definition(&child("c", "", "{g: \"${self.spec.greeting +}\"}")),
            "spec.steps[0].child.template.data.g: ${self.spec.greeting +}:",
        ),
        (
            "unterminated expression",
            definition(&child("c", "", "{g: \"${self.spec.greeting\"}")),
            "spec.steps[0].child.template.data.g: unterminated ${ at character 1 of \"${self.spec.greeting\"",
        ),
        (
            "readyWhen reading a field the child does not have",
            definition(&child(
                "c",
                "      readyWhen: [\"${child.spec.ready}\"]\n",
                "{}",
            )),
            "spec.steps[0].child.readyWhen[0]: ${child.spec.ready}: child has no field \"spec\"",
        ),
        (
            "cycle between bindings",
            definition(&format!(
                "{}{}",
                child("a", "", "{x: \"${b.metadata.name}\"}"),
                child("b", "", "{x: \"${a.metadata.name}\"}")
            )),
            "spec.steps: cycle between bindings: a -> b -> a",
        ),
        (
            "a later binding is read after it is made",
            definition(&format!(
                "{}{}",
                child("a", "", "{x: \"${b.metadata.name}\"}"),
                child("b", "", "{}")
            )),
            "",
        ),
        (
            "duplicate id",
            definition(&format!("{}{}", child("a", "", "{}"), child("a", "", "{}"))),
            "spec.steps[1].child.id: the id \"a\" is used by another step",
        ),
        (
            "a child without a name",
            definition(
                "  - child:\n      id: c\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {}}\n",
            ),
            "spec.steps[0].child.template.metadata.name: a child needs a name",
        ),
        (
            "a ref with neither name nor selector",
            definition("  - ref: {id: settings, apiVersion: v1, kind: ConfigMap}\n"),
            "spec.steps[0].ref: a ref needs a name or a selector",
        ),
        (
            "forEach over a string",
            definition(&format!(
                "  - childSet:\n      id: s\n      forEach: \"${{self.spec.greeting}}\"\n      itemId: \"${{each}}\"\n      template:\n{CONFIG_MAP}"
            )),
            "spec.steps[0].childSet.forEach: ${self.spec.greeting}: expected a list, the expression yields a string",
        ),
        (
            "each item's fields are checked",
            definition(&format!(
                "  - childSet:\n      id: s\n      forEach: \"${{self.spec.items}}\"\n      itemId: \"${{each.nam}}\"\n      template:\n{CONFIG_MAP}"
            )),
            "spec.steps[0].childSet.itemId: ${each.nam}: each has no field \"nam\"; its fields are: name",
        ),
        (
            "if condition that is not a bool",
            definition("  - if:\n      condition: \"${self.spec.greeting}\"\n      then: []\n"),
            "spec.steps[0].if.condition: ${self.spec.greeting}: expected a bool, the expression yields a string",
        ),
        (
            "comparing a number with a string",
            definition("  - if:\n      condition: \"self.spec.size == 'big'\"\n      then: []\n"),
            "spec.steps[0].if.condition: ${self.spec.size == 'big'}: cannot compare a number with a string",
        ),
        (
            "unqualified finalizer",
            definition("  - finalizer: {name: cleanup, steps: []}\n"),
            "spec.steps[0].finalizer.name: \"cleanup\" is not a qualified finalizer name",
        ),
        ("not YAML", "spec: [".to_owned(), "widgets.yaml: not YAML"),
    ];
    let mut failures = Vec::new();
    for (name, text, expected) in cases {
        let errors = errors_of(&text).await;
        let matches = match expected {
            "" => errors.is_empty(),
            expected => errors.contains(expected),
        };
        if !matches {
            failures.push(format!(
                "{name}:\n  expected: {expected}\n  got:      {errors}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test]
async fn every_error_of_a_definition_is_reported_at_once() {
    let text = definition(&format!(
        "{}{}",
        child("a", "", "{x: \"${self.spec.nope}\"}"),
        child("b", "      includeWhen: [\"${self.spec.size}\"]\n", "{}")
    ));
    let errors = errors_of(&text).await;
    assert_eq!(
        errors
            .lines()
            .filter(|l| l.starts_with("widgets.yaml") || l.starts_with("spec."))
            .count(),
        2,
        "{errors}"
    );
    assert!(
        errors.contains("spec.steps[0].child.template.data.x"),
        "{errors}"
    );
    assert!(
        errors.contains("spec.steps[1].child.includeWhen[0]"),
        "{errors}"
    );
}

#[tokio::test]
async fn the_bundled_examples_compile_without_warnings_in_strict_mode() {
    for file in ["widgets.yaml", "webapp.yaml", "configsets.yaml"] {
        let path = format!("{}/examples/definitions/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let strict = text.replacen("spec:\n", "spec:\n  strict: true\n", 1);
        assert_eq!(errors_of(&strict).await, "", "{file}");
    }
}

#[tokio::test]
async fn optional_chains_are_type_checked_at_load() {
    let text = definition(&child(
        "c",
        "",
        "{big: \"${self.spec.?size > 3 ? 'big' : 'small'}\", owner: \"${self.spec.?greeting}\"}",
    ));
    assert_eq!(
        errors_of(&text).await,
        "spec.steps[0].child.template.data.big: ${self.spec.?size > 3 ? 'big' : 'small'}: self.spec.?size is optional(number), and > takes a plain value: use self.spec.?size.orValue(0), or test has(self.spec.size) first (at 1:10 of the expression)\n  self.spec.?size > 3 ? 'big' : 'small'\n           ^\n\
         spec.steps[0].child.template.data.owner: ${self.spec.?greeting} yields optional(string), which cannot be written into an object: use ${self.spec.?greeting.orValue('')}"
    );
}

#[tokio::test]
async fn bytes_written_into_an_object_are_refused_at_load_with_the_encodings() {
    let text = definition(&child(
        "c",
        "      includeWhen: [\"${hash.md5(self.spec.greeting) != b''}\"]\n",
        "{digest: \"${hash.md5(self.spec.greeting)}\", b64: \"${base64.encode(hash.sha256(self.spec.greeting))}\", hex: \"${'%x'.format([hash.fnv64a(self.spec.greeting)])}\", raw: \"${base64.encode(self.spec.greeting)}\", id: \"id-${base64.decode('aGk=')}\"}",
    ));
    assert_eq!(
        errors_of(&text).await,
        "spec.steps[0].child.template.data.digest: ${hash.md5(self.spec.greeting)} yields bytes, which cannot be written into an object: encode them, as base64 with ${base64.encode(hash.md5(self.spec.greeting))} or as hex with ${'%x'.format([hash.md5(self.spec.greeting)])}\n\
         spec.steps[0].child.template.data.raw: ${base64.encode(self.spec.greeting)}: base64.encode takes (bytes), not (a string): convert the string with bytes(...) (at 1:14 of the expression)\n  base64.encode(self.spec.greeting)\n               ^\n\
         spec.steps[0].child.template.data.id: ${base64.decode('aGk=')} yields bytes, which cannot be written into an object: encode them, as base64 with ${base64.encode(base64.decode('aGk='))} or as hex with ${'%x'.format([base64.decode('aGk=')])}"
    );
}

#[tokio::test]
async fn one_mistake_is_one_error() {
    // A child set whose template reads an unknown binding, and a sync that counts its
    // children: only the unknown binding is reported, not a follow-on type error.
    let text = definition(
        "  - childSet:\n      id: configs\n      forEach: \"${self.spec.items}\"\n      itemId: \"${each.name}\"\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: \"${self.metadata.name}-${each.name}\"}\n        data: {x: \"${sise}\"}\n  - sync:\n      status:\n        configCount: \"${size(configs)}\"\n        first: \"${configs[0].data.x}\"\n",
    )
    .replace(
        "        spec:\n          type: object",
        "        status:\n          type: object\n          properties:\n            configCount: {type: integer}\n            first: {type: string}\n        spec:\n          type: object",
    );
    let errors = errors_of(&text).await;
    assert_eq!(
        errors.lines().next().unwrap_or_default(),
        "spec.steps[0].childSet.template.data.x: ${sise}: unknown binding \"sise\"; known here: each, self (at 1:1 of the expression)",
        "{errors}"
    );
    assert_eq!(
        errors.lines().filter(|l| l.starts_with("spec.")).count(),
        1,
        "{errors}"
    );
}

#[tokio::test]
async fn a_kind_its_served_group_version_lacks_is_an_error_listing_the_kinds_there() {
    let text = definition(&child("c", "", "{}").replace("kind: ConfigMap", "kind: ResourceQuotta"));
    let errors = errors_of(&text).await;
    let first = errors.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(
            "spec.steps[0].child.template.kind: v1 has no kind \"ResourceQuotta\"; its kinds are: "
        ),
        "{errors}"
    );
    assert!(first.contains(", ConfigMap, "), "{errors}");
    assert!(first.contains(", ResourceQuota, "), "{errors}");
    assert!(!first.contains("ConfigMapList"), "{errors}");

    let text = definition(&child("c", "", "{}"))
        .replace("  schema:\n", "  unused:\n")
        .replace("kind: Widget", "kind: Deploymnet")
        .replace("example.com/v1", "apps/v1");
    let (head, _) = text.split_once("  unused:").unwrap();
    let (_, steps) = text.split_once("  steps:").unwrap();
    let errors = errors_of(&format!("{head}  steps:{steps}")).await;
    assert!(
        errors.starts_with("spec.for.kind: apps/v1 has no kind \"Deploymnet\"; its kinds are: ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet"),
        "{errors}"
    );
}

#[tokio::test]
async fn a_kind_of_a_group_not_served_yet_is_a_warning() {
    let text = definition(
        &child("c", "", "{}")
            .replace("apiVersion: v1", "apiVersion: example.org/v1")
            .replace("kind: ConfigMap", "kind: Gadget")
            .replace("        data: {}\n", ""),
    );
    let compiled = compiled(&text).await;
    let warnings: Vec<String> = compiled.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "spec.steps[0].child.template.kind: the cluster does not serve example.org/v1 (yet), so Gadget is not checked: the definition waits for it (KindNotServed) and is checked when it appears"
        ]
    );
    assert_eq!(
        compiled
            .not_served
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["example.org/v1/Gadget"]
    );
}

#[tokio::test]
async fn what_a_childs_template_sets_is_present_and_a_repeated_warning_is_said_once() {
    let deployment = r#"  - child:
      id: web
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${self.metadata.name}"}
        spec:
          selector:
            matchLabels: {app: web}
          template:
            metadata:
              labels: {app: web}
            spec:
              containers:
              - {name: web, image: "${self.spec.greeting}"}
"#;
    // The Deployment's selector and its container's name are set by its template; its
    // replicas are not (nor required, nor defaulted by the schema).
    let reader = child(
        "config",
        "",
        "{app: \"${web.spec.selector.matchLabels['app']}\", container: \"${web.spec.template.spec.containers[0].name}\", replicas: \"${string(web.spec.replicas)}\", size: \"${string(self.spec.size)}\"}",
    );
    let compiled = compiled(&definition(&format!("{deployment}{reader}"))).await;
    let warnings: Vec<String> = compiled.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        [
            "spec.steps[0].child.template.spec.template.spec.containers[0].image: ${self.spec.greeting}: self.spec may be absent (the schema neither requires nor defaults it): read it as self.?spec and what is under it with .?field, or guard it with has(self.spec) (at 1:5 of the expression)\n  self.spec.greeting\n      ^\n  and 1 more: spec.steps[1].child.template.data.size",
            "spec.steps[1].child.template.data.replicas: ${string(web.spec.replicas)}: web.spec.replicas may be absent (the schema neither requires nor defaults it): read it as web.spec.?replicas.orValue(0), or guard it with has(web.spec.replicas) (at 1:16 of the expression)\n  string(web.spec.replicas)\n                 ^",
        ]
    );
}

#[tokio::test]
async fn plain_template_text_reads_no_binding_even_when_it_parses_as_cel() {
    // `a-b.example.com` parses as CEL (`a - b.example.com`), but a template string without
    // `${}` is text: the two steps do not read each other.
    let text = definition(&format!(
        "{}{}",
        child("a", "", "{host: a-b.example.com}"),
        child("b", "", "{host: a-b.example.com}")
    ));
    assert_eq!(errors_of(&text).await, "");
}
