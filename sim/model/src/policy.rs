//! The policy interface: what a scheduler sees (observations) and what it may ask for
//! (actions). Policies return decisions as data; the world validates and applies them, so
//! a buggy policy cannot over-allocate a node or see the hidden ground truth.

use dlsim_engine::SimTime;
use dlsim_traces::{JobSpec, ModelKind};
use serde::Serialize;

use crate::Resources;

/// A job's resource configuration: pod counts and per-pod requests.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct JobConfig {
    pub workers: u32,
    pub ps: u32,
    pub worker_cpu: f64,
    pub worker_mem_mb: u64,
    pub worker_gpu: u32,
    pub ps_cpu: f64,
    pub ps_mem_mb: u64,
}

impl JobConfig {
    /// The configuration the user wrote in the trace record.
    pub fn requested(spec: &JobSpec) -> Self {
        JobConfig {
            workers: spec.workers,
            ps: spec.ps,
            worker_cpu: spec.worker_cpu,
            worker_mem_mb: spec.worker_mem_mb,
            worker_gpu: spec.worker_gpu,
            ps_cpu: spec.ps_cpu,
            ps_mem_mb: spec.ps_mem_mb,
        }
    }

    pub fn worker_request(&self) -> Resources {
        Resources::new(self.worker_cpu, self.worker_mem_mb, self.worker_gpu)
    }

    pub fn ps_request(&self) -> Resources {
        Resources::new(self.ps_cpu, self.ps_mem_mb, 0)
    }

    pub fn total(&self) -> Resources {
        self.worker_request().scaled(u64::from(self.workers))
            + self.ps_request().scaled(u64::from(self.ps))
    }
}

/// What the user declared about a job: everything in the trace record except the
/// memory-growth constants, which only the hidden truth knows.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRequest {
    pub id: u64,
    pub user: String,
    pub model: ModelKind,
    pub batch_size: u32,
    pub steps: u64,
    pub dense_mb: f64,
    pub emb_dim: u32,
    pub priority: i32,
    pub submit: SimTime,
    pub requested: JobConfig,
}

impl JobRequest {
    pub fn from_spec(spec: &JobSpec) -> Self {
        JobRequest {
            id: spec.id,
            user: spec.user.clone(),
            model: spec.model,
            batch_size: spec.batch_size,
            steps: spec.steps,
            dense_mb: spec.dense_mb,
            emb_dim: spec.emb_dim,
            priority: spec.priority,
            submit: SimTime::from_secs(spec.submit_s),
            requested: JobConfig::requested(spec),
        }
    }
}

/// Life-cycle phase of a job as its master reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobPhase {
    /// Submitted; no pod requested yet.
    Submitted,
    /// Pods requested; not all PS and at least one worker are up yet.
    Starting,
    Training,
    Completed,
    Failed,
}

/// One profiler sample, as a job master would report it (noisy).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProfileSample {
    pub time: SimTime,
    pub running_workers: u32,
    pub running_ps: u32,
    /// CPU cores requested per worker and per PS when the sample was taken (the job's
    /// configuration then, which a rescale may since have changed).
    pub worker_cpu: f64,
    pub ps_cpu: f64,
    pub steps_per_s: f64,
    /// Mean CPU cores used per running worker and per PS.
    pub worker_cpu_used: f64,
    pub ps_cpu_used: f64,
    /// The busiest PS's CPU use over its request (a job master profiles each PS).
    pub ps_cpu_load_max: f64,
    /// Memory used per worker, and by the fullest PS, in MB.
    pub worker_mem_used_mb: f64,
    pub ps_mem_used_mb_max: f64,
}

/// How a job's data is split between workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sharding {
    /// TFJob: each worker owns a fixed slice. Losing or adding a worker restarts the job
    /// from its checkpoint; the slowest worker sets the pace.
    #[default]
    Static,
    /// DLRover: TODO/DOING shard queues. Workers come and go without a restart; a fast
    /// worker takes more shards.
    Dynamic,
}

