//! Stage 2, job level: DLRover-RM's throughput model fitted online to the job's profiles
//! (NNLS on log error, Eq. 1-6), and candidate plans on the Pareto front of (resource cost,
//! -throughput gain net of the scaling overhead) (Eq. 7-9) among the plans within the
//! job's quota, searched by coordinate ascent (default), NSGA-II or enumeration.
//!
//! Simplifications (also in ARCHITECTURE.md): the fit adds a weak prior (a split of the
//! first observed iteration, chosen by the observed throughputs) while few configurations
//! have been seen; the bandwidth feature is the nominal 1,250 MB/s; per-pod CPU is the
//! request; the overhead of Eq. 8 is a fixed 30 s of lost training for a migration and
//! none for adding workers; 1 core is priced as 4 GB of memory.

use crate::nsga2;
use dlsim_engine::SimRng;
use dlsim_fit::{Config, ThroughputParams};
use dlsim_model::policy::{JobConfig, JobView, ProfileSample};
use dlsim_model::Resources;

pub const CPU_OPTIONS: [f64; 9] = [1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0];
const MAX_WORKERS: u32 = 64;
const MAX_PS: u32 = 16;
pub const BANDWIDTH_MB_S: f64 = 1_250.0;
const MIGRATION_OVERHEAD_S: f64 = 30.0;
const MB_PER_CORE_PRICE: f64 = 4_096.0;

