//! How the objects, lists and maps of a kind merge: the schema both apply and strategic merge
//! patch walk.

use std::collections::BTreeMap;

use serde_json::Value;

/// How the lists and maps of a kind merge.
#[derive(Clone, Debug)]
pub struct MergeSchema {
    pub(super) root: Node,
}

/// The merge behaviour of one place in an object.
#[derive(Clone, Debug)]
pub(super) enum Node {
    /// A value replaced whole (scalars, atomic values).
    Leaf,
    /// A JSON object.
    Object(ObjectNode),
    /// A JSON array.
    List(ListNode),
    /// Unknown shape, as kube-apiserver deduces it: objects are maps whose keys are all
    /// undeclared (and so always owned as such), lists are atomic.
    Deduced,
    /// Unknown shape inside a built-in kind: objects are structs whose keys are declared
    /// fields, lists are atomic.
    Inferred,
}

/// An object: declared fields, and how other keys behave.
#[derive(Clone, Debug, Default)]
pub(super) struct ObjectNode {
    /// Declared fields.
    pub fields: BTreeMap<String, Node>,
    /// The schema of undeclared keys (a map's values); `None` treats them as declared fields.
    pub other: Option<Box<Node>>,
    /// `x-kubernetes-map-type: atomic` / `+structType=atomic`: replaced whole.
    pub atomic: bool,
    /// A Go struct that is never omitted (a value, not a pointer): present even when empty.
    pub zero: bool,
}

/// A list: its type, its items, and its strategic-merge-patch strategy.
#[derive(Clone, Debug)]
pub(super) struct ListNode {
    pub kind: ListKind,
    pub item: Box<Node>,
    /// A Go slice field without `omitempty`: present (as null) even when empty.
    pub zero: bool,
    /// `patchStrategy: merge`.
    pub smp_merge: bool,
    /// `patchMergeKey` (lists of objects that merge).
    pub smp_key: Option<String>,
}

/// `x-kubernetes-list-type`.
#[derive(Clone, Debug)]
pub(super) enum ListKind {
    Atomic,
    Set,
    Map(Vec<KeyField>),
}

/// One key field of a map-list, with its schema default (e.g. a port's `protocol: TCP`).
#[derive(Clone, Debug)]
pub(super) struct KeyField {
    pub name: String,
    pub default: Option<Value>,
}

/// How a value is walked, given its node.
pub(super) enum Shape<'a> {
    /// Owned and replaced whole.
    Leaf,
    /// An object walked key by key (the node answers field lookups).
    Object(&'a Node),
    /// A list of scalars, items identified by value.
    Set(&'a Node),
    /// A list of objects identified by key fields.
    Map(&'a [KeyField], &'a Node),
}

static INFERRED: Node = Node::Inferred;
static DEDUCED: Node = Node::Deduced;

impl Node {
    /// How `value` is walked at this node.
    pub fn shape(&self, value: &Value) -> Shape<'_> {
        match (self, value) {
            (Node::Object(object), Value::Object(_)) if !object.atomic => Shape::Object(self),
            (Node::Deduced | Node::Inferred, Value::Object(_)) => Shape::Object(self),
            (Node::List(list), Value::Array(_)) => match &list.kind {
                ListKind::Atomic => Shape::Leaf,
                ListKind::Set => Shape::Set(&list.item),
                ListKind::Map(keys) => Shape::Map(keys, &list.item),
            },
            _ => Shape::Leaf,
        }
    }

    /// The node of a key of this object, and whether the key is a declared field.
    pub fn field(&self, key: &str) -> (&Node, bool) {
        match self {
            Node::Object(object) => match (object.fields.get(key), &object.other) {
                (Some(node), _) => (node, true),
                (None, Some(other)) => (other, false),
                (None, None) => (&INFERRED, true),
            },
            Node::Inferred => (&INFERRED, true),
            _ => (&DEDUCED, false),
        }
    }

    /// The node of the items of this list.
    pub fn item(&self) -> &Node {
        match self {
            Node::List(list) => &list.item,
            Node::Inferred => &INFERRED,
            _ => &DEDUCED,
        }
    }

    /// Whether a missing value here counts as present-but-empty (see [`ObjectNode::zero`]).
    pub fn zero(&self) -> bool {
        match self {
            Node::Object(object) => object.zero,
            Node::List(list) => list.zero,
            _ => false,
        }
    }

    /// The strategic-merge-patch strategy of this list: whether it merges, and by which key.
    pub fn smp_list(&self) -> (bool, Option<&str>) {
        match self {
            Node::List(list) => (list.smp_merge, list.smp_key.as_deref()),
            _ => (false, None),
        }
    }
}
