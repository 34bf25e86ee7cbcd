//! Runtime state of jobs and pods, and the job's piecewise-constant progress.
//!
//! Progress is integrated piecewise: between two events that touch a job, its throughput
//! is constant, so `samples += rate * dt` is exact. Throughput changes only when the
//! allocation or conditions change (a pod starts or dies), which is when the world calls
//! `Job::advance` and recomputes the rate. This keeps the event count proportional to
//! changes, not to training steps, at the cost of ignoring step-level jitter.

use crate::perf::{self, JobPerf, PerfInputs, ThroughputParams};
use crate::policy::{
    JobConfig, JobPhase, JobRequest, Partitioning, PodEvent, PodSample, ProfileSample, Sharding,
};

pub mod lifecycle;

use crate::shards::ShardLedger;
use crate::slots::Slots;
use crate::Resources;
use dlsim_engine::SimTime;
use dlsim_traces::JobSpec;
pub use lifecycle::{Lifecycle, Migration, Outcome, Phase};
use serde::Serialize;

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Ps,
    Worker,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodState {
    /// Waiting for a node with room.
    Pending,
    /// Placed and holding resources; the container is starting.
    Starting,
    Running,
    /// Gone: resources returned.
    Finished,
}

/// A pod of a job. What the cluster API shows of it (role, slot, request, state, node) is
/// public; what only the truth knows (its CPU cut, parameter share, rates) is the world's.
#[derive(Clone, Debug)]
pub struct Pod {
    pub job: usize,
    pub role: Role,
    /// The pod's place within its role (0-based) and how many pods held that place in this
    /// job before it: what its random draws are keyed by (see `World::arm_pod_failure`).
    pub slot: u32,
    pub incarnation: u32,
    pub request: Resources,
    pub state: PodState,
    pub node: Option<usize>,
    /// Fraction of the requested CPU the pod actually gets (< 1 for a straggler).
    pub(crate) cpu_factor: f64,
    /// For a PS: its share of the parameters and lookups (the job's shares sum to 1).
    pub(crate) share: f64,
    /// Fraction of its CPU left by co-located services on its node (1 = no contention).
    pub(crate) throttle: f64,
    /// Truth at the current rate, for the profiler: CPU cores in use, and samples/s for a
    /// worker (both 0 unless the job trains).
    pub(crate) cpu_used: f64,
    pub(crate) rate: f64,
    /// A new pod of a migration: it holds resources but trains only after the switch.
    pub(crate) standby: bool,
    /// The running pod this one replaces once it is up (`ReplacePod` on a worker).
    pub(crate) replaces: Option<usize>,
    pub(crate) created: SimTime,
    pub(crate) running_since: Option<SimTime>,
    /// Observations of this pod: the latest sample and a worker's samples/s EWMA.
    pub(crate) last_sample: Option<PodSample>,
    pub(crate) ewma_rate: f64,
    /// Samples this worker trained (truth; the profiler reports it with noise).
    pub(crate) samples_trained: f64,
}

impl Pod {
    /// For tests and inspection only (policies never see a `Pod`): the hidden fraction of
    /// its requested CPU the pod gets, below 1 on a slow node.
    pub fn truth_cpu_factor(&self) -> f64 {
        self.cpu_factor
    }

    /// Running and part of the job's training (not a migration standby).
    pub fn active(&self) -> bool {
        self.state == PodState::Running && !self.standby
    }

    /// Holding a node: starting or running.
    pub fn placed(&self) -> bool {
        matches!(self.state, PodState::Starting | PodState::Running)
    }

    /// CPU cores it actually gets.
    pub fn effective_cpu(&self) -> f64 {
        self.request.cpu_cores() * self.cpu_factor * self.throttle
    }
}

/// Why a job ended without completing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailReason {
    /// A pod's memory use exceeded its limit.
    Oom,
    /// The policy's launch configuration was invalid.
    Rejected,
    /// A role's restart budget was spent on pod failures.
    PodFailures,
    /// A PS was lost and checkpointing is off, so there is nothing to restore.
    PsLost,
    /// A role's restart budget was spent on pods lost with their node.
    NodeFailures,
    /// Still running or pending when the horizon was reached.
    Unfinished,
    /// Never trained: pods still waited for a node at the pending timeout
    /// (`recovery.pending_timeout_s`).
    Scheduling,
}

