//! `es`: the Elastic Scheduler's autoscaling (Or, Zhang, Freedman, "Resource Elasticity in
//! Distributed Deep Learning", MLSys 2020), as DLRover's evaluation configured it
//! (DLRover Sec. 6.3: theta 0.3, 4 workers a step for Wide&Deep, 1 for xDeepFM).
//!
//! Decision rule, per job, every `interval_s` (3 min):
//! 1. **Throughput per size.** `R_k` is the mean observed steps/s over profile samples
//!    taken while `k` workers ran. The first sample after any change (a worker joined or
//!    left, a pod restarted or failed) is skipped: it would mix two configurations.
//! 2. **Scaling efficiency.** Between the previous size `k_a` and the current `k_b`:
//!    `s = ((R_b - R_a) / (k_b - k_a)) / (R_a / k_a)`, the throughput one added worker
//!    brought relative to what one existing worker delivers.
//! 3. **Decision.** Starting from the user's worker count (or `spawn` workers with
//!    `start=spawn`, DLRover's cold start), add `spawn` workers while `s > theta`; when the
//!    test fails, step back to the last passing size and stop scaling that job.
//! 4. **Stragglers.** A running worker whose EWMA throughput (alpha 0.1, kept by the
//!    profiler) is below 0.8 of the job's median, and whose latest reading is too, is
//!    replaced by a pod of the same size. (Until 2026-11-27 the EWMA alone decided: when a
//!    job grew, its older workers' EWMAs still carried the rates of the smaller job and
//!    read as stragglers beside the new workers', so ES replaced a healthy worker at each
//!    of its next ticks and DLRover-RM's Model-X under ES took 12 min for its second step.)
//!
//! ES scales workers only: PS count and every pod's CPU and memory stay as the user set
//! them, or as `worker_cpu`, `ps_cpu` and `ps` set them at launch (DLRover Sec. 6.3 sized
//! the pods per its Table 2; [`PodShape`]). Its jobs use **dynamic sharding**: Or et al.'s
//! system adds and removes workers without restarting the job (workers join and the input
//! is re-divided), which is what the simulator's dynamic data sharding models; with static
//! partitioning every step would be a stop-and-restart, which is not the system the paper
//! describes. Growth is limited to what fits the free nodes and to DLRover's per-job
//! budget (`max_cores`, 200, never below the cores the job asked for).

use std::collections::{BTreeMap, BTreeSet};

use crate::optimus::{core_budget, FreeNodes};
use crate::spec::{param, PodShape, PolicyDoc, PolicySpec, SpecError};
use dlsim_engine::SimTime;
use dlsim_model::job::Role;
use dlsim_model::policy::{
    Action, ClusterView, JobPhase, JobView, PodEventKind, PodPhase, Policy, ProfileSample, Sharding,
};
use dlsim_traces::ModelKind;

/// A worker is a straggler below this fraction of the median EWMA throughput.
const STRAGGLER_RATIO: f64 = 0.8;
/// Workers needed for a meaningful median.
const STRAGGLER_MIN_WORKERS: usize = 3;

/// What ES keeps about one job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EsJob {
    /// Worker count -> (sum of steps/s, valid samples).
    pub rates: BTreeMap<u32, (f64, u32)>,
    seen_until: Option<SimTime>,
    prev: Option<ProfileSample>,
    /// The size the current one was reached from (the last passing size).
    pub from: Option<u32>,
    /// The efficiency test failed once; the job stays at its last passing size.
    pub settled: bool,
    /// Workers already replaced (never asked twice).
    replaced: BTreeSet<usize>,
}

/// The decision for one job at one tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Not enough measurements yet, or nothing to do.
    Wait,
    /// Grow to this many workers.
    Grow(u32),
    /// The efficiency test failed: go back to this size and stop.
    StepBack(u32),
}

/// Scaling efficiency of going from `k_a` workers at `r_a` to `k_b` at `r_b`.
pub fn efficiency(k_a: u32, r_a: f64, k_b: u32, r_b: f64) -> f64 {
    let per_added = (r_b - r_a) / f64::from(k_b - k_a);
    per_added / (r_a / f64::from(k_a))
}