/// The model's inputs for a job at a given pod count, as its master knows them.
pub fn fit_config(job: &JobView<'_>, workers: u32, ps: u32) -> Config {
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

/// The fullest PS's memory at the job's end, extrapolated from its growth per sample over
/// the last three profiles of the current PS count (embeddings grow with the samples seen):
/// `used` when the history cannot tell (fewer profiles, a PS count change, no progress).
pub fn ps_mem_at_end(history: &[ProfileSample], steps_left: f64, used: f64) -> f64 {
    let n = history.len();
    if n < 3 {
        return used;
    }
    let (a, b) = (&history[n - 3], &history[n - 1]);
    let dt = (b.time - a.time).as_secs_f64();
    let steps_per_s = history[n - 3..].iter().map(|s| s.steps_per_s).sum::<f64>() / 3.0;
    if a.running_ps != b.running_ps || dt <= 0.0 || steps_per_s <= 0.0 {
        return used;
    }
    let per_step = (b.ps_mem_used_mb_max - a.ps_mem_used_mb_max).max(0.0) / (steps_per_s * dt);
    used + per_step * steps_left
}

/// Worker memory headroom over what a worker uses when a plan sizes it: workers' memory
/// does not grow with training (their embedding cache is per batch), so the headroom only
/// covers noise and spikes.
const WORKER_MEM_HEADROOM: f64 = 1.5;

/// A worker's memory request sized to `used` MB: the headroom, rounded up to 256 MB, at
/// least 1 GB.
fn worker_mem_for(used: f64) -> u64 {
    (((used * WORKER_MEM_HEADROOM) / 256.0).ceil() as u64 * 256).max(1_024)
}

/// Whether going from `from` to `to` changes only the worker count: workers join or leave
/// seamlessly (dynamic sharding); anything else is a migration.
pub fn worker_only(from: &JobConfig, to: &JobConfig) -> bool {
    JobConfig {
        workers: from.workers,
        ..*to
    } == *from
}

/// The share of an iteration each part (gradient, update, sync, embedding) takes, read
/// from CPU utilisation as a job master sees it: a worker's busy share of its cores is the
/// gradient's share, `ps_update` of a PS's busy share of its cores the update's (each
/// clamped to [0.05, 0.9], together at most 0.9); the rest of the PS's busy share is
/// serving lookups. Utilisation cannot tell parameter sync from embedding lookups: `sync`
/// is the fraction of the rest given to sync (see [`choose_split`]).
pub fn split_from_utilisation(
    worker_util: f64,
    ps_util: f64,
    sync: f64,
    ps_update: f64,
) -> [f64; 4] {
    let (mut g, mut u) = (
        worker_util.clamp(0.05, 0.9),
        (ps_util * ps_update).clamp(0.05, 0.9),
    );
    if g + u > 0.9 {
        let k = 0.9 / (g + u);
        (g, u) = (g * k, u * k);
    }
    let rest = 1.0 - g - u;
    [g, u, rest * sync, rest * (1.0 - sync)]
}

/// The fractions of the non-CPU time that [`choose_split`] tries for parameter sync, from
/// the most optimistic about scaling out (little sync) to the least.
pub const SYNC_FRACTIONS: [f64; 4] = [0.1, 0.25, 0.5, 0.8];

/// The shares of a PS's busy time that [`choose_split`] reads as update work: all of it
/// first (utilisation's direct reading), then half (a PS also spends CPU serving each
/// worker's lookups, work that grows with the workers but not with the iteration), taken
/// when the profiles refute the first.
pub const PS_UPDATE_SHARES: [f64; 2] = [1.0, 0.5];

/// How much worse (root mean squared log error) than the best split's fit a split's fit may
/// explain the observed throughputs and still count as explaining them.
const SPLIT_TOLERANCE: f64 = 0.02;

/// The prior's split, `util` being the first profile's (worker, PS) CPU utilisation.
/// Utilisation cannot tell sync from embedding lookups, nor a PS's update work from its
/// serving, so each of [`PS_UPDATE_SHARES`] x [`SYNC_FRACTIONS`] is fitted and the first
/// (utilisation's direct reading, then the most optimistic about scaling out) that
/// explains the observed throughputs about as well as the best is kept (optimism under
/// uncertainty): if scaling out then gains less than it predicted, the new profiles refute
/// it and a later choice moves on.
pub fn choose_split(obs: &[(Config, f64)], util: (f64, f64)) -> [f64; 4] {
    let splits = candidate_splits(util);
    if obs.iter().all(|o| o.0 == obs[0].0) {
        return splits[0];
    }
    // The splits are fitted in order, and the choice is made as soon as it is certain:
    // no fit explains the observations better than their spread about each
    // configuration's mean (`pure_error`), so a split within the tolerance of that floor
    // is kept once every earlier one is beyond the tolerance of a fit already made. The
    // choice is the one all fits would give, bit for bit; a job's repeated profiles of
    // its few configurations usually settle it within a few fits.
    let floor = pure_error(obs) * (1.0 - 1e-9) - 1e-12;
    let mut errs: Vec<f64> = Vec::with_capacity(splits.len());
    let mut best = f64::INFINITY;
    // The first split within the tolerance of the best fit so far.
    let preferred = |errs: &[f64], best: f64| {
        errs.iter()
            .position(|&e| e <= best + SPLIT_TOLERANCE)
            .unwrap_or(0)
    };
    for &split in &splits {
        let e = split_error(obs, split);
        errs.push(e);
        best = best.min(e);
        // Every split before it is out already; it is in once no fit can beat it.
        let i = preferred(&errs, best);
        if errs[i] <= floor + SPLIT_TOLERANCE {
            return splits[i];
        }
    }
    splits[preferred(&errs, best)]
}

/// The splits [`choose_split`] tries, in its order of preference: each of
/// [`PS_UPDATE_SHARES`] x [`SYNC_FRACTIONS`] read from the first profile's utilisation.
fn candidate_splits(util: (f64, f64)) -> Vec<[f64; 4]> {
    PS_UPDATE_SHARES
        .iter()
        .flat_map(|&upd| {
            SYNC_FRACTIONS.map(|sync| split_from_utilisation(util.0, util.1, sync, upd))
        })
        .collect()
}

/// How well the fit with `split`'s prior explains `obs`: the root mean squared log error
/// of its throughputs (infinite if nothing fits).
fn split_error(obs: &[(Config, f64)], split: [f64; 4]) -> f64 {
    fit_model(obs, split).map_or(f64::INFINITY, |m| {
        let sq: f64 = obs
            .iter()
            .map(|(c, thr)| (m.throughput(c).max(1e-300) / thr).ln().powi(2))
            .sum();
        (sq / obs.len() as f64).sqrt()
    })
}

/// The root mean squared log error no model of throughput per configuration can beat on
/// `obs`: each configuration's observations about their own mean log.
fn pure_error(obs: &[(Config, f64)]) -> f64 {
    let mut groups: Vec<(Config, Vec<f64>)> = Vec::new();
    for (c, thr) in obs {
        match groups.iter_mut().find(|g| g.0 == *c) {
            Some(g) => g.1.push(thr.ln()),
            None => groups.push((*c, vec![thr.ln()])),
        }
    }
    let sq: f64 = groups
        .iter()
        .map(|(_, l)| {
            let mean = l.iter().sum::<f64>() / l.len() as f64;
            l.iter().map(|v| (v - mean).powi(2)).sum::<f64>()
        })
        .sum();
    (sq / obs.len() as f64).sqrt()
}

/// NNLS/RMSLE fit with a weak prior: four pseudo-observations from a model in which each
/// part takes its `split` share of the first observed iteration (see the module docs).
pub fn fit_model(obs: &[(Config, f64)], split: [f64; 4]) -> Option<ThroughputParams> {
    let (c0, thr0) = *obs.first()?;
    let t0 = f64::from(c0.workers) * f64::from(c0.batch) / thr0;
    let f = c0.features();
    let prior = ThroughputParams {
        a_grad: t0 * split[0] / f[0],
        a_upd: t0 * split[1] / f[1],
        a_sync: t0 * split[2] / f[2].max(1e-12),
        a_emb: t0 * split[3] / f[3],
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
pub struct Plan<'a> {
    pub job: &'a JobView<'a>,
    pub model: ThroughputParams,
    pub current: JobConfig,
    pub thr_now: f64,
    pub remaining: f64,
    pub max_cpu: f64,
    pub max_mem: u64,
    pub ps_mem_used: f64,
    /// The fullest PS's memory predicted at the job's end ([`ps_mem_at_end`]).
    pub ps_mem_final: f64,
    /// The most CPU cores the job may hold: plans over it are infeasible.
    pub quota_cores: f64,
    /// Plans keep the current per-pod CPU of each role (`pod_cpu=fixed`): the CPU genes
    /// then have the one value 0, the current size.
    pub fixed_pod_cpu: bool,
    /// Memory a worker uses now (0 before the first profile), MB.
    pub worker_mem_used: f64,
    /// CPU cores a worker is seen to use now (0 before the first profile): no plan gives a
    /// worker fewer (DLRover Sec. 4.2 sizes each worker to the cores it was seen to use,
    /// `w = w_hat`). The profiler counts the pod runtime's busy cores, which the fitted
    /// model (Eq. 1-6) has no term for; without this floor the fit, which sees a worker's
    /// cores only through `a_grad m / lambda_w`, splits jobs into 1-core workers whose
    /// runtime leaves them a third of a core.
    pub worker_cpu_used: f64,
}

/// `used` cores rounded up to a whole core, and at most `now` (a pod's use never exceeds
/// its request, so the current size always passes).
fn seen_floor(used: f64, now: f64) -> f64 {
    (used - 1e-9).ceil().max(0.0).min(now)
}

/// Both objectives of an infeasible plan start here (plus its excess cores), so every
/// feasible plan dominates it and the fronts never mix the two; the current
/// configuration is always feasible.
const INFEASIBLE: f64 = 1e15;

/// Whether a plan's objectives are those of a feasible plan (within the quota).
pub fn feasible(f: &nsga2::Objectives) -> bool {
    f[0] < INFEASIBLE
}

fn over_quota(excess_cores: f64) -> nsga2::Objectives {
    [INFEASIBLE + excess_cores; 2]
}

impl Plan<'_> {
    pub fn upper(&self) -> [u32; 4] {
        if self.fixed_pod_cpu {
            return [MAX_WORKERS, MAX_PS, 1, 1];
        }
        let cpus = CPU_OPTIONS.iter().filter(|&&c| c <= self.max_cpu).count() as u32;
        let gpu = self.current.worker_gpu > 0;
        [
            MAX_WORKERS,
            MAX_PS,
            if gpu { 1 } else { cpus.max(1) },
            cpus.max(1),
        ]
    }

    /// The per-pod CPU a CPU gene stands for: option `g` of [`CPU_OPTIONS`], or with
    /// `fixed_pod_cpu` the current size `now` (the gene's one value).
    fn cpu_option(&self, g: u32, now: f64) -> f64 {
        if self.fixed_pod_cpu {
            now
        } else {
            CPU_OPTIONS[g as usize]
        }
    }

    /// Per-PS memory at `ps` PS. The embedding is sharded: PS memory follows the share
    /// each PS holds, with headroom over what the fullest PS uses now.
    ///
    /// Right-sizing both ways (DLRover-RM Sec. 4.3): once the fullest PS has been observed,
    /// its memory is 1.3x the larger of its use now and its use predicted at the job's end,
    /// whether that is above or below the current request; the OOM predictor of the post
    /// stage still raises it ahead of a limit the prediction missed.
    fn ps_mem(&self, ps: u32) -> u64 {
        let now = if self.ps_mem_used > 0.0 {
            self.ps_mem_used.max(self.ps_mem_final) * 1.3
        } else {
            self.current.ps_mem_mb as f64
        };
        (resplit_ps_mem(now, self.current.ps, ps).ceil() as u64).clamp(1_024, self.max_mem)
    }

    pub fn config(&self, g: &[u32; 4]) -> JobConfig {
        self.config_with(g, self.ps_mem(g[1] + 1))
    }

    /// The cores of a worker at CPU option `c`: at least what a worker is seen to use
    /// (rounded up to a whole core, and never above the current request).
    fn worker_cpu_at(&self, c: f64) -> f64 {
        if self.current.worker_gpu > 0 {
            return self.current.worker_cpu;
        }
        c.max(seen_floor(self.worker_cpu_used, self.current.worker_cpu))
    }

    fn config_with(&self, g: &[u32; 4], ps_mem_mb: u64) -> JobConfig {
        let c = JobConfig {
            workers: g[0] + 1,
            ps: g[1] + 1,
            worker_cpu: self.worker_cpu_at(self.cpu_option(g[2], self.current.worker_cpu)),
            ps_cpu: self.cpu_option(g[3], self.current.ps_cpu),
            ps_mem_mb,
            ..self.current
        };
        // A migration re-creates every pod, so it also sizes worker memory to what a
        // worker uses (vertical scaling); adding or removing workers keeps the request.
        if worker_only(&self.current, &c) || self.worker_mem_used <= 0.0 {
            return c;
        }
        JobConfig {
            worker_mem_mb: worker_mem_for(self.worker_mem_used).min(self.max_mem),
            ..c
        }
    }

    pub fn genes_of(&self, c: &JobConfig) -> [u32; 4] {
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

    pub fn throughput(&self, c: &JobConfig) -> f64 {
        self.model.throughput(&Config {
            workers: c.workers,
            ps: c.ps,
            worker_cores: c.worker_cpu,
            ps_cores: c.ps_cpu,
            ..fit_config(self.job, c.workers, c.ps)
        })
    }

    /// Eq. 7: extra cost in core-equivalents.
    pub fn cost(&self, c: &JobConfig) -> f64 {
        let t = c.total();
        let n = self.current.total();
        (t.cpu_cores() - n.cpu_cores()) + (t.mem_mb as f64 - n.mem_mb as f64) / MB_PER_CORE_PRICE
    }

    /// Eq. 8: throughput gain net of the scaling overhead over the remaining run.
    pub fn gain(&self, c: &JobConfig) -> f64 {
        self.gain_at(c, self.throughput(c))
    }

    /// [`Plan::gain`] of `c`, whose modelled throughput is `thr`.
    fn gain_at(&self, c: &JobConfig, thr: f64) -> f64 {
        let overhead_s = if worker_only(&self.current, c) {
            0.0
        } else {
            MIGRATION_OVERHEAD_S
        };
        let remaining_s = (self.remaining / thr.max(1e-9)).max(1.0);
        thr - self.thr_now - thr * (overhead_s / remaining_s).min(1.0)
    }

    /// Eq. 9's objectives (cost, -gain), or `over_quota`'s for a plan over the quota.
    pub fn objectives(&self, g: &[u32; 4]) -> nsga2::Objectives {
        let c = self.config(g);
        let excess = c.total().cpu_cores() - self.quota_cores;
        if excess > 0.0 {
            return over_quota(excess);
        }
        [self.cost(&c), -self.gain(&c)]
    }

    /// What every genome of this plan shares, computed once per search.
    fn table(&self) -> Table {
        let milli = |cores: f64| Resources::new(cores, 0, 0).cpu_milli;
        let now = self.current.total();
        let worker_cpu: [f64; CPU_OPTIONS.len()] = std::array::from_fn(|g| {
            self.worker_cpu_at(self.cpu_option(g as u32, self.current.worker_cpu))
        });
        let ps_cpu: [f64; CPU_OPTIONS.len()] =
            std::array::from_fn(|g| self.cpu_option(g as u32, self.current.ps_cpu));
        Table {
            ps_mem: std::array::from_fn(|i| self.ps_mem(i as u32 + 1)),
            worker_milli: worker_cpu.map(milli),
            ps_milli: ps_cpu.map(milli),
            worker_cpu,
            ps_cpu,
            migrated_worker_mem: (self.worker_mem_used > 0.0)
                .then(|| worker_mem_for(self.worker_mem_used).min(self.max_mem)),
            base: fit_config(self.job, 1, 1),
            now_cores: now.cpu_cores(),
            now_mem: now.mem_mb as f64,
        }
    }

    /// [`Plan::objectives`] from the plan's table (the same integers and the same floating
    /// operations as `cost` and `gain` on `config`, so the same bits, without re-deriving
    /// the PS memory split and per-pod requests for every genome), and the plan's
    /// modelled throughput (0 for a plan over the quota). The quota is checked first: the
    /// projections of the coordinate ascent probe many plans over it.
    fn assess(&self, t: &Table, g: &[u32; 4]) -> (nsga2::Objectives, f64) {
        let (workers, ps) = (g[0] + 1, g[1] + 1);
        let (w, p) = (u64::from(workers), u64::from(ps));
        let cpu_milli = t.worker_milli[g[2] as usize] * w + t.ps_milli[g[3] as usize] * p;
        let excess = cpu_milli as f64 / 1000.0 - self.quota_cores;
        if excess > 0.0 {
            return (over_quota(excess), 0.0);
        }
        // `config_with`, from the table.
        let ps_mem = t.ps_mem[g[1] as usize];
        let mut c = JobConfig {
            workers,
            ps,
            worker_cpu: t.worker_cpu[g[2] as usize],
            ps_cpu: t.ps_cpu[g[3] as usize],
            ps_mem_mb: ps_mem,
            ..self.current
        };
        if let Some(mb) = t.migrated_worker_mem.filter(|_| !worker_only(&self.current, &c)) {
            c.worker_mem_mb = mb;
        }
        let mem_mb = c.worker_mem_mb * w + ps_mem * p;
        let cost = (cpu_milli as f64 / 1000.0 - t.now_cores)
            + (mem_mb as f64 - t.now_mem) / MB_PER_CORE_PRICE;
        let thr = self.model.throughput(&Config {
            workers,
            ps,
            worker_cores: c.worker_cpu,
            ps_cores: c.ps_cpu,
            ..t.base
        });
        ([cost, -self.gain_at(&c, thr)], thr)
    }
}

/// Per-plan constants for [`Plan::assess`].
struct Table {
    /// Per-PS memory by PS count - 1.
    ps_mem: [u64; MAX_PS as usize],
    /// Per-pod CPU requests in millicores by CPU option.
    worker_milli: [u64; CPU_OPTIONS.len()],
    ps_milli: [u64; CPU_OPTIONS.len()],
    /// Per-pod CPU by CPU option (`config_with`'s).
    worker_cpu: [f64; CPU_OPTIONS.len()],
    ps_cpu: [f64; CPU_OPTIONS.len()],
    /// A migrated worker's memory, once a worker's use has been seen (`config_with`'s).
    migrated_worker_mem: Option<u64>,
    /// The throughput model's inputs that no gene changes.
    base: Config,
    now_cores: f64,
    now_mem: f64,
}

/// How a job's candidate plans are searched.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Search {
    /// NSGA-II (the paper's choice) with these settings.
    Nsga(nsga2::Settings),
    /// The exact front by enumeration (slow; to check NSGA-II).
    Exact,
    /// One-step neighbours of the current configuration (`nsga=off`).
    Neighbours,
    /// Coordinate ascent on the plan's score, then the front of the plans it visited
    /// that pass the policy's filters (the default; see ARCHITECTURE.md).
    Coordinate,
}

impl Search {
    /// Whether the search draws random numbers (NSGA-II only): such a search plans the
    /// jobs of a tick one after another, from one stream.
    pub fn draws(&self) -> bool {
        matches!(self, Search::Nsga(_))
    }
}

/// How [`Search::Coordinate`] ranks a plan from its objectives and modelled throughput:
/// plans that pass the policy's filters first, then by score; `None` for plans it may not
/// take at all.
pub type Climb<'a> = &'a dyn Fn(&nsga2::Objectives, f64) -> Option<(bool, f64)>;

/// Coordinate ascent from the current configuration on `climb`: each sweep tries every
/// value of one gene at a time, the others fixed, and moves to the best plan found, until
/// a sweep finds nothing better (at most 8 sweeps, about 100 evaluations each). A value
/// that takes the plan over the quota is projected back into it by lowering, as little as
/// needed, the same role's other gene (per-pod CPU for a count, the count for per-pod CPU)
/// or the other role's same gene, whichever scores better: at the quota the ascent can
/// then trade big pods for many small ones, or workers for PS.
/// Returns the first front of the plans it visited that pass the filters, so the greedy
/// still has cheaper fallbacks when the best plan does not fit.
fn coordinate(
    upper: &[u32; 4],
    start: [u32; 4],
    eval: &mut dyn FnMut(&[u32; 4]) -> (nsga2::Objectives, f64),
    climb: Climb<'_>,
) -> Vec<nsga2::Scored<4>> {
    type Rank = (bool, f64);
    // Only looked up during the ascent; the front is sorted by genome.
    let mut seen: rustc_hash::FxHashMap<[u32; 4], (nsga2::Objectives, Option<Rank>)> =
        rustc_hash::FxHashMap::with_capacity_and_hasher(512, Default::default());
    let mut visit = |g: [u32; 4]| {
        seen.entry(g)
            .or_insert_with(|| {
                let (f, thr) = eval(&g);
                (f, climb(&f, thr))
            })
            .1
    };
    let better = |a: Rank, b: Rank| (a.0 && !b.0) || (a.0 == b.0 && a.1 > b.1);
    let mut at = start;
    let mut best = visit(at).unwrap_or((false, f64::NEG_INFINITY));
    for _ in 0..8 {
        let mut moved = false;
        for k in 0..4 {
            let mut line = at;
            for v in 0..upper[k] {
                line[k] = v;
                let mut g = line;
                let mut r = visit(g);
                if r.is_none() {
                    // Project back into the quota: lower one other gene (binary search:
                    // fewer or smaller pods never use more cores) as little as needed,
                    // and keep the better of two projections: the same role's other gene
                    // (its per-pod CPU, or its count) or the other role's same gene.
                    for j in [k ^ 2, k ^ 1] {
                        let mut p = line;
                        let (mut lo, mut hi) = (0, p[j]);
                        while lo < hi {
                            let mid = (lo + hi).div_ceil(2);
                            p[j] = mid;
                            if visit(p).is_some() {
                                lo = mid;
                            } else {
                                hi = mid - 1;
                            }
                        }
                        p[j] = lo;
                        if let Some(q) = visit(p) {
                            if r.is_none_or(|r| better(q, r)) {
                                (g, r) = (p, Some(q));
                            }
                        }
                    }
                }
                if let Some(r) = r.filter(|&r| better(r, best)) {
                    (best, at, moved) = (r, g, true);
                }
            }
        }
        if !moved {
            break;
        }
    }
    let passing: Vec<nsga2::Scored<4>> = seen
        .into_iter()
        .filter(|(_, (_, r))| r.is_some_and(|r| r.0))
        .map(|(g, (f, _))| (g, f))
        .collect();
    nsga2::first_front(&passing)
}

/// Pareto candidates for one job.
/// `climb` scores a plan for [`Search::Coordinate`]; the other searches ignore it. `rng`
/// is the stream NSGA-II draws from, which only it needs ([`Search::draws`]).
pub fn candidates(
    plan: &Plan<'_>,
    search: Search,
    rng: Option<&mut SimRng>,
    climb: Climb<'_>,
) -> Vec<nsga2::Scored<4>> {
    let upper = plan.upper();
    let start = plan.genes_of(&plan.current);
    let table = plan.table();
    let assess = |g: &[u32; 4]| plan.assess(&table, g);
    match search {
        Search::Exact => nsga2::exhaustive(&upper, &mut |g| assess(g).0),
        Search::Nsga(settings) => {
            let rng = rng.expect("NSGA-II is given the policy's random stream");
            nsga2::run(&upper, &[start], &mut |g| assess(g).0, settings, rng)
        }
        Search::Coordinate => coordinate(&upper, start, &mut |g| assess(g), climb),
        Search::Neighbours => neighbours(&upper, start, &mut |g| assess(g).0),
    }
}

/// The one-step neighbours of `start`: each gene one value down and one up.
fn neighbours(
    upper: &[u32; 4],
    start: [u32; 4],
    eval: &mut dyn FnMut(&[u32; 4]) -> nsga2::Objectives,
) -> Vec<nsga2::Scored<4>> {
    let mut out = Vec::new();
    for (k, &u) in upper.iter().enumerate() {
        for step in [-1i64, 1] {
            let mut g = start;
            let v = i64::from(g[k]) + step;
            if v >= 0 && v < i64::from(u) {
                g[k] = v as u32;
                out.push((g, eval(&g)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_engine::RngStreams;

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

    fn request(gpu: u32) -> dlsim_model::policy::JobRequest {
        crate::testkit::request(JobConfig {
            workers: 6,
            ps: 3,
            worker_cpu: 3.5,
            worker_mem_mb: 6_000,
            worker_gpu: gpu,
            ps_cpu: 6.0,
            ps_mem_mb: 9_000,
        })
    }

    use crate::testkit::view;

    fn plan<'a>(job: &'a JobView<'a>) -> Plan<'a> {
        let obs = [(cfg(6, 3, 3.5, 6.0), 9_000.0)];
        Plan {
            job,
            model: fit_model(&obs, [0.4, 0.2, 0.2, 0.2]).unwrap(),
            current: job.config,
            thr_now: 9_000.0,
            remaining: 5e7,
            max_cpu: 24.0,
            max_mem: 64 * 1_024,
            ps_mem_used: 8_000.0,
            ps_mem_final: 8_000.0,
            quota_cores: 120.0,
            fixed_pod_cpu: false,
            worker_mem_used: 3_000.0,
            worker_cpu_used: 0.0,
        }
    }

    #[test]
    fn tabled_objectives_equal_the_definition_bit_for_bit() {
        for gpu in [0, 1] {
            let request = request(gpu);
            let job = view(&request);
            let plan = plan(&job);
            let (table, u) = (plan.table(), plan.upper());
            let mut n = 0;
            for w in 0..u[0] {
                for p in 0..u[1] {
                    for cw in 0..u[2] {
                        for cp in 0..u[3] {
                            let g = [w, p, cw, cp];
                            let (a, b) = (plan.objectives(&g), plan.assess(&table, &g).0);
                            assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits), "{g:?}");
                            n += 1;
                        }
                    }
                }
            }
            assert!(n >= 64 * 16 * 7, "{n} genomes");
        }
    }

    /// The coordinate ascent reaches the plan with the best score of the whole space (found
    /// by enumerating every genome) and returns a front: no plan it returns dominates
    /// another.
    #[test]
    fn coordinate_ascent_finds_the_best_plan_and_returns_a_front() {
        let request = request(0);
        let job = view(&request);
        let plan = plan(&job);
        let score = |f: &nsga2::Objectives, thr: f64| {
            let wg = super::super::weight(plan.remaining, thr, 2.5);
            -f[1] / f[0].max(1.0) * wg
        };
        // Every plan within the quota passes, except those that do not grow the job.
        let climb =
            |f: &nsga2::Objectives, thr: f64| feasible(f).then(|| (-f[1] > 0.0, score(f, thr)));
        let front = candidates(&plan, Search::Coordinate, None, &climb);
        for a in &front {
            for b in &front {
                assert!(!nsga2::dominates(&a.1, &b.1), "{a:?} dominates {b:?}");
            }
        }
        let best = |set: &[nsga2::Scored<4>]| {
            set.iter()
                .map(|(g, f)| score(f, plan.throughput(&plan.config(g))))
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let mut all = Vec::new();
        let u = plan.upper();
        for w in 0..u[0] {
            for p in 0..u[1] {
                for cw in 0..u[2] {
                    for cp in 0..u[3] {
                        let g = [w, p, cw, cp];
                        let f = plan.objectives(&g);
                        if feasible(&f) {
                            all.push((g, f));
                        }
                    }
                }
            }
        }
        let (found, exact) = (best(&front), best(&all));
        assert!(
            found > 0.0 && found == exact,
            "ascent {found}, space {exact}"
        );
        // The quota binds: most of the space is over it, and the best plan uses more than
        // 90% of it.
        assert!(all.len() < (u[0] * u[1] * u[2] * u[3] / 2) as usize);
        let (g, _) = front
            .iter()
            .find(|(g, f)| score(f, plan.throughput(&plan.config(g))) == found)
            .unwrap();
        assert!(plan.config(g).total().cpu_cores() > 0.9 * plan.quota_cores);
        // And it is not the starting plan: the job is worth growing.
        assert!(front.iter().any(|(g, _)| plan.config(g) != plan.current));
    }

    /// `choose_split` stops fitting once its choice is certain; the choice is always the
    /// one every split's fit gives (the rule without the early stop), on noisy profiles of
    /// a few configurations, repeated or not, whichever split wins.
    #[test]
    fn choose_split_stops_early_only_when_the_choice_is_certain() {
        use rand::Rng;
        fn exhaustive(obs: &[(Config, f64)], util: (f64, f64)) -> [f64; 4] {
            let splits = candidate_splits(util);
            if obs.iter().all(|o| o.0 == obs[0].0) {
                return splits[0];
            }
            let errs: Vec<f64> = splits.iter().map(|&s| split_error(obs, s)).collect();
            let best = errs.iter().copied().fold(f64::INFINITY, f64::min);
            splits[errs.iter().position(|&e| e <= best + SPLIT_TOLERANCE).unwrap_or(0)]
        }
        let mut rng = RngStreams::new(7).stream("choose-split");
        let configs = [
            cfg(2, 1, 4.0, 4.0),
            cfg(8, 2, 4.0, 8.0),
            cfg(16, 4, 2.0, 8.0),
            cfg(4, 4, 8.0, 2.0),
        ];
        let (mut first_kept, mut later_kept) = (0, 0);
        for case in 0..60 {
            let truth = ThroughputParams {
                a_grad: rng.gen_range(1e-5..1e-3),
                a_upd: rng.gen_range(1e-4..0.05),
                a_sync: rng.gen_range(0.01..5.0),
                a_emb: rng.gen_range(1e-7..1e-4),
                b_grad: 0.001,
                b_upd: 0.001,
                b_sync: 0.001,
                b_emb: 0.001,
            };
            let noise = [0.0, 0.01, 0.05, 0.2][case % 4];
            let seen = 2 + case % 3;
            let obs: Vec<(Config, f64)> = (0..rng.gen_range(2..40))
                .map(|i| {
                    let c = configs[i % seen];
                    let e: f64 = rng.gen_range(-1.0..1.0);
                    (c, truth.throughput(&c) * (noise * e).exp())
                })
                .collect();
            let util = (rng.gen_range(0.0..1.0), rng.gen_range(0.0..1.0));
            let got = choose_split(&obs, util);
            assert_eq!(got, exhaustive(&obs, util), "case {case}");
            let first =
                split_from_utilisation(util.0, util.1, SYNC_FRACTIONS[0], PS_UPDATE_SHARES[0]);
            if got == first {
                first_kept += 1;
            } else {
                later_kept += 1;
            }
        }
        // The first split and later ones are both chosen across the cases.
        assert!(first_kept > 0 && later_kept > 0, "{first_kept} {later_kept}");
    }

    /// Utilisation cannot tell sync from lookups: with one configuration seen the most
    /// optimistic split is kept; once two are seen, a sync-bound job's throughputs refute
    /// it and a lookup-bound job's do not.
    #[test]
    fn choose_split_keeps_the_optimistic_split_until_the_profiles_refute_it() {
        let truth = |a_sync: f64, a_emb: f64| ThroughputParams {
            a_grad: 1.5e-4,
            a_upd: 0.02,
            a_sync,
            a_emb,
            b_grad: 0.001,
            b_upd: 0.001,
            b_sync: 0.001,
            b_emb: 0.001,
        };
        let (c0, c1) = (cfg(2, 1, 4.0, 4.0), cfg(16, 4, 4.0, 4.0));
        let util = (0.1, 0.1);
        let optimistic =
            split_from_utilisation(util.0, util.1, SYNC_FRACTIONS[0], PS_UPDATE_SHARES[0]);
        for (name, t, refuted) in [
            ("sync-bound", truth(6.0, 3e-6), true),
            ("lookup-bound", truth(0.05, 4e-5), false),
        ] {
            let one = [(c0, t.throughput(&c0))];
            assert_eq!(choose_split(&one, util), optimistic, "{name}");
            let two = [one[0], (c1, t.throughput(&c1))];
            assert_eq!(choose_split(&two, util) != optimistic, refuted, "{name}");
        }
    }

    /// No plan sizes a worker below the cores it is seen to use (rounded up to a whole core),
    /// and the floor never rises above the current request, which stays feasible; the
    /// table path agrees bit for bit.
    #[test]
    fn a_worker_keeps_at_least_the_cores_it_is_seen_to_use() {
        let request = request(0);
        let job = view(&request);
        let seen = Plan {
            worker_cpu_used: 2.5,
            ..plan(&job)
        };
        let (table, u) = (seen.table(), seen.upper());
        for cpu in 0..u[2] {
            let g = [5, 2, cpu, 1];
            let c = seen.config(&g);
            assert!(c.worker_cpu >= 2.5, "{c:?}");
            // 2.5 cores rounds up to 3: options of 3 or more stand, smaller ones become 3.
            let option = CPU_OPTIONS[cpu as usize];
            assert_eq!(c.worker_cpu, option.max(3.0));
            assert_eq!(seen.assess(&table, &g).0, seen.objectives(&g));
        }
        // A worker using all of its 3.5 cores keeps them (the floor rounds up to 4, capped
        // at the request).
        let busy = Plan {
            worker_cpu_used: 3.5,
            ..plan(&job)
        };
        assert_eq!(busy.config(&[5, 2, 0, 1]).worker_cpu, 3.5);
    }

    /// A migration re-creates every pod, so it sizes worker memory to what a worker uses;
    /// adding workers keeps their request.
    #[test]
    fn migrations_size_worker_memory_and_adding_workers_keeps_it() {
        let request = request(0);
        let job = view(&request);
        // Per-pod CPU on the options' grid and PS memory not yet observed (kept as
        // requested): adding workers changes nothing else.
        let base = plan(&job);
        let plan = Plan {
            current: JobConfig {
                worker_cpu: 4.0,
                ..base.current
            },
            ps_mem_used: 0.0,
            ps_mem_final: 0.0,
            ..base
        };
        let now = plan.genes_of(&plan.current);
        let more_workers = plan.config(&[now[0] + 2, now[1], now[2], now[3]]);
        assert!(worker_only(&plan.current, &more_workers));
        assert_eq!(more_workers.worker_mem_mb, plan.current.worker_mem_mb);
        let more_ps = plan.config(&[now[0], now[1] + 1, now[2], now[3]]);
        assert_eq!(
            more_ps.worker_mem_mb, 4_608,
            "3,000 MB used x 1.5, in 256 MB steps"
        );
    }

    /// PS memory is right-sized both ways: 1.3x the larger of its use now and its use
    /// predicted at the end, below the request as well as above it.
    #[test]
    fn ps_memory_is_right_sized_both_ways() {
        let request = request(0);
        let job = view(&request);
        let base = plan(&job);
        let at = |used: f64, fin: f64| {
            Plan {
                ps_mem_used: used,
                ps_mem_final: fin,
                ..plan(&job)
            }
            .ps_mem(base.current.ps)
        };
        let requested = base.current.ps_mem_mb;
        let used = requested as f64 / 2.0;
        assert!(
            used * 1.3 > 2_048.0,
            "above the PS runtime floor: {requested}"
        );
        assert_eq!(at(used, used), (used * 1.3).ceil() as u64);
        assert!(at(used, used) < requested, "shrinks below the request");
        assert_eq!(at(4_000.0, 20_000.0), 26_000, "grows for the predicted end");
        assert_eq!(at(0.0, 0.0), requested, "unobserved: as requested");
    }

    /// The end-of-job prediction extrapolates growth per step over the steps left.
    #[test]
    fn ps_memory_at_the_end_extrapolates_growth_per_step() {
        let sample = |t_s: u64, mem: f64| ProfileSample {
            time: dlsim_engine::SimTime::from_secs(t_s),
            running_workers: 2,
            running_ps: 1,
            worker_cpu: 4.0,
            ps_cpu: 4.0,
            steps_per_s: 10.0,
            worker_cpu_used: 1.0,
            ps_cpu_used: 1.0,
            ps_cpu_load_max: 0.25,
            worker_mem_used_mb: 3_000.0,
            ps_mem_used_mb_max: mem,
        };
        // 100 MB over 200 s at 10 steps/s: 0.05 MB per step; 1,000 steps left.
        let h = [
            sample(0, 1_000.0),
            sample(100, 1_050.0),
            sample(200, 1_100.0),
        ];
        assert_eq!(ps_mem_at_end(&h, 1_000.0, 1_100.0), 1_150.0);
        assert_eq!(ps_mem_at_end(&h[1..], 1_000.0, 1_100.0), 1_100.0, "too few");
    }

    /// Plans over the quota are infeasible: the exact front holds none of them.
    #[test]
    fn the_exact_front_stays_within_the_quota() {
        let request = request(0);
        let job = view(&request);
        let plan = Plan {
            quota_cores: 60.0,
            ..plan(&job)
        };
        let front = candidates(
            &plan,
            Search::Exact,
            None,
            &|_: &nsga2::Objectives, _: f64| None,
        );
        assert!(front.len() > 3);
        for (g, f) in &front {
            assert!(feasible(f), "{g:?} {f:?}");
            assert!(plan.config(g).total().cpu_cores() <= 60.0);
        }
        assert!(
            front
                .iter()
                .any(|(g, _)| plan.config(g).total().cpu_cores() > 50.0),
            "the front reaches the quota"
        );
    }

    /// `pod_cpu=fixed` (DLRover Sec. 6.3: pods sized by Table 2): every plan keeps the
    /// job's per-pod CPU and changes counts only, and it still finds more workers worth
    /// taking within the quota.
    #[test]
    fn fixed_pod_cpu_changes_pod_counts_only() {
        let request = request(0);
        let job = view(&request);
        let plan = Plan {
            fixed_pod_cpu: true,
            ..plan(&job)
        };
        assert_eq!(plan.upper()[2..], [1, 1]);
        let climb = |f: &nsga2::Objectives, _: f64| feasible(f).then_some((true, -f[1]));
        for search in [Search::Coordinate, Search::Exact] {
            let front = candidates(&plan, search, None, &climb);
            assert!(!front.is_empty(), "{search:?}");
            for (g, _) in &front {
                let c = plan.config(g);
                assert_eq!((c.worker_cpu, c.ps_cpu), (3.5, 6.0), "{search:?} {g:?}");
                assert!(c.total().cpu_cores() <= plan.quota_cores);
            }
            assert!(
                front.iter().any(|(g, _)| plan.config(g).workers > 6),
                "{search:?}: no plan adds workers"
            );
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
        let fit = fit_model(&obs, [0.25; 4]).unwrap();
        for c in [
            cfg(12, 3, 6.0, 12.0),
            cfg(24, 6, 8.0, 8.0),
            cfg(3, 1, 2.0, 4.0),
        ] {
            let (a, b) = (truth.throughput(&c), fit.throughput(&c));
            assert!((a - b).abs() / a < 0.1, "{c:?}: truth {a} fit {b}");
        }
    }
}
