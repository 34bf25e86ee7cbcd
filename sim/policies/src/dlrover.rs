//! `dlrover`: DLRover-RM (VLDB'24, seed 001 Sec. 4-5), in three stages, each switchable for
//! ablations: `dlrover[warm_start=off,nsga=off,post=off,rho=2.5,interval_s=180]`.
//!
//! 1. **Warm start** (Alg. 1, Eq. 10). A config DB of completed jobs, filled as the replay
//!    runs and optionally pre-loaded from an earlier run's `jobs.csv`
//!    (`dlrover[history=PATH]`). A new job gets the top-k (k = 5) most similar jobs of its model kind (similarity
//!    over user, dataset size, dense model size and embedding dimension), ranked by
//!    similarity and exponentially smoothed with `mu` so the most similar weighs most.
//!    Memory too comes from their final configurations, above or below the request (an
//!    under-estimate is an OOM the post stage relaunches with doubled memory). Cold start
//!    (nothing similar, `warm_start=off`, or a job without PS, which stages 2 and 3 never
//!    manage): the user's own request.
//! 2. **Auto-scaling** every `interval_s` (default 180 s, the paper's cold-start setting):
//!    - online fit of the alpha/beta model (Eq. 1-6) to the job's noisy profiles by NNLS
//!      on log error (RMSLE), with a weak prior (see below);
//!    - job-level candidates on the Pareto front of (resource cost, -throughput gain),
//!      gain net of scaling overhead (Eq. 7-9), among plans within the job's quota.
//!      `search=` picks how the front is searched: `coord` (default), coordinate ascent
//!      on the plan's RE x WG, then the front of the plans it visited that pass the
//!      filters; `nsga`, the paper's NSGA-II (`pop`, `gens`: its budget, default 20 and
//!      12); `exact`, the exhaustive front (slow; the reference). See ARCHITECTURE.md,
//!      "DLRover-RM's search", for why coordinate ascent is the default. `nsga=off` (the
//!      paper's ablation name) searches no front: the one-step neighbours of the current
//!      configuration only;
//!    - cluster-level weighted greedy: maximise sum RE x WG, RE = TG / RC, WG =
//!      1 / (remaining samples / throughput + eps)^rho (Eq. 11-14), within free capacity.
//!
//!    Horizontal (counts) and vertical (per-pod CPU, never below the cores a worker is
//!    seen to use, DLRover Sec. 4.2's `w = w_hat`; worker memory sized to use at a
//!    migration) changes; worker-only changes join seamlessly, anything else migrates
//!    (new pods start while old ones train).
//!
//!    Guards against grabbing the cluster (our additions, stated as such): a plan must
//!    keep a marginal efficiency (gain per extra core) of at least `min_eff` (default 0.5)
//!    of the job's current throughput per core (waived while the job has been seen at
//!    fewer than 4 configurations: the model's gains are then extrapolations, and taking
//!    any predicted gain also teaches the fit), a job's cores stay within `quota`
//!    (default 4) times its request, or within `max_cores` whatever it requested (DLRover's
//!    C_total, for the papers' single-job experiments); a warm start may begin above that
//!    (it copies similar jobs' final configurations; ARCHITECTURE.md says why it is not
//!    capped, but what it asks beyond the request must fit the capacity the greedy would
//!    hand out now, else the job starts as requested: `admits_beyond_request`); 10% of the
//!    cluster is kept free for arrivals, and a job whose last plan changed nothing is
//!    re-planned less often (up to every 4 intervals).
//! 3. **Instability handling** (`post=off` disables): dynamic sharding (always on: slow
//!    workers take fewer shards, failed workers return theirs); a hot PS (CPU >= 90% of its
//!    request and 1.5x the median PS) of the job's PS size has its PS set migrated, which
//!    re-partitions it evenly (DeepRec, [`Partitioning::Balanced`]), and one cut below that
//!    size is replaced by a PS with twice its CPU, at least the job's; OOM
//!    prediction: PS memory growth is extrapolated and memory raised before the limit;
//!    after an OOM kill the role's memory is doubled.
//!
//! Simplifications (also in ARCHITECTURE.md):
//! - The fit has a weak prior: with few distinct configurations NNLS on five unknowns is
//!   underdetermined, so four pseudo-observations are added from a model in which each
//!   part takes a share of the first observed iteration: gradient from worker CPU
//!   utilisation, update from all or half of the PS's (a PS's CPU also serves lookups),
//!   and the rest split between sync and lookups (10% to 80% sync), by the first of
//!   these readings (all of the PS's CPU as update, then the least sync) that explains
//!   the observed throughputs about as well as the best (`plan::choose_split`); real samples
//!   outnumber the prior within a few intervals.
//! - The network bandwidth in the model's features is the cluster's nominal 1,250 MB/s
//!   (a real master knows its network spec); per-pod CPU is the request (stragglers show
//!   up only through lower observed throughput).
//! - Overhead (Eq. 8) is estimated as a fixed 30 s of lost training for a migration and
//!   none for adding workers; resource cost (Eq. 7) prices 1 core = 4 GB of memory.
//!
//! Code map: `dlrover/warm.rs` (stage 1, the config DB), `dlrover/plan.rs` (stage 2 per
//! job: fit and candidates), `dlrover/greedy.rs` (stage 2 across jobs), `dlrover/post.rs`
//! (stage 3); this file keeps the policy's state and the tick that ties them together.