impl EsJob {
    /// Takes the profile samples newer than the last seen. A sample counts for `R_k` only
    /// if the previous sample had the same worker count and no pod started, failed or
    /// stopped in between.
    pub fn absorb(&mut self, history: &[ProfileSample], events: &[dlsim_model::policy::PodEvent]) {
        for s in history {
            if self.seen_until.is_some_and(|t| s.time <= t) {
                continue;
            }
            self.seen_until = Some(s.time);
            let clean = self.prev.is_some_and(|p| {
                p.running_workers == s.running_workers
                    && p.running_ps == s.running_ps
                    && !events.iter().any(|e| {
                        e.time > p.time && e.time <= s.time && e.kind != PodEventKind::Pending
                    })
            });
            if clean && s.steps_per_s > 0.0 {
                let e = self.rates.entry(s.running_workers).or_insert((0.0, 0));
                e.0 += s.steps_per_s;
                e.1 += 1;
            }
            self.prev = Some(*s);
        }
    }

    fn rate(&self, k: u32) -> Option<f64> {
        self.rates
            .get(&k)
            .filter(|e| e.1 > 0)
            .map(|&(sum, n)| sum / f64::from(n))
    }

    /// The efficiency test at the current size `k`.
    pub fn decide(&self, k: u32, spawn: u32, theta: f64) -> Step {
        if self.settled {
            return Step::Wait;
        }
        let Some(r_b) = self.rate(k) else {
            return Step::Wait;
        };
        let Some(k_a) = self.from.filter(|&a| a < k) else {
            return Step::Grow(k + spawn);
        };
        let Some(r_a) = self.rate(k_a).filter(|&r| r > 0.0) else {
            return Step::Grow(k + spawn);
        };
        if efficiency(k_a, r_a, k, r_b) > theta {
            Step::Grow(k + spawn)
        } else {
            Step::StepBack(k_a)
        }
    }
}

/// Per-kind spawn sizes (workers added per step).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spawn {
    pub wide_deep: u32,
    pub xdeepfm: u32,
    /// Not in DLRover's evaluation; assumption: 2.
    pub dcn: u32,
}

impl Spawn {
    fn of(&self, kind: ModelKind) -> u32 {
        match kind {
            ModelKind::WideDeep => self.wide_deep,
            ModelKind::Xdeepfm => self.xdeepfm,
            ModelKind::Dcn => self.dcn,
        }
    }
}

pub struct Es {
    canonical: String,
    theta: f64,
    spawn: Spawn,
    start_small: bool,
    pods: PodShape,
    interval: SimTime,
    max_cores: f64,
    jobs: BTreeMap<u64, EsJob>,
    /// The jobs the next tick must look at whatever changes: they acted (a straggler is
    /// replaced one a tick; a refused action is asked again), or the efficiency test
    /// asks for a step that the job's state or the free room blocked (a pending pod being
    /// placed and room freed elsewhere are not listed changes). See `on_tick`.
    watch: BTreeSet<u64>,
}

/// `es`'s parameters (`dlsim policies`).
pub const DOC: PolicyDoc = PolicyDoc {
    name: "es",
    summary: "Elastic Scheduler (MLSys'20): add workers while scaling efficiency exceeds theta; replace stragglers",
    params: &[
        param("theta", "number", "0.3", "keep adding workers while one more brings more than theta of a worker's throughput"),
        param("spawn", "count 1..=1000", "-", "workers per step for every model kind (the per-kind keys win; default: per kind)"),
        param("spawn_wd", "count 1..=1000", "4", "Wide&Deep: workers per step"),
        param("spawn_xdfm", "count 1..=1000", "1", "xDeepFM: workers per step"),
        param("spawn_dcn", "count 1..=1000", "2", "DCN: workers per step"),
        param("start", "request|spawn", "request", "initial workers: the user's count, or one step (DLRover's cold start)"),
        param("interval_s", "number >= 1", "180", "decision interval (s)"),
        param("max_cores", "number > 0", "200", "per-job core budget (DLRover's evaluation), never below the cores the job asked for"),
        param("worker_cpu", "cores", "-", "cores of every worker (default: the user's; DLRover Sec. 6.3 sized them per its Table 2)"),
        param("ps_cpu", "cores", "-", "cores of every PS (default: the user's)"),
        param("ps", "count 1..=1000", "-", "the job's PS, which ES never scales (default: the user's)"),
    ],
};

/// This policy's registry entry (`crate::POLICIES`): its documentation and its builder.
pub const POLICY: crate::Registered<dyn dlsim_model::policy::Policy> = crate::Registered {
    doc: &DOC,
    build: |spec| Ok(Box::new(Es::from_spec(spec)?)),
};

