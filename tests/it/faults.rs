//! Each fault on a tiny scenario whose effect can be computed by hand from the truth model.

use dlsim_model::cluster::Placement;
use dlsim_model::faults::{FaultConfig, RecoveryConfig};
use dlsim_model::job::Role;
use dlsim_model::perf::{self, PerfInputs, PsCond, ThroughputParams, WorkerCond};
use dlsim_model::policy::JobPhase;
use dlsim_model::scenario::{
    CalibrationSource, ClusterSpec, ObservationSettings, PodSettings, ScenarioFile, TruthSettings,
};
use dlsim_model::{Node, Resources, Scenario};
use dlsim_traces::{JobSpec, ModelKind};

pub(crate) fn job(workers: u32, ps: u32) -> JobSpec {
    JobSpec {
        id: 0,
        submit_s: 0,
        user: "u".into(),
        model: ModelKind::Xdeepfm,
        batch_size: 512,
        steps: 100_000,
        dense_mb: 40.0,
        emb_dim: 16,
        emb_mb_initial: 0.0,
        emb_mb_per_msample: 0.0,
        workers,
        ps,
        worker_cpu: 16.0,
        worker_mem_mb: 16_384,
        ps_cpu: 16.0,
        ps_mem_mb: 16_384,
        worker_gpu: 0,
        priority: 0,
        synthesized: Vec::new(),
        observed: None,
    }
}

/// One big node, no noise, no per-job variation, no faults unless the test adds them.
pub(crate) fn scenario(spec: JobSpec, faults: FaultConfig, recovery: RecoveryConfig) -> Scenario {
    let nodes = vec![Node::new(
        "n0".into(),
        Resources::new(512.0, 4 << 20, 0),
        String::new(),
    )];
    let file = ScenarioFile {
        name: "faults".into(),
        seed: 3,
        trace: None,
        generate: None,
        cluster: ClusterSpec {
            groups: Vec::new(),
            node_list: None,
            placement: Placement::FirstFit,
        },
        policy: "static".into(),
        pods: PodSettings {
            start_base_s: 20.0,
            start_per_core_s: 0.0,
        },
        observation: ObservationSettings {
            noise_cv: 0.0,
            history_len: 8,
            ..Default::default()
        },
        truth: TruthSettings {
            job_variation_sigma: 0.0,
            // The hand-computed figures below use the built-in parameters.
            calibration: CalibrationSource::Builtin,
            ..TruthSettings::default()
        },
        faults,
        recovery,
        elasticity: Default::default(),
        timeline_interval_s: 600,
        horizon_s: None,
        online: Vec::new(),
        managed_share: 1.0,
    };
    Scenario {
        path: "faults.json".into(),
        file,
        nodes,
        jobs: vec![spec].into(),
        stream: None,
        keep_ended: true,
        trace_observations: false,
        online: Vec::new(),
        warnings: Vec::new(),
    }
}

pub(crate) fn no_faults() -> FaultConfig {
    FaultConfig {
        pod_failure_per_day: 0.0,
        ..FaultConfig::default()
    }
}

pub(crate) fn no_checkpoints() -> RecoveryConfig {
    RecoveryConfig {
        checkpoint_interval_s: 0.0,
        ..RecoveryConfig::default()
    }
}

/// Asserts a JCT equals its hand-computed value to 10 ms.
pub(crate) fn assert_jct(got: f64, expect: f64, what: &str) {
    assert!(
        (got - expect).abs() < 0.01,
        "{what}: JCT {got} vs hand-computed {expect}"
    );
}

pub(crate) fn jct_s(s: &Scenario) -> f64 {
    let out = dlsim_model::run(s, dlsim_policies::build("static").unwrap());
    let j = &out.world.jobs[0];
    assert_eq!(j.phase(), JobPhase::Completed, "{:?}", j.fail_reason());
    (j.ended_at().unwrap() - j.request().submit).as_secs_f64()
}

