//! Stage 2, job level: DLRover-RM's throughput model fitted online to the job's profiles
//! (NNLS on log error, Eq. 1-6), and candidate plans on the Pareto front of (resource cost,
//! -throughput gain net of the scaling overhead) (Eq. 7-9), searched by NSGA-II.
//!
//! Simplifications (also in ARCHITECTURE.md): the fit adds a weak "equal split" prior
//! while few configurations have been seen; the bandwidth feature is the nominal 1,250
//! MB/s; per-pod CPU is the request; the overhead of Eq. 8 is a fixed 30 s of lost training
//! for a migration and none for adding workers; 1 core is priced as 4 GB of memory.

use crate::nsga2;
use dlsim_engine::SimRng;
use dlsim_fit::{Config, ThroughputParams};
use dlsim_model::policy::{JobConfig, JobView};
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
/// gradient's share, a PS's busy share of its cores the update's, and the rest is split
/// evenly between parameter sync and embedding lookups. Clamped to [0.05, 0.9] each.
pub fn split_from_utilisation(worker_util: f64, ps_util: f64) -> [f64; 4] {
    let (mut g, mut u) = (worker_util.clamp(0.05, 0.9), ps_util.clamp(0.05, 0.9));
    if g + u > 0.9 {
        let k = 0.9 / (g + u);
        (g, u) = (g * k, u * k);
    }
    let rest = (1.0 - g - u) / 2.0;
    [g, u, rest, rest]
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
}

