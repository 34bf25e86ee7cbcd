//! The simulated world: the closed [`Event`] enum and the one place that handles it.
//!
//! Every state change in a run starts in `World::handle`. Policies are consulted on job
//! arrival and on their tick, and their actions are validated and applied here.

use crate::cluster::Cluster;
use crate::faults::{ElasticityConfig, FaultConfig, RecoveryConfig};
use crate::job::{FailReason, Job, Outcome, Pod, PodState, Role, TruthEnv};
use crate::metrics::TimelineRow;
use crate::perf::{self, PsCond, WorkerCond};
use crate::policy::{
    Action, ClusterView, EndedJob, JobConfig, JobPhase, JobView, Jobs, Partitioning, PodEventKind,
    Policy, ProfileSample, Sharding,
};
use crate::scenario::Scenario;
use crate::shards::ShardLedger;
use crate::slots::Slots;
use crate::vecmap::VecMap;
use dlsim_engine::{EventQueue, RngStreams, SimRng, SimTime};
use rand_distr::{Distribution, LogNormal, StandardNormal};
use std::cmp::Reverse;
use std::collections::BTreeSet;

use rustc_hash::{FxHashMap, FxHashSet};

mod cloud;
mod elastic;
mod observe;
mod online;
pub mod recorded;
mod recovery;

/// A pending pod's place in the scheduling queue: (priority, job, pod).
type PendingKey = (Reverse<i32>, usize, usize);

/// Everything that can happen in a run.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Job `0` (an index) is submitted.
    JobArrival(usize),
    /// Try to place pending pods (coalesced: at most one queued at a time).
    Schedule,
    /// Placed pods `first..first + count` (one job's, started together) finished starting
    /// and are now running. One event per batch, not per pod: a job's rate is refreshed
    /// once when its 64 workers come up, not 64 times.
    PodsReady {
        first: usize,
        count: usize,
    },
    /// The job reaches its total samples, if its rate did not change (`generation`).
    JobComplete {
        job: usize,
        generation: u64,
    },
    /// A PS of the job exceeds its memory limit, if its rate did not change.
    Oom {
        job: usize,
        generation: u64,
    },
    /// A pod dies (hardware, kernel, network), if it is still alive.
    PodFail(usize),
    /// A restarted job finished reloading its checkpoint, if it was not restarted again.
    Resume {
        job: usize,
        epoch: u64,
    },
    /// The policy's periodic decision point.
    PolicyTick,
    /// Record the timeline and the profiles policies observe.
    Sample,
    /// A node fails (every pod on it fails) / comes back after repair.
    NodeFail(usize),
    NodeRepair(usize),
    /// Co-located services' demand is re-evaluated on every node that hosts them.
    Colocation,
    /// The node's slow or normal spell ended (`faults.slow_spell_h`).
    SlowSpell(usize),
    /// A stop-and-restart finished saving its checkpoint, if the job was not restarted.
    StopSaved {
        job: usize,
        epoch: u64,
    },
    /// A migration's pause is over: the new pods take over.
    SwitchDone {
        job: usize,
        epoch: u64,
    },
    /// The job's pending timeout since its launch: it fails with a scheduling failure if it
    /// has never trained and still has pods waiting for a node.
    PendingTimeout(usize),
    /// Recorded scale event `k` of the job is due (`recorded.rs`).
    RecordedScale {
        job: usize,
        k: usize,
    },
    /// Online job `0`'s tick (`world/online.rs`): every `step_s` of it until its horizon.
    OnlineTick(usize),
    /// A pod of an online job finished loading its model.
    OnlinePodLoaded {
        job: usize,
        pod: u64,
    },
    /// A pod of an online job dies (hardware, kernel, network), if it is still the pod
    /// placed at `placed_ms`.
    OnlinePodFail {
        job: usize,
        pod: u64,
        placed_ms: u64,
    },
}

