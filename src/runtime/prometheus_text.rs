//! `/metrics` in the Prometheus text format (version 0.0.4) byte for byte as client_golang's
//! `promhttp` writes it for controller-runtime: families sorted by name, counters named with
//! `_total` in `# HELP`/`# TYPE`, labels sorted by name with a bucket's `le` last, series
//! sorted by their label values, a histogram's buckets before its `_sum` and `_count`, and
//! numbers as Go's `strconv.FormatFloat(f, 'g', -1, 64)` writes them (`le="60"`,
//! `le="1e-08"`, not `60.0`). Rendered from the OpenMetrics text `prometheus_client` encodes.

use std::collections::BTreeMap;

/// The content type of the text format.
pub(super) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One metric family of the OpenMetrics input.
struct Family {
    help: String,
    kind: String,
    samples: Vec<Sample>,
}

/// One sample line: its name, its labels (values still escaped) and its value.
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: String,
}

/// The OpenMetrics text `openmetrics` in the Prometheus text format.
pub(super) fn from_openmetrics(openmetrics: &str) -> String {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut current: Option<(String, Family)> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            if let Some((name, family)) = current.take() {
                families.insert(name, family);
            }
            // `prometheus_client` ends every help with a period of its own.
            let help = help.strip_suffix('.').unwrap_or(help);
            let family = Family {
                help: help.replace("\\\"", "\""),
                kind: String::new(),
                samples: Vec::new(),
            };
            current = Some((name.to_owned(), family));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let (Some((_, family)), Some((_, kind))) = (&mut current, rest.split_once(' ')) {
                family.kind = kind.to_owned();
            }
        } else if line.starts_with('#') || line.is_empty() {
            // `# UNIT`, `# EOF`: not in the text format.
        } else if let (Some((_, family)), Some(sample)) = (&mut current, parse_sample(line)) {
            family.samples.push(sample);
        }
    }
    if let Some((name, family)) = current {
        families.insert(name, family);
    }
    let mut families: Vec<(String, Family)> = families
        .into_iter()
        .map(|(name, family)| match family.kind.as_str() {
            "counter" => (format!("{name}_total"), family),
            _ => (name, family),
        })
        .collect();
    families.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::new();
    for (name, family) in families {
        let kind = match family.kind.as_str() {
            "unknown" | "" => "untyped",
            kind => kind,
        };
        out.push_str(&format!("# HELP {name} {}\n", family.help));
        out.push_str(&format!("# TYPE {name} {kind}\n"));
        for sample in ordered(family.samples) {
            write_sample(&mut out, &sample);
        }
    }
    out
}

/// A family's samples as client_golang orders them: series by label values (labels by
/// name), and a histogram series' buckets, then `_sum`, then `_count`.
fn ordered(samples: Vec<Sample>) -> Vec<Sample> {
    let mut series: BTreeMap<Vec<(String, String)>, Vec<Sample>> = BTreeMap::new();
    for mut sample in samples {
        sample
            .labels
            .sort_by(|a, b| match (a.0 == "le", b.0 == "le") {
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                _ => a.0.cmp(&b.0),
            });
        let key: Vec<(String, String)> = sample
            .labels
            .iter()
            .filter(|(name, _)| name != "le")
            .map(|(name, value)| (value.clone(), name.clone()))
            .collect();
        series.entry(key).or_default().push(sample);
    }
    series
        .into_values()
        .flat_map(|mut samples| {
            // Stable: buckets keep their ascending order.
            samples.sort_by_key(|s| match s.name.rsplit('_').next() {
                Some("bucket") => 0,
                Some("sum") => 1,
                Some("count") => 2,
                _ => 0,
            });
            samples
        })
        .collect()
}

fn write_sample(out: &mut String, sample: &Sample) {
    out.push_str(&sample.name);
    if !sample.labels.is_empty() {
        let labels: Vec<String> = sample
            .labels
            .iter()
            .map(|(name, value)| match name.as_str() {
                "le" => format!("{name}=\"{}\"", go_float_text(value)),
                _ => format!("{name}=\"{value}\""),
            })
            .collect();
        out.push('{');
        out.push_str(&labels.join(","));
        out.push('}');
    }
    out.push(' ');
    out.push_str(&go_float_text(&sample.value));
    out.push('\n');
}

