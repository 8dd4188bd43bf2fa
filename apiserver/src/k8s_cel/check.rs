//! Compiling a rule: parse errors, and calls or names the environment does not know,
//! reported as cel-go reports them (`ERROR: <input>:1:6: ...` and a caret snippet).

use std::collections::HashSet;
use std::fmt;

use cel::Program;
use cel::common::ast::{EntryExpr, Expr, IdedExpr};

/// Functions a rule may call, besides operators: the standard library, optional values,
/// the strings extension and Kubernetes' libraries registered in [`super::env`].
const FUNCTIONS: &[&str] = &[
    // standard library
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
    // optional values
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "hasValue",
    "value",
    "orValue",
    "or",
    "optMap",
    "optFlatMap",
    // strings extension
    "charAt",
    "indexOf",
    "lastIndexOf",
    "join",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "split",
    "substring",
    "format",
    "strings.quote",
    "reverse",
    // Kubernetes lists and regex
    "isSorted",
    "sum",
    "min",
    "max",
    "find",
    "findAll",
    // cel-go sets
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    // Kubernetes URLs
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    // Kubernetes IPs and CIDRs
    "ip",
    "isIP",
    "ip.isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "masked",
    "prefixLength",
    // Kubernetes quantities
    "quantity",
    "isQuantity",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "sign",
    "isLessThan",
    "isGreaterThan",
    "compareTo",
    "add",
    "sub",
    // Kubernetes semantic versions
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
];

/// Names an expression may use without declaring them: type names and namespaces.
const NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "optional",
];

/// A rule that does not compile, with its position (line and column from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CompileError {
    line: usize,
    column: usize,
    message: String,
    source: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ERROR: <input>:{}:{}: {}",
            self.line, self.column, self.message
        )?;
        let text = self.source.lines().nth(self.line - 1).unwrap_or_default();
        let dots = ".".repeat(self.column - 1);
        write!(f, "\n | {text}\n | {dots}^")
    }
}

/// A compiled rule and what its evaluation needs to know about it.
#[derive(Debug)]
pub(crate) struct Compiled {
    /// The program.
    pub program: Program,
    /// Whether the rule reads `oldSelf` (a transition rule).
    pub uses_old_self: bool,
    /// Expression nodes, for the cost estimate.
    pub nodes: usize,
    /// How deeply comprehensions nest, for the cost estimate.
    pub depth: usize,
    /// Whether it may turn a string into a list (`split`, `findAll`), for the cost estimate.
    pub splits_strings: bool,
}

/// Compiles `source` in the rule environment, refusing unknown functions and variables;
/// `variables` are the names the rule may read (`self`, `oldSelf`).
pub(crate) fn compile(source: &str, variables: &[&str]) -> Result<Compiled, CompileError> {
    let env = super::env().map_err(|message| CompileError {
        line: 1,
        column: 1,
        message: format!("the CEL environment could not be built: {message}"),
        source: source.to_string(),
    })?;
    let program = env.compile(source).map_err(|errors| {
        let (line, column, message) = match errors.errors.first() {
            Some(e) => (position(e.pos.0), position(e.pos.1), e.msg.clone()),
            None => (1, 1, "invalid expression".to_string()),
        };
        CompileError {
            line,
            column,
            message,
            source: source.to_string(),
        }
    })?;
    let mut walk = Walk {
        variables,
        bound: HashSet::new(),
        stats: Stats::default(),
        problem: None,
    };
    walk.expr(program.expression(), 0);
    if let Some((id, message)) = walk.problem {
        let (line, column) = locate(source, program.source_info().offset_for(id));
        return Err(CompileError {
            line,
            column,
            message,
            source: source.to_string(),
        });
    }
    let stats = walk.stats;
    Ok(Compiled {
        program,
        uses_old_self: stats.old_self,
        nodes: stats.nodes,
        depth: stats.depth,
        splits_strings: stats.splits,
    })
}

/// A parser position as a number from 1.
fn position(pos: isize) -> usize {
    usize::try_from(pos).unwrap_or(0).max(1)
}

/// Line and column (from 1) of a byte offset.
fn locate(source: &str, offset: Option<(u32, u32)>) -> (usize, usize) {
    let start = offset
        .map_or(0, |(start, _)| start as usize)
        .min(source.len());
    let before = source.get(..start).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .chars()
        .count()
        + 1;
    (line, column)
}

#[derive(Default)]
struct Stats {
    nodes: usize,
    depth: usize,
    old_self: bool,
    splits: bool,
}

/// One pass over the expression: statistics and the first unknown name.
struct Walk<'a> {
    variables: &'a [&'a str],
    bound: HashSet<String>,
    stats: Stats,
    problem: Option<(u64, String)>,
}

