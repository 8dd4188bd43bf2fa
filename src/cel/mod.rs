//! The CEL engine: the shared environment, conditions compiled once and evaluated over
//! `self` (the resource as JSON) and `now` (the request time), the reads an expression
//! makes, and CEL's errors in CEL's words. Reconcilers use it for
//! [`Predicate::cel`](crate::reconcilers::Predicate::cel), definitions for their expressions;
//! it depends on neither.
//!
//! JSON integers are CEL `int`s (so `self.spec.replicas + 1` and `self.spec.replicas == 3`
//! work), strings, lists and maps borrow from the resource's JSON, and the standard library,
//! the strings extension and `has()` are available. An expression that does not yield a
//! bool, or fails (a missing field read without `has()`), is false and logged.
//!
//! An expression of the common shapes (fields of `self` compared with literals, `has()`,
//! `&&`, `||`, `!`, string prefixes, `exists()` over a list: see `direct`) is first
//! evaluated directly on the resource; the interpreter evaluates it when that cannot decide
//! (a failure, or a value the direct evaluator does not read), so results and logged
//! failures are the interpreter's.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, LazyLock};

use cel::common::types::CelTimestamp;
use cel::{ExecutionError, ParseErrors, Program, Value};
use jiff::Timestamp;
use kube::api::DynamicObject;
use serde::Serialize;
use serde_json::Value as Json;

mod collections;
mod computed;
mod direct;
mod dynamic;
mod errors;
mod json;
mod kro;
mod kro_runtime;
mod random;
mod reads;
mod view;

pub(crate) use errors::describe;
pub(crate) use json::to_json;
pub(crate) use reads::VariableReads;

pub(crate) use direct::Direct;
use reads::Reads;
pub(crate) use view::metadata_json;
use view::{Unknown, View};

/// A CEL expression could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CelError {
    /// The expression does not parse; `snippet` shows its line with a caret under `column`.
    #[error("invalid CEL expression at {line}:{column}: {message}\n{snippet}")]
    Invalid {
        /// The expression as given.
        expression: String,
        /// The line of the error, from 1.
        line: usize,
        /// The column of the error, from 1.
        column: usize,
        /// What is wrong.
        message: String,
        /// The offending line, indented by two spaces, and a caret under the column.
        snippet: String,
    },
    /// The CEL environment (standard library and extensions) could not be built.
    #[error("the CEL environment could not be built: {0}")]
    Environment(String),
}

/// The environment every expression is compiled and run in, built once per process: the
/// standard library, the strings extension, KRO's `random`, `hash`, `json`, `base64`,
/// `lists` and maps libraries, Kubernetes' libraries (lists, regex, URL, IP/CIDR, quantity,
/// semver), cel-go's `cel.bind` and two-variable comprehensions, and optional syntax
/// (`self.spec.?size.orValue(1)`).
static ENV: LazyLock<Result<Arc<cel::Env>, String>> = LazyLock::new(|| {
    let mut env = cel::Env::stdlib().with_optional_support(true);
    env.add_extension(cel::extensions::strings)
        .map_err(|e| e.to_string())?;
    random::extension(&mut env).map_err(|e| e.to_string())?;
    kro::extension(&mut env).map_err(|e| e.to_string())?;
    json::extension(&mut env).map_err(|e| e.to_string())?;
    collections::extension(&mut env).map_err(|e| e.to_string())?;
    dynrec_k8s_cel::extension(&mut env).map_err(|e| e.to_string())?;
    Ok(Arc::new(env))
});

/// The shared CEL environment (for expressions compiled outside a [`Condition`]).
pub(crate) fn env() -> Result<Arc<cel::Env>, CelError> {
    ENV.as_ref()
        .cloned()
        .map_err(|e| CelError::Environment(e.clone()))
}

/// A compiled condition (an expression that yields a bool) with the environment it runs in.
pub(crate) struct Condition {
    expression: String,
    program: Program,
    env: Arc<cel::Env>,
    reads: VariableReads,
    /// Its direct form, if it has one.
    direct: Option<Direct>,
}

