//! The watches of a kind in several namespaces as one watcher stream, for a cache that
//! holds only those namespaces (`--namespace a --namespace b`).
//!
//! The first lists make one list: `Init`, each namespace's objects, and `InitDone` once
//! every namespace is listed (changes seen meanwhile in a namespace already listed follow
//! it, so that the store's swap does not drop them). A later relist of one namespace
//! becomes the `Apply` and `Delete` events that take the cache from what it holds of that
//! namespace to what was listed: a store swap would drop the other namespaces.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use kube::api::DynamicObject;
use kube::runtime::watcher::{self, Event};
use kube::{Api, ResourceExt};

use super::decoded::{self, Decoded};

type Item = Result<Event<DynamicObject>, watcher::Error>;

/// Merges the watches of `apis` (one per namespace); `held` gives what the cache holds of
/// a namespace, to find what a relist no longer returns.
pub(super) fn watch_namespaces(
    apis: Vec<(String, Api<Decoded>)>,
    held: impl Fn(&str) -> Vec<Arc<DynamicObject>> + Send + 'static,
) -> impl Stream<Item = Item> + Send {
    let mut merge = Merge {
        unlisted: apis.iter().map(|(ns, _)| ns.clone()).collect(),
        ..Merge::default()
    };
    let watches = apis.into_iter().map(|(namespace, api)| {
        decoded::watch(api)
            .map(move |event| (namespace.clone(), event))
            .boxed()
    });
    stream::select_all(watches).flat_map(move |(namespace, event): (String, Item)| {
        stream::iter(merge.step(&namespace, event, &held))
    })
}

/// Where the merge is.
#[derive(Default)]
struct Merge {
    /// Namespaces whose first list is not complete.
    unlisted: BTreeSet<String>,
    /// Whether the merged `Init` was sent.
    started: bool,
    /// Changes in namespaces already listed, held until every first list is complete.
    held_back: Vec<Item>,
    /// Relists under way after the first, by namespace.
    relists: HashMap<String, Vec<DynamicObject>>,
}

impl Merge {
    /// What the merged stream says for one namespace's event.
    fn step(
        &mut self,
        namespace: &str,
        event: Item,
        held: &impl Fn(&str) -> Vec<Arc<DynamicObject>>,
    ) -> Vec<Item> {
        let event = match event {
            Ok(event) => event,
            Err(err) => return vec![Err(err)],
        };
        let first_list = self.unlisted.contains(namespace);
        match event {
            Event::Init if first_list => match std::mem::replace(&mut self.started, true) {
                false => vec![Ok(Event::Init)],
                true => Vec::new(),
            },
            Event::InitApply(object) if first_list => vec![Ok(Event::InitApply(object))],
            Event::InitDone if first_list => {
                self.unlisted.remove(namespace);
                if !self.unlisted.is_empty() {
                    return Vec::new();
                }
                let mut done = vec![Ok(Event::InitDone)];
                done.append(&mut self.held_back);
                done
            }
            Event::Init => {
                self.relists.insert(namespace.to_string(), Vec::new());
                Vec::new()
            }
            Event::InitApply(object) => {
                self.relists
                    .entry(namespace.to_string())
                    .or_default()
                    .push(object);
                Vec::new()
            }
            Event::InitDone => {
                let listed = self.relists.remove(namespace).unwrap_or_default();
                relisted(held(namespace), listed)
            }
            change if !self.unlisted.is_empty() => {
                self.held_back.push(Ok(change));
                Vec::new()
            }
            change => vec![Ok(change)],
        }
    }
}

/// The events that take a namespace from what the cache `held` to what was `listed`.
fn relisted(held: Vec<Arc<DynamicObject>>, listed: Vec<DynamicObject>) -> Vec<Item> {
    let names: BTreeSet<String> = listed.iter().map(ResourceExt::name_any).collect();
    let gone = held
        .into_iter()
        .filter(|object| !names.contains(&object.name_any()))
        .map(|object| Ok(Event::Delete(DynamicObject::clone(&object))));
    gone.chain(listed.into_iter().map(|object| Ok(Event::Apply(object))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(namespace: &str, name: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"namespace": namespace, "name": name}}))
        .unwrap()
    }

    fn kinds(events: &[Item]) -> Vec<String> {
        events
            .iter()
            .map(|event| match event {
                Ok(Event::Init) => "Init".to_string(),
                Ok(Event::InitApply(o)) => format!("InitApply {}", o.name_any()),
                Ok(Event::InitDone) => "InitDone".to_string(),
                Ok(Event::Apply(o)) => format!("Apply {}", o.name_any()),
                Ok(Event::Delete(o)) => format!("Delete {}", o.name_any()),
                Err(err) => format!("Err {err}"),
            })
            .collect()
    }

    #[test]
    fn first_lists_make_one_list_and_a_later_relist_becomes_applies_and_deletes() {
        let mut merge = Merge {
            unlisted: ["a".to_string(), "b".to_string()].into(),
            ..Merge::default()
        };
        let none = |_: &str| Vec::new();
        let mut said = Vec::new();
        for (ns, event) in [
            ("a", Event::Init),
            ("a", Event::InitApply(object("a", "a1"))),
            ("a", Event::InitDone),
            ("a", Event::Apply(object("a", "a2"))),
            ("b", Event::Init),
            ("b", Event::InitApply(object("b", "b1"))),
            ("b", Event::InitDone),
        ] {
            said.extend(merge.step(ns, Ok(event), &none));
        }
        assert_eq!(
            kinds(&said),
            [
                "Init",
                "InitApply a1",
                "InitApply b1",
                "InitDone",
                "Apply a2"
            ]
        );

        let held = |ns: &str| {
            assert_eq!(ns, "a");
            vec![Arc::new(object("a", "a1")), Arc::new(object("a", "a2"))]
        };
        let mut said = Vec::new();
        for event in [
            Event::Init,
            Event::InitApply(object("a", "a2")),
            Event::InitDone,
        ] {
            said.extend(merge.step("a", Ok(event), &held));
        }
        assert_eq!(kinds(&said), ["Delete a1", "Apply a2"]);
    }
}
