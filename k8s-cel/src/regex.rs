//! Kubernetes' CEL regex library: `find` and `findAll`.

use cel::common::types::{CelInt, CelList, CelString};
use cel::common::value::Val;
use cel::{DeclarationError, Env, ExecutionError};
use regex::Regex;

/// Registers `find` and `findAll` on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    cel::add_member_overload!(env, fn find: (CelString, CelString) -> Result<CelString>)?;
    cel::add_member_overload!(env, fn find_all: (CelString, CelString) -> Result<CelList>)?;
    cel::add_member_overload!(env, fn find_all_n: (CelString, CelString, CelInt) -> Result<CelList>,
        name = "findAll")?;
    Ok(())
}

fn compile(function: &str, pattern: &str) -> Result<Regex, ExecutionError> {
    Regex::new(pattern).map_err(|err| {
        ExecutionError::function_error(function, format!("'{pattern}' not a valid regex:\n{err}"))
    })
}

fn find(
    this: &CelString<'_>,
    pattern: &CelString<'_>,
) -> Result<CelString<'static>, ExecutionError> {
    let re = compile("find", pattern.inner())?;
    let found = re.find(this.inner()).map(|m| m.as_str().to_string());
    Ok(CelString::from(found.unwrap_or_default()))
}

fn all(this: &str, re: &Regex, limit: Option<usize>) -> CelList<'static> {
    let matches = re.find_iter(this).take(limit.unwrap_or(usize::MAX));
    let items: Vec<Box<dyn Val>> = matches
        .map(|m| Box::new(CelString::from(m.as_str().to_string())) as Box<dyn Val>)
        .collect();
    CelList::from(items)
}

fn find_all(
    this: &CelString<'_>,
    pattern: &CelString<'_>,
) -> Result<CelList<'static>, ExecutionError> {
    let re = compile("findAll", pattern.inner())?;
    Ok(all(this.inner(), &re, None))
}

fn find_all_n(
    this: &CelString<'_>,
    pattern: &CelString<'_>,
    n: &CelInt,
) -> Result<CelList<'static>, ExecutionError> {
    let re = compile("findAll", pattern.inner())?;
    let limit = usize::try_from(*n.inner()).ok();
    Ok(all(this.inner(), &re, limit))
}
