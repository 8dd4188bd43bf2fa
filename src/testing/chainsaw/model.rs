//! A chainsaw `Test` (`chainsaw.kyverno.io/v1alpha1`) as read from `chainsaw-test.yaml`:
//! its steps and their operations, each checked for what dynrec runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::duration::parse_duration;

/// A chainsaw test.
#[derive(Clone, Debug)]
pub struct Test {
    /// `metadata.name`.
    pub name: String,
    /// The directory of `chainsaw-test.yaml`, against which `file:` references resolve.
    pub dir: PathBuf,
    /// `spec.namespace`: the namespace to use instead of a fresh one.
    pub namespace: Option<String>,
    /// `spec.timeouts`.
    pub timeouts: Timeouts,
    /// `spec.bindings`, in order.
    pub bindings: Vec<(String, Value)>,
    /// `spec.catch`: run on a step's failure, after the step's own catch.
    pub catch: Vec<Operation>,
    /// `spec.steps`.
    pub steps: Vec<Step>,
}

/// A step: its `try` operations, then on failure `catch`, then always `finally`.
#[derive(Clone, Debug)]
pub struct Step {
    /// `name`, or `step-N`.
    pub name: String,
    /// `timeouts`.
    pub timeouts: Timeouts,
    /// `bindings`, in order.
    pub bindings: Vec<(String, Value)>,
    /// `try`.
    pub try_: Vec<Operation>,
    /// `catch`.
    pub catch: Vec<Operation>,
    /// `finally`.
    pub finally: Vec<Operation>,
    /// `cleanup`: run after the automatic cleanup of what the step created.
    pub cleanup: Vec<Operation>,
}

/// One operation of a step.
#[derive(Clone, Debug)]
pub struct Operation {
    /// `description`.
    pub description: Option<String>,
    /// What it does.
    pub action: Action,
    /// Its own `timeout`.
    pub timeout: Option<Duration>,
    /// `continueOnError`.
    pub continue_on_error: bool,
    /// `bindings`, in order.
    pub bindings: Vec<(String, Value)>,
}

/// What an operation does.
#[derive(Clone, Debug)]
pub enum Action {
    /// Creates, or merge-patches what exists.
    Apply(Source),
    /// Creates; an existing object is an error.
    Create(Source),
    /// Replaces an existing object.
    Update(Source),
    /// Merge-patches an existing object.
    Patch(Source),
    /// Waits until an object matches the assertion tree.
    Assert(Source),
    /// Waits until no object matches the assertion tree.
    Error(Source),
    /// Deletes and waits until gone.
    Delete(Source),
    /// Waits for a duration.
    Sleep(Duration),
    /// Waits for a condition, a JSONPath value or deletion (`kubectl wait`).
    Wait(Wait),
    /// An operation dynrec does not run (`script`, `podLogs`...), with the reason.
    Skipped {
        /// The operation's key.
        operation: String,
        /// Why it is skipped.
        reason: &'static str,
    },
}

impl Action {
    /// The operation's name as chainsaw logs it.
    pub fn name(&self) -> &str {
        match self {
            Action::Apply(_) => "APPLY",
            Action::Create(_) => "CREATE",
            Action::Update(_) => "UPDATE",
            Action::Patch(_) => "PATCH",
            Action::Assert(_) => "ASSERT",
            Action::Error(_) => "ERROR",
            Action::Delete(_) => "DELETE",
            Action::Sleep(_) => "SLEEP",
            Action::Wait(_) => "WAIT",
            Action::Skipped { .. } => "SKIP",
        }
    }
}

/// Where an operation's resources come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// `file:`, relative to the test's directory.
    File(PathBuf),
    /// `resource:` (or a delete's `ref:`), inline.
    Inline(Value),
}

/// A `wait` operation.
#[derive(Clone, Debug)]
pub struct Wait {
    /// The objects: `apiVersion`, `kind`, and `name`, `namespace`, `selector` when given.
    pub target: Value,
    /// What to wait for.
    pub until: WaitFor,
}

