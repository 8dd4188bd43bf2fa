//! Compares a case's `expect` with what a reconcile did ([`Recorded`]): each list in order
//! and whole, each differing field on a line with its path, and each write the case does not
//! list printed as YAML to paste under its key.

use serde_json::{Value, json};

use super::assertion_tree::{Bindings, matches_with_cel};
use super::definition_cases::{Expect, reference};
use super::diff::{Compare, normalized};
use super::recorded::Recorded;
use super::value_diff::{differences, flow, yaml_list};

/// How two entries of a list differ: one line per differing field.
type Differ<'a> = &'a dyn Fn(&Value, &Value) -> Vec<String>;

/// A list compared: its key, one entry's name, the expected and recorded entries, and how
/// an entry is compared.
type Listed<'a> = (
    &'a str,
    &'a str,
    &'a Option<Vec<Value>>,
    &'a [Value],
    Differ<'a>,
);

/// Every mismatch between `expect` and `recorded`.
pub(super) fn compare(expect: &Expect, recorded: &Recorded) -> Vec<String> {
    let mut failures = Vec::new();
    let exact = expect.exact;
    let objects = |compare: Compare| {
        move |e: &Value, a: &Value| match exact {
            true => {
                let (e, a) = normalized(e, a, compare);
                differences(&e, &a)
            }
            false => subset(e, a),
        }
    };
    let whole = |e: &Value, a: &Value| match exact {
        true => differences(e, a),
        false => subset(e, a),
    };
    let lists: [Listed; 6] = [
        (
            "creates",
            "create",
            &expect.creates,
            &recorded.creates,
            &objects(Compare::Write),
        ),
        (
            "updates",
            "update",
            &expect.updates,
            &recorded.updates,
            &objects(Compare::Write),
        ),
        (
            "applies",
            "apply",
            &expect.applies,
            &recorded.applies,
            &whole,
        ),
        (
            "deletes",
            "delete",
            &expect.deletes,
            &recorded.deletes,
            &same_object,
        ),
        (
            "statusUpdates",
            "status update",
            &expect.status_updates,
            &recorded.status_updates,
            &objects(Compare::Status),
        ),
        ("events", "event", &expect.events, &recorded.events, &whole),
    ];
    let elsewhere = |key: &str, expected: &Value| written_elsewhere(key, expected, recorded);
    for (key, one, expected, actual, differ) in lists {
        let listed = Listing {
            key,
            one,
            differ,
            elsewhere: &elsewhere,
        };
        match (expected, exact) {
            (Some(expected), _) => list(&mut failures, &listed, expected, actual),
            (None, true) => list(&mut failures, &listed, &[], actual),
            (None, false) => {}
        }
    }
    match (&expect.tracks, exact) {
        (Some(expected), _) => tracks(&mut failures, expected, &recorded.tracks),
        (None, true) => tracks(&mut failures, &[], &recorded.tracks),
        (None, false) => {}
    }
    error(&mut failures, expect.error, recorded);
    failures
}

/// The mismatches of `actual` with the assertion tree `expected`, one line each.
pub(super) fn subset(expected: &Value, actual: &Value) -> Vec<String> {
    match matches_with_cel(expected, actual, &Bindings::new()) {
        Ok(()) => Vec::new(),
        Err(mismatches) => mismatches.0.iter().map(ToString::to_string).collect(),
    }
}

/// How an expected delete (either form) differs from a recorded one.
fn same_object(expected: &Value, actual: &Value) -> Vec<String> {
    match reference(expected) {
        Ok((gvk, key)) => {
            let flat = |group: &str, kind: &str, ns: Option<&str>, name: &str| json!({"group": group, "kind": kind, "namespace": ns, "name": name});
            let a_group = actual["apiVersion"]
                .as_str()
                .and_then(|v| v.rsplit_once('/').map(|(g, _)| g))
                .unwrap_or_default();
            differences(
                &flat(&gvk.group, &gvk.kind, key.namespace.as_deref(), &key.name),
                &flat(
                    a_group,
                    actual["kind"].as_str().unwrap_or_default(),
                    actual["namespace"].as_str(),
                    actual["name"].as_str().unwrap_or_default(),
                ),
            )
        }
        Err(err) => vec![err],
    }
}

/// How one list is compared: its key, one entry's name, how an entry is compared, and where
/// else the reconcile wrote an object the list expects.
struct Listing<'a> {
    key: &'a str,
    one: &'a str,
    differ: Differ<'a>,
    elsewhere: &'a dyn Fn(&str, &Value) -> String,
}

