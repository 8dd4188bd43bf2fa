//! What the benches print besides criterion's estimates: each engine's median of the runs
//! of a group with the ratios between engines, and the writes each engine made.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dynrec::apiserver::ApiServer;

use super::Engine;

/// Durations of the timed runs of each engine, for the ratio printed after a group.
#[derive(Clone, Default)]
pub struct Timings(Arc<Mutex<BTreeMap<&'static str, Vec<Duration>>>>);

impl Timings {
    pub fn record(&self, engine: Engine, elapsed: Duration) {
        let mut timings = self.0.lock().expect("timings");
        timings.entry(engine.name()).or_default().push(elapsed);
    }

    /// An engine's runs, sorted, without the first (criterion's warm-up).
    fn measured(&self, engine: Engine) -> Vec<Duration> {
        let timings = self.0.lock().expect("timings");
        let runs = timings.get(engine.name()).and_then(|runs| runs.get(1..));
        let mut runs = runs.unwrap_or_default().to_vec();
        runs.sort();
        runs
    }

    /// An engine's median, or `None` when it has no measured runs.
    pub fn median(&self, engine: Engine) -> Option<Duration> {
        let runs = self.measured(engine);
        runs.get(runs.len() / 2).copied()
    }

    /// An engine's fastest measured run: on a shared machine, the one least disturbed.
    pub fn fastest(&self, engine: Engine) -> Option<Duration> {
        self.measured(engine).first().copied()
    }

    /// Prints each engine's median and number of runs, and the ratios dynrec / typed,
    /// definition / widgets example (the Rust controller it restates) and definition /
    /// typed (of medians measured in the same group, so the same run).
    pub fn print_ratio(&self, what: &str) {
        let median = |engine: Engine| {
            let median = self.median(engine)?;
            let runs = self.measured(engine).len();
            println!(
                "{what}: {} median {median:.3?} of {runs} runs (fastest {:.3?})",
                engine.name(),
                self.fastest(engine).unwrap_or_default()
            );
            Some(median)
        };
        let dynrec = median(Engine::Dynrec);
        let typed = median(Engine::Typed);
        let definition = median(Engine::Definition);
        let example = median(Engine::WidgetsExample);
        let ratio = |a: Option<Duration>, b: Option<Duration>, label: &str| {
            if let (Some(a), Some(b)) = (a, b) {
                let ratio = a.as_secs_f64() / b.as_secs_f64();
                println!("{what}: {label} = {ratio:.2}");
            }
        };
        ratio(dynrec, typed, "dynrec / typed");
        ratio(definition, example, "definition / rust_widgets_example");
        ratio(definition, typed, "definition / typed");
    }
}

/// Writes the server answered for widgets, ConfigMaps and Events, from its request
/// counters, and how many changes it stored (how far its resourceVersion advanced). The
/// counters count requests, refused ones too (a create of a ConfigMap that exists, an
/// update with a stale resourceVersion); a write to a subresource (`widgets/status`) is
/// counted under its kind, so `widgets` update and patch include the status writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Writes {
    config_maps: Verbs,
    widgets: Verbs,
    /// `events.k8s.io` and core Events together.
    events: Verbs,
    /// Changes stored, of any kind (a write that changes nothing stores none).
    stored: u64,
}

/// Creates, updates and patches of one kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Verbs {
    create: u64,
    update: u64,
    patch: u64,
}

impl Verbs {
    fn read(server: &ApiServer, group: &str, plural: &str) -> Self {
        Self {
            create: server.request_count("create", group, plural),
            update: server.request_count("update", group, plural),
            patch: server.request_count("patch", group, plural),
        }
    }
}

impl Writes {
    /// The server's counts so far (the resourceVersion as `stored`).
    pub fn read(server: &ApiServer) -> Self {
        let events = [
            Verbs::read(server, "events.k8s.io", "events"),
            Verbs::read(server, "", "events"),
        ];
        Self {
            config_maps: Verbs::read(server, "", "configmaps"),
            widgets: Verbs::read(server, "example.com", "widgets"),
            events: Verbs {
                create: events[0].create + events[1].create,
                update: events[0].update + events[1].update,
                patch: events[0].patch + events[1].patch,
            },
            stored: server.resource_version(),
        }
    }

    /// What was written between `earlier` and this reading.
    pub fn since(&self, earlier: &Writes) -> Writes {
        let (now, then) = (self.counts(), earlier.counts());
        Writes::from_counts(std::array::from_fn(|i| now[i] - then[i]))
    }

    /// The counts in the order [`Writes::describe`] takes them.
    fn counts(&self) -> [u64; 10] {
        let Self {
            config_maps: c,
            widgets: w,
            events: e,
            stored,
        } = *self;
        [
            c.create, c.update, c.patch, w.create, w.update, w.patch, e.create, e.update, e.patch,
            stored,
        ]
    }