/// How a job's embedding parameters are spread over its PSes when it is re-partitioned
/// (its PS count changes: a rescale, a stop-and-restart with another PS count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Partitioning {
    /// TensorFlow's allocation by tensor: every partition, the first and each re-partition,
    /// may be uneven (one hot PS with probability `faults.hot_ps_prob`).
    #[default]
    Tensor,
    /// DeepRec's even placement of embedding parameters (DLRover-RM Sec. 3, "PS
    /// Stragglers": "we adopt DeepRec to ensure that the embedding parameters are evenly
    /// distributed across the new set of PS nodes"): a re-partition is even. The job's
    /// first partition is its model's own, drawn as under `Tensor`.
    Balanced,
}

/// A pod as the cluster API and the job's profiler report it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PodPhase {
    Pending,
    Starting,
    Running,
}

/// One profiler sample of one running pod (noisy).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PodSample {
    pub time: SimTime,
    pub cpu_used: f64,
    pub mem_used_mb: f64,
    /// Samples trained per second by this worker (0 for a PS).
    pub samples_per_s: f64,
    /// Seconds per step of this worker (0 for a PS).
    pub step_time_s: f64,
    /// Samples this worker trained since it started (0 for a PS).
    pub samples_done: f64,
}

/// A policy's view of one pod.
#[derive(Clone, Debug, PartialEq)]
pub struct PodView {
    /// The pod's id, valid for the whole run (what `ReplacePod` names).
    pub id: usize,
    pub role: crate::job::Role,
    pub phase: PodPhase,
    pub request: Resources,
    /// When it was created (pending since) and when it started running.
    pub created: SimTime,
    pub running_since: Option<SimTime>,
    /// The latest profiler sample, if the pod has run through one.
    pub last: Option<PodSample>,
    /// Exponentially weighted samples/s of a worker (alpha 0.1 over its samples).
    pub ewma_samples_per_s: f64,
}

/// Why a pod stopped, as the cluster reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PodEventKind {
    Pending,
    Running,
    FailedOom,
    FailedError,
    Evicted,
    NodeFailure,
    /// Stopped by the job's own scaling (removed, replaced or restarted).
    Stopped,
}

impl PodEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PodEventKind::Pending => "pending",
            PodEventKind::Running => "running",
            PodEventKind::FailedOom => "failed_oom",
            PodEventKind::FailedError => "failed_error",
            PodEventKind::Evicted => "evicted",
            PodEventKind::NodeFailure => "node_failure",
            PodEventKind::Stopped => "stopped",
        }
    }
}

/// A pod life-cycle event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PodEvent {
    pub time: SimTime,
    pub pod: usize,
    pub role: crate::job::Role,
    pub kind: PodEventKind,
}

/// A policy's view of one job.
#[derive(Clone, Debug)]
pub struct JobView<'a> {
    pub request: &'a JobRequest,
    pub phase: JobPhase,
    pub config: JobConfig,
    pub running_workers: u32,
    pub running_ps: u32,
    pub pending_pods: u32,
    /// Steps completed as the job's checkpoints/metrics report them.
    pub steps_done: u64,
    pub history: &'a [ProfileSample],
    pub oom_kills: u32,
    pub sharding: Sharding,
    /// The job's pods that hold or wait for resources (not the finished ones). Filled only
    /// in `on_tick` views of policies whose [`Policy::observes_pods`] is true: the others
    /// never look, and building it for every job at every arrival would dominate a long
    /// replay.
    pub pods: Vec<PodView>,
    /// Recent pod events, oldest first.
    pub events: &'a [PodEvent],
    /// A rescale (stop-and-restart or migration) is under way; new ones are refused.
    pub rescaling: bool,
    /// Relaunches used per role: [PS, worker].
    pub restarts: [u32; 2],
}