impl FailReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FailReason::Oom => "oom",
            FailReason::Rejected => "rejected",
            FailReason::PodFailures => "pod_failures",
            FailReason::PsLost => "ps_lost",
            FailReason::NodeFailures => "node_failures",
            FailReason::Unfinished => "unfinished",
            FailReason::Scheduling => "scheduling",
        }
    }
}

/// A PS whose CPU use reaches this share of its request is hot: the threshold DLRover's
/// sample stage applies to PS CPU ("If the CPU utilization of PS exceeds a predefined
/// threshold like 0.9, DLROVER will add more CPU cores to PS", Sec. 4.2), taken here as the
/// hot-PS threshold (our choice: its adjust stage compares a PS with the others and states
/// no threshold).
pub const HOT_PS_UTIL: f64 = 0.9;

/// A worker slower than this share of its job's median worker is a straggler (our choice;
/// the papers define a straggler only as a worker that "lags significantly behind its
/// peers", DLRover-RM Sec. 5.1; `world/observe.rs`).
pub const STRAGGLER_RATE: f64 = 0.8;

/// A monitored condition (a hot PS, a straggling worker) is an incident of the job once it
/// has held without a break for this long: a monitor alerts on a sustained condition, as
/// alerting rules do with a `for:` duration (the Prometheus operator's stock Kubernetes
/// rules use 15 min). DLRover-RM Table 4's "after" rates count the jobs that still suffer a
/// hot PS or a straggler once DLRover-RM has had the chance to act, which a flag set at the
/// first sighting cannot tell apart from one fixed minutes later. The papers state no
/// window; 15 min is the stock rules' (the default of a scenario's
/// `observation.incident_hold_s`, which `dlsim sensitivity` varies) and covers DLRover-RM's
/// chance to act on a production day: one 3-min adjustment round to see it and a migration
/// whose new pods take 5-10 min to start (Sec. 2). (10 min until 2026-11-27, when pods started in 0.5-4.6 min; with 5-10
/// min starts a hot PS that DLRover-RM's first migration fixes outlasted 10 min and Table
/// 4's hot-PS direction flipped. ARCHITECTURE.md, "Observed incidents", shows what 0, 5,
/// 10, 15 and 20 min give.)
pub const INCIDENT_HOLD: SimTime = SimTime::from_secs(900);

/// One monitored condition of a job: when its current spell began, and whether any spell
/// lasted the hold (the scenario's `observation.incident_hold_s`, [`INCIDENT_HOLD`] by
/// default). The condition can change only when the job's rate is refreshed,
/// so observing it there and closing it at the job's end sees every spell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Incident {
    since: Option<SimTime>,
    seen: bool,
}

impl Incident {
    /// The condition is `on` from `now` until the next observation; a spell that ends
    /// counts once it lasted `hold`.
    pub(crate) fn observe(&mut self, now: SimTime, on: bool, hold: SimTime) {
        match (on, self.since) {
            (true, None) => self.since = Some(now),
            (false, Some(_)) => self.close(now, hold),
            _ => {}
        }
    }

    /// Ends the current spell at `now` (the job ended or stopped training).
    pub(crate) fn close(&mut self, now: SimTime, hold: SimTime) {
        if let Some(s) = self.since.take() {
            self.seen |= now - s >= hold;
        }
    }

    /// Whether a spell lasted the hold (spells still open are not counted).
    pub(crate) fn seen(&self) -> bool {
        self.seen
    }
}

/// Time integrals of resources over a job's life, for job-level utilisation.
#[derive(Clone, Copy, Debug, Default)]
pub struct UsageIntegrals {
    pub cpu_alloc_core_s: f64,
    pub cpu_used_core_s: f64,
    pub mem_alloc_mb_s: f64,
    pub mem_used_mb_s: f64,
    pub gpu_alloc_s: f64,
    pub gpu_used_s: f64,
    /// The same CPU and memory integrals split by role, `[worker, ps]`: DLRover-RM reports
    /// worker and PS utilisation apart (production, Sec. 6.3).
    pub role_cpu_alloc_core_s: [f64; 2],
    pub role_cpu_used_core_s: [f64; 2],
    pub role_mem_alloc_mb_s: [f64; 2],
    pub role_mem_used_mb_s: [f64; 2],
}