pub struct World {
    pub cluster: Cluster,
    /// Jobs by index (trace order): filled at arrival, released at the end unless the
    /// run keeps ended jobs (`Scenario::keep_ended`).
    pub jobs: Slots<Job>,
    /// Pods by id (creation order): released with their job.
    pub pods: Slots<Pod>,
    policy: Box<dyn Policy>,
    env: TruthEnv,
    start_base_s: f64,
    start_per_core_s: f64,
    sample_every: SimTime,
    noise_cv: f64,
    history_len: usize,
    /// How long a hot PS or a straggler must last to count as an incident of the job
    /// (`observation.incident_hold_s`).
    incident_hold: SimTime,
    /// A starting pod's request counts as allocated (`observation.count_starting_pods`).
    count_starting_pods: bool,
    horizon: Option<SimTime>,
    /// The run ends here at the latest (`settings::time_cap_s`): past it, time could
    /// overflow or the timeline outgrow memory. Validation keeps arrivals and the horizon
    /// before it, so only a job that would run for decades meets it.
    time_cap: SimTime,
    /// Every job has ended and the last timeline sample is recorded: the events still
    /// queued (mostly pod-failure timers of pods long gone) can change nothing.
    drained: bool,
    /// Pending pods, in scheduling order: higher priority first, then submission order.
    /// How many pods wait in the queue (their keys are in `pending_shapes`).
    pending: usize,
    /// Requests of the pods in `pending`, summed.
    pending_total: crate::Resources,
    /// The queue: pending pods' keys per distinct request (shape). A scheduling pass walks the
    /// shapes that could still fit, in queue order, and drops a shape at its first
    /// failure (see `schedule`). Only looked up, never iterated in its own order.
    pending_shapes: FxHashMap<crate::Resources, BTreeSet<PendingKey>>,
    /// Jobs ended since the policy's last tick (kept only for policies with ticks).
    ended: Vec<EndedJob>,
    /// Ids of active jobs whose observable state changed since the policy's last tick
    /// (kept only for policies with ticks): a pod event, a profile sample, a phase change.
    changed: Changed,
    ticks: bool,
    schedule_queued: bool,
    /// Shapes queued since the last scheduling pass (a new entry of `pending_shapes`).
    /// Every shape still queued after a pass fits nowhere, so the next pass needs to try
    /// only these and the shapes that fit a node whose room grew since.
    fresh_shapes: FxHashSet<crate::Resources>,
    active: BTreeSet<usize>,
    /// Active jobs holding a node (at least one pod starting or running), in index order:
    /// the only jobs a sample has anything to integrate or observe in. Jobs waiting in
    /// the queue cost nothing per sample.
    holding: BTreeSet<usize>,
    /// Trace job id -> index, for jobs that arrived and have not ended (or all, when
    /// ended jobs are kept). Only looked up, never iterated, so its order cannot leak.
    job_index: FxHashMap<u64, usize>,
    /// The trace, shared with the scenario: job `i` is built from `specs[i]` when it
    /// arrives.
    specs: std::sync::Arc<Vec<dlsim_traces::JobSpec>>,
    /// Or the streamed trace and its next record (the next job to arrive).
    stream: Option<(dlsim_traces::TraceReader, Option<dlsim_traces::JobSpec>)>,
    arrived: Vec<bool>,
    /// Arrival events in the queue (all future ones for a trace in memory, the next one
    /// for a streamed trace): left out when deciding to sweep dead timers.
    queued_arrivals: usize,
    streams: RngStreams,
    truth_settings: crate::scenario::TruthSettings,
    /// Keep ended jobs and their pods in `jobs`/`pods` (tests inspect them); otherwise
    /// they are released as they end and only `tally` remembers them.
    keep_ended: bool,
    /// `jobs.csv` rows and summary totals of the jobs that ended.
    pub tally: crate::metrics::JobTally,
    /// The most jobs and pods held in memory at once (live slots): with ended jobs
    /// released, these follow the cluster's concurrency, not the trace's length.
    pub peak_live: (usize, usize),
    /// Jobs not yet completed or failed (including those not yet submitted).
    unfinished: usize,
    noise: SimRng,
    faults: FaultConfig,
    recovery: RecoveryConfig,
    /// Per node: slow for the whole run (`faults.slow_node_fraction`).
    slow_nodes: Vec<bool>,
    elasticity: ElasticityConfig,
    cloud: cloud::CloudState,
    /// Queue length at which pod-failure timers of pods already gone are dropped.
    compact_timers_at: usize,
    observe_pods: bool,
    /// Placed pods per node (for node failures and co-located services).
    on_node: Vec<VecMap<usize, ()>>,
    /// `observations.csv` rows, when the run traces what policies see.
    pub observations: Option<String>,
    pub timeline: Vec<TimelineRow>,
    pub rejected_actions: u64,
    /// The scenario's online jobs, by index (`world/online.rs`).
    pub online: Vec<crate::online::OnlineJob>,
    /// The share of jobs the policy manages (`managed_share`); the rest run as `static`.
    managed_share: f64,
}

impl World {
    /// Builds the world and queues the initial events.
    pub fn new(
        scenario: &Scenario,
        policy: Box<dyn Policy>,
        queue: &mut EventQueue<Event>,
    ) -> World {
        let f = &scenario.file;
        let streams = RngStreams::new(f.seed);
        // Jobs are built when they arrive (`build_job`), so a job's memory is held from
        // its arrival to its end. A trace in memory has every arrival queued up front; a
        // streamed one (validated sorted when the scenario loaded) has only the next one
        // queued, read as the previous one arrives. Arrivals go first among events at
        // the same time either way (`push_first`), so both order the run identically.
        let n = scenario.job_count();
        let stream = scenario.stream.as_ref().map(|t| {
            let mut reader =
                dlsim_traces::TraceReader::open(&t.path).unwrap_or_else(|e| trace_changed(&e));
            let next = next_record(&mut reader);
            if let Some(spec) = &next {
                queue.push_first(SimTime::from_secs(spec.submit_s), Event::JobArrival(0));
            }
            (reader, next)
        });
        if stream.is_none() {
            for (i, spec) in scenario.jobs.iter().enumerate() {
                queue.push_first(SimTime::from_secs(spec.submit_s), Event::JobArrival(i));
            }
        }
        let sample_every = SimTime::from_secs(f.timeline_interval_s);
        queue.push(SimTime::ZERO, Event::Sample);
        if let Some(every) = policy.tick_interval() {
            queue.push(every, Event::PolicyTick);
        }
        let mut policy = policy;
        policy.see_truth(&f.truth);
        let cloud = cloud::CloudState::new(&streams, &f.faults, scenario.nodes.len(), queue);
        let observe_pods = policy.observes_pods() || scenario.trace_observations;
        let ticks = policy.tick_interval().is_some();
        let online = online::build_jobs(scenario, policy.as_ref());
        let mut world = World {
            cluster: Cluster::new(scenario.nodes.clone(), f.cluster.placement),
            // Online jobs count as unfinished until their horizon.
            unfinished: n + online.len(),
            jobs: Slots::empty(n),
            pods: Slots::default(),
            specs: scenario.jobs.clone(),
            queued_arrivals: if stream.is_some() {
                usize::from(n > 0)
            } else {
                n
            },
            stream,
            arrived: vec![false; n],
            streams,
            truth_settings: f.truth.clone(),
            keep_ended: scenario.keep_ended,
            tally: crate::metrics::JobTally::new(),
            peak_live: (0, 0),
            policy,
            env: TruthEnv {
                bandwidth_mb_s: f.truth.bandwidth_mb_s,
                gpu_core_equiv: f.truth.gpu_core_equiv,
                physics: f.truth.physics(),
            },
            start_base_s: f.pods.start_base_s,
            start_per_core_s: f.pods.start_per_core_s,
            sample_every,
            noise_cv: f.observation.noise_cv,
            history_len: f.observation.history_len,
            incident_hold: SimTime::from_secs_f64_ceil(f.observation.incident_hold_s),
            count_starting_pods: f.observation.count_starting_pods,
            horizon: f.horizon_s.map(SimTime::from_secs),
            time_cap: SimTime::from_secs(crate::settings::time_cap_s(f.timeline_interval_s)),
            drained: false,
            pending: 0,
            pending_total: crate::Resources::ZERO,
            pending_shapes: FxHashMap::default(),
            ended: Vec::new(),
            changed: Changed::new(n, ticks),
            ticks,
            schedule_queued: false,
            fresh_shapes: FxHashSet::default(),
            active: BTreeSet::new(),
            holding: BTreeSet::new(),
            job_index: FxHashMap::default(),
            noise: streams.stream("observation-noise"),
            faults: f.faults.clone(),
            recovery: f.recovery.clone(),
            slow_nodes: (0..scenario.nodes.len() as u64)
                .map(|n| {
                    f.faults.slow_node_fraction > 0.0
                        && rand::Rng::gen::<f64>(&mut streams.substream("slow-nodes", n))
                            < f.faults.slow_node_fraction
                })
                .collect(),
            elasticity: f.elasticity.clone(),
            cloud,
            compact_timers_at: recovery::TIMER_COMPACTION_MIN,
            observe_pods,
            on_node: vec![VecMap::new(); scenario.nodes.len()],
            observations: scenario
                .trace_observations
                .then(|| observe::OBSERVATIONS_HEADER.to_string()),
            timeline: Vec::new(),
            rejected_actions: 0,
            online,
            managed_share: f.managed_share,
        };
        world.online_start(queue);
        world.start_slow_spells(queue);
        world
    }