/// A policy's view of the cluster: aggregate capacity and free space, and active jobs.
///
/// Built in O(1) per consultation: aggregates are kept by the world as they change, and
/// job views are built only for the jobs a policy looks at ([`Jobs`]). A policy whose
/// per-tick work should not grow with every queued or running job keeps its own index of
/// the jobs it manages (learnt in `on_submit`), looks them up with [`Jobs::get`], and drops
/// them when they appear in [`ClusterView::ended`].
#[derive(Clone, Debug)]
pub struct ClusterView<'a> {
    pub now: SimTime,
    pub capacity: Resources,
    pub allocated: Resources,
    /// Room for new pods summed over nodes (up nodes, less co-located services).
    pub free: Resources,
    /// Requests of the pods waiting to be placed, summed.
    pub pending: Resources,
    /// The largest node capacity per resource: what one pod could ever get.
    pub node_max: Resources,
    /// Every node with its capacity and current allocation, as the cluster API lists them.
    pub nodes: &'a [crate::Node],
    /// Jobs launched and not yet ended.
    pub jobs: Jobs<'a>,
    /// Jobs that ended since the policy's previous `on_tick`, in the order they ended
    /// (empty for a policy without ticks).
    pub ended: &'a [EndedJob],
    /// Ids of active jobs whose observable state changed since the policy's previous
    /// `on_tick` (a pod event, a pending pod placed or re-requested, a pod or job profile
    /// sample, a phase change; empty for a policy without ticks). Progress (`steps_done`) changes without being listed. A
    /// policy whose decisions for a job depend only on these and on its own timers can
    /// visit just these jobs, the jobs it must watch, and the jobs whose timers are due.
    pub changed: &'a std::collections::BTreeSet<u64>,
}

impl ClusterView<'_> {
    /// Drops a policy's per-job state of the jobs that ended (O(ended jobs)).
    pub fn forget_ended<T>(&self, state: &mut std::collections::BTreeMap<u64, T>) {
        for e in self.ended {
            state.remove(&e.id);
        }
    }
}

/// A job that ended, as its master last reported it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EndedJob {
    pub id: u64,
    pub phase: JobPhase,
    pub config: JobConfig,
    pub steps_done: u64,
}

/// The active jobs of a [`ClusterView`], in index (submission) order. Views are built on
/// demand, so looking at a few jobs costs a few views.
#[derive(Clone, Copy)]
pub struct Jobs<'a> {
    pub(crate) jobs: &'a crate::slots::Slots<crate::job::Job>,
    pub(crate) pods: &'a crate::slots::Slots<crate::job::Pod>,
    pub(crate) active: &'a std::collections::BTreeSet<usize>,
    pub(crate) index: &'a rustc_hash::FxHashMap<u64, usize>,
    pub(crate) with_pods: bool,
}

impl std::fmt::Debug for Jobs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Jobs({} active)", self.active.len())
    }
}

impl<'a> Jobs<'a> {
    /// Active jobs, counting those the policy does not manage (they share the cluster).
    pub fn len(&self) -> usize {
        self.active.len()
    }

    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }

    /// Every active job's view (O(active jobs): for policies that act on all of them).
    /// Jobs the policy does not manage (`managed_share`) are not listed.
    pub fn iter(&self) -> impl Iterator<Item = JobView<'a>> + 'a {
        let (jobs, pods, with_pods) = (self.jobs, self.pods, self.with_pods);
        self.active
            .iter()
            .filter(move |&&j| !jobs[j].unmanaged)
            .map(move |&j| crate::world::job_view(&jobs[j], pods, with_pods))
    }

    /// The view of active job `id`, or `None` if it is not active (or not the policy's
    /// to manage).
    pub fn get(&self, id: u64) -> Option<JobView<'a>> {
        let &j = self.index.get(&id)?;
        (self.active.contains(&j) && !self.jobs[j].unmanaged)
            .then(|| crate::world::job_view(&self.jobs[j], self.pods, self.with_pods))
    }
}

/// How a change of PS count or per-pod resources is carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RescaleMethod {
    /// Checkpoint to remote storage, stop every pod, start new ones, reload.
    StopRestart,
    /// Start the new pods while the old ones train, then pause briefly to move state
    /// (with a flash checkpoint in memory if the scenario enables it). Falls back to
    /// stop-and-restart when the scenario disables seamless migration.
    Migrate,
}