impl Es {
    pub fn from_spec(spec: &PolicySpec) -> Result<Self, SpecError> {
        spec.only(&DOC.param_names())?;
        // `spawn` sets every kind; the per-kind keys win over it.
        let all = spec
            .params
            .contains_key("spawn")
            .then(|| spec.count_or("spawn", 1));
        let all = all.transpose()?;
        let theta = spec.f64_or("theta", 0.3)?;
        let interval_s = spec.f64_or("interval_s", 180.0)?;
        let max_cores = spec.f64_or("max_cores", 200.0)?;
        if interval_s < 1.0 || max_cores <= 0.0 {
            return Err(spec.bad_value("interval_s", "interval_s >= 1 and max_cores > 0"));
        }
        let start_small = match spec.params.get("start").map(String::as_str) {
            None | Some("request") => false,
            Some("spawn") => true,
            Some(_) => return Err(spec.bad_value("start", "expected request or spawn")),
        };
        Ok(Es {
            canonical: spec.canonical(),
            theta,
            spawn: Spawn {
                wide_deep: spec.count_or("spawn_wd", all.unwrap_or(4))?,
                xdeepfm: spec.count_or("spawn_xdfm", all.unwrap_or(1))?,
                dcn: spec.count_or("spawn_dcn", all.unwrap_or(2))?,
            },
            start_small,
            pods: PodShape::from_spec(spec, true)?,
            interval: SimTime::from_secs_f64_ceil(interval_s),
            max_cores,
            jobs: BTreeMap::new(),
            watch: BTreeSet::new(),
        })
    }

    /// The worker count after a step to `to` workers stays within the per-job budget.
    fn within_budget(&self, job: &JobView<'_>, to: u32) -> bool {
        let c = &job.config;
        let cores = f64::from(to) * c.worker_cpu + f64::from(c.ps) * c.ps_cpu;
        cores <= core_budget(self.max_cores, job) + 1e-9
    }

    /// Whether the efficiency test asks this job for a step it may take: a step back, or
    /// growth within the budget (growth over it waits for a new configuration).
    fn wants_step(&self, job: &JobView<'_>) -> bool {
        let Some(st) = self.jobs.get(&job.request.id) else {
            return false;
        };
        let spawn = self.spawn.of(job.request.model);
        match st.decide(job.config.workers, spawn, self.theta) {
            Step::Wait => false,
            Step::Grow(to) => self.within_budget(job, to),
            Step::StepBack(_) => true,
        }
    }

    /// Grows or steps back one job; returns the action, if any.
    fn scale(&mut self, job: &JobView<'_>, free: &mut FreeNodes) -> Option<Action> {
        let st = self.jobs.get_mut(&job.request.id)?;
        st.absorb(job.history, job.events);
        let steady = job.phase == JobPhase::Training
            && !job.rescaling
            && job.pending_pods == 0
            && job.running_workers == job.config.workers;
        if !steady {
            return None;
        }
        let k = job.config.workers;
        let spawn = self.spawn.of(job.request.model);
        match st.decide(k, spawn, self.theta) {
            Step::Wait => None,
            Step::Grow(to) => {
                let within = self.within_budget(job, to);
                let st = self.jobs.get_mut(&job.request.id)?;
                if !within || !free.take(job.config.worker_request(), to - k) {
                    return None;
                }
                st.from = Some(k);
                Some(Action::ScaleWorkers {
                    job: job.request.id,
                    workers: to,
                })
            }
            Step::StepBack(to) => {
                st.settled = true;
                Some(Action::ScaleWorkers {
                    job: job.request.id,
                    workers: to,
                })
            }
        }
    }

    /// Replaces the slowest worker below 0.8 of the median EWMA throughput (one a tick).
    fn straggler(&mut self, job: &JobView<'_>, now: SimTime) -> Option<Action> {
        let st = self.jobs.get_mut(&job.request.id)?;
        if job.phase != JobPhase::Training || job.rescaling {
            return None;
        }
        let workers: Vec<_> = job
            .pods
            .iter()
            .filter(|p| p.role == Role::Worker && p.phase == PodPhase::Running)
            .filter(|p| {
                p.last
                    .is_some_and(|s| s.time > p.running_since.unwrap_or(now))
            })
            .filter(|p| !st.replaced.contains(&p.id))
            .collect();
        let pod = pick_straggler(
            &workers
                .iter()
                .map(|p| {
                    let latest = p.last.map_or(0.0, |s| s.samples_per_s);
                    (p.id, p.ewma_samples_per_s, latest)
                })
                .collect::<Vec<_>>(),
        )?;
        let view = workers.iter().find(|p| p.id == pod)?;
        st.replaced.insert(pod);
        Some(Action::ReplacePod {
            job: job.request.id,
            pod,
            cpu: view.request.cpu_cores(),
            mem_mb: view.request.mem_mb,
        })
    }
}

