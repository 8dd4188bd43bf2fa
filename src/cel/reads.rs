//! What a CEL expression reads of each variable it names, found once from its syntax tree,
//! so that an evaluation converts only those parts of a JSON value to CEL values.
//!
//! `self.spec.size > 2` reads `spec.size` of `self`: binding `self` as a map holding only
//! `spec`, itself holding only `size`, gives the same result as binding the whole object,
//! at the cost of two small maps instead of the whole object. A field is cut away only
//! where no part of the expression could see it: a map used as a whole (passed to a
//! function, compared, iterated, indexed with `[...]` or `.?`) is converted whole, and a
//! field read but absent stays absent, so `has()` and missing-field errors are unchanged.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue, operators};
use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use cel::common::value::Val;
use serde_json::Value as Json;

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
}

/// What an expression reads of each of its free variables (those not bound by a macro such
/// as `all(x, ...)`), by name, and the field chains it resolves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VariableReads {
    reads: BTreeMap<String, Reads>,
    chains: Vec<Chain>,
}

/// A field chain the interpreter resolves as one qualified name: `self.spec.size`, or
/// `self.spec` in `has(self.spec.size)`. CEL resolves the most specific name bound, so a
/// chain bound under its own name is read without building the maps above it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Chain {
    variable: String,
    path: Vec<String>,
    /// `variable.path...`, the name it is bound under (`variable` for an empty path).
    name: String,
    /// The fields `has()` tests on it, if that is all the expression does with it: then
    /// only their presence is bound, not their values.
    tested: Option<BTreeSet<String>>,
}

/// What is read of a value read whole.
static WHOLE: Reads = Reads::Whole;

impl VariableReads {
    /// Walks the syntax tree of an expression.
    pub(crate) fn of(expr: &IdedExpr) -> Self {
        let mut reads = VariableReads::default();
        reads.walk(expr, &mut Vec::new());
        reads
    }