mod greedy;
pub mod plan;
pub(crate) mod post;
mod warm;

pub use greedy::weight;
use greedy::{select, Budget, Candidate};
use plan::Search;
use warm::{ConfigDb, DbEntry};

use crate::nsga2;
use crate::spec::{param, PolicyDoc, PolicySpec, SpecError};
use dlsim_engine::{RngStreams, SimRng, SimTime};
use dlsim_fit::Config;
use dlsim_model::job::Role;
use dlsim_model::policy::{
    Action, ClusterView, JobConfig, JobPhase, JobView, OomRelaunch, Partitioning, Policy, RescaleMethod, Sharding,
};
use plan::{fit_config, fit_model, Plan};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// Until the job has been observed at this many configurations (counting each change of
/// configuration), the model's gains are extrapolations: the efficiency filter is waived,
/// so any predicted gain is taken (and teaches the fit).
const EXPLORE_CONFIGS: usize = 4;

#[derive(Clone, Debug, Default)]
struct Tracked {
    /// Observed (configuration, throughput in samples/s), one per profile, oldest first;
    /// the latest 256.
    obs: Vec<(Config, f64)>,
    last_sample: Option<SimTime>,
    last_action: Option<SimTime>,
    /// Samples seen since the last plan.
    fresh: usize,
    /// Consecutive plans that changed nothing (back-off).
    idle_plans: usize,
    /// When the last OOM kill the policy reacted to happened.
    last_oom: Option<SimTime>,
    /// The first profile's (worker, PS) CPU utilisation.
    util: Option<(f64, f64)>,
    /// How many times the observed configuration has changed (the first counts).
    configs: usize,
    /// The prior's split of an iteration, chosen from `util` and the observations
    /// (`plan::choose_split`) whenever a new configuration is observed ...
    split: [f64; 4],
    /// ... but only when a plan needs it: `Some(n)` says it is due over the first `n`
    /// observations (the list only grows until it is resolved, see `resolve_split`).
    split_due: Option<usize>,
    /// The job's metadata for the config DB (its configuration is filled in at the end).
    entry: Option<DbEntry>,
}

impl Tracked {
    /// The prior's split, if a new configuration has made it due, over exactly the
    /// observations there were then.
    fn due_split(&self) -> Option<[f64; 4]> {
        let (n, util) = (self.split_due?, self.util?);
        Some(plan::choose_split(&self.obs[..n], util))
    }

    /// Takes the split [`Tracked::due_split`] chose (if it was due).
    fn resolve_split(&mut self, split: Option<[f64; 4]>) {
        if let Some(split) = split {
            self.split = split;
        }
        self.split_due = None;
    }
}

/// A plan is worth taking only with a gain worth a rescale, at a marginal efficiency (gain
/// per extra core-equivalent) of at least `min_eff` of the job's current throughput per
/// core. (The quota, [`Cap`] or what the job has now, is a constraint of the search
/// itself: see [`Plan::quota_cores`].)
struct Filters {
    min_gain: f64,
    min_gain_per_cost: f64,
}

impl Filters {
    /// Whether a plan's (cost, -gain) passes the gain and efficiency filters (an
    /// infeasible plan's never does: its gain is hugely negative).
    fn pass(&self, f: &nsga2::Objectives) -> bool {
        let (cost, gain) = (f[0], -f[1]);
        // Diminishing returns: each extra core must still pay a fair share.
        gain > self.min_gain && (cost <= 0.0 || gain / cost >= self.min_gain_per_cost)
    }
}

