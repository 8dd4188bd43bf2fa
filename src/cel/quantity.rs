//! Kubernetes' CEL quantity library (`k8s.io/apiserver/pkg/cel/library/quantity.go`),
//! which KRO's environment includes: `quantity(string)`, `isQuantity(string)` and, on a
//! quantity, `sign()`, `isInteger()`, `asInteger()`, `asApproximateFloat()`, `add(q|int)`,
//! `sub(q|int)`, `isLessThan(q)`, `isGreaterThan(q)` and `compareTo(q)`. Quantities compare
//! by value: `quantity("1Gi") == quantity("1024Mi")`.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::functions::Function;
use cel::common::types::{INT_TYPE, STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::dynamic::{owned, value_of};

/// The CEL name of the quantity type, as Kubernetes names it.
const TYPE_NAME: &str = "kubernetes.Quantity";

/// Kubernetes' message for text that is not a quantity.
const NOT_A_QUANTITY: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// A quantity: `units × 10^exponent`, kept with no trailing zero in `units` so that equal
/// quantities are equal values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Quantity {
    units: i128,
    exponent: i32,
}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

impl Quantity {
    fn new(mut units: i128, mut exponent: i32) -> Self {
        if units == 0 {
            return Self { units, exponent: 0 };
        }
        while units % 10 == 0 {
            units /= 10;
            exponent += 1;
        }
        Self { units, exponent }
    }

    /// Parses Kubernetes' quantity syntax: a signed decimal number and a suffix (binary SI
    /// `Ki`…`Ei`, decimal SI `n`…`E`, or an exponent `e3`/`E-3`).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let invalid = || NOT_A_QUANTITY.to_owned();
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.len() + fraction.len() == 0 || fraction.contains('.') {
            return Err(invalid());
        }
        let out_of_range = || format!("{text:?} is out of range");
        let mut units: i128 = 0;
        for digit in whole.bytes().chain(fraction.bytes()) {
            units = units
                .checked_mul(10)
                .and_then(|u| u.checked_add(i128::from(digit - b'0')))
                .ok_or_else(out_of_range)?;
        }
        let fraction_digits = i32::try_from(fraction.len()).map_err(|_| out_of_range())?;
        let (multiplier, exponent) = suffix_value(suffix).ok_or_else(invalid)?;
        let units = units.checked_mul(multiplier).ok_or_else(out_of_range)?;
        let units = if negative { -units } else { units };
        Ok(Self::new(units, exponent - fraction_digits))
    }

    /// Both quantities' units at their common (smaller) exponent, if they fit.
    fn aligned(self, other: Self) -> Option<(i128, i128, i32)> {
        let exponent = self.exponent.min(other.exponent);
        let scale = |q: Self| {
            10i128
                .checked_pow(u32::try_from(q.exponent - exponent).ok()?)
                .and_then(|factor| q.units.checked_mul(factor))
        };
        Some((scale(self)?, scale(other)?, exponent))
    }

    fn approximate(self) -> f64 {
        self.units as f64 * 10f64.powi(self.exponent)
    }

    fn compare(self, other: Self) -> Ordering {
        match self.aligned(other) {
            Some((a, b, _)) => a.cmp(&b),
            None => self.approximate().total_cmp(&other.approximate()),
        }
    }

    fn add(self, other: Self) -> Option<Self> {
        let (a, b, exponent) = self.aligned(other)?;
        Some(Self::new(a.checked_add(b)?, exponent))
    }

    fn negated(self) -> Self {
        Self::new(-self.units, self.exponent)
    }

    fn as_integer(self) -> Option<i64> {
        let exponent = u32::try_from(self.exponent).ok()?;
        let value = self.units.checked_mul(10i128.checked_pow(exponent)?)?;
        i64::try_from(value).ok()
    }
}

