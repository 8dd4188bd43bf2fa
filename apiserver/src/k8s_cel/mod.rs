//! CEL as kube-apiserver runs it for CRD validation rules: the standard library and the
//! strings extension of the `cel` crate, `cel.bind` and two-variable comprehensions, plus
//! Kubernetes' own libraries (lists, regex, URL, IP/CIDR, quantity, semver), JSON values with integers as `int`, and a compile step that refuses
//! functions and variables the environment does not have, as kube's type checker does.

mod check;
mod value;

use std::sync::{Arc, LazyLock};

pub(crate) use check::{Compiled, compile};
pub(crate) use value::to_val;

/// The environment every rule is compiled and run in, built once per process.
static ENV: LazyLock<Result<Arc<cel::Env>, String>> = LazyLock::new(|| {
    let mut env = cel::Env::stdlib();
    for extension in [cel::extensions::strings, dynrec_k8s_cel::extension] {
        env.add_extension(extension).map_err(|e| e.to_string())?;
    }
    Ok(Arc::new(env))
});

/// The shared environment, or why it could not be built.
pub(crate) fn env() -> Result<Arc<cel::Env>, String> {
    ENV.as_ref().cloned().map_err(Clone::clone)
}
