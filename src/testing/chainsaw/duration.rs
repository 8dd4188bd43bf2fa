//! Go's duration syntax (`5s`, `2m`, `1m30s`, `500ms`), as chainsaw's timeouts use it.

use std::time::Duration;

/// Parses a Go duration; the error says what was expected.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let invalid = || format!("invalid duration {text:?} (want e.g. 30s, 2m, 1m30s, 500ms)");
    let mut rest = text.trim();
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let number: f64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        total += number * seconds;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::parse_duration;

    #[test]
    fn reads_go_durations() {
        let table = [
            ("5s", Duration::from_secs(5)),
            ("2m", Duration::from_secs(120)),
            ("1m30s", Duration::from_secs(90)),
            ("500ms", Duration::from_millis(500)),
            ("0", Duration::ZERO),
        ];
        for (text, want) in table {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
        assert_eq!(
            parse_duration("5 sec").unwrap_err(),
            "invalid duration \"5 sec\" (want e.g. 30s, 2m, 1m30s, 500ms)"
        );
        assert!(parse_duration("s").is_err());
    }
}