/// `name{a="x",b="y"} value` (labels optional), or `None` when the line is not a sample.
fn parse_sample(line: &str) -> Option<Sample> {
    let (name, rest) = match line.find(['{', ' ']) {
        Some(at) => line.split_at(at),
        None => return None,
    };
    let mut labels = Vec::new();
    let rest = match rest.strip_prefix('{') {
        Some(mut inside) => loop {
            inside = inside.trim_start_matches(',');
            if let Some(after) = inside.strip_prefix('}') {
                break after;
            }
            let (label, after) = inside.split_once("=\"")?;
            let end = closing_quote(after)?;
            labels.push((label.to_owned(), after[..end].to_owned()));
            inside = &after[end + 1..];
        },
        None => rest,
    };
    let value = rest.split_whitespace().next()?;
    Some(Sample {
        name: name.to_owned(),
        labels,
        value: value.to_owned(),
    })
}

/// The index of the quote ending an escaped label value.
fn closing_quote(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => return Some(at),
            _ => {}
        }
    }
    None
}

/// A number written as text, rewritten as Go writes it (unchanged if it is not a number).
fn go_float_text(text: &str) -> String {
    match text {
        "+Inf" | "-Inf" | "NaN" => text.to_owned(),
        _ => text
            .parse::<f64>()
            .map_or_else(|_| text.to_owned(), go_float),
    }
}

/// `strconv.FormatFloat(value, 'g', -1, 64)`: the shortest digits that read back as
/// `value`, in `%e` form when the exponent is below -4 or at least 6, else in `%f` form.
fn go_float(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if value < 0.0 { "-" } else { "" };
    // The shortest form decides on %e as if the precision were 6.
    if exponent < -4 || exponent >= 6 {
        let (first, rest) = digits.split_at(1);
        let fraction = match rest.is_empty() {
            true => String::new(),
            false => format!(".{rest}"),
        };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        return format!(
            "{sign}{first}{fraction}e{exponent_sign}{:02}",
            exponent.abs()
        );
    }
    let point = exponent + 1;
    let text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    };
    format!("{sign}{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_go_writes_them() {
        let cases = [
            (60.0, "60"),
            (0.005, "0.005"),
            (1e-8, "1e-08"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1000.0, "1000"),
            (1.25, "1.25"),
            (1e6, "1e+06"),
            (123456789.0, "1.23456789e+08"),
            (3.0, "3"),
            (0.0, "0"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "+Inf"),
        ];
        for (value, text) in cases {
            assert_eq!(go_float(value), text, "{value}");
        }
    }

    #[test]
    fn openmetrics_becomes_the_text_format() {
        let openmetrics = "\
# HELP workqueue_adds Total number of adds handled by workqueue.
# TYPE workqueue_adds counter
workqueue_adds_total{name=\"b\",controller=\"b\"} 2
workqueue_adds_total{name=\"a\",controller=\"a\"} 1
# HELP queue_seconds How long..
# TYPE queue_seconds histogram
queue_seconds_sum{name=\"a\"} 0.5
queue_seconds_count{name=\"a\"} 1
queue_seconds_bucket{le=\"1e-8\",name=\"a\"} 0
queue_seconds_bucket{le=\"60.0\",name=\"a\"} 1
queue_seconds_bucket{le=\"+Inf\",name=\"a\"} 1
# HELP up Whether \\\"up\\\"
# TYPE up gauge
up 1.0
# EOF
";
        assert_eq!(
            from_openmetrics(openmetrics),
            "\
# HELP queue_seconds How long.
# TYPE queue_seconds histogram
queue_seconds_bucket{name=\"a\",le=\"1e-08\"} 0
queue_seconds_bucket{name=\"a\",le=\"60\"} 1
queue_seconds_bucket{name=\"a\",le=\"+Inf\"} 1
queue_seconds_sum{name=\"a\"} 0.5
queue_seconds_count{name=\"a\"} 1
# HELP up Whether \"up\"
# TYPE up gauge
up 1
# HELP workqueue_adds_total Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller=\"a\",name=\"a\"} 1
workqueue_adds_total{controller=\"b\",name=\"b\"} 2
"
        );
    }
}
