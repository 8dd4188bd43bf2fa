//! CEL conditions: compiled when built, evaluated over `self` (the resource as JSON) and `now`.

use std::io::Write;
use std::sync::{Arc, Mutex};

use dynrec::apiserver::ApiServer;
use dynrec::client::Client;
use dynrec::object::{Gvk, ObjectKey};
use dynrec::reconcilers::{CelError, Config, Context, Draft, Predicate};
use jiff::Timestamp;
use kube::api::DynamicObject;
use serde::Serialize;
use serde_json::json;

fn context(server: &ApiServer, now: Timestamp) -> Context {
    let config = Config::new(Client::new(server.client()), "test");
    Context::new(
        ObjectKey::namespaced("default", "w1"),
        Gvk::new("example.dev", "v1", "Widget"),
        config,
        now,
    )
}

fn widget(replicas: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.dev/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default", "creationTimestamp": "2023-11-14T21:00:00Z",
                     "labels": {"tier": "Frontend"}},
        "spec": {"replicas": replicas, "ports": [80, 443]}
    }))
    .expect("test objects are valid")
}

fn noon() -> Timestamp {
    "2023-11-14T22:13:20Z".parse().expect("valid test time")
}

#[tokio::test]
async fn a_cel_condition_reads_a_dynamic_object() {
    let server = ApiServer::new();
    let ctx = context(&server, noon());
    let scaled = Predicate::<DynamicObject>::cel(
        "self.kind == 'Widget' && self.spec.replicas + 1 == 4 && 443 in self.spec.ports",
    )
    .unwrap();
    assert_eq!(
        scaled.description(),
        "self.kind == 'Widget' && self.spec.replicas + 1 == 4 && 443 in self.spec.ports"
    );
    assert!(scaled.test(&ctx, &widget(3)));
    assert!(!scaled.test(&ctx, &widget(5)));

    let frontend =
        Predicate::<DynamicObject>::cel("self.metadata.labels.tier.lowerAscii() == 'frontend'")
            .unwrap();
    assert!(frontend.clone().test(&ctx, &widget(1)));
}

#[tokio::test]
async fn now_is_the_request_time() {
    let server = ApiServer::new();
    let older_than_an_hour = Predicate::<DynamicObject>::cel(
        "now - timestamp(self.metadata.creationTimestamp) > duration('1h')",
    )
    .unwrap();
    assert!(older_than_an_hour.test(&context(&server, noon()), &widget(1)));
    let early: Timestamp = "2023-11-14T21:30:00Z".parse().unwrap();
    assert!(!older_than_an_hour.test(&context(&server, early), &widget(1)));
}

#[tokio::test]
async fn a_cel_condition_reads_any_serializable_type() {
    #[derive(Serialize)]
    struct Duck {
        replicas: u32,
    }
    let server = ApiServer::new();
    let many = Predicate::<Duck>::cel("self.replicas >= 2").unwrap();
    assert!(many.test(&context(&server, noon()), &Duck { replicas: 2 }));
}

/// Log lines written while the test runs.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn kros_semver_and_two_variable_comprehensions_read_the_resource() {
    let server = ApiServer::new();
    let ctx = context(&server, noon());
    for (source, holds) in [
        ("self.spec.ports.all(i, port, port > i)", true),
        (
            "self.spec.ports.exists(i, port, i == 1 && port == 443)",
            true,
        ),
        (
            "self.metadata.labels.existsOne(k, v, k == 'tier' && v == 'Frontend')",
            true,
        ),
        (
            "self.spec.ports.transformList(i, port, port + i) == [80, 444]",
            true,
        ),
        (
            "self.spec.ports.transformMap(i, port, i > 0, port) == {1: 443}",
            true,
        ),
        (
            "self.metadata.labels.transformMapEntry(k, v, {v: k}) == {'Frontend': 'tier'}",
            true,
        ),
        ("semver('1.28.0').isGreaterThan(semver('1.27.9'))", true),
        (
            "semver('v' + string(self.spec.replicas), true).major() == 3",
            true,
        ),
        // a failing call is false, as any failed condition
        ("semver('latest').major() == 0", false),
    ] {
        let predicate =
            Predicate::<DynamicObject>::cel(source).unwrap_or_else(|e| panic!("{source}: {e}"));
        assert_eq!(predicate.test(&ctx, &widget(3)), holds, "{source}");
    }
}

#[tokio::test]
async fn failures_are_false_and_logged_with_the_expression() {
    let server = ApiServer::new();
    let ctx = context(&server, noon());
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();

    let missing = Predicate::<DynamicObject>::cel("self.status.ready").unwrap();
    let not_bool = Predicate::<DynamicObject>::cel("self.spec.replicas").unwrap();
    let guarded = Predicate::<DynamicObject>::cel("has(self.status) && self.status.ready").unwrap();
    tracing::subscriber::with_default(subscriber, || {
        assert!(!missing.test(&ctx, &widget(1)));
        assert!(!not_bool.test(&ctx, &widget(1)));
        assert!(!guarded.test(&ctx, &widget(1)));
    });

    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = logs.lines().collect();
    assert_eq!(lines.len(), 2, "{logs}");
    assert!(lines[0].contains("WARN"), "{logs}");
    assert!(lines[0].contains("expression=self.status.ready"), "{logs}");
    assert!(lines[0].contains("request=default/w1"), "{logs}");
    assert!(
        lines[1].contains("expression=self.spec.replicas")
            && lines[1].contains("the result is of type int, not bool"),
        "{logs}"
    );
}

#[test]
fn a_bad_expression_is_rejected_at_build_time_with_its_position() {
    let err = Predicate::<DynamicObject>::cel("self.spec.replicas ==").unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with("invalid CEL expression at 1:22: Syntax error: "),
        "{message}"
    );
    assert!(
        message.ends_with("\n  self.spec.replicas ==\n                       ^"),
        "{message}"
    );

    let err = Predicate::<DynamicObject>::cel("has(self.spec) &&\n  self.spec.replicas >> 1")
        .unwrap_err();
    assert!(
        matches!(&err, CelError::Invalid { line: 2, column: 23, expression, .. }
            if expression.starts_with("has(self.spec)")),
        "{err}"
    );
}

/// A step that records which branch ran in `status.branch`.
fn mark(branch: &'static str) -> dynrec::reconcilers::SyncReconciler {
    dynrec::reconcilers::SyncReconciler::new(move |_ctx, resource: &mut Draft| {
        resource.data["status"] = json!({"branch": branch});
        Ok(())
    })
}

#[tokio::test]
async fn a_cel_condition_chooses_the_branch_of_an_if_then() {
    use dynrec::reconcilers::{IfThen, SubReconciler};
    let server = ApiServer::new();
    let ctx = context(&server, noon());
    let big = Predicate::<DynamicObject>::cel("self.spec.replicas > 3").unwrap();
    let choose = IfThen::new(big, mark("then")).otherwise(mark("else"));
    for (replicas, branch) in [(5, "then"), (2, "else")] {
        let mut resource = Draft::new(widget(replicas));
        let outcome = choose.reconcile(&ctx, &mut resource).await;
        assert!(outcome.is_ok());
        assert_eq!(
            resource.data["status"]["branch"], branch,
            "replicas {replicas}"
        );
    }
}
