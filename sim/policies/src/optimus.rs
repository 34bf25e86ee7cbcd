//! `optimus`: the Optimus scheduler (Peng et al., EuroSys 2018) as DLRover's evaluation
//! configured it (DLRover Sec. 6.3).
//!
//! Decision rule, per job, once it has trained `sample_s` (60 s) at its current configuration
//! and at least `interval_s` (3 min) after its previous decision: DLRover Sec. 6.3's
//! "interval of the adjustment is 3 min which contains about 20 s to launch Pods, about
//! 100 s to initialize training and 60 s to sample", so a job is judged on a minute of
//! samples after each restart, whatever the restart took (until 2026-11-27 decisions fell
//! on a fixed 3-min grid, and with this world's restarts of about 4 min, checkpoint included,
//! every other grid point found the job restarting):
//! 1. **Speed model.** Each job's observed (PS, workers, steps/s) profile samples are
//!    averaged per (p, w) and the asynchronous speed function
//!    `f(p, w) = w / (t0 + t1 w/p + t2 w + t3 p)` is fitted by NNLS (`dlsim_fit`). It needs
//!    at least 4 distinct (p, w) points, so a new job is launched small (one step: 2 PS and 4
//!    workers for Wide&Deep, 1 and 1 for xDeepFM) and *profiled*: stepped up by workers, PS,
//!    workers until 4 points are seen (points met while pods come up count too). Its pods
//!    have the user's cores, or `worker_cpu` / `ps_cpu` (DLRover Sec. 6.3 sized them per
//!    its Table 2; [`PodShape`]).
//! 2. **Remaining work.** Optimus fits a loss curve to predict the steps left to
//!    convergence; DLRM jobs here run a fixed step count, so the remaining steps are read
//!    from progress (`steps - steps_done`) and no loss-curve fit is needed.
//! 3. **Greedy allocation.** For each fitted job, the gain of one more worker step or one
//!    more PS step is the drop in remaining time `Q/f(p,w) - Q/f(p',w')` divided by the
//!    step's dominant share of cluster capacity. The best option of each job sits in a
//!    max-heap across jobs; the top is popped and granted if its pods fit the free nodes,
//!    then the job's next option is pushed. Allocation stops when the top gain is `<= 0`
//!    or the heap is empty (nothing fits).
//! 4. **Applying.** A job whose counts changed is moved with one stop-and-restart
//!    (checkpoint, new pods, reload): Optimus' MXNet implementation rescales by
//!    checkpoint-restart, and the job uses static data partitioning, so worker changes
//!    restart as well. Per-pod CPU stays at the user's configuration. With
//!    `rescale=migrate` the same decisions are carried out by DLRover-RM's framework
//!    instead (seamless migration, dynamic data sharding): Optimus as a plug-in algorithm
//!    (DLRover-RM Sec. 4.3), as its Sec. 6.2 ablation compares schedulers that adjust a job
//!    'every three minutes' (Fig. 10).
//!
//! Simplifications (ARCHITECTURE.md, "Policies"): Optimus recomputes every allocation from
//! scratch each interval; here the greedy only hands out free capacity on top of the
//! current allocations (shrinking a job would cost a restart for no speed gain of its own).
//! Free capacity is the nodes' free room minus the pods already waiting to be placed, so
//! new arrivals are not starved by growth. DLRover's evaluation capped a job at 200 cores
//! (`max_cores`; never below the cores the job asked for, `core_budget`). PS memory keeps
//! the user's total PS memory when there are fewer PS than requested, so a smaller PS count
//! does not run out of memory sooner, and a launch takes at least the PS that hold that
//! total on the largest node (`min_ps_for_memory`).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

use crate::spec::{param, PodShape, PolicyDoc, PolicySpec, SpecError};
use dlsim_engine::SimTime;
use dlsim_fit::{OptimusObs, OptimusParams};
use dlsim_model::policy::{
    Action, ClusterView, JobConfig, JobPhase, JobView, Jobs, Policy, RescaleMethod, Sharding,
};
use dlsim_model::{Node, Resources};
use dlsim_traces::ModelKind;

/// Distinct (p, w) points the four-coefficient speed function needs.
pub const MIN_POINTS: usize = 4;
/// How often the policy looks for jobs that are due (the ticks in between are skipped,
/// [`Policy::quiet_until`]).
const TICK: SimTime = SimTime::from_secs(20);

/// Per-kind step sizes: (PS, workers).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Steps {
    pub wide_deep: (u32, u32),
    pub xdeepfm: (u32, u32),
    /// Not in DLRover's evaluation; assumption: between the two (1 PS, 2 workers).
    pub dcn: (u32, u32),
}