impl UsageIntegrals {
    /// Adds another job's integrals to these (pooling over jobs).
    pub fn add(&mut self, o: &UsageIntegrals) {
        self.cpu_alloc_core_s += o.cpu_alloc_core_s;
        self.cpu_used_core_s += o.cpu_used_core_s;
        self.mem_alloc_mb_s += o.mem_alloc_mb_s;
        self.mem_used_mb_s += o.mem_used_mb_s;
        self.gpu_alloc_s += o.gpu_alloc_s;
        self.gpu_used_s += o.gpu_used_s;
        for k in 0..2 {
            self.role_cpu_alloc_core_s[k] += o.role_cpu_alloc_core_s[k];
            self.role_cpu_used_core_s[k] += o.role_cpu_used_core_s[k];
            self.role_mem_alloc_mb_s[k] += o.role_mem_alloc_mb_s[k];
            self.role_mem_used_mb_s[k] += o.role_mem_used_mb_s[k];
        }
    }
}

/// What the job's running pods give it right now: their counts, the parameter share the
/// running PS hold, and the rate and resource use the truth gives them. Zero while the job
/// waits; dropped when it ends ([`Job::end`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct RunState {
    /// Running (joined, not standby) workers and PS.
    pub(crate) workers: u32,
    pub(crate) ps: u32,
    /// Sum of the shares of the running PS (1 when all are up).
    pub(crate) ps_share: f64,
    /// Current throughput in samples/s (0 unless training).
    pub(crate) rate: f64,
    /// The truth's performance for the running pods (None unless training).
    pub(crate) perf: Option<JobPerf>,
    /// Per running worker: (pod, samples/s) at the current rate.
    pub(crate) worker_rates: Vec<(usize, f64)>,
}

/// A job of the run: its trace record, its hidden truth, its lifecycle and everything the
/// world tracks about it. The world (this crate) reads and writes its fields; other crates
/// read an ended job's outcome through the accessors below, and policies never see a
/// `Job` at all, only its [`JobView`](crate::policy::JobView).
pub struct Job {
    pub(crate) spec: JobSpec,
    pub(crate) request: JobRequest,
    /// Hidden: this job's throughput parameters.
    pub(crate) truth: ThroughputParams,
    /// The phase and its data; changed only through its transitions (`job/lifecycle.rs`).
    pub(crate) life: Lifecycle,
    pub(crate) config: JobConfig,
    pub(crate) pods: Vec<usize>,
    /// Pods retired while the job runs (failed, removed, replaced): kept until the job
    /// ends, since a migration in progress may still name them, then released with it.
    pub(crate) retired: Vec<usize>,
    pub(crate) running: RunState,
    pub(crate) pending_pods: u32,
    /// Pods holding a node (starting or running).
    pub(crate) placed_pods: u32,
    pub(crate) samples_done: f64,
    /// Relaunches used, per role: [PS, worker].
    pub(crate) restarts: [u32; 2],
    /// Pods created so far per role and slot ([PS, worker]): the next pod in a slot is
    /// that slot's next incarnation.
    pub(crate) slot_incarnations: [Vec<u32>; 2],
    /// Parameter partitions drawn so far (each may draw a hot PS).
    pub(crate) partitions: u32,
    pub(crate) pod_failures: u32,
    /// Samples saved by the last periodic checkpoint, and training time since it.
    pub(crate) ckpt_samples: f64,
    pub(crate) train_since_ckpt_s: f64,
    pub(crate) ckpt_interval_s: f64,
    pub(crate) last_update: SimTime,
    /// Bumped whenever the rate changes, so stale completion/OOM events are ignored.
    pub(crate) generation: u64,
    pub(crate) oom_kills: u32,
    pub(crate) evictions: u32,
    pub(crate) node_failures: u32,
    /// Rescales applied (worker scaling, stop-and-restart, migration, pod replacement).
    pub(crate) rescales: u32,
    /// What the profiler has seen of this job for at least [`INCIDENT_HOLD`] at a time: a
    /// hot PS (a PS using at least [`HOT_PS_UTIL`] of its CPU) and training slowed by a
    /// straggling worker (one slower than [`STRAGGLER_RATE`] of the job's median worker
    /// that holds the job below that share of its workers' median pace). DLRover-RM Table
    /// 4 reports the share of jobs with each ("slow training").
    pub(crate) seen_hot_ps: Incident,
    pub(crate) seen_straggler: Incident,
    /// The configuration the policy launched the job with, and when its last elastic
    /// change was applied: how close a warm start came to the final configuration and how
    /// long the job took to settle (DLRover-RM Fig. 9 and Sec. 6.2).
    pub(crate) launched: Option<JobConfig>,
    pub(crate) last_rescale: Option<SimTime>,
    pub(crate) usage: UsageIntegrals,
    pub(crate) history: Vec<ProfileSample>,
    pub(crate) events: Vec<PodEvent>,
    pub(crate) sharding: Sharding,
    /// How the job's parameters are spread when it is re-partitioned (the policy's).
    pub(crate) partitioning: Partitioning,
    /// Dynamic sharding: the shard ledger, and its state at the last checkpoint.
    pub(crate) ledger: Option<ShardLedger>,
    pub(crate) ckpt_ledger: Option<ShardLedger>,
    /// A starting pod's request counts as allocated (`observation.count_starting_pods`).
    pub(crate) count_starting_pods: bool,
    /// Left out of the policy's care (`managed_share`): run as its user configured it.
    pub(crate) unmanaged: bool,
}

