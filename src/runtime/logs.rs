//! The process's log lines: one line per event, in text or JSON, each field once.
//!
//! Spans nest (a controller's span holds a reconcile's span, which a reconciler may repeat
//! with the same fields); every event is written with the fields of its spans merged, the
//! innermost value winning, after the event's own message: no span names, no field twice.
//! `--log-format json` writes one JSON object a line (`ts`, `level`, `logger`, `msg`, then
//! the fields), as controller-runtime's zap logger does.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::io::IsTerminal;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

use super::cluster::CLUSTER_TARGET;

/// The shape of a log line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `TIME LEVEL message key=value ...`, for people.
    #[default]
    Text,
    /// One JSON object a line, for log pipelines.
    Json,
}

/// The logging flags every subcommand takes.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct LogArgs {
    /// Log line format: text, or json (one object a line with ts, level, msg and fields).
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true, help_heading = "Logging")]
    pub log_format: LogFormat,
    /// Log level: error, warn, info, debug or trace (overrides RUST_LOG, which otherwise
    /// takes tracing's filter syntax, e.g. `info,dynrec::client=debug`).
    #[arg(long, global = true, value_name = "LEVEL", help_heading = "Logging")]
    pub log_level: Option<Level>,
    /// More verbose logs: -v for debug, -vv for trace (overrides RUST_LOG).
    #[arg(short = 'v', action = clap::ArgAction::Count, global = true, help_heading = "Logging")]
    pub verbose: u8,
}

impl LogArgs {
    /// The filter: `--log-level`/`-v` when given, else `RUST_LOG`, else `default_level`;
    /// the cluster line stays at INFO unless a flag or `RUST_LOG` says otherwise.
    fn filter(&self, default_level: LevelFilter) -> EnvFilter {
        let flagged = match self.verbose {
            0 => self.log_level,
            1 => Some(Level::DEBUG),
            _ => Some(Level::TRACE),
        };
        // kube-client logs every 5xx answer as an ERROR of its own; the failed reconcile's
        // line already carries the cause, so that line is left out unless asked for.
        let quiet = "kube_client::client::builder=off";
        if let Some(level) = flagged {
            return EnvFilter::new(format!("{level},{quiet}"));
        }
        EnvFilter::try_from_default_env().unwrap_or_else(|_| {
            EnvFilter::new(format!("{default_level},{CLUSTER_TARGET}=info,{quiet}"))
        })
    }

    /// Sends the process's logs to stderr as these flags ask (a second call does nothing);
    /// `default_level` may be `LevelFilter::OFF` (no logs unless asked for).
    pub fn init(&self, default_level: impl Into<LevelFilter>) {
        let default_level = default_level.into();
        let lines = Lines {
            format: self.log_format,
            colour: self.log_format == LogFormat::Text && std::io::stderr().is_terminal(),
        };
        let _ = tracing_subscriber::registry()
            .with(self.filter(default_level))
            .with(SpanFieldsLayer)
            .with(
                tracing_subscriber::fmt::layer()
                    .event_format(lines)
                    .with_writer(std::io::stderr),
            )
            .try_init();
    }
}

/// The fields a span was made with (and later recorded), kept in its extensions.
#[derive(Default)]
struct SpanFields(BTreeMap<&'static str, Value>);

/// Keeps each span's fields as values, for [`Lines`] to merge.
struct SpanFieldsLayer;

impl<S> tracing_subscriber::Layer<S> for SpanFieldsLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = FieldValues::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut()
                .insert(SpanFields(fields.fields.into_iter().collect()));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let mut fields = FieldValues::default();
        values.record(&mut fields);
        if let Some(span) = ctx.span(id)
            && let Some(kept) = span.extensions_mut().get_mut::<SpanFields>()
        {
            kept.0.extend(fields.fields);
        }
    }
}

/// Field values as JSON, in the order they were recorded; the message apart.
#[derive(Default)]
struct FieldValues {
    message: Option<String>,
    fields: Vec<(&'static str, Value)>,
}

impl FieldValues {
    fn put(&mut self, field: &Field, value: Value) {
        match field.name() {
            "message" => {
                self.message = Some(value.as_str().map_or(value.to_string(), str::to_owned))
            }
            name => self.fields.push((name, value)),
        }
    }
}

impl Visit for FieldValues {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }
    /// An error with each of its causes that adds to its message.
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        let mut chain = value.to_string();
        let mut cause = value.source();
        while let Some(current) = cause {
            let text = current.to_string();
            if !chain.contains(&text) {
                let _ = write!(chain, ": {text}");
            }
            cause = current.source();
        }
        self.put(field, Value::from(chain));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, Value::from(format!("{value:?}")));
    }
}