    pub fn policy_spec(&self) -> String {
        self.policy.spec()
    }

    /// Ends the run after its `last` handled event: jobs still active become failed with
    /// reason `unfinished`, at the horizon itself if it cut the run short (not at whatever
    /// event happened to come last before it).
    /// `cut` says the loop stopped with events still queued: at the horizon, or else at
    /// the time cap, where the run then ends.
    pub fn finish(&mut self, last: SimTime, cut: bool) {
        let now = match self.horizon {
            Some(h) if !self.drained => h,
            None if !self.drained && cut => self.time_cap,
            _ => last,
        };
        let active: Vec<usize> = self.active.iter().copied().collect();
        for j in active {
            self.end_job(now, j, Outcome::Failed(FailReason::Unfinished));
        }
        self.online_cut(now);
        // Jobs that arrived but were never launched, and jobs the horizon cut off before
        // they arrived: failed, unfinished, with no end.
        for j in 0..self.jobs.len() {
            if !self.arrived[j] {
                self.build_job(j);
            }
            if self.jobs.get(j).is_some_and(Job::is_active) {
                self.jobs[j].end(Outcome::Failed(FailReason::Unfinished), None);
                self.tally.add(&self.jobs[j]);
                if !self.keep_ended {
                    self.jobs.release(j);
                }
            }
        }
        self.cluster.check_invariants();
    }

    /// Counts a pod of job `j` placed on (`true`) or released from a node.
    pub(super) fn hold(&mut self, j: usize, placed: bool) {
        let job = &mut self.jobs[j];
        if placed {
            if job.placed_pods == 0 {
                self.holding.insert(j);
            }
            job.placed_pods += 1;
        } else {
            job.placed_pods -= 1;
            if job.placed_pods == 0 {
                self.holding.remove(&j);
            }
        }
    }

    /// Notes that job `j`'s observable state changed (for [`ClusterView::changed`]).
    pub(super) fn touch(&mut self, j: usize) {
        if !self.jobs[j].unmanaged {
            self.changed.note(j, self.jobs[j].request.id);
        }
    }

    /// Builds job `j` from its trace record (its hidden truth drawn from its own stream).
    /// A streamed trace is read in order, so `j` is then the next record's job.
    fn build_job(&mut self, j: usize) {
        let mut spec = match &mut self.stream {
            Some((reader, next)) => {
                std::mem::replace(next, next_record(reader)).expect("a record per job")
            }
            None => self.specs[j].clone(),
        };
        // Provenance the world never reads: not kept while the job lives (on long
        // traces a queue of live jobs is most of the memory).
        spec.synthesized = Vec::new();
        if let Some(o) = spec.observed.as_mut() {
            o.name = String::new();
        }
        let mut rng = self.streams.substream("job-truth", spec.id);
        let sigma = self.truth_settings.job_variation_sigma;
        let mut factor = || {
            if sigma > 0.0 {
                LogNormal::new(0.0, sigma)
                    .expect("valid sigma")
                    .sample(&mut rng)
            } else {
                1.0
            }
        };
        let factors = [factor(), factor(), factor(), factor()];
        let truth = perf::perturbed(&self.truth_settings.params_for(spec.model), factors);
        self.job_index.insert(spec.id, j);
        self.arrived[j] = true;
        // A job the policy does not manage (`managed_share`): a draw from the job's own
        // stream, so the set does not depend on the policy, and a larger share only takes
        // jobs out of it.
        let unmanaged = self.managed_share < 1.0
            && rand::Rng::gen::<f64>(&mut self.streams.substream("unmanaged", spec.id))
                >= self.managed_share;
        let mut job = Job::new(spec, truth);
        job.count_starting_pods = self.count_starting_pods;
        job.unmanaged = unmanaged;
        self.jobs.fill(j, job);
        self.peak_live.0 = self.peak_live.0.max(self.jobs.live());
    }

    /// Asks the policy, with a fresh view, and applies what it returns.
    fn consult(&mut self, now: SimTime, arrival: Option<usize>, queue: &mut EventQueue<Event>) {
        // Pod views are built for ticks only: arrivals are frequent and launch decisions
        // need job-level views, so this keeps long replays cheap.
        let with_pods = self.observe_pods && arrival.is_none();
        let view = ClusterView {
            now,
            capacity: self.cluster.capacity(),
            allocated: self.cluster.allocated(),
            free: self.cluster.free(),
            pending: self.pending_total,
            node_max: self.cluster.node_max(),
            nodes: self.cluster.nodes(),
            jobs: Jobs {
                jobs: &self.jobs,
                pods: &self.pods,
                active: &self.active,
                index: &self.job_index,
                with_pods,
            },
            ended: &self.ended,
            changed: &self.changed.ids,
        };
        let actions = match arrival {
            Some(j) => self.policy.on_submit(
                &job_view(&self.jobs[j], &self.pods, self.observe_pods),
                &view,
            ),
            None => self.policy.on_tick(&view),
        };
        if arrival.is_none() {
            self.ended.clear();
            self.changed.clear();
        }
        self.apply(now, actions, queue);
    }

