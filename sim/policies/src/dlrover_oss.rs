//! `dlrover-oss`: what the open-source DLRover master runs for a PS job (its local resource
//! optimizer and PS auto-scaler), as opposed to the paper's DLRover-RM (`dlrover`).
//!
//! A job without PS (an allreduce job) is launched as its user asked and never changed:
//! DLRover's `AllreduceJobResourceOptimizer` plans no change while it finds no free GPU
//! node, and it never does (`_get_free_gpu_node` returns 0), and it does not adjust an OOM.
//! A PS job starts from the create plan, 1 PS + 1 worker sized from the job's limits
//! (`rules::create_config`), with dynamic data sharding. What the user set overrides every
//! plan (`rules::keep_user`, DLRover's `_check_ignore_original_*_resource`): the worker and
//! PS counts stay the trace's, the PS CPU and memory too; so the worker plans only reshape
//! workers (dropped, see below) and the hot-PS and OOM rules are what acts. `keep_user=off`
//! models users who leave the counts unset, where the optimizer picks them. Every 30 s the policy looks at each job; once a plan is due
//! (see [`may_plan`]) it asks the optimizer for the stage's plan: first the workers
//! (`WorkerInitial`), then the PS count and memory (`PsInitial`), then, for the rest of
//! the job (`Running`), hot-PS CPU if some PS is hot, else the workers again. Pods pending
//! over 900 s are re-requested smaller, and a pod relaunched after an OOM gets more memory.
//! The decision rules are pure functions in `rules`; this file keeps the per-job state and
//! maps plans onto the world's actions:
//! - a worker plan that changes the count is `ScaleWorkers` when the shape is unchanged,
//!   else a `Rescale` by migration to the new shape (DLRover only gives the new shape to
//!   pods it launches; the world has one shape per role, so all workers move — without a
//!   pause, as workers hold no state). A plan that only reshapes is dropped (DLRover
//!   would give the new shape to the next pods it launches).
//! - a PS plan is a `Rescale` by migration; a hot-PS plan is one `ReplacePod` per PS to
//!   migrate, one per tick (the world runs one migration at a time).
//! - OOM: the world relaunches the pod itself (budget, `oom_memory_factor`); the policy then
//!   re-requests the relaunched pod with `rules::oom_memory` of the killed pod's memory, in
//!   place while it is pending, else by replacement (a PS once the job trains again). At or
//!   above 65536 MB DLRover stops relaunching: `on_oom` abandons the pod.

pub mod rules;

use crate::spec::{param, PolicyDoc, PolicySpec, SpecError};
use dlsim_engine::SimTime;
use dlsim_model::job::Role;
use dlsim_model::policy::{
    Action, ClusterView, JobConfig, JobPhase, JobView, OomRelaunch, PodEventKind, PodPhase, Policy,
    RescaleMethod, Sharding,
};
use rules::{Limits, PodUse, Snapshot};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// How often the auto-scaler wakes.
pub const TICK_S: u64 = 30;
/// Auto-scaling starts after this many step samples, or this long after training starts.
pub const START_SAMPLES: usize = 5;
pub const START_AFTER_S: u64 = 90;
/// The worker count must have been stable this long before a plan.
pub const WORKERS_STABLE_S: u64 = 60;
/// At least this long between two plans.
pub const PLAN_INTERVAL_S: u64 = 300;
/// At least this long between two PS changes.
pub const PS_INTERVAL_S: u64 = 3_600;

/// The optimizer's stage (`JobOptStage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    WorkerInitial,
    PsInitial,
    Running,
}

/// Whether a plan may be requested now: the job trains, auto-scaling has started (5 step
/// samples or 90 s of training), the worker count is at its target and has not changed for
/// 60 s, 300 s have passed since the last plan, no migration is under way, and the pods
/// were profiled since the last plan (`last_profile`; the optimizer plans from profiles).
#[allow(clippy::too_many_arguments)]
pub fn may_plan(
    now: SimTime,
    training_since: Option<SimTime>,
    step_samples: usize,
    workers_at_target: bool,
    last_worker_event: Option<SimTime>,
    last_plan: Option<SimTime>,
    migrating: bool,
    last_profile: Option<SimTime>,
) -> bool {
    let (Some(since), Some(profile)) = (training_since, last_profile) else {
        return false;
    };
    if last_plan.is_some_and(|t| profile <= t) {
        return false;
    }
    let started = step_samples >= START_SAMPLES || now >= since + SimTime::from_secs(START_AFTER_S);
    let stable = last_worker_event.is_none_or(|t| now >= t + SimTime::from_secs(WORKERS_STABLE_S));
    let interval = last_plan.is_none_or(|t| now >= t + SimTime::from_secs(PLAN_INTERVAL_S));
    started && workers_at_target && stable && interval && !migrating
}

