//! Elasticity costs, cloud faults and dynamic sharding on tiny scenarios whose outcome is
//! computed by hand from the truth model and the cost parameters.

use crate::faults::{assert_jct, inputs, jct_s, job, no_checkpoints, no_faults, scenario};
use dlsim_engine::SimTime;
use dlsim_model::faults::{ColocationAction, ColocationConfig, FaultConfig, RecoveryConfig};
use dlsim_model::perf;
use dlsim_model::policy::{
    Action, ClusterView, JobConfig, JobPhase, JobView, Partitioning, PodEventKind, Policy,
    RescaleMethod, Sharding,
};
use dlsim_model::{Node, Resources, Scenario};
use dlsim_traces::{JobSpec, ModelKind};

/// Launches the requested configuration, then issues one action at time `at`.
struct Scripted {
    at: SimTime,
    action: Option<Action>,
    sharding: Sharding,
    partitioning: Partitioning,
}

impl Policy for Scripted {
    fn spec(&self) -> String {
        "scripted".into()
    }
    fn sharding(&self) -> Sharding {
        self.sharding
    }
    fn partitioning(&self) -> Partitioning {
        self.partitioning
    }
    fn tick_interval(&self) -> Option<SimTime> {
        Some(self.at)
    }
    fn on_submit(&mut self, job: &JobView<'_>, _: &ClusterView<'_>) -> Vec<Action> {
        vec![Action::Launch {
            job: job.request.id,
            config: job.request.requested,
        }]
    }
    fn on_tick(&mut self, _: &ClusterView<'_>) -> Vec<Action> {
        self.action.take().into_iter().collect()
    }
}

const T: f64 = 1_000.0;

fn rate(spec: &JobSpec, workers: u32, ps: u32) -> f64 {
    let x = perf::PerfInputs {
        workers: f64::from(workers),
        ps: f64::from(ps),
        ..inputs(spec)
    };
    perf::throughput(&perf::default_params(ModelKind::Xdeepfm), &x)
}

fn run_scripted(s: &Scenario, action: Action, sharding: Sharding) -> (f64, u64) {
    let policy = Scripted {
        at: SimTime::from_secs(T as u64),
        action: Some(action),
        sharding,
        partitioning: Partitioning::Tensor,
    };
    let out = dlsim_model::run(s, Box::new(policy));
    let j = &out.world.jobs[0];
    assert_eq!(j.phase(), JobPhase::Completed, "{:?}", j.fail_reason());
    assert_eq!(j.rescales(), 1, "the action was applied");
    (
        (j.ended_at().unwrap() - j.request().submit).as_secs_f64(),
        out.summary.rejected_actions,
    )
}

fn bigger_ps(spec: &JobSpec) -> JobConfig {
    JobConfig {
        ps: 4,
        ..JobConfig::requested(spec)
    }
}

/// A seamless migration of the PS set under `partitioning`, every partition drawn hot
/// (`hot_ps_prob` 1, or 0): (JCT, rescales applied, actions rejected).
fn migrate_ps_set(config: JobConfig, partitioning: Partitioning, hot_prob: f64) -> (f64, u32, u64) {
    let spec = JobSpec {
        model: ModelKind::WideDeep,
        ..job(8, 2)
    };
    let faults = FaultConfig {
        hot_ps_prob: hot_prob,
        hot_ps_load_factor: 3.0,
        ..no_faults()
    };
    let s = scenario(spec, faults, no_checkpoints());
    let policy = Scripted {
        at: SimTime::from_secs(T as u64),
        action: Some(Action::Rescale {
            job: 0,
            config,
            method: RescaleMethod::Migrate,
        }),
        sharding: Sharding::Dynamic,
        partitioning,
    };
    let out = dlsim_model::run(&s, Box::new(policy));
    let j = &out.world.jobs[0];
    assert_eq!(j.phase(), JobPhase::Completed, "{:?}", j.fail_reason());
    (
        (j.ended_at().unwrap() - j.request().submit).as_secs_f64(),
        j.rescales(),
        out.summary.rejected_actions,
    )
}

