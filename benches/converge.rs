//! Converge: the time from creating N Widgets to every one having its owned ConfigMap and
//! Ready=True, for dynrec, for the same controller as a `ReconcilerDefinition`
//! (`examples/definitions/widgets.yaml`) and for a typed kube-runtime controller (the
//! baseline), each on a fresh embedded server per run, with 2 workers (the machine's cores),
//! and at 10,000 also with 8 workers (dynrec and the baseline). One run per sample; 10
//! samples per size. After each group it prints the medians and the ratios definition /
//! dynrec, definition / typed and dynrec / typed, all from that run, and the writes each
//! engine made from its first create until it stopped (the server's request counters and
//! resourceVersion).

mod common;

use std::time::Duration;

use common::report::{Timings, WriteLog, Writes};
use common::{DEFAULT_WORKERS, Engine, converge};
use criterion::{Criterion, criterion_group, criterion_main};

/// A group: how many Widgets, with how many workers, for which engines.
struct Group {
    name: String,
    n: usize,
    workers: usize,
    engines: &'static [Engine],
}

fn groups() -> Vec<Group> {
    const ALL: &[Engine] = &[Engine::Dynrec, Engine::Definition, Engine::Typed];
    let group = |n: usize, workers: usize, engines| Group {
        name: match workers {
            DEFAULT_WORKERS => format!("converge/{n}"),
            _ => format!("converge/{n}/{workers}_workers"),
        },
        n,
        workers,
        engines,
    };
    vec![
        group(1_000, DEFAULT_WORKERS, ALL),
        group(10_000, DEFAULT_WORKERS, ALL),
        group(10_000, 8, &[Engine::Dynrec, Engine::Typed]),
    ]
}

fn converge_bench(c: &mut Criterion) {
    let runtime = common::runtime();
    for Group {
        name,
        n,
        workers,
        engines,
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
