//! Spans that cost nothing when nothing would record them.
//!
//! kube turns on tracing's `log` feature, with which a span that no subscriber records (no
//! subscriber is set, as in a library user's tests or benches) still records its fields
//! into `log` when it is made and calls into `log` each time it is entered and left. These
//! macros make such a span `Span::none()` instead: they take the arguments of tracing's
//! macros of the same names, and make the same span whenever a subscriber could record
//! its level. What is lost: with no tracing subscriber at all, spans are no longer written
//! to `log` as they are entered and left (events still are).

/// `tracing::span!` of `Level::$level` when that level may be recorded, else `Span::none()`.
macro_rules! span_if_recorded {
    ($level:ident, $($args:tt)+) => {
        if tracing::level_enabled!(tracing::Level::$level) {
            tracing::span!(tracing::Level::$level, $($args)+)
        } else {
            tracing::Span::none()
        }
    };
}

/// `tracing::debug_span!` when DEBUG may be recorded, else `Span::none()`.
macro_rules! debug_span {
    ($($args:tt)+) => { $crate::trace::span_if_recorded!(DEBUG, $($args)+) };
}

/// `tracing::info_span!` when INFO may be recorded, else `Span::none()`.
macro_rules! info_span {
    ($($args:tt)+) => { $crate::trace::span_if_recorded!(INFO, $($args)+) };
}

pub(crate) use {debug_span, info_span, span_if_recorded};

#[cfg(test)]
mod tests {
    use tracing::Level;
    use tracing_subscriber::filter::LevelFilter;

    /// A span of a level the subscriber records is made as tracing's macro makes it, with
    /// its fields; one of a level it does not record is not.
    #[test]
    fn spans_are_made_when_a_subscriber_records_their_level() {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(LevelFilter::INFO)
            .with_writer(std::io::sink)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let span = info_span!("recorded", object = "ns/name");
            assert!(!span.is_disabled());
            let metadata = span.metadata().expect("a recorded span has metadata");
            assert_eq!(
                (metadata.name(), *metadata.level()),
                ("recorded", Level::INFO)
            );
            assert!(metadata.fields().field("object").is_some());
            assert!(debug_span!("below the level").is_disabled());
        });
    }
}