/// The most CPU cores the search may give a job.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cap {
    /// `quota` times the job's requested cores (at least 4): the production setting.
    Quota(f64),
    /// A fixed budget for every job: DLRover's `C_total` (Sec. 4.1, Eq. 3; 200 cores in its Sec. 6
    /// experiments), which does not move when the job's submitted pods do.
    Cores(f64),
}

pub struct Dlrover {
    warm_start: bool,
    search: Search,
    post: bool,
    rho: f64,
    mu: f64,
    interval_s: u64,
    min_eff: f64,
    cap: Cap,
    /// `pod_cpu=fixed`: plans keep each role's per-pod CPU and change pod counts only.
    fixed_pod_cpu: bool,
    db: ConfigDb,
    /// Every launched job not yet seen to end.
    jobs: BTreeMap<u64, Tracked>,
    /// The jobs the policy acts on: those with PSes (what stages 2 and 3 act on). A job
    /// without PSes is never planned, so the per-tick cost grows with the jobs the policy
    /// can act on, not with every job.
    visit: BTreeSet<u64>,
    /// Of those, the ones the next tick must look at whatever changes (see
    /// [`Dlrover::visits`]): they acted at the last tick, or have the samples for a plan
    /// that something the world does not list as a change (a pending pod placed) blocks.
    watch: BTreeSet<u64>,
    /// The largest node at the last tick: stage 3 sizes its plans by it.
    node_max: Option<dlsim_model::Resources>,
    /// Jobs with an OOM kill since the last tick (`on_oom`).
    oomed: BTreeSet<u64>,
    rng: SimRng,
    spec: String,
}

/// `dlrover`'s parameters (`dlsim policies`).
pub const DOC: PolicyDoc = PolicyDoc {
    name: "dlrover",
    summary: "DLRover-RM: warm start, throughput-model fit + Pareto search, weighted greedy, instability handling",
    params: &[
        param("warm_start", "on/off", "on", "stage 1: start a job from the most similar completed jobs (off: the user's request)"),
        param("nsga", "on/off", "on", "off: search only the one-step neighbours of the current configuration (the paper's ablation)"),
        param("search", "coord|nsga|exact", "coord", "how the Pareto front is searched: coordinate ascent, the paper's NSGA-II, or exhaustive (slow)"),
        param("post", "on/off", "on", "stage 3: hot-PS migration, OOM prediction, memory doubled after an OOM kill"),
        param("rho", "number", "2.5", "greedy weight of nearness to completion: WG = 1 / (remaining time + eps)^rho"),
        param("mu", "number in (0, 1)", "0.5", "warm start: exponential smoothing over the top-k similar jobs"),
        param("interval_s", "number >= 1", "180", "auto-scaling interval (s)"),
        param("seed", "number", "7", "seed of the NSGA-II random stream"),
        param("min_eff", "number", "0.5", "a plan's gain per extra core must reach this share of the job's throughput per core"),
        param("quota", "number > 0", "4", "a job's cores stay within quota x its requested cores"),
        param("max_cores", "number > 0", "-", "a job's cores stay within this many (DLRover's C_total, as `es` and `optimus` take it); replaces quota"),
        param("pod_cpu", "search|fixed", "search", "fixed: keep each role's per-pod CPU as the job launched and search the pod counts only (DLRover Sec. 6.3 sizes its pods by Table 2)"),
        param("history", "path", "-", "pre-load the warm-start database from an earlier run's jobs.csv (default: empty)"),
        param("pop", "number 4..=1000", "20", "NSGA-II population (search=nsga)"),
        param("gens", "number 1..=1000", "12", "NSGA-II generations (search=nsga)"),
    ],
};

/// This policy's registry entry (`crate::POLICIES`): its documentation and its builder.
pub const POLICY: crate::Registered<dyn dlsim_model::policy::Policy> = crate::Registered {
    doc: &DOC,
    build: |spec| Ok(Box::new(Dlrover::from_spec(spec)?)),
};

