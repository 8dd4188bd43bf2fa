//! KRO's `random` CEL library: `random.seededString(length, seed)` and
//! `random.seededInt(min, max, seed)`, deterministic for a seed and equal to KRO's
//! (kro's `pkg/cel/library/random.go`: SHA-256 of the seed, 4 bytes an item), so a name
//! KRO generated is the one dynrec generates.

use cel::common::types::{CelInt, CelString};
use cel::{DeclarationError, Env, ExecutionError};
use ring::digest::{SHA256, digest};

/// The characters of a seeded string.
const ALPHANUMERIC: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// Registers `random.seededString` and `random.seededInt` on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    cel::add_overload!(env, fn seeded_string: (CelInt, CelString) -> Result<CelString>,
        name = "random.seededString")?;
    cel::add_overload!(env, fn seeded_int: (CelInt, CelInt, CelString) -> Result<CelInt>,
        name = "random.seededInt")?;
    Ok(())
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(digest(&SHA256, bytes).as_ref());
    out
}

fn seeded_string(
    length: &CelInt,
    seed: &CelString<'_>,
) -> Result<CelString<'static>, ExecutionError> {
    let length = usize::try_from(*length.inner())
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            ExecutionError::function_error("random.seededString", "length must be positive")
        })?;
    Ok(CelString::from(seeded_text(length, seed.inner())))
}

/// KRO's algorithm: item i reads 4 bytes of the hash at (4i mod 32); when they would run
/// past its end, the hash becomes SHA-256 of itself and the items so far.
fn seeded_text(length: usize, seed: &str) -> String {
    let mut hash = sha256(seed.as_bytes());
    let mut result: Vec<u8> = Vec::with_capacity(length);
    for i in 0..length {
        let mut start = (i * 4) % hash.len();
        if start + 4 > hash.len() {
            let mut input = hash.to_vec();
            input.extend_from_slice(&result);
            hash = sha256(&input);
            start = 0;
        }
        let index = u32::from_be_bytes([
            hash[start],
            hash[start + 1],
            hash[start + 2],
            hash[start + 3],
        ]);
        result.push(ALPHANUMERIC[(index % ALPHANUMERIC.len() as u32) as usize]);
    }
    String::from_utf8_lossy(&result).into_owned()
}

fn seeded_int(min: &CelInt, max: &CelInt, seed: &CelString<'_>) -> Result<CelInt, ExecutionError> {
    let (min, max) = (*min.inner(), *max.inner());
    if min >= max {
        return Err(ExecutionError::function_error(
            "random.seededInt",
            "min must be less than max",
        ));
    }
    let hash = sha256(seed.inner().as_bytes());
    let mut first = [0; 8];
    first.copy_from_slice(&hash[..8]);
    let value = u64::from_be_bytes(first);
    let range = max.abs_diff(min);
    Ok(CelInt::from(min.wrapping_add((value % range) as i64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_strings_are_deterministic_alphanumeric_and_of_the_length_asked() {
        let a = seeded_text(40, "uid-1");
        assert_eq!(a.len(), 40);
        assert!(a.bytes().all(|b| ALPHANUMERIC.contains(&b)));
        assert_eq!(a, seeded_text(40, "uid-1"));
        assert_ne!(a, seeded_text(40, "uid-2"));
        assert_eq!(&seeded_text(10, "uid-1"), &a[..10]);
    }
}
