//! The baselines of issue #6 end to end on one-job scenarios with exact observations (no
//! noise, no per-job variation, built-in truth), so what each decides follows from the
//! truth model: ES settles where the efficiency test fails, Optimus grows to its per-job
//! cap with stop-and-restart, the well-tuned oracle launches its searched configuration.

use crate::faults::{job, no_faults, scenario};
use dlsim_model::faults::RecoveryConfig;
use dlsim_model::perf::{self, PerfInputs};
use dlsim_model::policy::{JobConfig, JobPhase, JobRequest};
use dlsim_model::scenario::TruthSettings;
use dlsim_model::Scenario;
use dlsim_policies::well_tuned::{best_config, Model};
use dlsim_traces::{JobSpec, ModelKind};

/// A Wide&Deep job with 4-core workers and 8-core PS that runs long enough to settle.
fn wide_deep(workers: u32, ps: u32) -> JobSpec {
    JobSpec {
        model: ModelKind::WideDeep,
        worker_cpu: 4.0,
        worker_mem_mb: 8_192,
        ps_cpu: 8.0,
        ps_mem_mb: 8_192,
        steps: 3_000_000,
        ..job(workers, ps)
    }
}

/// What a run left of its one job.
struct Outcome {
    config: JobConfig,
    rescales: u32,
    jct_s: f64,
}

fn run(spec: JobSpec, policy: &str) -> (Outcome, u64) {
    let s: Scenario = scenario(spec, no_faults(), RecoveryConfig::default());
    let out = dlsim_model::run(&s, dlsim_policies::build(policy).unwrap());
    let j = &out.world.jobs[0];
    assert_eq!(
        j.phase(),
        JobPhase::Completed,
        "{policy}: {:?}",
        j.fail_reason()
    );
    let outcome = Outcome {
        config: j.config(),
        rescales: j.rescales(),
        jct_s: (j.ended_at().unwrap() - j.request().submit).as_secs_f64(),
    };
    (outcome, out.summary.rejected_actions)
}

fn steps_per_s(spec: &JobSpec, workers: u32, ps: u32) -> f64 {
    let x = PerfInputs {
        workers: f64::from(workers),
        ps: f64::from(ps),
        worker_cores: spec.worker_cpu,
        ps_cores: spec.ps_cpu,
        batch: f64::from(spec.batch_size),
        dense_mb: spec.dense_mb,
        bandwidth_mb_s: 1_250.0,
        emb_dim: f64::from(spec.emb_dim),
        physics: Default::default(),
    };
    perf::throughput(&perf::default_params(spec.model), &x) / f64::from(spec.batch_size)
}

#[test]
fn es_settles_at_the_last_size_whose_scaling_efficiency_passed() {
    let spec = JobSpec {
        ps_cpu: 32.0,
        ..wide_deep(4, 1)
    };
    // A threshold below the paper's 0.3: the built-in W&D's one 32-core PS leaves a new
    // worker 0.36 of a worker's throughput at 4 -> 8 workers, 0.27 at 8 -> 12, 0.22 at
    // 12 -> 16 and 0.18 at 16 -> 20. (An 8-core PS, as the other tests here have, is
    // saturated by 4 of these workers: a fifth adds nothing.)
    let (j, rejected) = run(spec.clone(), "es[theta=0.15,spawn=4]");
    assert_eq!(rejected, 0);
    // By hand: 4 -> 8 -> 12 ... while s > 0.15 (and within 200 cores), then back one step.
    let eff = |a: u32, b: u32| {
        let (ra, rb) = (steps_per_s(&spec, a, 1), steps_per_s(&spec, b, 1));
        ((rb - ra) / f64::from(b - a)) / (ra / f64::from(a))
    };
    let mut k = 4;
    while eff(k, k + 4) > 0.15 && f64::from(k + 4) * 4.0 + 8.0 <= 200.0 {
        k += 4;
    }
    assert!(k > 4, "the test needs at least one passing step");
    assert_eq!(j.config.workers, k, "settled size");
    assert_eq!(j.config.ps, 1, "ES never touches PS");
}