/// The constants the world needs to evaluate a job's truth.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TruthEnv {
    pub(crate) bandwidth_mb_s: f64,
    pub(crate) gpu_core_equiv: f64,
    pub(crate) physics: crate::perf::Physics,
}

impl Job {
    pub(crate) fn new(spec: JobSpec, truth: ThroughputParams) -> Self {
        let request = JobRequest::from_spec(&spec);
        Job {
            config: request.requested,
            request,
            spec,
            truth,
            life: Lifecycle::new(),
            pods: Vec::new(),
            retired: Vec::new(),
            running: RunState::default(),
            pending_pods: 0,
            placed_pods: 0,
            samples_done: 0.0,
            restarts: [0, 0],
            slot_incarnations: [Vec::new(), Vec::new()],
            partitions: 0,
            pod_failures: 0,
            ckpt_samples: 0.0,
            train_since_ckpt_s: 0.0,
            ckpt_interval_s: 0.0,
            last_update: SimTime::ZERO,
            generation: 0,
            oom_kills: 0,
            evictions: 0,
            node_failures: 0,
            rescales: 0,
            seen_hot_ps: Incident::default(),
            seen_straggler: Incident::default(),
            launched: None,
            last_rescale: None,
            usage: UsageIntegrals::default(),
            history: Vec::new(),
            events: Vec::new(),
            sharding: Sharding::Static,
            partitioning: Partitioning::Tensor,
            ledger: None,
            ckpt_ledger: None,
            count_starting_pods: false,
            unmanaged: false,
        }
    }

    pub fn is_active(&self) -> bool {
        self.life.is_active()
    }

    /// The trace record the job was built from.
    pub fn spec(&self) -> &JobSpec {
        &self.spec
    }

    pub fn request(&self) -> &JobRequest {
        &self.request
    }

    /// The phase as the job's master reports it (what policies and `jobs.csv` see).
    pub fn phase(&self) -> JobPhase {
        self.life.observed()
    }

    /// The configuration the job runs (or last ran) in.
    pub fn config(&self) -> JobConfig {
        self.config
    }

    /// The configuration the policy launched it with (`None` if it never launched).
    pub fn launched(&self) -> Option<JobConfig> {
        self.launched
    }

    /// When the job first trained.
    pub fn start(&self) -> Option<SimTime> {
        self.life.start()
    }

    /// When the job ended (`None` while active, or if it was never launched).
    pub fn ended_at(&self) -> Option<SimTime> {
        self.life.ended_at()
    }

    pub fn fail_reason(&self) -> Option<FailReason> {
        self.life.fail_reason()
    }

    /// Relaunches used, per role: [PS, worker].
    pub fn restarts(&self) -> [u32; 2] {
        self.restarts
    }

    pub fn rescales(&self) -> u32 {
        self.rescales
    }

    /// How the job's data was split (its launching policy's, or static when unmanaged).
    pub fn sharding(&self) -> Sharding {
        self.sharding
    }