/// A decision. The world checks each and ignores (and counts) the invalid ones.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Start a submitted job with this configuration (its data sharding is the policy's
    /// [`Policy::sharding`]).
    Launch { job: u64, config: JobConfig },
    /// Set a started job's worker count. With dynamic sharding new workers join when they
    /// are up and removed workers return their unfinished shards; with static sharding the
    /// job is stopped and restarted with the new count.
    ScaleWorkers { job: u64, workers: u32 },
    /// Move a started job to a new configuration (PS count, per-pod CPU or memory).
    Rescale {
        job: u64,
        config: JobConfig,
        method: RescaleMethod,
    },
    /// Replace one pod with a new one of this size: a pending pod is re-requested, a
    /// running worker is swapped once the new one is up, a running PS is migrated (its
    /// state moved during a short pause).
    ReplacePod {
        job: u64,
        pod: usize,
        cpu: f64,
        mem_mb: u64,
    },
}

impl Action {
    /// The trace id of the job the action is about.
    pub fn job(&self) -> u64 {
        match self {
            Action::Launch { job, .. }
            | Action::ScaleWorkers { job, .. }
            | Action::Rescale { job, .. }
            | Action::ReplacePod { job, .. } => *job,
        }
    }
}

/// How to relaunch a pod the kernel killed for exceeding its memory limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OomRelaunch {
    /// The scenario's rule: memory times `recovery.oom_memory_factor`.
    Default,
    /// Relaunch with this many MB.
    WithMemory(u64),
    /// Do not relaunch: the job fails with reason `oom`.
    Abandon,
}

/// A scheduler. One implementation per file in the policies crate.
pub trait Policy {
    /// The canonical spec string, e.g. `static` or `dlrover[rho=2.5]`.
    fn spec(&self) -> String;

    /// How the jobs this policy launches split their data.
    fn sharding(&self) -> Sharding {
        Sharding::Static
    }

    /// How the jobs this policy re-partitions spread their parameters over the new PSes.
    fn partitioning(&self) -> Partitioning {
        Partitioning::Tensor
    }

    /// Oracle policies only (`well-tuned`): receives the hidden truth once, before the run.
    /// A real system cannot see this; a policy that overrides it must say it is an oracle
    /// in its name and docs. Everyone else keeps the default, which ignores it.
    fn see_truth(&mut self, _truth: &crate::scenario::TruthSettings) {}

    /// Called when a pod of job `job` was OOM-killed with a `mem_mb` limit, before the
    /// world relaunches it (within the restart budget). A job master's OOM rule lives here.
    fn on_oom(&mut self, _job: u64, _role: crate::job::Role, _mem_mb: u64) -> OomRelaunch {
        OomRelaunch::Default
    }

    /// The cores this policy gives every pod of a role whatever the job asked, as
    /// (spec key, cores): `es[worker_cpu=3]` gives `[("worker_cpu", 3.0)]`. A run refuses
    /// a policy whose pods no node of its cluster could hold
    /// ([`crate::scenario::check_policy_pods`]), rather than rejecting every
    /// launch. Most policies size pods from the job and the cluster and keep the default.
    fn pod_cores(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// Whether jobs keep the pod counts their trace recorded over time (`observed.scale`,
    /// applied by the world: `world/recorded.rs`). Only a policy that runs the user's own
    /// configuration says yes (`static`).
    fn follows_recorded_scale(&self) -> bool {
        false
    }

    /// Whether the policy reads per-pod views and samples (see [`JobView::pods`]).
    fn observes_pods(&self) -> bool {
        false
    }

    /// How often `on_tick` runs; `None` for policies that only act on submission.
    fn tick_interval(&self) -> Option<SimTime> {
        None
    }

    /// Called when a job arrives. Usually returns a `Launch` for it.
    fn on_submit(&mut self, job: &JobView<'_>, view: &ClusterView<'_>) -> Vec<Action>;

    /// Called every `tick_interval`.
    fn on_tick(&mut self, _view: &ClusterView<'_>) -> Vec<Action> {
        Vec::new()
    }

    /// `Some(t)`: until `t`, a tick that lists no changed and no ended job would return
    /// nothing and change nothing, so the world skips it (it still counts as an event).
    /// For a policy whose ticks follow what changed ([`ClusterView::changed`]) plus its own
    /// timers, `t` is its next timer; a long replay then pays for the ticks that have
    /// something to look at, not for every 30 s of simulated time. `None` (the default):
    /// every tick is consulted.
    fn quiet_until(&self) -> Option<SimTime> {
        None
    }

    /// A fresh per-job autoscaler for each online job of the run (a composed spec such as
    /// `dlrover+kale`); `None` (the default): online jobs keep their initial workers.
    fn new_autoscaler(&self) -> Option<Box<dyn Autoscaler>> {
        None
    }
}

// ---- Online jobs: the per-job autoscaler interface (issue #19) ----

/// A pod's phase as the Kubernetes API reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnlinePodPhase {
    Pending,
    Running,
}

