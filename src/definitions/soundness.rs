//! The checker's soundness, as a property: over objects generated from schemas (the bundled
//! examples' and two real CRDs, cert-manager's Certificate and Argo Rollouts' Rollout), an
//! expression the checker accepts without a warning never fails when it runs.

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use jiff::Timestamp;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::check::{Findings, Scope, check};
use super::expr::{Bindings, Expression};
use super::schema::Schema;
use super::ty::Ty;

/// A small deterministic generator (splitmix64) driven by a proptest seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self) -> bool {
        self.below(2) == 0
    }
}

/// A value valid under `schema`, as the API server stores it (defaults applied).
fn generate(schema: &Value, rng: &mut Rng, depth: usize) -> Value {
    if let Some(choices) = schema["enum"].as_array().filter(|c| !c.is_empty()) {
        return choices[rng.below(choices.len() as u64) as usize].clone();
    }
    if schema["x-kubernetes-int-or-string"] == json!(true) {
        return match rng.chance() {
            true => json!(rng.below(100)),
            false => json!(format!("{}%", rng.below(100))),
        };
    }
    let ty = schema["type"]
        .as_str()
        .unwrap_or(if schema.get("properties").is_some() {
            "object"
        } else {
            ""
        });
    match ty {
        "string" => json!(["a", "web", "x-1", ""][rng.below(4) as usize]),
        "integer" => json!(rng.below(10)),
        "number" => json!(rng.below(10) as f64 + 0.5),
        "boolean" => json!(rng.chance()),
        "array" if depth > 0 => {
            let items = (0..rng.below(3))
                .map(|_| generate(&schema["items"], rng, depth - 1))
                .collect();
            Value::Array(items)
        }
        "object" if depth > 0 => object(schema, rng, depth),
        "array" => json!([]),
        _ => json!({}),
    }
}

fn object(schema: &Value, rng: &mut Rng, depth: usize) -> Value {
    let required: BTreeSet<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut out = Map::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            if required.contains(name.as_str()) || rng.chance() {
                out.insert(name.clone(), generate(property, rng, depth - 1));
            } else if let Some(default) = property.get("default") {
                out.insert(name.clone(), default.clone());
            }
        }
    } else if schema["additionalProperties"].is_object() {
        for key in ["app", "tier"].iter().take(rng.below(3) as usize) {
            let value = generate(&schema["additionalProperties"], rng, depth - 1);
            out.insert((*key).to_owned(), value);
        }
    }
    Value::Object(out)
}

/// An object of a kind: generated from its schema, with the metadata every stored object has.
fn stored_object(schema: &Value, rng: &mut Rng) -> Value {
    let mut object = object(schema, rng, 8);
    object["apiVersion"] = json!("example.com/v1");
    object["kind"] = json!("Thing");
    object["metadata"] = json!({"name": "t1", "namespace": "default", "uid": "u-1",
        "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"});
    object
}

/// The paths of a schema's fields with their schemas, to `depth` levels (lists' items as
/// `[0]`-free paths: the macros read them).
fn paths(schema: &Value, prefix: &str, depth: usize, out: &mut Vec<(String, Value)>) {
    let Some(properties) = schema["properties"].as_object() else {
        return;
    };
    for (name, property) in properties {
        if !name.chars().all(|c| c.is_ascii_alphanumeric()) {
            continue;
        }
        let path = format!("{prefix}.{name}");
        out.push((path.clone(), property.clone()));
        if depth > 0 {
            paths(property, &path, depth - 1, out);
        }
    }
}

/// `a.b.c` as optional reads all the way (`a.?b.?c`).
fn optional(path: &str) -> String {
    let mut parts = path.split('.');
    let root = parts.next().unwrap_or_default();
    parts.fold(root.to_owned(), |acc, part| format!("{acc}.?{part}"))
}

/// `has()` of every step of `a.b.c` (`has(a.b) && has(a.b.c)`).
fn guard(path: &str) -> String {
    let parts: Vec<&str> = path.split('.').collect();
    (2..=parts.len())
        .map(|n| format!("has({})", parts[..n].join(".")))
        .collect::<Vec<_>>()
        .join(" && ")
}

