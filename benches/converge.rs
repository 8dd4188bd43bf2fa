//! Converge: the time from creating N Widgets to every one having its owned ConfigMap and
//! Ready=True, for dynrec, for the same controller as a `ReconcilerDefinition`
//! (`examples/definitions/widgets.yaml`) and for a typed kube-runtime controller (the
//! baseline), each on a fresh embedded server per run. One run per sample; 10 samples per
//! size. After each size it prints the medians and the ratios definition / dynrec,
//! definition / typed and dynrec / typed, all from that run.

mod common;

use std::time::Duration;

use common::{Engine, Timings, converge};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};

fn converge_bench(c: &mut Criterion) {
    let runtime = common::runtime();
    for n in [1_000, 10_000] {
        let timings = Timings::default();
        let mut group = c.benchmark_group(format!("converge/{n}"));
        group
            .sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_millis(1))
            .measurement_time(Duration::from_secs(1))
            .throughput(Throughput::Elements(n as u64));
        for engine in [Engine::Dynrec, Engine::Definition, Engine::Typed] {
            group.bench_function(engine.name(), |b| {
                b.to_async(&runtime).iter_custom(|runs| {
                    let timings = timings.clone();
                    async move {
                        let mut total = Duration::ZERO;
                        for _ in 0..runs {
                            let (_server, running, elapsed) = converge(engine, n).await;
                            running.stop().await;
                            timings.record(engine, elapsed);
                            total += elapsed;
                        }
                        total
                    }
                })
            });
        }
        group.finish();
        timings.print_ratio(&format!("converge/{n}"));
    }
}

criterion_group!(benches, converge_bench);
criterion_main!(benches);