pub(crate) fn inputs(spec: &JobSpec) -> PerfInputs {
    PerfInputs {
        workers: f64::from(spec.workers),
        ps: f64::from(spec.ps),
        worker_cores: spec.worker_cpu,
        ps_cores: spec.ps_cpu,
        batch: 512.0,
        dense_mb: spec.dense_mb,
        bandwidth_mb_s: 1_250.0,
        emb_dim: 16.0,
        physics: Default::default(),
    }
}

#[test]
fn healthy_job_takes_start_latency_plus_samples_over_rate() {
    let spec = job(4, 2);
    let rate = perf::throughput(
        &dlsim_model::perf::default_params(ModelKind::Xdeepfm),
        &inputs(&spec),
    );
    let expect = 20.0 + spec.total_samples() / rate;
    let got = jct_s(&scenario(spec, no_faults(), no_checkpoints()));
    assert_jct(got, expect, "JCT");
}

/// Utilisation is the profiler's: a pod that is still starting holds its node but is not in
/// the job's allocated core-seconds, so a slow start lengthens the JCT and leaves the job's
/// utilisation as it is (DLRover-RM production pods take 5-10 min to start). A scenario's
/// `observation.count_starting_pods` takes the scheduler's view instead: the start-up is
/// allocated and idle, and the utilisation falls by exactly that.
#[test]
fn a_starting_pod_is_not_in_its_jobs_utilisation() {
    let spec = job(4, 2);
    let cores = 4.0 * spec.worker_cpu + 2.0 * spec.ps_cpu;
    let run_counting = |start_s: f64, count_starting: bool| {
        let mut s = scenario(spec.clone(), no_faults(), no_checkpoints());
        s.file.pods.start_base_s = start_s;
        s.file.observation.count_starting_pods = count_starting;
        let out = dlsim_model::run(&s, dlsim_policies::build("static").unwrap());
        let j = &out.world.jobs[0];
        assert_eq!(j.phase(), JobPhase::Completed, "{:?}", j.fail_reason());
        let jct = (j.ended_at().unwrap() - j.request().submit).as_secs_f64();
        let u = j.usage();
        (
            jct,
            u.cpu_alloc_core_s,
            u.cpu_used_core_s / u.cpu_alloc_core_s,
        )
    };
    let run = |start_s: f64| run_counting(start_s, false);
    let (fast_jct, fast_alloc, fast_util) = run(20.0);
    let (slow_jct, slow_alloc, slow_util) = run(1_000.0);
    assert_jct(slow_jct, fast_jct + 980.0, "a start 980 s longer");
    // Allocated while running: the same training time at the same cores.
    assert!(
        (slow_alloc - fast_alloc).abs() < 1e-6 * fast_alloc,
        "allocated core-s {slow_alloc} vs {fast_alloc}"
    );
    assert!(
        (slow_alloc - cores * (slow_jct - 1_000.0)).abs() < 1e-6 * slow_alloc,
        "allocated core-s {slow_alloc} is the pods' cores over their running time"
    );
    assert!(
        (slow_util - fast_util).abs() < 1e-9,
        "{slow_util} vs {fast_util}"
    );
    // Counted: the same run, plus every pod's start-up (the base and 4 s a core, all
    // pods starting together) allocated and idle.
    let (jct, alloc, util) = run_counting(1_000.0, true);
    assert_jct(jct, slow_jct, "what is counted does not change the run");
    let per_core = scenario(spec.clone(), no_faults(), no_checkpoints())
        .file
        .pods
        .start_per_core_s;
    let starting = 4.0 * spec.worker_cpu * (1_000.0 + per_core * spec.worker_cpu)
        + 2.0 * spec.ps_cpu * (1_000.0 + per_core * spec.ps_cpu);
    assert!(
        (alloc - slow_alloc - starting).abs() < 1e-6 * alloc,
        "allocated core-s {alloc}: {slow_alloc} running plus {starting} starting"
    );
    assert!(
        (util - slow_util * slow_alloc / alloc).abs() < 1e-9,
        "the same use over more allocation: {util} vs {slow_util}"
    );
}