impl Plan<'_> {
    pub fn upper(&self) -> [u32; 4] {
        let cpus = CPU_OPTIONS.iter().filter(|&&c| c <= self.max_cpu).count() as u32;
        let gpu = self.current.worker_gpu > 0;
        [
            MAX_WORKERS,
            MAX_PS,
            if gpu { 1 } else { cpus.max(1) },
            cpus.max(1),
        ]
    }

    /// Per-PS memory at `ps` PS. The embedding is sharded: PS memory follows the share
    /// each PS holds, with headroom over what the fullest PS uses now.
    fn ps_mem(&self, ps: u32) -> u64 {
        let now = (self.ps_mem_used * 1.3).max(self.current.ps_mem_mb as f64);
        (resplit_ps_mem(now, self.current.ps, ps).ceil() as u64).clamp(1_024, self.max_mem)
    }

    pub fn config(&self, g: &[u32; 4]) -> JobConfig {
        self.config_with(g, self.ps_mem(g[1] + 1))
    }

    fn config_with(&self, g: &[u32; 4], ps_mem_mb: u64) -> JobConfig {
        let gpu = self.current.worker_gpu > 0;
        JobConfig {
            workers: g[0] + 1,
            ps: g[1] + 1,
            worker_cpu: if gpu {
                self.current.worker_cpu
            } else {
                CPU_OPTIONS[g[2] as usize]
            },
            ps_cpu: CPU_OPTIONS[g[3] as usize],
            ps_mem_mb,
            ..self.current
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

    /// The plan at genome `g` with the current PS memory: its counts and per-pod CPU as
    /// [`Plan::config`] gives them, without working out the PS memory split.
    pub fn sized(&self, g: &[u32; 4]) -> JobConfig {
        self.config_with(g, self.current.ps_mem_mb)
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
        let thr = self.throughput(c);
        let overhead_s = if worker_only(&self.current, c) {
            0.0
        } else {
            MIGRATION_OVERHEAD_S
        };
        let remaining_s = (self.remaining / thr.max(1e-9)).max(1.0);
        thr - self.thr_now - thr * (overhead_s / remaining_s).min(1.0)
    }

    pub fn objectives(&self, g: &[u32; 4]) -> nsga2::Objectives {
        let c = self.config(g);
        [self.cost(&c), -self.gain(&c)]
    }

    /// What every genome of this plan shares, computed once per search.
    fn table(&self) -> Table {
        let milli = |cores: f64| Resources::new(cores, 0, 0).cpu_milli;
        let gpu = self.current.worker_gpu > 0;
        let now = self.current.total();
        Table {
            ps_mem: std::array::from_fn(|i| self.ps_mem(i as u32 + 1)),
            worker_milli: CPU_OPTIONS.map(|c| milli(if gpu { self.current.worker_cpu } else { c })),
            ps_milli: CPU_OPTIONS.map(milli),
            now_cores: now.cpu_cores(),
            now_mem: now.mem_mb as f64,
        }
    }

    /// [`Plan::objectives`] from the plan's table: the same integers and the same floating
    /// operations as `cost` and `gain` on `config`, so the same bits, without re-deriving
    /// the PS memory split and per-pod requests for every genome.
    fn objectives_with(&self, t: &Table, g: &[u32; 4]) -> nsga2::Objectives {
        let ps_mem = t.ps_mem[g[1] as usize];
        let c = self.config_with(g, ps_mem);
        let (w, p) = (u64::from(c.workers), u64::from(c.ps));
        let cpu_milli = t.worker_milli[g[2] as usize] * w + t.ps_milli[g[3] as usize] * p;
        let mem_mb = c.worker_mem_mb * w + ps_mem * p;
        let cost = (cpu_milli as f64 / 1000.0 - t.now_cores)
            + (mem_mb as f64 - t.now_mem) / MB_PER_CORE_PRICE;
        [cost, -self.gain(&c)]
    }
}

/// Per-plan constants for [`Plan::objectives_with`].
struct Table {
    /// Per-PS memory by PS count - 1.
    ps_mem: [u64; MAX_PS as usize],
    /// Per-pod CPU requests in millicores by CPU option.
    worker_milli: [u64; CPU_OPTIONS.len()],
    ps_milli: [u64; CPU_OPTIONS.len()],
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

/// How [`Search::Coordinate`] ranks a plan: plans that pass the policy's filters first,
/// then by score; `None` for plans it may not take at all.
pub type Climb<'a> = &'a dyn Fn(&[u32; 4], &nsga2::Objectives) -> Option<(bool, f64)>;

/// Coordinate ascent from the current configuration on `climb`: each sweep tries every
/// value of one gene at a time, the others fixed, and moves to the best plan found, until
/// a sweep finds nothing better (at most 8 sweeps, about 100 evaluations each). Returns
/// the first front of the plans it visited that pass the filters, so the greedy still has
/// cheaper fallbacks when the best plan does not fit.
fn coordinate(
    upper: &[u32; 4],
    start: [u32; 4],
    eval: &mut dyn FnMut(&[u32; 4]) -> nsga2::Objectives,
    climb: Climb<'_>,
) -> Vec<nsga2::Scored<4>> {
    type Rank = (bool, f64);
    const NEVER: Rank = (false, f64::NEG_INFINITY);
    // Only looked up during the ascent; the front is sorted by genome.
    let mut seen: rustc_hash::FxHashMap<[u32; 4], (nsga2::Objectives, Rank)> =
        rustc_hash::FxHashMap::with_capacity_and_hasher(512, Default::default());
    let mut visit = |g: [u32; 4]| {
        seen.entry(g)
            .or_insert_with(|| {
                let f = eval(&g);
                (f, climb(&g, &f).unwrap_or(NEVER))
            })
            .1
    };
    let better = |a: Rank, b: Rank| (a.0 && !b.0) || (a.0 == b.0 && a.1 > b.1);
    let mut at = start;
    let mut best = visit(at);
    for _ in 0..8 {
        let mut moved = false;
        for k in 0..4 {
            let mut line = at;
            for v in 0..upper[k] {
                line[k] = v;
                let r = visit(line);
                if better(r, best) {
                    (best, at, moved) = (r, line, true);
                }
            }
        }
        if !moved {
            break;
        }
    }
    let passing: Vec<nsga2::Scored<4>> = seen
        .into_iter()
        .filter(|(_, (_, r))| r.0)
        .map(|(g, (f, _))| (g, f))
        .collect();
    nsga2::first_front(&passing)
}

/// Pareto candidates for one job.
/// `climb` scores a plan for [`Search::Coordinate`]; the other searches ignore it.
pub fn candidates(
    plan: &Plan<'_>,
    search: Search,
    rng: &mut SimRng,
    climb: Climb<'_>,
) -> Vec<nsga2::Scored<4>> {
    let upper = plan.upper();
    let start = plan.genes_of(&plan.current);
    let table = plan.table();
    let mut eval = |g: &[u32; 4]| plan.objectives_with(&table, g);
    match search {
        Search::Exact => return nsga2::exhaustive(&upper, &mut eval),
        Search::Nsga(settings) => return nsga2::run(&upper, &[start], &mut eval, settings, rng),
        Search::Coordinate => return coordinate(&upper, start, &mut eval, climb),
        Search::Neighbours => {}
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
        dlsim_model::policy::JobRequest {
            id: 1,
            user: "u".into(),
            model: dlsim_traces::ModelKind::WideDeep,
            batch_size: 512,
            steps: 100_000,
            dense_mb: 40.0,
            emb_dim: 16,
            priority: 0,
            submit: dlsim_engine::SimTime::ZERO,
            requested: JobConfig {
                workers: 6,
                ps: 3,
                worker_cpu: 3.5,
                worker_mem_mb: 6_000,
                worker_gpu: gpu,
                ps_cpu: 6.0,
                ps_mem_mb: 9_000,
            },
        }
    }

    fn view(request: &dlsim_model::policy::JobRequest) -> JobView<'_> {
        use dlsim_model::policy::{JobPhase, Sharding};
        JobView {
            request,
            phase: JobPhase::Training,
            config: request.requested,
            running_workers: 6,
            running_ps: 3,
            pending_pods: 0,
            steps_done: 1_000,
            history: &[],
            oom_kills: 0,
            sharding: Sharding::Dynamic,
            pods: Vec::new(),
            events: &[],
            rescaling: false,
            restarts: [0, 0],
        }
    }

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
                            let (a, b) = (plan.objectives(&g), plan.objectives_with(&table, &g));
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
        let score = |g: &[u32; 4], f: &nsga2::Objectives| {
            let wg = super::super::weight(plan.remaining, plan.throughput(&plan.sized(g)), 2.5);
            -f[1] / f[0].max(1.0) * wg
        };
        // Every plan passes, except those that do not grow the job.
        let climb = |g: &[u32; 4], f: &nsga2::Objectives| Some((-f[1] > 0.0, score(g, f)));
        let mut rng = dlsim_engine::RngStreams::new(1).stream("unused");
        let front = candidates(&plan, Search::Coordinate, &mut rng, &climb);
        for a in &front {
            for b in &front {
                assert!(!nsga2::dominates(&a.1, &b.1), "{a:?} dominates {b:?}");
            }
        }
        let best = |set: &[nsga2::Scored<4>]| {
            set.iter()
                .map(|(g, f)| score(g, f))
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let mut all = Vec::new();
        let u = plan.upper();
        for w in 0..u[0] {
            for p in 0..u[1] {
                for cw in 0..u[2] {
                    for cp in 0..u[3] {
                        let g = [w, p, cw, cp];
                        all.push((g, plan.objectives(&g)));
                    }
                }
            }
        }
        let (found, exact) = (best(&front), best(&all));
        assert!(
            found > 0.0 && found == exact,
            "ascent {found}, space {exact}"
        );
        // And it is not the starting plan: the job is worth growing.
        assert!(front.iter().any(|(g, _)| plan.config(g) != plan.current));
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