/// Whether the PS may change now: 3600 s after the last PS change.
pub fn may_change_ps(now: SimTime, last_ps_change: Option<SimTime>) -> bool {
    last_ps_change.is_none_or(|t| now >= t + SimTime::from_secs(PS_INTERVAL_S))
}

/// (cores, MB) requested per pod id, sorted by id: rebuilt in place at every visit.
#[derive(Clone, Debug, Default)]
struct Requests(Vec<(usize, (f64, u64))>);

impl Requests {
    fn get(&self, pod: &usize) -> Option<&(f64, u64)> {
        let i = self.0.binary_search_by_key(pod, |r| r.0).ok()?;
        Some(&self.0[i].1)
    }
}

/// One pod re-request waiting for the world to allow it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Resize {
    pod: usize,
    cpu: f64,
    mem_mb: u64,
}

/// What the policy remembers about one job.
#[derive(Clone, Debug)]
struct JobState {
    stage: Stage,
    training_since: Option<SimTime>,
    last_plan: Option<SimTime>,
    last_ps_change: Option<SimTime>,
    window: VecDeque<Snapshot>,
    /// The last pod event handled: (time, pod, kind).
    last_event: Option<(SimTime, usize, PodEventKind)>,
    /// Requests of the pods seen at the last tick, to size an OOM-killed pod's successor.
    requests: Requests,
    /// OOM re-requests and hot-PS migrations not yet issued.
    resizes: VecDeque<Resize>,
    /// When each pending pod was last re-requested smaller.
    shrunk: BTreeMap<usize, SimTime>,
    /// Memory per role raised after OOMs: [PS, worker]; later plans never go below it.
    mem_floor: [u64; 2],
    /// What the user asked for, when plans keep it (`rules::keep_user`).
    user: Option<JobConfig>,
    /// The job's entry in `DlroverOss::timers`, if any.
    wake: Option<SimTime>,
    /// The inputs of the last running-stage plan that asked for nothing: the same inputs
    /// give the same nothing, so the plan is not recomputed (the master ticks every 30 s;
    /// its profile changes only at each sample).
    idle: Option<PlanInputs>,
}

/// Everything a running-stage plan reads (see `DlroverOss::plan`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct PlanInputs {
    window: (usize, Option<SimTime>),
    history: (usize, Option<SimTime>),
    config: JobConfig,
    /// The PS pods' summed (cores, MB) requests.
    ps_total: (f64, u64),
    mem_floor: [u64; 2],
    may_change_ps: bool,
}

impl JobState {
    fn new(user: Option<JobConfig>) -> Self {
        JobState {
            stage: Stage::WorkerInitial,
            training_since: None,
            last_plan: None,
            last_ps_change: None,
            window: VecDeque::new(),
            last_event: None,
            requests: Requests::default(),
            resizes: VecDeque::new(),
            shrunk: BTreeMap::new(),
            mem_floor: [0, 0],
            user,
            wake: None,
            idle: None,
        }
    }
}

/// Each job's master decides every 30 s; a tick visits only the jobs whose decision could
/// differ from "nothing": those whose state changed since the last tick
/// ([`ClusterView::changed`]), those it watches (they acted at the last tick, so the next
/// queued resize may be due, or their plan stepped to a stage whose plan is due at once) and those
/// whose timer is due (a pending pod to shrink, a plan or PS-change gate opening:
/// `next_wake`). A rescale in progress or a queued resize waiting for its pod needs no
/// watch: the rescale ends, and the pod starts running, with a listed change. A job
/// waiting in the queue with nothing new costs nothing per tick.
pub struct DlroverOss {
    limits: Limits,
    /// Whether plans keep what the user set (`rules::keep_user`).
    keep_user: bool,
    /// Allreduce jobs, launched as asked and left alone.
    passive: BTreeSet<u64>,
    jobs: BTreeMap<u64, JobState>,
    watch: BTreeSet<u64>,
    /// (due, job): the next time a job's decision could differ with nothing changed.
    timers: BTreeSet<(SimTime, u64)>,
}