/// One scraped metric sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricSample {
    /// GPU utilisation (0..1), CPU utilisation of the request (0..1), or samples/s.
    pub value: f64,
    /// When the sample's window ended.
    pub timestamp: SimTime,
    /// The window the sample averages over.
    pub window: SimTime,
}

/// What the API server and the metrics pipeline say about one worker pod.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PodObs {
    pub phase: OnlinePodPhase,
    /// The Ready condition, with the time it last changed.
    pub ready: bool,
    pub ready_transition: SimTime,
    /// `status.startTime` (set once the pod is scheduled).
    pub start_time: SimTime,
    pub gpu_util: Option<MetricSample>,
    pub cpu_util: Option<MetricSample>,
    pub sps: Option<MetricSample>,
}

/// Everything a policy may observe at a decision.
pub struct OnlineView<'a> {
    pub now: SimTime,
    /// The replica count last asked for (Kubernetes `spec.replicas`).
    pub target: u32,
    pub pods: &'a [PodObs],
    /// Observed total arrival rate per completed minute (Kafka ingress counters).
    pub minute_rates: &'a [f64],
    /// Untrained samples in the topic and the age of the oldest (Kafka consumer lag).
    pub backlog_samples: f64,
    pub lag_s: f64,
    /// Whether pods are starting or the stream is being rebuilt (a rescale in progress).
    pub rescaling: bool,
    /// Synchronous or asynchronous training (the operator knows which).
    pub mode: crate::online::scenario::TrainMode,
    /// The offline throughput benchmark (repeat-major).
    pub profile: &'a [crate::online::throughput::ProfilePoint],
    pub profile_repeats: u32,
    pub max_workers: u32,
    /// Minutes the run lasts.
    pub run_minutes: usize,
    /// Seconds a rescale takes end to end (platform constant, known to operators).
    pub rescale_s: f64,
    /// The job's lag SLO in seconds (the operator's own target).
    pub slo_lag_s: f64,
    /// Future true rates, for the labelled oracle forecaster only.
    /// Ground truth: public so that tests can build views, but read only through
    /// [`OnlineView::oracle_future`], by a policy labelled `oracle`.
    pub oracle: &'a [f64],
}

impl OnlineView<'_> {
    /// The true total rate for minutes `from..to` (oracle only: this is ground truth).
    pub fn oracle_future(&self, from: usize, to: usize) -> &[f64] {
        let end = to.min(self.oracle.len());
        &self.oracle[from.min(end)..end]
    }

    pub fn now_minute(&self) -> usize {
        (self.now.as_ms() / 60_000) as usize
    }
}

/// A per-job autoscaler of online jobs (`hpa`, `kale`, ...): one instance per online job,
/// consulted at its own interval with what that job's operator could observe.
pub trait Autoscaler {
    /// Canonical spec string (used in outputs).
    fn name(&self) -> String;
    /// How often `decide` is called; a multiple of the scenario's step.
    fn interval(&self) -> SimTime;
    /// The data-plane shuffling this policy turns on, if any.
    fn shuffle(&self) -> Option<crate::online::stream::ShuffleConfig> {
        None
    }
    /// The desired worker count, or `None` to leave the target alone.
    fn decide(&mut self, view: &OnlineView) -> Option<u32>;
    /// Policy-specific figures for `summary.json` (fit errors, forecaster, ...).
    fn report(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}