impl Dlrover {
    pub fn from_spec(spec: &PolicySpec) -> Result<Self, SpecError> {
        spec.only(&DOC.param_names())?;
        let bad = |key: &str, why: &str| spec.bad_value(key, why);
        let interval_s = spec.f64_or("interval_s", 180.0)?;
        if interval_s < 1.0 {
            return Err(bad("interval_s", "must be >= 1"));
        }
        let mu = spec.f64_or("mu", 0.5)?;
        if !(mu > 0.0 && mu < 1.0) {
            return Err(bad("mu", "must be in (0, 1)"));
        }
        let nsga = spec.bool_or("nsga", true)?;
        let defaults = nsga2::Settings::default();
        let pop = spec.f64_or("pop", defaults.population as f64)?;
        if !(4.0..=1_000.0).contains(&pop) {
            return Err(bad("pop", "must be in 4..=1000"));
        }
        let gens = spec.f64_or("gens", defaults.generations as f64)?;
        if !(1.0..=1_000.0).contains(&gens) {
            return Err(bad("gens", "must be in 1..=1000"));
        }
        let settings = nsga2::Settings {
            population: pop as usize,
            generations: gens as usize,
            ..defaults
        };
        let search = match (nsga, spec.params.get("search").map(String::as_str)) {
            (_, Some(s)) if !matches!(s, "coord" | "nsga" | "exact") => {
                return Err(bad("search", "expected coord, nsga or exact"));
            }
            (false, Some(_)) => {
                return Err(bad("search", "nsga=off already means one-step neighbours"));
            }
            (false, None) => Search::Neighbours,
            (true, Some("nsga")) => Search::Nsga(settings),
            (true, None | Some("coord")) => Search::Coordinate,
            (true, _) => Search::Exact,
        };
        let db = match spec.params.get("history") {
            Some(path) => {
                ConfigDb::load(std::path::Path::new(path)).map_err(|e| bad("history", &e))?
            }
            None => ConfigDb::default(),
        };
        let seed = spec.f64_or("seed", 7.0)? as u64;
        let positive = |key: &str, default: f64| match spec.f64_or(key, default)? {
            v if v > 0.0 => Ok(v),
            _ => Err(bad(key, "must be a number > 0")),
        };
        let has = |key: &str| spec.params.contains_key(key);
        let cap = match (has("quota"), has("max_cores")) {
            (true, true) => return Err(bad("max_cores", "give quota or max_cores, not both")),
            (_, true) => Cap::Cores(positive("max_cores", 0.0)?),
            (_, false) => Cap::Quota(positive("quota", 4.0)?),
        };
        let fixed_pod_cpu = match spec.params.get("pod_cpu").map(String::as_str) {
            None | Some("search") => false,
            Some("fixed") => true,
            Some(_) => return Err(bad("pod_cpu", "expected search or fixed")),
        };
        Ok(Dlrover {
            warm_start: spec.bool_or("warm_start", true)?,
            fixed_pod_cpu,
            search,
            post: spec.bool_or("post", true)?,
            rho: spec.f64_or("rho", 2.5)?,
            mu,
            interval_s: interval_s as u64,
            min_eff: spec.f64_or("min_eff", 0.5)?,
            cap,
            db,
            jobs: BTreeMap::new(),
            visit: BTreeSet::new(),
            watch: BTreeSet::new(),
            node_max: None,
            oomed: BTreeSet::new(),
            rng: RngStreams::new(seed).stream("dlrover-nsga"),
            spec: spec.canonical(),
        })
    }

