//! One compiled schema node.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

use super::rules::Rule;

/// A compiled (sub-)schema: only what validation, pruning and defaulting read.
#[derive(Debug, Default)]
pub(super) struct Node {
    /// `type`, or `integer,string` for `x-kubernetes-int-or-string`; empty when untyped.
    pub types: Vec<&'static str>,
    /// `nullable`.
    pub nullable: bool,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded: bool,
    /// `properties`.
    pub properties: BTreeMap<String, Node>,
    /// `additionalProperties` as a schema (`true` is an empty schema).
    pub additional: Option<Box<Node>>,
    /// `items`.
    pub items: Option<Box<Node>>,
    /// `required`.
    pub required: Vec<String>,
    /// `enum`.
    pub enumeration: Vec<Value>,
    /// `pattern`, as written and compiled.
    pub pattern: Option<(String, Regex)>,
    /// `minLength` / `maxLength`.
    pub min_length: Option<u64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `minProperties`.
    pub min_properties: Option<u64>,
    /// `maxProperties`.
    pub max_properties: Option<u64>,
    /// `minimum` and `exclusiveMinimum`.
    pub minimum: Option<(f64, bool)>,
    /// `maximum` and `exclusiveMaximum`.
    pub maximum: Option<(f64, bool)>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `format`, as written, when kube-apiserver checks it (others are dropped, as kube does).
    pub format: Option<String>,
    /// `default` (already pruned); a `null` default is no default.
    pub default: Option<Value>,
    /// `allOf`.
    pub all_of: Vec<Node>,
    /// `anyOf`.
    pub any_of: Vec<Node>,
    /// `oneOf`.
    pub one_of: Vec<Node>,
    /// `not`.
    pub not: Option<Box<Node>>,
    /// `x-kubernetes-list-type` (`atomic`, `set`, `map`).
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-validations`, compiled.
    pub rules: Vec<Rule>,
    /// Whether this node or one below it has rules.
    pub has_rules: bool,
}
