//! Simulation testing: random scenarios (cluster shapes, workloads, placement, faults,
//! elasticity costs, seeds) run under `static` and under a chaos policy that fires random
//! elastic actions, checked against the model's invariants: no over-allocation, every job
//! accounted for, every shard trained exactly once. A failure prints the seed that
//! reproduces it.

use dlsim_engine::{RngStreams, SimRng, SimTime};
use dlsim_model::cluster::Placement;
use dlsim_model::faults::{
    ColocationAction, ColocationConfig, ElasticityConfig, FaultConfig, RecoveryConfig,
};
use dlsim_model::job::FailReason;
use dlsim_model::policy::{
    Action, ClusterView, JobPhase, JobView, PodPhase, Policy, RescaleMethod, Sharding,
};
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
            (0..g.count).map(move |i| {
                Node::new(
                    format!("{}-{i}", g.name),
                    Resources::new(g.cores, (g.mem_gb * 1024.0) as u64, g.gpus),
                    g.gpu_model.clone(),
                )
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
            slow_node_fraction: rng.gen_range(0.0..0.3),
            straggler_cpu_ratio: rng.gen_range(0.03..1.0),
            slow_pods: {
                let n = rng.gen_range(0..3);
                (0..n)
                    .map(|_| dlsim_model::faults::SlowPod {
                        job: rng.gen_range(0..20),
                        role: if rng.gen_bool(0.5) {
                            dlsim_model::job::Role::Ps
                        } else {
                            dlsim_model::job::Role::Worker
                        },
                        index: rng.gen_range(0..3),
                        cpu_ratio: rng.gen_range(0.03..1.0),
                    })
                    .collect()
            },
            hot_ps_prob: rng.gen_range(0.0..0.5),
            hot_ps_load_factor: rng.gen_range(1.0..5.0),
            node_mtbf_days: if rng.gen_bool(0.5) {
                rng.gen_range(0.5..20.0)
            } else {
                0.0
            },
            node_repair_h: rng.gen_range(0.1..8.0),
            colocation: ColocationConfig {
                node_fraction: if rng.gen_bool(0.5) {
                    rng.gen_range(0.0..1.0)
                } else {
                    0.0
                },
                trough: rng.gen_range(0.0..0.3),
                peak: rng.gen_range(0.3..0.95),
                peak_hour: rng.gen_range(0.0..24.0),
                noise_sigma: rng.gen_range(0.0..0.5),
                update_interval_s: rng.gen_range(60..3_600),
                action: if rng.gen_bool(0.5) {
                    ColocationAction::Evict
                } else {
                    ColocationAction::Throttle
                },
            },
        },
        elasticity: ElasticityConfig {
            seamless_migration: rng.gen_bool(0.7),
            flash_checkpoint: rng.gen_bool(0.5),
            flash_mb_s: rng.gen_range(100.0..50_000.0),
            checkpoint_save_s: rng.gen_bool(0.5).then(|| rng.gen_range(0.0..900.0)),
            storage_mb_s: rng.gen_range(5.0..500.0),
            shard_batches: rng.gen_range(16..512),
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
            reload_s: rng.gen_bool(0.5).then(|| rng.gen_range(0.0..900.0)),
            init_s: rng.gen_range(0.0..300.0),
            pending_timeout_s: if rng.gen_bool(0.5) {
                0.0
            } else {
                rng.gen_range(60.0..7_200.0)
            },
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
        jobs: jobs.into(),
        stream: None,
        keep_ended: true,
        trace_observations: false,
    }
}

/// Fires random elastic actions at random jobs: worker scaling, rescales by either
/// method, and pod replacements, including invalid ones the world must refuse.
struct Chaos {
    rng: SimRng,
    sharding: Sharding,
    interval: SimTime,
}

impl Chaos {
    fn new(seed: u64, sharding: Sharding) -> Self {
        let rng = RngStreams::new(seed).stream("chaos");
        // Drawn from a copy, so the action stream starts where it always did.
        let interval = SimTime::from_secs(rng.clone().gen_range(60..1_800));
        Chaos {
            rng,
            sharding,
            interval,
        }
    }
}

