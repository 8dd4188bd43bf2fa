//! Name and label validation with the exact messages kube-apiserver uses
//! (k8s.io/apimachinery/pkg/util/validation), so they can be returned
//! verbatim as causes of a 422 Invalid Status.
//!
//! Every function returns the list of problems; an empty list means valid.
//! Lengths are counted in bytes, as Go's `len` does.

/// Maximum length of a DNS-1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Maximum length of the name part of a qualified name (label key).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Maximum length of a label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Problems with a DNS-1123 subdomain (e.g. most object names); empty = valid.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !is_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Problems with a name that only has to be a safe path segment (`path.ValidatePathSegmentName`),
/// as RBAC names like `system:discovery` are.
pub fn path_segment_name(value: &str) -> Vec<String> {
    if value == "." || value == ".." {
        return vec![format!("may not be '{value}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| value.contains(**bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// Problems with a DNS-1123 label (e.g. namespace names); empty = valid.
///
/// Like Kubernetes, a value that is a valid subdomain but not a valid label
/// gets the short message `must not contain dots`.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !is_dns1123_label(value) {
        if is_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Problems with a DNS-1035 label (Service names: a letter first); empty = valid.
pub fn dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !is_dns1123_label(value) || !value.starts_with(|c: char| c.is_ascii_lowercase()) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Problems with a port number (`IsValidPortNum`); empty = valid.
pub fn port_number(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        return Vec::new();
    }
    vec!["must be between 1 and 65535, inclusive".into()]
}

/// Problems with an IANA port name (`IsValidPortName`), as a target port may be; empty = valid.
pub fn port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty()
        || !port
            .bytes()
            .all(|b| b == b'-' || b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !port.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// Problems with a qualified name such as a label key
/// (`[prefix/]name`, prefix a DNS-1123 subdomain); empty = valid.
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let mut parts = value.split('/');
    let first = parts.next().unwrap_or_default();
    let second = parts.next();
    if parts.next().is_some() {
        return vec![format!(
            "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            qualified_name_regex_error()
        )];
    }
    let name = match second {
        None => first,
        Some(name) => {
            if first.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                let prefixed = dns1123_subdomain(first).into_iter();
                errs.extend(prefixed.map(|msg| format!("prefix part {msg}")));
            }
            name
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !is_qualified_name_part(name) {
        errs.push(format!("name part {}", qualified_name_regex_error()));
    }
    errs
}

/// Problems with a label value (may be empty); empty list = valid.
pub fn label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Kubernetes' `MaxLenError`.
/// `IsConfigMapKey`: a ConfigMap or Secret key (also a file name in a volume).
pub fn config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let is_key_byte = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_');
    if value.is_empty() || !value.bytes().all(|b| is_key_byte(&b)) {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    match value {
        "." => errs.push("must not be '.'".to_string()),
        ".." => errs.push("must not be '..'".to_string()),
        _ if value.starts_with("..") => errs.push("must not start with '..'".to_string()),
        _ => {}
    }
    errs
}

fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// Kubernetes' `RegexError`: every example quoted and followed by `, `, and each after the
/// first led by ` or `, so that two examples read `'a',  or 'b', `.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn qualified_name_regex_error() -> String {
    regex_error(
        QUALIFIED_NAME_ERR_MSG,
        QUALIFIED_NAME_FMT,
        &["MyName", "my.name", "123-abc"],
    )
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` without a length limit.
fn is_dns1123_label(value: &str) -> bool {
    let is_edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let is_inner = |b: u8| is_edge(b) || b == b'-';
    matches_edges_and_inner(value.as_bytes(), is_edge, is_inner)
}

/// `label(\.label)*` without a length limit.
fn is_dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(is_dns1123_label)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` without a length limit.
fn is_qualified_name_part(value: &str) -> bool {
    let is_edge = |b: u8| b.is_ascii_alphanumeric();
    let is_inner = |b: u8| is_edge(b) || matches!(b, b'-' | b'_' | b'.');
    matches_edges_and_inner(value.as_bytes(), is_edge, is_inner)
}

/// Non-empty, first and last byte satisfy `edge`, all others satisfy `inner`.
fn matches_edges_and_inner(
    bytes: &[u8],
    edge: impl Fn(u8) -> bool,
    inner: impl Fn(u8) -> bool,
) -> bool {
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => edge(first) && edge(last) && bytes.iter().all(|&b| inner(b)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn subdomain_accepts_valid_names() {
        for ok in [
            "a",
            "0",
            "abc",
            "a-b",
            "a.b",
            "a--b.c-d.e",
            "123",
            "x".repeat(253).as_str(),
        ] {
            assert!(dns1123_subdomain(ok).is_empty(), "{ok:?} should be valid");
        }
    }

    #[test]
    fn subdomain_rejects_bad_syntax_with_exact_message() {
        for bad in [
            "", "A", "-a", "a-", ".a", "a.", "a..b", "a_b", "a b", "a.-b", "é", "a\n",
        ] {
            assert_eq!(dns1123_subdomain(bad), vec![SUBDOMAIN_MSG], "{bad:?}");
        }
    }

    #[test]
    fn subdomain_too_long() {
        let long = "a".repeat(254);
        assert_eq!(
            dns1123_subdomain(&long),
            vec!["must be no more than 253 characters"]
        );
        let long_bad = format!("{}-", "a".repeat(253));
        assert_eq!(
            dns1123_subdomain(&long_bad),
            vec!["must be no more than 253 characters", SUBDOMAIN_MSG]
        );
    }

    #[test]
    fn label_accepts_valid_names() {
        for ok in ["a", "9", "my-name", "123-abc", "a".repeat(63).as_str()] {
            assert!(dns1123_label(ok).is_empty(), "{ok:?} should be valid");
        }
    }

    #[test]
    fn label_rejects_bad_syntax_with_exact_message() {
        for bad in ["", "A", "-a", "a-", "a_b", "a/b", "ä", ".", "a..b"] {
            assert_eq!(dns1123_label(bad), vec![LABEL_MSG], "{bad:?}");
        }
    }

    #[test]
    fn label_with_dots_gets_short_message() {
        assert_eq!(dns1123_label("a.b"), vec!["must not contain dots"]);
    }

    #[test]
    fn label_too_long() {
        let long = "a".repeat(64);
        assert_eq!(
            dns1123_label(&long),
            vec!["must be no more than 63 characters"]
        );
        let long_bad = "A".repeat(64);
        assert_eq!(
            dns1123_label(&long_bad),
            vec!["must be no more than 63 characters", LABEL_MSG]
        );
    }

    #[test]
    fn qualified_name_valid() {
        for ok in [
            "a",
            "A",
            "app",
            "My_Name.x-1",
            "example.com/MyName",
            "app.kubernetes.io/name",
            "x".repeat(63).as_str(),
        ] {
            assert!(qualified_name(ok).is_empty(), "{ok:?} should be valid");
        }
    }

    #[test]
    fn qualified_name_errors() {
        assert_eq!(qualified_name("-a"), vec![NAME_PART_MSG]);
        assert_eq!(
            qualified_name(""),
            vec![
                "name part must be non-empty".to_string(),
                NAME_PART_MSG.to_string()
            ]
        );
        assert_eq!(qualified_name("/a"), vec!["prefix part must be non-empty"]);
        assert_eq!(
            qualified_name("Example.com/a"),
            vec![format!("prefix part {SUBDOMAIN_MSG}")]
        );
        assert_eq!(
            qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters"]
        );
        let too_many = qualified_name("a/b/c");
        assert_eq!(too_many.len(), 1);
        assert!(too_many[0].starts_with("a qualified name must consist of"));
        assert!(too_many[0].ends_with(
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ));
    }

    #[test]
    fn label_value_rules() {
        for ok in ["", "a", "A-b_c.d", "12345", "v".repeat(63).as_str()] {
            assert!(label_value(ok).is_empty(), "{ok:?} should be valid");
        }
        assert_eq!(label_value("-a"), vec![VALUE_MSG]);
        assert_eq!(label_value("a b"), vec![VALUE_MSG]);
        assert_eq!(
            label_value(&"v".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }
}