    fn from_counts([cc, cu, cp, wc, wu, wp, ec, eu, ep, stored]: [u64; 10]) -> Self {
        let verbs = |create, update, patch| Verbs {
            create,
            update,
            patch,
        };
        Self {
            config_maps: verbs(cc, cu, cp),
            widgets: verbs(wc, wu, wp),
            events: verbs(ec, eu, ep),
            stored,
        }
    }

    /// The counts, given as text in the order of [`Writes::counts`], in a line.
    fn describe(counts: [String; 10]) -> String {
        let [cc, cu, cp, wc, wu, wp, ec, eu, ep, stored] = counts;
        format!(
            "configmaps create {cc} update {cu} patch {cp}; \
             widgets create {wc} (the bench's) update {wu} patch {wp} (status); \
             events create {ec} update {eu} patch {ep}; {stored} changes stored"
        )
    }
}

impl fmt::Display for Writes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&Writes::describe(self.counts().map(|n| n.to_string())))
    }
}

/// The writes of every run of each engine in a group.
#[derive(Clone, Default)]
pub struct WriteLog(Arc<Mutex<BTreeMap<&'static str, Vec<Writes>>>>);

impl WriteLog {
    pub fn record(&self, engine: Engine, writes: Writes) {
        let mut log = self.0.lock().expect("writes");
        log.entry(engine.name()).or_default().push(writes);
    }

    /// Prints, for each engine, the writes of its last run and, when its runs differ, the
    /// range of each count over them.
    pub fn print(&self, what: &str) {
        let log = self.0.lock().expect("writes");
        for (engine, runs) in log.iter() {
            let Some(last) = runs.last() else { continue };
            let (n, same) = (runs.len(), runs.iter().all(|run| run == last));
            if same {
                println!("{what} {engine} writes: {last}; the same in all {n} runs");
                continue;
            }
            let counts: Vec<[u64; 10]> = runs.iter().map(Writes::counts).collect();
            let ranges = std::array::from_fn(|i| {
                let low = counts.iter().map(|c| c[i]).min().unwrap_or_default();
                let high = counts.iter().map(|c| c[i]).max().unwrap_or_default();
                match low == high {
                    true => low.to_string(),
                    false => format!("{low}–{high}"),
                }
            });
            println!("{what} {engine} writes: {last} in the last run");
            println!(
                "{what} {engine} writes over {n} runs: {}",
                Writes::describe(ranges)
            );
        }
    }
}

/// Rounds of two runs back to back (dynrec and the typed baseline, or one engine at two
/// sizes), the first side first in even rounds and the second first in odd ones. Both runs of
/// a round meet the same moment of a shared machine, whose speed drifts by up to 2× within
/// minutes: the ratio of two criterion estimates, taken seconds apart, drifts with it, the
/// rounds' ratios hold still.
#[derive(Default)]
pub struct Paired(Vec<(Duration, Duration)>);

impl Paired {
    /// How many rounds ran.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Runs one round of the two `sides`, compared as `sides[0]` / `sides[1]`: `run` for
    /// each, in this round's order; `run` returns the duration to compare.
    pub async fn round_of<T: Copy>(
        &mut self,
        sides: [T; 2],
        mut run: impl AsyncFnMut(T) -> Duration,
    ) {
        let round = if self.0.len().is_multiple_of(2) {
            (run(sides[0]).await, run(sides[1]).await)
        } else {
            let second = run(sides[1]).await;
            (run(sides[0]).await, second)
        };
        self.0.push(round);
    }

    /// Prints the median, quartiles and range of the rounds' ratios dynrec / typed, and
    /// each engine's median duration.
    pub fn print(&self, what: &str) {
        self.print_as(what, ["dynrec", "typed"]);
    }

    /// Prints the median, quartiles and range of the rounds' ratios of the two sides, named
    /// `names`, and each side's median duration.
    pub fn print_as(&self, what: &str, names: [&str; 2]) {
        if self.0.is_empty() {
            return;
        }
        let sorted = |of: &dyn Fn(&(Duration, Duration)) -> f64| {
            let mut values: Vec<f64> = self.0.iter().map(of).collect();
            values.sort_by(f64::total_cmp);
            values
        };
        let quartile = |values: &[f64], q: usize| values[(values.len() - 1) * q / 4];
        let ratios = sorted(&|(first, second)| first.as_secs_f64() / second.as_secs_f64());
        let median = |values: Vec<f64>| Duration::from_secs_f64(quartile(&values, 2));
        let [first, second] = names;
        println!(
            "{what} paired: {first} / {second} = {:.2} (median of {} rounds; quartiles {:.2}, \
             {:.2}; range {:.2}-{:.2}); median {first} {:.3?}, {second} {:.3?}",
            quartile(&ratios, 2),
            ratios.len(),
            quartile(&ratios, 1),
            quartile(&ratios, 3),
            ratios[0],
            ratios[ratios.len() - 1],
            median(sorted(&|round| round.0.as_secs_f64())),
            median(sorted(&|round| round.1.as_secs_f64())),
        );
    }
}
