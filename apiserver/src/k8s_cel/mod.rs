//! CEL as kube-apiserver runs it for CRD validation rules: the standard library and the
//! strings extension of the `cel` crate, `cel.bind`, plus Kubernetes' own libraries (lists,
//! regex, URL, IP/CIDR, quantity), JSON values with integers as `int`, and a compile step that refuses
//! functions and variables the environment does not have, as kube's type checker does.

mod bind;
mod check;
mod lists;
mod net;
mod opaque;
mod quantity;
mod regex;
mod url;
mod value;

use std::sync::{Arc, LazyLock};

pub(crate) use check::{Compiled, compile};
pub(crate) use value::to_val;

/// The environment every rule is compiled and run in, built once per process.
static ENV: LazyLock<Result<Arc<cel::Env>, String>> = LazyLock::new(|| {
    let mut env = cel::Env::stdlib();
    let extensions = [
        cel::extensions::strings,
        bind::extension,
        lists::extension,
        regex::extension,
        url::extension,
        net::extension,
        quantity::extension,
    ];
    for extension in extensions {
        env.add_extension(extension).map_err(|e| e.to_string())?;
    }
    Ok(Arc::new(env))
});

/// The shared environment, or why it could not be built.
pub(crate) fn env() -> Result<Arc<cel::Env>, String> {
    ENV.as_ref().cloned().map_err(Clone::clone)
}
