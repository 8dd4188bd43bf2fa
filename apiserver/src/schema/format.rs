//! The string formats kube-apiserver checks in CRD schemas (kube-openapi's strfmt registry,
//! limited to the formats apiextensions-apiserver keeps; all others, such as `int32`,
//! are dropped from the schema and never checked).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

/// Whether kube-apiserver checks this format (names are compared without `-`).
pub(super) fn is_checked(format: &str) -> bool {
    const CHECKED: &[&str] = &[
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
    ];
    CHECKED.contains(&format.replace('-', "").as_str())
}

/// Whether `value` is valid for a checked `format`.
pub(super) fn is_valid(format: &str, value: &str) -> bool {
    match format.replace('-', "").as_str() {
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(value),
        "email" => matches(&EMAIL, value),
        "hostname" => is_hostname(value),
        "ipv4" => is_ip(value) && value.contains('.'),
        "ipv6" => is_ip(value) && value.contains(':'),
        "cidr" => is_cidr(value),
        "mac" => is_mac(value),
        "uuid" => matches(&UUID, value),
        "uuid3" => matches(&UUID3, value),
        "uuid4" => matches(&UUID4, value),
        "uuid5" => matches(&UUID5, value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        "ssn" => value.len() >= 9 && value.len() <= 11 && matches(&SSN, value),
        "hexcolor" => matches(&HEXCOLOR, value),
        "rgbcolor" => matches(&RGBCOLOR, value),
        "byte" => matches(&BASE64, value),
        "date" => is_date(value),
        "duration" => is_duration(value),
        "datetime" => is_date_time(value),
        _ => true,
    }
}

fn regex(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

fn matches(re: &LazyLock<Option<Regex>>, value: &str) -> bool {
    re.as_ref().is_some_and(|re| re.is_match(value))
}

static UUID: LazyLock<Option<Regex>> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID3: LazyLock<Option<Regex>> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Option<Regex>> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Option<Regex>> = LazyLock::new(|| {
    regex(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    regex(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z0-9\p{S}\p{L}])(-?[a-zA-Z0-9\p{S}\p{L}]){1,62})$",
    )
});
static EMAIL: LazyLock<Option<Regex>> =
    LazyLock::new(|| regex(r"^(?:[^<>]*<)?[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9.-]+(?:>)?$"));
