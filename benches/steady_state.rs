//! Steady state: reconciles per second when nothing changed. After N Widgets converged,
//! every one is reconciled again, one after another, through dynrec's root reconciler and
//! through the typed controller's reconcile function; no reconcile may write (asserted on
//! the server's create/update/patch counters). After criterion's estimates, paired rounds (a
//! pass of each engine back to back, for at least 3 s) print the median of the rounds'
//! ratios: the figure that holds still on a shared machine.
//!
//! `steady_state/cache_configmaps/{total}` does the same for 1,000 Widgets while the caches
//! (dynrec's shared cache, the typed ConfigMap reflector) hold `total` ConfigMaps: the
//! Widgets' children and ConfigMaps no Widget owns, seeded before the controller starts, in
//! the Widgets' namespaces and in others. It prints each engine's time per reconcile at each
//! size and the ratio of the largest size to the smallest, then that ratio from paired rounds
//! of each engine's passes at the largest and the smallest cache: a reconcile should not
//! cost more as the cache grows.

mod common;

use std::time::{Duration, Instant};

use common::report::{Paired, Timings, Writes};
use common::{DEFAULT_WORKERS, Engine, Running};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use dynrec::apiserver::ApiServer;
use tokio::runtime::Runtime;

const ENGINES: [Engine; 2] = [Engine::Dynrec, Engine::Typed];

/// An engine converged for the passes: its server, the server's write counters before the
/// passes, and the running controller.
struct Converged {
    server: ApiServer,
    before: Writes,
    running: Running,
}

impl Converged {
    /// Checks that the passes wrote nothing, prints how many ConfigMaps the controller's
    /// cache held, and stops the controller.
    fn finish(self, what: &str, runtime: &Runtime, engine: Engine) {
        let after = Writes::read(&self.server);
        assert_eq!(
            after,
            self.before,
            "{}: steady-state reconciles wrote",
            engine.name()
        );
        let cached = self.running.cached_config_maps();
        println!("{what} {}: {cached} ConfigMaps cached", engine.name());
        runtime.block_on(self.running.stop());
    }
}

/// One pass: widgets `0..n` reconciled one after another.
async fn pass(running: &Running, n: usize) {
    for i in 0..n {
        running.reconcile(i).await;
    }
}

/// Benches passes over widgets `0..n` of `engine`, once `setup` converged them (run only
/// when the filter selects this bench); returns the converged engine, if it ran.
fn passes(
    group: &mut BenchmarkGroup<'_, WallTime>,
    runtime: &Runtime,
    timings: &Timings,
    engine: Engine,
    n: usize,
    setup: impl AsyncFn() -> (ApiServer, Running),
) -> Option<Converged> {
    let mut converged = None;
    group.bench_function(engine.name(), |b| {
        let converged = converged.get_or_insert_with(|| {
            let (server, running) = runtime.block_on(async {
                let converged = setup().await;
                // Let reconciles the last changes triggered finish before counting.
                tokio::time::sleep(Duration::from_millis(500)).await;
                converged
            });
            let before = Writes::read(&server);
            Converged {
                server,
                before,
                running,
            }
        });
        b.to_async(runtime).iter_custom(|passes| {
            let (running, timings) = (&converged.running, timings.clone());
            async move {
                let start = Instant::now();
                for _ in 0..passes {
                    pass(running, n).await;
                }
                let elapsed = start.elapsed();
                timings.record(engine, elapsed / passes as u32);
                elapsed
            }
        })
    });
    converged
}

/// How long the paired rounds of a `steady_state/{n}` group run, at least.
const PAIRED_TIME: Duration = Duration::from_secs(3);
/// The fewest paired rounds of a group.
const PAIRED_ROUNDS: usize = 20;

/// Bytes written before each paired pass: twice the VM's 32 MiB L3, so that neither engine's
/// objects are left in the CPU's caches.
const SCRUBBED: usize = 64 << 20;

/// Times passes of both engines in paired rounds (see [`Paired`]) and prints their ratios.
/// Each pass starts from caches holding neither engine's objects (a buffer larger than the
/// caches is written first, untimed): otherwise each pass would start from what the other
/// engine's pass left, which at 1,000 Widgets evicts the typed engine's few megabytes more
/// than the typed pass evicts dynrec's, and a controller with more objects than the caches
/// hold meets every object cold anyway.
fn paired(what: &str, runtime: &Runtime, n: usize, dynrec: &Running, typed: &Running) {
    paired_passes(runtime, [dynrec, typed], n).print(what);
}

/// Paired rounds of passes over widgets `0..n` of the two `sides`, each pass from scrubbed
/// caches, for at least [`PAIRED_TIME`] and [`PAIRED_ROUNDS`] rounds.
fn paired_passes(runtime: &Runtime, sides: [&Running; 2], n: usize) -> Paired {
    let mut scrubbed = vec![0u8; SCRUBBED];
    let mut rounds = Paired::default();
    let mut timed_pass = async |running: &Running| {
        scrub(&mut scrubbed);
        let start = Instant::now();
        pass(running, n).await;
        start.elapsed()
    };
    runtime.block_on(async {
        let start = Instant::now();
        while rounds.len() < PAIRED_ROUNDS || start.elapsed() < PAIRED_TIME {
            rounds.round_of(sides, &mut timed_pass).await;
        }
    });
    rounds
}

/// Writes a byte of every cache line of `buffer`, evicting what the caches held.
fn scrub(buffer: &mut [u8]) {
    for line in buffer.chunks_mut(64) {
        line[0] = line[0].wrapping_add(1);
    }
    std::hint::black_box(buffer);
}