/// `dlrover-oss`'s parameters (`dlsim policies`).
pub const DOC: PolicyDoc = PolicyDoc {
    name: "dlrover-oss",
    summary: "what the open-source DLRover master runs: its local resource optimizer and PS auto-scaler, every 30 s",
    params: &[
        param("limit_cpu", "number > 0", "100", "the job's CPU limit (cores) its pods are sized within"),
        param("limit_mem_mb", "number > 0", "102400", "the job's memory limit (MB)"),
        param("keep_user", "on|off", "on", "keep the worker and PS counts and PS resources the trace sets (off: the optimizer picks the counts)"),
    ],
};

/// This policy's registry entry (`crate::POLICIES`): its documentation and its builder.
pub const POLICY: crate::Registered<dyn dlsim_model::policy::Policy> = crate::Registered {
    doc: &DOC,
    build: |spec| Ok(Box::new(DlroverOss::from_spec(spec)?)),
};

impl DlroverOss {
    pub fn from_spec(spec: &PolicySpec) -> Result<Self, SpecError> {
        spec.only(&DOC.param_names())?;
        let limits = Limits {
            cpu: spec.f64_or("limit_cpu", 100.0)?,
            mem_mb: spec.f64_or("limit_mem_mb", 102_400.0)?,
        };
        for (key, v) in [("limit_cpu", limits.cpu), ("limit_mem_mb", limits.mem_mb)] {
            if v <= 0.0 {
                return Err(spec.bad_value(key, "must be > 0"));
            }
        }
        Ok(DlroverOss {
            limits,
            keep_user: spec.bool_or("keep_user", true)?,
            passive: BTreeSet::new(),
            jobs: BTreeMap::new(),
            watch: BTreeSet::new(),
            timers: BTreeSet::new(),
        })
    }
}

fn role_idx(role: Role) -> usize {
    usize::from(role == Role::Worker)
}

/// Takes a profiler snapshot when the job's pods have a sample newer than the last one.
fn observe(state: &mut JobState, job: &JobView<'_>) {
    let latest = job.pods.iter().filter_map(|p| p.last.map(|s| s.time)).max();
    let Some(time) = latest else { return };
    if state.window.back().is_some_and(|s| s.time >= time) {
        return;
    }
    let mut snap = Snapshot {
        time,
        ..Snapshot::default()
    };
    for p in &job.pods {
        let Some(s) = p
            .last
            .filter(|s| s.time == time && p.phase == PodPhase::Running)
        else {
            continue;
        };
        let used = PodUse {
            pod: p.id,
            cpu_req: p.request.cpu_cores(),
            mem_req_mb: p.request.mem_mb,
            cpu_used: s.cpu_used,
            mem_used_mb: s.mem_used_mb,
        };
        match p.role {
            Role::Ps => snap.ps.push(used),
            Role::Worker => snap.workers.push(used),
        }
    }
    if snap.ps.is_empty() || snap.workers.is_empty() {
        return;
    }
    state.window.push_back(snap);
    if state.window.len() > rules::WINDOW {
        state.window.pop_front();
    }
}

/// Handles the pod events since the last tick: after an OOM, queues the relaunched pod's
/// memory raise and raises the role's memory floor.
fn handle_events(state: &mut JobState, job: &JobView<'_>, config: &JobConfig) {
    let start = state
        .last_event
        .and_then(|(t, p, k)| {
            job.events
                .iter()
                .rposition(|e| e.time == t && e.pod == p && e.kind == k)
        })
        .map_or(0, |i| i + 1);
    let events = &job.events[start..];
    for (i, e) in events.iter().enumerate() {
        if e.kind != PodEventKind::FailedOom {
            continue;
        }
        let role_default = match e.role {
            Role::Ps => (config.ps_cpu, config.ps_mem_mb),
            Role::Worker => (config.worker_cpu, config.worker_mem_mb),
        };
        let (cpu, mem) = state.requests.get(&e.pod).copied().unwrap_or(role_default);
        let Some(target) = rules::oom_memory(mem) else {
            continue;
        };
        let floor = &mut state.mem_floor[role_idx(e.role)];
        *floor = (*floor).max(target);
        let successor = events[i + 1..]
            .iter()
            .find(|n| n.time == e.time && n.role == e.role && n.kind == PodEventKind::Pending);
        if let Some(n) = successor {
            state.resizes.push_back(Resize {
                pod: n.pod,
                cpu,
                mem_mb: target,
            });
        }
    }
    if let Some(e) = job.events.last() {
        state.last_event = Some((e.time, e.pod, e.kind));
    }
}

