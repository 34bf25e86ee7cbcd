//! DLRover-RM (issue #5) end to end on one-job scenarios with exact observations: from a
//! cold start it reaches the best static configuration's throughput quickly (the paper's
//! cold-start experiment, Fig. 10), and a pre-loaded history gives a new job its warm
//! start from the first submission.

use crate::faults::{job, no_faults, scenario};
use crate::support::scratch;
use dlsim_engine::SimTime;
use dlsim_model::faults::RecoveryConfig;
use dlsim_model::perf::{self, PerfInputs};
use dlsim_model::policy::{Action, ClusterView, JobConfig, JobView, Policy, Sharding};
use dlsim_traces::{JobSpec, ModelKind};
use std::sync::{Arc, Mutex};

/// What a wrapped policy did and saw: its launches and the job's observed throughput.
#[derive(Default)]
struct Log {
    launches: Vec<JobConfig>,
    /// (time, steps/s, configuration) of each profile sample the policy was shown.
    samples: Vec<(SimTime, f64, JobConfig)>,
}

/// Delegates every decision to `inner` and records it (a test probe, not a policy).
struct Recorder {
    inner: Box<dyn Policy>,
    log: Arc<Mutex<Log>>,
}

impl Policy for Recorder {
    fn spec(&self) -> String {
        self.inner.spec()
    }
    fn sharding(&self) -> Sharding {
        self.inner.sharding()
    }
    fn observes_pods(&self) -> bool {
        self.inner.observes_pods()
    }
    fn tick_interval(&self) -> Option<SimTime> {
        self.inner.tick_interval()
    }
    fn on_submit(&mut self, job: &JobView<'_>, view: &ClusterView<'_>) -> Vec<Action> {
        let actions = self.inner.on_submit(job, view);
        for a in &actions {
            if let Action::Launch { config, .. } = a {
                self.log.lock().unwrap().launches.push(*config);
            }
        }
        actions
    }
    fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<Action> {
        let mut log = self.log.lock().unwrap();
        for j in view.jobs.iter() {
            for s in j.history {
                if log.samples.last().is_none_or(|l| s.time > l.0) {
                    log.samples.push((s.time, s.steps_per_s, j.config));
                }
            }
        }
        drop(log);
        self.inner.on_tick(view)
    }
}

fn record(spec: JobSpec, policy: &str) -> Log {
    let mut s = scenario(spec, no_faults(), RecoveryConfig::default());
    s.file.horizon_s = Some(1_800);
    // The job master reports a profile every minute.
    s.file.timeline_interval_s = 60;
    let log = Arc::new(Mutex::new(Log::default()));
    let recorder = Recorder {
        inner: dlsim_policies::build(policy).unwrap(),
        log: log.clone(),
    };
    dlsim_model::run(&s, Box::new(recorder));
    Arc::try_unwrap(log).ok().unwrap().into_inner().unwrap()
}

/// The truth model's steps/s for `spec` run as `c`.
fn steps_per_s(spec: &JobSpec, c: &JobConfig) -> f64 {
    let x = PerfInputs {
        workers: f64::from(c.workers),
        ps: f64::from(c.ps),
        worker_cores: c.worker_cpu,
        ps_cores: c.ps_cpu,
        batch: f64::from(spec.batch_size),
        dense_mb: spec.dense_mb,
        bandwidth_mb_s: 1_250.0,
        emb_dim: f64::from(spec.emb_dim),
        physics: Default::default(),
    };
    perf::throughput(&perf::default_params(spec.model), &x) / f64::from(spec.batch_size)
}

/// Memory and GPUs do not enter the throughput model.
const ZERO: JobConfig = JobConfig {
    workers: 0,
    ps: 0,
    worker_cpu: 0.0,
    worker_mem_mb: 0,
    worker_gpu: 0,
    ps_cpu: 0.0,
    ps_mem_mb: 0,
};

/// A user's poor first guess at a Wide&Deep job: 2 small workers and 1 small PS.
fn cold_wide_deep() -> JobSpec {
    JobSpec {
        model: ModelKind::WideDeep,
        worker_cpu: 4.0,
        worker_mem_mb: 8_192,
        ps_cpu: 4.0,
        ps_mem_mb: 8_192,
        steps: 50_000_000,
        ..job(2, 1)
    }
}