/// The slowest worker (by EWMA) whose EWMA is below 0.8 of the median EWMA and whose latest
/// reading is below 0.8 of the median latest reading, given (pod, EWMA, latest) triples:
/// slow over time and slow now, so a worker whose EWMA still lags a change of the job's
/// configuration is not taken for a straggler.
pub fn pick_straggler(workers: &[(usize, f64, f64)]) -> Option<usize> {
    if workers.len() < STRAGGLER_MIN_WORKERS {
        return None;
    }
    let median = |pick: fn(&(usize, f64, f64)) -> f64| {
        let mut v: Vec<f64> = workers.iter().map(pick).collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            0.5 * (v[n / 2 - 1] + v[n / 2])
        }
    };
    let (ewma, latest) = (median(|w| w.1), median(|w| w.2));
    workers
        .iter()
        .filter(|w| w.1 < STRAGGLER_RATIO * ewma && w.2 < STRAGGLER_RATIO * latest)
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
        .map(|w| w.0)
}

impl Policy for Es {
    fn spec(&self) -> String {
        self.canonical.clone()
    }

    fn pod_cores(&self) -> Vec<(&'static str, f64)> {
        self.pods.pod_cores()
    }

    fn sharding(&self) -> Sharding {
        Sharding::Dynamic
    }

    fn observes_pods(&self) -> bool {
        true
    }

    fn tick_interval(&self) -> Option<SimTime> {
        Some(self.interval)
    }

    fn on_submit(&mut self, job: &JobView<'_>, _view: &ClusterView<'_>) -> Vec<Action> {
        let mut config = self.pods.apply(job.request.requested);
        if self.start_small {
            config.workers = self.spawn.of(job.request.model);
        }
        self.jobs.insert(job.request.id, EsJob::default());
        vec![Action::Launch {
            job: job.request.id,
            config,
        }]
    }