/// What a `wait` waits for.
#[derive(Clone, Debug)]
pub enum WaitFor {
    /// `for.condition`: a status condition of this type with this status (`True` unless
    /// given).
    Condition {
        /// The condition's type.
        name: String,
        /// Its wanted status.
        value: String,
    },
    /// `for.jsonPath`: the path (kubectl's syntax) printing this value.
    JsonPath {
        /// The path, `{.status.phase}` or `.status.phase`.
        path: String,
        /// The wanted value.
        value: String,
    },
    /// `for.deletion`: until the object is gone.
    Deletion,
}

/// Timeouts by kind of operation (chainsaw's `timeouts`); unset ones are inherited.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timeouts {
    /// apply, create, update, patch (default 5s).
    pub apply: Option<Duration>,
    /// assert and wait (default 30s).
    pub assert: Option<Duration>,
    /// cleanup of created objects (default 30s).
    pub cleanup: Option<Duration>,
    /// delete (default 15s).
    pub delete: Option<Duration>,
    /// error (default 30s).
    pub error: Option<Duration>,
}

impl Timeouts {
    /// These timeouts, unset ones taken from `outer`.
    pub fn within(self, outer: Timeouts) -> Timeouts {
        Timeouts {
            apply: self.apply.or(outer.apply),
            assert: self.assert.or(outer.assert),
            cleanup: self.cleanup.or(outer.cleanup),
            delete: self.delete.or(outer.delete),
            error: self.error.or(outer.error),
        }
    }

    /// Chainsaw's defaults.
    pub fn defaults() -> Timeouts {
        Timeouts {
            apply: Some(Duration::from_secs(5)),
            assert: Some(Duration::from_secs(30)),
            cleanup: Some(Duration::from_secs(30)),
            delete: Some(Duration::from_secs(15)),
            error: Some(Duration::from_secs(30)),
        }
    }

    /// The timeout of an action (its kind's; sleeps have none).
    pub fn of(&self, action: &Action) -> Duration {
        let timeout = match action {
            Action::Apply(_) | Action::Create(_) | Action::Update(_) | Action::Patch(_) => {
                self.apply
            }
            Action::Assert(_) | Action::Wait(_) => self.assert,
            Action::Error(_) => self.error,
            Action::Delete(_) => self.delete,
            Action::Sleep(_) | Action::Skipped { .. } => None,
        };
        timeout.unwrap_or(Duration::ZERO)
    }
}