#[test]
fn deeprec_re_partitions_evenly_where_tensorflow_draws_again() {
    let spec = job(8, 2);
    let to_four = JobConfig {
        ps: 4,
        ..JobConfig::requested(&spec)
    };
    // TensorFlow's allocation draws the new partition as it drew the first (hot here);
    // DeepRec's is even, so the job then trains as if it had never been hot.
    let (tensor, ..) = migrate_ps_set(to_four, Partitioning::Tensor, 1.0);
    let (balanced, ..) = migrate_ps_set(to_four, Partitioning::Balanced, 1.0);
    let (never_hot, ..) = migrate_ps_set(to_four, Partitioning::Balanced, 0.0);
    assert!(
        balanced < tensor * 0.95,
        "an even re-partition trains faster than a hot one: {balanced} vs {tensor}"
    );
    assert!(
        balanced > never_hot,
        "the first partition (before the migration) was hot: {balanced} vs {never_hot}"
    );
    // The same configuration again: a re-balance of the PS set for DeepRec, nothing to do
    // (rejected) for TensorFlow, whose new PSes would restore the same partition.
    let same = JobConfig::requested(&spec);
    let (kept, rescales, rejected) = migrate_ps_set(same, Partitioning::Tensor, 1.0);
    assert_eq!((rescales, rejected), (0, 1));
    let (rebalanced, rescales, rejected) = migrate_ps_set(same, Partitioning::Balanced, 1.0);
    assert_eq!((rescales, rejected), (1, 0));
    assert!(
        rebalanced < kept * 0.95,
        "the re-balanced job trains on even PSes: {rebalanced} vs {kept}"
    );
}

/// A policy asking for more pods than a trace may hold (`limits::MAX_PODS_PER_ROLE`), or
/// for PSes that with a first worker could never fit the cluster together, is refused like
/// any impossible configuration; the job trains on as it was. (Swarm seed 12014786:
/// `chaos` doubled a job's workers tick after tick and the world hung adding millions of
/// pods; a swarm draw had `dlrover` raise 14 PSes to 512 GB on two 512 GB nodes.)
#[test]
fn an_elastic_action_beyond_the_pod_limit_or_the_cluster_is_rejected() {
    use dlsim_traces::limits::MAX_PODS_PER_ROLE;
    let spec = job(2, 2);
    let s = scenario(spec.clone(), no_faults(), no_checkpoints());
    let too_many = [
        Action::ScaleWorkers {
            job: 0,
            workers: MAX_PODS_PER_ROLE + 1,
        },
        Action::ScaleWorkers { job: 0, workers: 0 },
        Action::Rescale {
            job: 0,
            config: JobConfig {
                ps: MAX_PODS_PER_ROLE + 1,
                ..JobConfig::requested(&spec)
            },
            method: RescaleMethod::Migrate,
        },
        // Each PS fits the 4 TB node, three together do not: the job could never train.
        Action::Rescale {
            job: 0,
            config: JobConfig {
                ps: 3,
                ps_mem_mb: 2_000_000,
                ..JobConfig::requested(&spec)
            },
            method: RescaleMethod::Migrate,
        },
    ];
    for action in too_many {
        let policy = Scripted {
            at: SimTime::from_secs(T as u64),
            action: Some(action.clone()),
            sharding: Sharding::Dynamic,
            partitioning: Partitioning::Tensor,
        };
        let out = dlsim_model::run(&s, Box::new(policy));
        let j = &out.world.jobs[0];
        assert_eq!(j.phase(), JobPhase::Completed, "{action:?}");
        assert_eq!(
            (j.rescales(), out.summary.rejected_actions),
            (0, 1),
            "{action:?}"
        );
        assert_jct(
            (j.ended_at().unwrap() - j.request().submit).as_secs_f64(),
            20.0 + spec.total_samples() / rate(&spec, 2, 2),
            "untouched",
        );
    }
}

