//! `dlrover`: DLRover-RM (VLDB'24, seed 001 Sec. 4-5), in three stages, each switchable for
//! ablations: `dlrover[warm_start=off,nsga=off,post=off,rho=2.5,interval_s=180]`.
//!
//! 1. **Warm start** (Alg. 1, Eq. 10). A config DB of completed jobs, filled as the replay
//!    runs. A new job gets the top-k (k = 5) most similar jobs of its model kind (similarity
//!    over user, dataset size, dense model size and embedding dimension), ranked by
//!    similarity and exponentially smoothed with `mu` so the most similar weighs most.
//!    Memory never goes below the user's request (an OOM costs more than a spare GB). Cold
//!    start (nothing similar, or `warm_start=off`): the user's own request.
//! 2. **Auto-scaling** every `interval_s` (default 180 s, the paper's cold-start setting):
//!    - online fit of the alpha/beta model (Eq. 1-6) to the job's noisy profiles by NNLS
//!      on log error (RMSLE), with a weak prior (see below);
//!    - job-level candidates on the Pareto front of (resource cost, -throughput gain),
//!      gain net of scaling overhead (Eq. 7-9), by NSGA-II (`nsga=off`: one-step
//!      neighbours only; `search=exact`: exhaustive front, used to check NSGA-II);
//!    - cluster-level weighted greedy: maximise sum RE x WG, RE = TG / RC, WG =
//!      1 / (remaining samples / throughput + eps)^rho (Eq. 11-14), within free capacity.
//!
//!    Horizontal (counts) and vertical (per-pod CPU) changes; worker-only changes join
//!    seamlessly, anything else migrates (new pods start while old ones train).
//!
//!    Guards against grabbing the cluster (our additions, stated as such): a plan must
//!    keep a marginal efficiency (gain per extra core) of at least `min_eff` (default 0.5)
//!    of the job's current throughput per core, a job's cores stay within `quota` (default
//!    4) times its request, 10% of the cluster is kept free for arrivals, and a job whose
//!    last plan changed nothing is re-planned less often (up to every 4 intervals).
//! 3. **Instability handling** (`post=off` disables): dynamic sharding (always on: slow
//!    workers take fewer shards, failed workers return theirs); a hot PS (CPU >= 90% of its
//!    request and 1.5x the median PS) is migrated to a PS with twice the CPU; OOM
//!    prediction: PS memory growth is extrapolated and memory raised before the limit;
//!    after an OOM kill the role's memory is doubled.
//!
//! Simplifications (also in ARCHITECTURE.md):
//! - The fit has a weak prior: with few distinct configurations NNLS on five unknowns is
//!   underdetermined, so four pseudo-observations from an "equal split" model (each of
//!   the four parts takes a quarter of the first observed iteration) are added; real
//!   samples outnumber them within a few intervals.
//! - The network bandwidth in the model's features is the cluster's nominal 1,250 MB/s
//!   (a real master knows its network spec); per-pod CPU is the request (stragglers show
//!   up only through lower observed throughput).
//! - Overhead (Eq. 8) is estimated as a fixed 30 s of lost training for a migration and
//!   none for adding workers; resource cost (Eq. 7) prices 1 core = 4 GB of memory.
//! - The config DB is not pre-loaded from a history file.

use crate::nsga2;
use crate::spec::{PolicySpec, SpecError};
use dlsim_engine::{RngStreams, SimRng, SimTime};
use dlsim_fit::{Config, ThroughputParams};
use dlsim_model::job::Role;
use dlsim_model::policy::{
    Action, ClusterView, JobConfig, JobPhase, JobView, OomRelaunch, PodEventKind, Policy,
    RescaleMethod, Sharding,
};
use dlsim_traces::ModelKind;
use std::collections::BTreeMap;

const CPU_OPTIONS: [f64; 9] = [1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0];
const MAX_WORKERS: u32 = 64;
const MAX_PS: u32 = 16;
const BANDWIDTH_MB_S: f64 = 1_250.0;
const TOP_K: usize = 5;
const MIGRATION_OVERHEAD_S: f64 = 30.0;
const MB_PER_CORE_PRICE: f64 = 4_096.0;
const DB_LIMIT: usize = 5_000;

#[derive(Clone, Debug)]
struct DbEntry {
    model: ModelKind,
    user: String,
    samples: f64,
    dense_mb: f64,
    emb_dim: u32,
    config: JobConfig,
}