    fn apply(&mut self, now: SimTime, actions: Vec<Action>, queue: &mut EventQueue<Event>) {
        for action in actions {
            let unmanaged = self
                .job_index
                .get(&action.job())
                .is_some_and(|&j| self.jobs.get(j).is_some_and(|job| job.unmanaged));
            if unmanaged {
                self.rejected_actions += 1;
                continue;
            }
            match action {
                Action::Launch { job, config } => self.launch(now, job, config, queue),
                other => self.apply_elastic(now, other, queue),
            }
        }
    }

    /// Whether a configuration is well-formed, each of its pods fits some node when empty,
    /// and its PSes and a first worker fit the empty cluster together (the one validity
    /// check for launches and rescales).
    pub(super) fn config_fits(&self, c: &JobConfig) -> bool {
        use dlsim_traces::limits::MAX_PODS_PER_ROLE;
        let ps_ok = c.ps == 0 || (c.ps_cpu > 0.0 && c.ps_mem_mb > 0);
        c.workers >= 1
            && c.workers <= MAX_PODS_PER_ROLE
            && c.ps <= MAX_PODS_PER_ROLE
            && c.worker_cpu > 0.0
            && c.worker_mem_mb > 0
            && c.ps_cpu.is_finite()
            && c.worker_cpu.is_finite()
            && ps_ok
            // The PSes and a first worker must fit the empty cluster together (so each of
            // them fits some node), or the job could never train (found by the swarm: `dlrover` raised 14 PSes to 512 GB
            // each on a cluster with two nodes of 512 GB).
            && self.cluster.could_ever_fit_together(&c.ps_request(), c.ps, &c.worker_request())
    }

    fn launch(
        &mut self,
        now: SimTime,
        job_id: u64,
        config: JobConfig,
        queue: &mut EventQueue<Event>,
    ) {
        let Some(&j) = self.job_index.get(&job_id) else {
            self.rejected_actions += 1;
            return;
        };
        if self.jobs[j].phase() != JobPhase::Submitted {
            self.rejected_actions += 1;
            return;
        }
        if !self.config_fits(&config) {
            self.rejected_actions += 1;
            self.end_job(now, j, Outcome::Failed(FailReason::Rejected));
            return;
        }
        let config = self.recorded_launch(now, j, config, queue);
        let (sharding, partitioning) = if self.jobs[j].unmanaged {
            (Sharding::Static, Partitioning::Tensor)
        } else {
            (self.policy.sharding(), self.policy.partitioning())
        };
        let shard_samples =
            f64::from(self.elasticity.shard_batches) * f64::from(self.jobs[j].spec.batch_size);
        let job = &mut self.jobs[j];
        job.config = config;
        job.launched = Some(config);
        job.life.launch();
        job.last_update = now;
        job.ckpt_interval_s = self.recovery.checkpoint_interval_s;
        job.sharding = sharding;
        job.partitioning = partitioning;
        if sharding == Sharding::Dynamic {
            job.ledger = Some(ShardLedger::new(job.total_samples(), shard_samples));
        }
        let id = self.jobs[j].spec.id;
        let cut: Vec<(Role, u32, f64)> = self
            .faults
            .slow_pods
            .iter()
            .filter(|s| s.job == id)
            .map(|s| (s.role, s.index, s.cpu_ratio))
            .collect();
        self.add_config_pods_cut(now, j, &config, false, &cut);
        self.active.insert(j);
        if self.recovery.pending_timeout_s > 0.0 {
            queue.push(
                now + SimTime::from_secs_f64_ceil(self.recovery.pending_timeout_s),
                Event::PendingTimeout(j),
            );
        }
        self.queue_schedule(now, queue);
    }

    fn queue_schedule(&mut self, now: SimTime, queue: &mut EventQueue<Event>) {
        if !self.schedule_queued && self.pending > 0 {
            self.schedule_queued = true;
            queue.push(now, Event::Schedule);
        }
    }