    /// The free variables, sorted.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.reads.keys().map(String::as_str)
    }

    /// What the expression reads of `name`, if it reads it at all.
    pub(crate) fn get(&self, name: &str) -> Option<&Reads> {
        self.reads.get(name)
    }

    /// Whether the expression reads `name`.
    pub(crate) fn reads(&self, name: &str) -> bool {
        self.reads.contains_key(name)
    }

    /// The paths below `name` the expression reads whole (`[]`: all of it), if it reads
    /// `name` at all: what of the value must be there for the expression to see what it
    /// would see in the whole value.
    pub(crate) fn paths_read(&self, name: &str) -> Option<Vec<Vec<String>>> {
        fn leaves(reads: &Reads, path: &mut Vec<String>, found: &mut Vec<Vec<String>>) {
            match reads {
                Reads::Whole => found.push(path.clone()),
                Reads::Fields(fields) => {
                    for (field, below) in fields {
                        path.push(field.clone());
                        leaves(below, path, found);
                        path.pop();
                    }
                }
            }
        }
        let mut found = Vec::new();
        leaves(self.get(name)?, &mut Vec::new(), &mut found);
        Some(found)
    }

    /// Binds `variable` in `ctx` as the expression reads it, converting only that.
    pub(crate) fn bind_json<'a>(
        &self,
        ctx: &mut cel::Context<'_, 'a>,
        variable: &str,
        json: &'a Json,
    ) {
        match (self.get(variable), json) {
            (None, _) => {}
            (Some(Reads::Fields(_)), Json::Object(object)) => {
                self.bind_fields(ctx, variable, |name| {
                    object.get_key_value(name).map(|(k, v)| (k.as_str(), v))
                })
            }
            (Some(_), _) => ctx.add_variable_as_val(variable, to_val(json)),
        }
    }

    /// Binds `variable`, a map read field by field whose top-level fields `lookup` finds:
    /// each chain the expression reads of it under the chain's own name, or, where the
    /// value lacks part of the chain, under the longest part it has (so a missing field is
    /// missing just as in the whole value). Does nothing unless the variable is read by
    /// fields (see [`VariableReads::get`]).
    pub(crate) fn bind_fields<'a>(
        &self,
        ctx: &mut cel::Context<'_, 'a>,
        variable: &str,
        lookup: impl Fn(&str) -> Option<(&'a str, &'a Json)>,
    ) {
        let Some(Reads::Fields(fields)) = self.get(variable) else {
            return;
        };
        for chain in self.chains.iter().filter(|c| c.variable == variable) {
            let mut reads = &Reads::Fields(BTreeMap::new());
            let mut value: Option<&'a Json> = None;
            let mut depth = 0;
            for segment in &chain.path {
                let next = match value {
                    None => lookup(segment).map(|(_, v)| v),
                    Some(Json::Object(object)) => object.get(segment),
                    Some(_) => None,
                };
                let Some(next) = next else { break };
                reads = match (depth, reads) {
                    (0, _) => fields.get(segment).unwrap_or(&WHOLE),
                    (_, Reads::Fields(below)) => below.get(segment).unwrap_or(&WHOLE),
                    (_, Reads::Whole) => &WHOLE,
                };
                value = Some(next);
                depth += 1;
            }
            let complete = depth == chain.path.len();
            match (value, &chain.tested) {
                (Some(Json::Object(object)), Some(tested)) if complete => {
                    let present = presence(tested, |f| {
                        object.get_key_value(f).map(|(k, v)| (k.as_str(), v))
                    });
                    ctx.add_variable_as_val(chain.name.as_str(), present);
                }
                (None, Some(tested)) if complete => {
                    ctx.add_variable_as_val(variable, presence(tested, &lookup));
                }
                (Some(value), _) if complete => {
                    ctx.add_variable_as_val(chain.name.as_str(), project(value, reads));
                }
                (Some(value), _) => {
                    let name = format!("{variable}.{}", chain.path[..depth].join("."));
                    ctx.add_variable_as_val(name, project(value, reads));
                }
                (None, _) => ctx.add_variable_as_val(variable, project_fields(fields, &lookup)),
            }
        }
    }

    fn record(&mut self, name: &str, path: Vec<String>, tested: Option<&str>) {
        let reads = self
            .reads
            .entry(name.to_owned())
            .or_insert_with(|| Reads::Fields(BTreeMap::new()));
        match tested {
            Some(field) => reads.add(&[path.as_slice(), &[field.to_owned()]].concat()),
            None => reads.add(&path),
        }
        // A bare variable is read whole; `has(x.a)` resolves `x` itself: bound as its map.
        let known = self
            .chains
            .iter_mut()
            .find(|c| c.variable == name && c.path == path);
        match (known, tested) {
            (Some(chain), Some(field)) => {
                if let Some(fields) = &mut chain.tested {
                    fields.insert(field.to_owned());
                }
            }
            (Some(chain), None) => chain.tested = None,
            (None, tested) => {
                let segments = std::iter::once(name).chain(path.iter().map(String::as_str));
                let name_of_chain = segments.collect::<Vec<_>>().join(".");
                self.chains.push(Chain {
                    variable: name.to_owned(),
                    path,
                    name: name_of_chain,
                    tested: tested.map(|field| BTreeSet::from([field.to_owned()])),
                });
            }
        }
    }

    fn walk(&mut self, expr: &IdedExpr, bound: &mut Vec<String>) {
        if let Some((name, path)) = field_chain(expr)
            && !bound.iter().any(|b| b == name)
        {
            self.record(name, path, None);
            return;
        }
        match &expr.expr {
            Expr::Ident(_) => {}
            Expr::Select(select) => match field_chain(&select.operand) {
                // has(x.a.b): the field tested is read (whole, if it is there).
                Some((name, path)) if select.test && !bound.iter().any(|b| b == name) => {
                    self.record(name, path, Some(&select.field));
                }
                _ => self.walk(&select.operand, bound),
            },
            Expr::Call(call) => {
                // x.a.?b: `b` of the chain x.a is read, and x.a resolved whole as a name.
                if let Some((name, path, field)) = optional_select(call)
                    && !bound.iter().any(|b| b == name)
                {
                    self.record(name, path.clone(), Some(field));
                    // Bound with the values of what it holds, not only their presence.
                    if let Some(chain) = self
                        .chains
                        .iter_mut()
                        .find(|c| c.variable == name && c.path == path)
                    {
                        chain.tested = None;
                    }
                    return;
                }
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

/// `x.a.?b` as the chain `x.a` (its variable and field names) and the field `b`.
fn optional_select(call: &CallExpr) -> Option<(&str, Vec<String>, &str)> {
    if call.func_name != operators::OPT_SELECT || call.target.is_some() {
        return None;
    }
    let [operand, field] = call.args.as_slice() else {
        return None;
    };
    let Expr::Literal(LiteralValue::String(field)) = &field.expr else {
        return None;
    };
    let (name, path) = field_chain(operand)?;
    Some((name, path, field.inner()))
}

/// `name.f1.f2...` as the variable and its field names, if `expr` is such a chain.
pub(crate) fn field_chain(expr: &IdedExpr) -> Option<(&str, Vec<String>)> {
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

/// A CEL map of those of `tested` that `lookup` finds, each as `null`: what `has()` needs.
fn presence<'a>(
    tested: &BTreeSet<String>,
    lookup: impl Fn(&str) -> Option<(&'a str, &'a Json)>,
) -> Box<dyn Val + 'a> {
    let map: HashMap<CelMapKey, Box<dyn Val + 'a>> = tested
        .iter()
        .filter_map(|field| lookup(field))
        .map(|(key, _)| (CelMapKey::from(key), Box::new(CelNull) as Box<dyn Val + 'a>))
        .collect();
    Box::new(CelMap::from(map))
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

/// A CEL value over JSON: integers are `int` (`uint` only beyond `i64`), strings and keys
/// borrow from `json`.
fn to_val(json: &Json) -> Box<dyn Val + '_> {
    match json {
        Json::Null => Box::new(CelNull),
        Json::Bool(b) => Box::new(CelBool::from(*b)),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Box::new(CelInt::from(i)),
            (None, Some(u)) => Box::new(CelUInt::from(u)),
            (None, None) => Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN))),
        },
        Json::String(s) => Box::new(CelString::from(s.as_str())),
        Json::Array(items) => Box::new(CelList::from(items.iter().map(to_val).collect::<Vec<_>>())),
        Json::Object(fields) => Box::new(CelMap::from(
            fields
                .iter()
                .map(|(k, v)| (CelMapKey::from(k.as_str()), to_val(v)))
                .collect::<HashMap<_, _>>(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reads_of(source: &str) -> VariableReads {
        let program = super::super::env().unwrap().compile(source).unwrap();
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
            reads.reads["self"],
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
                fields(&[("spec", fields(&[("size", Reads::Whole)]))]),
            ),
            (
                "self.?spec.?size.orValue(1) == 1",
                fields(&[("spec", Reads::Whole)]),
            ),
            ("self == self", Reads::Whole),
            (
                "self.spec.items.all(i, i.size > 1)",
                fields(&[("spec", fields(&[("items", Reads::Whole)]))]),
            ),
            ("self.spec.a > 1 && size(self) > 1", Reads::Whole),
        ] {
            assert_eq!(reads_of(source).reads["self"], expected, "{source}");
        }
    }

    #[test]
    fn has_reads_the_field_it_tests_and_macro_variables_are_not_free() {
        let reads = reads_of("has(self.status.ready) && [1].all(self, self > 0)");
        assert_eq!(
            reads.reads["self"],
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
        let env = super::super::env().unwrap();
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
            "self.spec.missing.deeper == 1",
            "has(self.spec.missing.deeper)",
            "self.spec.tags.deeper == 'x'",
            "self.spec.size > 2 && size(self.spec) == 3 && self.spec.items[0].size == 2",
            "self.spec.items.exists(self, self.size == 2) && self.spec.size == 3",
            "self.nothing.here",
            "has(self.status) && !has(self.nothing)",
            "has(self.status.ready) && self.status.ready",
            "has(self.spec.size) && size(self.spec) == 3",
            "has(self.spec.tags.x)",
            "has(self.spec.missing) || self.spec.size == 3",
            "self.?spec.?size.orValue(1) == 3",
            "self.?missing.orValue(1) == 1",
            "self.?spec.?missing.hasValue()",
            "self.spec.?tags.orValue('') == 'x' && self.spec.size == 3",
            "has(self.spec.tags) && self.spec.?size.orValue(0) == 3",
            "self.metadata.?labels.orValue({}).size() == 1 && self.metadata.name == 'w'",
            "self.spec.missing.?deeper.hasValue()",
        ] {
            let program = env.compile(source).unwrap();
            let reads = VariableReads::of(program.expression());
            let mut whole = cel::Context::with_env(env.clone());
            whole.add_variable_as_val("self", to_val(&object));
            let mut projected = cel::Context::with_env(env.clone());
            projected.add_variable_as_val("self", project(&object, &reads.reads["self"]));
            let mut by_chains = cel::Context::with_env(env.clone());
            reads.bind_json(&mut by_chains, "self", &object);
            let expected = format!("{:?}", program.execute(&whole));
            assert_eq!(
                format!("{:?}", program.execute(&projected)),
                expected,
                "{source}"
            );
            assert_eq!(
                format!("{:?}", program.execute(&by_chains)),
                expected,
                "{source}"
            );
        }
    }
}
