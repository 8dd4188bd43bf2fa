//! The end state `--crash-points` compares: the objects of the kinds a run wrote or was
//! given, read from the server, and what makes a crashed run's end state wrong next to the
//! uncrashed one (objects missing, orphaned, duplicated or different, finalizers left).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use kube::api::DynamicObject;
use serde_json::Value;

use super::value_diff::differences;
use crate::client::{Client, ListOptions};
use crate::object::Gvk;

/// An object's identity: kind, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ObjectId {
    gvk: Gvk,
    namespace: Option<String>,
    name: String,
}

impl ObjectId {
    /// The identity of the object `gvk` names by `namespace` and `name`.
    pub(super) fn new(gvk: &Gvk, namespace: Option<&str>, name: &str) -> Self {
        Self {
            gvk: gvk.clone(),
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        }
    }
}

impl ObjectId {
    fn of(gvk: &Gvk, object: &DynamicObject) -> Self {
        Self::new(
            gvk,
            object.metadata.namespace.as_deref(),
            object.metadata.name.as_deref().unwrap_or_default(),
        )
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.gvk, self.name),
            None => write!(f, "{} {}", self.gvk, self.name),
        }
    }
}

/// The objects of some kinds, each without what differs between two equal runs (uids,
/// resource versions, times, generations, managed fields).
#[derive(Clone, Debug, Default)]
pub(super) struct Snapshot(BTreeMap<ObjectId, Value>);

impl Snapshot {
    /// Reads every object of `kinds` (Events left out) through `client`.
    pub(super) async fn read(client: &Client, kinds: &BTreeSet<Gvk>) -> Result<Self, String> {
        let mut objects = BTreeMap::new();
        for (id, object) in list_all(client, kinds).await? {
            let value = serde_json::to_value(&object).map_err(|e| e.to_string())?;
            objects.insert(id, comparable(value));
        }
        Ok(Self(objects))
    }

    /// Whether the object is there.
    pub(super) fn contains(&self, id: &ObjectId) -> bool {
        self.0.contains_key(id)
    }

    /// The identities of its objects.
    pub(super) fn ids(&self) -> impl Iterator<Item = &ObjectId> {
        self.0.keys()
    }

    /// This end state without the objects `other` holds.
    pub(super) fn without(&self, other: &Snapshot) -> Self {
        let mut kept = self.clone();
        kept.0.retain(|id, _| !other.contains(id));
        kept
    }

    /// This end state with each field that differs from `other`'s (another uncrashed run)
    /// replaced by a mark: what the server chooses anew each run (a Service's clusterIP).
    pub(super) fn masked_by(mut self, other: &Snapshot) -> Self {
        for (id, object) in &mut self.0 {
            if let Some(theirs) = other.0.get(id) {
                mask_differing(object, theirs);
            }
        }
        self
    }

    /// This end state with the fields `uncrashed` marks as differing run to run marked too.
    fn masked_like(&self, uncrashed: &Snapshot) -> Self {
        let mut masked = self.clone();
        for (id, object) in &mut masked.0 {
            if let Some(marked) = uncrashed.0.get(id) {
                copy_marks(object, marked);
            }
        }
        masked
    }
}

/// Marks a field whose value differs between two uncrashed runs.
const DIFFERS_RUN_TO_RUN: &str = "<differs run to run>";

fn mask_differing(mine: &mut Value, theirs: &Value) {
    match (mine, theirs) {
        (Value::Object(mine), Value::Object(theirs)) => {
            for (key, value) in mine.iter_mut() {
                if let Some(other) = theirs.get(key) {
                    mask_differing(value, other);
                }
            }
        }
        (Value::Array(mine), Value::Array(theirs)) if mine.len() == theirs.len() => {
            for (value, other) in mine.iter_mut().zip(theirs) {
                mask_differing(value, other);
            }
        }
        (mine, theirs) if mine != theirs => *mine = Value::from(DIFFERS_RUN_TO_RUN),
        _ => {}
    }
}