/// A chainsaw test could not be read: the file, the path in it, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {path}: {message}")]
pub struct TestError {
    /// The file.
    pub file: String,
    /// The YAML path (`spec.steps[0].try[1]`).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Reads the `Test` in `dir/chainsaw-test.yaml` (or `.yml`).
pub fn load_test(dir: &Path) -> Result<Test, TestError> {
    let file = ["chainsaw-test.yaml", "chainsaw-test.yml"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
        .ok_or_else(|| TestError {
            file: dir.display().to_string(),
            path: String::new(),
            message: "no chainsaw-test.yaml in this directory".to_owned(),
        })?;
    let source = file.display().to_string();
    let error = |path: &str, message: String| TestError {
        file: source.clone(),
        path: path.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(&file).map_err(|e| error("", e.to_string()))?;
    let value: Value =
        serde_saphyr::from_str(&text).map_err(|e| error("", format!("not YAML: {e}")))?;
    parse_test(&value, dir).map_err(|(path, message)| error(&path, message))
}

type Parsed<T> = Result<T, (String, String)>;

fn parse_test(value: &Value, dir: &Path) -> Parsed<Test> {
    let kind = (value["apiVersion"].as_str(), value["kind"].as_str());
    if kind != (Some("chainsaw.kyverno.io/v1alpha1"), Some("Test")) {
        return Err((
            "apiVersion".to_owned(),
            format!(
                "want apiVersion chainsaw.kyverno.io/v1alpha1 and kind Test, got {} {}",
                value["apiVersion"], value["kind"]
            ),
        ));
    }
    let spec = &value["spec"];
    let steps = array(spec, "steps", "spec")?;
    let steps = steps
        .iter()
        .enumerate()
        .map(|(i, step)| parse_step(step, i, &format!("spec.steps[{i}]")))
        .collect::<Parsed<Vec<_>>>()?;
    Ok(Test {
        name: value["metadata"]["name"]
            .as_str()
            .unwrap_or("unnamed")
            .to_owned(),
        dir: dir.to_path_buf(),
        namespace: spec["namespace"].as_str().map(str::to_owned),
        timeouts: parse_timeouts(&spec["timeouts"], "spec.timeouts")?,
        bindings: parse_bindings(spec, "spec")?,
        catch: parse_operations(spec, "catch", "spec")?,
        steps,
    })
}

fn parse_step(step: &Value, index: usize, path: &str) -> Parsed<Step> {
    Ok(Step {
        name: step["name"]
            .as_str()
            .map_or_else(|| format!("step-{}", index + 1), str::to_owned),
        timeouts: parse_timeouts(&step["timeouts"], &format!("{path}.timeouts"))?,
        bindings: parse_bindings(step, path)?,
        try_: parse_operations(step, "try", path)?,
        catch: parse_operations(step, "catch", path)?,
        finally: parse_operations(step, "finally", path)?,
        cleanup: parse_operations(step, "cleanup", path)?,
    })
}

/// The list at `parent[key]` (absent is empty).
fn array<'a>(parent: &'a Value, key: &str, path: &str) -> Parsed<&'a [Value]> {
    match &parent[key] {
        Value::Null => Ok(&[]),
        Value::Array(items) => Ok(items),
        other => Err((format!("{path}.{key}"), format!("want a list, got {other}"))),
    }
}

fn parse_operations(parent: &Value, key: &str, path: &str) -> Parsed<Vec<Operation>> {
    array(parent, key, path)?
        .iter()
        .enumerate()
        .map(|(i, op)| parse_operation(op, &format!("{path}.{key}[{i}]")))
        .collect()
}

/// The keys an operation may have besides its action.
const OPERATION_FIELDS: [&str; 3] = ["description", "continueOnError", "compiler"];

fn parse_operation(op: &Value, path: &str) -> Parsed<Operation> {
    let fields = op.as_object().ok_or_else(|| {
        (
            path.to_owned(),
            format!("want an operation (a map), got {op}"),
        )
    })?;
    let actions: Vec<&String> = fields
        .keys()
        .filter(|key| !OPERATION_FIELDS.contains(&key.as_str()))
        .collect();
    let [key] = actions.as_slice() else {
        return Err((
            path.to_owned(),
            format!(
                "want exactly one operation (apply, assert, error, patch, update, create, delete, sleep, wait, ...), got {}",
                match actions.is_empty() {
                    true => "none".to_owned(),
                    false => actions
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                }
            ),
        ));
    };
    let body = &op[key.as_str()];
    let at = format!("{path}.{key}");
    let action = match key.as_str() {
        "apply" => Action::Apply(parse_source(body, &at, "resource")?),
        "create" => Action::Create(parse_source(body, &at, "resource")?),
        "update" => Action::Update(parse_source(body, &at, "resource")?),
        "patch" => Action::Patch(parse_source(body, &at, "resource")?),
        "assert" => Action::Assert(parse_source(body, &at, "resource")?),
        "error" => Action::Error(parse_source(body, &at, "resource")?),
        "delete" => Action::Delete(parse_source(body, &at, "ref")?),
        "sleep" => Action::Sleep(
            duration(&body["duration"], &format!("{at}.duration"))?.ok_or_else(|| {
                (
                    format!("{at}.duration"),
                    "a sleep needs a duration (e.g. 5s)".to_owned(),
                )
            })?,
        ),
        "wait" => Action::Wait(parse_wait(body, &at)?),
        "script" | "command" => Action::Skipped {
            operation: key.to_string(),
            reason: "dynrec runs no shell commands",
        },
        "podLogs" => Action::Skipped {
            operation: key.to_string(),
            reason: "dynrec runs in-process: there are no controller pods to collect logs from",
        },
        "events" | "describe" | "get" | "proxy" => Action::Skipped {
            operation: key.to_string(),
            reason: "a collector that only prints; dynrec does not run it",
        },
        other => {
            return Err((
                at,
                format!(
                    "unknown operation {other:?} (known: apply, assert, error, patch, update, create, delete, sleep, wait, script, command, podLogs, events, describe, get, proxy)"
                ),
            ));
        }
    };
    Ok(Operation {
        description: op["description"].as_str().map(str::to_owned),
        timeout: duration(&body["timeout"], &format!("{at}.timeout"))?,
        continue_on_error: op["continueOnError"].as_bool().unwrap_or(false),
        bindings: parse_bindings(body, &at)?,
        action,
    })
}

/// `file:` or the inline key (`resource`, or a delete's `ref`).
fn parse_source(body: &Value, path: &str, inline: &str) -> Parsed<Source> {
    match (&body["file"], &body[inline]) {
        (Value::String(file), Value::Null) => Ok(Source::File(PathBuf::from(file))),
        (Value::Null, resource @ Value::Object(_)) => Ok(Source::Inline(resource.clone())),
        (Value::Null, Value::Null) => Err((
            path.to_owned(),
            format!("give the resources with `file:` or `{inline}:`"),
        )),
        _ => Err((
            path.to_owned(),
            format!("give either `file:` (a path) or `{inline}:` (a map), not both"),
        )),
    }
}

fn parse_wait(body: &Value, path: &str) -> Parsed<Wait> {
    if body["apiVersion"].as_str().is_none() || body["kind"].as_str().is_none() {
        return Err((
            path.to_owned(),
            "a wait needs apiVersion and kind".to_owned(),
        ));
    }
    let mut target = serde_json::Map::new();
    for key in ["apiVersion", "kind", "name", "namespace", "selector"] {
        if let Some(value) = body.get(key) {
            target.insert(key.to_owned(), value.clone());
        }
    }
    let until = &body["for"];
    let until = if let Some(condition) = until.get("condition") {
        WaitFor::Condition {
            name: condition["name"]
                .as_str()
                .ok_or_else(|| (format!("{path}.for.condition.name"), "missing".to_owned()))?
                .to_owned(),
            value: condition["value"].as_str().unwrap_or("True").to_owned(),
        }
    } else if let Some(json_path) = until.get("jsonPath") {
        WaitFor::JsonPath {
            path: json_path["path"]
                .as_str()
                .ok_or_else(|| (format!("{path}.for.jsonPath.path"), "missing".to_owned()))?
                .to_owned(),
            value: match &json_path["value"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            },
        }
    } else if until.get("deletion").is_some() {
        WaitFor::Deletion
    } else {
        return Err((
            format!("{path}.for"),
            "want one of condition, jsonPath or deletion".to_owned(),
        ));
    };
    Ok(Wait {
        target: Value::Object(target),
        until,
    })
}

fn parse_bindings(parent: &Value, path: &str) -> Parsed<Vec<(String, Value)>> {
    array(parent, "bindings", path)?
        .iter()
        .enumerate()
        .map(|(i, binding)| match binding["name"].as_str() {
            Some(name) => Ok((name.to_owned(), binding["value"].clone())),
            None => Err((format!("{path}.bindings[{i}].name"), "missing".to_owned())),
        })
        .collect()
}

fn parse_timeouts(value: &Value, path: &str) -> Parsed<Timeouts> {
    let get = |key: &str| duration(&value[key], &format!("{path}.{key}"));
    Ok(Timeouts {
        apply: get("apply")?,
        assert: get("assert")?,
        cleanup: get("cleanup")?,
        delete: get("delete")?,
        error: get("error")?,
    })
}

fn duration(value: &Value, path: &str) -> Parsed<Option<Duration>> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => parse_duration(text)
            .map(Some)
            .map_err(|message| (path.to_owned(), message)),
        other => Err((
            path.to_owned(),
            format!("want a duration such as 30s or 2m, got {other}"),
        )),
    }
}