impl Steps {
    pub fn of(&self, kind: ModelKind) -> (u32, u32) {
        match kind {
            ModelKind::WideDeep => self.wide_deep,
            ModelKind::Xdeepfm => self.xdeepfm,
            ModelKind::Dcn => self.dcn,
        }
    }
}

/// What the policy keeps about one job.
#[derive(Clone, Debug, Default)]
struct JobState {
    /// (ps, workers) -> (sum of steps/s, samples).
    points: BTreeMap<(u32, u32), (f64, u32)>,
    seen_until: Option<SimTime>,
    /// Profiling steps taken so far (alternating workers, PS, workers).
    profile_steps: u32,
    /// The last fit and the samples it saw (`seen_until`): a job with no new sample is
    /// not refitted at every tick.
    fit: Option<(Option<SimTime>, Option<OptimusParams>)>,
    /// The (ps, workers) the job was last seen training at, and since when.
    trained: Option<((u32, u32), SimTime)>,
    /// When the job was last judged (a profiling step or a greedy entry).
    decided: Option<SimTime>,
    /// Whether a sample at its current counts has come in: until one does, the job waits
    /// for it (a new sample marks the job changed, which wakes the policy) and not for a
    /// timer.
    measured: bool,
}

impl JobState {
    /// Notes whether `job` trains at its configured counts now, and since when.
    fn watch(&mut self, job: &JobView<'_>, now: SimTime) {
        let at = (job.config.ps, job.config.workers);
        let training = job.phase == JobPhase::Training
            && !job.rescaling
            && job.running_ps == job.config.ps
            && job.running_workers == job.config.workers;
        if !training {
            self.trained = None;
        } else if self.trained.is_none_or(|(c, _)| c != at) {
            self.trained = Some((at, now));
        }
    }

    /// When the job may be judged next; `None` while it does not train. After a (re)start:
    /// `sample` after it began training at its current counts, and at least `interval`
    /// after its last decision. A job that trains on unchanged since its last decision is
    /// judged on the common grid of `interval`: every such job at the same instants, so a
    /// long replay pays one tick per interval for all of them.
    fn due(&self, sample: SimTime, interval: SimTime) -> Option<SimTime> {
        let (_, since) = self.trained?;
        let after_sample = since.saturating_add(sample);
        Some(match self.decided {
            None => after_sample,
            Some(d) if since > d => after_sample.max(d.saturating_add(interval)),
            Some(d) => {
                let step = interval.as_ms().max(1);
                SimTime::from_ms((d.as_ms() / step + 1).saturating_mul(step))
            }
        })
    }

    fn absorb(&mut self, job: &JobView<'_>) {
        for s in job.history {
            if self.seen_until.is_some_and(|t| s.time <= t) {
                continue;
            }
            self.seen_until = Some(s.time);
            if s.running_ps > 0 && s.running_workers > 0 && s.steps_per_s > 0.0 {
                let e = self
                    .points
                    .entry((s.running_ps, s.running_workers))
                    .or_insert((0.0, 0));
                e.0 += s.steps_per_s;
                e.1 += 1;
            }
        }
    }

    fn observations(&self) -> Vec<OptimusObs> {
        self.points
            .iter()
            .map(|(&(p, w), &(sum, n))| OptimusObs {
                ps: f64::from(p),
                workers: f64::from(w),
                speed: sum / f64::from(n),
            })
            .collect()
    }
}

pub struct Optimus {
    canonical: String,
    interval: SimTime,
    sample: SimTime,
    steps: Steps,
    max_cores: f64,
    pods: PodShape,
    /// How a rescale is carried out: Optimus' own stop-and-restart, or DLRover-RM's
    /// seamless migration when Optimus runs as a plug-in algorithm on its framework.
    method: RescaleMethod,
    jobs: BTreeMap<u64, JobState>,
}