impl Policy for Chaos {
    fn spec(&self) -> String {
        "chaos".into()
    }
    fn sharding(&self) -> Sharding {
        self.sharding
    }
    fn observes_pods(&self) -> bool {
        true
    }
    fn tick_interval(&self) -> Option<SimTime> {
        Some(self.interval)
    }
    fn on_submit(&mut self, job: &JobView<'_>, _view: &ClusterView<'_>) -> Vec<Action> {
        vec![Action::Launch {
            job: job.request.id,
            config: job.request.requested,
        }]
    }
    fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<Action> {
        let mut actions = Vec::new();
        for job in view.jobs.iter() {
            if !self.rng.gen_bool(0.15) {
                continue;
            }
            let id = job.request.id;
            let mut config = job.config;
            match self.rng.gen_range(0..5) {
                0 => actions.push(Action::ScaleWorkers {
                    job: id,
                    workers: self.rng.gen_range(0..2 * config.workers + 2),
                }),
                1 | 2 => {
                    if self.rng.gen_bool(0.5) {
                        config.ps = self.rng.gen_range(0..config.ps + 3).max(config.ps.min(1));
                    }
                    config.ps_cpu = (config.ps_cpu * self.rng.gen_range(0.5..2.0)).max(1.0);
                    config.ps_mem_mb =
                        (config.ps_mem_mb as f64 * self.rng.gen_range(0.7..2.0)) as u64;
                    config.worker_cpu = (config.worker_cpu * self.rng.gen_range(0.5..2.0)).max(1.0);
                    let method = if self.rng.gen_bool(0.5) {
                        RescaleMethod::Migrate
                    } else {
                        RescaleMethod::StopRestart
                    };
                    actions.push(Action::Rescale {
                        job: id,
                        config,
                        method,
                    });
                }
                _ => {
                    let pods: Vec<_> = job.pods.iter().collect();
                    if pods.is_empty() {
                        continue;
                    }
                    let pod = pods[self.rng.gen_range(0..pods.len())];
                    let scale = if pod.phase == PodPhase::Pending {
                        0.5
                    } else {
                        1.5
                    };
                    actions.push(Action::ReplacePod {
                        job: id,
                        pod: pod.id,
                        cpu: (pod.request.cpu_cores() * scale).max(1.0),
                        mem_mb: pod.request.mem_mb,
                    });
                }
            }
        }
        // Now and then an action for a job that does not exist.
        if self.rng.gen_bool(0.05) {
            actions.push(Action::ScaleWorkers {
                job: u64::MAX,
                workers: 3,
            });
        }
        actions
    }
}