/// Why an evaluation did not yield a bool.
#[derive(Debug)]
pub(crate) enum Failure {
    Serialize(serde_json::Error),
    Execute(ExecutionError),
    NotBool(Value),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Serialize(e) => write!(f, "the resource cannot be serialized: {e}"),
            Failure::Execute(e) => write!(f, "{}", describe(e)),
            Failure::NotBool(v) => write!(f, "the result is of type {}, not bool", v.type_of()),
        }
    }
}

impl Condition {
    /// Compiles `expression` in the shared environment.
    pub(crate) fn compile(expression: &str) -> Result<Self, CelError> {
        let env = ENV.as_ref().map_err(|e| CelError::Environment(e.clone()))?;
        let program = env
            .compile(expression)
            .map_err(|errors| invalid(expression, &errors))?;
        let reads = VariableReads::of(program.expression());
        let direct = Direct::compile(program.expression());
        Ok(Self {
            expression: expression.to_owned(),
            program,
            env: env.clone(),
            reads,
            direct,
        })
    }

    /// The expression as written.
    pub(crate) fn expression(&self) -> &str {
        &self.expression
    }

    /// Evaluates over `resource` at `now`: a `DynamicObject` is read in place (only the
    /// fields the expression reads), anything else as its JSON.
    pub(crate) fn evaluate_resource<R: Serialize + 'static>(
        &self,
        resource: &R,
        now: Timestamp,
    ) -> Result<bool, Failure> {
        match (resource as &dyn Any).downcast_ref::<DynamicObject>() {
            Some(object) => self.evaluate_object(object, now),
            None => serde_json::to_value(resource)
                .map_err(Failure::Serialize)
                .and_then(|json| self.evaluate(&json, now)),
        }
    }

    /// Evaluates over `resource` as JSON.
    fn evaluate(&self, resource: &Json, now: Timestamp) -> Result<bool, Failure> {
        match self.decide(Ok(View::of_json(resource))) {
            Some(result) => Ok(result),
            None => self.interpret(resource, now),
        }
    }

    /// Evaluates over an object without serializing the parts the expression does not read.
    fn evaluate_object(&self, object: &DynamicObject, now: Timestamp) -> Result<bool, Failure> {
        match self.decide(View::of_object(object)) {
            Some(result) => Ok(result),
            None => self.interpret_object(object, now),
        }
    }

    /// The direct evaluator's result over `resource`, if it has one.
    fn decide(&self, resource: Result<View<'_>, Unknown>) -> Option<bool> {
        let direct = self.direct.as_ref()?;
        resource.and_then(|resource| direct.test(resource)).ok()
    }

    /// Runs the interpreter over `resource`.
    fn interpret(&self, resource: &Json, now: Timestamp) -> Result<bool, Failure> {
        let mut ctx = self.context(now);
        self.reads.bind_json(&mut ctx, "self", resource);
        self.run(&ctx)
    }

    /// Runs the interpreter over an object, binding only the parts the expression reads.
    fn interpret_object(&self, object: &DynamicObject, now: Timestamp) -> Result<bool, Failure> {
        let (Some(Reads::Fields(fields)), Json::Object(data)) =
            (self.reads.get("self"), &object.data)
        else {
            let json = serde_json::to_value(object).map_err(Failure::Serialize)?;
            return self.interpret(&json, now);
        };
        let typed = typed_fields(object, fields).map_err(Failure::Serialize)?;
        let mut ctx = self.context(now);
        self.reads.bind_fields(&mut ctx, "self", |name| {
            typed
                .get_key_value(name)
                .or_else(|| data.get_key_value(name))
                .map(|(k, v)| (k.as_str(), v))
        });
        self.run(&ctx)
    }

    /// A context with `now` bound, if the expression reads it.
    fn context<'a>(&self, now: Timestamp) -> cel::Context<'a, 'a> {
        let mut ctx = cel::Context::with_env(self.env.clone());
        if self.reads.reads("now")
            && let Some(now) = to_chrono(now)
        {
            ctx.add_variable_as_val("now", Box::new(CelTimestamp::from(now)));
        }
        ctx
    }

    /// Runs the program; a bool or why not.
    fn run(&self, ctx: &cel::Context) -> Result<bool, Failure> {
        match self.program.execute(ctx).map_err(Failure::Execute)? {
            Value::Bool(b) => Ok(b),
            other => Err(Failure::NotBool(other)),
        }
    }
}