/// `optimus`'s parameters (`dlsim policies`).
pub const DOC: PolicyDoc = PolicyDoc {
    name: "optimus",
    summary: "Optimus (EuroSys'18): fitted speed function, greedy by time saved per dominant share, stop-and-restart rescaling (or, as a plug-in, DLRover-RM's migration)",
    params: &[
        param("interval_s", "number >= 1", "180", "at least this long between two decisions on a job (s)"),
        param("sample_s", "number >= 0", "60", "a job is judged after training this long at its configuration (s; DLRover Sec. 6.3)"),
        param("max_cores", "number > 0", "200", "per-job core budget (DLRover's evaluation), never below the cores the job asked for"),
        param("wd_ps", "count 1..=1000", "2", "Wide&Deep: PS per step (a new job launches at one step)"),
        param("wd_workers", "count 1..=1000", "4", "Wide&Deep: workers per step"),
        param("xdfm_ps", "count 1..=1000", "1", "xDeepFM: PS per step"),
        param("xdfm_workers", "count 1..=1000", "1", "xDeepFM: workers per step"),
        param("dcn_ps", "count 1..=1000", "1", "DCN: PS per step"),
        param("dcn_workers", "count 1..=1000", "2", "DCN: workers per step"),
        param("worker_cpu", "cores", "-", "cores of every worker (default: the user's; DLRover Sec. 6.3 sized them per its Table 2)"),
        param("ps_cpu", "cores", "-", "cores of every PS (default: the user's)"),
        param("rescale", "restart|migrate", "restart", "restart: Optimus' own checkpoint-restart with static data partitioning; migrate: Optimus' decisions carried out by DLRover-RM's framework (seamless migration, dynamic sharding), as a plug-in algorithm (DLRover-RM Sec. 4.3)"),
    ],
};

/// This policy's registry entry (`crate::POLICIES`): its documentation and its builder.
pub const POLICY: crate::Registered<dyn dlsim_model::policy::Policy> = crate::Registered {
    doc: &DOC,
    build: |spec| Ok(Box::new(Optimus::from_spec(spec)?)),
};

impl Optimus {
    pub fn from_spec(spec: &PolicySpec) -> Result<Self, SpecError> {
        spec.only(&DOC.param_names())?;
        let interval_s = spec.f64_or("interval_s", 180.0)?;
        if interval_s < 1.0 {
            return Err(spec.bad_value("interval_s", "must be >= 1"));
        }
        let sample_s = spec.f64_or("sample_s", 60.0)?;
        if sample_s < 0.0 {
            return Err(spec.bad_value("sample_s", "must be >= 0"));
        }
        let max_cores = spec.f64_or("max_cores", 200.0)?;
        if max_cores <= 0.0 {
            return Err(spec.bad_value("max_cores", "must be > 0"));
        }
        Ok(Optimus {
            canonical: spec.canonical(),
            interval: SimTime::from_secs_f64_ceil(interval_s),
            sample: SimTime::from_secs_f64_ceil(sample_s),
            steps: Steps {
                wide_deep: (spec.count_or("wd_ps", 2)?, spec.count_or("wd_workers", 4)?),
                xdeepfm: (
                    spec.count_or("xdfm_ps", 1)?,
                    spec.count_or("xdfm_workers", 1)?,
                ),
                dcn: (
                    spec.count_or("dcn_ps", 1)?,
                    spec.count_or("dcn_workers", 2)?,
                ),
            },
            max_cores,
            pods: PodShape::from_spec(spec, false)?,
            method: match spec.params.get("rescale").map(String::as_str) {
                None | Some("restart") => RescaleMethod::StopRestart,
                Some("migrate") => RescaleMethod::Migrate,
                Some(_) => return Err(spec.bad_value("rescale", "expected restart or migrate")),
            },
            jobs: BTreeMap::new(),
        })
    }
}

/// A job's core budget: `max_cores` (DLRover's evaluation gave each job 200), but never
/// fewer cores than the user asked for: a budget under the request would hold a job of a
/// public trace that asked for 64-core PS at one worker for its whole life.
pub(crate) fn core_budget(max_cores: f64, job: &JobView<'_>) -> f64 {
    max_cores.max(job.request.requested.total().cpu_cores())
}

/// The fewest PS that hold the user's total PS memory when none may exceed the largest
/// node (`max_node_mem_mb`): below it [`ps_mem_mb_for`]'s cap would shrink the job's total
/// PS memory. At most the user's count, whose pods the cluster admitted.
pub(crate) fn min_ps_for_memory(requested: &JobConfig, max_node_mem_mb: u64) -> u32 {
    let total = requested.ps_mem_mb * u64::from(requested.ps);
    let fewest = total.div_ceil(max_node_mem_mb.max(1));
    u32::try_from(fewest).unwrap_or(u32::MAX).min(requested.ps)
}

/// Memory per PS for `p` PS: the user's per-PS request, or the user's total PS memory
/// spread over fewer PS, capped by the largest node.
pub(crate) fn ps_mem_mb_for(requested: &JobConfig, p: u32, max_node_mem_mb: u64) -> u64 {
    if p == 0 || p >= requested.ps {
        return requested.ps_mem_mb;
    }
    let total = requested.ps_mem_mb * u64::from(requested.ps);
    total
        .div_ceil(u64::from(p))
        .min(max_node_mem_mb.max(requested.ps_mem_mb))
}