fn copy_marks(value: &mut Value, marked: &Value) {
    match (value, marked) {
        (value, Value::String(mark)) if mark == DIFFERS_RUN_TO_RUN => *value = marked.clone(),
        (Value::Object(value), Value::Object(marked)) => {
            for (key, inner) in value.iter_mut() {
                if let Some(mark) = marked.get(key) {
                    copy_marks(inner, mark);
                }
            }
        }
        (Value::Array(value), Value::Array(marked)) => {
            for (inner, mark) in value.iter_mut().zip(marked) {
                copy_marks(inner, mark);
            }
        }
        _ => {}
    }
}

/// The resourceVersion of every object of `kinds` (Events left out): when none changed, a
/// reconcile changed nothing (an update that changes nothing keeps it).
pub(super) async fn versions(
    client: &Client,
    kinds: &BTreeSet<Gvk>,
) -> Result<BTreeMap<ObjectId, String>, String> {
    let listed = list_all(client, kinds).await?;
    let versions = listed.into_iter().map(|(id, object)| {
        let version = object.metadata.resource_version.unwrap_or_default();
        (id, version)
    });
    Ok(versions.collect())
}

/// Every object of `kinds` but Events, from the API server.
async fn list_all(
    client: &Client,
    kinds: &BTreeSet<Gvk>,
) -> Result<Vec<(ObjectId, DynamicObject)>, String> {
    let mut all = Vec::new();
    for gvk in kinds.iter().filter(|g| g.kind != "Event") {
        let listed = client
            .api_reader()
            .list(gvk, &ListOptions::default())
            .await
            .map_err(|e| format!("reading the state: {e}"))?;
        all.extend(listed.into_iter().map(|o| (ObjectId::of(gvk, &o), o)));
    }
    Ok(all)
}

/// `object` without what two equal runs do not share.
fn comparable(mut object: Value) -> Value {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            metadata.remove(field);
        }
        if metadata.contains_key("deletionTimestamp") {
            metadata.insert("deletionTimestamp".into(), Value::from("<set>"));
        }
        if let Some(owners) = metadata
            .get_mut("ownerReferences")
            .and_then(Value::as_array_mut)
        {
            for owner in owners.iter_mut().filter_map(Value::as_object_mut) {
                owner.remove("uid");
            }
        }
    }
    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("observedGeneration");
        let conditions = status.get_mut("conditions").and_then(Value::as_array_mut);
        for condition in conditions.into_iter().flatten() {
            if let Some(condition) = condition.as_object_mut() {
                condition.remove("lastTransitionTime");
                condition.remove("observedGeneration");
            }
        }
    }
    object
}

/// Every way `crashed` differs from `uncrashed` (finalizers aside: [`finalizers_left`]),
/// one line (or block) each.
pub(super) fn differences_from(uncrashed: &Snapshot, crashed: &Snapshot) -> Vec<String> {
    let crashed = &crashed.masked_like(uncrashed);
    let mut broken = Vec::new();
    let extra: Vec<&ObjectId> = crashed.ids().filter(|id| !uncrashed.contains(id)).collect();
    let mut counted = BTreeSet::new();
    for id in &extra {
        let group = sibling_group(id, &crashed.0[*id]);
        if !counted.insert(group.clone()) {
            continue;
        }
        let in_group =
            |snapshot: &Snapshot| -> Vec<ObjectId> { members(snapshot, &group).cloned().collect() };
        let (want, got) = (in_group(uncrashed), in_group(crashed));
        if want.is_empty() {
            continue;
        }
        let names = |ids: &[ObjectId]| ids.iter().map(short).collect::<Vec<_>>().join(", ");
        if got.len() > want.len() {
            broken.push(format!(
                "duplicate: {} {}s{} where the uncrashed run has {}: {}",
                got.len(),
                group.gvk.kind,
                group.owned(),
                want.len(),
                names(&got)
            ));
        } else {
            broken.push(format!(
                "renamed: the {}{}{} is {} where the uncrashed run's is {}",
                group.gvk.kind,
                if got.len() == 1 { "" } else { "s" },
                group.owned(),
                names(&got),
                names(&want)
            ));
        }
    }
    for id in &extra {
        let object = &crashed.0[*id];
        let group = sibling_group(id, object);
        if members(uncrashed, &group).next().is_some() {
            continue;
        }
        match owners(object).is_empty() {
            true => broken.push(format!(
                "orphan: {id} has no ownerReference, and the uncrashed run has no such object"
            )),
            false => broken.push(format!(
                "extra: {id} is not in the uncrashed run's end state"
            )),
        }
    }
    for (id, want) in &uncrashed.0 {
        let Some(got) = crashed.0.get(id) else {
            let group = sibling_group(id, want);
            if !counted.contains(&group) {
                broken.push(format!("missing: {id} (the uncrashed run has it)"));
            }
            continue;
        };
        for owner in owners(want) {
            if !owners(got).contains(&owner) {
                broken.push(format!(
                    "orphan: {id} has no ownerReference to {owner} (the uncrashed run's has)"
                ));
            }
        }
        let mut lines = differences(&without_owners(want), &without_owners(got));
        if !lines.is_empty() {
            lines.insert(0, format!("end state differs: {id}:"));
            broken.push(lines.join("\n  "));
        }
    }
    broken
}