impl Walk<'_> {
    fn fail(&mut self, id: u64, message: String) {
        if self.problem.is_none() {
            self.problem = Some((id, message));
        }
    }

    fn expr(&mut self, e: &IdedExpr, depth: usize) {
        self.stats.nodes += 1;
        self.stats.depth = self.stats.depth.max(depth);
        match &e.expr {
            Expr::Call(call) => {
                let name = match call.target.as_deref() {
                    Some(IdedExpr {
                        expr: Expr::Ident(ns),
                        ..
                    }) if matches!(ns.as_str(), "optional" | "strings" | "ip" | "sets")
                        && !self.variables.contains(&ns.as_str())
                        && FUNCTIONS.contains(&format!("{ns}.{}", call.func_name).as_str()) =>
                    {
                        format!("{ns}.{}", call.func_name)
                    }
                    _ => call.func_name.clone(),
                };
                let operator = !name.starts_with(|c: char| c.is_ascii_alphabetic());
                if !operator && !FUNCTIONS.contains(&name.as_str()) {
                    self.fail(
                        e.id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                }
                self.stats.splits |= matches!(name.as_str(), "split" | "findAll");
                if let Some(target) = call.target.as_deref().filter(|_| !name.contains('.')) {
                    self.expr(target, depth);
                }
                for arg in &call.args {
                    self.expr(arg, depth);
                }
            }
            Expr::Comprehension(c) => {
                self.expr(&c.iter_range, depth);
                let names = [Some(&c.iter_var), c.iter_var2.as_ref(), Some(&c.accu_var)];
                for name in names.into_iter().flatten() {
                    self.bound.insert(name.clone());
                }
                self.expr(&c.accu_init, depth);
                self.expr(&c.loop_cond, depth + 1);
                self.expr(&c.loop_step, depth + 1);
                self.expr(&c.result, depth);
            }
            Expr::Ident(name) => {
                self.stats.old_self |= name == "oldSelf";
                let known = self.variables.contains(&name.as_str())
                    || self.bound.contains(name)
                    || NAMES.contains(&name.as_str());
                if !known {
                    self.fail(
                        e.id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                }
            }
            Expr::List(list) => {
                for item in &list.elements {
                    self.expr(item, depth);
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        self.expr(&entry.key, depth);
                        self.expr(&entry.value, depth);
                    }
                }
            }
            Expr::Select(select) => self.expr(&select.operand, depth),
            Expr::Struct(s) => self.fail(
                e.id,
                format!(
                    "undeclared reference to '{}' (in container '')",
                    s.type_name
                ),
            ),
            Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(source: &str) -> String {
        match compile(source, &["self", "oldSelf"]) {
            Ok(_) => panic!("{source} compiled"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn unknown_functions_and_names_are_refused_with_their_position() {
        let message = error("self.name.frobnicate() == 1");
        assert!(message.starts_with("ERROR: <input>:1:"), "{message}");
        assert!(
            message.contains("undeclared reference to 'frobnicate'"),
            "{message}"
        );
        assert!(error("other.x > 1").contains("undeclared reference to 'other'"));
        assert!(error("self.x ==").starts_with("ERROR: <input>:1:"));
    }

    #[test]
    fn the_kubernetes_libraries_compile() {
        for source in [
            "self.all(x, x > 0) && self.exists(x, x == 1) && self.exists_one(x, x == 2)",
            "self.map(x, x * 2).filter(x, x > 2).isSorted()",
            "[1, 2].sum() == 3 && [1, 2].min() == 1 && [1, 2].max() == 2",
            "'a,b'.split(',').join('-') == 'a-b' && 'AB'.lowerAscii() == 'ab'",
            "url('https://x.io').getHost() == 'x.io' && isURL('/p')",
            "ip('10.0.0.1').family() == 4 && cidr('10.0.0.0/8').containsIP('10.1.1.1')",
            "quantity('1Gi').isGreaterThan(quantity('1Mi')) && isQuantity('1')",
            "optional.none().orValue(1) == 1 && ip.isCanonical('10.0.0.1')",
            "has(self.x) && self.x.matches('^a') && 'abc'.find('b') == 'b'",
            "duration('1h30m') > duration('90s') && oldSelf == self",
            "cel.bind(n, self.size(), n > 0 && n < 10)",
            "sets.contains([1, 2], [2]) && sets.equivalent([1], [1, 1]) && !sets.intersects([1], [2])",
            "semver('1.2.3').isLessThan(semver('1.10.0')) && isSemver('v1', true) && semver('1.2.3').major() == 1",
            "{'a': 1}.all(k, v, v > 0) && self.transformList(i, x, x + i).size() == self.size()",
            "self.transformMapEntry(i, x, {string(x): i}).size() > 0 && self.existsOne(i, x, i == 0)",
        ] {
            if let Err(err) = compile(source, &["self", "oldSelf"]) {
                panic!("{source}: {err}");
            }
        }
    }

    #[test]
    fn statistics_count_nesting_and_old_self() {
        let compiled = compile(
            "self.all(a, self.all(b, a == b)) && oldSelf == self",
            &["self", "oldSelf"],
        )
        .unwrap();
        assert_eq!(compiled.depth, 2);
        assert!(compiled.uses_old_self);
        let plain = compile("self > 1", &["self"]).unwrap();
        assert_eq!(plain.depth, 0);
        assert!(!plain.uses_old_self);
    }
}
