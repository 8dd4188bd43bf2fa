//! Sets of field paths (structured-merge-diff's `fieldpath.Set`) and their `fieldsV1` encoding.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::path::{Path, Pe};

/// A set of paths, as a tree: the paths that end here (`members`) and the subtrees below.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    pub(super) members: BTreeSet<Pe>,
    pub(super) children: BTreeMap<Pe, FieldSet>,
}

impl FieldSet {
    /// Adds a path (the empty path is ignored).
    pub fn insert(&mut self, path: &[Pe]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// The paths below `pe`, relative to it.
    pub fn child(&self, pe: &Pe) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    /// The direct members and the elements that have paths below them.
    pub fn elements(&self) -> impl Iterator<Item = &Pe> {
        self.members.iter().chain(self.children.keys())
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, theirs) in &other.children {
            let merged = match out.children.get(pe) {
                Some(ours) => ours.union(theirs),
                None => theirs.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// Paths in this set and not in `other` (paths below a removed one stay).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        self.combine(other, false)
    }

    /// Paths in this set that are neither in `other` nor below a path in `other`.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        self.combine(other, true)
    }

    fn combine(&self, other: &FieldSet, recursive: bool) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, ours) in &self.children {
            if recursive && other.members.contains(pe) {
                continue;
            }
            let rest = match other.children.get(pe) {
                Some(theirs) => ours.combine(theirs, recursive),
                None => ours.clone(),
            };
            if !rest.is_empty() {
                children.insert(pe.clone(), rest);
            }
        }
        FieldSet { members, children }
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, ours) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let both = ours.intersection(theirs);
                if !both.is_empty() {
                    children.insert(pe.clone(), both);
                }
            }
        }
        FieldSet { members, children }
    }

    /// Every path, in structured-merge-diff's order: a node's members, then its subtrees.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for pe in &self.members {
            let mut path = prefix.clone();
            path.push(pe.clone());
            out.push(path);
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The `fieldsV1` JSON: `{"f:spec":{"f:replicas":{}}}`, with `".":{}` where a path both is a
    /// member and has paths below it.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        for pe in self.elements() {
            let mut node = match self.children.get(pe).map(FieldSet::to_fields_v1) {
                Some(Value::Object(inner)) => inner,
                _ => Map::new(),
            };
            if self.members.contains(pe) && !node.is_empty() {
                node.insert(".".into(), Value::Object(Map::new()));
            }
            map.insert(pe.encode(), Value::Object(node));
        }
        Value::Object(map)
    }

    /// Parses `fieldsV1` JSON.
    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let Value::Object(map) = value else {
            return Err("fieldsV1 must be a JSON object".into());
        };
        let mut set = FieldSet::default();
        for (key, inner) in map {
            if key == "." {
                continue;
            }
            let pe = Pe::decode(key).ok_or_else(|| format!("invalid path element {key:?}"))?;
            let Value::Object(inner_map) = inner else {
                return Err(format!("the value of {key:?} must be a JSON object"));
            };
            if inner_map.is_empty() || inner_map.contains_key(".") {
                set.members.insert(pe.clone());
            }
            let child = FieldSet::from_fields_v1(inner)?;
            if !child.is_empty() {
                set.children.insert(pe, child);
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(fields_v1: Value) -> FieldSet {
        FieldSet::from_fields_v1(&fields_v1).unwrap()
    }

    #[test]
    fn fields_v1_round_trips() {
        let encoded = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}}}}
        });
        assert_eq!(set(encoded.clone()).to_fields_v1(), encoded);
    }

    #[test]
    fn difference_keeps_paths_below_a_removed_member_unless_recursive() {
        let a = set(json!({"f:spec": {".": {}, "f:x": {}}}));
        let b = set(json!({"f:spec": {}}));
        assert_eq!(a.difference(&b), set(json!({"f:spec": {"f:x": {}}})));
        assert!(a.recursive_difference(&b).is_empty());
    }

    #[test]
    fn paths_list_members_before_subtrees() {
        let s = set(json!({"f:a": {"f:b": {}}, "f:z": {}}));
        let printed: Vec<String> = s
            .paths()
            .iter()
            .map(|p| super::super::path::display(p))
            .collect();
        assert_eq!(printed, vec![".z", ".a.b"]);
    }

    #[test]
    fn bad_fields_v1_is_an_error() {
        assert!(FieldSet::from_fields_v1(&json!({"x": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
    }
}
