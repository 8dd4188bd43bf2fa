//! The operations of a step, each retried as chainsaw retries it until its timeout: apply,
//! create, update, patch, assert, error, delete, wait.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::cluster::{ObjectRef, TestCluster, object_ref};
use super::model::{Source, WaitFor};
use crate::testing::assertion_tree::{Bindings, Mismatches, matches, show, template};

/// How often a failing attempt is retried.
const POLL: Duration = Duration::from_millis(250);

/// One attempt's outcome.
enum Attempt<T> {
    Done(T),
    /// Failed; another attempt may succeed.
    Retry(String),
    /// Failed; waiting cannot help.
    Fail(String),
}

/// When an operation gives up.
pub(super) struct Deadline(Instant);

impl Deadline {
    /// `timeout` from now.
    pub fn after(timeout: Duration) -> Self {
        Self(Instant::now() + timeout)
    }

    /// Sleeps before the next attempt, or gives up with `message` once the time is out.
    async fn wait_or(&self, message: String) -> Result<(), String> {
        if Instant::now() + POLL > self.0 {
            return Err(message);
        }
        tokio::time::sleep(POLL).await;
        Ok(())
    }
}

/// Retries `$attempt` (an expression yielding an [`Attempt`]) until done or `$deadline`.
macro_rules! retry {
    ($deadline:expr, $attempt:expr) => {{
        let deadline = $deadline;
        loop {
            match $attempt {
                Attempt::Done(value) => break Ok(value),
                Attempt::Fail(message) => break Err(message),
                Attempt::Retry(message) => {
                    if let Err(message) = deadline.wait_or(message).await {
                        break Err(message);
                    }
                }
            }
        }
    }};
}

/// The resources of a `file:` (relative to the test's directory; several YAML documents)
/// or an inline resource.
pub(super) fn resources(source: &Source, dir: &Path) -> Result<Vec<Value>, String> {
    match source {
        Source::Inline(resource) => Ok(vec![resource.clone()]),
        Source::File(file) => {
            let path = dir.join(file);
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let documents: Vec<Value> = serde_saphyr::from_multiple(&text)
                .map_err(|e| format!("{}: not YAML: {e}", path.display()))?;
            Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
        }
    }
}

/// What a write does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Write {
    Apply,
    Create,
    Update,
    Patch,
}

/// The operations against one test's cluster.
pub(super) struct Operations<'a> {
    pub cluster: &'a TestCluster,
    pub bindings: &'a Bindings,
}

