//! What a CEL expression reads of each variable it names, found once from its syntax tree,
//! so that an evaluation converts only those parts of a JSON value to CEL values.
//!
//! `self.spec.size > 2` reads `spec.size` of `self`: binding `self` as a map holding only
//! `spec`, itself holding only `size`, gives the same result as binding the whole object,
//! at the cost of two small maps instead of the whole object. A field is cut away only
//! where no part of the expression could see it: a map used as a whole (passed to a
//! function, compared, iterated, indexed with `[...]` or `.?`) is converted whole, and a
//! field read but absent stays absent, so `has()` and missing-field errors are unchanged.

use std::collections::{BTreeMap, HashMap};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::common::types::{CelMap, CelMapKey};
use cel::common::value::Val;
use serde_json::Value as Json;

use super::cel::to_val;

/// The part of a value an expression reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reads {
    /// All of it.
    Whole,
    /// Only these fields (of a map), each read as far as its own `Reads` says.
    Fields(BTreeMap<String, Reads>),
}

impl Reads {
    /// Marks `path` (a chain of field names below this value) as read.
    fn add(&mut self, path: &[String]) {
        let Some((first, rest)) = path.split_first() else {
            *self = Reads::Whole;
            return;
        };
        if let Reads::Fields(fields) = self {
            fields
                .entry(first.clone())
                .or_insert_with(|| Reads::Fields(BTreeMap::new()))
                .add(rest);
        }
    }

    /// The fields read, or `None` when the value is read whole.
    pub(crate) fn fields(&self) -> Option<&BTreeMap<String, Reads>> {
        match self {
            Reads::Whole => None,
            Reads::Fields(fields) => Some(fields),
        }
    }
}

/// What an expression reads of each of its free variables (those not bound by a macro such
/// as `all(x, ...)`), by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VariableReads(BTreeMap<String, Reads>);

impl VariableReads {
    /// Walks the syntax tree of an expression.
    pub(crate) fn of(expr: &IdedExpr) -> Self {
        let mut reads = VariableReads::default();
        reads.walk(expr, &mut Vec::new());
        reads
    }

    /// The free variables, sorted.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// What the expression reads of `name`, if it reads it at all.
    pub(crate) fn get(&self, name: &str) -> Option<&Reads> {
        self.0.get(name)
    }

    /// Whether the expression reads `name`.
    pub(crate) fn reads(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Every free variable with what is read of it.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Reads)> {
        self.0.iter().map(|(name, reads)| (name.as_str(), reads))
    }

    fn record(&mut self, name: &str, path: &[String]) {
        self.0
            .entry(name.to_owned())
            .or_insert_with(|| Reads::Fields(BTreeMap::new()))
            .add(path);
    }

    fn walk(&mut self, expr: &IdedExpr, bound: &mut Vec<String>) {
        if let Some((name, path)) = field_chain(expr)
            && !bound.iter().any(|b| b == name)
        {
            self.record(name, &path);
            return;
        }
        match &expr.expr {
            Expr::Ident(_) => {}
            Expr::Select(select) => match field_chain(&select.operand) {
                // has(x.a.b): the field tested is read (whole, if it is there).
                Some((name, mut path)) if select.test && !bound.iter().any(|b| b == name) => {
                    path.push(select.field.clone());
                    self.record(name, &path);
                }
                _ => self.walk(&select.operand, bound),
            },
            Expr::Call(call) => {
                if let Some(target) = &call.target {
                    self.walk(target, bound);
                }
                call.args.iter().for_each(|a| self.walk(a, bound));
            }
            Expr::List(list) => list.elements.iter().for_each(|e| self.walk(e, bound)),
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(e) = &entry.expr {
                        self.walk(&e.key, bound);
                        self.walk(&e.value, bound);
                    }
                }
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.walk(&f.value, bound);
                    }
                }
            }
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range, bound);
                self.walk(&c.accu_init, bound);
                let depth = bound.len();
                bound.push(c.iter_var.clone());
                bound.extend(c.iter_var2.clone());
                bound.push(c.accu_var.clone());
                for e in [&c.loop_cond, &c.loop_step, &c.result] {
                    self.walk(e, bound);
                }
                bound.truncate(depth);
            }
            Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
}

/// `name.f1.f2...` as the variable and its field names, if `expr` is such a chain.
fn field_chain(expr: &IdedExpr) -> Option<(&str, Vec<String>)> {
    match &expr.expr {
        Expr::Ident(name) => Some((name.as_str(), Vec::new())),
        Expr::Select(select) if !select.test => {
            let (name, mut path) = field_chain(&select.operand)?;
            path.push(select.field.clone());
            Some((name, path))
        }
        _ => None,
    }
}

