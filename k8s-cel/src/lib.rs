//! Kubernetes' CEL libraries, as kube-apiserver enables them for CRD validation rules and
//! KRO for its expressions: lists (`isSorted`, `sum`, `min`, `max`, `indexOf`,
//! `lastIndexOf`) with cel-go's sets extension, regex (`find`, `findAll`), URL (`url()`),
//! IP and CIDR (`ip()`, `cidr()`), quantity (`quantity()`), semver (`semver()`), and
//! cel-go's `cel.bind` and two-variable comprehensions (`all(k, v, p)`, `transformMap`...).
//! The embedded API server and dynrec's definitions share them.

mod bind;
mod comprehensions;
mod lists;
mod net;
mod opaque;
mod quantity;
mod regex;
mod semver;
mod url;

use cel::{DeclarationError, Env};

pub use comprehensions::{ITERATION_KEYS, MAP_INSERT};

/// CEL's reserved words: no identifier may be one (kube escapes a property named so as
/// `__word__`).
pub const RESERVED_WORDS: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Registers every library on `env`.
pub fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    let extensions = [
        bind::extension,
        lists::extension,
        regex::extension,
        url::extension,
        net::extension,
        quantity::extension,
        semver::extension,
        comprehensions::extension,
    ];
    for extension in extensions {
        env.add_extension(extension)?;
    }
    Ok(())
}