    /// Places pending pods in order. A pod that does not fit is skipped (later, smaller
    /// pods may still fit); requests at least as large as one that failed are not retried.
    /// Consecutive pods of one job that become ready at the same time share one event.
    ///
    /// The pass merges the per-shape queues in queue order and drops a shape once a
    /// failed request fits in it: the same pods are tried in the same order as a walk of
    /// the whole queue that skips them, but a long queue of blocked pods costs nothing.
    fn schedule(&mut self, now: SimTime, queue: &mut EventQueue<Event>) {
        self.schedule_queued = false;
        let mut failed: Vec<crate::Resources> = Vec::new();
        let mut placed = Vec::new();
        // The batch being built: (ready time, first pod, count).
        let mut batch: Option<(SimTime, usize, usize)> = None;
        // Each shape's next pod, smallest key first, of the shapes that may fit (see
        // `fresh_shapes`): a shape left out fits nowhere, so it would fail when tried,
        // and every shape it would then drop (at least as large) is left out too. The
        // same pods are tried in the same order as when every shape is (a pass only takes
        // room).
        let grown: Option<Vec<crate::Resources>> = self.cluster.take_grown().map(|nodes| {
            nodes
                .iter()
                .map(|&n| self.cluster.nodes()[n].free())
                .collect()
        });
        let fresh = std::mem::take(&mut self.fresh_shapes);
        let may_fit = |shape: &crate::Resources| match &grown {
            Some(rooms) => fresh.contains(shape) || rooms.iter().any(|r| shape.fits_in(r)),
            None => true,
        };
        let mut heads: std::collections::BinaryHeap<Reverse<(PendingKey, ShapeKey)>> = self
            .pending_shapes
            .iter()
            .filter(|(shape, _)| may_fit(shape))
            .filter_map(|(shape, keys)| Some(Reverse((*keys.first()?, shape_key(shape)))))
            .collect();
        while let Some(Reverse((key, shape))) = heads.pop() {
            let (prio, j, p) = key;
            let req = self.pods[p].request;
            debug_assert_eq!(shape, shape_key(&req));
            if failed.iter().any(|f| f.fits_in(&req)) {
                continue; // The shape is dropped: every later pod of it would be skipped.
            }
            match self.cluster.place(&req) {
                Some(node) => {
                    // The job's usage integrals run to now before it holds more.
                    self.jobs[j].advance(now, &mut self.pods);
                    self.hold(j, true);
                    self.touch(j); // The pod is no longer pending: its view changed.
                    self.on_node[node].insert(p, ());
                    let pod = &mut self.pods[p];
                    pod.state = PodState::Starting;
                    pod.node = Some(node);
                    pod.cpu_factor = if self.slow_nodes[node] {
                        self.faults.straggler_cpu_ratio
                    } else {
                        1.0
                    };
                    let latency = self.start_base_s + self.start_per_core_s * req.cpu_cores();
                    let at = now.saturating_add(SimTime::from_secs_f64_ceil(latency));
                    batch = match batch {
                        // Pods are created job by job, so `p - 1` is the same job's.
                        Some((t, first, count))
                            if t == at && first + count == p && self.pods[first].job == j =>
                        {
                            Some((t, first, count + 1))
                        }
                        other => {
                            if let Some((t, first, count)) = other {
                                queue.push(t, Event::PodsReady { first, count });
                            }
                            Some((at, p, 1))
                        }
                    };
                    placed.push((prio, j, p));
                    let next = self.pending_shapes[&req]
                        .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded))
                        .next();
                    if let Some(&next) = next {
                        heads.push(Reverse((next, shape)));
                    }
                }
                None => {
                    // Kept minimal (no request in it holds another), so the check above
                    // costs the number of incomparable failed shapes.
                    failed.retain(|f| !req.fits_in(f));
                    failed.push(req);
                }
            }
        }
        if let Some((t, first, count)) = batch {
            queue.push(t, Event::PodsReady { first, count });
        }
        for key in placed {
            self.unqueue_pod(key);
        }
    }

    /// Retires the `n` least advanced of `pods`: pending first, then starting, then the
    /// newest running (what a scale-down removes). Call after `advance(now)`.
    pub(super) fn retire_least_advanced(&mut self, now: SimTime, mut pods: Vec<usize>, n: usize) {
        pods.sort_by_key(|&p| {
            let rank = match self.pods[p].state {
                PodState::Pending => 0,
                PodState::Starting => 1,
                _ => 2,
            };
            (rank, Reverse(p))
        });
        for &p in pods.iter().take(n) {
            self.retire_pod(now, p, PodEventKind::Stopped);
        }
    }

    /// Puts pod `p` of job `j` in the scheduling queue.
    pub(super) fn queue_pod(&mut self, j: usize, p: usize) {
        let req = self.pods[p].request;
        let job = &mut self.jobs[j];
        job.pending_pods += 1;
        let key = (Reverse(job.spec.priority), j, p);
        self.pending += 1;
        self.pending_total += req;
        self.queue_shape(req, key);
    }

    /// Takes a pod out of the scheduling queue (placed, or gone).
    fn unqueue_pod(&mut self, key: PendingKey) {
        let req = self.pods[key.2].request;
        self.pending -= 1;
        self.pending_total -= req;
        self.forget_shape(req, key);
        self.jobs[key.1].pending_pods -= 1;
    }

    /// Changes a pending pod's request in place (it keeps its queue position).
    pub(super) fn rerequest_pending(&mut self, p: usize, request: crate::Resources) {
        let old = self.pods[p].request;
        let j = self.pods[p].job;
        let key = (Reverse(self.jobs[j].spec.priority), j, p);
        self.forget_shape(old, key);
        self.pending_total = self.pending_total - old + request;
        self.queue_shape(request, key);
        self.pods[p].request = request;
        self.touch(j);
    }

    fn queue_shape(&mut self, req: crate::Resources, key: PendingKey) {
        let keys = self.pending_shapes.entry(req).or_insert_with(|| {
            self.fresh_shapes.insert(req);
            BTreeSet::new()
        });
        keys.insert(key);
    }

    fn forget_shape(&mut self, req: crate::Resources, key: PendingKey) {
        let keys = self.pending_shapes.get_mut(&req).expect("queued shape");
        keys.remove(&key);
        if keys.is_empty() {
            self.pending_shapes.remove(&req);
            if self.pending_shapes.is_empty() {
                self.fresh_shapes.clear(); // Nothing left to try.
            }
        }
    }

    /// Removes pending pod `p` of job `j` from the queue.
    pub(super) fn drop_pending_pod(&mut self, j: usize, p: usize) {
        self.unqueue_pod((Reverse(self.jobs[j].spec.priority), j, p));
    }

    /// A batch of one job's pods is up. Each pod is handled in order as if it had its own
    /// event; the job-wide steps (the migration's standby check, the phase and rate) run
    /// once at the end, which is where the last pod's event would have left them.
    fn pods_ready(
        &mut self,
        now: SimTime,
        first: usize,
        count: usize,
        queue: &mut EventQueue<Event>,
    ) {
        // The pods are released if their job ended while they were starting.
        let Some(j) = self.pods.get(first).map(|p| p.job) else {
            return;
        };
        let (mut standby, mut serving) = (false, false);
        for p in first..first + count {
            if self
                .pods
                .get(p)
                .is_none_or(|x| x.state != PodState::Starting)
            {
                continue; // The job ended, or the pod was retired, while it was starting.
            }
            if !(standby || serving) {
                self.jobs[j].advance(now, &mut self.pods);
            }
            self.pods[p].state = PodState::Running;
            self.pods[p].running_since = Some(now);
            self.pod_event(now, p, PodEventKind::Running);
            self.arm_pod_failure(now, p, queue);
            if self.pods[p].standby {
                standby = true;
                continue;
            }
            serving = true;
            if let Some(old) = self.pods[p].replaces.take() {
                self.retire_pod(now, old, PodEventKind::Stopped);
            }
            match self.pods[p].role {
                Role::Ps => {
                    self.jobs[j].running.ps += 1;
                    self.jobs[j].running.ps_share += self.pods[p].share;
                }
                Role::Worker => self.jobs[j].running.workers += 1,
            }
        }
        serving |= self.recorded_join(now, j);
        if standby {
            self.standby_ready(now, j, queue);
        }
        if serving {
            self.update_phase(now, j, queue);
        }
    }

    /// The checkpoint of job `j` now, MB: its dense parameters with two optimiser slots and
    /// its embeddings (what a PS holds beyond its runtime base).
    pub(super) fn checkpoint_mb(&self, j: usize) -> f64 {
        let job = &self.jobs[j];
        3.0 * job.spec.dense_mb + job.emb_mb(job.samples_done)
    }

    /// Seconds job `j` takes to reload its checkpoint after a restart or a stop.
    pub(super) fn reload_s(&self, j: usize) -> f64 {
        self.recovery
            .reload_time_s(self.checkpoint_mb(j), self.elasticity.storage_mb_s)
    }

    /// Moves a job between starting and training as its pods come and go
    /// ([`Lifecycle::pods_changed`](crate::job::Lifecycle::pods_changed)), and refreshes
    /// its rate. A restarted job reloads its checkpoint before it trains again.
    fn update_phase(&mut self, now: SimTime, j: usize, queue: &mut EventQueue<Event>) {
        self.touch(j);
        let reload = SimTime::from_secs_f64_ceil(self.reload_s(j));
        let job = &mut self.jobs[j];
        let pods_up = job.running.ps == job.config.ps && job.running.workers >= 1;
        if let Some(until) = job.life.pods_changed(now, pods_up, reload) {
            let epoch = job.life.epoch();
            queue.push(until, Event::Resume { job: j, epoch });
        }
        self.refresh_rate(now, j, queue);
    }

    /// Recomputes a job's throughput after its running pods changed, and re-arms its
    /// completion and OOM events. Call only after `advance(now)`.
    fn refresh_rate(&mut self, now: SimTime, j: usize, queue: &mut EventQueue<Event>) {
        let duty = self.recovery.checkpoint_duty();
        let gpu_equiv = self.env.gpu_core_equiv;
        let inputs = self.jobs[j].perf_inputs(&self.env);
        let job = &self.jobs[j];
        let training = job.phase() == JobPhase::Training;
        // Sized up front: growing four lists push by push cost more than the rest here.
        let n = if training { job.pods.len() } else { 0 };
        let mut workers = Vec::with_capacity(n);
        let mut ps = Vec::with_capacity(n);
        let (mut worker_ids, mut ps_ids) = (Vec::with_capacity(n), Vec::with_capacity(n));
        if training {
            for &p in &job.pods {
                let pod = &self.pods[p];
                if !pod.active() {
                    continue;
                }
                let cpu = pod.effective_cpu();
                match pod.role {
                    Role::Worker => {
                        let gpus = f64::from(pod.request.gpu);
                        workers.push(WorkerCond {
                            cpu,
                            cores: cpu + gpus * gpu_equiv,
                            gpus,
                        });
                        worker_ids.push(p);
                    }
                    Role::Ps => {
                        ps.push(PsCond {
                            share: pod.share,
                            cores: cpu,
                        });
                        ps_ids.push(p);
                    }
                }
            }
        }
        let oom = if training {
            job.ps_oom_at_samples(&self.pods)
        } else {
            None
        };
        let job = &mut self.jobs[j];
        job.generation += 1;
        job.running.worker_rates.clear();
        for &p in &job.pods {
            self.pods[p].cpu_used = 0.0;
            self.pods[p].rate = 0.0;
        }
        if !training {
            job.running.rate = 0.0;
            job.running.perf = None;
            job.seen_hot_ps.observe(now, false, self.incident_hold);
            job.seen_straggler.observe(now, false, self.incident_hold);
            return;
        }
        let pooled = job.sharding == Sharding::Dynamic;
        let (jp, detail) = perf::job_perf_detail(&job.truth, &inputs, &workers, &ps, pooled);
        // Checkpoint stalls are spread evenly over training time (see RecoveryConfig).
        job.running.rate = jp.rate * duty;
        job.running.perf = Some(jp);
        for (k, &p) in worker_ids.iter().enumerate() {
            let rate = detail.worker_rate[k] * duty;
            job.running.worker_rates.push((p, rate));
            self.pods[p].rate = rate;
            self.pods[p].cpu_used = detail.worker_cpu_used[k];
            if let Some(ledger) = job.ledger.as_mut() {
                ledger.join(p);
            }
        }
        let mut hot = false;
        for (&p, &cpu) in ps_ids.iter().zip(&detail.ps_cpu_used) {
            self.pods[p].cpu_used = cpu;
            hot |= cpu >= crate::job::HOT_PS_UTIL * self.pods[p].request.cpu_cores();
        }
        job.seen_hot_ps.observe(now, hot, self.incident_hold);
        let speeds = &detail.worker_speed;
        let (slowest, fastest) = speeds.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
        // Slow training from a straggler (DLRover-RM Table 4's "slow training: worker
        // straggler"): a worker below 0.8 of the median worker's speed that holds the job
        // below 0.8 of what its workers would make at the median speed. Under static
        // partitioning the job runs at its slowest worker's pace, so every straggler does;
        // with dynamic sharding the others take its shards, so only one that removes a
        // large share of the job's workers does. The median is at most the fastest: no
        // straggler unless the slowest is below 0.8 of it, the usual case, which then needs
        // no median.
        let straggling = speeds.len() >= 2 && slowest < crate::job::STRAGGLER_RATE * fastest && {
            let median = crate::metrics::median_in_place(&mut speeds.clone());
            slowest < crate::job::STRAGGLER_RATE * median
                && jp.rate < crate::job::STRAGGLER_RATE * median * speeds.len() as f64
        };
        job.seen_straggler
            .observe(now, straggling, self.incident_hold);
        let generation = job.generation;
        if job.worker_mem_used_mb() > job.config.worker_mem_mb as f64 {
            queue.push(now, Event::Oom { job: j, generation });
            return;
        }
        let remaining = (job.total_samples() - job.samples_done).max(0.0);
        let finish_s = remaining / job.running.rate;
        if let Some((oom_samples, _)) = oom {
            if oom_samples < job.total_samples() {
                let oom_s = (oom_samples - job.samples_done).max(0.0) / job.running.rate;
                queue.push(
                    now.saturating_add(SimTime::from_secs_f64_ceil(oom_s)),
                    Event::Oom { job: j, generation },
                );
                if oom_s <= finish_s {
                    return;
                }
            }
        }
        queue.push(
            now.saturating_add(SimTime::from_secs_f64_ceil(finish_s)),
            Event::JobComplete { job: j, generation },
        );
    }

    /// Ends job `j`: returns its pods' resources, then ends its lifecycle, which drops
    /// its phase's data and running state ([`Job::end`]).
    fn end_job(&mut self, now: SimTime, j: usize, outcome: Outcome) {
        self.jobs[j].advance(now, &mut self.pods);
        for k in 0..self.jobs[j].pods.len() {
            let p = self.jobs[j].pods[k];
            let pod = &mut self.pods[p];
            match pod.state {
                PodState::Starting | PodState::Running => {
                    let node = pod.node.expect("placed pod has a node");
                    self.cluster.release(node, &pod.request);
                    self.on_node[node].remove(&p);
                    self.hold(j, false);
                }
                PodState::Pending => {
                    self.drop_pending_pod(j, p);
                }
                PodState::Finished => {}
            }
            self.pods[p].state = PodState::Finished;
        }
        let job = &mut self.jobs[j];
        job.seen_hot_ps.close(now, self.incident_hold);
        job.seen_straggler.close(now, self.incident_hold);
        job.end(outcome, Some(now));
        if outcome == Outcome::Completed {
            if let Some(ledger) = job.ledger.as_mut() {
                // The fluid completion instant is rounded up to a millisecond, so at most a
                // rounding error of samples can be missing here; anything more is lost work.
                ledger.finish(1e-6 * job.spec.total_samples() + 1.0);
                if let Err(e) = ledger.check_exactly_once() {
                    panic!("job {}: shard invariant violated: {e}", job.spec.id);
                }
                job.samples_done = ledger.done_samples();
            }
        }
        if self.ticks && !self.jobs[j].unmanaged {
            let job = &self.jobs[j];
            self.ended.push(EndedJob {
                id: job.request.id,
                phase: outcome.observed(),
                config: job.config,
                steps_done: job.steps_done(),
            });
        }
        self.active.remove(&j);
        self.unfinished -= 1;
        self.tally.add(&self.jobs[j]);
        if !self.keep_ended {
            self.release_job(j);
        }
    }

    /// Frees an ended job and its pods (ids stay taken: events naming them find nothing).
    fn release_job(&mut self, j: usize) {
        if let Some(job) = self.jobs.release(j) {
            for p in job.pods.into_iter().chain(job.retired) {
                self.pods.release(p);
            }
            self.job_index.remove(&job.spec.id);
        }
    }

    fn sample(&mut self, now: SimTime, queue: &mut EventQueue<Event>) {
        let mut used = (0.0, 0.0, 0.0);
        let mut running = 0u32;
        // A job holding no node has nothing to integrate (no allocation, no rate) and no
        // pod to observe: it is skipped, not advanced.
        for &j in &self.holding {
            let job = &mut self.jobs[j];
            job.advance(now, &mut self.pods);
            let (cpu, mem, gpu) = job.used(job.samples_done);
            used = (used.0 + cpu, used.1 + mem, used.2 + gpu);
            if job.phase() != JobPhase::Training {
                continue;
            }
            running += 1;
            let jp = job.running.perf.expect("a training job has a perf");
            let max_share = if job.running.ps > 0 {
                1.0 / f64::from(job.running.ps)
            } else {
                0.0
            };
            let mut noisy = |x: f64| {
                let z: f64 = StandardNormal.sample(&mut self.noise);
                (x * (1.0 + self.noise_cv * z)).max(0.0)
            };
            let sample = ProfileSample {
                time: now,
                running_workers: job.running.workers,
                running_ps: job.running.ps,
                worker_cpu: job.config.worker_cpu,
                ps_cpu: job.config.ps_cpu,
                steps_per_s: noisy(job.running.rate / f64::from(job.spec.batch_size)),
                worker_cpu_used: noisy(jp.worker_cpu_used / f64::from(job.running.workers)),
                ps_cpu_used: noisy(jp.ps_cpu_used / f64::from(job.running.ps.max(1))),
                ps_cpu_load_max: noisy(job.max_ps_load(&self.pods)),
                worker_mem_used_mb: noisy(job.worker_mem_used_mb()),
                ps_mem_used_mb_max: noisy(job.ps_mem_used_mb(
                    job.samples_done,
                    job.max_running_share(&self.pods).max(max_share),
                )),
            };
            if job.history.len() >= self.history_len {
                job.history.remove(0);
            }
            job.history.push(sample);
            if !job.unmanaged {
                self.changed.note(j, job.request.id);
            }
        }
        if self.observe_pods {
            self.sample_pods(now);
        }
        let alloc = self.cluster.allocated();
        self.timeline.push(TimelineRow {
            time_s: now.as_ms() / 1000,
            cpu_alloc: alloc.cpu_cores(),
            cpu_used: used.0,
            mem_alloc_mb: alloc.mem_mb as f64,
            mem_used_mb: used.1,
            gpu_alloc: f64::from(alloc.gpu),
            gpu_used: used.2,
            running_jobs: running,
            active_jobs: self.active.len() as u32,
            pending_pods: self.pending as u32,
        });
        debug_assert!(
            self.timeline.last().is_some_and(TimelineRow::is_finite),
            "a timeline metric is not finite at {now}: {:?}",
            self.timeline.last()
        );
        if self.unfinished > 0 {
            queue.push(now + self.sample_every, Event::Sample);
        } else {
            self.drained = true;
        }
    }
}