#[test]
fn adding_workers_with_dynamic_sharding_costs_only_their_start() {
    let spec = job(2, 2);
    let s = scenario(spec.clone(), no_faults(), no_checkpoints());
    let action = Action::ScaleWorkers { job: 0, workers: 4 };
    let (got, _) = run_scripted(&s, action, Sharding::Dynamic);
    // Two workers train from 20 s; the two new ones join at T + 20 s without a pause.
    let done = rate(&spec, 2, 2) * T;
    let expect = T + 20.0 + (spec.total_samples() - done) / rate(&spec, 4, 2);
    assert_jct(got, expect, "scale-out");
}

/// Save and reload of a job's checkpoint from its size: state / storage bandwidth, plus
/// the fixed initialisation on reload (`elasticity.storage_mb_s`, `recovery.init_s`).
fn save_and_reload_s(s: &Scenario, spec: &JobSpec) -> (f64, f64) {
    let state_mb = 3.0 * spec.dense_mb; // no embeddings in these jobs
    let bw = s.file.elasticity.storage_mb_s;
    (state_mb / bw, s.file.recovery.init_s + state_mb / bw)
}

/// A stop-and-restart to more PS at `T`: (the JCT got, the JCT computed by hand with a
/// save + reload pause of `pause_s`, a 20 s pod start, and the rest at the new rate).
fn stop_and_restart_jct(s: &Scenario, spec: &JobSpec, pause_s: f64) -> (f64, f64) {
    let action = Action::Rescale {
        job: 0,
        config: bigger_ps(spec),
        method: RescaleMethod::StopRestart,
    };
    let (got, _) = run_scripted(s, action, Sharding::Static);
    let done = rate(spec, 2, 2) * (T - 20.0);
    let expect = T + pause_s + 20.0 + (spec.total_samples() - done) / rate(spec, 2, 4);
    (got, expect)
}

#[test]
fn stop_and_restart_pays_save_start_and_reload_by_model_size() {
    let mut pauses = Vec::new();
    for dense_mb in [40.0, 4_000.0] {
        let spec = JobSpec {
            dense_mb,
            ..job(2, 2)
        };
        let s = scenario(spec.clone(), no_faults(), no_checkpoints());
        let (save, reload) = save_and_reload_s(&s, &spec);
        let (got, expect) = stop_and_restart_jct(&s, &spec, save + reload);
        assert_jct(got, expect, "stop-and-restart");
        pauses.push(save + reload);
    }
    // A 100x larger model pays 100x the transfer; the initialisation stays.
    assert!(pauses[1] > pauses[0] + 290.0, "{pauses:?}");
}

#[test]
fn a_fixed_save_and_reload_overrides_the_size_rule() {
    let spec = job(2, 2);
    let mut s = scenario(spec.clone(), no_faults(), no_checkpoints());
    s.file.elasticity.checkpoint_save_s = Some(420.0);
    s.file.recovery.reload_s = Some(420.0);
    let (got, expect) = stop_and_restart_jct(&s, &spec, 840.0);
    assert_jct(got, expect, "stop-and-restart with fixed costs");
}

#[test]
fn seamless_migration_with_flash_checkpoint_pauses_for_state_over_memory_bandwidth() {
    let spec = job(2, 2);
    let s = scenario(spec.clone(), no_faults(), no_checkpoints());
    let action = Action::Rescale {
        job: 0,
        config: bigger_ps(&spec),
        method: RescaleMethod::Migrate,
    };
    let (got, _) = run_scripted(&s, action, Sharding::Dynamic);
    // Old pods train on while the new ones start (20 s); then the PS state moves.
    let state_mb = 2.0 * perf::ps_mem_mb(spec.dense_mb, 0.0, 0.5);
    let pause = (state_mb / s.file.elasticity.flash_mb_s * 1000.0).ceil() / 1000.0;
    let done = rate(&spec, 2, 2) * T;
    let expect = T + 20.0 + pause + (spec.total_samples() - done) / rate(&spec, 2, 4);
    assert_jct(got, expect, "migration with flash checkpoint");
    assert!(pause < 1.0, "flash checkpoint of a small model takes < 1 s");
}

