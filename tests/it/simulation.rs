//! Simulation testing: random scenarios (cluster shapes, workloads, placement, seeds)
//! checked against the model's invariants. A failure prints the seed that reproduces it.

use dlsim_engine::RngStreams;
use dlsim_model::cluster::Placement;
use dlsim_model::faults::{FaultConfig, RecoveryConfig};
use dlsim_model::policy::JobPhase;
use dlsim_model::scenario::{
    ClusterSpec, NodeGroup, ObservationSettings, PodSettings, ScenarioFile, TruthSettings,
};
use dlsim_model::{Node, Resources, Scenario};
use dlsim_traces::{generate, GeneratorConfig};
use rand::Rng;

fn random_scenario(seed: u64) -> Scenario {
    let mut rng = RngStreams::new(seed).stream("sim-test");
    let groups = vec![
        NodeGroup {
            count: rng.gen_range(2..30),
            cores: 64.0,
            mem_gb: 256.0,
            gpus: 0,
            gpu_model: String::new(),
            name: "cpu".into(),
        },
        NodeGroup {
            count: rng.gen_range(1..4),
            cores: 96.0,
            mem_gb: 512.0,
            gpus: 8,
            gpu_model: "A100".into(),
            name: "gpu".into(),
        },
    ];
    let nodes: Vec<Node> = groups
        .iter()
        .flat_map(|g| {
            (0..g.count).map(move |i| Node {
                name: format!("{}-{i}", g.name),
                capacity: Resources::new(g.cores, (g.mem_gb * 1024.0) as u64, g.gpus),
                allocated: Resources::ZERO,
                gpu_model: g.gpu_model.clone(),
            })
        })
        .collect();
    let gen = GeneratorConfig {
        days: rng.gen_range(0.02..0.15),
        jobs_per_day: 2_000.0,
        gpu_job_fraction: 0.1,
        ..GeneratorConfig::default()
    };
    let mut jobs = generate(&gen, seed);
    // Keep only jobs that can fit somewhere, as scenario loading would demand.
    jobs.retain(|j| j.worker_cpu <= 64.0 && j.ps_cpu <= 64.0);
    let placement = if rng.gen_bool(0.5) {
        Placement::FirstFit
    } else {
        Placement::BestFit
    };
    let file = ScenarioFile {
        name: format!("random-{seed}"),
        seed,
        trace: None,
        generate: Some(gen),
        cluster: ClusterSpec {
            groups,
            node_list: None,
            placement,
        },
        policy: "static".into(),
        pods: PodSettings::default(),
        observation: ObservationSettings::default(),
        truth: TruthSettings::default(),
        faults: FaultConfig {
            pod_failure_per_day: rng.gen_range(0.0..0.9),
            worker_straggler_prob: rng.gen_range(0.0..0.3),
            ps_straggler_prob: rng.gen_range(0.0..0.3),
            straggler_cpu_ratio: rng.gen_range(0.03..1.0),
            hot_ps_prob: rng.gen_range(0.0..0.5),
            hot_ps_load_factor: rng.gen_range(1.0..5.0),
        },
        recovery: RecoveryConfig {
            restart_budget: rng.gen_range(0..6),
            oom_memory_factor: rng.gen_range(1.0..3.0),
            checkpoint_interval_s: if rng.gen_bool(0.2) {
                0.0
            } else {
                rng.gen_range(60.0..7_200.0)
            },
            checkpoint_cost_s: rng.gen_range(0.0..120.0),
            reload_s: rng.gen_range(0.0..900.0),
        },
        timeline_interval_s: 600,
        horizon_s: if rng.gen_bool(0.3) {
            Some(rng.gen_range(3_600..40_000))
        } else {
            None
        },
    };
    Scenario {
        path: "random.json".into(),
        file,
        nodes,
        jobs,
    }
}

#[test]
fn random_scenarios_keep_every_invariant() {
    for seed in 0..12u64 {
        let scenario = random_scenario(seed);
        let out = dlsim_model::run(&scenario, dlsim_policies::build("static").unwrap());
        let w = &out.world;
        let ctx = format!("reproduce with seed {seed}");
        w.cluster.check_invariants();
        assert_eq!(
            w.cluster.allocated(),
            Resources::ZERO,
            "all resources returned at the end; {ctx}"
        );
        let s = &out.summary;
        assert_eq!(s.jobs_submitted, scenario.jobs.len(), "{ctx}");
        assert_eq!(
            s.jobs_completed + s.jobs_failed,
            s.jobs_submitted,
            "every job accounted for; {ctx}"
        );
        for job in &w.jobs {
            match job.phase {
                JobPhase::Completed => {
                    assert_eq!(
                        job.steps_done(),
                        job.spec.steps,
                        "a completed job trained all its steps; {ctx}"
                    );
                    assert!(
                        job.end.unwrap() >= job.start.unwrap()
                            && job.start.unwrap() >= job.request.submit,
                        "{ctx}"
                    );
                }
                JobPhase::Failed => assert!(job.fail_reason.is_some(), "{ctx}"),
                other => panic!("job {} left in phase {other:?}; {ctx}", job.spec.id),
            }
            assert!(job.steps_done() <= job.spec.steps, "{ctx}");
            assert!(
                job.usage.cpu_used_core_s <= job.usage.cpu_alloc_core_s * (1.0 + 1e-9),
                "used <= allocated; {ctx}"
            );
        }
        for row in &w.timeline {
            assert!(
                row.cpu_alloc <= w.cluster.capacity().cpu_cores() + 1e-9,
                "{ctx}"
            );
            assert!(row.cpu_used <= row.cpu_alloc + 1e-6, "{ctx}");
        }
        if scenario.file.horizon_s.is_none() {
            assert_eq!(
                s.failures_by_reason.get("unfinished"),
                None,
                "without a horizon every job ends; {ctx}"
            );
        }
    }
}