#[test]
fn a_slow_node_at_25_percent_cpu_slows_the_job_by_the_computed_amount() {
    // The only node is slow: every pod on it, workers and PS, gets a quarter of its CPU.
    let spec = job(4, 2);
    let faults = FaultConfig {
        slow_node_fraction: 1.0,
        straggler_cpu_ratio: 0.25,
        ..no_faults()
    };
    let slow = PerfInputs {
        worker_cores: 4.0,
        ps_cores: 4.0,
        ..inputs(&spec)
    };
    let rate = perf::throughput(
        &dlsim_model::perf::default_params(ModelKind::Xdeepfm),
        &slow,
    );
    let expect = 20.0 + spec.total_samples() / rate;
    let healthy = jct_s(&scenario(spec.clone(), no_faults(), no_checkpoints()));
    let got = jct_s(&scenario(spec, faults, no_checkpoints()));
    assert_jct(got, expect, "JCT");
    assert!(
        got > 2.0 * healthy,
        "xDeepFM is compute-bound: a 4x CPU cut hurts ({got} vs {healthy})"
    );
}

/// No faults but job 0's pod `index` of `role`, cut to `cpu_ratio` of its CPU by hand.
fn one_slow_pod(role: Role, index: u32, cpu_ratio: f64) -> FaultConfig {
    FaultConfig {
        slow_pods: vec![dlsim_model::faults::SlowPod {
            job: 0,
            role,
            index,
            cpu_ratio,
        }],
        ..no_faults()
    }
}

/// The papers' experiments cut one pod's CPU by hand: the pod is created smaller (the
/// cluster and policies see it), the rest of the job is as configured, and the job slows.
#[test]
fn a_slow_pod_of_an_experiment_is_created_with_its_cut_cpu() {
    let spec = job(4, 2);
    let faults = one_slow_pod(Role::Ps, 1, 0.25);
    let s = scenario(spec.clone(), faults, no_checkpoints());
    let out = dlsim_model::run(&s, dlsim_policies::build("static").unwrap());
    let w = &out.world;
    let cores: Vec<(bool, f64)> = w.jobs[0]
        .pods()
        .iter()
        .map(|&p| (w.pods[p].role == Role::Ps, w.pods[p].request.cpu_cores()))
        .collect();
    assert_eq!(
        cores,
        [
            (true, 16.0),
            (true, 4.0),
            (false, 16.0),
            (false, 16.0),
            (false, 16.0),
            (false, 16.0)
        ]
    );
    let healthy = jct_s(&scenario(spec, no_faults(), no_checkpoints()));
    assert!(jct_s(&s) > healthy, "the job waits for its slow PS");
    let bad_role = r#"{"slow_pods": [{"job": 0, "role": "chief", "index": 0, "cpu_ratio": 0.5}]}"#;
    assert!(serde_json::from_str::<FaultConfig>(bad_role).is_err());
    let mut bad = s.clone();
    bad.file.faults.slow_pods[0].cpu_ratio = 0.0;
    assert!(bad.file.faults.validate().is_err());
}