#[test]
fn migration_without_flash_checkpoint_moves_state_through_remote_storage() {
    let spec = job(2, 2);
    let mut s = scenario(spec.clone(), no_faults(), no_checkpoints());
    s.file.elasticity.flash_checkpoint = false;
    let action = Action::Rescale {
        job: 0,
        config: bigger_ps(&spec),
        method: RescaleMethod::Migrate,
    };
    let (got, _) = run_scripted(&s, action, Sharding::Dynamic);
    let (save, reload) = save_and_reload_s(&s, &spec);
    let pause = save + reload;
    let done = rate(&spec, 2, 2) * T;
    let expect = T + 20.0 + pause + (spec.total_samples() - done) / rate(&spec, 2, 4);
    assert_jct(got, expect, "migration through remote storage");
}

#[test]
fn disabling_seamless_migration_turns_it_into_stop_and_restart() {
    let spec = job(2, 2);
    let mut s = scenario(spec.clone(), no_faults(), no_checkpoints());
    s.file.elasticity.seamless_migration = false;
    let migrate = Action::Rescale {
        job: 0,
        config: bigger_ps(&spec),
        method: RescaleMethod::Migrate,
    };
    let stop = Action::Rescale {
        job: 0,
        config: bigger_ps(&spec),
        method: RescaleMethod::StopRestart,
    };
    let (a, _) = run_scripted(&s, migrate, Sharding::Static);
    let (b, _) = run_scripted(&s, stop, Sharding::Static);
    assert_jct(a, b, "migration switched off");
}

#[test]
fn node_failure_restarts_the_job_after_repair() {
    // One node: a failure stops everything until the node is repaired. No checkpoints, so
    // each failure restarts from zero: JCT = last failure + repair + start + full run.
    let mut spec = job(2, 0);
    spec.steps = 20_000;
    let mut seen_failure = false;
    for seed in 0..30 {
        let faults = FaultConfig {
            node_mtbf_days: 0.1,
            node_repair_h: 0.5,
            ..no_faults()
        };
        let recovery = RecoveryConfig {
            restart_budget: 5,
            ..no_checkpoints()
        };
        let mut s = scenario(spec.clone(), faults, recovery);
        s.file.seed = seed;
        let out = dlsim_model::run(&s, dlsim_policies::build("static").unwrap());
        let j = &out.world.jobs[0];
        if j.phase() != JobPhase::Completed {
            assert_eq!(j.fail_reason().map(|r| r.as_str()), Some("node_failures"));
            continue;
        }
        let last_fail = j
            .pod_events()
            .iter()
            .filter(|e| e.kind == PodEventKind::NodeFailure)
            .map(|e| e.time.as_secs_f64())
            .fold(0.0, f64::max);
        let full = spec.total_samples() / rate(&spec, 2, 0);
        let expect = if j.node_failures() == 0 {
            20.0 + full
        } else {
            seen_failure = true;
            last_fail + 1_800.0 + 20.0 + full
        };
        let got = (j.ended_at().unwrap() - j.request().submit).as_secs_f64();
        assert!(
            (got - expect).abs() < 0.01,
            "seed {seed}: JCT {got} vs {expect}"
        );
    }
    assert!(seen_failure, "some seed saw a node failure");
}

/// One 64-core node whose co-located services follow `peak` at `peak_hour` (trough 0, no
/// noise, 10-min updates), and the job `spec` on it.
fn colocated(spec: &JobSpec, peak: f64, peak_hour: f64, action: ColocationAction) -> Scenario {
    let faults = FaultConfig {
        colocation: ColocationConfig {
            node_fraction: 1.0,
            trough: 0.0,
            peak,
            peak_hour,
            noise_sigma: 0.0,
            update_interval_s: 600,
            action,
        },
        ..no_faults()
    };
    let mut s = scenario(spec.clone(), faults, no_checkpoints());
    s.nodes = vec![Node::new(
        "n0".into(),
        Resources::new(64.0, 1 << 20, 0),
        String::new(),
    )];
    s
}

