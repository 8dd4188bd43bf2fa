//! A runner of chainsaw (kyverno/chainsaw) `Test`s: the steps of a `chainsaw-test.yaml`
//! run against a cluster as chainsaw runs them, in a fresh namespace (`$namespace`),
//! `try` operations in order until one fails, then the step's and the test's `catch`, then
//! `finally`; no step runs after a failed one; what the test created is deleted at the end,
//! last created first, then the namespace. Operations dynrec cannot run (`script`,
//! `podLogs`...) are skipped with a note. See docs/chainsaw.md.

pub(super) mod cluster;
mod duration;
mod model;
mod operations;

use std::time::Instant;

use serde_json::Value;

pub use cluster::ObjectRef;
pub use duration::parse_duration;
pub use model::{
    Action, Operation, Source, Step, Test, TestError, Timeouts, Wait, WaitFor, load_test,
};

use crate::client::Client;
use crate::testing::assertion_tree::{Bindings, template};
use cluster::TestCluster;
use operations::{Deadline, Operations, Write, resources};

/// Where a test's lines go (one line a call, without a newline).
pub type Log<'a> = &'a mut (dyn FnMut(&str) + Send);

/// What a test did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestOutcome {
    /// The test's name.
    pub name: String,
    /// Whether every step passed and everything it created was deleted.
    pub passed: bool,
}

/// Runs `test` against the cluster of `client`, writing its progress to `log`.
pub async fn run_test(test: &Test, client: &Client, log: Log<'_>) -> TestOutcome {
    let started = Instant::now();
    log(&format!("=== {} ({})", test.name, test.dir.display()));
    let namespace = test
        .namespace
        .clone()
        .unwrap_or_else(|| format!("chainsaw-{}", random_suffix()));
    let cluster = TestCluster {
        client: client.clone(),
        namespace: namespace.clone(),
    };
    let timeouts = test.timeouts.within(Timeouts::defaults());
    let mut run = TestRun {
        test,
        cluster: &cluster,
        log,
        failed: false,
    };
    let namespace_created = run.ensure_namespace(timeouts).await;
    let mut bindings = Bindings::new()
        .with("namespace", Value::from(namespace.clone()))
        .with("values", Value::Object(Default::default()));
    if !run.failed {
        match bind(&bindings, &test.bindings) {
            Ok(bound) => bindings = bound,
            Err(error) => run.fail(&format!("    FAIL  spec.bindings: {error}")),
        }
    }
    let mut step_cleanups = Vec::new();
    for step in &test.steps {
        if run.failed {
            break;
        }
        let timeouts = step.timeouts.within(timeouts);
        let created = run.run_step(step, &bindings, timeouts).await;
        step_cleanups.push((step, created, timeouts));
    }
    for (step, created, timeouts) in step_cleanups.into_iter().rev() {
        run.cleanup(step, created, &bindings, timeouts).await;
    }
    if let Some(namespace) = namespace_created {
        run.log("  cleanup (namespace)");
        run.delete_created(vec![namespace], timeouts).await;
    }
    let passed = !run.failed;
    log(&format!(
        "{} {} ({:.1}s)",
        if passed { "PASS" } else { "FAIL" },
        test.name,
        started.elapsed().as_secs_f64()
    ));
    TestOutcome {
        name: test.name.clone(),
        passed,
    }
}

/// `bindings` and then each of `more`, whose values may be expressions of earlier ones.
fn bind(bindings: &Bindings, more: &[(String, Value)]) -> Result<Bindings, String> {
    let mut bound = bindings.clone();
    for (name, value) in more {
        let value = template(value, &bound).map_err(|m| format!("${name}: {m}"))?;
        bound = bound.with(name.clone(), value);
    }
    Ok(bound)
}

/// A random lowercase suffix, as chainsaw names its namespaces `chainsaw-<pet-name>`.
pub(super) fn random_suffix() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..8)
        .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
        .collect()
}

/// One test's run: its log, what it created, whether it failed.
struct TestRun<'a, 'l> {
    test: &'a Test,
    cluster: &'a TestCluster,
    log: Log<'l>,
    failed: bool,
}

impl TestRun<'_, '_> {
    fn log(&mut self, line: &str) {
        (self.log)(line);
    }

    fn fail(&mut self, line: &str) {
        self.failed = true;
        self.log(line);
    }