    /// Whether the job ran outside the policy's care (`managed_share`).
    pub fn unmanaged(&self) -> bool {
        self.unmanaged
    }

    pub fn oom_kills(&self) -> u32 {
        self.oom_kills
    }

    pub fn pod_failures(&self) -> u32 {
        self.pod_failures
    }

    pub fn evictions(&self) -> u32 {
        self.evictions
    }

    pub fn node_failures(&self) -> u32 {
        self.node_failures
    }

    pub fn usage(&self) -> &UsageIntegrals {
        &self.usage
    }

    /// The pod events the cluster reported for this job (the latest few hundred).
    pub fn pod_events(&self) -> &[PodEvent] {
        &self.events
    }

    /// The shard ledger (dynamic sharding only), for the exactly-once checks.
    pub fn ledger(&self) -> Option<&ShardLedger> {
        self.ledger.as_ref()
    }

    /// The job's pods (ids into the world's pods): those it holds, or held when it
    /// ended.
    pub fn pods(&self) -> &[usize] {
        &self.pods
    }

    /// The pods it retired while it ran (failed, removed, replaced).
    pub fn retired_pods(&self) -> &[usize] {
        &self.retired
    }

    pub(crate) fn total_samples(&self) -> f64 {
        self.spec.total_samples()
    }

    /// Embedding memory, summed over PS, after the samples seen so far.
    /// The model's parameters in millions when the job ended (or now): the dense ones at 4
    /// bytes, the embeddings grown so far at 8 (a value and an Adagrad slot, as the
    /// generator sizes them: `dlsim_traces::generator`). DLRover Table 3's "parameters".
    pub fn params_m(&self) -> f64 {
        let samples = self.steps_done() as f64 * f64::from(self.spec.batch_size);
        self.spec.dense_mb / 4.0 + self.emb_mb(samples) / 8.0
    }

    pub(crate) fn emb_mb(&self, samples: f64) -> f64 {
        self.spec.emb_mb_initial + self.spec.emb_mb_per_msample * samples / 1e6
    }

    pub(crate) fn worker_mem_used_mb(&self) -> f64 {
        perf::worker_mem_mb(
            self.spec.dense_mb,
            f64::from(self.spec.batch_size),
            f64::from(self.spec.emb_dim),
        )
    }

    /// Memory used by a PS holding `share` of the parameters after `samples`.
    pub(crate) fn ps_mem_used_mb(&self, samples: f64, share: f64) -> f64 {
        perf::ps_mem_mb(self.spec.dense_mb, self.emb_mb(samples), share)
    }

    /// The largest share held by a running PS (0 when none runs).
    pub(crate) fn max_running_share(&self, pods: &Slots<Pod>) -> f64 {
        self.pods
            .iter()
            .map(|&p| &pods[p])
            .filter(|p| p.role == Role::Ps && p.active())
            .map(|p| p.share)
            .fold(0.0, f64::max)
    }

    /// The busiest running PS's CPU use over its request, as a job master's per-PS profile
    /// shows it (0 without a running PS).
    pub(crate) fn max_ps_load(&self, pods: &Slots<Pod>) -> f64 {
        self.pods
            .iter()
            .map(|&p| &pods[p])
            .filter(|p| p.role == Role::Ps && p.active())
            .map(|p| p.cpu_used / p.request.cpu_cores().max(1e-9))
            .fold(0.0, f64::max)
    }

    /// The first running PS to reach its memory limit, and at how many samples (memory is
    /// linear in samples). `Some((0.0, p))` if one is already over.
    pub(crate) fn ps_oom_at_samples(&self, pods: &Slots<Pod>) -> Option<(f64, usize)> {
        let slope_per_share = self.spec.emb_mb_per_msample / 1e6;
        let mut first: Option<(f64, usize)> = None;
        for &p in &self.pods {
            let pod = &pods[p];
            if pod.role != Role::Ps || !pod.active() {
                continue;
            }
            let limit = pod.request.mem_mb as f64;
            let at_zero = self.ps_mem_used_mb(0.0, pod.share);
            let at = if at_zero > limit {
                0.0
            } else if slope_per_share * pod.share > 0.0 {
                (limit - at_zero) / (slope_per_share * pod.share)
            } else {
                continue;
            };
            if first.is_none_or(|(best, _)| at < best) {
                first = Some((at, p));
            }
        }
        first
    }

