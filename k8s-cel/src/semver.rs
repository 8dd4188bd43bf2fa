//! Kubernetes' CEL semver library: `semver()`, `isSemver()` (each also with cel's
//! `normalize` flag), a `Semver`'s `major()`, `minor()`, `patch()` and its comparisons
//! `isLessThan()`, `isGreaterThan()` and `compareTo()`.
//!
//! Versions parse as github.com/blang/semver/v4's `Parse` does, which kube uses, and its
//! errors are that library's words.

use std::cmp::Ordering;

use cel::common::types::{CelBool, CelInt, CelString};
use cel::{DeclarationError, Env, ExecutionError};

use crate::opaque::opaque_val;

/// A semantic version; its build metadata is checked when parsed, and takes no part in
/// comparisons.
#[derive(Clone, Debug)]
pub(crate) struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Prerelease>,
}

/// One dot-separated identifier of a prerelease (`alpha`, `1`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Prerelease {
    Number(u64),
    Text(String),
}

/// Two versions are equal when neither precedes the other (build metadata aside), as
/// kube's `Semver.Equal` decides.
impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.cmp_precedence(other) == Ordering::Equal
    }
}

opaque_val!(Semver, SEMVER_TYPE, "kubernetes.Semver");

/// Registers the semver functions on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(SEMVER_TYPE.to_owned())?;
    cel::add_overload!(env, fn semver: (CelString) -> Result<Semver>)?;
    cel::add_overload!(env, fn semver_normalized: (CelString, CelBool) -> Result<Semver>, name = "semver")?;
    cel::add_overload!(env, fn is_semver: (CelString) -> CelBool)?;
    cel::add_overload!(env, fn is_semver_normalized: (CelString, CelBool) -> CelBool, name = "isSemver")?;
    cel::add_member_overload!(env, fn major: (Semver) -> CelInt)?;
    cel::add_member_overload!(env, fn minor: (Semver) -> CelInt)?;
    cel::add_member_overload!(env, fn patch: (Semver) -> CelInt)?;
    cel::add_member_overload!(env, fn is_less_than: (Semver, Semver) -> CelBool)?;
    cel::add_member_overload!(env, fn is_greater_than: (Semver, Semver) -> CelBool)?;
    cel::add_member_overload!(env, fn compare_to: (Semver, Semver) -> CelInt)?;
    Ok(())
}

const DIGITS: &str = "0123456789";

/// Whether every character of `text` is in `set` (true for an empty `text`, as in Go).
fn only(text: &str, set: &str) -> bool {
    text.chars().all(|c| set.contains(c))
}

/// Whether every character of `text` is a letter, digit or `-`.
fn alphanumeric(text: &str) -> bool {
    text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn leading_zero(text: &str) -> bool {
    text.len() > 1 && text.starts_with('0')
}

/// A version number as Go's `strconv.ParseUint` reads it, with its error.
fn number(text: &str) -> Result<u64, String> {
    text.parse().map_err(|_| {
        let why = if text.is_empty() {
            "invalid syntax"
        } else {
            "value out of range"
        };
        format!("strconv.ParseUint: parsing {text:?}: {why}")
    })
}

/// One of major, minor or patch, checked as blang/semver does.
fn component(text: &str, name: &str) -> Result<u64, String> {
    if !only(text, DIGITS) {
        return Err(format!(
            "Invalid character(s) found in {name} number {text:?}"
        ));
    }
    if leading_zero(text) {
        let capitalized = format!("{}{}", name[..1].to_uppercase(), &name[1..]);
        return Err(format!(
            "{capitalized} number must not contain leading zeroes {text:?}"
        ));
    }
    number(text)
}

fn prerelease(text: &str) -> Result<Prerelease, String> {
    if text.is_empty() {
        return Err("Prerelease is empty".to_owned());
    }
    if only(text, DIGITS) {
        if leading_zero(text) {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {text:?}"
            ));
        }
        return number(text).map(Prerelease::Number);
    }
    if alphanumeric(text) {
        return Ok(Prerelease::Text(text.to_owned()));
    }
    Err(format!("Invalid character(s) found in prerelease {text:?}"))
}