/// The fields of `object` kept outside its JSON data (`apiVersion`, `kind`, `metadata`) that
/// `fields` names, as JSON.
fn typed_fields(
    object: &DynamicObject,
    fields: &BTreeMap<String, Reads>,
) -> Result<serde_json::Map<String, Json>, serde_json::Error> {
    let mut typed = serde_json::Map::new();
    if let Some(types) = &object.types {
        for (name, value) in [("apiVersion", &types.api_version), ("kind", &types.kind)] {
            if fields.contains_key(name) {
                typed.insert(name.to_owned(), Json::String(value.clone()));
            }
        }
    }
    if fields.contains_key("metadata") {
        typed.insert(
            "metadata".to_owned(),
            serde_json::to_value(&object.metadata)?,
        );
    }
    Ok(typed)
}

/// `now` as a CEL timestamp (UTC).
pub(crate) fn to_chrono(now: Timestamp) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    let nanos = now.as_nanosecond();
    let seconds = i64::try_from(nanos.div_euclid(1_000_000_000)).ok()?;
    let subsec = u32::try_from(nanos.rem_euclid(1_000_000_000)).ok()?;
    chrono::DateTime::from_timestamp(seconds, subsec).map(|t| t.fixed_offset())
}

/// The first parse error, with its position and a caret snippet.
pub(crate) fn invalid(expression: &str, errors: &ParseErrors) -> CelError {
    let (line, column, message) = match errors.errors.first() {
        Some(e) => (to_position(e.pos.0), to_position(e.pos.1), e.msg.clone()),
        None => (1, 1, "invalid expression".to_owned()),
    };
    let text = expression.lines().nth(line - 1).unwrap_or_default();
    let indent: String = text
        .chars()
        .chain(std::iter::repeat(' '))
        .take(column - 1)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let snippet = format!("  {text}\n  {indent}^");
    CelError::Invalid {
        expression: expression.to_owned(),
        line,
        column,
        message,
        snippet,
    }
}

/// A parser position (1-based line or column) as a `usize`, at least 1.
pub(crate) fn to_position(pos: isize) -> usize {
    usize::try_from(pos).unwrap_or(0).max(1)
}