static SSN: LazyLock<Option<Regex>> = LazyLock::new(|| regex(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static HEXCOLOR: LazyLock<Option<Regex>> =
    LazyLock::new(|| regex(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let n = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*";
    regex(&format!(r"^rgb\({n},{n},{n}\)$"))
});
static BASE64: LazyLock<Option<Regex>> = LazyLock::new(|| {
    regex(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
});
static TIME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    regex(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static SCALA_DURATION: LazyLock<Option<Regex>> =
    LazyLock::new(|| regex(r"^\s*(?:\d+\s*[A-Za-zµ]+\s*)+$"));
static DURATION_PART: LazyLock<Option<Regex>> = LazyLock::new(|| regex(r"(\d+)\s*([A-Za-zµ]+)"));

/// Go's `url.ParseRequestURI` in short: an absolute URI or an absolute path, no spaces.
fn is_request_uri(value: &str) -> bool {
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    if value.starts_with('/') {
        return true;
    }
    let Some((scheme, rest)) = value.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !rest.is_empty()
}

/// kube-openapi's `IsHostname`: the hostname pattern, at most 255 bytes, labels of 63.
fn is_hostname(value: &str) -> bool {
    matches(&HOSTNAME, value) && value.len() <= 255 && value.split('.').all(|p| p.len() <= 63)
}

/// Go's `net.ParseIP`: dotted IPv4 without leading zeros, or IPv6 (possibly with an IPv4 tail).
fn is_ip(value: &str) -> bool {
    value.parse::<Ipv4Addr>().is_ok() || value.parse::<Ipv6Addr>().is_ok()
}

/// Go's `net.ParseCIDR`: an address, `/`, and a decimal prefix length within its size.
fn is_cidr(value: &str) -> bool {
    let Some((addr, bits)) = value.split_once('/') else {
        return false;
    };
    let Ok(addr) = addr.parse::<IpAddr>() else {
        return false;
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.len() <= 3
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|n| n <= max)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx..`, `xx-xx..` or `xxxx.xxxx..`.
fn is_mac(value: &str) -> bool {
    let octets_ok = |n: usize| n == 6 || n == 8 || n == 20;
    let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
    for sep in [':', '-'] {
        let parts: Vec<&str> = value.split(sep).collect();
        if parts.len() > 1 && octets_ok(parts.len()) && parts.iter().all(|p| hex(p, 2)) {
            return true;
        }
    }
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() > 1 && octets_ok(parts.len() * 2) && parts.iter().all(|p| hex(p, 4))
}

fn isbn_digits(value: &str) -> Vec<char> {
    value.chars().filter(|c| *c != ' ' && *c != '-').collect()
}

fn is_isbn10(value: &str) -> bool {
    let digits = isbn_digits(value);
    if digits.len() != 10 {
        return false;
    }
    let mut sum = 0;
    for (i, c) in digits.iter().enumerate() {
        let d = match (i, c) {
            (9, 'X') => 10,
            (_, c) => match c.to_digit(10) {
                Some(d) => d,
                None => return false,
            },
        };
        sum += (i as u32 + 1) * d;
    }
    sum.is_multiple_of(11)
}

fn is_isbn13(value: &str) -> bool {
    let digits: Option<Vec<u32>> = isbn_digits(value).iter().map(|c| c.to_digit(10)).collect();
    let Some(digits) = digits.filter(|d| d.len() == 13) else {
        return false;
    };
    let sum: u32 = digits[..12]
        .iter()
        .enumerate()
        .map(|(i, d)| if i % 2 == 0 { *d } else { d * 3 })
        .sum();
    (10 - sum % 10) % 10 == digits[12]
}

/// govalidator's `IsCreditCard`: digits (other characters ignored) of a known issuer, Luhn-valid.
fn is_credit_card(value: &str) -> bool {
    static ISSUERS: LazyLock<Option<Regex>> = LazyLock::new(|| {
        regex(
            r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$",
        )
    });
    let digits: String = value.chars().filter(char::is_ascii_digit).collect();
    if !matches(&ISSUERS, &digits) {
        return false;
    }
    let sum: u32 = digits
        .chars()
        .rev()
        .filter_map(|c| c.to_digit(10))
        .enumerate()
        .map(|(i, d)| match (i % 2, d * 2) {
            (0, _) => d,
            (_, doubled) if doubled > 9 => doubled - 9,
            (_, doubled) => doubled,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Go's `time.Parse("2006-01-02", ..)`: a real calendar date with a four-digit year.
fn is_date(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |s: &str| -> Option<u32> {
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (Some(year), Some(month), Some(day)) = (
        value.get(0..4).and_then(num),
        value.get(5..7).and_then(num),
        value.get(8..10).and_then(num),
    ) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// kube-openapi's `IsDateTime`: a date, `T`, and `hh:mm:ss[.frac](Z|±hh:mm)`, case-insensitive.
fn is_date_time(value: &str) -> bool {
    let lower = value.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let Some(caps) = TIME.as_ref().and_then(|re| re.captures(time)) else {
        return false;
    };
    let part = |i: usize| caps.get(i).map_or("", |m| m.as_str());
    part(1) <= "23" && part(2) <= "59" && part(3) <= "59"
}

/// kube-openapi's `ParseDuration`: Go's duration syntax, or Scala-style `3 days 4h`.
fn is_duration(value: &str) -> bool {
    is_go_duration(value) || is_scala_duration(value)
}

fn is_go_duration(value: &str) -> bool {
    let s = value.strip_prefix(['+', '-']).unwrap_or(value);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return false;
        }
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        if !["ns", "us", "µs", "μs", "ms", "s", "m", "h"].contains(&&rest[..unit_len]) {
            return false;
        }
        rest = &rest[unit_len..];
    }
    true
}

fn is_scala_duration(value: &str) -> bool {
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    if !matches(&SCALA_DURATION, value) {
        return false;
    }
    let Some(part) = DURATION_PART.as_ref() else {
        return false;
    };
    part.captures_iter(value).any(|caps| {
        let unit = caps.get(2).map_or("", |m| m.as_str()).to_lowercase();
        UNITS.iter().any(|variants| {
            let last = variants.len() - 1;
            variants
                .iter()
                .enumerate()
                .any(|(i, v)| (i == last && unit.starts_with(v)) || unit == *v)
        })
    })
}