#[derive(Clone, Debug, Default)]
struct Tracked {
    /// (w, p, worker cores, ps cores) -> observed throughputs, samples/s.
    obs: Vec<(Config, f64)>,
    last_sample: Option<SimTime>,
    last_action: Option<SimTime>,
    /// Samples seen since the last plan.
    fresh: usize,
    /// Consecutive plans that changed nothing (back-off).
    idle_plans: usize,
    oom_seen: usize,
    progress: f64,
    entry: Option<DbEntry>,
}

pub struct Dlrover {
    warm_start: bool,
    nsga: bool,
    exact: bool,
    post: bool,
    rho: f64,
    mu: f64,
    interval_s: u64,
    min_eff: f64,
    quota: f64,
    db: Vec<DbEntry>,
    jobs: BTreeMap<u64, Tracked>,
    rng: SimRng,
    spec: String,
}

impl Dlrover {
    pub fn from_spec(spec: &PolicySpec) -> Result<Self, SpecError> {
        spec.only(&[
            "warm_start",
            "nsga",
            "post",
            "rho",
            "mu",
            "interval_s",
            "search",
            "seed",
            "min_eff",
            "quota",
        ])?;
        let bad = |key: &str, why: &str| SpecError::BadValue {
            policy: spec.name.clone(),
            key: key.into(),
            value: spec.params.get(key).cloned().unwrap_or_default(),
            why: why.into(),
        };
        let interval_s = spec.f64_or("interval_s", 180.0)?;
        if interval_s.is_nan() || interval_s < 1.0 {
            return Err(bad("interval_s", "must be >= 1"));
        }
        let mu = spec.f64_or("mu", 0.5)?;
        if !(mu > 0.0 && mu < 1.0) {
            return Err(bad("mu", "must be in (0, 1)"));
        }
        let exact = match spec.params.get("search").map(String::as_str) {
            None | Some("nsga") => false,
            Some("exact") => true,
            Some(_) => return Err(bad("search", "expected nsga or exact")),
        };
        let seed = spec.f64_or("seed", 7.0)? as u64;
        Ok(Dlrover {
            warm_start: spec.bool_or("warm_start", true)?,
            nsga: spec.bool_or("nsga", true)?,
            exact,
            post: spec.bool_or("post", true)?,
            rho: spec.f64_or("rho", 2.5)?,
            mu,
            interval_s: interval_s as u64,
            min_eff: spec.f64_or("min_eff", 0.5)?,
            quota: spec.f64_or("quota", 4.0)?,
            db: Vec::new(),
            jobs: BTreeMap::new(),
            rng: RngStreams::new(seed).stream("dlrover-nsga"),
            spec: spec.canonical(),
        })
    }

    /// Alg. 1: the smoothed configuration of the top-k similar completed jobs.
    fn warm_config(&self, job: &JobView<'_>) -> Option<JobConfig> {
        let r = job.request;
        let samples = r.steps as f64 * f64::from(r.batch_size);
        let closeness = |a: f64, b: f64| (-(a.max(1e-9) / b.max(1e-9)).ln().abs()).exp();
        let mut scored: Vec<(f64, usize)> = self
            .db
            .iter()
            .enumerate()
            .filter(|(_, e)| e.model == r.model && (e.config.ps == 0) == (r.requested.ps == 0))
            .map(|(i, e)| {
                let s = f64::from(u8::from(e.user == r.user))
                    + closeness(e.samples, samples)
                    + closeness(e.dense_mb, r.dense_mb)
                    + closeness(f64::from(e.emb_dim), f64::from(r.emb_dim));
                (s, i)
            })
            .collect();
        if scored.is_empty() {
            return None;
        }
        // Most similar last (A_{k-1}), ties by recency.
        scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let top: Vec<&JobConfig> = scored
            .iter()
            .rev()
            .take(TOP_K)
            .rev()
            .map(|&(_, i)| &self.db[i].config)
            .collect();
        let v = |c: &JobConfig| {
            [
                f64::from(c.workers),
                f64::from(c.ps),
                c.worker_cpu,
                c.worker_mem_mb as f64,
                c.ps_cpu,
                c.ps_mem_mb as f64,
            ]
        };
        let mut acc = v(top[0]);
        for c in &top[1..] {
            let x = v(c);
            for k in 0..acc.len() {
                acc[k] = self.mu * x[k] + (1.0 - self.mu) * acc[k];
            }
        }
        let req = r.requested;
        let ps = if req.ps == 0 {
            0
        } else {
            (acc[1].round() as u32).max(1)
        };
        // The user's PS memory, re-split over the warm-start PS count, is the floor.
        let ps_mem_floor = resplit_ps_mem(req.ps_mem_mb as f64, req.ps, ps) as u64;
        Some(JobConfig {
            workers: (acc[0].round() as u32).max(1),
            ps,
            worker_cpu: (acc[2] * 2.0).round().max(1.0) / 2.0,
            worker_mem_mb: (acc[3] as u64).max(req.worker_mem_mb),
            worker_gpu: req.worker_gpu,
            ps_cpu: (acc[4] * 2.0).round().max(1.0) / 2.0,
            ps_mem_mb: (acc[5] as u64).max(ps_mem_floor),
        })
    }