/// Parses `text` as blang/semver's `Parse`: `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`.
pub(crate) fn parse(text: &str) -> Result<Semver, String> {
    if text.is_empty() {
        return Err("Version string empty".to_owned());
    }
    let mut parts = text.splitn(3, '.');
    let (Some(major), Some(minor), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("No Major.Minor.Patch elements found".to_owned());
    };
    let major = component(major, "major")?;
    let minor = component(minor, "minor")?;
    let (rest, build): (&str, Vec<&str>) = match rest.split_once('+') {
        Some((rest, build)) => (rest, build.split('.').collect()),
        None => (rest, Vec::new()),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((patch, pre)) => (patch, pre.split('.').collect()),
        None => (rest, Vec::new()),
    };
    let patch = component(patch, "patch")?;
    let pre = pre.into_iter().map(prerelease).collect::<Result<_, _>>()?;
    for item in &build {
        if item.is_empty() {
            return Err("Build meta data is empty".to_owned());
        }
        if !alphanumeric(item) {
            return Err(format!(
                "Invalid character(s) found in build meta data {item:?}"
            ));
        }
    }
    Ok(Semver {
        major,
        minor,
        patch,
        pre,
    })
}

/// Parses `text` after kube's normalization: without a leading `v`, with leading zeroes
/// removed and a missing minor or patch filled in with 0.
pub(crate) fn parse_normalized(text: &str) -> Result<Semver, String> {
    let text = text.strip_prefix('v').unwrap_or(text);
    let mut parts: Vec<String> = text
        .splitn(3, '.')
        .map(|part| {
            if part.len() <= 1 {
                return part.to_owned();
            }
            let trimmed = part.trim_start_matches('0');
            match trimmed.chars().next() {
                Some(c) if c.is_ascii_digit() => trimmed.to_owned(),
                _ => format!("0{trimmed}"),
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|last| last.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_owned());
        }
        parts.resize(3, "0".to_owned());
    }
    parse(&parts.join("."))
}

impl Semver {
    /// Semver precedence: major, minor, patch, then a release above its prereleases, then
    /// the prerelease identifiers in turn (numbers below text).
    fn cmp_precedence(&self, other: &Self) -> Ordering {
        let core =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => self.pre.cmp(&other.pre),
        }
    }
}

impl PartialOrd for Prerelease {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Prerelease {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Prerelease::Number(a), Prerelease::Number(b)) => a.cmp(b),
            (Prerelease::Number(_), Prerelease::Text(_)) => Ordering::Less,
            (Prerelease::Text(_), Prerelease::Number(_)) => Ordering::Greater,
            (Prerelease::Text(a), Prerelease::Text(b)) => a.cmp(b),
        }
    }
}

fn parsed(text: &str, normalize: bool) -> Result<Semver, String> {
    if normalize {
        parse_normalized(text)
    } else {
        parse(text)
    }
}

fn semver(text: &CelString<'_>) -> Result<Semver, ExecutionError> {
    semver_normalized(text, &CelBool::from(false))
}

fn semver_normalized(text: &CelString<'_>, normalize: &CelBool) -> Result<Semver, ExecutionError> {
    parsed(text.inner(), *normalize.inner())
        .map_err(|message| ExecutionError::function_error("semver", message))
}

fn is_semver(text: &CelString<'_>) -> CelBool {
    is_semver_normalized(text, &CelBool::from(false))
}

fn is_semver_normalized(text: &CelString<'_>, normalize: &CelBool) -> CelBool {
    CelBool::from(parsed(text.inner(), *normalize.inner()).is_ok())
}

/// A version number as CEL's `int`, wrapping as Go's `types.Int(uint64)` does.
fn int(n: u64) -> CelInt {
    CelInt::from(n as i64)
}

fn major(this: &Semver) -> CelInt {
    int(this.major)
}

fn minor(this: &Semver) -> CelInt {
    int(this.minor)
}

fn patch(this: &Semver) -> CelInt {
    int(this.patch)
}

fn is_less_than(this: &Semver, other: &Semver) -> CelBool {
    CelBool::from(this.cmp_precedence(other) == Ordering::Less)
}

fn is_greater_than(this: &Semver, other: &Semver) -> CelBool {
    CelBool::from(this.cmp_precedence(other) == Ordering::Greater)
}

fn compare_to(this: &Semver, other: &Semver) -> CelInt {
    CelInt::from(this.cmp_precedence(other) as i64)
}