fn last_worker_event(job: &JobView<'_>) -> Option<SimTime> {
    job.events
        .iter()
        .rev()
        .find(|e| e.role == Role::Worker)
        .map(|e| e.time)
}

/// The next queued re-request the world would accept now, if any.
fn next_resize(state: &mut JobState, job: &JobView<'_>) -> Option<Action> {
    while let Some(r) = state.resizes.front().copied() {
        let Some(pod) = job.pods.iter().find(|p| p.id == r.pod) else {
            state.resizes.pop_front();
            continue;
        };
        let cpu_milli = (r.cpu * 1000.0).round() as u64;
        if pod.request.mem_mb >= r.mem_mb && pod.request.cpu_milli >= cpu_milli {
            state.resizes.pop_front();
            continue;
        }
        let ready = match (pod.phase, pod.role) {
            (PodPhase::Pending, _) | (_, Role::Worker) => true,
            (PodPhase::Running, Role::Ps) => job.phase == JobPhase::Training,
            (PodPhase::Starting, Role::Ps) => false,
        };
        if !ready {
            return None;
        }
        state.resizes.pop_front();
        return Some(Action::ReplacePod {
            job: job.request.id,
            pod: r.pod,
            cpu: r.cpu,
            mem_mb: r.mem_mb,
        });
    }
    None
}

/// Re-requests smaller every pod pending over 900 s (since it was created or last shrunk).
/// The next time a decision for the job could differ with nothing else changed (no pod
/// event, no new profile): a pending pod's shrink timeout, or a time gate of `may_plan`
/// or `may_change_ps` opening. `None`: only a change can.
fn next_wake(state: &JobState, job: &JobView<'_>, now: SimTime) -> Option<SimTime> {
    let timeout = SimTime::from_secs(rules::PENDING_TIMEOUT_S);
    let shrink = job
        .pods
        .iter()
        .filter(|p| p.phase == PodPhase::Pending)
        .filter(|p| rules::pending_shrink(p.request.cpu_cores(), p.request.mem_mb).is_some())
        .map(|p| {
            let since = state.shrunk.get(&p.id).copied().unwrap_or(p.created);
            since.max(p.created) + timeout
        });
    let after = |t: Option<SimTime>, s: u64| t.map(|t| t + SimTime::from_secs(s));
    let gates = if job.phase == JobPhase::Training {
        [
            after(state.training_since, START_AFTER_S),
            after(last_worker_event(job), WORKERS_STABLE_S),
            after(state.last_plan, PLAN_INTERVAL_S),
            after(state.last_ps_change, PS_INTERVAL_S),
        ]
    } else {
        [None; 4]
    };
    shrink
        .chain(gates.into_iter().flatten().filter(|&t| t > now))
        .min()
}

fn shrink_pending(state: &mut JobState, job: &JobView<'_>, now: SimTime) -> Vec<Action> {
    let timeout = SimTime::from_secs(rules::PENDING_TIMEOUT_S);
    let mut out = Vec::new();
    for p in job.pods.iter().filter(|p| p.phase == PodPhase::Pending) {
        let since = state
            .shrunk
            .get(&p.id)
            .copied()
            .unwrap_or(p.created)
            .max(p.created);
        if now < since + timeout {
            continue;
        }
        if let Some((cpu, mem_mb)) = rules::pending_shrink(p.request.cpu_cores(), p.request.mem_mb)
        {
            state.shrunk.insert(p.id, now);
            out.push(Action::ReplacePod {
                job: job.request.id,
                pod: p.id,
                cpu,
                mem_mb,
            });
        }
    }
    out
}

impl DlroverOss {
    /// The stage's plan as an action, if it changes anything; advances the stage.
    fn plan(&self, state: &mut JobState, job: &JobView<'_>, now: SimTime) -> Option<Action> {
        let inputs = PlanInputs {
            window: (state.window.len(), state.window.back().map(|s| s.time)),
            history: (job.history.len(), job.history.last().map(|s| s.time)),
            config: job.config,
            ps_total: ps_total(job),
            mem_floor: state.mem_floor,
            may_change_ps: may_change_ps(now, state.last_ps_change),
        };
        let running = state.stage == Stage::Running;
        if running && state.idle == Some(inputs) {
            return None;
        }
        let action = self.plan_from(state, job, now);
        state.idle = (running && action.is_none()).then_some(inputs);
        action
    }