    /// Records what the job's master reports, and fills the DB when a job is gone.
    fn observe(&mut self, view: &ClusterView<'_>) {
        let present: std::collections::BTreeSet<u64> =
            view.jobs.iter().map(|j| j.request.id).collect();
        let gone: Vec<u64> = self
            .jobs
            .keys()
            .copied()
            .filter(|id| !present.contains(id))
            .collect();
        for id in gone {
            let t = self.jobs.remove(&id).expect("listed");
            if let Some(e) = t.entry.filter(|_| t.progress >= 0.95) {
                if self.db.len() >= DB_LIMIT {
                    self.db.remove(0);
                }
                self.db.push(e);
            }
        }
        for job in &view.jobs {
            let t = self.jobs.entry(job.request.id).or_default();
            t.progress = job.steps_done as f64 / (job.request.steps.max(1)) as f64;
            t.entry = Some(DbEntry {
                model: job.request.model,
                user: job.request.user.clone(),
                samples: job.request.steps as f64 * f64::from(job.request.batch_size),
                dense_mb: job.request.dense_mb,
                emb_dim: job.request.emb_dim,
                config: job.config,
            });
            for s in job.history {
                if t.last_sample.is_some_and(|l| s.time <= l) {
                    continue;
                }
                t.last_sample = Some(s.time);
                t.fresh += 1;
                if s.steps_per_s <= 0.0 || s.running_ps == 0 || job.config.ps == 0 {
                    continue;
                }
                let c = fit_config(job, s.running_workers, s.running_ps);
                t.obs
                    .push((c, s.steps_per_s * f64::from(job.request.batch_size)));
                if t.obs.len() > 256 {
                    t.obs.remove(0);
                }
            }
        }
    }
}

/// The model's inputs for a job at a given pod count, as its master knows them.
fn fit_config(job: &JobView<'_>, workers: u32, ps: u32) -> Config {
    Config {
        workers,
        ps,
        worker_cores: job.config.worker_cpu,
        ps_cores: job.config.ps_cpu,
        batch: job.request.batch_size,
        model_mb: job.request.dense_mb,
        bandwidth_mb_s: BANDWIDTH_MB_S,
        emb_dim: job.request.emb_dim,
    }
}

/// A PS process's fixed runtime memory (graph, RPC buffers): what does not shrink when the
/// parameters are split over more PS. A policy-side assumption (2 GB, typical of a
/// TensorFlow PS), not read from the simulator.
const PS_RUNTIME_MB: f64 = 2_048.0;

/// Per-PS memory when `per_ps` MB on each of `from` PS is re-split over `to` PS.
pub fn resplit_ps_mem(per_ps: f64, from: u32, to: u32) -> f64 {
    let variable = (per_ps - PS_RUNTIME_MB).max(0.0) * f64::from(from.max(1));
    PS_RUNTIME_MB + variable / f64::from(to.max(1))
}