#[test]
fn colocated_services_delay_placement_until_their_demand_falls() {
    // A 30-core worker beside services whose demand peaks at midnight: it fits once
    // demand <= 34/64 of the node, at the first 10-min update after that.
    let mut spec = job(1, 0);
    spec.worker_cpu = 30.0;
    spec.steps = 2_000;
    let mut s = colocated(&spec, 1.0, 0.0, ColocationAction::Evict);
    // It waits hours for the trough: no pending timeout here (see the next test).
    s.file.recovery.pending_timeout_s = 0.0;
    let colocation = &s.file.faults.colocation;
    let fits_at = (0..)
        .map(|k| k as f64 * 600.0)
        .find(|&t| (64_000.0 * colocation.demand_fraction(t)).floor() <= 34_000.0)
        .unwrap();
    let got = jct_s(&s);
    let expect = fits_at + 20.0 + spec.total_samples() / rate(&spec, 1, 0);
    assert_jct(got, expect, "placement after the services' peak");
    assert!(fits_at >= 5.0 * 3_600.0, "it waited for the daily trough");
}

#[test]
fn a_job_whose_pods_wait_past_the_pending_timeout_fails_with_a_scheduling_failure() {
    let mut spec = job(1, 0);
    spec.worker_cpu = 30.0;
    spec.steps = 2_000;
    let mut s = colocated(&spec, 1.0, 0.0, ColocationAction::Evict);
    s.file.recovery.pending_timeout_s = 1_800.0;
    let out = dlsim_model::run(&s, dlsim_policies::build("static").unwrap());
    let j = &out.world.jobs[0];
    assert_eq!(j.phase(), JobPhase::Failed);
    assert_eq!(j.fail_reason().map(|r| r.as_str()), Some("scheduling"));
    assert_eq!(j.ended_at().unwrap().as_secs_f64(), 1_800.0);
    assert_eq!(out.summary.failures_by_reason["scheduling"], 1);
}

#[test]
fn colocated_services_evict_training_pods_when_demand_rises() {
    let mut spec = job(2, 0);
    spec.worker_cpu = 15.0;
    spec.steps = 400_000;
    let s = colocated(&spec, 1.0, 12.0, ColocationAction::Evict);
    let colocation = &s.file.faults.colocation;
    let out = dlsim_model::run(&s, dlsim_policies::build("static").unwrap());
    let j = &out.world.jobs[0];
    assert!(j.evictions() >= 1);
    let first_evict = j
        .pod_events()
        .iter()
        .find(|e| e.kind == PodEventKind::Evicted)
        .unwrap()
        .time
        .as_secs_f64();
    let expect = (0..)
        .map(|k| k as f64 * 600.0)
        .find(|&t| 30_000.0 + (64_000.0 * colocation.demand_fraction(t)).floor() > 64_000.0)
        .unwrap();
    assert_eq!(
        first_evict, expect,
        "evicted at the first update over capacity"
    );
    assert_eq!(out.summary.evictions, u64::from(j.evictions()));
    assert_eq!(
        j.restarts(),
        [0, 0],
        "evictions do not spend the restart budget"
    );
}

#[test]
fn throttling_by_colocated_services_slows_the_job_by_the_computed_amount() {
    // Services' demand rises from 0 at midnight; the pods keep their node but share what
    // CPU is left: factor = (64 - demand) / 32, recomputed every 10 min.
    let mut spec = job(2, 0);
    spec.steps = 20_000;
    let s = colocated(&spec, 0.9, 12.0, ColocationAction::Throttle);
    let colocation = &s.file.faults.colocation;
    let got = jct_s(&s);
    // Integrate by hand over the 10-minute pieces.
    let rate_at = |factor: f64| {
        let x = perf::PerfInputs {
            worker_cores: 16.0 * factor,
            ..inputs(&spec)
        };
        perf::throughput(&perf::default_params(ModelKind::Xdeepfm), &x)
    };
    let mut left = spec.total_samples();
    let mut t = 20.0;
    let mut factor = 1.0;
    let expect = loop {
        let next = (t / 600.0_f64).floor() * 600.0 + 600.0;
        let r = rate_at(factor);
        if left <= r * (next - t) {
            break t + left / r;
        }
        left -= r * (next - t);
        t = next;
        let demand = (64_000.0 * colocation.demand_fraction(t)).floor() / 1000.0;
        factor = ((64.0 - demand) / 32.0).clamp(0.03, 1.0);
    };
    assert!(
        (got - expect).abs() < 0.5,
        "JCT {got} vs hand-computed {expect}"
    );
    let healthy = 20.0 + spec.total_samples() / rate_at(1.0);
    assert!(got > healthy, "throttling slows the job");
}