    fn plan_from(&self, state: &mut JobState, job: &JobView<'_>, now: SimTime) -> Option<Action> {
        // The rules read the window as a slice: lent in place, not copied per plan.
        let mut window = std::mem::take(&mut state.window);
        let action = self.plan_stage(state, job, now, window.make_contiguous());
        state.window = window;
        action
    }

    fn plan_stage(
        &self,
        state: &mut JobState,
        job: &JobView<'_>,
        now: SimTime,
        window: &[Snapshot],
    ) -> Option<Action> {
        match state.stage {
            Stage::WorkerInitial => {
                state.stage = Stage::PsInitial;
                self.worker_action(state, job, window)
            }
            Stage::PsInitial => {
                state.stage = Stage::Running;
                if !may_change_ps(now, state.last_ps_change) {
                    return None;
                }
                let action = self.ps_action(state, job, window);
                if action.is_some() {
                    state.last_ps_change = Some(now);
                }
                action
            }
            Stage::Running => {
                if may_change_ps(now, state.last_ps_change) {
                    let moves = rules::hot_ps_plan(self.limits, window);
                    if !moves.is_empty() {
                        state.last_ps_change = Some(now);
                        for (pod, cpu) in moves {
                            let mem_mb = state
                                .requests
                                .get(&pod)
                                .map_or(job.config.ps_mem_mb, |r| r.1);
                            state.resizes.push_back(Resize { pod, cpu, mem_mb });
                        }
                        return next_resize(state, job);
                    }
                }
                self.worker_action(state, job, window)
            }
        }
    }

    /// A worker plan as `ScaleWorkers` (same shape) or a migration to the new shape; none
    /// when the count stays.
    fn worker_action(
        &self,
        state: &JobState,
        job: &JobView<'_>,
        window: &[Snapshot],
    ) -> Option<Action> {
        let ps_total = ps_total(job);
        let ratio = rules::speed_ratio(job.history);
        let mut plan = rules::worker_plan(self.limits, window, ps_total, ratio)?;
        if let Some(user) = state.user.filter(|u| u.workers > 0) {
            plan.workers = user.workers;
        }
        let c = job.config;
        if plan.workers == c.workers {
            return None;
        }
        let mem_mb = plan.mem_mb.max(state.mem_floor[1]);
        if (plan.cpu, mem_mb) == (c.worker_cpu, c.worker_mem_mb) {
            return Some(Action::ScaleWorkers {
                job: job.request.id,
                workers: plan.workers,
            });
        }
        let config = JobConfig {
            workers: plan.workers,
            worker_cpu: plan.cpu,
            worker_mem_mb: mem_mb,
            ..c
        };
        Some(Action::Rescale {
            job: job.request.id,
            config,
            method: RescaleMethod::Migrate,
        })
    }

    /// The PS initial plan as a migration, if it changes the PS.
    fn ps_action(
        &self,
        state: &JobState,
        job: &JobView<'_>,
        window: &[Snapshot],
    ) -> Option<Action> {
        let plan = rules::ps_initial(self.limits, window)?;
        let c = job.config;
        let planned = JobConfig {
            ps: plan.ps,
            ps_cpu: plan.cpu,
            ps_mem_mb: plan.mem_mb,
            ..c
        };
        // Only the PS group is planned here: the user's PS settings override it.
        let mut config = match &state.user {
            Some(user) => {
                let kept = rules::keep_user(planned, user);
                JobConfig {
                    ps: kept.ps,
                    ps_cpu: kept.ps_cpu,
                    ps_mem_mb: kept.ps_mem_mb,
                    ..c
                }
            }
            None => planned,
        };
        // An OOM raised the role's memory: no plan goes back below it.
        config.ps_mem_mb = config.ps_mem_mb.max(state.mem_floor[0]);
        let mem_mb = config.ps_mem_mb;
        (mem_mb > 0 && config != c).then_some(Action::Rescale {
            job: job.request.id,
            config,
            method: RescaleMethod::Migrate,
        })
    }