impl Operations<'_> {
    /// Writes `resource` (templated); returns the object and whether it was created.
    pub async fn write(
        &self,
        write: Write,
        resource: &Value,
        timeout: Duration,
    ) -> Result<(ObjectRef, bool), String> {
        let resource = template(resource, self.bindings).map_err(|m| m.to_string())?;
        retry!(
            Deadline::after(timeout),
            self.write_once(write, resource.clone()).await
        )
    }

    async fn write_once(&self, write: Write, mut object: Value) -> Attempt<(ObjectRef, bool)> {
        let gvk = match self.cluster.place(&mut object).await {
            Ok(gvk) => gvk,
            Err(error) => return Attempt::Retry(error),
        };
        let target = match object_ref(&gvk, &object) {
            Ok(target) => target,
            Err(error) => return Attempt::Fail(error),
        };
        let existing = match self.cluster.read(&gvk, &object).await {
            Ok(mut found) => found.pop(),
            Err(error) => return Attempt::Retry(error.to_string()),
        };
        let result = match (write, existing) {
            (Write::Apply | Write::Create, None) => {
                self.cluster.create(&object).await.map(|_| true)
            }
            (Write::Create, Some(_)) => {
                return Attempt::Retry(format!("{target} already exists"));
            }
            (Write::Update | Write::Patch, None) => {
                return Attempt::Retry(format!("{target} does not exist"));
            }
            (Write::Update, Some(existing)) => {
                object["metadata"]["resourceVersion"] =
                    existing["metadata"]["resourceVersion"].clone();
                self.cluster.update(&object).await.map(|_| false)
            }
            (Write::Apply | Write::Patch, Some(existing)) => {
                object["metadata"]["resourceVersion"] =
                    existing["metadata"]["resourceVersion"].clone();
                self.cluster
                    .merge_patch(&target, &object)
                    .await
                    .map(|_| false)
            }
        };
        match result {
            Ok(created) => Attempt::Done((target, created)),
            Err(error) => Attempt::Retry(error.to_string()),
        }
    }

    /// Waits until an object matches the assertion tree (`error: false`) or until none does
    /// (`error: true`).
    pub async fn assert(
        &self,
        tree: &Value,
        error: bool,
        timeout: Duration,
    ) -> Result<String, String> {
        let tree = self.template_lookup(tree)?;
        retry!(
            Deadline::after(timeout),
            self.assert_once(tree.clone(), error).await
        )
    }

    async fn assert_once(&self, mut tree: Value, error: bool) -> Attempt<String> {
        let gvk = match self.cluster.place(&mut tree).await {
            Ok(gvk) => gvk,
            // A kind that is not served has no object that could match.
            Err(_) if error => return Attempt::Done(describe(&tree)),
            Err(message) => return Attempt::Retry(message),
        };
        let candidates = match self.cluster.read(&gvk, &tree).await {
            Ok(candidates) => candidates,
            Err(message) => return Attempt::Retry(message.to_string()),
        };
        let mut reports = Vec::new();
        let mut matched = Vec::new();
        let mut final_problem = false;
        for candidate in &candidates {
            let name = describe(candidate);
            match matches(&tree, candidate, self.bindings) {
                Ok(()) if !error => return Attempt::Done(name),
                Ok(()) => matched.push(format!("{name}: matches the assertion")),
                Err(mismatches) => {
                    final_problem |= mismatches.is_final();
                    reports.push(report(&name, &mismatches));
                }
            }
        }
        match (error, candidates.is_empty()) {
            (true, _) if matched.is_empty() => Attempt::Done(describe(&tree)),
            (true, _) => Attempt::Retry(matched.join("\n")),
            (false, true) => Attempt::Retry(format!("{}: not found", describe(&tree))),
            (false, false) if final_problem => Attempt::Fail(reports.join("\n")),
            (false, false) => Attempt::Retry(reports.join("\n")),
        }
    }

    /// The tree with its lookup fields (apiVersion, kind, name, namespace, labels)
    /// templated, as chainsaw templates assertions.
    fn template_lookup(&self, tree: &Value) -> Result<Value, String> {
        let mut tree = tree.clone();
        let templated = |value: &mut Value| -> Result<(), String> {
            *value = template(value, self.bindings).map_err(|m| m.to_string())?;
            Ok(())
        };
        for key in ["apiVersion", "kind"] {
            if let Some(value) = tree.get_mut(key) {
                templated(value)?;
            }
        }
        if let Some(metadata) = tree.get_mut("metadata") {
            for key in ["name", "namespace", "labels"] {
                if let Some(value) = metadata.get_mut(key) {
                    templated(value)?;
                }
            }
        }
        Ok(tree)
    }

    /// Deletes the objects a resource names (by name, or by labels) and waits until they
    /// are gone.
    pub async fn delete(
        &self,
        resource: &Value,
        timeout: Duration,
    ) -> Result<Vec<ObjectRef>, String> {
        let mut resource = template(resource, self.bindings).map_err(|m| m.to_string())?;
        let deadline = Deadline::after(timeout);
        let gvk = self.cluster.place(&mut resource).await?;
        let found = self
            .cluster
            .read(&gvk, &resource)
            .await
            .map_err(|e| e.to_string())?;
        let mut deleted = Vec::new();
        for object in &found {
            let target = object_ref(&gvk, object)?;
            self.cluster
                .delete(&target)
                .await
                .map_err(|e| e.to_string())?;
            deleted.push(target);
        }
        for target in &deleted {
            self.wait_gone(target, &deadline).await?;
        }
        Ok(deleted)
    }

    /// Waits until `target` no longer exists.
    pub async fn wait_gone(&self, target: &ObjectRef, deadline: &Deadline) -> Result<(), String> {
        retry!(
            deadline,
            match self.cluster.exists(target).await {
                Ok(false) => Attempt::Done(()),
                Ok(true) => Attempt::Retry(format!(
                    "{target} still exists (finalizers: {})",
                    self.finalizers(target).await
                )),
                Err(error) => Attempt::Retry(error.to_string()),
            }
        )
    }

    async fn finalizers(&self, target: &ObjectRef) -> String {
        let object = serde_json::json!({
            "metadata": {"name": target.key.name, "namespace": target.key.namespace}
        });
        match self.cluster.read(&target.gvk, &object).await {
            Ok(found) => found
                .first()
                .map(|o| show(&o["metadata"]["finalizers"]))
                .unwrap_or_default(),
            Err(error) => error.to_string(),
        }
    }

    /// `kubectl wait`: until every object named or selected satisfies `until`.
    pub async fn wait(
        &self,
        target: &Value,
        until: &WaitFor,
        timeout: Duration,
    ) -> Result<String, String> {
        let mut target = template(target, self.bindings).map_err(|m| m.to_string())?;
        let lookup = lookup_of_wait(&mut target);
        retry!(
            Deadline::after(timeout),
            self.wait_once(lookup.clone(), until).await
        )
    }

    async fn wait_once(&self, mut lookup: Value, until: &WaitFor) -> Attempt<String> {
        let gvk = match self.cluster.place(&mut lookup).await {
            Ok(gvk) => gvk,
            Err(message) => return Attempt::Retry(message),
        };
        let found = match self.cluster.read(&gvk, &lookup).await {
            Ok(found) => found,
            Err(error) => return Attempt::Retry(error.to_string()),
        };
        if let WaitFor::Deletion = until {
            return match found.is_empty() {
                true => Attempt::Done(describe(&lookup)),
                false => Attempt::Retry(format!("{} still exists", describe(&found[0]))),
            };
        }
        if found.is_empty() {
            return Attempt::Retry(format!("{}: not found", describe(&lookup)));
        }
        for object in &found {
            let (got, want) = match until {
                WaitFor::Condition { name, value } => {
                    let condition = object["status"]["conditions"]
                        .as_array()
                        .and_then(|all| all.iter().find(|c| c["type"] == name.as_str()));
                    let got = condition.map_or("<none>".to_owned(), |c| printed(&c["status"]));
                    if got.eq_ignore_ascii_case(value) {
                        continue;
                    }
                    (format!("condition {name}: {got}"), value)
                }
                WaitFor::JsonPath { path, value } => {
                    let got = match json_path(path, object) {
                        Ok(got) => got,
                        Err(error) => return Attempt::Fail(error),
                    };
                    if &got == value {
                        continue;
                    }
                    (format!("{path}: {got:?}"), value)
                }
                WaitFor::Deletion => unreachable!("handled above"),
            };
            return Attempt::Retry(format!("{}: {got}, want {want:?}", describe(object)));
        }
        Attempt::Done(describe(&lookup))
    }
}

