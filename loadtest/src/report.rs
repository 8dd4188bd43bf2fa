//! The result of a run: machine-readable JSON, a summary for people, and an SVG plot of the
//! churn steps' latency percentiles against the rate of changes.

use std::fmt::Write as _;

use serde::Serialize;

use crate::phases::{Converge, Restart, Step};
use crate::process::Usage;

/// Everything one run measured.
#[derive(Serialize)]
pub struct Report {
    /// When the run started (RFC 3339, UTC).
    pub date: String,
    /// CPUs and model of the machine.
    pub machine: String,
    /// The command line.
    pub args: Vec<String>,
    pub engines: Vec<EngineReport>,
    /// The driver's own memory and CPU over the whole run.
    pub driver: Usage,
}

/// What one controller did under the same load.
#[derive(Serialize)]
pub struct EngineReport {
    /// `dynrec` (the workload's definition) or `typed` (the kube-runtime baseline).
    pub engine: String,
    /// `widgets` or `webapps`.
    pub workload: String,
    pub converge: Converge,
    /// The controller process after the converge.
    pub controller_after_converge: Usage,
    pub churn: Vec<Step>,
    /// The highest target rate whose step met the SLO.
    pub sustained_changes_per_second: Option<f64>,
    /// Restarted with every instance changed while it was down.
    pub restart: Restart,
    /// The controller process at the end (peak memory and CPU of the whole run).
    pub controller_at_end: Usage,
    /// The API server's memory for what is stored, when the driver started it.
    pub server: Option<ServerMemory>,
}

/// The API server's memory against what it stores.
#[derive(Serialize)]
pub struct ServerMemory {
    /// Resident memory before the instances were created.
    pub rss_before_bytes: u64,
    /// Resident memory after the converge.
    pub rss_after_bytes: u64,
    /// Objects stored after the converge, by kind.
    pub stored: Vec<Stored>,
    /// Resident memory added per stored object.
    pub bytes_per_object: f64,
    /// Resident memory added per byte of the objects' JSON.
    pub bytes_per_json_byte: f64,
}

/// How many objects of a kind the server holds, and their JSON's size.
#[derive(Serialize)]
pub struct Stored {
    pub kind: String,
    pub count: usize,
    pub json_bytes: usize,
}

impl ServerMemory {
    /// The memory figures of a server that went from `before` to `after` by storing `stored`.
    pub fn new(before: Usage, after: Usage, stored: Vec<Stored>) -> Self {
        let objects: usize = stored.iter().map(|s| s.count).sum();
        let json: usize = stored.iter().map(|s| s.json_bytes).sum();
        let added = after.rss_bytes.saturating_sub(before.rss_bytes) as f64;
        Self {
            rss_before_bytes: before.rss_bytes,
            rss_after_bytes: after.rss_bytes,
            stored,
            bytes_per_object: added / objects.max(1) as f64,
            bytes_per_json_byte: added / json.max(1) as f64,
        }
    }
}