    /// The truth's inputs for the current running configuration.
    pub(crate) fn perf_inputs(&self, env: &TruthEnv) -> PerfInputs {
        let gpu_cores = f64::from(self.config.worker_gpu) * env.gpu_core_equiv;
        PerfInputs {
            workers: f64::from(self.running.workers),
            ps: f64::from(self.running.ps),
            worker_cores: self.config.worker_cpu + gpu_cores,
            ps_cores: self.config.ps_cpu,
            batch: f64::from(self.spec.batch_size),
            dense_mb: self.spec.dense_mb,
            bandwidth_mb_s: env.bandwidth_mb_s,
            emb_dim: f64::from(self.spec.emb_dim),
            physics: env.physics,
        }
    }

    /// Allocated resources of the job's running pods (and starting ones, with
    /// `observation.count_starting_pods`), by role: `[worker, ps]`. Integer
    /// resources, so their sum is the job's total exactly.
    ///
    /// Utilisation is the profiler's: a pod's use over its request while it runs (DLRover-RM
    /// Fig. 14 plots the workers' and PSes' utilisation as its monitor reads them). A pod
    /// still starting (scheduled, pulling its image, starting its container) holds its
    /// node, which the cluster's allocation counts (`cluster_cpu_alloc`), but has no
    /// readings, so it is not in a job's denominator. What it changes: where pods take
    /// minutes to start (a production day, DLRover-RM Sec. 2's 5-10 min), counting them
    /// would put every job's start-up and every migration's standby start into its
    /// utilisation as idle cores. (Until 2026-11-27 starting pods counted; a scenario's
    /// `observation.count_starting_pods` counts them again, and `dlsim sensitivity` shows
    /// what that moves.)
    pub(crate) fn allocated_by_role(&self, pods: &Slots<Pod>) -> [Resources; 2] {
        let mut by_role = [Resources::ZERO; 2];
        let allocated = |p: &&Pod| {
            p.state == PodState::Running
                || (self.count_starting_pods && p.state == PodState::Starting)
        };
        for p in self.pods.iter().map(|&p| &pods[p]).filter(allocated) {
            by_role[usize::from(p.role == Role::Ps)] += p.request;
        }
        by_role
    }

    /// Resources in use right now at `samples` progress: (cpu cores, mem MB, gpus).
    pub(crate) fn used(&self, samples: f64) -> (f64, f64, f64) {
        let w = f64::from(self.running.workers);
        let p = f64::from(self.running.ps);
        let (cpu, gpu) = self.running.perf.map_or((0.0, 0.0), |x| {
            (x.worker_cpu_used + x.ps_cpu_used, x.gpu_used)
        });
        let mem = w * self.worker_mem_used_mb()
            + p * perf::PS_BASE_MB
            + self.running.ps_share * (3.0 * self.spec.dense_mb + self.emb_mb(samples));
        (cpu, mem, gpu)
    }

    /// [`Job::used`]'s CPU cores and memory MB split by role, `[worker, ps]` (summed
    /// separately, so [`Job::used`] keeps its own order of additions).
    pub(crate) fn used_by_role(&self, samples: f64) -> ([f64; 2], [f64; 2]) {
        let w = f64::from(self.running.workers);
        let p = f64::from(self.running.ps);
        let cpu = self
            .running
            .perf
            .map_or([0.0, 0.0], |x| [x.worker_cpu_used, x.ps_cpu_used]);
        let mem = [
            w * self.worker_mem_used_mb(),
            p * perf::PS_BASE_MB
                + self.running.ps_share * (3.0 * self.spec.dense_mb + self.emb_mb(samples)),
        ];
        (cpu, mem)
    }

