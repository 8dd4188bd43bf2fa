//! Kubernetes' CEL quantity library: `quantity()`, `isQuantity()` and a `Quantity`'s
//! comparisons and arithmetic.
//!
//! A quantity is held as a whole number of nano-units (`i128`), so `1Ei` and `1n` are both
//! exact; a value finer than 1n is rounded up, as kube rounds quantities to nano precision.

use cel::common::types::{CelBool, CelDouble, CelInt, CelString};
use cel::{DeclarationError, Env, ExecutionError};

use crate::opaque::opaque_val;

/// A resource quantity in nano-units.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Quantity(i128);

opaque_val!(Quantity, QUANTITY_TYPE, "kubernetes.Quantity");

const NANOS: i128 = 1_000_000_000;

/// Registers the quantity functions on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(QUANTITY_TYPE.to_owned())?;
    cel::add_overload!(env, fn quantity: (CelString) -> Result<Quantity>)?;
    cel::add_overload!(env, fn is_quantity: (CelString) -> CelBool)?;
    cel::add_member_overload!(env, fn is_integer: (Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn as_integer: (Quantity) -> Result<CelInt>)?;
    cel::add_member_overload!(env, fn as_approximate_float: (Quantity) -> CelDouble)?;
    cel::add_member_overload!(env, fn sign: (Quantity) -> CelInt)?;
    cel::add_member_overload!(env, fn is_less_than: (Quantity, Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn is_greater_than: (Quantity, Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn compare_to: (Quantity, Quantity) -> CelInt)?;
    cel::add_member_overload!(env, fn add: (Quantity, Quantity) -> Result<Quantity>)?;
    cel::add_member_overload!(env, fn add_int: (Quantity, CelInt) -> Result<Quantity>, name = "add")?;
    cel::add_member_overload!(env, fn sub: (Quantity, Quantity) -> Result<Quantity>)?;
    cel::add_member_overload!(env, fn sub_int: (Quantity, CelInt) -> Result<Quantity>, name = "sub")?;
    Ok(())
}

/// Parses a quantity (`100m`, `1.5Gi`, `2e3`, `-1`), as `resource.ParseQuantity` accepts it.
pub(crate) fn parse(text: &str) -> Option<i128> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let number_end = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let (base, exponent) = suffix_scale(suffix)?;
    // digits * 10^-len(fraction) * base * 10^exponent, in nano-units.
    let digits: String = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let mut value: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    value = value.checked_mul(base)?;
    let mut scale = exponent + 9 - i32::try_from(fraction.len()).ok()?;
    while scale > 0 {
        value = value.checked_mul(10)?;
        scale -= 1;
    }
    while scale < 0 {
        let rounded_up = value % 10 != 0;
        value = value / 10 + i128::from(rounded_up);
        scale += 1;
    }
    Some(if negative { -value } else { value })
}

/// The multiplier and power of ten of a suffix: binary (`Ki`..`Ei`), decimal (`n`..`E`), or
/// an exponent (`e3`, `E-2`).
fn suffix_scale(suffix: &str) -> Option<(i128, i32)> {
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if let Some(i) = binary.iter().position(|s| *s == suffix) {
        return Some((1i128 << (10 * (i + 1)), 0));
    }
    let decimal = [
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("", 0),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    ];
    if let Some((_, e)) = decimal.iter().find(|(s, _)| *s == suffix) {
        return Some((1, *e));
    }
    let exponent = suffix.strip_prefix(['e', 'E'])?;
    let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let e: i32 = exponent.parse().ok()?;
    (-40..=40).contains(&e).then_some((1, e))
}

fn quantity(text: &CelString<'_>) -> Result<Quantity, ExecutionError> {
    parse(text.inner()).map(Quantity).ok_or_else(|| {
        ExecutionError::function_error("quantity", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    })
}

fn is_quantity(text: &CelString<'_>) -> CelBool {
    CelBool::from(parse(text.inner()).is_some())
}

fn as_int(q: &Quantity) -> Option<i64> {
    (q.0 % NANOS == 0)
        .then(|| i64::try_from(q.0 / NANOS).ok())
        .flatten()
}

fn is_integer(this: &Quantity) -> CelBool {
    CelBool::from(as_int(this).is_some())
}

fn as_integer(this: &Quantity) -> Result<CelInt, ExecutionError> {
    as_int(this).map(CelInt::from).ok_or_else(|| {
        ExecutionError::function_error("asInteger", "cannot convert value to integer")
    })
}

fn as_approximate_float(this: &Quantity) -> CelDouble {
    CelDouble::from(this.0 as f64 / NANOS as f64)
}

fn sign(this: &Quantity) -> CelInt {
    CelInt::from(this.0.signum() as i64)
}

fn is_less_than(this: &Quantity, other: &Quantity) -> CelBool {
    CelBool::from(this.0 < other.0)
}

fn is_greater_than(this: &Quantity, other: &Quantity) -> CelBool {
    CelBool::from(this.0 > other.0)
}

fn compare_to(this: &Quantity, other: &Quantity) -> CelInt {
    CelInt::from(this.0.cmp(&other.0) as i64)
}

fn overflow(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "quantity overflow")
}

fn add(this: &Quantity, other: &Quantity) -> Result<Quantity, ExecutionError> {
    this.0
        .checked_add(other.0)
        .map(Quantity)
        .ok_or_else(|| overflow("add"))
}

fn add_int(this: &Quantity, other: &CelInt) -> Result<Quantity, ExecutionError> {
    let other = i128::from(*other.inner()) * NANOS;
    this.0
        .checked_add(other)
        .map(Quantity)
        .ok_or_else(|| overflow("add"))
}

fn sub(this: &Quantity, other: &Quantity) -> Result<Quantity, ExecutionError> {
    this.0
        .checked_sub(other.0)
        .map(Quantity)
        .ok_or_else(|| overflow("sub"))
}

fn sub_int(this: &Quantity, other: &CelInt) -> Result<Quantity, ExecutionError> {
    let other = i128::from(*other.inner()) * NANOS;
    this.0
        .checked_sub(other)
        .map(Quantity)
        .ok_or_else(|| overflow("sub"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubernetes_quantities() {
        assert_eq!(parse("1"), Some(NANOS));
        assert_eq!(parse("100m"), Some(NANOS / 10));
        assert_eq!(parse("1.5Gi"), Some(1_610_612_736 * NANOS));
        assert_eq!(parse("2e3"), Some(2000 * NANOS));
        assert_eq!(parse("-1k"), Some(-1000 * NANOS));
        assert_eq!(parse("1n"), Some(1));
        assert_eq!(parse("0.1n"), Some(1));
        assert_eq!(parse(".5"), Some(NANOS / 2));
        for bad in ["", "abc", "1.2.3", "1Xi", "1e", "--1", "1 Gi"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
