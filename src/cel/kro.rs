//! KRO's CEL libraries beyond `random`, as KRO's environment has them
//! (`pkg/cel/environment.go`): cel-go's `base64.encode`/`base64.decode` (ext.Encoders) and
//! `lists.range` with the list member functions `slice`, `flatten`, `distinct`, `sort`…
//! (ext.Lists), and KRO's `hash.fnv64a`, `hash.sha256` and `hash.md5`
//! (`pkg/cel/library/hash.go`: the digest of a string, as bytes), and its `runtime` library
//! of custom status conditions (`kro_runtime`).

use cel::common::types::{CelBytes, CelString};
use cel::{DeclarationError, Env};
use md5::{Digest, Md5};
use ring::digest::{SHA256, digest};

/// FNV-1a's 64-bit offset basis and prime.
const FNV64_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV64_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Registers the encoders, lists, hash and runtime libraries on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_extension(cel::extensions::encoders)?;
    env.add_extension(cel::extensions::lists)?;
    cel::add_overload!(env, fn fnv64a: (CelString) -> CelBytes, name = "hash.fnv64a")?;
    cel::add_overload!(env, fn sha256: (CelString) -> CelBytes, name = "hash.sha256")?;
    cel::add_overload!(env, fn md5: (CelString) -> CelBytes, name = "hash.md5")?;
    super::kro_runtime::extension(env)
}

/// The FNV-1a 64-bit hash of the string's bytes, big-endian (Go's `fnv.New64a().Sum`).
fn fnv64a(text: &CelString<'_>) -> CelBytes<'static> {
    let hash = text.inner().bytes().fold(FNV64_OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(FNV64_PRIME)
    });
    CelBytes::from(hash.to_be_bytes().to_vec())
}

fn sha256(text: &CelString<'_>) -> CelBytes<'static> {
    CelBytes::from(digest(&SHA256, text.inner().as_bytes()).as_ref().to_vec())
}

fn md5(text: &CelString<'_>) -> CelBytes<'static> {
    CelBytes::from(Md5::digest(text.inner().as_bytes()).to_vec())
}

#[cfg(test)]
mod tests {
    use cel::Value;

    use super::*;

    fn evaluate(expression: &str) -> Result<Value, String> {
        let mut env = Env::stdlib();
        env.add_extension(cel::extensions::strings).unwrap();
        extension(&mut env).unwrap();
        let program = env.compile(expression).map_err(|e| format!("{e:?}"))?;
        program
            .execute(&cel::Context::with_env(std::sync::Arc::new(env)))
            .map_err(|e| e.to_string())
    }

    fn string(value: Value) -> String {
        match value {
            Value::String(s) => s.to_string(),
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn kros_libraries_give_kros_results() {
        // Digests as Go's hash/fnv and crypto/sha256 compute them (what KRO returns).
        let cases = [
            ("base64.encode(hash.fnv64a('hello world'))", "d5pl5wI80uc="),
            (
                "base64.encode(hash.sha256('hello world'))",
                "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=",
            ),
            ("base64.encode(hash.fnv64a(''))", "y/Kc5IQiIyU="),
            (
                "base64.encode(hash.md5('hello world'))",
                "XrY7u+Ae7tCTyyK7j1rNww==",
            ),
            ("base64.encode(hash.md5(''))", "1B2M2Y8AsgTpgAmY7PhCfg=="),
            // Hex, as KRO's documentation writes a digest (`sha256sum`'s output).
            (
                "'%x'.format([hash.md5('')])",
                "d41d8cd98f00b204e9800998ecf8427e",
            ),
            ("string(base64.decode('aGVsbG8='))", "hello"),
            (
                "[1, 2, 3, 4].slice(1, 3).map(i, string(i)).join(',')",
                "2,3",
            ),
            (
                "[[1], [2, 3]].flatten().map(i, string(i)).join(',')",
                "1,2,3",
            ),
            (
                "[3, 1, 3, 2].distinct().sort().map(i, string(i)).join(',')",
                "1,2,3",
            ),
            ("lists.range(3).map(i, string(i)).join(',')", "0,1,2"),
        ];
        for (expression, want) in cases {
            let got = evaluate(expression).map(string);
            assert_eq!(got.as_deref(), Ok(want), "{expression}");
        }
    }

    #[test]
    fn a_hash_of_a_non_string_is_refused() {
        assert!(evaluate("hash.sha256(1)").is_err());
    }
}