/// NNLS/RMSLE fit with the weak equal-split prior (see the module docs).
pub fn fit_model(obs: &[(Config, f64)]) -> Option<ThroughputParams> {
    let (c0, thr0) = *obs.first()?;
    let t0 = f64::from(c0.workers) * f64::from(c0.batch) / thr0;
    let f = c0.features();
    let prior = ThroughputParams {
        a_grad: t0 / 4.0 / f[0],
        a_upd: t0 / 4.0 / f[1],
        a_sync: t0 / 4.0 / f[2].max(1e-12),
        a_emb: t0 / 4.0 / f[3],
        b_grad: 0.0,
        b_upd: 0.0,
        b_sync: 0.0,
        b_emb: 0.0,
    };
    let mut data: Vec<(Config, f64)> = obs.to_vec();
    for (dw, dp, kw, kp) in [
        (2, 1, 1.0, 1.0),
        (1, 2, 1.0, 1.0),
        (1, 1, 2.0, 1.0),
        (1, 1, 1.0, 2.0),
    ] {
        let c = Config {
            workers: c0.workers * dw,
            ps: c0.ps * dp,
            worker_cores: c0.worker_cores * kw,
            ps_cores: c0.ps_cores * kp,
            ..c0
        };
        data.push((c, prior.throughput(&c)));
    }
    ThroughputParams::fit_throughput(&data).ok().or(Some(prior))
}

/// One job's planning problem: genes -> configuration, and the objectives of Eq. 9.
struct Plan<'a> {
    job: &'a JobView<'a>,
    model: ThroughputParams,
    current: JobConfig,
    thr_now: f64,
    remaining: f64,
    max_cpu: f64,
    max_mem: u64,
    ps_mem_used: f64,
}

impl Plan<'_> {
    fn upper(&self) -> [u32; 4] {
        let cpus = CPU_OPTIONS.iter().filter(|&&c| c <= self.max_cpu).count() as u32;
        let gpu = self.current.worker_gpu > 0;
        [
            MAX_WORKERS,
            MAX_PS,
            if gpu { 1 } else { cpus.max(1) },
            cpus.max(1),
        ]
    }

    fn config(&self, g: &[u32; 4]) -> JobConfig {
        let gpu = self.current.worker_gpu > 0;
        let ps = g[1] + 1;
        // The embedding is sharded: PS memory follows the share each PS holds, with
        // headroom over what the fullest PS uses now.
        let now = (self.ps_mem_used * 1.3).max(self.current.ps_mem_mb as f64);
        let ps_mem =
            (resplit_ps_mem(now, self.current.ps, ps).ceil() as u64).clamp(1_024, self.max_mem);
        JobConfig {
            workers: g[0] + 1,
            ps,
            worker_cpu: if gpu {
                self.current.worker_cpu
            } else {
                CPU_OPTIONS[g[2] as usize]
            },
            ps_cpu: CPU_OPTIONS[g[3] as usize],
            ps_mem_mb: ps_mem,
            ..self.current
        }
    }

    fn genes_of(&self, c: &JobConfig) -> [u32; 4] {
        let idx = |x: f64| {
            CPU_OPTIONS
                .iter()
                .position(|&o| o >= x)
                .unwrap_or(CPU_OPTIONS.len() - 1) as u32
        };
        let u = self.upper();
        [
            (c.workers.clamp(1, MAX_WORKERS) - 1),
            (c.ps.clamp(1, MAX_PS) - 1),
            idx(c.worker_cpu).min(u[2] - 1),
            idx(c.ps_cpu).min(u[3] - 1),
        ]
    }

    fn throughput(&self, c: &JobConfig) -> f64 {
        self.model.throughput(&Config {
            workers: c.workers,
            ps: c.ps,
            worker_cores: c.worker_cpu,
            ps_cores: c.ps_cpu,
            ..fit_config(self.job, c.workers, c.ps)
        })
    }

    /// Eq. 7: extra cost in core-equivalents.
    fn cost(&self, c: &JobConfig) -> f64 {
        let t = c.total();
        let n = self.current.total();
        (t.cpu_cores() - n.cpu_cores()) + (t.mem_mb as f64 - n.mem_mb as f64) / MB_PER_CORE_PRICE
    }

    /// Eq. 8: throughput gain net of the scaling overhead over the remaining run.
    fn gain(&self, c: &JobConfig) -> f64 {
        let thr = self.throughput(c);
        let worker_only = JobConfig {
            workers: self.current.workers,
            ..*c
        } == self.current;
        let overhead_s = if worker_only {
            0.0
        } else {
            MIGRATION_OVERHEAD_S
        };
        let remaining_s = (self.remaining / thr.max(1e-9)).max(1.0);
        thr - self.thr_now - thr * (overhead_s / remaining_s).min(1.0)
    }

    fn objectives(&self, g: &[u32; 4]) -> nsga2::Objectives {
        let c = self.config(g);
        [self.cost(&c), -self.gain(&c)]
    }
}