/// Objects deleted (with a deletionTimestamp) that still hold finalizers.
pub(super) fn finalizers_left(snapshot: &Snapshot) -> Vec<String> {
    snapshot
        .0
        .iter()
        .filter(|(_, object)| !object["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|(id, object)| {
            let finalizers = object["metadata"]["finalizers"].as_array()?;
            let names: Vec<&str> = finalizers.iter().filter_map(Value::as_str).collect();
            (!names.is_empty()).then(|| {
                format!(
                    "finalizer left: {id} is deleted but keeps the finalizer(s) {}",
                    names.join(", ")
                )
            })
        })
        .collect()
}

/// After the parent's deletion: the objects of `before` (the end state before it) that are
/// still there though they were there from the start (`given`: given objects and those the
/// server makes itself), and the parent if it is still there.
pub(super) fn left_behind(
    before: &Snapshot,
    given: &Snapshot,
    parent: &ObjectId,
    after: &Snapshot,
) -> Vec<String> {
    let mut broken = Vec::new();
    if after.contains(parent) {
        broken.push(format!(
            "left behind: the deleted parent {parent} is still there"
        ));
    }
    for id in before
        .ids()
        .filter(|id| *id != parent && after.contains(id))
    {
        if !given.contains(id) {
            broken.push(format!(
                "left behind: {id}, made by the reconciles, outlives its deleted parent {parent}"
            ));
        }
    }
    broken
}

/// Objects that should come in the number the uncrashed run has: one kind, one namespace,
/// one controller (and the definition step that made them, where labelled).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct SiblingGroup {
    gvk: Gvk,
    namespace: Option<String>,
    controller: Option<String>,
    step: Option<String>,
}

impl SiblingGroup {
    /// ` owned by <controller>`, or nothing.
    fn owned(&self) -> String {
        self.controller
            .as_ref()
            .map(|c| format!(" owned by {c}"))
            .unwrap_or_default()
    }
}

fn sibling_group(id: &ObjectId, object: &Value) -> SiblingGroup {
    let controller = object["metadata"]["ownerReferences"]
        .as_array()
        .and_then(|owners| owners.iter().find(|o| o["controller"] == true))
        .map(owner_name);
    let step = object["metadata"]["labels"][crate::definitions::STEP_LABEL]
        .as_str()
        .map(str::to_string);
    SiblingGroup {
        gvk: id.gvk.clone(),
        namespace: id.namespace.clone(),
        controller,
        step,
    }
}

fn members<'a>(
    snapshot: &'a Snapshot,
    group: &'a SiblingGroup,
) -> impl Iterator<Item = &'a ObjectId> {
    snapshot
        .0
        .iter()
        .filter(move |(id, object)| sibling_group(id, object) == *group)
        .map(|(id, _)| id)
}

/// `namespace/name` or `name`.
fn short(id: &ObjectId) -> String {
    match &id.namespace {
        Some(namespace) => format!("{namespace}/{}", id.name),
        None => id.name.clone(),
    }
}

/// `example.com/v1 Widget w1`, as an ownerReference names its owner.
fn owner_name(owner: &Value) -> String {
    let text = |key: &str| owner[key].as_str().unwrap_or_default().to_string();
    format!("{} {} {}", text("apiVersion"), text("kind"), text("name"))
}

fn owners(object: &Value) -> Vec<String> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .map(|owners| owners.iter().map(owner_name).collect())
        .unwrap_or_default()
}

fn without_owners(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("ownerReferences");
    }
    object
}