/// Slowness belongs to nodes: the same nodes are slow whatever the policy does, every pod
/// placed on one straggles, and a pod elsewhere does not.
#[test]
fn stragglers_are_the_pods_on_slow_nodes() {
    let spec = JobSpec {
        worker_cpu: 30.0,
        ps_cpu: 30.0,
        ..job(8, 4)
    };
    let mut s = scenario(
        spec,
        FaultConfig {
            slow_node_fraction: 0.5,
            straggler_cpu_ratio: 0.25,
            ..no_faults()
        },
        no_checkpoints(),
    );
    // Twelve 32-core nodes: one 30-core pod each.
    s.nodes = (0..12)
        .map(|k| {
            Node::new(
                format!("n{k}"),
                Resources::new(32.0, 1 << 20, 0),
                String::new(),
            )
        })
        .collect();
    let slow_of = |policy: &str| {
        let out = dlsim_model::run(&s, dlsim_policies::build(policy).unwrap());
        let w = &out.world;
        let j = &w.jobs[0];
        let mut by_node = std::collections::BTreeMap::new();
        for &p in j.pods().iter().chain(j.retired_pods()) {
            let pod = &w.pods[p];
            if let Some(n) = pod.node {
                let slow = pod.truth_cpu_factor() < 1.0;
                // Every pod that ever ran on a node agrees on the node's speed.
                assert_eq!(*by_node.entry(n).or_insert(slow), slow, "node {n}");
            }
        }
        by_node
    };
    let a = slow_of("static");
    let b = slow_of("static[sharding=dynamic]");
    assert!(a.values().any(|&x| x) && a.values().any(|&x| !x), "{a:?}");
    for (n, slow) in &a {
        if let Some(other) = b.get(n) {
            assert_eq!(slow, other, "node {n} is slow for every policy alike");
        }
    }
}

/// Slow spells come and go (`slow_spell_h`): the node is slow part of the time, its pods
/// slow down and recover with it, so a long job takes longer than when healthy and less
/// than on a node slow for good; the same spells for every policy (keyed draws).
#[test]
fn slow_spells_slow_a_long_job_part_of_the_time() {
    let spec = JobSpec {
        steps: 2_000_000,
        ..job(4, 2)
    };
    let slow = |fraction: f64, spell_h: f64| FaultConfig {
        slow_node_fraction: fraction,
        slow_spell_h: spell_h,
        straggler_cpu_ratio: 0.25,
        ..no_faults()
    };
    let healthy = jct_s(&scenario(spec.clone(), no_faults(), no_checkpoints()));
    let always = jct_s(&scenario(spec.clone(), slow(1.0, 0.0), no_checkpoints()));
    let spells = scenario(spec, slow(0.5, 0.25), no_checkpoints());
    let part = jct_s(&spells);
    assert!(
        healthy * 1.1 < part && part < always * 0.9,
        "healthy {healthy} < spells {part} < always slow {always}"
    );
    // With half the time slow at a quarter of the speed, the work takes the time that
    // makes the time-average rate the mean of the two: 2k/(k+1) x healthy for a k-fold
    // slowdown, within the randomness of about 90 quarter-hour spells.
    let k = always / healthy;
    let expect = 2.0 * k / (k + 1.0) * healthy;
    assert!(
        (part - expect).abs() < 0.2 * expect,
        "spells {part} vs about {expect}"
    );
    let dynamic = dlsim_model::run(
        &spells,
        dlsim_policies::build("static[sharding=dynamic]").unwrap(),
    );
    let j = &dynamic.world.jobs[0];
    let ended = (j.ended_at().unwrap() - j.request().submit).as_secs_f64();
    assert!(
        (ended - part).abs() < 0.01 * part,
        "one worker per node is one pooled speed: the same spells, the same JCT ({ended} vs {part})"
    );
}

/// `jobs.csv`'s `seen_straggler` is slow training (DLRover-RM Table 4): a worker cut to 3%
/// holds a statically partitioned job to its pace, which the monitor reports, while with
/// dynamic sharding the other seven take its shards and the job trains at 7/8 of its pace.
#[test]
fn a_straggler_is_slow_training_only_where_it_holds_the_job_back() {
    let spec = JobSpec {
        steps: 300_000,
        ..job(8, 2)
    };
    let faults = one_slow_pod(Role::Worker, 3, 0.03);
    let mut s = scenario(spec, faults, no_checkpoints());
    let seen = |s: &dlsim_model::Scenario, policy: &str| {
        let out = dlsim_model::run(s, dlsim_policies::build(policy).unwrap());
        let csv = &out.jobs_csv;
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = header.iter().position(|&h| h == "seen_straggler").unwrap();
        let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        row[col] == "1"
    };
    assert!(
        seen(&s, "static"),
        "static partitioning waits for the slow worker"
    );
    assert!(
        !seen(&s, "static[sharding=dynamic]"),
        "dynamic sharding is not slowed by one slow worker of eight"
    );
    // The hold is the scenario's (`observation.incident_hold_s`): a monitor that waits
    // longer than the job runs never reports it.
    let out = dlsim_model::run(&s, dlsim_policies::build("static").unwrap());
    let jct = out.world.jobs[0].ended_at().unwrap().as_secs_f64();
    s.file.observation.incident_hold_s = jct + 60.0;
    assert!(!seen(&s, "static"), "a {jct} s job, a longer hold");
    s.file.observation.incident_hold_s = jct / 2.0;
    assert!(
        seen(&s, "static"),
        "slow from its start: a hold of half its time sees it"
    );
}

