//! Converge: the time from creating N Widgets to every one having its owned ConfigMap and
//! Ready=True, for dynrec, for the same controller as a `ReconcilerDefinition`
//! (`examples/definitions/widgets.yaml`), for the Rust controller that definition restates
//! (`examples/widgets/controller.rs`) and for a typed kube-runtime controller (the
//! baseline), each on a fresh embedded server per run, with 2 workers (the machine's cores),
//! and at 10,000 also with 8 workers (dynrec and the baseline). One run per sample; 10
//! samples per size. After each group it prints the medians and the ratios definition /
//! widgets example, definition / typed and dynrec / typed, all from that run, and the writes each
//! engine made from its first create until it stopped (the server's request counters and
//! resourceVersion). Then it runs paired rounds, a converge of dynrec and one of the
//! baseline back to back (20 at 1,000, 4 at 10,000), and the same of the definition and the
//! widgets example, and prints the median of the rounds' ratios: the figure that holds
//! still on a shared machine.

mod common;

use std::time::Duration;

use common::report::{Paired, Timings, WriteLog, Writes};
use common::{DEFAULT_WORKERS, Engine, converge};
use criterion::{Criterion, criterion_group, criterion_main};

/// A group: how many Widgets, with how many workers, for which engines.
struct Group {
    name: String,
    n: usize,
    workers: usize,
    engines: &'static [Engine],
    /// Paired rounds of dynrec and the baseline after the group (see [`Paired`]).
    paired_rounds: usize,
}

fn groups() -> Vec<Group> {
    const ALL: &[Engine] = &[
        Engine::Dynrec,
        Engine::Definition,
        Engine::WidgetsExample,
        Engine::Typed,
    ];
    let group = |n: usize, workers: usize, engines, paired_rounds| Group {
        name: match workers {
            DEFAULT_WORKERS => format!("converge/{n}"),
            _ => format!("converge/{n}/{workers}_workers"),
        },
        n,
        workers,
        engines,
        paired_rounds,
    };
    vec![
        group(1_000, DEFAULT_WORKERS, ALL, 20),
        group(10_000, DEFAULT_WORKERS, ALL, 6),
        group(10_000, 8, &[Engine::Dynrec, Engine::Typed], 4),
    ]
}

fn converge_bench(c: &mut Criterion) {
    let runtime = common::runtime();
    for Group {
        name,
        n,
        workers,
        engines,
        paired_rounds,
    } in groups()
    {
        let (timings, writes) = (Timings::default(), WriteLog::default());
        // 10 samples of one run, criterion's minimum: with the warm-up run, 11 runs of each
        // engine a group. The 10,000 groups take most of the bench (about 8 minutes of 9 on
        // the loaded 2-core VM), and fewer runs would need a harness of their own.
        let mut group = common::flat_group(c, &name, n);
        for &engine in engines {
            group.bench_function(engine.name(), |b| {
                b.to_async(&runtime).iter_custom(|runs| {
                    let (timings, writes) = (timings.clone(), writes.clone());
                    async move {
                        let mut total = Duration::ZERO;
                        for _ in 0..runs {
                            let (server, converged) = converge(engine, n, workers).await;
                            converged.running.stop().await;
                            let wrote = Writes::read(&server).since(&converged.before);
                            writes.record(engine, wrote);
                            timings.record(engine, converged.elapsed);
                            total += converged.elapsed;
                        }
                        total
                    }
                })
            });
        }
        group.finish();
        timings.print_ratio(&name);
        writes.print(&name);
        let converged = async |engine| {
            let (_, converged) = converge(engine, n, workers).await;
            converged.running.stop().await;
            converged.elapsed
        };
        // Paired rounds of dynrec and the typed baseline, then of the definition and the
        // Rust controller it restates: only when the filter selected both engines (criterion
        // ran them).
        let ran = |engine| timings.median(engine).is_some();
        for sides in [
            [Engine::Dynrec, Engine::Typed],
            [Engine::Definition, Engine::WidgetsExample],
        ] {
            if !sides.into_iter().all(ran) {
                continue;
            }
            let mut rounds = Paired::default();
            runtime.block_on(async {
                while rounds.len() < paired_rounds {
                    rounds.round_of(sides, &converged).await;
                }
            });
            match sides {
                [Engine::Dynrec, Engine::Typed] => rounds.print(&name),
                _ => rounds.print_as(&name, ["definition", "rust_widgets_example"]),
            }
        }
    }
}

criterion_group! {
    name = benches;
    // No HTML report: drawing its plots took 4 to 6 s a benchmark on the project's 2-core
    // VM, about 2½ minutes of a full `cargo bench`. `-- --plotting-backend plotters` draws
    // them.
    config = Criterion::default().without_plots();
    targets = converge_bench
}
criterion_main!(benches);