pub(crate) fn job_view<'a>(job: &'a Job, pods: &Slots<Pod>, with_pods: bool) -> JobView<'a> {
    JobView {
        request: &job.request,
        phase: job.phase(),
        config: job.config,
        running_workers: job.running.workers,
        running_ps: job.running.ps,
        pending_pods: job.pending_pods,
        steps_done: job.steps_done(),
        history: &job.history,
        oom_kills: job.oom_kills,
        sharding: job.sharding,
        pods: if with_pods {
            // Sized up front: `filter_map` gives no lower bound, so `collect` would regrow.
            let mut v = Vec::with_capacity(job.pods.len());
            v.extend(
                job.pods
                    .iter()
                    .filter_map(|&p| observe::pod_view(p, &pods[p])),
            );
            v
        } else {
            Vec::new()
        },
        events: observe::recent_events(job),
        rescaling: job.life.is_rescaling(),
        restarts: job.restarts,
    }
}

/// The next record of a streamed trace.
fn next_record(reader: &mut dlsim_traces::TraceReader) -> Option<dlsim_traces::JobSpec> {
    reader
        .next()
        .map(|r| r.unwrap_or_else(|e| trace_changed(&e)).1)
}

/// Ids of active jobs whose observable state changed since the policy's last tick
/// ([`ClusterView::changed`]), kept only for a policy with ticks, with a flag per job
/// index so that a job's many events between two ticks cost one set insertion.
struct Changed {
    ids: BTreeSet<u64>,
    /// Empty for a policy without ticks: nothing is kept.
    flag: Vec<bool>,
    noted: Vec<usize>,
}