    /// This tick's actions for one job.
    fn decide(&self, state: &mut JobState, job: &JobView<'_>, now: SimTime) -> Vec<Action> {
        if job.phase == JobPhase::Training && state.training_since.is_none() {
            state.training_since = Some(now);
        }
        observe(state, job);
        handle_events(state, job, &job.config);
        let mut out = Vec::new();
        if !job.rescaling {
            out = shrink_pending(state, job, now);
            let due = may_plan(
                now,
                state.training_since,
                job.history.len(),
                job.running_workers == job.config.workers,
                last_worker_event(job),
                state.last_plan,
                !state.resizes.is_empty(),
                state.window.back().map(|s| s.time),
            );
            let next = next_resize(state, job);
            let planned = match next {
                Some(a) => Some(a),
                None if due && job.phase == JobPhase::Training => {
                    let a = self.plan(state, job, now);
                    if a.is_some() {
                        state.last_plan = Some(now);
                    }
                    a
                }
                None => None,
            };
            out.extend(planned);
        }
        state.requests.0.clear();
        state.requests.0.extend(
            job.pods
                .iter()
                .map(|p| (p.id, (p.request.cpu_cores(), p.request.mem_mb))),
        );
        state.requests.0.sort_unstable_by_key(|r| r.0);
        out
    }
}

/// The job's PS pods' summed (cores, MB) requests.
fn ps_total(job: &JobView<'_>) -> (f64, u64) {
    job.pods
        .iter()
        .filter(|p| p.role == Role::Ps)
        .fold((0.0, 0u64), |(c, m), p| {
            (c + p.request.cpu_cores(), m + p.request.mem_mb)
        })
}

impl Policy for DlroverOss {
    fn spec(&self) -> String {
        let mut spec = PolicySpec::parse("dlrover-oss").expect("a valid name");
        if self.limits.cpu != 100.0 {
            spec.params
                .insert("limit_cpu".into(), self.limits.cpu.to_string());
        }
        if self.limits.mem_mb != 102_400.0 {
            spec.params
                .insert("limit_mem_mb".into(), self.limits.mem_mb.to_string());
        }
        if !self.keep_user {
            spec.params.insert("keep_user".into(), "off".into());
        }
        spec.canonical()
    }

    /// OOM: memory x2, at most +8192 MB per step; no relaunch at or above 65536 MB.
    /// An allreduce job's pod is relaunched as it was (no adjustment).
    fn on_oom(&mut self, job: u64, _role: Role, mem_mb: u64) -> OomRelaunch {
        if self.passive.contains(&job) {
            return OomRelaunch::WithMemory(mem_mb);
        }
        match rules::oom_memory(mem_mb) {
            Some(mb) => OomRelaunch::WithMemory(mb),
            None => OomRelaunch::Abandon,
        }
    }

    fn sharding(&self) -> Sharding {
        Sharding::Dynamic
    }

    fn observes_pods(&self) -> bool {
        true
    }

    fn tick_interval(&self) -> Option<SimTime> {
        Some(SimTime::from_secs(TICK_S))
    }

    fn on_submit(&mut self, job: &JobView<'_>, _view: &ClusterView<'_>) -> Vec<Action> {
        let requested = job.request.requested;
        if requested.ps == 0 {
            self.passive.insert(job.request.id);
            return vec![Action::Launch {
                job: job.request.id,
                config: requested,
            }];
        }
        let user = self.keep_user.then_some(requested);
        self.jobs.insert(job.request.id, JobState::new(user));
        let created = rules::create_config(self.limits, requested.worker_gpu);
        let config = match &user {
            Some(user) => rules::keep_user(created, user),
            None => created,
        };
        vec![Action::Launch {
            job: job.request.id,
            config,
        }]
    }

    /// With no job watched, only a change or the first timer makes a tick do anything.
    fn quiet_until(&self) -> Option<SimTime> {
        self.watch
            .is_empty()
            .then(|| self.timers.first().map_or(SimTime::MAX, |&(t, _)| t))
    }