    /// Creates the test's namespace unless it exists; the namespace to delete at the end.
    async fn ensure_namespace(&mut self, timeouts: Timeouts) -> Option<ObjectRef> {
        let namespace = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": self.cluster.namespace},
        });
        let bindings = Bindings::new();
        let operations = Operations {
            cluster: self.cluster,
            bindings: &bindings,
        };
        let timeout = timeouts.apply.unwrap_or_default();
        match operations.write(Write::Apply, &namespace, timeout).await {
            Ok((target, created)) => {
                self.log(&format!("  namespace {}", self.cluster.namespace));
                created.then_some(target)
            }
            Err(error) => {
                self.fail(&format!(
                    "    FAIL  namespace {}: {error}",
                    self.cluster.namespace
                ));
                None
            }
        }
    }

    /// Runs a step's `try`, then (on failure) `catch`, then `finally`; what it created.
    async fn run_step(
        &mut self,
        step: &Step,
        bindings: &Bindings,
        timeouts: Timeouts,
    ) -> Vec<ObjectRef> {
        self.log(&format!("  step {}", step.name));
        let mut created = Vec::new();
        let bindings = match bind(bindings, &step.bindings) {
            Ok(bindings) => bindings,
            Err(error) => {
                self.fail(&format!("    FAIL  bindings: {error}"));
                return created;
            }
        };
        for operation in &step.try_ {
            let passed = self
                .run_operation(operation, &bindings, timeouts, &mut created)
                .await;
            if !passed && !operation.continue_on_error {
                break;
            }
        }
        if self.failed {
            let catch: Vec<&Operation> = step.catch.iter().chain(&self.test.catch).collect();
            if !catch.is_empty() {
                self.log("  catch");
            }
            for operation in catch {
                self.run_operation(operation, &bindings, timeouts, &mut created)
                    .await;
            }
        }
        if !step.finally.is_empty() {
            self.log("  finally");
        }
        for operation in &step.finally {
            self.run_operation(operation, &bindings, timeouts, &mut created)
                .await;
        }
        created
    }

    /// Deletes what a step created, last first, then runs its `cleanup` operations.
    async fn cleanup(
        &mut self,
        step: &Step,
        created: Vec<ObjectRef>,
        bindings: &Bindings,
        timeouts: Timeouts,
    ) {
        if created.is_empty() && step.cleanup.is_empty() {
            return;
        }
        self.log(&format!("  cleanup ({})", step.name));
        self.delete_created(created, timeouts).await;
        let mut ignored = Vec::new();
        for operation in &step.cleanup {
            self.run_operation(operation, bindings, timeouts, &mut ignored)
                .await;
        }
    }

    /// Deletes `created` in reverse order, waiting (the cleanup timeout) for each to go.
    async fn delete_created(&mut self, created: Vec<ObjectRef>, timeouts: Timeouts) {
        let bindings = Bindings::new();
        for target in created.into_iter().rev() {
            let operations = Operations {
                cluster: self.cluster,
                bindings: &bindings,
            };
            let deadline = Deadline::after(timeouts.cleanup.unwrap_or_default());
            let deleted = match self.cluster.delete(&target).await {
                Ok(()) => operations.wait_gone(&target, &deadline).await,
                Err(error) => Err(error.to_string()),
            };
            match deleted {
                Ok(()) => self.log(&format!("    ok    DELETE {target}")),
                Err(error) => self.fail(&format!("    FAIL  DELETE {target}\n{}", indent(&error))),
            }
        }
    }

    /// Runs one operation (every resource of its file); whether it passed.
    async fn run_operation(
        &mut self,
        operation: &Operation,
        bindings: &Bindings,
        timeouts: Timeouts,
        created: &mut Vec<ObjectRef>,
    ) -> bool {
        let bindings = match bind(bindings, &operation.bindings) {
            Ok(bindings) => bindings,
            Err(error) => {
                self.fail(&format!(
                    "    FAIL  {} bindings: {error}",
                    operation.action.name()
                ));
                return false;
            }
        };
        let timeout = operation
            .timeout
            .unwrap_or_else(|| timeouts.of(&operation.action));
        let about = operation
            .description
            .as_deref()
            .map(|d| format!("  ({d})"))
            .unwrap_or_default();
        let name = operation.action.name();
        let outcomes = self
            .execute(&operation.action, &bindings, timeout, created)
            .await;
        let mut passed = true;
        for outcome in outcomes {
            match outcome {
                Ok(what) => self.log(&format!("    ok    {name:<6} {what}{about}")),
                Err(error) => {
                    passed = false;
                    let line = format!("    FAIL  {name:<6}{about}");
                    self.fail(&format!("{}\n{}", line.trim_end(), indent(&error)));
                }
            }
        }
        passed
    }

    /// The outcome of each resource of an action (what it did, or why it failed).
    async fn execute(
        &mut self,
        action: &Action,
        bindings: &Bindings,
        timeout: std::time::Duration,
        created: &mut Vec<ObjectRef>,
    ) -> Vec<Result<String, String>> {
        let operations = Operations {
            cluster: self.cluster,
            bindings,
        };
        let source = match action {
            Action::Sleep(duration) => {
                tokio::time::sleep(*duration).await;
                return vec![Ok(format!("{duration:?}"))];
            }
            Action::Skipped { operation, reason } => {
                return vec![Ok(format!("{operation}: skipped ({reason})"))];
            }
            Action::Wait(wait) => {
                return vec![operations.wait(&wait.target, &wait.until, timeout).await];
            }
            Action::Apply(source)
            | Action::Create(source)
            | Action::Update(source)
            | Action::Patch(source)
            | Action::Assert(source)
            | Action::Error(source)
            | Action::Delete(source) => source,
        };
        let resources = match resources(source, &self.test.dir) {
            Ok(resources) => resources,
            Err(error) => return vec![Err(error)],
        };
        let mut outcomes = Vec::new();
        for resource in &resources {
            let outcome = match action {
                Action::Assert(_) => operations.assert(resource, false, timeout).await,
                Action::Error(_) => operations
                    .assert(resource, true, timeout)
                    .await
                    .map(|what| format!("{what}: no match, as expected")),
                Action::Delete(_) => operations.delete(resource, timeout).await.map(|deleted| {
                    match deleted.is_empty() {
                        true => format!("{}: none to delete", operations::describe(resource)),
                        false => deleted
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", "),
                    }
                }),
                write => {
                    let write = match write {
                        Action::Create(_) => Write::Create,
                        Action::Update(_) => Write::Update,
                        Action::Patch(_) => Write::Patch,
                        _ => Write::Apply,
                    };
                    operations
                        .write(write, resource, timeout)
                        .await
                        .map(|(target, was_created)| {
                            let what = target.to_string();
                            if was_created {
                                created.push(target);
                                format!("{what} (created)")
                            } else {
                                what
                            }
                        })
                }
            };
            outcomes.push(outcome);
        }
        outcomes
    }
}

/// `text` indented under an operation's line.
fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("          {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