/// Free room per node, to check that pods a policy is about to ask for would be placed.
/// Built on the first `take` (a tick that asks for nothing pays nothing): a copy of each
/// node's free room with the pods every job is still waiting to have placed set aside, so
/// that growth does not take the room of queued pods.
pub struct FreeNodes<'a> {
    nodes: &'a [Node],
    /// The jobs whose pending pods are set aside (none for [`FreeNodes::of_nodes`]).
    jobs: Option<Jobs<'a>>,
    free: Option<Vec<Resources>>,
}

impl<'a> FreeNodes<'a> {
    pub fn new(view: &ClusterView<'a>) -> Self {
        FreeNodes {
            nodes: view.nodes,
            jobs: Some(view.jobs),
            free: None,
        }
    }

    /// The free room of `nodes` as they are, with no pending pods to set aside.
    pub fn of_nodes(nodes: &'a [Node]) -> Self {
        FreeNodes {
            nodes,
            jobs: None,
            free: None,
        }
    }

    fn built(&mut self) -> &mut Vec<Resources> {
        if self.free.is_none() {
            let mut free = FreeNodes {
                nodes: self.nodes,
                jobs: self.jobs,
                free: Some(self.nodes.iter().map(Node::free).collect()),
            };
            free.reserve_pending();
            self.free = free.free;
        }
        self.free.as_mut().expect("built")
    }

    /// First-fits `n` pods of `req`; takes them all or none.
    pub fn take(&mut self, req: Resources, n: u32) -> bool {
        if n == 0 {
            return true;
        }
        let free = self.built();
        let mut taken = Vec::new();
        for _ in 0..n {
            match free.iter().position(|f| req.fits_in(f)) {
                Some(i) => {
                    free[i] -= req;
                    taken.push(i);
                }
                None => {
                    for i in taken {
                        free[i] += req;
                    }
                    return false;
                }
            }
        }
        true
    }

    /// Without per-pod views the roles of pending pods are inferred: missing PS first,
    /// then workers. Only jobs with pending pods take anything.
    fn reserve_pending(&mut self) {
        let Some(jobs) = self.jobs else {
            return;
        };
        for job in jobs.iter() {
            if job.pending_pods == 0 {
                continue;
            }
            let ps = job
                .pending_pods
                .min(job.config.ps.saturating_sub(job.running_ps));
            let workers = job.pending_pods - ps;
            self.take_up_to(job.config.ps_request(), ps);
            self.take_up_to(job.config.worker_request(), workers);
        }
    }

    fn take_up_to(&mut self, req: Resources, n: u32) {
        for _ in 0..n {
            if !self.take(req, 1) {
                return;
            }
        }
    }
}

/// Share of the dominant resource that `r` takes of `capacity`.
pub(crate) fn dominant_share(r: Resources, capacity: Resources) -> f64 {
    let share = |x: f64, cap: f64| if cap > 0.0 { x / cap } else { 0.0 };
    share(r.cpu_milli as f64, capacity.cpu_milli as f64)
        .max(share(r.mem_mb as f64, capacity.mem_mb as f64))
        .max(share(f64::from(r.gpu), f64::from(capacity.gpu)))
}

/// One option in the greedy heap: give `job` the counts `to`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// Seconds of remaining time saved per unit of dominant share.
    pub score: f64,
    pub job: u64,
    /// (ps, workers) after the step.
    pub to: (u32, u32),
}

impl Eq for Candidate {}