/// The multiplier and decimal exponent of a quantity's suffix.
fn suffix_value(suffix: &str) -> Option<(i128, i32)> {
    let binary = |power: u32| Some((1i128 << (10 * power), 0));
    match suffix {
        "" => Some((1, 0)),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        "n" => Some((1, -9)),
        "u" => Some((1, -6)),
        "m" => Some((1, -3)),
        "k" => Some((1, 3)),
        "M" => Some((1, 6)),
        "G" => Some((1, 9)),
        "T" => Some((1, 12)),
        "P" => Some((1, 15)),
        "E" => Some((1, 18)),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.trim_start_matches(['+', '-']);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((1, exponent.parse().ok()?))
        }
    }
}

/// Registers the quantity type and its functions on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    let quantity = || Type::new_opaque_type(TYPE_NAME);
    env.add_type(quantity())?;
    let parse: Function = parse;
    let is_quantity: Function = is_quantity;
    env.add_overload("quantity", "stringToQuantity", vec![STRING_TYPE], parse)?;
    env.add_overload(
        "isQuantity",
        "isQuantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    let unary: [(&str, Function); 4] = [
        ("sign", sign),
        ("isInteger", is_integer),
        ("asInteger", as_integer),
        ("asApproximateFloat", as_approximate_float),
    ];
    for (name, function) in unary {
        let id = format!("quantity_{name}");
        env.add_member_overload(name, &id, quantity(), vec![], function)?;
    }
    let binary: [(&str, Function); 5] = [
        ("add", add),
        ("sub", sub),
        ("isLessThan", is_less_than),
        ("isGreaterThan", is_greater_than),
        ("compareTo", compare_to),
    ];
    for (name, function) in binary {
        let id = format!("quantity_{name}_quantity");
        env.add_member_overload(name, &id, quantity(), vec![quantity()], function)?;
    }
    let with_int: [(&str, Function); 2] = [("add", add), ("sub", sub)];
    for (name, function) in with_int {
        let id = format!("quantity_{name}_int");
        env.add_member_overload(name, &id, quantity(), vec![INT_TYPE], function)?;
    }
    Ok(())
}

/// The quantities (or ints, as quantities) a function was called with.
fn quantities(function: &str, args: &[CowVal<'_, '_>]) -> Result<Vec<Quantity>, ExecutionError> {
    args.iter()
        .map(|arg| match value_of(arg)? {
            Value::Int(i) => Ok(Quantity::new(i128::from(i), 0)),
            Value::Opaque(opaque) => opaque
                .downcast_ref::<Quantity>()
                .copied()
                .ok_or_else(|| not_a_quantity(function, opaque.runtime_type_name())),
            other => Err(not_a_quantity(function, &other.type_of().to_string())),
        })
        .collect()
}

fn not_a_quantity(function: &str, found: &str) -> ExecutionError {
    ExecutionError::function_error(function, format!("expected a quantity, got {found}"))
}

/// The receiver and the argument of a binary function.
fn pair(function: &str, args: &[CowVal<'_, '_>]) -> Result<(Quantity, Quantity), ExecutionError> {
    match quantities(function, args)?.as_slice() {
        [a, b] => Ok((*a, *b)),
        other => Err(ExecutionError::invalid_argument_count(2, other.len())),
    }
}

/// The receiver of a unary function.
fn receiver(function: &str, args: &[CowVal<'_, '_>]) -> Result<Quantity, ExecutionError> {
    match quantities(function, args)?.as_slice() {
        [q] => Ok(*q),
        other => Err(ExecutionError::invalid_argument_count(1, other.len())),
    }
}

fn text(args: &[CowVal<'_, '_>]) -> Result<Arc<String>, ExecutionError> {
    match args.first().map(value_of).transpose()? {
        Some(Value::String(text)) => Ok(text),
        _ => Err(ExecutionError::function_error(
            "quantity",
            "expected a string",
        )),
    }
}

fn parse<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let quantity = Quantity::parse(&text(&args)?)
        .map_err(|message| ExecutionError::function_error("quantity", message))?;
    owned(Value::Opaque(Arc::new(quantity)))
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(Value::Bool(Quantity::parse(&text(&args)?).is_ok()))
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = receiver("sign", &args)?;
    owned(Value::Int(q.units.signum() as i64))
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(Value::Bool(receiver("isInteger", &args)?.exponent >= 0))
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = receiver("asInteger", &args)?;
    let integer = q.as_integer().ok_or_else(|| {
        ExecutionError::function_error("asInteger", "cannot convert value to integer")
    })?;
    owned(Value::Int(integer))
}