#[test]
fn cold_start_reaches_the_best_static_throughput_within_15_minutes() {
    let spec = cold_wide_deep();
    // DLRover may grow a job to `quota` (4) times its requested cores: the best static
    // configuration is searched over the same space (counts, per-pod CPU options) and
    // within the same budget, by the truth model.
    let budget = 4.0 * (2.0 * 4.0 + 4.0);
    let cpus = [1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0];
    let mut best = (0.0, None);
    for workers in 1..=64u32 {
        for ps in 1..=16u32 {
            for &worker_cpu in &cpus {
                for &ps_cpu in &cpus {
                    let cores = f64::from(workers) * worker_cpu + f64::from(ps) * ps_cpu;
                    if cores > budget {
                        continue;
                    }
                    let c = JobConfig {
                        workers,
                        ps,
                        worker_cpu,
                        ps_cpu,
                        ..ZERO
                    };
                    let r = steps_per_s(&spec, &c);
                    if r > best.0 {
                        best = (r, Some(c));
                    }
                }
            }
        }
    }
    let (best_rate, best_config) = best;
    let start_rate = steps_per_s(
        &spec,
        &JobConfig {
            workers: 2,
            ps: 1,
            worker_cpu: 4.0,
            ps_cpu: 4.0,
            ..ZERO
        },
    );
    assert!(
        start_rate < 0.5 * best_rate,
        "the request must be a poor start"
    );
    // The default search (coordinate ascent) gets within 10% of the best; the exhaustive
    // front within 15%: it trusts the fitted Eq. 1-6 model more, which cannot tell a PS's
    // update work from its serving of lookups in the utilisation its prior reads (both are
    // PS CPU), so it settles where the model's optimum lies (86% of the best, measured
    // 2026-11-26). Neither draws random numbers, so this does not hang on a seed's luck.
    for (policy, within) in [
        ("dlrover[warm_start=off,interval_s=180]", 0.9),
        ("dlrover[warm_start=off,interval_s=180,search=exact]", 0.85),
    ] {
        let log = record(spec.clone(), policy);
        let reached = log
            .samples
            .iter()
            .find(|s| s.1 >= within * best_rate)
            .unwrap_or_else(|| {
                panic!(
                    "{policy}: never within {within} of the best static {best_rate:.1} steps/s ({best_config:?}): {:?}",
                    log.samples.iter().map(|s| (s.0.as_secs_f64(), s.1, s.2.workers, s.2.ps, s.2.worker_cpu, s.2.ps_cpu)).collect::<Vec<_>>()
                )
            });
        assert!(
            reached.0 <= SimTime::from_secs(15 * 60),
            "{policy}: within {within} of the best static {best_rate:.1} steps/s only at {:.0} s ({:?})",
            reached.0.as_secs_f64(),
            reached.2
        );
        eprintln!(
            "{policy}: best static {best_rate:.1} steps/s {best_config:?}; start {start_rate:.1}; reached {:.1} at {:.0} s with {:?}",
            reached.1,
            reached.0.as_secs_f64(),
            reached.2
        );
    }
}

/// A warm-start history (`jobs.csv` columns) with one completed Wide&Deep job of 132 cores.
const WIDE_DEEP_HISTORY: &str = "id,user,model,status,workers,ps,worker_cpu,worker_mem_mb,worker_gpu,ps_cpu,ps_mem_mb,steps,batch_size,dense_mb,emb_dim\n\
     7,u,wide_deep,completed,12,3,8,8192,0,12,16384,50000000,512,40,16\n";

#[test]
fn a_preloaded_history_warm_starts_the_first_job() {
    let dir = scratch("dlrover-history");
    let history = dir.join("jobs.csv");
    std::fs::write(
        &history,
        format!(
            "{WIDE_DEEP_HISTORY}8,u,xdeepfm,completed,40,2,16,8192,0,4,16384,50000000,512,40,16\n"
        ),
    )
    .unwrap();
    let spec = cold_wide_deep();
    let warm = record(
        spec.clone(),
        &format!("dlrover[history={}]", history.display()),
    );
    // The only Wide&Deep entry is the top-1: its configuration, memory floored at the
    // request's. It holds 132 cores against the job's quota of 4 x 12: a warm start is not
    // capped by the quota (ARCHITECTURE.md, "DLRover-RM").
    let c = warm.launches[0];
    assert_eq!(
        (c.workers, c.ps, c.worker_cpu, c.ps_cpu),
        (12, 3, 8.0, 12.0)
    );
    assert_eq!(c.ps_mem_mb, 16_384);
    // Without history the same job starts cold, from its request.
    let cold = record(spec, "dlrover");
    let r = cold.launches[0];
    assert_eq!((r.workers, r.ps, r.worker_cpu, r.ps_cpu), (2, 1, 4.0, 4.0));
}

/// A warm start asks for more than the user only from capacity the cluster can give now
/// (free, less pending pods and a 10% reserve, the greedy's budget): of two jobs arriving
/// together on a 160-core node, the first copies the 132-core history entry and the second,
/// which would not fit beside it, starts as its user asked.
#[test]
fn a_warm_start_beyond_the_request_needs_free_capacity() {
    let dir = scratch("dlrover-history-admit");
    let history = dir.join("jobs.csv");
    std::fs::write(&history, WIDE_DEEP_HISTORY).unwrap();
    let first = cold_wide_deep();
    let second = JobSpec {
        id: 1,
        ..first.clone()
    };
    let mut s = scenario(first, no_faults(), RecoveryConfig::default());
    s.jobs = vec![s.jobs[0].clone(), second].into();
    s.nodes = vec![dlsim_model::Node::new(
        "n0".into(),
        dlsim_model::Resources::new(160.0, 4 << 20, 0),
        String::new(),
    )];
    s.file.horizon_s = Some(600);
    let log = Arc::new(Mutex::new(Log::default()));
    let recorder = Recorder {
        inner: dlsim_policies::build(&format!("dlrover[history={}]", history.display())).unwrap(),
        log: log.clone(),
    };
    dlsim_model::run(&s, Box::new(recorder));
    let launches = log.lock().unwrap().launches.clone();
    let shape = |c: &JobConfig| (c.workers, c.ps, c.worker_cpu, c.ps_cpu);
    assert_eq!(
        shape(&launches[0]),
        (12, 3, 8.0, 12.0),
        "the history's config"
    );
    assert_eq!(shape(&launches[1]), (2, 1, 4.0, 4.0), "the user's request");
}

