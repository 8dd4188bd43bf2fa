//! Steady state: reconciles per second when nothing changed. After N Widgets converged,
//! every one is reconciled again, one after another, through dynrec's root reconciler and
//! through the typed controller's reconcile function; no reconcile may write (asserted on
//! the server's create/update/patch counters).

mod common;

use std::time::{Duration, Instant};

use common::report::{Timings, Writes};
use common::{DEFAULT_WORKERS, Engine, converge};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};

fn steady_state(c: &mut Criterion) {
    let runtime = common::runtime();
    for n in [1_000, 10_000] {
        let timings = Timings::default();
        let mut group = c.benchmark_group(format!("steady_state/{n}"));
        group
            .sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_millis(1))
            .measurement_time(Duration::from_secs(1))
            .throughput(Throughput::Elements(n as u64));
        for engine in [Engine::Dynrec, Engine::Typed] {
            let (server, running) = runtime.block_on(async {
                let (server, converged) = converge(engine, n, DEFAULT_WORKERS).await;
                let running = converged.running;
                // Let reconciles the last changes triggered finish before counting.
                tokio::time::sleep(Duration::from_millis(500)).await;
                (server, running)
            });
            let before = Writes::read(&server);
            group.bench_function(engine.name(), |b| {
                b.to_async(&runtime).iter_custom(|passes| {
                    let (running, timings) = (&running, timings.clone());
                    async move {
                        let start = Instant::now();
                        for _ in 0..passes {
                            for i in 0..n {
                                running.reconcile(i).await;
                            }
                        }
                        let elapsed = start.elapsed();
                        timings.record(engine, elapsed / passes as u32);
                        elapsed
                    }
                })
            });
            let after = Writes::read(&server);
            assert_eq!(
                after,
                before,
                "{}: steady-state reconciles wrote",
                engine.name()
            );
            runtime.block_on(running.stop());
        }
        group.finish();
        timings.print_ratio(&format!(
            "steady_state/{n} (time per pass of {n} reconciles)"
        ));
    }
}

criterion_group!(benches, steady_state);
criterion_main!(benches);