impl Report {
    /// A few lines for people: each engine's figures, then dynrec's against the baseline.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        for e in &self.engines {
            let c = &e.converge;
            let _ = writeln!(
                out,
                "{}: converge {} in {:.2} s ({:.0}/s; creates took {:.2} s); controller after it: RSS {:.0} MB, CPU {:.1} s; the restarted controller's peak RSS {:.0} MB",
                e.engine,
                c.instances,
                c.seconds,
                c.per_second,
                c.create_seconds,
                mb(e.controller_after_converge.rss_bytes),
                e.controller_after_converge.cpu_seconds,
                mb(e.controller_at_end.peak_rss_bytes),
            );
            for s in &e.churn {
                let _ = writeln!(
                    out,
                    "  churn {:>6.0}/s (got {:>6.0}/s): p50 {:>7.1} ms, p99 {:>7.1} ms, max {:>7.1} ms, unseen {}{}",
                    s.target_rate,
                    s.achieved_rate,
                    s.p50_ms,
                    s.p99_ms,
                    s.max_ms,
                    s.unseen,
                    if s.meets_slo {
                        ""
                    } else {
                        "  (misses the SLO)"
                    },
                );
                if let Some(c) = &s.controller {
                    let _ = writeln!(
                        out,
                        "    the controller's histograms: p99 queue {}, p99 reconcile {} ({:.0} dequeued, {:.0} reconciles)",
                        ms_or_none(c.p99_queue_ms),
                        ms_or_none(c.p99_reconcile_ms),
                        c.dequeued,
                        c.reconciles,
                    );
                }
            }
            let sustained = e
                .sustained_changes_per_second
                .map_or("none".into(), |r| format!("{r:.0}/s"));
            let r = &e.restart;
            let _ = writeln!(
                out,
                "  sustained under the SLO: {sustained}; restarted: first child written after {:.2} s, all caught up after {:.2} s; caches filled in the driver: typed Stores {:.2} s, dynrec's {:.2} s ({:.2}×)",
                r.first_write_seconds,
                r.caught_up_seconds,
                r.typed_stores_fill_seconds,
                r.dynrec_caches_fill_seconds,
                r.dynrec_caches_fill_seconds / r.typed_stores_fill_seconds,
            );
            if let Some(server) = &e.server {
                let _ = writeln!(
                    out,
                    "  API server: RSS {:.0} → {:.0} MB, {:.0} B per stored object ({:.1}× its JSON)",
                    mb(server.rss_before_bytes),
                    mb(server.rss_after_bytes),
                    server.bytes_per_object,
                    server.bytes_per_json_byte,
                );
            }
        }
        if let [dynrec, typed] = &self.engines[..] {
            let _ = writeln!(
                out,
                "{} / {}: converge time {:.2}×, sustained churn {}",
                dynrec.engine,
                typed.engine,
                dynrec.converge.seconds / typed.converge.seconds,
                match (
                    dynrec.sustained_changes_per_second,
                    typed.sustained_changes_per_second
                ) {
                    (Some(d), Some(t)) => format!("{:.2}×", d / t),
                    _ => "n/a (a side sustained no step)".into(),
                }
            );
        }
        let _ = writeln!(
            out,
            "driver: peak RSS {:.0} MB, CPU {:.1} s",
            mb(self.driver.peak_rss_bytes),
            self.driver.cpu_seconds
        );
        out
    }

    /// An SVG plot: p50 (dashed) and p99 (solid) latency against target churn, one colour
    /// an engine, the latency axis logarithmic.
    pub fn svg(&self) -> String {
        let (width, height, margin) = (640.0, 400.0, 60.0);
        let steps = || self.engines.iter().flat_map(|e| &e.churn);
        let max_rate = steps().map(|s| s.target_rate).fold(1.0, f64::max);
        let latencies = steps().flat_map(|s| [s.p50_ms, s.p99_ms]);
        let (lo, hi) = latencies.fold((f64::MAX, 1.0_f64), |(lo, hi), v| {
            (lo.min(v.max(0.1)), hi.max(v))
        });
        let (lo, hi) = (
            lo.min(hi).log10().floor(),
            hi.log10().ceil().max(lo.log10() + 1.0),
        );
        let x = |rate: f64| margin + rate / max_rate * (width - 2.0 * margin);
        let y = |ms: f64| {
            height - margin - (ms.max(0.1).log10() - lo) / (hi - lo) * (height - 2.0 * margin)
        };
        let mut svg = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(
            svg,
            r#"<text x="{margin}" y="20">change → child latency (ms, log) against churn (changes/s)</text>"#
        );
        let axis = height - margin;
        let _ = write!(
            svg,
            r#"<line x1="{margin}" y1="{axis}" x2="{}" y2="{axis}" stroke="black"/><line x1="{margin}" y1="{margin}" x2="{margin}" y2="{axis}" stroke="black"/>"#,
            width - margin
        );
        for decade in lo as i32..=hi as i32 {
            let ms = 10f64.powi(decade);
            let _ = write!(svg, r#"<text x="5" y="{:.1}">{ms}</text>"#, y(ms) + 4.0);
        }
        for s in steps() {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                x(s.target_rate),
                axis + 16.0,
                s.target_rate
            );
        }
        for (engine, colour) in self.engines.iter().zip(["#d62728", "#1f77b4", "#2ca02c"]) {
            for (pick, dash) in [(0.99, ""), (0.50, r#" stroke-dasharray="4 3""#)] {
                let points: Vec<String> = engine
                    .churn
                    .iter()
                    .map(|s| {
                        let ms = if pick > 0.9 { s.p99_ms } else { s.p50_ms };
                        format!("{:.1},{:.1}", x(s.target_rate), y(ms))
                    })
                    .collect();
                let _ = write!(
                    svg,
                    r#"<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{}"/>"#,
                    points.join(" ")
                );
            }
        }
        for (i, (engine, colour)) in self.engines.iter().zip(["#d62728", "#1f77b4"]).enumerate() {
            let _ = write!(
                svg,
                r#"<text x="{}" y="{}" fill="{colour}">{} (solid p99, dashed p50)</text>"#,
                width - 260.0,
                margin + 16.0 * i as f64,
                engine.engine
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// Milliseconds, or "none" when nothing was observed.
fn ms_or_none(ms: Option<f64>) -> String {
    ms.map_or("none".into(), |ms| format!("{ms:.1} ms"))
}

/// Bytes as megabytes.
fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}