impl Ord for Candidate {
    /// Higher score first; ties go to the lower job id (older job), so order is exact.
    fn cmp(&self, o: &Self) -> Ordering {
        self.score
            .total_cmp(&o.score)
            .then_with(|| o.job.cmp(&self.job))
            .then_with(|| o.to.cmp(&self.to))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// A fitted job as the greedy sees it.
#[derive(Clone, Debug)]
pub struct Fitted {
    pub job: u64,
    pub model: OptimusParams,
    pub remaining_steps: f64,
    /// Current (ps, workers) and the step sizes.
    pub at: (u32, u32),
    pub step: (u32, u32),
    pub ps_request: Resources,
    pub worker_request: Resources,
    /// The job's core budget (`core_budget`): no step takes it beyond.
    pub budget: f64,
}

impl Fitted {
    fn remaining_s(&self, (p, w): (u32, u32)) -> f64 {
        let f = self.model.predict(f64::from(p), f64::from(w));
        if f > 0.0 {
            self.remaining_steps / f
        } else {
            f64::INFINITY
        }
    }

    fn cores(&self, (p, w): (u32, u32)) -> f64 {
        f64::from(p) * self.ps_request.cpu_cores() + f64::from(w) * self.worker_request.cpu_cores()
    }

    /// The better of one more worker step and one more PS step, if either is allowed.
    pub fn best_option(&self, capacity: Resources) -> Option<Candidate> {
        let (p, w) = self.at;
        let (dp, dw) = self.step;
        let now_s = self.remaining_s(self.at);
        let options = [
            ((p, w + dw), self.worker_request.scaled(u64::from(dw))),
            ((p + dp, w), self.ps_request.scaled(u64::from(dp))),
        ];
        options
            .into_iter()
            .filter(|(to, _)| self.cores(*to) <= self.budget + 1e-9)
            .map(|(to, res)| {
                let gain_s = now_s - self.remaining_s(to);
                let share = dominant_share(res, capacity).max(1e-12);
                let score = if gain_s.is_finite() {
                    gain_s / share
                } else {
                    0.0
                };
                Candidate {
                    score,
                    job: self.job,
                    to,
                }
            })
            .max()
    }
}

/// Optimus' greedy: pops the best gain per dominant share across jobs, grants it if its
/// pods fit, pushes the job's next option; stops at a gain `<= 0` or an empty heap.
/// Returns the new (ps, workers) of every job that grew, in grant order.
pub fn greedy(
    mut jobs: Vec<Fitted>,
    free: &mut FreeNodes,
    capacity: Resources,
) -> Vec<(u64, (u32, u32))> {
    let mut heap: BinaryHeap<Candidate> = jobs
        .iter()
        .filter_map(|j| j.best_option(capacity))
        .collect();
    let mut granted: Vec<(u64, (u32, u32))> = Vec::new();
    while let Some(top) = heap.pop() {
        if top.score <= 0.0 {
            break;
        }
        let Some(job) = jobs.iter_mut().find(|j| j.job == top.job) else {
            continue;
        };
        let (ps_more, w_more) = (top.to.0 - job.at.0, top.to.1 - job.at.1);
        let fits = free.take(job.ps_request, ps_more) && free.take(job.worker_request, w_more);
        if !fits {
            // Nothing more of this job fits now; it leaves the heap for this interval.
            continue;
        }
        job.at = top.to;
        match granted.iter_mut().find(|g| g.0 == top.job) {
            Some(g) => g.1 = top.to,
            None => granted.push((top.job, top.to)),
        }
        if let Some(next) = job.best_option(capacity) {
            heap.push(next);
        }
    }
    granted
}

/// The next profiling configuration: alternately one worker step and one PS step; the
/// other kind when that one is not `allowed` (over the per-job cap); `None` when neither is
/// (the job is at its cap, where the greedy would not grow it either).
fn profile_next(
    at: (u32, u32),
    step: (u32, u32),
    taken: u32,
    allowed: impl Fn((u32, u32)) -> bool,
) -> Option<(u32, u32)> {
    let workers = (at.0, at.1 + step.1);
    let ps = (at.0 + step.0, at.1);
    let order = if taken.is_multiple_of(2) {
        [workers, ps]
    } else {
        [ps, workers]
    };
    order.into_iter().find(|&to| allowed(to))
}

/// Cores of `(ps, workers)` pods of `config`'s sizes.
fn cores_at(config: &JobConfig, (p, w): (u32, u32)) -> f64 {
    f64::from(p) * config.ps_cpu + f64::from(w) * config.worker_cpu
}

/// A job the policy may rescale now (after [`JobState::watch`] saw it this tick): with PS,
/// its current counts measured at least once, and due ([`JobState::due`], which is `None`
/// unless the job trains at its configured counts with no rescale under way).
fn ready(job: &JobView<'_>, st: &JobState, now: SimTime, sample: SimTime, interval: SimTime) -> bool {
    job.config.ps > 0 && st.measured && st.due(sample, interval).is_some_and(|t| now >= t)
}

impl Optimus {
    fn rescale(
        method: RescaleMethod,
        job: &JobView<'_>,
        (p, w): (u32, u32),
        max_mem: u64,
    ) -> Action {
        let config = JobConfig {
            ps: p,
            workers: w,
            ps_mem_mb: ps_mem_mb_for(&job.request.requested, p, max_mem),
            ..job.config
        };
        Action::Rescale {
            job: job.request.id,
            config,
            method,
        }
    }

    /// Profiling moves for jobs with too few points; the others become greedy entries.
    fn profile_or_fit(
        &mut self,
        view: &ClusterView<'_>,
        free: &mut FreeNodes,
        actions: &mut Vec<Action>,
    ) -> Vec<Fitted> {
        let max_mem = view.node_max.mem_mb;
        let mut fitted = Vec::new();
        // Only the jobs Optimus manages (those with PSes), looked up one by one.
        let ids: Vec<u64> = self.jobs.keys().copied().collect();
        for job in ids.into_iter().filter_map(|id| view.jobs.get(id)) {
            let job = &job;
            let Some(st) = self.jobs.get_mut(&job.request.id) else {
                continue;
            };
            st.absorb(job);
            st.watch(job, view.now);
            st.measured = st.points.contains_key(&(job.config.ps, job.config.workers));
            if !ready(job, st, view.now, self.sample, self.interval) {
                continue;
            }
            st.decided = Some(view.now);
            let at = (job.config.ps, job.config.workers);
            let step = self.steps.of(job.request.model);
            let budget = core_budget(self.max_cores, job);
            if st.points.len() < MIN_POINTS {
                let allowed = |to| cores_at(&job.config, to) <= budget + 1e-9;
                let Some(to) = profile_next(at, step, st.profile_steps, allowed) else {
                    continue;
                };
                let (dp, dw) = (to.0 - at.0, to.1 - at.1);
                if free.take(job.config.ps_request(), dp)
                    && free.take(job.config.worker_request(), dw)
                {
                    st.profile_steps += 1;
                    actions.push(Self::rescale(self.method, job, to, max_mem));
                }
                continue;
            }
            let model = match st.fit {
                Some((seen, model)) if seen == st.seen_until => model,
                _ => {
                    let model = OptimusParams::fit(&st.observations()).ok();
                    st.fit = Some((st.seen_until, model));
                    model
                }
            };
            let Some(model) = model else {
                continue;
            };
            fitted.push(Fitted {
                job: job.request.id,
                model,
                remaining_steps: job.request.steps.saturating_sub(job.steps_done) as f64,
                at,
                step,
                ps_request: job.config.ps_request(),
                worker_request: job.config.worker_request(),
                budget,
            });
        }
        fitted
    }
}

impl Policy for Optimus {
    fn spec(&self) -> String {
        self.canonical.clone()
    }

    fn pod_cores(&self) -> Vec<(&'static str, f64)> {
        self.pods.pod_cores()
    }

    /// Static partitioning for Optimus' own restarts; DLRover-RM's dynamic sharding when
    /// its framework carries out the decisions (`rescale=migrate`).
    fn sharding(&self) -> Sharding {
        match self.method {
            RescaleMethod::StopRestart => Sharding::Static,
            RescaleMethod::Migrate => Sharding::Dynamic,
        }
    }

    fn tick_interval(&self) -> Option<SimTime> {
        Some(TICK)
    }

    /// A tick does something only for a job that changed or one that is due.
    fn quiet_until(&self) -> Option<SimTime> {
        Some(
            self.jobs
                .values()
                .filter(|st| st.measured)
                .filter_map(|st| st.due(self.sample, self.interval))
                .min()
                .unwrap_or(SimTime::MAX),
        )
    }

    fn on_submit(&mut self, job: &JobView<'_>, view: &ClusterView<'_>) -> Vec<Action> {
        let req = self.pods.apply(job.request.requested);
        let config = if req.ps == 0 {
            // No PS (an all-reduce job from an imported trace): outside Optimus' model.
            req
        } else {
            self.jobs.insert(job.request.id, JobState::default());
            // One step of each, with fewer workers if that would pass the per-job cap, and
            // at least the PS that hold the user's total PS memory on the cluster's nodes
            // (fewer would cap each PS at the largest node and shrink the total: a job that
            // asked for hundreds of large PS was OOM-killed on two until it failed).
            let (p, mut w) = self.steps.of(job.request.model);
            let p = p.max(min_ps_for_memory(&req, view.node_max.mem_mb));
            let budget = core_budget(self.max_cores, job);
            while w > 1 && cores_at(&req, (p, w)) > budget {
                w -= 1;
            }
            JobConfig {
                ps: p,
                workers: w,
                ps_mem_mb: ps_mem_mb_for(&req, p, view.node_max.mem_mb),
                ..req
            }
        };
        vec![Action::Launch {
            job: job.request.id,
            config,
        }]
    }

    fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<Action> {
        view.forget_ended(&mut self.jobs);
        let mut free = FreeNodes::new(view);
        let mut actions = Vec::new();
        let fitted = self.profile_or_fit(view, &mut free, &mut actions);
        let max_mem = view.node_max.mem_mb;
        for (id, to) in greedy(fitted, &mut free, view.capacity) {
            if let Some(job) = view.jobs.get(id) {
                actions.push(Self::rescale(self.method, &job, to, max_mem));
            }
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cores: f64) -> Node {
        Node::new("n".into(), Resources::new(cores, 1 << 20, 0), String::new())
    }

    fn fitted(job: u64, t: [f64; 4], remaining_steps: f64, at: (u32, u32)) -> Fitted {
        Fitted {
            job,
            model: OptimusParams {
                t0: t[0],
                t1: t[1],
                t2: t[2],
                t3: t[3],
            },
            remaining_steps,
            at,
            step: (1, 1),
            ps_request: Resources::new(4.0, 1024, 0),
            worker_request: Resources::new(4.0, 1024, 0),
            budget: f64::INFINITY,
        }
    }

    #[test]
    fn spec_exposes_step_sizes_and_interval() {
        let o = Optimus::from_spec(&PolicySpec::parse("optimus[wd_workers=8]").unwrap()).unwrap();
        assert_eq!(o.steps.wide_deep, (2, 8));
        assert_eq!(o.steps.xdeepfm, (1, 1));
        assert_eq!(o.interval, SimTime::from_secs(180));
        assert_eq!(o.spec(), "optimus[wd_workers=8]");
        assert!(Optimus::from_spec(&PolicySpec::parse("optimus[wd_ps=0]").unwrap()).is_err());
        assert!(Optimus::from_spec(&PolicySpec::parse("optimus[x=1]").unwrap()).is_err());
    }

    /// DLRover Sec. 6.3's cycle: a job is judged a minute of training after each (re)start
    /// and at least an interval after its last decision; one that trains on unchanged is
    /// judged on the common 3-min grid.
    #[test]
    fn a_job_is_judged_a_minute_after_it_resumes_and_on_the_grid_while_unchanged() {
        let s = SimTime::from_secs;
        let (sample, interval) = (s(60), s(180));
        let mut st = JobState::default();
        assert_eq!(st.due(sample, interval), None, "not training: no decision");
        st.trained = Some(((2, 4), s(100)));
        assert_eq!(st.due(sample, interval), Some(s(160)), "first: after its minute");
        st.decided = Some(s(200));
        assert_eq!(st.due(sample, interval), Some(s(360)), "unchanged: next grid point");
        // Restarted at the decision (a 4-min stop-and-restart): a minute after it resumes.
        st.trained = Some(((2, 8), s(440)));
        assert_eq!(st.due(sample, interval), Some(s(500)));
        // A quick restart is still held to the interval after the decision.
        st.trained = Some(((2, 8), s(230)));
        assert_eq!(st.due(sample, interval), Some(s(380)));
        assert!(
            Optimus::from_spec(&PolicySpec::parse("optimus[sample_s=-1]").unwrap()).is_err()
        );
    }

    #[test]
    fn heap_grants_the_largest_gain_per_share_first() {
        // Same speed model; job 2 has 10x the remaining work, so each of its steps saves
        // 10x the time and it is served first, until capacity (4 more pods) runs out.
        let t = [1.0, 0.5, 0.0, 0.0];
        let jobs = vec![
            fitted(1, t, 1_000.0, (1, 1)),
            fitted(2, t, 10_000.0, (1, 1)),
        ];
        let cap = Resources::new(16.0, 1 << 20, 0);
        let nodes = [node(16.0)];
        let mut free = FreeNodes::of_nodes(&nodes);
        let granted = greedy(jobs.clone(), &mut free, cap);
        assert_eq!(granted.len(), 1, "{granted:?}");
        assert_eq!(granted[0].0, 2);
        let (p, w) = granted[0].1;
        assert_eq!(p + w - 2, 4, "four single-pod steps fit in 16 cores");
        // With room for both, job 1 still gets steps once job 2's marginal gain drops.
        let nodes = [node(1000.0)];
        let mut free = FreeNodes::of_nodes(&nodes);
        let jobs = jobs.into_iter().map(|j| Fitted { budget: 40.0, ..j }).collect();
        let granted = greedy(jobs, &mut free, cap);
        assert_eq!(granted.len(), 2);
        assert_eq!(granted[0].0, 2, "the larger gain is granted first");
    }

    #[test]
    fn heap_stops_when_the_gain_is_not_positive() {
        // f grows with w for every t >= 0 (w / (a + b w)), so only the t3 p term can make
        // a step slow the job down. Workers here are 100 cores and the cap leaves room for
        // PS only: one more PS at (1, 1) only slows the job (t3 large), so nothing is granted.
        let only_ps = |t: [f64; 4]| Fitted {
            worker_request: Resources::new(100.0, 1024, 0),
            budget: 130.0,
            ..fitted(1, t, 1_000.0, (1, 1))
        };
        let cap = Resources::new(1000.0, 1 << 20, 0);
        let nodes = [node(1000.0)];
        let mut free = FreeNodes::of_nodes(&nodes);
        assert!(greedy(vec![only_ps([0.1, 0.0, 0.0, 1.0])], &mut free, cap).is_empty());
        // 1 + 4/p + 0.5 p is smallest at p = 3: the greedy stops there although the cap
        // would allow 7 PS and the free room many more.
        let nodes = [node(1000.0)];
        let mut free = FreeNodes::of_nodes(&nodes);
        let granted = greedy(vec![only_ps([1.0, 4.0, 0.0, 0.5])], &mut free, cap);
        assert_eq!(granted, vec![(1, (3, 1))]);
    }

    #[test]
    fn heap_respects_the_per_job_core_cap() {
        let jobs = vec![Fitted {
            budget: 24.0,
            ..fitted(1, [1.0, 0.5, 0.0, 0.0], 1_000.0, (1, 1))
        }];
        let cap = Resources::new(1000.0, 1 << 20, 0);
        let nodes = [node(1000.0)];
        let mut free = FreeNodes::of_nodes(&nodes);
        let granted = greedy(jobs, &mut free, cap);
        let (p, w) = granted[0].1;
        assert_eq!(4 * (p + w), 24);
    }

    #[test]
    fn profiling_walks_workers_then_ps_then_workers() {
        let mut at = (2, 4);
        let mut walk = vec![at];
        for k in 0..3 {
            at = profile_next(at, (2, 4), k, |_| true).unwrap();
            walk.push(at);
        }
        assert_eq!(walk, vec![(2, 4), (2, 8), (4, 8), (4, 12)]);
        // At the cap the walk takes the other kind of step, then stops.
        let under = |(p, w): (u32, u32)| p + w <= 13;
        assert_eq!(profile_next((2, 8), (2, 4), 0, under), Some((4, 8)));
        assert_eq!(profile_next((4, 8), (2, 4), 0, under), None);
        // The four points determine the speed function.
        let truth = OptimusParams {
            t0: 0.3,
            t1: 0.2,
            t2: 0.01,
            t3: 0.02,
        };
        let obs: Vec<OptimusObs> = walk
            .iter()
            .map(|&(p, w)| OptimusObs {
                ps: f64::from(p),
                workers: f64::from(w),
                speed: truth.predict(f64::from(p), f64::from(w)),
            })
            .collect();
        let fit = OptimusParams::fit(&obs).unwrap();
        assert!((fit.predict(6.0, 20.0) - truth.predict(6.0, 20.0)).abs() < 1e-6);
    }

    #[test]
    fn fewer_ps_keep_the_users_total_ps_memory() {
        let req = JobConfig {
            workers: 4,
            ps: 4,
            worker_cpu: 4.0,
            worker_mem_mb: 4096,
            worker_gpu: 0,
            ps_cpu: 8.0,
            ps_mem_mb: 3000,
        };
        assert_eq!(ps_mem_mb_for(&req, 1, 1 << 20), 12_000);
        assert_eq!(ps_mem_mb_for(&req, 3, 1 << 20), 4_000);
        assert_eq!(ps_mem_mb_for(&req, 8, 1 << 20), 3_000);
        assert_eq!(ps_mem_mb_for(&req, 1, 8_000), 8_000);
        // 12,000 MB in all: one 16 GB node holds it on one PS, 5 GB nodes need three,
        // and never more than the user's four.
        assert_eq!(min_ps_for_memory(&req, 16_000), 1);
        assert_eq!(min_ps_for_memory(&req, 5_000), 3);
        assert_eq!(min_ps_for_memory(&req, 1_000), 4);
        assert_eq!(ps_mem_mb_for(&req, 3, 5_000), 4_000);
    }

    #[test]
    fn the_core_budget_never_falls_below_the_request() {
        // 4 workers x 4 cores and 2 PS: 16 + 2 ps_cpu cores in all.
        let budget = |ps_cpu: f64| {
            let request = crate::testkit::request(JobConfig {
                workers: 4,
                ps: 2,
                worker_cpu: 4.0,
                worker_mem_mb: 4096,
                worker_gpu: 0,
                ps_cpu,
                ps_mem_mb: 4096,
            });
            core_budget(200.0, &crate::testkit::view(&request))
        };
        assert_eq!(budget(24.0), 200.0);
        assert_eq!(budget(504.0), 1_024.0);
    }

}