/// `managed_share`: the jobs left out of the policy's care run as their users configured
/// them (request, static sharding, no rescale), the policy never sees them (no launch, no
/// view at a tick), an action on one is rejected, and which jobs they are does not depend
/// on the policy.
#[test]
fn unmanaged_jobs_run_as_requested_and_the_policy_never_sees_them() {
    use dlsim_model::scenario::Scenario;
    use std::collections::BTreeSet;

    /// Records every job id the policy is shown, and tries to rescale every job id.
    struct Peek {
        inner: Box<dyn Policy>,
        seen: Arc<Mutex<BTreeSet<u64>>>,
        ids: Vec<u64>,
        tried: bool,
    }
    impl Policy for Peek {
        fn spec(&self) -> String {
            self.inner.spec()
        }
        fn sharding(&self) -> Sharding {
            self.inner.sharding()
        }
        fn tick_interval(&self) -> Option<SimTime> {
            self.inner.tick_interval()
        }
        fn on_submit(&mut self, job: &JobView<'_>, view: &ClusterView<'_>) -> Vec<Action> {
            self.seen.lock().unwrap().insert(job.request.id);
            self.inner.on_submit(job, view)
        }
        fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<Action> {
            let mut seen = self.seen.lock().unwrap();
            seen.extend(view.jobs.iter().map(|j| j.request.id));
            seen.extend(view.changed.iter().copied());
            seen.extend(view.ended.iter().map(|e| e.id));
            drop(seen);
            let mut actions = self.inner.on_tick(view);
            if !self.tried && view.now >= SimTime::from_secs(7_200) {
                // Guessing ids it was never shown: the world must refuse those.
                self.tried = true;
                actions.extend(
                    self.ids
                        .iter()
                        .map(|&job| Action::ScaleWorkers { job, workers: 1 }),
                );
            }
            actions
        }
    }

    let path = crate::support::repo().join("scenarios/quickstart.json");
    let mut s = Scenario::load(&path).unwrap();
    s.keep_ended = true;
    s.file.managed_share = 0.6;
    let ids: Vec<u64> = s.jobs.iter().map(|j| j.id).collect();
    let run = |policy: &str| {
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let peek = Peek {
            inner: dlsim_policies::build(policy).unwrap(),
            seen: seen.clone(),
            ids: ids.clone(),
            tried: false,
        };
        let out = dlsim_model::run(&s, Box::new(peek));
        let seen = seen.lock().unwrap().clone();
        (out, seen)
    };
    let (out, seen) = run("dlrover");
    let jobs = &out.world.jobs;
    let unmanaged: BTreeSet<u64> = (0..jobs.len())
        .filter(|&j| jobs[j].unmanaged())
        .map(|j| jobs[j].request().id)
        .collect();
    let share = unmanaged.len() as f64 / ids.len() as f64;
    assert!(
        (0.3..0.5).contains(&share),
        "{share} of jobs unmanaged at 0.6 managed"
    );
    assert!(
        seen.is_disjoint(&unmanaged),
        "the policy saw an unmanaged job"
    );
    assert_eq!(
        seen.len() + unmanaged.len(),
        ids.len(),
        "it saw every managed job"
    );
    let mut dynamic = 0;
    for j in 0..jobs.len() {
        let job = &jobs[j];
        if job.unmanaged() {
            assert_eq!(
                job.launched(),
                Some(job.request().requested),
                "job {}",
                job.request().id
            );
            assert_eq!(job.rescales(), 0);
            assert_eq!(job.sharding(), Sharding::Static);
        } else if job.sharding() == Sharding::Dynamic {
            dynamic += 1;
        }
    }
    assert!(dynamic > 0, "dlrover shards its own jobs dynamically");
    // `jobs.csv` says which jobs were left alone.
    let csv = &out.jobs_csv;
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let (id, managed) = (
        header.iter().position(|&h| h == "id").unwrap(),
        header.iter().position(|&h| h == "managed").unwrap(),
    );
    let left_alone: BTreeSet<u64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[managed] == "0")
        .map(|f| f[id].parse().unwrap())
        .collect();
    assert_eq!(left_alone, unmanaged);
    assert!(out.world.rejected_actions >= unmanaged.len() as u64);
    // The same jobs are left alone under another policy.
    let (other, _) = run("optimus");
    let jobs = &other.world.jobs;
    let again: BTreeSet<u64> = (0..jobs.len())
        .filter(|&j| jobs[j].unmanaged())
        .map(|j| jobs[j].request().id)
        .collect();
    assert_eq!(again, unmanaged);
}