#[test]
fn hot_ps_bounds_the_job_by_its_largest_share() {
    let mut spec = job(8, 2);
    spec.model = ModelKind::WideDeep;
    let faults = FaultConfig {
        hot_ps_prob: 1.0,
        hot_ps_load_factor: 3.0,
        ..no_faults()
    };
    let workers = vec![
        WorkerCond {
            cpu: 16.0,
            cores: 16.0,
            gpus: 0.0
        };
        8
    ];
    let ps = [
        PsCond {
            share: 0.75,
            cores: 16.0,
        },
        PsCond {
            share: 0.25,
            cores: 16.0,
        },
    ];
    let rate = perf::job_perf(
        &dlsim_model::perf::default_params(ModelKind::WideDeep),
        &inputs(&spec),
        &workers,
        &ps,
        false,
    )
    .rate;
    let expect = 20.0 + spec.total_samples() / rate;
    let healthy = jct_s(&scenario(spec.clone(), no_faults(), no_checkpoints()));
    let got = jct_s(&scenario(spec, faults, no_checkpoints()));
    assert_jct(got, expect, "JCT");
    assert!(
        got > healthy * 1.2,
        "W&D is PS-bound: a hot PS hurts ({got} vs {healthy})"
    );
}

#[test]
fn checkpoint_cost_stretches_training_by_its_duty_cycle() {
    let spec = job(4, 2);
    let recovery = RecoveryConfig {
        checkpoint_interval_s: 600.0,
        checkpoint_cost_s: 60.0,
        ..RecoveryConfig::default()
    };
    let rate = perf::throughput(
        &dlsim_model::perf::default_params(ModelKind::Xdeepfm),
        &inputs(&spec),
    ) * 600.0
        / 660.0;
    let expect = 20.0 + spec.total_samples() / rate;
    let got = jct_s(&scenario(spec, no_faults(), recovery));
    assert_jct(got, expect, "JCT");
}

#[test]
fn oom_relaunch_with_more_memory_recovers_and_without_fails_after_the_budget() {
    let mut spec = job(2, 1);
    // PS memory: 2 GB base + 3 x 40 MB dense + embeddings growing 100 MB per million samples,
    // so a 4 GB PS crosses its limit after ~18.3M of the 51.2M samples.
    spec.ps_mem_mb = 4_096;
    spec.emb_mb_per_msample = 100.0;
    let oom_at = (4_096.0 - 2_048.0 - 120.0) / 100.0 * 1e6;
    assert!(oom_at < spec.total_samples());
    let same_mem = RecoveryConfig {
        restart_budget: 2,
        oom_memory_factor: 1.0,
        ..RecoveryConfig::default()
    };
    let out = dlsim_model::run(
        &scenario(spec.clone(), no_faults(), same_mem),
        dlsim_policies::build("static").unwrap(),
    );
    let j = &out.world.jobs[0];
    assert_eq!(j.phase(), JobPhase::Failed);
    assert_eq!(j.fail_reason().map(|r| r.as_str()), Some("oom"));
    assert_eq!(
        j.oom_kills(),
        3,
        "budget 2 = two relaunches, then the third OOM fails the job"
    );
    let doubled = RecoveryConfig {
        restart_budget: 2,
        oom_memory_factor: 2.0,
        ..RecoveryConfig::default()
    };
    let out = dlsim_model::run(
        &scenario(spec, no_faults(), doubled),
        dlsim_policies::build("static").unwrap(),
    );
    let j = &out.world.jobs[0];
    assert_eq!(j.phase(), JobPhase::Completed, "{:?}", j.fail_reason());
    assert_eq!(j.oom_kills(), 1);
    assert_eq!(j.steps_done(), j.spec().steps);
}