impl Changed {
    fn new(jobs: usize, ticks: bool) -> Self {
        Changed {
            ids: BTreeSet::new(),
            flag: vec![false; if ticks { jobs } else { 0 }],
            noted: Vec::new(),
        }
    }

    /// Notes job index `j` (trace id `id`).
    fn note(&mut self, j: usize, id: u64) {
        if self.flag.is_empty() || self.flag[j] {
            return;
        }
        self.flag[j] = true;
        self.noted.push(j);
        self.ids.insert(id);
    }

    fn clear(&mut self) {
        self.ids.clear();
        for j in self.noted.drain(..) {
            self.flag[j] = false;
        }
    }
}

/// A streamed trace was validated whole when the scenario loaded; failing now means the
/// file changed under the run.
fn trace_changed(e: &dlsim_traces::InputError) -> ! {
    panic!("the trace changed while it was replayed: {e}")
}

/// A shape as an ordered key (for the scheduling pass's heap; keys are unique before
/// shapes are compared, so this only has to be a total order).
type ShapeKey = (u64, u64, u32);

fn shape_key(r: &crate::Resources) -> ShapeKey {
    (r.cpu_milli, r.mem_mb, r.gpu)
}

impl World {
    /// Whether job `j` is still active (not ended, not released) and `check` holds: the
    /// guard of every event that names a job and may fire after it changed or ended.
    pub(super) fn live(&self, j: usize, check: impl Fn(&Job) -> bool) -> bool {
        self.jobs
            .get(j)
            .is_some_and(|job| job.is_active() && check(job))
    }
}

