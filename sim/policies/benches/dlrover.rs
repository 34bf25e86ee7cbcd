//! Cost of one DLRover-RM job-level decision (stage 2): the online fit of the throughput
//! model to the job's profiles, then the candidate search (NSGA-II as the paper runs it,
//! the default coordinate ascent, the one-step neighbours of `nsga=off`, and the exhaustive
//! front they are checked against).
//! The job is a Wide&Deep job on 8 workers x 4 cores and 2 PS x 8 cores with 64 profile
//! samples, as in the quickstart replay. Run: `cargo bench -p dlsim-policies --features bench`.

use criterion::{criterion_group, criterion_main, Criterion};
use dlsim_engine::RngStreams;
use dlsim_fit::ThroughputParams;
use dlsim_model::policy::{JobConfig, JobRequest, JobView};
use dlsim_policies::dlrover::plan::{self, Plan, Search};
use dlsim_policies::testkit;
use rand::Rng;

fn request() -> JobRequest {
    JobRequest {
        user: "u1".into(),
        steps: 200_000,
        ..testkit::request(JobConfig {
            workers: 8,
            ps: 2,
            worker_cpu: 4.0,
            worker_mem_mb: 8_192,
            worker_gpu: 0,
            ps_cpu: 8.0,
            ps_mem_mb: 16_384,
        })
    }
}

/// The hidden truth the profiles are drawn from (3% noise), at the sizes the job visits.
fn observations(job: &JobView<'_>) -> Vec<(dlsim_fit::Config, f64)> {
    let truth = ThroughputParams {
        a_grad: 1.5e-3,
        b_grad: 0.004,
        a_upd: 0.1,
        b_upd: 0.003,
        a_sync: 0.2,
        b_sync: 0.003,
        a_emb: 1.2e-5,
        b_emb: 0.003,
    };
    let mut rng = RngStreams::new(1).stream("bench-profiles");
    (0..64)
        .map(|k| {
            let c = plan::fit_config(job, 4 + (k % 3) as u32 * 2, 1 + (k % 2) as u32);
            let noise = 1.0 + 0.03 * (rng.gen::<f64>() * 2.0 - 1.0);
            (c, truth.throughput(&c) * noise)
        })
        .collect()
}

fn decision(c: &mut Criterion) {
    let request = request();
    let job = JobView {
        steps_done: 50_000,
        ..testkit::view(&request)
    };
    let obs = observations(&job);
    let split = plan::split_from_utilisation(0.6, 0.3, 0.5, 1.0);
    let model = plan::fit_model(&obs, split).expect("fits");
    let make = |model| Plan {
        job: &job,
        model,
        current: job.config,
        thr_now: obs[obs.len() - 1].1,
        remaining: 150_000.0 * 512.0,
        max_cpu: 64.0,
        max_mem: 256 * 1_024,
        ps_mem_used: 12_000.0,
        ps_mem_final: 12_000.0,
        quota_cores: 4.0 * job.request.requested.total().cpu_cores(),
        fixed_pod_cpu: false,
        worker_mem_used: 3_000.0,
        worker_cpu_used: 0.0,
    };
    let mut group = c.benchmark_group("dlrover_decision");
    group.bench_function("fit", |b| b.iter(|| plan::fit_model(&obs, split)));
    for (name, search) in [
        ("coordinate", Search::Coordinate),
        ("nsga", Search::Nsga(Default::default())),
        ("neighbours", Search::Neighbours),
        ("exact", Search::Exact),
    ] {
        let p = make(model);
        let mut rng = RngStreams::new(7).stream("dlrover-nsga");
        if search == Search::Exact {
            group.sample_size(10);
        }
        // The policy's climb score: RE x WG (rho = 2.5) within the quota; plans that grow
        // the job pass (the policy's cost filters aside).
        let climb = |f: &[f64; 2], thr: f64| {
            let wg = dlsim_policies::dlrover::weight(p.remaining, thr, 2.5);
            plan::feasible(f).then(|| (-f[1] > 0.0, -f[1] / f[0].max(1.0) * wg))
        };
        group.bench_function(name, |b| {
            b.iter(|| plan::candidates(&p, search, Some(&mut rng), &climb).len())
        });
    }
    group.finish();
}

criterion_group!(benches, decision);
criterion_main!(benches);