    /// One job's stage-2 plan: fit its throughput model to its profiles, search the
    /// Pareto front of candidate configurations, and keep those worth their cost, scored
    /// RE x WG for the greedy selection.
    fn candidates(
        &self,
        job: &JobView<'_>,
        t: &Tracked,
        split: [f64; 4],
        max_cpu: f64,
        max_mem: u64,
        rng: Option<&mut SimRng>,
    ) -> Vec<Candidate> {
        let Some(model) = fit_model(&t.obs, split) else {
            return Vec::new();
        };
        let recent = t.obs.iter().rev().take(3);
        let thr_now = recent.clone().map(|o| o.1).sum::<f64>() / recent.count() as f64;
        let remaining = (job.request.steps.saturating_sub(job.steps_done)) as f64
            * f64::from(job.request.batch_size);
        let last = job.history.last();
        let ps_mem_used = last.map_or(0.0, |s| s.ps_mem_used_mb_max);
        let steps_left = job.request.steps.saturating_sub(job.steps_done) as f64;
        let ps_mem_final = plan::ps_mem_at_end(job.history, steps_left, ps_mem_used);
        let cores_now = job.config.total().cpu_cores();
        let quota = self.quota_cores(&job.request.requested);
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
            ps_mem_final,
            quota_cores: quota.max(cores_now),
            fixed_pod_cpu: self.fixed_pod_cpu,
            worker_mem_used: last.map_or(0.0, |s| s.worker_mem_used_mb),
            worker_cpu_used: last.map_or(0.0, |s| s.worker_cpu_used),
        };
        let filters = self.filters(&plan, t.configs);
        // The plan's own term of the cluster objective (RE x WG); plans that pass the
        // filters rank above those that do not, which still guide the ascent towards
        // them. Plans over the quota are never taken.
        let climb = |f: &nsga2::Objectives, thr: f64| {
            plan::feasible(f).then(|| (filters.pass(f), self.score(f, remaining, thr)))
        };
        let front = plan::candidates(&plan, self.search, rng, &climb);
        self.worth_their_cost(&plan, &filters, front)
    }

    /// The front's plans that pass the cost filters, scored RE x WG (Eq. 11-13).
    fn worth_their_cost(
        &self,
        plan: &Plan<'_>,
        filters: &Filters,
        front: Vec<nsga2::Scored<4>>,
    ) -> Vec<Candidate> {
        let now = plan.current.total();
        let mut out = Vec::new();
        for (g, f) in front {
            if !filters.pass(&f) {
                continue;
            }
            let c = plan.config(&g);
            let extra = c.total();
            out.push(Candidate {
                score: self.score(&f, plan.remaining, plan.throughput(&c)),
                job: plan.job.request.id,
                config: c,
                d_cpu: extra.cpu_cores() - now.cpu_cores(),
                d_mem: extra.mem_mb as f64 - now.mem_mb as f64,
                d_gpu: i64::from(extra.gpu) - i64::from(now.gpu),
            });
        }
        out
    }

    /// A plan's term of the cluster objective, RE x WG (Eq. 11-13): its gain per unit of
    /// cost, weighted by how soon the job would finish at the plan's throughput `thr`.
    fn score(&self, f: &nsga2::Objectives, remaining: f64, thr: f64) -> f64 {
        -f[1] / f[0].max(1.0) * weight(remaining, thr, self.rho)
    }

    /// The most CPU cores a job with this request may hold ([`Cap`]).
    fn quota_cores(&self, requested: &JobConfig) -> f64 {
        match self.cap {
            Cap::Quota(q) => q * requested.total().cpu_cores().max(4.0),
            Cap::Cores(c) => c,
        }
    }

    /// The plan's cost filters (our guards, see the module docs).
    fn filters(&self, plan: &Plan<'_>, configs: usize) -> Filters {
        let job = plan.job;
        let explore = configs < EXPLORE_CONFIGS;
        let cores_now = job.config.total().cpu_cores().max(1.0);
        Filters {
            min_gain: 0.02 * plan.thr_now,
            min_gain_per_cost: if explore {
                0.0
            } else {
                self.min_eff * plan.thr_now / cores_now
            },
        }
    }

    /// Fills the DB with the jobs that completed, and records what the masters of the
    /// jobs to visit report. Returns their views, in id order.
    fn observe<'v>(&mut self, view: &ClusterView<'v>) -> Vec<JobView<'v>> {
        for e in view.ended {
            if let Some(mut t) = self.jobs.remove(&e.id) {
                if let (JobPhase::Completed, Some(mut entry)) = (e.phase, t.entry.take()) {
                    // The configuration the job ended with is the one worth repeating.
                    entry.config = e.config;
                    self.db.push(entry);
                }
            }
            self.visit.remove(&e.id);
            self.watch.remove(&e.id);
            self.oomed.remove(&e.id);
        }
        let ids = self.visits(view);
        let views: Vec<JobView<'v>> = ids.iter().filter_map(|&id| view.jobs.get(id)).collect();
        for job in &views {
            let Some(t) = self.jobs.get_mut(&job.request.id) else {
                continue;
            };
            let mut new_config = false;
            for s in job.history {
                if t.last_sample.is_some_and(|l| s.time <= l) {
                    continue;
                }
                t.last_sample = Some(s.time);
                t.fresh += 1;
                // A profile taken while one PS ran saturated and the others idle (stage
                // 3's hot PS) measures that PS, not the configuration: it stays out of the
                // fit and of the prior's utilisation.
                if s.steps_per_s <= 0.0 || s.running_ps == 0 || job.config.ps == 0 || post::hot_sample(s)
                {
                    continue;
                }
                // The cores the sample ran at: a rescale since may have changed them.
                let c = Config {
                    worker_cores: s.worker_cpu,
                    ps_cores: s.ps_cpu,
                    ..fit_config(job, s.running_workers, s.running_ps)
                };
                t.util.get_or_insert((
                    s.worker_cpu_used / s.worker_cpu.max(1e-9),
                    s.ps_cpu_used / s.ps_cpu.max(1e-9),
                ));
                if t.obs.last().is_none_or(|o| o.0 != c) {
                    new_config = true;
                    t.configs += 1;
                }
                let thr = s.steps_per_s * f64::from(job.request.batch_size);
                t.obs.push((c, thr));
                if t.obs.len() > 256 {
                    // A due split is chosen over the observations it was due over.
                    let split = t.due_split();
                    t.resolve_split(split);
                    t.obs.remove(0);
                }
            }
            if new_config {
                t.split_due = Some(t.obs.len());
            }
        }
        views
    }

    /// The jobs this tick looks at, in id order: the PS jobs whose observable state changed
    /// since the last tick ([`ClusterView::changed`]), those watched, and those with an
    /// OOM kill; every PS job when the largest node changed (stage 3's bounds). A job
    /// outside these would decide exactly what it decided at its last visit: stage 3
    /// reads only its events, profiles, pods and configuration (progress changes only the
    /// size of a memory raise it asks for, not whether it asks), and a plan needs fresh
    /// samples (`Tracked::fresh`), which come with a change.
    fn visits(&mut self, view: &ClusterView<'_>) -> Vec<u64> {
        let mut ids: BTreeSet<u64> = if self.node_max != Some(view.node_max) {
            self.node_max = Some(view.node_max);
            self.visit.clone()
        } else {
            let changed = view.changed.iter().filter(|id| self.visit.contains(id));
            changed.chain(&self.watch).copied().collect()
        };
        ids.append(&mut self.oomed);
        self.watch.clear();
        ids.into_iter().collect()
    }

    /// Whether the next tick must look at a PS job this tick visited: it acted (an action
    /// the world refuses is asked again), or it has the samples for a plan (`fresh`
    /// enough) but its last action is too recent (a timer, not a change, ends that wait).
    /// Every other block of a plan (pending pods, a rescale, the job's phase) ends with a
    /// listed change.
    fn keep_watching(&self, id: u64, acted: bool, now: SimTime) -> bool {
        let Some(t) = self.jobs.get(&id).filter(|_| self.visit.contains(&id)) else {
            return false; // Jobs without PSes are looked at only after an OOM kill.
        };
        let unsettled = t
            .last_action
            .is_some_and(|a| now - a < SimTime::from_secs(self.interval_s));
        let ready = t.fresh >= 2 * (1 + t.idle_plans.min(3)) && !t.obs.is_empty();
        acted || (ready && unsettled)
    }
}