/// A wait's target as a lookup: `selector` (`a=b,c=d`) becomes `metadata.labels`.
fn lookup_of_wait(target: &mut Value) -> Value {
    let mut metadata = serde_json::Map::new();
    for key in ["name", "namespace"] {
        if let Some(value) = target.get(key).filter(|v| !v.is_null()) {
            metadata.insert(key.to_owned(), value.clone());
        }
    }
    if let Some(selector) = target["selector"].as_str() {
        let labels = selector
            .split(',')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), Value::from(v.trim())))
            .collect();
        metadata.insert("labels".to_owned(), Value::Object(labels));
    }
    serde_json::json!({
        "apiVersion": target["apiVersion"],
        "kind": target["kind"],
        "metadata": metadata,
    })
}

/// What kubectl's JSONPath prints for `path` (`{.status.phase}` or `.status.phase`) on
/// `object`: the values found, space-separated, strings bare.
fn json_path(path: &str, object: &Value) -> Result<String, String> {
    let inner = path.trim();
    let inner = inner
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(inner);
    let query = format!("${}", inner.trim_start_matches('$'));
    let parsed = jsonpath_rust::parser::parse_json_path(&query)
        .map_err(|e| format!("invalid JSONPath {path:?}: {e}"))?;
    let found = jsonpath_rust::query::js_path_process(&parsed, object)
        .map_err(|e| format!("JSONPath {path:?}: {e}"))?;
    Ok(found
        .iter()
        .map(|r| printed(r.val))
        .collect::<Vec<_>>()
        .join(" "))
}

/// A value as kubectl prints it: strings bare, others as JSON.
fn printed(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `apiVersion/Kind namespace/name` of an object or a lookup.
pub(super) fn describe(object: &Value) -> String {
    let metadata = &object["metadata"];
    let name = match (metadata["namespace"].as_str(), metadata["name"].as_str()) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        (None, Some(name)) => name.to_owned(),
        (Some(ns), None) => format!("{ns}/*"),
        (None, None) => "*".to_owned(),
    };
    format!(
        "{}/{} {name}",
        object["apiVersion"].as_str().unwrap_or("?"),
        object["kind"].as_str().unwrap_or("?")
    )
}

/// A candidate's mismatches under its name.
fn report(name: &str, mismatches: &Mismatches) -> String {
    let mut lines = vec![format!("{name}:")];
    lines.extend(mismatches.0.iter().map(|m| format!("  * {m}")));
    lines.join("\n")
}