impl dlsim_engine::World for World {
    type Event = Event;

    fn handle(&mut self, now: SimTime, event: Event, queue: &mut EventQueue<Event>) {
        match event {
            Event::JobArrival(j) => {
                self.build_job(j);
                self.queued_arrivals -= 1;
                if let Some((_, Some(next))) = &self.stream {
                    queue.push_first(SimTime::from_secs(next.submit_s), Event::JobArrival(j + 1));
                    self.queued_arrivals += 1;
                }
                if self.jobs[j].unmanaged {
                    // Run as its user configured it, as `static` would launch it.
                    let config = self.jobs[j].request.requested;
                    let job = self.jobs[j].request.id;
                    self.launch(now, job, config, queue);
                } else {
                    self.consult(now, Some(j), queue)
                }
            }
            Event::Schedule => self.schedule(now, queue),
            Event::PodsReady { first, count } => self.pods_ready(now, first, count, queue),
            Event::JobComplete { job, generation } => {
                if self.live(job, |j| j.generation == generation) {
                    self.end_job(now, job, Outcome::Completed);
                    self.queue_schedule(now, queue);
                }
            }
            Event::Oom { job, generation } => {
                if self.live(job, |j| j.generation == generation) {
                    self.oom(now, job, queue);
                }
            }
            Event::PodFail(p) => self.pod_failed(now, p, recovery::Cause::Failure, queue),
            Event::Resume { job, epoch } => {
                if self.live(job, |j| j.life.epoch() == epoch && j.life.is_reloading()) {
                    let jb = &mut self.jobs[job];
                    jb.advance(now, &mut self.pods);
                    jb.life.reload_done();
                    self.update_phase(now, job, queue);
                }
            }
            Event::PolicyTick => {
                let quiet = self.changed.ids.is_empty()
                    && self.ended.is_empty()
                    && self.policy.quiet_until().is_some_and(|t| now < t);
                if !quiet {
                    self.consult(now, None, queue);
                }
                if self.unfinished > 0 {
                    if let Some(every) = self.policy.tick_interval() {
                        queue.push(now + every, Event::PolicyTick);
                    }
                }
            }
            Event::Sample => self.sample(now, queue),
            Event::NodeFail(n) => self.node_failed(now, n, queue),
            Event::NodeRepair(n) => self.node_repaired(now, n, queue),
            Event::Colocation => self.colocation(now, queue),
            Event::SlowSpell(n) => self.slow_spell_ended(now, n, queue),
            Event::StopSaved { job, epoch } => {
                if self.live(job, |j| j.life.epoch() == epoch) {
                    self.stop_saved(now, job, queue);
                }
            }
            Event::SwitchDone { job, epoch } => {
                if self.live(job, |j| j.life.epoch() == epoch) {
                    self.switch_done(now, job, queue);
                }
            }
            Event::RecordedScale { job, k } => self.recorded_scale(now, job, k, queue),
            Event::PendingTimeout(job) => {
                if self.live(job, |j| j.start().is_none() && j.pending_pods > 0) {
                    self.end_job(now, job, Outcome::Failed(FailReason::Scheduling));
                }
            }
            Event::OnlineTick(k) => self.online_tick(now, k, queue),
            Event::OnlinePodLoaded { job, pod } => self.online_pod_loaded(now, job, pod),
            Event::OnlinePodFail {
                job,
                pod,
                placed_ms,
            } => self.online_pod_failed(now, job, pod, placed_ms),
        }
    }

    fn done(&self, now: SimTime) -> bool {
        self.drained || self.horizon.is_some_and(|h| now > h) || now > self.time_cap
    }
}