#[test]
fn dynamic_sharding_trains_every_shard_exactly_once_under_random_failures() {
    let mut spec = job(6, 2);
    spec.steps = 100_000;
    let mut failures = 0;
    for seed in 0..40 {
        let faults = FaultConfig {
            pod_failure_per_day: 0.95,
            slow_node_fraction: 0.2,
            ..no_faults()
        };
        let recovery = RecoveryConfig {
            restart_budget: 5,
            checkpoint_interval_s: 600.0,
            ..RecoveryConfig::default()
        };
        let mut s = scenario(spec.clone(), faults, recovery);
        s.file.seed = seed;
        s.file.elasticity.shard_batches = 64;
        let out = dlsim_model::run(
            &s,
            dlsim_policies::build("static[sharding=dynamic]").unwrap(),
        );
        let j = &out.world.jobs[0];
        failures += j.pod_failures();
        assert!(j.ledger().is_some(), "dynamic sharding keeps a ledger");
        crate::support::check_ledger(j, &format!("seed {seed}"));
        if j.phase() == JobPhase::Completed {
            assert_eq!(j.steps_done(), spec.steps, "seed {seed}");
        }
    }
    assert!(failures > 10, "the failures really happened ({failures})");
}

#[test]
fn a_worker_failure_with_dynamic_sharding_does_not_restart_the_job() {
    let mut spec = job(6, 2);
    spec.steps = 300_000;
    let faults = FaultConfig {
        pod_failure_per_day: 0.9,
        ..no_faults()
    };
    let total = |policy: &str| -> f64 {
        (0..8)
            .map(|seed| {
                let mut s = scenario(spec.clone(), faults.clone(), RecoveryConfig::default());
                s.file.seed = seed;
                let out = dlsim_model::run(&s, dlsim_policies::build(policy).unwrap());
                out.world.jobs[0].ended_at().unwrap().as_secs_f64()
            })
            .sum()
    };
    // Same failure streams at first; the static job rolls back to its checkpoint and
    // reloads for 7 min on every loss, the dynamic one only redoes a shard.
    let (dynamic, fixed) = (total("static[sharding=dynamic]"), total("static"));
    assert!(dynamic < fixed, "dynamic {dynamic} vs static {fixed}");
}

#[test]
fn traced_observations_hold_pod_samples_and_events() {
    let spec = job(2, 2);
    let mut s = scenario(spec, no_faults(), no_checkpoints());
    s.trace_observations = true;
    let out = dlsim_model::run(&s, dlsim_policies::build("static").unwrap());
    let obs = out.observations_csv.expect("traced");
    let mut lines = obs.lines();
    assert_eq!(
        lines.next().unwrap(),
        "time_s,job,pod,role,kind,cpu_used,mem_used_mb,samples_per_s,step_time_s,samples_done,slot,incarnation"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let count = |kind: &str| rows.iter().filter(|r| r[4] == kind).count();
    assert_eq!(count("pending"), 4);
    assert_eq!(count("running"), 4);
    assert!(count("sample") >= 4);
    let worker = rows
        .iter()
        .find(|r| r[4] == "sample" && r[3] == "worker")
        .unwrap();
    let rate: f64 = worker[7].parse().unwrap();
    assert!(rate > 0.0, "a worker sample reports its throughput");
}
