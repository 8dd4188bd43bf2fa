//! Kubernetes' CEL URL library: `url()`, `isURL()` and the accessors of a `URL`.

use std::collections::HashMap;

use cel::common::types::{CelBool, CelList, CelMap, CelMapKey, CelString};
use cel::common::value::Val;
use cel::{DeclarationError, Env, ExecutionError};

use crate::opaque::opaque_val;

/// A URL as `url()` parses it (Go's `url.ParseRequestURI`: absolute URIs and absolute paths).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Url {
    scheme: String,
    host: String,
    path: String,
    query: String,
}

opaque_val!(Url, URL_TYPE, "kubernetes.URL");

/// Registers `url`, `isURL` and the `URL` accessors on `env`.
pub(crate) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(URL_TYPE.to_owned())?;
    cel::add_overload!(env, fn url: (CelString) -> Result<Url>)?;
    cel::add_overload!(env, fn is_url: (CelString) -> CelBool, name = "isURL")?;
    cel::add_member_overload!(env, fn get_scheme: (Url) -> CelString)?;
    cel::add_member_overload!(env, fn get_host: (Url) -> CelString)?;
    cel::add_member_overload!(env, fn get_hostname: (Url) -> CelString)?;
    cel::add_member_overload!(env, fn get_port: (Url) -> CelString)?;
    cel::add_member_overload!(env, fn get_escaped_path: (Url) -> CelString)?;
    cel::add_member_overload!(env, fn get_query: (Url) -> CelMap)?;
    Ok(())
}

/// Parses `text` as Go's `url.ParseRequestURI` accepts it; the error is Go's wording.
pub(crate) fn parse(text: &str) -> Result<Url, String> {
    let invalid = || format!("parse {text:?}: invalid URI for request");
    let without_fragment = text.split('#').next().unwrap_or_default();
    let (rest, query) = match without_fragment.split_once('?') {
        Some((rest, query)) => (rest, query.to_string()),
        None => (without_fragment, String::new()),
    };
    if rest.starts_with('/') {
        return Ok(Url {
            scheme: String::new(),
            host: String::new(),
            path: rest.to_string(),
            query,
        });
    }
    let (scheme, after) = rest.split_once(':').ok_or_else(invalid)?;
    let valid_scheme = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid_scheme {
        return Err(format!(
            "parse {text:?}: first path segment in URL cannot contain colon"
        ));
    }
    let (host, path) = match after.strip_prefix("//") {
        Some(authority_and_path) => {
            let end = authority_and_path
                .find('/')
                .unwrap_or(authority_and_path.len());
            let (authority, path) = authority_and_path.split_at(end);
            let host = authority.rsplit('@').next().unwrap_or_default();
            (host.to_string(), path.to_string())
        }
        None if after.is_empty() => return Err(invalid()),
        None => (String::new(), String::new()),
    };
    if host.chars().any(|c| c.is_whitespace()) || path.chars().any(|c| c.is_whitespace()) {
        return Err(format!(
            "parse {text:?}: invalid character \" \" in host name"
        ));
    }
    Ok(Url {
        scheme: scheme.to_string(),
        host,
        path,
        query,
    })
}

fn url(text: &CelString<'_>) -> Result<Url, ExecutionError> {
    parse(text.inner()).map_err(|err| {
        ExecutionError::function_error(
            "url",
            format!("URL parse error during conversion from string: {err}"),
        )
    })
}

fn is_url(text: &CelString<'_>) -> CelBool {
    CelBool::from(parse(text.inner()).is_ok())
}

fn get_scheme(this: &Url) -> CelString<'static> {
    CelString::from(this.scheme.clone())
}

fn get_host(this: &Url) -> CelString<'static> {
    CelString::from(this.host.clone())
}

/// The host and the port of `host` (`[::1]:80`, `example.com:80`, `example.com`).
fn split_host(host: &str) -> (&str, &str) {
    if let Some(bracketed) = host.strip_prefix('[') {
        let (name, rest) = bracketed.split_once(']').unwrap_or((bracketed, ""));
        return (name, rest.strip_prefix(':').unwrap_or_default());
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => (name, port),
        _ => (host, ""),
    }
}

fn get_hostname(this: &Url) -> CelString<'static> {
    CelString::from(split_host(&this.host).0.to_string())
}

fn get_port(this: &Url) -> CelString<'static> {
    CelString::from(split_host(&this.host).1.to_string())
}

fn get_escaped_path(this: &Url) -> CelString<'static> {
    CelString::from(this.path.clone())
}

fn get_query(this: &Url) -> CelMap<'static> {
    let mut values: HashMap<String, Vec<String>> = HashMap::new();
    for pair in this.query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        values
            .entry(unescape(key))
            .or_default()
            .push(unescape(value));
    }
    let map = values
        .into_iter()
        .map(|(key, list)| {
            let items: Vec<Box<dyn Val>> = list
                .into_iter()
                .map(|v| Box::new(CelString::from(v)) as Box<dyn Val>)
                .collect();
            (
                CelMapKey::from(key),
                Box::new(CelList::from(items)) as Box<dyn Val>,
            )
        })
        .collect::<HashMap<_, _>>();
    CelMap::from(map)
}

/// Percent-decoding of a query component (`+` is a space), bad escapes kept as written.
fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(high * 16 + low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of one hex digit.
fn hex(digit: u8) -> Option<u8> {
    (digit as char)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_go_parse_request_uri() {
        let url = parse("https://user@example.com:8443/a%20b?x=1&x=2#frag").unwrap();
        assert_eq!(url.scheme, "https");
        assert_eq!(url.host, "example.com:8443");
        assert_eq!(split_host(&url.host), ("example.com", "8443"));
        assert_eq!(url.path, "/a%20b");
        assert_eq!(url.query, "x=1&x=2");
        assert_eq!(split_host("[::1]:80"), ("::1", "80"));
        assert!(parse("/just/a/path").is_ok());
        assert!(parse("example.com").is_err());
        assert!(parse("").is_err());
        assert_eq!(unescape("a%2Fb+c%zz"), "a/b c%zz");
    }
}