impl Policy for Dlrover {
    fn spec(&self) -> String {
        self.spec.clone()
    }

    fn sharding(&self) -> Sharding {
        Sharding::Dynamic
    }

    fn observes_pods(&self) -> bool {
        self.post
    }

    /// Stage 3: a pod killed for memory comes back with twice as much (with `post=off`,
    /// the scenario's plain relaunch rule applies).
    fn on_oom(&mut self, _job: u64, _role: Role, mem_mb: u64) -> OomRelaunch {
        if self.post {
            OomRelaunch::WithMemory(mem_mb.saturating_mul(2))
        } else {
            OomRelaunch::Default
        }
    }

    fn tick_interval(&self) -> Option<SimTime> {
        Some(SimTime::from_secs(self.interval_s))
    }

    fn on_submit(&mut self, job: &JobView<'_>, _view: &ClusterView<'_>) -> Vec<Action> {
        let config = if self.warm_start {
            self.warm_config(job).unwrap_or(job.request.requested)
        } else {
            job.request.requested
        };
        vec![Action::Launch {
            job: job.request.id,
            config,
        }]
    }

    fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<Action> {
        self.observe(view);
        let max_cpu = view
            .nodes
            .iter()
            .map(|n| n.capacity.cpu_cores())
            .fold(0.0, f64::max);
        let max_mem = view
            .nodes
            .iter()
            .map(|n| n.capacity.mem_mb)
            .max()
            .unwrap_or(0);
        let mut actions = Vec::new();
        let mut busy = std::collections::BTreeSet::new();
        if self.post {
            for job in &view.jobs {
                if let Some(a) = self.post_scale(job, max_cpu, max_mem) {
                    busy.insert(job.request.id);
                    actions.push(a);
                }
            }
        }
        // Free capacity: what nodes can still place, minus what pending pods will take.
        let mut free_cpu: f64 = view.nodes.iter().map(|n| n.free().cpu_cores()).sum();
        let mut free_mem: f64 = view.nodes.iter().map(|n| n.free().mem_mb as f64).sum();
        for job in &view.jobs {
            let pending = f64::from(job.pending_pods);
            free_cpu -= pending * job.config.worker_cpu.max(job.config.ps_cpu);
            free_mem -= pending * job.config.worker_mem_mb.max(job.config.ps_mem_mb) as f64;
        }
        free_cpu -= 0.1 * view.capacity.cpu_cores();
        free_mem -= 0.1 * view.capacity.mem_mb as f64;
        let mut planned = Vec::new();
        // Stage 2: candidates per job, then the weighted greedy across jobs (Eq. 11-14).
        let mut cands: Vec<(f64, u64, JobConfig, f64, f64)> = Vec::new();
        for job in &view.jobs {
            let id = job.request.id;
            if busy.contains(&id) || job.phase != JobPhase::Training || job.rescaling {
                continue;
            }
            if job.config.ps == 0 || job.pending_pods > 0 {
                continue;
            }
            let t = &self.jobs[&id];
            let settled = t
                .last_action
                .is_none_or(|a| view.now - a >= SimTime::from_secs(self.interval_s));
            let wait = 2 * (1 + t.idle_plans.min(3));
            if t.fresh < wait || !settled || t.obs.is_empty() {
                continue;
            }
            planned.push(id);
            let Some(model) = fit_model(&t.obs) else {
                continue;
            };
            let thr_now = t.obs.iter().rev().take(3).map(|o| o.1).sum::<f64>()
                / t.obs.iter().rev().take(3).count() as f64;
            let remaining = (job.request.steps.saturating_sub(job.steps_done)) as f64
                * f64::from(job.request.batch_size);
            let ps_mem_used = job.history.last().map_or(0.0, |s| s.ps_mem_used_mb_max);
            let plan = Plan {
                job,
                model,
                current: job.config,
                thr_now: model
                    .throughput(&fit_config(job, job.running_workers, job.running_ps))
                    .min(thr_now.max(1e-9) * 10.0),
                remaining,
                max_cpu,
                max_mem,
                ps_mem_used,
            };
            let cores_now = job.config.total().cpu_cores().max(1.0);
            let quota = self.quota * job.request.requested.total().cpu_cores().max(4.0);
            for (g, f) in self.candidates(&plan) {
                let (cost, gain) = (f[0], -f[1]);
                if gain <= 0.02 * plan.thr_now {
                    continue;
                }
                // Diminishing returns: each extra core must still pay a fair share.
                if cost > 0.0 && gain / cost < self.min_eff * plan.thr_now / cores_now {
                    continue;
                }
                let c = plan.config(&g);
                if c.total().cpu_cores() > quota.max(cores_now) {
                    continue;
                }
                let re = gain / cost.max(1.0);
                let thr = plan.throughput(&c);
                let wg = 1.0 / (remaining / thr.max(1e-9) + 1e-6).powf(self.rho);
                let extra = c.total();
                let now = job.config.total();
                let d_cpu = extra.cpu_cores() - now.cpu_cores();
                let d_mem = extra.mem_mb as f64 - now.mem_mb as f64;
                cands.push((re * wg, id, c, d_cpu, d_mem));
            }
        }
        cands.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, id, c, d_cpu, d_mem) in cands {
            if busy.contains(&id) || d_cpu > free_cpu.max(0.0) || d_mem > free_mem.max(0.0) {
                continue;
            }
            free_cpu -= d_cpu;
            free_mem -= d_mem;
            busy.insert(id);
            let job = view
                .jobs
                .iter()
                .find(|j| j.request.id == id)
                .expect("planned");
            let worker_only = JobConfig {
                workers: job.config.workers,
                ..c
            } == job.config;
            actions.push(if worker_only {
                Action::ScaleWorkers {
                    job: id,
                    workers: c.workers,
                }
            } else {
                Action::Rescale {
                    job: id,
                    config: c,
                    method: RescaleMethod::Migrate,
                }
            });
        }
        for id in planned {
            let t = self.jobs.get_mut(&id).expect("tracked");
            t.fresh = 0;
            t.idle_plans = if busy.contains(&id) {
                0
            } else {
                t.idle_plans + 1
            };
        }
        for id in busy {
            let t = self.jobs.get_mut(&id).expect("tracked");
            t.last_action = Some(view.now);
            t.fresh = 0;
        }
        actions
    }
}