    /// Moves progress and usage integrals forward to `now` at the current rate.
    pub(crate) fn advance(&mut self, now: SimTime, pods: &mut Slots<Pod>) {
        let dt = (now - self.last_update).as_secs_f64();
        self.last_update = now;
        if dt <= 0.0 {
            return;
        }
        let before = self.samples_done;
        let after = (before + self.running.rate * dt).min(self.total_samples());
        // PS memory grows linearly in samples within a piece: the midpoint is exact.
        let (cpu, mem, gpu) = self.used((before + after) / 2.0);
        let (role_cpu, role_mem) = self.used_by_role((before + after) / 2.0);
        let role_alloc = self.allocated_by_role(pods);
        let alloc = role_alloc[0] + role_alloc[1];
        let u = &mut self.usage;
        for k in 0..2 {
            u.role_cpu_alloc_core_s[k] += role_alloc[k].cpu_cores() * dt;
            u.role_cpu_used_core_s[k] += role_cpu[k] * dt;
            u.role_mem_alloc_mb_s[k] += role_alloc[k].mem_mb as f64 * dt;
            u.role_mem_used_mb_s[k] += role_mem[k] * dt;
        }
        u.cpu_alloc_core_s += alloc.cpu_cores() * dt;
        u.cpu_used_core_s += cpu * dt;
        u.mem_alloc_mb_s += alloc.mem_mb as f64 * dt;
        u.mem_used_mb_s += mem * dt;
        u.gpu_alloc_s += f64::from(alloc.gpu) * dt;
        u.gpu_used_s += gpu * dt;
        // Periodic checkpoints fall at fixed training-time marks; the rate is constant
        // within this piece, so the samples at the last mark crossed are exact.
        let mut mark_at = None;
        if self.running.rate > 0.0 && self.ckpt_interval_s > 0.0 {
            let trained = self.train_since_ckpt_s + dt;
            let marks = (trained / self.ckpt_interval_s).floor();
            if marks >= 1.0 {
                let since_last_mark = trained - marks * self.ckpt_interval_s;
                mark_at = Some(
                    (after - self.running.rate * since_last_mark)
                        .max(before)
                        .min(after),
                );
            }
            self.train_since_ckpt_s = trained - marks * self.ckpt_interval_s;
        }
        // The workers' rates summed as `.sum()` would (same start, same order), in the
        // same pass that credits each worker.
        let mut total_rate: f64 = std::iter::empty::<f64>().sum();
        if self.running.rate > 0.0 {
            for &(p, r) in &self.running.worker_rates {
                pods[p].samples_trained += r * dt;
                total_rate += r;
            }
        }
        let Some(ledger) = self.ledger.as_mut() else {
            if let Some(at) = mark_at {
                self.ckpt_samples = at;
            }
            self.samples_done = after;
            return;
        };
        let rates = &self.running.worker_rates;
        if total_rate > 0.0 && after > before {
            match mark_at {
                Some(at) => {
                    ledger.advance_split(rates, at - before, total_rate);
                    let saved = ledger.checkpoint();
                    self.ckpt_samples = saved.samples();
                    self.ckpt_ledger = Some(saved);
                    ledger.advance_split(rates, after - at, total_rate);
                }
                None => ledger.advance_split(rates, after - before, total_rate),
            }
        }
        self.samples_done = ledger.samples().min(self.total_samples());
    }

    pub fn steps_done(&self) -> u64 {
        (self.samples_done / f64::from(self.spec.batch_size)).floor() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incident_counts_once_it_lasts_the_hold() {
        let min = |m: u64| SimTime::from_secs(60 * m);
        let hold = INCIDENT_HOLD.as_secs_f64() as u64 / 60;
        assert_eq!(
            hold, 15,
            "the stock alerting rules' `for:` (see INCIDENT_HOLD)"
        );
        let mut hot = Incident::default();
        hot.observe(min(0), true, INCIDENT_HOLD);
        hot.observe(min(5), true, INCIDENT_HOLD); // still the same spell
        hot.observe(min(hold - 1), false, INCIDENT_HOLD);
        assert!(
            !hot.seen(),
            "a spell fixed a minute before the monitor alerts does not count"
        );
        hot.observe(min(20), true, INCIDENT_HOLD);
        hot.close(min(20 + hold - 1), INCIDENT_HOLD);
        assert!(
            !hot.seen(),
            "a spell cut short by the job's end before the hold does not count"
        );
        hot.observe(min(60), true, INCIDENT_HOLD);
        hot.observe(min(60 + hold), false, INCIDENT_HOLD);
        assert!(hot.seen(), "a spell as long as the hold counts");
        hot.observe(min(90), false, INCIDENT_HOLD);
        assert!(hot.seen(), "and stays counted");
    }
}