/// The Widget counts of the `steady_state/{n}` groups: 1,000 and 10,000, or the one count
/// `STEADY_STATE_WIDGETS` names (`benches/callgrind.sh` runs a few hundred under valgrind).
fn widget_counts() -> Vec<usize> {
    match std::env::var("STEADY_STATE_WIDGETS") {
        Ok(count) => vec![count.parse().expect("STEADY_STATE_WIDGETS is a number")],
        Err(_) => vec![1_000, 10_000],
    }
}

fn steady_state(c: &mut Criterion) {
    let runtime = common::runtime();
    for n in widget_counts() {
        let timings = Timings::default();
        let name = format!("steady_state/{n}");
        let mut group = common::flat_group(c, &name, n);
        let converged = ENGINES.map(|engine| {
            let setup = async || {
                let (server, converged) = common::converge(engine, n, DEFAULT_WORKERS).await;
                (server, converged.running)
            };
            passes(&mut group, &runtime, &timings, engine, n, setup)
        });
        group.finish();
        timings.print_ratio(&format!(
            "steady_state/{n} (time per pass of {n} reconciles)"
        ));
        if let [Some(dynrec), Some(typed)] = &converged {
            paired(&name, &runtime, n, &dynrec.running, &typed.running);
        }
        for (engine, converged) in ENGINES.into_iter().zip(converged) {
            if let Some(converged) = converged {
                converged.finish(&name, &runtime, engine);
            }
        }
    }
    cache_growth(c, &runtime);
}

/// Widgets reconciled per pass in the cache-growth groups.
const WIDGETS: usize = 1_000;

/// The same pass of 1,000 reconciles with 1,000, 10,000 and 100,000 ConfigMaps cached; then
/// each engine's passes at the largest and the smallest cache in paired rounds.
fn cache_growth(c: &mut Criterion, runtime: &Runtime) {
    let totals = [1_000, 10_000, 100_000];
    let (smallest, largest) = (totals[0], totals[totals.len() - 1]);
    let mut per_reconcile = Vec::new();
    // The engines at the smallest and the largest cache, kept for the paired rounds.
    let mut kept = Vec::new();
    for total in totals {
        let timings = Timings::default();
        let name = format!("steady_state/cache_configmaps/{total}");
        let mut group = common::flat_group(c, &name, WIDGETS);
        for engine in ENGINES {
            let setup = async || {
                let server = common::server(WIDGETS).await;
                common::seed_unowned_config_maps(&server, WIDGETS, total);
                let converged =
                    common::converge_on(&server, engine, WIDGETS, DEFAULT_WORKERS).await;
                (server, converged.running)
            };
            let converged = passes(&mut group, runtime, &timings, engine, WIDGETS, setup);
            match converged {
                Some(converged) if total == smallest || total == largest => {
                    kept.push((total, engine, converged));
                }
                Some(converged) => converged.finish(&name, runtime, engine),
                None => {}
            }
        }
        group.finish();
        timings.print_ratio(&format!("{name} (time per pass of {WIDGETS} reconciles)"));
        per_reconcile.push(ENGINES.map(|engine| {
            let per_pass = [timings.median(engine)?, timings.fastest(engine)?];
            Some(per_pass.map(|pass| pass / WIDGETS as u32))
        }));
    }
    for (e, engine) in ENGINES.iter().enumerate() {
        let times: Vec<_> = per_reconcile.iter().map(|engines| engines[e]).collect();
        let sizes: Vec<String> = totals
            .iter()
            .zip(&times)
            .filter_map(|(total, time)| {
                let [median, fastest] = (*time)?;
                Some(format!("{median:.2?} ({fastest:.2?}) at {total}"))
            })
            .collect();
        if sizes.is_empty() {
            continue;
        }
        print!(
            "steady_state/cache_configmaps: {} per reconcile, median (fastest sample): {}",
            engine.name(),
            sizes.join(", ")
        );
        match (times[0], times[times.len() - 1]) {
            (Some(smallest), Some(largest)) => {
                let ratio = |i: usize| largest[i].as_secs_f64() / smallest[i].as_secs_f64();
                let (first, last) = (totals[0], totals[totals.len() - 1]);
                println!("; {last} / {first} = {:.2} ({:.2})", ratio(0), ratio(1));
            }
            _ => println!(),
        }
    }
    paired_growth(runtime, &kept, smallest, largest);
    for (total, engine, converged) in kept {
        let name = format!("steady_state/cache_configmaps/{total}");
        converged.finish(&name, runtime, engine);
    }
}

/// Each engine's passes at the `largest` and the `smallest` cache in paired rounds (see
/// [`Paired`]): the growth figure that holds still, where criterion's times each size
/// alone, minutes apart.
fn paired_growth(
    runtime: &Runtime,
    kept: &[(usize, Engine, Converged)],
    smallest: usize,
    largest: usize,
) {
    for engine in ENGINES {
        let at = |size: usize| {
            let found = kept
                .iter()
                .find(|(total, e, _)| *total == size && *e == engine);
            found.map(|(_, _, converged)| &converged.running)
        };
        let (Some(small), Some(large)) = (at(smallest), at(largest)) else {
            continue;
        };
        let what = format!("steady_state/cache_configmaps/{}", engine.name());
        let names = [largest.to_string(), smallest.to_string()];
        paired_passes(runtime, [large, small], WIDGETS)
            .print_as(&what, names.each_ref().map(String::as_str));
    }
}

criterion_group! {
    name = benches;
    // No HTML report: drawing its plots took 4 to 6 s a benchmark on the project's 2-core
    // VM, about 2½ minutes of a full `cargo bench`. `-- --plotting-backend plotters` draws
    // them.
    config = Criterion::default().without_plots();
    targets = steady_state
}
criterion_main!(benches);