#[test]
fn random_scenarios_keep_every_invariant() {
    for seed in 0..16u64 {
        let scenario = random_scenario(seed);
        let policy: Box<dyn Policy> = match seed % 3 {
            0 => dlsim_policies::build("static").unwrap(),
            1 => Box::new(Chaos::new(seed, Sharding::Dynamic)),
            _ => Box::new(Chaos::new(seed, Sharding::Static)),
        };
        let out = dlsim_model::run(&scenario, policy);
        let w = &out.world;
        let ctx = format!("reproduce with seed {seed}");
        // Releasing jobs and pods as they end (what the CLI does) changes no output and
        // leaves nothing held.
        let released = dlsim_model::run(
            &Scenario {
                keep_ended: false,
                ..scenario.clone()
            },
            match seed % 3 {
                0 => dlsim_policies::build("static").unwrap(),
                1 => Box::new(Chaos::new(seed, Sharding::Dynamic)),
                _ => Box::new(Chaos::new(seed, Sharding::Static)),
            },
        );
        assert_eq!(released.summary_json, out.summary_json, "{ctx}");
        assert_eq!(released.jobs_csv, out.jobs_csv, "{ctx}");
        assert_eq!(released.timeline_csv, out.timeline_csv, "{ctx}");
        assert_eq!(
            (released.world.jobs.live(), released.world.pods.live()),
            (0, 0),
            "{ctx}"
        );
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
        for job in w.jobs.iter() {
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
            // A job the horizon cut short ends at the horizon itself, whatever event
            // (or dropped dead timer) came last before it.
            if let (Some(h), Some(FailReason::Unfinished), Some(end)) =
                (scenario.file.horizon_s, job.fail_reason, job.end)
            {
                assert_eq!(end, SimTime::from_secs(h), "{ctx}");
            }
            assert!(job.steps_done() <= job.spec.steps, "{ctx}");
            crate::support::check_ledger(job, &ctx);
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

/// Memory follows the live jobs, not the trace (issue #22): a generated trace ten times
/// longer at the same arrival rate (10,000 vs 100,000 jobs) holds about as many jobs and
/// pods in memory at once, every job still ends in `jobs.csv` and the summary, and nothing
/// is left held at the end.
#[test]
fn memory_follows_live_jobs_not_trace_length() {
    let run = |days: u32| {
        let text = format!(
            r#"{{"name": "mem", "seed": 3, "generate": {{"days": {days}, "jobs_per_day": 2000}},
                "cluster": {{"groups": [
                  {{"name": "cpu", "count": 400, "cores": 64, "mem_gb": 256}},
                  {{"name": "gpu", "count": 10, "cores": 96, "mem_gb": 512, "gpus": 8, "gpu_model": "A100"}}]}},
                "timeline_interval_s": 3600}}"#
        );
        let mut s = Scenario::from_text(std::path::Path::new("mem.json"), &text).unwrap();
        s.keep_ended = false;
        let out = dlsim_model::run(&s, dlsim_policies::build("static").unwrap());
        let n = s.jobs.len();
        assert_eq!(out.summary.jobs_submitted, n);
        assert_eq!(out.jobs_csv.lines().count(), n + 1, "a row per job");
        assert_eq!(out.world.jobs.live(), 0, "every ended job released");
        assert_eq!(out.world.pods.live(), 0, "every pod released");
        (n, out.world.peak_live)
    };
    let (n_small, (jobs_small, pods_small)) = run(5);
    let (n_large, (jobs_large, pods_large)) = run(50);
    assert!(
        n_small >= 9_000 && n_large >= 90_000,
        "{n_small} / {n_large} jobs"
    );
    // Held at once: a small share of the trace, and the same order for both lengths.
    assert!(
        jobs_large * 20 < n_large,
        "{jobs_large} of {n_large} jobs held at once"
    );
    assert!(
        jobs_large <= 2 * jobs_small && pods_large <= 2 * pods_small,
        "peak held: {jobs_small} jobs / {pods_small} pods for {n_small}, \
         {jobs_large} / {pods_large} for {n_large}"
    );
}

/// A trace streamed from its file as jobs arrive (what `dlsim replay` does) replays
/// byte-identically to the same trace held in memory (what sweeps do), event count
/// included, under a policy with ticks and with pod failures filling the queue with
/// timers; a bad record is refused by the streaming load with its line.
#[test]
fn a_streamed_trace_replays_like_one_in_memory() {
    let dir = crate::support::scratch("streamed-trace");
    let cfg = GeneratorConfig {
        days: 1.0,
        jobs_per_day: 800.0,
        ..GeneratorConfig::default()
    };
    let jobs = generate(&cfg, 11);
    let header = dlsim_traces::TraceHeader::new(serde_json::json!({"generator": "test"}));
    dlsim_traces::write_trace(&dir.join("t.jsonl"), &header, &jobs).unwrap();
    let scenario = dir.join("s.json");
    std::fs::write(
        &scenario,
        r#"{"name": "stream", "seed": 5, "trace": "t.jsonl",
            "cluster": {"groups": [
              {"name": "cpu", "count": 120, "cores": 64, "mem_gb": 256},
              {"name": "gpu", "count": 4, "cores": 96, "mem_gb": 512, "gpus": 8, "gpu_model": "A100"}]},
            "faults": {"pod_failure_per_day": 0.5}, "timeline_interval_s": 1800}"#,
    )
    .unwrap();
    for policy in ["static", "dlrover"] {
        let mut held = Scenario::load(&scenario).unwrap();
        let mut streamed = Scenario::load_streaming(&scenario).unwrap();
        assert!(streamed.jobs.is_empty() && streamed.job_count() == jobs.len());
        held.keep_ended = false;
        streamed.keep_ended = false;
        let a = dlsim_model::run(&held, dlsim_policies::build(policy).unwrap());
        let b = dlsim_model::run(&streamed, dlsim_policies::build(policy).unwrap());
        assert_eq!(a.summary_json, b.summary_json, "{policy}");
        assert_eq!(a.jobs_csv, b.jobs_csv, "{policy}");
        assert_eq!(a.timeline_csv, b.timeline_csv, "{policy}");
        assert!(a.summary.pod_failures > 0, "{policy}: faults were drawn");
    }
    // A record that breaks validation is refused at load, naming its line.
    let text = std::fs::read_to_string(dir.join("t.jsonl")).unwrap();
    let broken = text.replacen("\"workers\":", "\"workers\":-", 1);
    std::fs::write(dir.join("t.jsonl"), broken).unwrap();
    let e = Scenario::load_streaming(&scenario).unwrap_err().to_string();
    assert!(e.contains("t.jsonl:2"), "{e}");
}