/// Writes each event as one line with its spans' fields merged.
struct Lines {
    format: LogFormat,
    colour: bool,
}

impl<S, N> FormatEvent<S, N> for Lines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut own = FieldValues::default();
        event.record(&mut own);
        let mut fields: Map<String, Value> = Map::new();
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                if let Some(kept) = span.extensions().get::<SpanFields>() {
                    for (name, value) in &kept.0 {
                        fields.insert((*name).to_owned(), value.clone());
                    }
                }
            }
        }
        for (name, value) in own.fields {
            fields.insert(name.to_owned(), value);
        }
        let metadata = event.metadata();
        let line = Line {
            ts: jiff::Timestamp::now(),
            level: *metadata.level(),
            logger: metadata.target(),
            message: own.message.as_deref().unwrap_or_default(),
            fields,
        };
        match self.format {
            LogFormat::Json => writeln!(writer, "{}", line.json()),
            LogFormat::Text => writeln!(writer, "{}", line.text(self.colour)),
        }
    }
}

/// One event, ready to be written.
struct Line<'a> {
    ts: jiff::Timestamp,
    level: Level,
    logger: &'a str,
    message: &'a str,
    fields: Map<String, Value>,
}

impl Line<'_> {
    fn json(self) -> Value {
        let mut object = Map::new();
        object.insert("ts".into(), Value::from(self.ts.to_string()));
        object.insert(
            "level".into(),
            Value::from(self.level.as_str().to_lowercase()),
        );
        object.insert("logger".into(), Value::from(self.logger));
        object.insert("msg".into(), Value::from(self.message));
        for (name, value) in self.fields {
            object.entry(name).or_insert(value);
        }
        Value::Object(object)
    }

    fn text(self, colour: bool) -> String {
        let level = match (colour, self.level) {
            (true, Level::ERROR) => "\x1b[31mERROR\x1b[0m",
            (true, Level::WARN) => "\x1b[33mWARN \x1b[0m",
            (_, Level::ERROR) => "ERROR",
            (_, Level::WARN) => "WARN ",
            (_, Level::INFO) => "INFO ",
            (_, Level::DEBUG) => "DEBUG",
            (_, Level::TRACE) => "TRACE",
        };
        let mut line = format!(
            "{} {level} {}",
            self.ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ"),
            self.message
        );
        for (name, value) in &self.fields {
            match value {
                Value::String(text) if !needs_quotes(text) => {
                    let _ = write!(line, " {name}={text}");
                }
                Value::String(text) => {
                    let _ = write!(line, " {name}={}", Value::from(text.as_str()));
                }
                other => {
                    let _ = write!(line, " {name}={other}");
                }
            }
        }
        line
    }
}

/// Whether a text value must be quoted to read as one `key=value` pair.
fn needs_quotes(text: &str) -> bool {
    text.is_empty()
        || text
            .chars()
            .any(|c| c.is_whitespace() || c == '"' || c == '=' || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(fields: Value) -> Line<'static> {
        Line {
            ts: "2026-01-02T03:04:05.678Z".parse().unwrap(),
            level: Level::INFO,
            logger: "dynrec::runtime",
            message: "reconcile failed",
            fields: fields.as_object().unwrap().clone(),
        }
    }

    #[test]
    fn text_lines_quote_only_values_with_spaces() {
        let text =
            line(serde_json::json!({"controller": "widgets", "error": "a b", "n": 3})).text(false);
        assert_eq!(
            text,
            r#"2026-01-02T03:04:05.678Z INFO  reconcile failed controller=widgets error="a b" n=3"#
        );
    }

    #[test]
    fn json_lines_have_zap_s_keys_and_the_fields() {
        let json = line(serde_json::json!({"object": "default/w1", "msg": "not twice"})).json();
        assert_eq!(json["level"], "info");
        assert_eq!(json["msg"], "reconcile failed");
        assert_eq!(json["object"], "default/w1");
        assert_eq!(json["ts"], "2026-01-02T03:04:05.678Z");
    }
}