/// `json` as a CEL value holding only what `reads` says is read: fields of a map that are
/// not read are left out; everything else is converted as [`to_val`] does.
pub(crate) fn project<'a>(json: &'a Json, reads: &Reads) -> Box<dyn Val + 'a> {
    match (reads, json) {
        (Reads::Fields(fields), Json::Object(object)) => project_fields(fields, |name| {
            object.get_key_value(name).map(|(k, v)| (k.as_str(), v))
        }),
        _ => to_val(json),
    }
}

/// A CEL map of the fields in `fields` that `lookup` finds, each projected by its reads.
pub(crate) fn project_fields<'a>(
    fields: &BTreeMap<String, Reads>,
    lookup: impl Fn(&str) -> Option<(&'a str, &'a Json)>,
) -> Box<dyn Val + 'a> {
    let map: HashMap<CelMapKey, Box<dyn Val + 'a>> = fields
        .iter()
        .filter_map(|(name, reads)| {
            let (key, value) = lookup(name)?;
            Some((CelMapKey::from(key), project(value, reads)))
        })
        .collect();
    Box::new(CelMap::from(map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reads_of(source: &str) -> VariableReads {
        let program = super::super::cel::env().unwrap().compile(source).unwrap();
        VariableReads::of(program.expression())
    }

    fn fields(entries: &[(&str, Reads)]) -> Reads {
        Reads::Fields(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn field_chains_are_read_as_far_as_they_go() {
        let reads = reads_of("self.spec.size > 2 && self.metadata.name == 'a'");
        assert_eq!(
            reads.0["self"],
            fields(&[
                ("metadata", fields(&[("name", Reads::Whole)])),
                ("spec", fields(&[("size", Reads::Whole)])),
            ])
        );
    }

    #[test]
    fn values_used_whole_are_read_whole() {
        for (source, expected) in [
            ("size(self.spec) > 0", fields(&[("spec", Reads::Whole)])),
            (
                "self.metadata.labels['a'] == 'b'",
                fields(&[("metadata", fields(&[("labels", Reads::Whole)]))]),
            ),
            (
                "self.spec.?size.orValue(1) == 1",
                fields(&[("spec", Reads::Whole)]),
            ),
            ("self == self", Reads::Whole),
            (
                "self.spec.items.all(i, i.size > 1)",
                fields(&[("spec", fields(&[("items", Reads::Whole)]))]),
            ),
            ("self.spec.a > 1 && size(self) > 1", Reads::Whole),
        ] {
            assert_eq!(reads_of(source).0["self"], expected, "{source}");
        }
    }

    #[test]
    fn has_reads_the_field_it_tests_and_macro_variables_are_not_free() {
        let reads = reads_of("has(self.status.ready) && [1].all(self, self > 0)");
        assert_eq!(
            reads.0["self"],
            fields(&[("status", fields(&[("ready", Reads::Whole)]))])
        );
        assert_eq!(
            reads_of("x.all(y, y.a == z.b)").names().collect::<Vec<_>>(),
            ["x", "z"]
        );
    }

    #[test]
    fn a_projection_evaluates_as_the_whole_value_does() {
        let object = json!({"metadata": {"name": "w", "labels": {"a": "b"}},
                            "spec": {"size": 3, "items": [{"size": 2}], "tags": "x"},
                            "status": {"ready": true}});
        let env = super::super::cel::env().unwrap();
        for source in [
            "self.spec.size > 2",
            "has(self.status.ready) && self.status.ready",
            "!has(self.spec.missing)",
            "self.metadata.labels['a'] == 'b'",
            "self.spec.items.all(i, i.size > 1)",
            "size(self.spec) == 3",
            "self.spec.missing == 1",
            "self.spec.tags.size == 1",
            "self.spec.?size.orValue(1) == 3",
        ] {
            let program = env.compile(source).unwrap();
            let reads = VariableReads::of(program.expression());
            let mut whole = cel::Context::with_env(env.clone());
            whole.add_variable_as_val("self", to_val(&object));
            let mut projected = cel::Context::with_env(env.clone());
            projected.add_variable_as_val("self", project(&object, &reads.0["self"]));
            assert_eq!(
                format!("{:?}", program.execute(&projected)),
                format!("{:?}", program.execute(&whole)),
                "{source}"
            );
        }
    }
}