/// The expressions over one field: plain, optional and guarded reads, comparisons, string
/// building and list macros.
fn expressions_of(path: &str, schema: &Value) -> Vec<String> {
    let opt = optional(path);
    let guarded = guard(path);
    let mut out = vec![path.to_owned()];
    match schema["type"].as_str() {
        Some("string") => out.extend([
            format!("{path} == 'web'"),
            format!("'x-' + {path}"),
            format!("{opt}.orValue('') + '!'"),
            format!("{guarded} ? {path}.startsWith('w') : false"),
            format!("{opt}.orValue('').size() > 1"),
            format!("{opt} == 'web'"),
        ]),
        Some("integer") => out.extend([
            format!("{path} > 1"),
            format!("{opt}.orValue(0) + 1"),
            format!("{guarded} ? {path} * 2 : 0"),
            format!("string({opt}.orValue(1))"),
            format!("{opt} > 1"),
            format!("{path} == 'one'"),
        ]),
        Some("boolean") => out.extend([
            format!("{path} || false"),
            format!("{opt}.orValue(false) && true"),
            format!("!({guarded}) || {path}"),
        ]),
        Some("array") => out.extend([
            format!("size({path}) > 0"),
            format!("{opt}.orValue([]).all(i, true)"),
            format!("{guarded} && {path}.exists(i, i == i)"),
            format!("size({opt}.orValue([]).map(i, i))"),
            format!("{opt}.orValue([]).size()"),
        ]),
        Some("object") => out.extend([
            format!("{opt}.hasValue()"),
            format!("{guarded} ? 'set' : 'unset'"),
        ]),
        _ => {}
    }
    out
}

/// The `${...}` of a definition file that read only `self`.
fn examples_expressions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let body = &rest[start + 2..];
        let Some(end) = body.find("}\"") else { break };
        let source = body[..end].trim().to_owned();
        let reads_only_self = Expression::compile(&source, "e")
            .is_ok_and(|e| e.variables().iter().all(|v| v == "self"));
        if reads_only_self {
            out.push(source);
        }
        rest = &body[end..];
    }
    out
}

/// Each schema with the expressions over it.
fn corpus() -> Vec<(String, Value, Vec<String>)> {
    let mut kinds = Vec::new();
    for (file, text) in [
        (
            "widgets",
            include_str!("../../examples/definitions/widgets.yaml"),
        ),
        (
            "webapp",
            include_str!("../../examples/definitions/webapp.yaml"),
        ),
        (
            "configsets",
            include_str!("../../examples/definitions/configsets.yaml"),
        ),
    ] {
        let definition: Value = serde_saphyr::from_str(text).expect("an example parses");
        let schema = definition["spec"]["schema"]["openAPIV3Schema"].clone();
        kinds.push((file.to_owned(), schema, examples_expressions(text)));
    }
    let real: Value = serde_json::from_str(include_str!("testdata/realworld_schemas.json"))
        .expect("the fixture parses");
    for kind in ["Certificate", "Rollout"] {
        kinds.push((kind.to_owned(), real[kind].clone(), Vec::new()));
    }
    for (_, schema, expressions) in &mut kinds {
        let mut fields = Vec::new();
        paths(schema, "self", 3, &mut fields);
        for (path, field) in fields.iter().take(60) {
            expressions.extend(expressions_of(path, field));
        }
    }
    kinds
}

/// Whether the checker accepts `source` over `schema` without a warning.
fn accepted_clean(expression: &Expression, schema: &Value) -> bool {
    let scope = Scope::default().with("self", Ty::Object(Schema::of_crd(schema.clone())));
    let mut found = Findings::default();
    check(expression, &scope, &mut found).is_ok() && found.warnings.is_empty()
}

/// A kind's schema, the expressions the checker accepts without a warning over it, and
/// how many it refused or warned about.
struct Checked {
    kind: String,
    schema: Value,
    clean: Vec<Expression>,
    not_clean: usize,
}

/// The corpus, checked once.
static CHECKED: LazyLock<Vec<Checked>> = LazyLock::new(|| {
    corpus()
        .into_iter()
        .map(|(kind, schema, sources)| {
            let mut clean = Vec::new();
            let mut not_clean = 0;
            for source in &sources {
                let expression =
                    Expression::compile(source, "e").expect("a corpus expression parses");
                match accepted_clean(&expression, &schema) {
                    true => clean.push(expression),
                    false => not_clean += 1,
                }
            }
            Checked {
                kind,
                schema,
                clean,
                not_clean,
            }
        })
        .collect()
});

#[test]
fn the_corpus_is_large_and_the_checker_both_accepts_and_refuses_some() {
    let clean: usize = CHECKED.iter().map(|c| c.clean.len()).sum();
    let not_clean: usize = CHECKED.iter().map(|c| c.not_clean).sum();
    assert!(
        clean + not_clean >= 300,
        "the corpus has {} expressions",
        clean + not_clean
    );
    assert!(
        clean >= 150 && not_clean >= 50,
        "{clean} clean, {not_clean} not"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn an_expression_accepted_without_warnings_never_fails_at_run_time(seed in any::<u64>()) {
        let now = Timestamp::from_second(1_800_000_000).expect("a timestamp");
        for checked in CHECKED.iter() {
            let mut rng = Rng(seed);
            let object = stored_object(&checked.schema, &mut rng);
            let bindings = Bindings::from([("self".to_owned(), Arc::new(object.clone()))]);
            for expression in &checked.clean {
                if let Err(err) = expression.evaluate(&bindings, now) {
                    prop_assert!(
                        false,
                        "{}: ${{{}}} was accepted but failed: {}\nover {object}",
                        checked.kind,
                        expression.source(),
                        err.message
                    );
                }
            }
        }
    }
}