#[test]
fn pod_failures_restart_from_checkpoints_and_exhaust_the_budget() {
    let spec = job(16, 4);
    // Pods that fail within minutes: with budget 0 the first failure ends the job.
    let flaky = FaultConfig {
        pod_failure_per_day: 0.999_999,
        ..no_faults()
    };
    let out = dlsim_model::run(
        &scenario(
            spec.clone(),
            flaky.clone(),
            RecoveryConfig {
                restart_budget: 0,
                ..RecoveryConfig::default()
            },
        ),
        dlsim_policies::build("static").unwrap(),
    );
    let j = &out.world.jobs[0];
    assert_eq!(j.fail_reason().map(|r| r.as_str()), Some("pod_failures"));
    assert_eq!(j.pod_failures(), 1);
    // Rare failures with a generous budget: the job completes, later than a healthy one,
    // because each restart loses the progress since the last checkpoint and reloads.
    let rare = FaultConfig {
        pod_failure_per_day: 0.5,
        ..no_faults()
    };
    let recovery = RecoveryConfig {
        restart_budget: 5,
        checkpoint_cost_s: 0.0,
        ..RecoveryConfig::default()
    };
    let healthy = jct_s(&scenario(spec.clone(), no_faults(), recovery.clone()));
    let out = dlsim_model::run(
        &scenario(spec, rare, recovery),
        dlsim_policies::build("static").unwrap(),
    );
    let j = &out.world.jobs[0];
    if j.phase() == JobPhase::Completed {
        let jct = (j.ended_at().unwrap() - j.request().submit).as_secs_f64();
        assert!(
            j.pod_failures() == 0 || jct > healthy,
            "failures cost time: {jct} vs {healthy}"
        );
        assert_eq!(j.steps_done(), j.spec().steps);
    } else {
        assert_eq!(j.fail_reason().map(|r| r.as_str()), Some("pod_failures"));
    }
}

#[test]
fn a_calibration_file_sets_the_truth_of_its_kinds() {
    let dir = crate::support::scratch("calibration-applies");
    let params = ThroughputParams {
        a_grad: 1e-3,
        b_grad: 0.01,
        a_upd: 0.0,
        b_upd: 0.0,
        a_sync: 0.0,
        b_sync: 0.0,
        a_emb: 0.0,
        b_emb: 0.0,
    };
    let cal = serde_json::json!({"format": "dlsim-calibration", "version": 1, "kinds": {"xdeepfm": params}});
    std::fs::write(dir.join("cal.json"), cal.to_string()).unwrap();
    let mut s = scenario(job(4, 2), no_faults(), no_checkpoints());
    let loaded = dlsim_model::scenario::load_calibration(&dir.join("cal.json")).unwrap();
    s.file.truth.params = loaded
        .into_iter()
        .map(|(k, p)| (k, perf::scaled(&p, 2.0)))
        .collect();
    // T = 2 * (1e-3 * 512 / 16' + 0.01) s per step per worker, 4 workers, where 16' is what
    // the pod runtime leaves of the worker's 16 cores (16^2 / 17.5, `perf::runtime_cores`).
    let t = 2.0 * (1e-3 * 512.0 / (16.0 * 16.0 / 17.5) + 0.01);
    let expect = 20.0 + s.jobs[0].total_samples() / (4.0 * 512.0 / t);
    let got = jct_s(&s);
    assert_jct(got, expect, "JCT");
}