/// Compares one list pairwise, in order.
fn list(failures: &mut Vec<String>, listing: &Listing, expected: &[Value], actual: &[Value]) {
    let Listing {
        key,
        one,
        differ,
        elsewhere,
    } = *listing;
    for (i, e) in expected.iter().enumerate() {
        match actual.get(i) {
            None => failures.push(format!(
                "expect.{key}[{i}] ({}): not made; the reconcile made {} {one}(s){}",
                title(e),
                actual.len(),
                elsewhere(key, e)
            )),
            Some(a) => {
                let lines = differ(e, a);
                if !lines.is_empty() {
                    failures.push(format!(
                        "expect.{key}[{i}] ({}) differs:\n{}",
                        title(e),
                        indent(&lines)
                    ));
                }
            }
        }
    }
    let extra = actual.get(expected.len()..).unwrap_or_default();
    if !extra.is_empty() {
        failures.push(format!(
            "{} unexpected {one}(s); to expect them, add to expect.{key}:\n{}",
            extra.len(),
            yaml_list(extra, 2)
        ));
    }
}

/// When the reconcile wrote the object `expected` (listed under `key`) by another verb: which,
/// and the key to expect it under (e.g. a child written by server-side apply is an apply,
/// not a create).
fn written_elsewhere(key: &str, expected: &Value, recorded: &Recorded) -> String {
    let same = |a: &Value| {
        ["kind", "apiVersion"]
            .iter()
            .all(|field| expected[field].is_null() || expected[field] == a[field])
            && ["name", "namespace"]
                .iter()
                .all(|field| expected["metadata"][field] == a["metadata"][field])
    };
    let writes = [
        ("creates", "created", &recorded.creates),
        ("updates", "updated", &recorded.updates),
        ("applies", "applied", &recorded.applies),
    ];
    if !writes.iter().any(|(k, _, _)| *k == key) {
        return String::new();
    }
    writes
        .iter()
        .filter(|(k, _, _)| *k != key)
        .find(|(_, _, list)| list.iter().any(same))
        .map(|(k, verb, _)| format!("; it {verb} it: expect it under {k}"))
        .unwrap_or_default()
}

/// Tracks are a set: each expected one must be held, and no other.
fn tracks(failures: &mut Vec<String>, expected: &[Value], actual: &[Value]) {
    let mut matched = vec![false; actual.len()];
    for (i, e) in expected.iter().enumerate() {
        let found = actual
            .iter()
            .position(|a| same_reference(e, a))
            .inspect(|&j| matched[j] = true);
        if found.is_none() {
            failures.push(format!("expect.tracks[{i}] ({}): not tracked", title(e)));
        }
    }
    let extra: Vec<Value> = actual
        .iter()
        .zip(&matched)
        .filter(|(_, m)| !**m)
        .map(|(a, _)| a.clone())
        .collect();
    if !extra.is_empty() {
        failures.push(format!(
            "{} unexpected track(s); to expect them, add to expect.tracks:\n{}",
            extra.len(),
            yaml_list(&extra, 2)
        ));
    }
}

fn same_reference(expected: &Value, actual: &Value) -> bool {
    let (Ok(e), Ok(a)) = (reference(expected), reference(actual)) else {
        return false;
    };
    e.0.group_kind() == a.0.group_kind() && e.1 == a.1
}

/// `error:` is whether the reconcile returned an error; a step's failure that the status
/// write recorded is not one (reconciler.io's ResourceReconciler: the status change starts
/// the next reconcile).
fn error(failures: &mut Vec<String>, expected: bool, recorded: &Recorded) {
    let warned = recorded.events.iter().any(|e| e["type"] == "Warning");
    match (
        expected,
        &recorded.error_message,
        recorded.status_updates.first(),
    ) {
        (true, None, Some(status)) if warned => failures.push(format!(
            "expect.error: want an error, got none. The failure was written into the status \
             (a condition) and a Warning event; after a successful status write the reconcile \
             returns no error, the status change starts the next one. Expect the condition and \
             the event instead, or fail the status write too: \
             failures: [{{verb: update, kind: {}, subresource: status}}]",
            flow(&status["kind"])
        )),
        (true, None, _) => failures.push("expect.error: want an error, got none".into()),
        (false, Some(message), _) => failures.push(format!(
            "expect.error: want none, got {message} (expect it with `error: true`)"
        )),
        _ => {}
    }
}

/// `Kind namespace/name` of an expected or recorded entry, for headings.
pub(super) fn title(value: &Value) -> String {
    let text = |v: &Value| v.as_str().map(str::to_string);
    let kind = text(&value["kind"]).or_else(|| text(&value["reason"]));
    let name = text(&value["metadata"]["name"]).or_else(|| text(&value["name"]));
    let namespace = text(&value["metadata"]["namespace"]).or_else(|| text(&value["namespace"]));
    match (kind, namespace, name) {
        (Some(kind), Some(ns), Some(name)) => format!("{kind} {ns}/{name}"),
        (Some(kind), None, Some(name)) => format!("{kind} {name}"),
        (Some(kind), _, None) => kind,
        _ => flow(value),
    }
}

pub(super) fn indent(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
