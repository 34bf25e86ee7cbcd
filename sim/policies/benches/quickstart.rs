//! The quickstart replay (`scenarios/quickstart.json`, 1,974 jobs over a simulated day)
//! under `static` and under `dlrover`: issue #18's speed budget asks for `dlrover` within
//! 4x `static`. The scenario is loaded once, as `dlsim replay` loads it (the trace is
//! validated, then streamed again by each replay); each iteration is one whole replay
//! (`dlsim_model::run::run`: outputs kept in memory, nothing written), on this thread and
//! the rest of rayon's pool as `dlsim replay` runs it. After criterion's two groups, the
//! bench prints the ratio of the medians of alternating replays measured in the same run
//! (the machine's load moves both alike). Run:
//! `cargo bench -p dlsim-policies --features bench --bench quickstart`.

use std::path::Path;
use std::time::Instant;

use criterion::{criterion_group, Criterion};
use dlsim_model::scenario::Scenario;

fn scenario() -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/quickstart.json");
    Scenario::load_streaming(&path).expect("the quickstart scenario loads")
}

fn replay(scenario: &Scenario, policy: &str) -> u64 {
    let policy = dlsim_policies::build(policy).expect("a known policy");
    dlsim_model::run::run(scenario, policy).summary.events
}

fn replays(c: &mut Criterion) {
    let scenario = scenario();
    let mut group = c.benchmark_group("quickstart_replay");
    group.sample_size(10);
    for policy in ["static", "dlrover"] {
        group.bench_function(policy, |b| b.iter(|| replay(&scenario, policy)));
    }
    group.finish();
}

/// Medians of `n` alternating replays of each policy, and their ratio.
fn ratio(n: usize) {
    let scenario = scenario();
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..n {
        for (k, policy) in ["static", "dlrover"].into_iter().enumerate() {
            let start = Instant::now();
            replay(&scenario, policy);
            times[k].push(start.elapsed().as_secs_f64());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (s, d) = (median(&mut times[0]), median(&mut times[1]));
    println!(
        "quickstart replay, median of {n} alternating runs: static {s:.3} s, dlrover {d:.3} s, \
         dlrover / static = {:.2} (budget: 4)",
        d / s
    );
}

criterion_group!(benches, replays);

fn main() {
    // The replay's own thread joins rayon's global pool, as `dlsim replay` does.
    let _ = rayon::ThreadPoolBuilder::new()
        .use_current_thread()
        .build_global();
    benches();
    ratio(15);
    Criterion::default().configure_from_args().final_summary();
}