    fn on_tick(&mut self, view: &ClusterView<'_>) -> Vec<Action> {
        for e in view.ended {
            self.passive.remove(&e.id);
            if let Some(w) = self.jobs.remove(&e.id).and_then(|s| s.wake) {
                self.timers.remove(&(w, e.id));
            }
            self.watch.remove(&e.id);
        }
        let mut visit: BTreeSet<u64> = view.changed.clone();
        visit.extend(self.watch.iter().copied());
        while let Some(&(t, id)) = self.timers.first() {
            if t > view.now {
                break;
            }
            self.timers.pop_first();
            self.jobs.get_mut(&id).expect("timed job is tracked").wake = None;
            visit.insert(id);
        }
        let mut out = Vec::new();
        let mut jobs = std::mem::take(&mut self.jobs);
        for id in visit {
            let Some(job) = view.jobs.get(id) else {
                continue;
            };
            if self.passive.contains(&id) {
                continue;
            }
            let user = self.keep_user.then_some(job.request.requested);
            let state = jobs.entry(id).or_insert_with(|| JobState::new(user));
            if let Some(w) = state.wake.take() {
                self.timers.remove(&(w, id));
            }
            let stage = state.stage;
            let actions = self.decide(state, &job, view.now);
            // A plan that stepped to a stage with nothing to ask leaves the next stage due
            // at the next tick (no plan time is recorded).
            let stepped = state.stage != stage && state.stage != Stage::Running;
            let busy = !actions.is_empty() || (job.phase == JobPhase::Training && stepped);
            out.extend(actions);
            if busy {
                self.watch.insert(id);
            } else {
                self.watch.remove(&id);
                state.wake = next_wake(state, &job, view.now);
                if let Some(w) = state.wake {
                    self.timers.insert((w, id));
                }
            }
        }
        self.jobs = jobs;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> SimTime {
        SimTime::from_secs(secs)
    }

    /// `may_plan` at `now` for a job training since 1000 s with 1 step sample, workers at
    /// target, the last worker event at 1000 s, no plan yet, no migration, profiled at 1000 s.
    fn gate(now: u64) -> bool {
        may_plan(
            s(now),
            Some(s(1_000)),
            1,
            true,
            Some(s(1_000)),
            None,
            false,
            Some(s(1_000)),
        )
    }

    #[test]
    fn auto_scaling_starts_after_90_s_or_5_step_samples() {
        assert!(!gate(1_089));
        assert!(gate(1_090));
        let early = |samples| {
            may_plan(
                s(1_060),
                Some(s(1_000)),
                samples,
                true,
                Some(s(990)),
                None,
                false,
                Some(s(1_030)),
            )
        };
        assert!(!early(4));
        assert!(early(5));
        assert!(
            !may_plan(s(5_000), None, 9, true, None, None, false, Some(s(1))),
            "not training"
        );
        assert!(
            !may_plan(s(5_000), Some(s(1)), 9, true, None, None, false, None),
            "no profile"
        );
    }

    #[test]
    fn plans_wait_for_stable_workers_300_s_and_no_migration() {
        let at = |last_worker_event, last_plan: Option<u64>, migrating, at_target, profile| {
            may_plan(
                s(2_000),
                Some(s(0)),
                9,
                at_target,
                Some(s(last_worker_event)),
                last_plan.map(s),
                migrating,
                Some(s(profile)),
            )
        };
        assert!(at(1_940, None, false, true, 1_900));
        assert!(
            !at(1_941, None, false, true, 1_900),
            "workers changed < 60 s ago"
        );
        assert!(!at(0, None, false, false, 1_900), "workers not at target");
        assert!(
            !at(0, None, true, true, 1_900),
            "a PS migration is under way"
        );
        assert!(at(0, Some(1_700), false, true, 1_900));
        assert!(
            !at(0, Some(1_701), false, true, 1_900),
            "< 300 s since the last plan"
        );
        assert!(
            !at(0, Some(1_700), false, true, 1_700),
            "no profile since the last plan"
        );
    }

    #[test]
    fn ps_changes_are_an_hour_apart() {
        assert!(may_change_ps(s(10), None));
        assert!(!may_change_ps(s(4_599), Some(s(1_000))));
        assert!(may_change_ps(s(4_600), Some(s(1_000))));
    }

    #[test]
    fn spec_takes_the_limits() {
        let p = crate::build("dlrover-oss").unwrap();
        assert_eq!(p.spec(), "dlrover-oss");
        assert_eq!(p.sharding(), Sharding::Dynamic);
        assert!(p.observes_pods());
        assert_eq!(p.tick_interval(), Some(s(30)));
        let p = crate::build("dlrover-oss[limit_cpu=200,limit_mem_mb=51200]").unwrap();
        assert_eq!(p.spec(), "dlrover-oss[limit_cpu=200,limit_mem_mb=51200]");
        assert!(crate::build("dlrover-oss[limit_cpu=0]").is_err());
        assert!(crate::build("dlrover-oss[rho=1]").is_err());
    }
}