fn as_approximate_float<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(Value::Float(
        receiver("asApproximateFloat", &args)?.approximate(),
    ))
}

/// `a.add(b)`, or `a.sub(b)` when `subtract`.
fn sum<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    subtract: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = pair(function, &args)?;
    let b = if subtract { b.negated() } else { b };
    let result = a
        .add(b)
        .ok_or_else(|| ExecutionError::function_error(function, "quantity overflow"))?;
    owned(Value::Opaque(Arc::new(result)))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    sum("add", args, false)
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    sum("sub", args, true)
}

fn is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = pair("isLessThan", &args)?;
    owned(Value::Bool(a.compare(b) == Ordering::Less))
}

fn is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = pair("isGreaterThan", &args)?;
    owned(Value::Bool(a.compare(b) == Ordering::Greater))
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = pair("compareTo", &args)?;
    owned(Value::Int(a.compare(b) as i64))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::cel::evaluate_closed;

    #[test]
    fn quantities_as_kubernetes() {
        // Cases from k8s.io/apiserver/pkg/cel/library/quantity_test.go.
        let cases = [
            ("quantity('12Mi') == quantity('12582912')", json!(true)),
            ("quantity('1Gi') == quantity('1024Mi')", json!(true)),
            ("quantity('1000m') == quantity('1')", json!(true)),
            ("quantity('1.5k') == quantity('1500')", json!(true)),
            ("quantity('1e3') == quantity('1k')", json!(true)),
            ("quantity('1') == quantity('2')", json!(false)),
            ("isQuantity('20')", json!(true)),
            ("isQuantity('20M')", json!(true)),
            ("isQuantity('20Mi')", json!(true)),
            ("isQuantity('20x')", json!(false)),
            ("isQuantity('')", json!(false)),
            ("isQuantity('1.2.3')", json!(false)),
            (
                "quantity('50k').isGreaterThan(quantity('50M'))",
                json!(false),
            ),
            (
                "quantity('50M').isGreaterThan(quantity('50k'))",
                json!(true),
            ),
            ("quantity('50k').isLessThan(quantity('50Mi'))", json!(true)),
            ("quantity('500Mi').isLessThan(quantity('1Gi'))", json!(true)),
            ("quantity('50M').compareTo(quantity('50M'))", json!(0)),
            ("quantity('50k').compareTo(quantity('50M'))", json!(-1)),
            ("quantity('50M').compareTo(quantity('50k'))", json!(1)),
            (
                "quantity('50k').add(quantity('20')) == quantity('50.02k')",
                json!(true),
            ),
            ("quantity('50k').add(20) == quantity('50020')", json!(true)),
            (
                "quantity('50k').sub(quantity('20')) == quantity('49.98k')",
                json!(true),
            ),
            ("quantity('50k').sub(20) == quantity('49980')", json!(true)),
            ("quantity('50.703k').asInteger()", json!(50703)),
            ("quantity('50.703k').isInteger()", json!(true)),
            ("quantity('50.7035k').isInteger()", json!(false)),
            ("quantity('1Ki').asInteger()", json!(1024)),
            ("quantity('50.7m').asApproximateFloat()", json!(0.0507)),
            ("quantity('-50k').sign()", json!(-1)),
            ("quantity('0').sign()", json!(0)),
            ("quantity('+50k').sign()", json!(1)),
        ];
        for (expression, want) in cases {
            assert_eq!(evaluate_closed(expression), Ok(want), "{expression}");
        }
    }

    #[test]
    fn quantity_errors_say_what_was_wrong() {
        let cases = [
            (
                "quantity('20x')",
                "quantities must match the regular expression",
            ),
            (
                "quantity('1.5m').asInteger()",
                "cannot convert value to integer",
            ),
            (
                "quantity('20Ei').asInteger()",
                "cannot convert value to integer",
            ),
        ];
        for (expression, want) in cases {
            let error = evaluate_closed(expression).unwrap_err();
            assert!(error.contains(want), "{expression}: {error}");
        }
    }
}