/// Evaluates a closed expression in the shared environment: its value as JSON, or the
/// error as the definitions describe it.
#[cfg(test)]
pub(crate) fn evaluate_closed(expression: &str) -> Result<Json, String> {
    let env = env().map_err(|e| e.to_string())?;
    let program = env.compile(expression).map_err(|e| format!("{e:?}"))?;
    let value = program
        .execute(&cel::Context::with_env(env))
        .map_err(|e| describe(&e))?;
    to_json(&value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(expression: &str, resource: Json) -> Result<bool, Failure> {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        Condition::compile(expression)
            .unwrap()
            .evaluate(&resource, now)
    }

    fn deployment() -> Json {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"replicas": 3, "paused": false, "ratio": 0.5,
                     "template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}},
        })
    }

    /// Kubernetes' libraries, as KRO's environment has them (values from their tests).
    #[test]
    fn kubernetes_libraries_are_bound() {
        let cases = [
            ("[100, 200, 300].sum()", json!(600)),
            ("[1, 3, 2].isSorted()", json!(false)),
            ("[1, 2, 1].lastIndexOf(1)", json!(2)),
            ("quantity('500Mi').isLessThan(quantity('1Gi'))", json!(true)),
            ("quantity('1Gi') == quantity('1024Mi')", json!(true)),
            ("quantity('50.703k').asInteger()", json!(50703)),
            ("isQuantity('20x')", json!(false)),
            ("'abc 123'.find('[0-9]+')", json!("123")),
            ("url('https://example.com:80/path').getPort()", json!("80")),
            ("ip('10.0.0.1').family()", json!(4)),
            ("cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))", json!(true)),
            ("cel.bind(x, 2, x * x)", json!(4)),
        ];
        for (expression, want) in cases {
            assert_eq!(evaluate_closed(expression), Ok(want), "{expression}");
        }
    }

    #[test]
    fn json_integers_are_ints() {
        for expression in [
            "self.spec.replicas == 3",
            "self.spec.replicas + 1 == 4",
            "self.spec.replicas * 2 - 1 == 5",
            "self.spec.replicas > 2 && self.spec.replicas < 4",
            "self.spec.replicas % 2 == 1",
            "type(self.spec.replicas) == int",
            "self.spec.ratio == 0.5",
            "size(self.spec.template.spec.containers) == 1",
        ] {
            assert!(eval(expression, deployment()).unwrap(), "{expression}");
        }
        assert!(!eval("self.spec.replicas == 4", deployment()).unwrap());
    }

    #[test]
    fn an_object_evaluates_as_its_json_does() {
        let object: DynamicObject = serde_json::from_value(deployment()).unwrap();
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        for expression in [
            "self.kind == 'Deployment' && self.apiVersion == 'apps/v1'",
            "self.metadata.name == 'web' && self.spec.replicas == 3",
            "self.metadata.labels['app.kubernetes.io/name'] == 'web'",
            "has(self.status)",
            "!has(self.metadata.namespace)",
            "size(self) == 4",
            "self.status.ready",
            "self.spec.replicas",
        ] {
            let program = Condition::compile(expression).unwrap();
            let json = serde_json::to_value(&object).unwrap();
            assert_eq!(
                format!("{:?}", program.interpret_object(&object, now)),
                format!("{:?}", program.interpret(&json, now)),
                "{expression}"
            );
        }
    }

    /// Resources for the direct evaluator to agree with the interpreter on: every kind of
    /// value, fields present and absent, of the expected type and not, typed and untyped.
    fn resources() -> Vec<Json> {
        let full = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "u-1", "generation": 2,
                "labels": {"app": "web"}, "annotations": {"note": ""},
                "creationTimestamp": "2026-11-22T00:00:00Z", "finalizers": ["f"]},
            "spec": {"replicas": 3, "ratio": 0.5, "float": 3.0, "negative": -1,
                "big": u64::MAX, "name": "web", "paused": false, "nothing": null,
                "nested": {"deep": {"value": "x"}}, "empty": [],
                "items": [{"name": "a", "tags": ["a", "b"]}, {"name": "b", "tags": []}]},
            "status": {"ready": true, "conditions": [
                {"type": "Progressing", "status": "True"},
                {"type": "Ready", "status": "True"}]},
        });
        let mut wrong_types = full.clone();
        wrong_types["spec"] = json!({"replicas": "3", "ratio": "0.5", "float": null,
            "name": 3, "paused": "no", "nested": [], "empty": {}, "items": [1, "a"]});
        wrong_types["status"] = json!({"ready": 1, "conditions": [
            "Ready", {"type": "Ready", "status": true}]});
        wrong_types["metadata"]["labels"] = json!({});
        let mut doubles = full.clone();
        doubles["spec"]["replicas"] = json!(2.5);
        doubles["spec"]["big"] = json!(-3);
        doubles["status"]["conditions"] = json!([
            {"type": "Ready", "status": "False"}, {"type": "Ready"}]);
        let sparse = json!({"metadata": {}, "spec": {"replicas": 1}});
        vec![full, wrong_types, doubles, sparse, json!({})]
    }

    /// Expressions of the shapes the direct evaluator knows, over [`resources`].
    const DIRECT: &[&str] = &[
        "self.spec.replicas > 2",
        "self.spec.replicas >= 3",
        "self.spec.replicas < 3",
        "self.spec.replicas <= 2",
        "self.spec.replicas == 3",
        "self.spec.replicas != 3",
        "self.spec.replicas == 3.0",
        "self.spec.replicas > 2.5",
        "self.spec.replicas == 3u",
        "self.spec.replicas > 2u",
        "self.spec.replicas == '3'",
        "self.spec.replicas > '3'",
        "self.spec.big > 1",
        "self.spec.big == 18446744073709551615u",
        "self.spec.big > 1.0",
        "self.spec.negative < 0u",
        "self.spec.negative == -1",
        "self.spec.ratio == 0.5",
        "self.spec.ratio < 1",
        "self.spec.float == 3",
        "self.spec.float > self.spec.replicas",
        "self.spec.name == 'web'",
        "self.spec.name < 'x'",
        "self.spec.name == 3",
        "self.spec.name > 3",
        "self.spec.paused == false",
        "self.spec.paused",
        "!self.spec.paused",
        "self.spec.paused < true",
        "self.spec.nothing == null",
        "self.spec.nothing != null",
        "self.spec.nothing < 1",
        "self.spec.missing == 1",
        "self.spec == null",
        "self.spec.nested == self.spec.nested",
        "self.spec.nested.deep.value == 'x'",
        "has(self.spec)",
        "has(self.spec.nested.deep)",
        "has(self.spec.missing)",
        "has(self.spec.missing.deeper)",
        "has(self.spec.name.x)",
        "has(self.spec.empty.x)",
        "has(self.status)",
        "!has(self.status) || self.status.ready",
        "has(self.status) && self.status.ready",
        "self.status.ready || true",
        "self.status.ready && false",
        "self.status.ready || false",
        "self.status.ready && true",
        "false && self.status.ready",
        "true || self.status.ready",
        "self.nothing.here || self.spec.replicas > 2",
        "self.nothing.here && self.spec.replicas > 2",
        "self.metadata.creationTimestamp == '' || true",
        "self.spec.replicas > 2 && self.metadata.name.startsWith('we')",
        "self.metadata.name.endsWith('eb')",
        "self.metadata.name.contains('e')",
        "self.metadata.name.startsWith(1)",
        "self.spec.replicas.startsWith('3')",
        "self.metadata.name == 'web' && self.metadata.namespace == 'default'",
        "self.metadata.labels.app == 'web'",
        "has(self.metadata.labels)",
        "has(self.metadata.labels.app)",
        "has(self.metadata.annotations.note)",
        "self.metadata.annotations.note == ''",
        "self.metadata.generation == 2",
        "self.metadata.generation > 1u",
        "self.metadata.uid == 'u-1'",
        "has(self.metadata.name)",
        "has(self.metadata.generateName)",
        "has(self.metadata.creationTimestamp)",
        "self.metadata.creationTimestamp == '2026-11-22T00:00:00Z'",
        "has(self.metadata.finalizers)",
        "has(self.metadata.deletionTimestamp)",
        "self.metadata.nope == 1",
        "has(self.metadata.nope)",
        "has(self.metadata)",
        "self.kind == 'Deployment'",
        "self.apiVersion == 'apps/v1'",
        "has(self.kind)",
        "has(self.data)",
        "self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
        "self.status.conditions.all(c, c.status == 'True')",
        "self.status.conditions.exists(c, c.missing == 1)",
        "self.status.conditions.all(c, has(c.type))",
        "self.status.conditions.exists(c, c.status)",
        "self.spec.empty.all(x, x > 1)",
        "self.spec.empty.exists(x, x > 1)",
        "self.spec.nested.exists(k, k == 'deep')",
        "self.spec.items.exists(i, i.tags.exists(t, t == i.name))",
        "self.spec.items.all(i, i.tags.all(t, t != i.name || self.spec.replicas > 2))",
        "self.spec.replicas",
        "self.metadata.name",
        "1 < 2",
        "null == null",
        "'a' < 'b'",
        "true",
        "!(self.spec.replicas > 2) || has(self.status.ready) && self.status.ready",
    ];

    /// The direct evaluator decides an expression only as the interpreter does, and whatever
    /// it cannot decide the interpreter does: `evaluate` gives the interpreter's result
    /// (bool or failure, with its message) for every expression over every resource, typed
    /// as a `DynamicObject` and as plain JSON.
    #[test]
    fn the_direct_evaluator_agrees_with_the_interpreter() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let mut decided = 0;
        for expression in DIRECT {
            let program = Condition::compile(expression).unwrap();
            let direct = program.direct.as_ref().expect(expression);
            for json in resources() {
                let object: DynamicObject = serde_json::from_value(json.clone()).unwrap();
                let cases = [
                    (
                        View::of_object(&object).and_then(|view| direct.test(view)),
                        program.interpret_object(&object, now),
                        program.evaluate_object(&object, now),
                    ),
                    (
                        direct.test(View::of_json(&json)),
                        program.interpret(&json, now),
                        program.evaluate(&json, now),
                    ),
                ];
                for (direct, interpreted, evaluated) in cases {
                    let interpreted = format!("{interpreted:?}");
                    if let Ok(result) = direct {
                        let expected = format!("Ok({result})");
                        assert_eq!(expected, interpreted, "{expression} over {json}");
                        decided += 1;
                    }
                    assert_eq!(
                        format!("{evaluated:?}"),
                        interpreted,
                        "{expression} over {json}"
                    );
                }
            }
        }
        assert!(
            decided > DIRECT.len() * 5,
            "only {decided} decided directly"
        );
    }

    /// The conditions of the micro bench are decided without the interpreter.
    #[test]
    fn common_conditions_are_decided_directly() {
        let object: DynamicObject = serde_json::from_value(deployment()).unwrap();
        for expression in [
            "self.spec.replicas > 2",
            "self.spec.replicas > 2 && self.metadata.name.startsWith('we') \
                && has(self.spec.template) && self.spec.template.spec.containers.exists(c, \
                c.name == 'app' && c.image.startsWith('nginx'))",
        ] {
            let program = Condition::compile(expression).unwrap();
            let direct = program.direct.as_ref().expect(expression);
            assert_eq!(
                View::of_object(&object).and_then(|view| direct.test(view)),
                Ok(true)
            );
        }
    }

    #[test]
    fn integers_beyond_i64_are_uints() {
        let resource = json!({"big": u64::MAX});
        assert!(eval("self.big == 18446744073709551615u", resource).unwrap());
    }

    #[test]
    fn strings_extension_and_macros() {
        for expression in [
            "self.metadata.name.upperAscii() == 'WEB'",
            "self.spec.template.spec.containers[0].image.split(':')[1] == '1.27'",
            "self.spec.template.spec.containers.all(c, c.image.startsWith('nginx'))",
            "self.metadata.labels['app.kubernetes.io/name'] == self.metadata.name",
            "self.metadata.name.matches('^w.b$')",
        ] {
            assert!(eval(expression, deployment()).unwrap(), "{expression}");
        }
    }

    #[test]
    fn has_guards_missing_fields_and_missing_fields_fail() {
        assert!(!eval("has(self.status) && self.status.ready", deployment()).unwrap());
        assert!(eval("!has(self.status)", deployment()).unwrap());
        assert!(matches!(
            eval("self.status.ready", deployment()),
            Err(Failure::Execute(_))
        ));
    }

    #[test]
    fn non_bool_results_are_failures() {
        let failure = eval("self.spec.replicas", deployment()).unwrap_err();
        assert!(
            matches!(failure, Failure::NotBool(Value::Int(3))),
            "{failure}"
        );
        assert!(
            failure
                .to_string()
                .contains("the result is of type int, not bool"),
            "{failure}"
        );
    }

    #[test]
    fn now_is_a_timestamp() {
        assert!(eval("now == timestamp('2023-11-14T22:13:20Z')", json!({})).unwrap());
        let resource = json!({"metadata": {"creationTimestamp": "2023-11-14T21:13:20Z"}});
        assert!(
            eval(
                "now - timestamp(self.metadata.creationTimestamp) >= duration('1h')",
                resource
            )
            .unwrap()
        );
    }

    #[test]
    fn compile_errors_carry_position_and_snippet() {
        let cases = [
            (
                "self.spec.a ==",
                1,
                15,
                "  self.spec.a ==\n                ^",
            ),
            ("1 +* 2", 1, 4, "  1 +* 2\n     ^"),
            ("self.a = 1", 1, 8, "  self.a = 1\n         ^"),
            ("self.a &&\n\t(self.b", 2, 9, "  \t(self.b\n  \t       ^"),
            ("", 1, 1, "  \n  ^"),
        ];
        for (expression, line, column, snippet) in cases {
            let Err(err) = Condition::compile(expression) else {
                panic!("{expression:?} compiled");
            };
            let CelError::Invalid {
                expression: text,
                line: l,
                column: c,
                snippet: s,
                ..
            } = &err
            else {
                panic!("{err}");
            };
            assert_eq!((text.as_str(), *l, *c), (expression, line, column), "{err}");
            assert_eq!(s, snippet, "{err}");
            let head = format!("invalid CEL expression at {line}:{column}: ");
            assert!(err.to_string().starts_with(&head), "{err}");
        }
    }

    #[test]
    fn now_converts_before_and_after_the_epoch() {
        let before = Timestamp::from_millisecond(-1_500).unwrap();
        let converted = to_chrono(before).unwrap();
        assert_eq!(converted.timestamp_millis(), -1_500);
    }
}