    /// Visits the jobs whose observable state changed since the last tick
    /// ([`ClusterView::changed`]) and the watched ones, in id order. Any other job would
    /// decide what it decided at its last visit: the straggler test reads only its pods'
    /// samples and phases, and the efficiency test only its own rates (which new samples
    /// change) and worker count; a job whose test says wait keeps waiting until then.
    fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<Action> {
        view.forget_ended(&mut self.jobs);
        for e in view.ended {
            self.watch.remove(&e.id);
        }
        let mut free = FreeNodes::new(view);
        let mut actions = Vec::new();
        let changed = view.changed.iter().filter(|id| self.jobs.contains_key(id));
        let ids: BTreeSet<u64> = changed.chain(&self.watch).copied().collect();
        self.watch.clear();
        for job in ids.into_iter().filter_map(|id| view.jobs.get(id)) {
            let job = &job;
            // A replacement and a scale in one tick would race; stragglers go first.
            let action = match self.straggler(job, view.now) {
                Some(a) => Some(a),
                None => self.scale(job, &mut free),
            };
            if action.is_some() || self.wants_step(job) {
                self.watch.insert(job.request.id);
            }
            actions.extend(action);
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dlsim_model::policy::PodEvent;

    fn sample(t: u64, workers: u32, steps_per_s: f64) -> ProfileSample {
        ProfileSample {
            time: SimTime::from_secs(t),
            running_workers: workers,
            running_ps: 1,
            steps_per_s,
            ..Default::default()
        }
    }

    #[test]
    fn efficiency_is_added_throughput_per_worker_over_throughput_per_worker() {
        // 4 workers at 40 steps/s (10 each); 8 at 60: 5 per added worker, s = 0.5.
        assert!((efficiency(4, 40.0, 8, 60.0) - 0.5).abs() < 1e-12);
        assert!((efficiency(4, 40.0, 8, 80.0) - 1.0).abs() < 1e-12);
        assert!(efficiency(4, 40.0, 8, 38.0) < 0.0);
    }

    #[test]
    fn first_sample_after_a_change_is_skipped() {
        let mut st = EsJob::default();
        let h = [
            sample(300, 4, 99.0),
            sample(600, 4, 40.0),
            sample(900, 8, 99.0),
            sample(1200, 8, 60.0),
        ];
        st.absorb(&h, &[]);
        assert_eq!(st.rates[&4], (40.0, 1));
        assert_eq!(st.rates[&8], (60.0, 1));
        // A pod that started between two samples of the same size spoils the second.
        let mut st = EsJob::default();
        let ev = [PodEvent {
            time: SimTime::from_secs(450),
            pod: 3,
            role: Role::Worker,
            kind: PodEventKind::Running,
        }];
        st.absorb(&h[..2], &ev);
        assert!(st.rates.is_empty());
    }

    #[test]
    fn grows_while_efficient_then_steps_back_to_the_last_passing_size() {
        let (spawn, theta) = (4, 0.3);
        let mut st = EsJob::default();
        // First size measured: no comparison yet, grow.
        st.rates.insert(4, (40.0, 1));
        assert_eq!(st.decide(4, spawn, theta), Step::Grow(8));
        st.from = Some(4);
        // Not measured at 8 yet: wait.
        assert_eq!(st.decide(8, spawn, theta), Step::Wait);
        // 4 -> 8: s = 0.5 > 0.3, grow.
        st.rates.insert(8, (60.0, 1));
        assert_eq!(st.decide(8, spawn, theta), Step::Grow(12));
        st.from = Some(8);
        // 8 -> 12: 60 -> 66, s = (6/4)/(60/8) = 0.2 <= 0.3, back to 8.
        st.rates.insert(12, (66.0, 1));
        assert_eq!(st.decide(12, spawn, theta), Step::StepBack(8));
        st.settled = true;
        assert_eq!(st.decide(8, spawn, theta), Step::Wait);
        // The authors' default theta 0.1 would have kept growing.
        let st = EsJob {
            settled: false,
            ..st
        };
        assert_eq!(st.decide(12, spawn, 0.1), Step::Grow(16));
    }

    #[test]
    fn straggler_is_the_slowest_worker_below_080_of_the_median() {
        let both = |v: &[(usize, f64)]| v.iter().map(|&(p, r)| (p, r, r)).collect::<Vec<_>>();
        assert_eq!(pick_straggler(&both(&[(1, 10.0), (2, 10.0), (3, 7.9)])), Some(3));
        assert_eq!(pick_straggler(&both(&[(1, 10.0), (2, 10.0), (3, 8.1)])), None);
        assert_eq!(
            pick_straggler(&both(&[(1, 10.0), (2, 2.0), (3, 5.0), (4, 10.0), (5, 10.0)])),
            Some(2)
        );
        assert_eq!(pick_straggler(&both(&[(1, 10.0), (2, 1.0)])), None, "too few");
        // An older worker whose EWMA still carries a smaller job's rate but whose latest
        // reading is the others': not a straggler. Slow now as well: it is.
        let lagging = [(1, 3.3, 6.0), (2, 6.0, 6.0), (3, 6.0, 6.1), (4, 5.9, 6.0)];
        assert_eq!(pick_straggler(&lagging), None);
        let slow = [(1, 3.3, 3.0), (2, 6.0, 6.0), (3, 6.0, 6.1), (4, 5.9, 6.0)];
        assert_eq!(pick_straggler(&slow), Some(1));
    }

    #[test]
    fn spec_takes_theta_and_spawn() {
        let es = Es::from_spec(&PolicySpec::parse("es[theta=0.3,spawn=4]").unwrap()).unwrap();
        assert_eq!(es.spawn.xdeepfm, 4);
        assert_eq!(es.spec(), "es[spawn=4,theta=0.3]");
        let es = Es::from_spec(&PolicySpec::parse("es").unwrap()).unwrap();
        assert_eq!((es.spawn.wide_deep, es.spawn.xdeepfm), (4, 1));
        assert_eq!(es.theta, 0.3);
        assert!(Es::from_spec(&PolicySpec::parse("es[start=x]").unwrap()).is_err());
        assert!(Es::from_spec(&PolicySpec::parse("es[spawn=0]").unwrap()).is_err());
    }
}