impl Policy for Dlrover {
    fn spec(&self) -> String {
        self.spec.clone()
    }

    fn sharding(&self) -> Sharding {
        Sharding::Dynamic
    }

    /// DLRover-RM re-partitions with DeepRec, which spreads the embedding parameters
    /// evenly over the new PSes (Sec. 3, "PS Stragglers").
    fn partitioning(&self) -> Partitioning {
        Partitioning::Balanced
    }

    fn observes_pods(&self) -> bool {
        self.post
    }

    /// Stage 3: a pod killed for memory comes back with twice as much (with `post=off`,
    /// the scenario's plain relaunch rule applies).
    fn on_oom(&mut self, job: u64, _role: Role, mem_mb: u64) -> OomRelaunch {
        if self.post {
            self.oomed.insert(job);
            OomRelaunch::WithMemory(mem_mb.saturating_mul(2))
        } else {
            OomRelaunch::Default
        }
    }

    fn tick_interval(&self) -> Option<SimTime> {
        Some(SimTime::from_secs(self.interval_s))
    }

    fn on_submit(&mut self, job: &JobView<'_>, view: &ClusterView<'_>) -> Vec<Action> {
        // Stage 1 starts only the jobs stages 2 and 3 manage, those with PSes: a job
        // without PS (an imported all-reduce or single-pod job) is never right-sized, so
        // the database holds no tuned configuration for it, only other users' requests.
        let config = if self.warm_start && job.request.requested.ps > 0 {
            self.db
                .warm_config(job, self.mu)
                .filter(|c| admits_beyond_request(c, &job.request.requested, view))
                .unwrap_or(job.request.requested)
        } else {
            job.request.requested
        };
        let r = job.request;
        self.jobs.insert(
            r.id,
            Tracked {
                entry: Some(DbEntry {
                    model: r.model,
                    user: r.user.clone(),
                    samples: r.steps as f64 * f64::from(r.batch_size),
                    dense_mb: r.dense_mb,
                    emb_dim: r.emb_dim,
                    config,
                }),
                ..Tracked::default()
            },
        );
        if config.ps > 0 {
            self.visit.insert(r.id);
        }
        vec![Action::Launch { job: r.id, config }]
    }

    fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<Action> {
        let jobs = self.observe(view);
        let (max_cpu, max_mem) = (view.node_max.cpu_cores(), view.node_max.mem_mb);
        let mut actions = Vec::new();
        let mut busy = BTreeSet::new();
        if self.post {
            for job in &jobs {
                let Some(t) = self.jobs.get_mut(&job.request.id) else {
                    continue;
                };
                if let Some(a) = post::post_scale(t, job, self.interval_s, max_cpu, max_mem) {
                    busy.insert(job.request.id);
                    actions.push(a);
                }
            }
        }
        let mut free = greedy_budget(view);
        // Stage 2: candidates per job, then the weighted greedy across jobs (Eq. 11-14).
        let mut planned: Vec<&JobView<'_>> = Vec::new();
        for job in &jobs {
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
            planned.push(job);
        }
        // A job's split and plan read only its own observations, so the jobs of a tick
        // plan in parallel (rayon; `dlsim replay --threads`), each result kept in job
        // order: the same outputs on any thread count. Not NSGA-II's plans: its one random
        // stream serves every plan in job order (a job's plan then depends on how many
        // jobs planned before it), so they are made one after another. Per-job streams
        // would decouple them but change every figure made with `search=nsga`.
        // Each job's due split and its plan come from one parallel map (one fork-join a
        // tick); the splits are then taken in job order.
        let (splits, cands): (Vec<Option<[f64; 4]>>, Vec<Candidate>) = if self.search.draws() {
            let splits: Vec<Option<[f64; 4]>> = planned
                .par_iter()
                .map(|job| self.jobs[&job.request.id].due_split())
                .collect();
            let mut rng = self.rng.clone();
            let cands = planned
                .iter()
                .zip(&splits)
                .flat_map(|(job, split)| {
                    let t = &self.jobs[&job.request.id];
                    let split = split.unwrap_or(t.split);
                    self.candidates(job, t, split, max_cpu, max_mem, Some(&mut rng))
                })
                .collect();
            self.rng = rng;
            (splits, cands)
        } else {
            let (splits, per_job): (Vec<Option<[f64; 4]>>, Vec<Vec<Candidate>>) = planned
                .par_iter()
                .map(|job| {
                    let t = &self.jobs[&job.request.id];
                    let due = t.due_split();
                    let split = due.unwrap_or(t.split);
                    (due, self.candidates(job, t, split, max_cpu, max_mem, None))
                })
                .unzip();
            (splits, per_job.into_iter().flatten().collect())
        };
        for (job, split) in planned.iter().zip(splits) {
            self.jobs
                .get_mut(&job.request.id)
                .expect("tracked")
                .resolve_split(split);
        }
        let now: BTreeMap<u64, JobConfig> =
            planned.iter().map(|j| (j.request.id, j.config)).collect();
        for Candidate {
            job: id, config: c, ..
        } in select(cands, &mut free, &mut busy)
        {
            actions.push(if plan::worker_only(&now[&id], &c) {
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
        for id in now.into_keys() {
            let t = self.jobs.get_mut(&id).expect("tracked");
            t.fresh = 0;
            t.idle_plans = if busy.contains(&id) {
                0
            } else {
                t.idle_plans + 1
            };
        }
        for &id in &busy {
            let t = self.jobs.get_mut(&id).expect("tracked");
            t.last_action = Some(view.now);
            t.fresh = 0;
        }
        for job in &jobs {
            let id = job.request.id;
            if self.keep_watching(id, busy.contains(&id), view.now) {
                self.watch.insert(id);
            }
        }
        actions
    }
}

/// Whether the cluster can give a warm start what it asks beyond the user's request: the
/// extra CPU and memory must fit the capacity the cluster-level greedy would hand out now
/// (free, less pending pods, less a 10% reserve; Eq. 11-14's budget), GPUs included. A warm start is a plan like any other,
/// and the cluster brain that makes it sees the cluster; when the extra does not fit, the
/// job starts as the user asked and stage 2 grows it as capacity frees. Without this a
/// saturated cluster (an imported HPC trace, a production peak) queued every job behind
/// copies of larger ones. (Until 2026-11-27 GPUs were not checked: a GPU job warm-started
/// from CPU jobs asked for 36-48 GPU workers on the production day's 64 GPUs and failed to
/// schedule.)
fn admits_beyond_request(c: &JobConfig, requested: &JobConfig, view: &ClusterView<'_>) -> bool {
    let (want, asked) = (c.total(), requested.total());
    let extra_cpu = want.cpu_cores() - asked.cpu_cores();
    let extra_mem = want.mem_mb as f64 - asked.mem_mb as f64;
    let extra_gpu = i64::from(want.gpu) - i64::from(asked.gpu);
    greedy_budget(view).admits(extra_cpu, extra_mem, extra_gpu)
}

/// The CPU cores, memory (MB) and GPUs the cluster-level greedy may hand out now: what
/// nodes can still place, less what pending pods will take, less 10% of the cluster kept
/// for arrivals (of its GPUs, rounded down).
fn greedy_budget(view: &ClusterView<'_>) -> Budget {
    Budget {
        cpu: view.free.cpu_cores() - view.pending.cpu_cores() - 0.1 * view.capacity.cpu_cores(),
        mem: view.free.mem_mb as f64
            - view.pending.mem_mb as f64
            - 0.1 * view.capacity.mem_mb as f64,
        gpu: i64::from(view.free.gpu)
            - i64::from(view.pending.gpu)
            - i64::from(view.capacity.gpu) / 10,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn spec_parameters_are_validated() {
        assert!(
            crate::build("dlrover[warm_start=off,nsga=off,post=off,rho=2.5,interval_s=180]")
                .is_ok()
        );
        assert!(crate::build("dlrover[mu=2]").is_err());
        assert!(crate::build("dlrover[search=magic]").is_err());
        assert!(crate::build("dlrover[search=nsga,gens=6]").is_ok());
        assert!(crate::build("dlrover[search=exact]").is_ok());
        assert!(crate::build("dlrover[nsga=off,search=exact]").is_err());
        assert!(crate::build("dlrover[pop=12,gens=6]").is_ok());
        assert!(crate::build("dlrover[pop=2]").is_err());
        assert!(crate::build("dlrover[gens=0]").is_err());
        assert!(crate::build("dlrover[bogus=1]").is_err());
        for bad in ["quota=0", "quota=-1", "max_cores=0", "max_cores=abc", "quota=4,max_cores=200"] {
            assert!(crate::build(&format!("dlrover[{bad}]")).is_err(), "{bad}");
        }
    }

    #[test]
    fn max_cores_caps_every_job_at_the_same_cores_whatever_it_requested() {
        use dlsim_model::policy::JobConfig;
        let request = |worker_cpu: f64, ps_cpu: f64| JobConfig {
            workers: 1,
            ps: 1,
            worker_cpu,
            worker_mem_mb: 16_384,
            worker_gpu: 0,
            ps_cpu,
            ps_mem_mb: 16_384,
        };
        let (small, large) = (request(3.0, 16.0), request(32.0, 16.0));
        let spec = |s: &str| super::Dlrover::from_spec(&crate::spec::PolicySpec::parse(s).unwrap()).unwrap();
        let fixed = spec("dlrover[max_cores=200]");
        assert_eq!(fixed.quota_cores(&small), 200.0);
        assert_eq!(fixed.quota_cores(&large), 200.0);
        // The default quota follows the request: 4 x 19 and 4 x 48 cores.
        let ratio = spec("dlrover");
        assert_eq!(ratio.quota_cores(&small), 76.0);
        assert_eq!(ratio.quota_cores(&large), 192.0);
    }
}