impl Dlrover {
    /// Pareto candidates for one job: NSGA-II, the exact front, or one-step neighbours.
    fn candidates(&mut self, plan: &Plan<'_>) -> Vec<nsga2::Scored<4>> {
        let upper = plan.upper();
        let start = plan.genes_of(&plan.current);
        let mut eval = |g: &[u32; 4]| plan.objectives(g);
        if self.exact {
            return nsga2::exhaustive(&upper, &mut eval);
        }
        if self.nsga {
            return nsga2::run(
                &upper,
                &[start],
                &mut eval,
                nsga2::Settings::default(),
                &mut self.rng,
            );
        }
        let mut out = Vec::new();
        for (k, &u) in upper.iter().enumerate() {
            for step in [-1i64, 1] {
                let mut g = start;
                let v = i64::from(g[k]) + step;
                if v >= 0 && v < i64::from(u) {
                    g[k] = v as u32;
                    let f = eval(&g);
                    out.push((g, f));
                }
            }
        }
        out
    }

    /// Stage 3 for one job: OOM follow-up, OOM prediction, hot PS. At most one action.
    fn post_scale(&mut self, job: &JobView<'_>, max_cpu: f64, max_mem: u64) -> Option<Action> {
        if job.rescaling || !matches!(job.phase, JobPhase::Training | JobPhase::Starting) {
            return None;
        }
        let id = job.request.id;
        let t = self.jobs.get_mut(&id)?;
        let ooms: Vec<Role> = job
            .events
            .iter()
            .filter(|e| e.kind == PodEventKind::FailedOom)
            .map(|e| e.role)
            .collect();
        if ooms.len() > t.oom_seen {
            let role = ooms[ooms.len() - 1];
            t.oom_seen = ooms.len();
            let mut c = job.config;
            match role {
                Role::Ps => c.ps_mem_mb = (c.ps_mem_mb * 2).min(max_mem),
                Role::Worker => c.worker_mem_mb = (c.worker_mem_mb * 2).min(max_mem),
            }
            return (c != job.config).then_some(Action::Rescale {
                job: id,
                config: c,
                method: RescaleMethod::Migrate,
            });
        }
        if job.phase != JobPhase::Training {
            return None;
        }
        // OOM prediction: extrapolate the fullest PS's memory over the next intervals.
        let h = job.history;
        if h.len() >= 3 && job.config.ps > 0 {
            let (a, b) = (&h[h.len() - 3], &h[h.len() - 1]);
            let dt = (b.time - a.time).as_secs_f64();
            if dt > 0.0 {
                let slope = (b.ps_mem_used_mb_max - a.ps_mem_used_mb_max) / dt;
                let horizon = 3.0 * self.interval_s as f64 + 300.0;
                let limit = job.config.ps_mem_mb as f64;
                if slope > 0.0 && b.ps_mem_used_mb_max + slope * horizon > 0.9 * limit {
                    let thr = b.steps_per_s.max(1e-9);
                    let left_s = job.request.steps.saturating_sub(job.steps_done) as f64 / thr;
                    let target = (b.ps_mem_used_mb_max + slope * left_s) * 1.15;
                    let mem = (target.max(limit * 1.25).ceil() as u64).min(max_mem);
                    if mem > job.config.ps_mem_mb {
                        return Some(Action::Rescale {
                            job: id,
                            config: JobConfig {
                                ps_mem_mb: mem,
                                ..job.config
                            },
                            method: RescaleMethod::Migrate,
                        });
                    }
                }
            }
        }
        // Hot PS: one PS busy at its limit while the others idle.
        let ps: Vec<(usize, f64, f64)> = job
            .pods
            .iter()
            .filter(|p| p.role == Role::Ps)
            .filter_map(|p| p.last.map(|s| (p.id, s.cpu_used, p.request.cpu_cores())))
            .collect();
        if ps.len() >= 2 {
            let mut loads: Vec<f64> = ps.iter().map(|&(_, u, r)| u / r).collect();
            loads.sort_by(f64::total_cmp);
            let median = loads[loads.len() / 2];
            let &(pod, used, req) = ps
                .iter()
                .max_by(|a, b| (a.1 / a.2).total_cmp(&(b.1 / b.2)))
                .expect("non-empty");
            if used / req >= 0.9 && used / req >= 1.5 * median && req * 2.0 <= max_cpu {
                let mem = job
                    .pods
                    .iter()
                    .find(|p| p.id == pod)
                    .map_or(job.config.ps_mem_mb, |p| p.request.mem_mb);
                return Some(Action::ReplacePod {
                    job: id,
                    pod,
                    cpu: req * 2.0,
                    mem_mb: mem,
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(w: u32, p: u32, lw: f64, lp: f64) -> Config {
        Config {
            workers: w,
            ps: p,
            worker_cores: lw,
            ps_cores: lp,
            batch: 512,
            model_mb: 40.0,
            bandwidth_mb_s: BANDWIDTH_MB_S,
            emb_dim: 16,
        }
    }

    #[test]
    fn nnls_recovers_planted_alphas_from_noisy_samples() {
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
        let mut rng = RngStreams::new(1).stream("noise");
        use rand::Rng;
        let mut obs = Vec::new();
        for w in [2, 4, 8, 16] {
            for p in [1, 2, 4] {
                for (lw, lp) in [(4.0, 8.0), (8.0, 4.0), (16.0, 16.0)] {
                    let c = cfg(w, p, lw, lp);
                    let noise = 1.0 + 0.03 * (rng.gen::<f64>() * 2.0 - 1.0);
                    obs.push((c, truth.throughput(&c) * noise));
                }
            }
        }
        let fit = fit_model(&obs).unwrap();
        for c in [
            cfg(12, 3, 6.0, 12.0),
            cfg(24, 6, 8.0, 8.0),
            cfg(3, 1, 2.0, 4.0),
        ] {
            let (a, b) = (truth.throughput(&c), fit.throughput(&c));
            assert!((a - b).abs() / a < 0.1, "{c:?}: truth {a} fit {b}");
        }
    }

    #[test]
    fn spec_parameters_are_validated() {
        assert!(
            crate::build("dlrover[warm_start=off,nsga=off,post=off,rho=2.5,interval_s=180]")
                .is_ok()
        );
        assert!(crate::build("dlrover[mu=2]").is_err());
        assert!(crate::build("dlrover[search=magic]").is_err());
        assert!(crate::build("dlrover[bogus=1]").is_err());
    }
}