#[test]
fn optimus_profiles_then_grows_to_its_cap_by_stop_and_restart() {
    let spec = wide_deep(4, 1);
    let (j, rejected) = run(spec, "optimus");
    assert_eq!(rejected, 0);
    // Launch at (2 PS, 4 workers), three profiling restarts, then at least one greedy one.
    assert!(j.rescales >= 4, "rescales: {}", j.rescales);
    // The asynchronous speed function grows with workers for any t >= 0, so the greedy
    // stops only at the 200-core cap: neither a 4-worker (16 cores) nor a 2-PS (16 cores)
    // step fits any more.
    let cores = f64::from(j.config.workers) * 4.0 + f64::from(j.config.ps) * 8.0;
    assert!(cores <= 200.0 && cores > 184.0, "{:?}", j.config);
    assert_eq!(j.config.worker_cpu, 4.0, "per-pod CPU stays");
}

/// DLRover-RM's Fig. 10 ran Optimus as a plug-in algorithm: the same decisions, carried out
/// by seamless migration on dynamic data sharding, so the job never stops to checkpoint
/// and restart. It grows to the same cap and finishes sooner than Optimus restarting.
#[test]
fn optimus_as_a_plugin_grows_by_migration_and_finishes_before_optimus_restarting() {
    let (restart, rejected) = run(wide_deep(4, 1), "optimus");
    assert_eq!(rejected, 0);
    let (plugin, rejected) = run(wide_deep(4, 1), "optimus[rescale=migrate]");
    assert_eq!(rejected, 0);
    assert!(plugin.rescales >= 4, "rescales: {}", plugin.rescales);
    let cores = f64::from(plugin.config.workers) * 4.0 + f64::from(plugin.config.ps) * 8.0;
    assert!(cores <= 200.0 && cores > 184.0, "{:?}", plugin.config);
    assert!(
        plugin.jct_s < restart.jct_s,
        "plug-in {} s, restarting {} s",
        plugin.jct_s,
        restart.jct_s
    );
    assert!(dlsim_policies::build("optimus[rescale=stop]").is_err());
}

#[test]
fn the_well_tuned_oracle_launches_its_search_result_and_beats_a_ps_starved_request() {
    // One 2-core PS serving eight 8-core workers: the user starved the PS side.
    let spec = JobSpec {
        ps_cpu: 2.0,
        steps: 200_000,
        ..wide_deep(8, 1)
    };
    let (tuned, rejected) = run(spec.clone(), "well-tuned");
    let (user, _) = run(spec.clone(), "static");
    assert_eq!(rejected, 0);
    let model = Model {
        params: perf::default_params(spec.model),
        bandwidth_mb_s: TruthSettings::default().bandwidth_mb_s,
        gpu_core_equiv: TruthSettings::default().gpu_core_equiv,
        physics: Default::default(),
    };
    let expect = best_config(&model, &JobRequest::from_spec(&spec), 32.0, 4 << 20, 0.01);
    assert_eq!(tuned.config, expect);
    let req = JobConfig::requested(&spec);
    assert!(expect.total().cpu_milli <= req.total().cpu_milli);
    assert!(expect.total().mem_mb <= req.total().mem_mb);
    assert!(
        tuned.jct_s < 0.8 * user.jct_s,
        "oracle {} s vs user {} s",
        tuned.jct_s,
        user.jct_s
    );
}

#[test]
fn optimus_starts_with_the_ps_that_hold_the_users_ps_memory() {
    // Eight nodes of 512 GB; the user asked for 8 PS x 256 GB (2 TB) and the embeddings
    // fill 1.2 TB from the start. Optimus's first step (2 PS) would cap each PS at one
    // node (1 TB in all) and be OOM-killed until the job failed; it starts at the 4 PS
    // that hold the user's 2 TB.
    let spec = JobSpec {
        steps: 20_000,
        ps_mem_mb: 256 << 10,
        emb_mb_initial: 1_200_000.0,
        ..wide_deep(4, 8)
    };
    let mut s: Scenario = scenario(spec, no_faults(), RecoveryConfig::default());
    s.nodes = (0..8)
        .map(|i| {
            dlsim_model::Node::new(
                format!("n{i}"),
                dlsim_model::Resources::new(64.0, 512 << 10, 0),
                String::new(),
            )
        })
        .collect();
    let out = dlsim_model::run(&s, dlsim_policies::build("optimus").unwrap());
    let j = &out.world.jobs[0];
    assert_eq!(j.phase(), JobPhase::Completed, "{:?}", j.fail_reason());
    assert_eq!(j.oom_kills(), 0);
    assert!(j.config().ps >= 4, "{:?}", j.config());
    assert!(j.config().ps_mem_mb <= 512 << 10);
}
