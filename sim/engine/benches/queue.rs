//! Push/pop throughput of the event queue at steady-state sizes from 1e3 to 1e6.
//! Each iteration pops the earliest event and pushes one later event, the hold model
//! of a running simulation. Run: `cargo bench -p dlsim-engine --features bench`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dlsim_engine::{EventQueue, RngStreams, SimTime};
use rand::Rng;

fn hold(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue_hold");
    for &size in &[1_000usize, 10_000, 100_000, 1_000_000] {
        let mut rng = RngStreams::new(7).stream("bench");
        let mut queue = EventQueue::with_capacity(size + 1);
        for i in 0..size {
            queue.push(SimTime(rng.gen_range(0..1_000_000)), i as u64);
        }
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, _| {
            b.iter(|| {
                let (t, e) = queue.pop().expect("queue never empties");
                queue.push(t + SimTime(rng.gen_range(1..1_000_000)), e);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, hold);
criterion_main!(benches);
