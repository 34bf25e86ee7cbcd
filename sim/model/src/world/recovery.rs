//! Pod creation with injected conditions (hot PS), pod failures, OOM kills,
//! relaunch with a restart budget, and restart from the last checkpoint.
//!
//! Recovery semantics. With static data partitioning (a TFJob), losing any pod restarts
//! the job from its last periodic checkpoint: progress since that checkpoint is lost, the
//! failed pod is relaunched (counting against its role's budget), and once every PS and a
//! worker run again the job reloads the checkpoint (`recovery.reload_s`) before training
//! resumes. With dynamic sharding, losing a worker only returns its DOING shard to TODO
//! (its partial progress is lost) and the others train on; losing a PS still restarts the
//! job from the checkpoint, shard ledger included.
//!
//! Budgets: pod errors, OOM kills and node failures count against the role's restart
//! budget; evictions by co-located services do not (open-source DLRover always relaunches
//! killed or evicted pods).

use super::{Event, World};
use crate::job::{FailReason, Outcome, Pod, PodState, Role};
use crate::policy::{JobConfig, OomRelaunch, Partitioning, PodEventKind, Sharding};
use crate::shards::ShardLedger;
use crate::Resources;
use dlsim_engine::{EventQueue, SimTime};
use rand::Rng;

/// The queue length below which dead pod-failure timers are left alone (a few hundred KB).
pub(super) const TIMER_COMPACTION_MIN: usize = 16_384;

/// Why a pod died.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    Failure,
    Oom,
    Evicted,
    NodeFailure,
}

impl Cause {
    fn event(self) -> PodEventKind {
        match self {
            Cause::Failure => PodEventKind::FailedError,
            Cause::Oom => PodEventKind::FailedOom,
            Cause::Evicted => PodEventKind::Evicted,
            Cause::NodeFailure => PodEventKind::NodeFailure,
        }
    }
}

/// Index of a role in per-role arrays: [PS, worker].
pub(super) fn role_index(role: Role) -> usize {
    usize::from(role == Role::Worker)
}

impl World {
    /// Queues a new pending pod for job `j` in `slot` of its role (`None`: the lowest slot
    /// no live pod of the role holds). Whether it straggles depends on the node it lands on
    /// (`World::slow_nodes`).
    pub(super) fn add_pod(
        &mut self,
        now: SimTime,
        j: usize,
        role: Role,
        slot: Option<u32>,
        request: Resources,
        share: f64,
    ) -> usize {
        let p = self.pods.len();
        let slot = slot.unwrap_or_else(|| self.free_slot(j, role));
        let incarnations = &mut self.jobs[j].slot_incarnations[role_index(role)];
        if incarnations.len() <= slot as usize {
            incarnations.resize(slot as usize + 1, 0);
        }
        let incarnation = incarnations[slot as usize];
        incarnations[slot as usize] += 1;
        self.pods.push(Pod {
            job: j,
            role,
            slot,
            incarnation,
            request,
            state: PodState::Pending,
            node: None,
            cpu_factor: 1.0,
            share,
            throttle: 1.0,
            cpu_used: 0.0,
            rate: 0.0,
            standby: false,
            replaces: None,
            created: now,
            running_since: None,
            last_sample: None,
            ewma_rate: 0.0,
            samples_trained: 0.0,
        });
        self.peak_live.1 = self.peak_live.1.max(self.pods.live());
        self.jobs[j].pods.push(p);
        self.queue_pod(j, p);
        self.pod_event(now, p, PodEventKind::Pending);
        p
    }

    /// The lowest slot of `role` that no live pod of job `j` holds.
    fn free_slot(&self, j: usize, role: Role) -> u32 {
        let mut held: Vec<u32> = self.jobs[j]
            .pods
            .iter()
            .map(|&q| &self.pods[q])
            .filter(|q| q.role == role && q.state != PodState::Finished)
            .map(|q| q.slot)
            .collect();
        held.sort_unstable();
        held.dedup();
        held.iter()
            .enumerate()
            .find(|&(k, &s)| s != k as u32)
            .map_or(held.len() as u32, |(k, _)| k as u32)
    }

    /// Queues every pod of `config` for job `j` (PS shares drawn afresh), pod `k` of each
    /// role in slot `k`; `standby` pods
    /// are the new side of a migration. Returns the new pods.
    pub(super) fn add_config_pods(
        &mut self,
        now: SimTime,
        j: usize,
        config: &JobConfig,
        standby: bool,
    ) -> Vec<usize> {
        self.add_config_pods_cut(now, j, config, standby, &[])
    }

    /// [`World::add_config_pods`], with the CPU of some pods cut: `(role, index, ratio)`
    /// (`faults.slow_pods`, applied at a job's first launch).
    pub(super) fn add_config_pods_cut(
        &mut self,
        now: SimTime,
        j: usize,
        config: &JobConfig,
        standby: bool,
        cut: &[(Role, u32, f64)],
    ) -> Vec<usize> {
        let request = |role: Role, k: u32, base: crate::Resources| match cut
            .iter()
            .find(|c| c.0 == role && c.1 == k)
        {
            Some(&(_, _, r)) => crate::Resources {
                cpu_milli: ((base.cpu_milli as f64 * r).round() as u64).max(1),
                ..base
            },
            None => base,
        };
        let mut added = Vec::new();
        for (k, share) in self.draw_ps_shares(j, config.ps).into_iter().enumerate() {
            let req = request(Role::Ps, k as u32, config.ps_request());
            added.push(self.add_pod(now, j, Role::Ps, Some(k as u32), req, share));
        }
        for k in 0..config.workers {
            let req = request(Role::Worker, k, config.worker_request());
            added.push(self.add_pod(now, j, Role::Worker, Some(k), req, 0.0));
        }
        for &p in &added {
            self.pods[p].standby = standby;
        }
        added
    }

    /// Stops a pod the job no longer wants (removed, replaced, or left behind by a
    /// rescale): returns its resources and, for a training worker, its DOING shard.
    /// Call after `advance(now)`; the caller refreshes the job's rate.
    pub(super) fn retire_pod(&mut self, now: SimTime, p: usize, why: PodEventKind) {
        let j = self.pods[p].job;
        match self.pods[p].state {
            PodState::Finished => return,
            PodState::Pending => {
                self.drop_pending_pod(j, p);
            }
            PodState::Starting | PodState::Running => {
                let pod = &self.pods[p];
                let node = pod.node.expect("placed pod has a node");
                self.cluster.release(node, &pod.request);
                self.on_node[node].remove(&p);
                self.hold(j, false);
            }
        }
        let pod = self.pods[p].clone();
        self.pods[p].state = PodState::Finished;
        let job = &mut self.jobs[j];
        // Only live pods stay in the job's list, so per-job scans stay short.
        job.pods.retain(|&q| q != p);
        job.retired.push(p);
        if pod.active() {
            match pod.role {
                Role::Ps => {
                    job.running.ps -= 1;
                    job.running.ps_share -= pod.share;
                }
                Role::Worker => {
                    job.running.workers -= 1;
                    if let Some(ledger) = job.ledger.as_mut() {
                        ledger.leave(p);
                        job.samples_done = ledger.samples();
                    }
                }
            }
        }
        self.pod_event(now, p, why);
    }

    /// Parameter shares of `ps` servers for job `j`: equal, unless the job is drawn to
    /// have a hot PS, which then carries `hot_ps_load_factor` times the share of each other
    /// PS. The draw is keyed by the job and its partition count (stream `hot-ps`). A
    /// re-partition under [`Partitioning::Balanced`] is even (no draw is consumed, so the
    /// job's later draws stay where they were).
    pub(super) fn draw_ps_shares(&mut self, j: usize, ps: u32) -> Vec<f64> {
        if ps == 0 {
            return Vec::new();
        }
        let job = &mut self.jobs[j];
        let n = job.partitions;
        job.partitions += 1;
        let key = [job.spec.id, u64::from(n)];
        let balanced = n > 0 && job.partitioning == Partitioning::Balanced;
        let hot = ps > 1
            && !balanced
            && self.faults.hot_ps_prob > 0.0
            && self.streams.keyed("hot-ps", &key).gen::<f64>() < self.faults.hot_ps_prob;
        if !hot {
            return vec![1.0 / f64::from(ps); ps as usize];
        }
        let h = self.faults.hot_ps_load_factor;
        let total = h + f64::from(ps - 1);
        std::iter::once(h / total)
            .chain(std::iter::repeat_n(1.0 / total, ps as usize - 1))
            .collect()
    }

    /// Draws the running pod's exponential lifetime and schedules its failure. The draw
    /// is keyed by what the pod is, not by when it came: (job id, role, slot,
    /// incarnation), stream `pod-lifetime`. Two policies that run the same pod therefore
    /// give it the same lifetime, whatever else they launched.
    pub(super) fn arm_pod_failure(
        &mut self,
        now: SimTime,
        p: usize,
        queue: &mut EventQueue<Event>,
    ) {
        let rate = self.faults.pod_failure_rate_per_s();
        if rate <= 0.0 {
            return;
        }
        let pod = &self.pods[p];
        let key = [
            self.jobs[pod.job].spec.id,
            role_index(pod.role) as u64,
            u64::from(pod.slot),
            u64::from(pod.incarnation),
        ];
        if let Some(at) = self.pod_death(now, rate, &key) {
            queue.push(at, Event::PodFail(p));
            if queue.len() - self.queued_arrivals >= self.compact_timers_at {
                self.drop_dead_timers(queue);
            }
        }
    }

    /// When a pod placed at `now` dies: an exponential lifetime at `rate` (per second)
    /// drawn from the `pod-lifetime` stream keyed by `key` (what the pod is). `None` past
    /// a year: such lifetimes never matter for a replay, and skipping them keeps the
    /// queue small.
    pub(super) fn pod_death(&self, now: SimTime, rate: f64, key: &[u64]) -> Option<SimTime> {
        let u: f64 = self
            .streams
            .keyed("pod-lifetime", key)
            .gen::<f64>()
            .max(f64::MIN_POSITIVE);
        let ttf_s = -u.ln() / rate;
        (ttf_s < 365.0 * 86_400.0).then(|| now.saturating_add(SimTime::from_secs_f64_ceil(ttf_s)))
    }

    /// A heap cannot cancel an event, so a pod's failure timer stays queued after the pod
    /// is gone, where handling it does nothing. Most pods go long before their timer (a
    /// dlrover replay leaves ~10^5 behind), so once the queue has doubled since the last
    /// sweep, the timers of finished pods are dropped: the queue stays near its live size
    /// and every push and pop gets cheaper. Only no-op events go, so nothing else changes,
    /// except that `events` no longer counts them. Queued arrivals are left out of the
    /// count, so a trace queued up front and one streamed sweep at the same instants.
    fn drop_dead_timers(&mut self, queue: &mut EventQueue<Event>) {
        let pods = &self.pods;
        queue.retain(|e| {
            !matches!(e, Event::PodFail(p) if pods.get(*p).is_none_or(|x| x.state == PodState::Finished))
        });
        self.compact_timers_at =
            (2 * (queue.len() - self.queued_arrivals)).max(TIMER_COMPACTION_MIN);
    }

    /// A memory limit was crossed: kill the offending pod (a PS whose embeddings grew past
    /// its limit, or a worker that never fitted).
    pub(super) fn oom(&mut self, now: SimTime, j: usize, queue: &mut EventQueue<Event>) {
        self.jobs[j].advance(now, &mut self.pods);
        let job = &self.jobs[j];
        let worker_over = job.worker_mem_used_mb() > job.config.worker_mem_mb as f64;
        let victim = if worker_over {
            job.pods
                .iter()
                .copied()
                .find(|&p| self.pods[p].role == Role::Worker && self.pods[p].active())
        } else {
            job.ps_oom_at_samples(&self.pods).map(|(_, p)| p)
        };
        let victim = victim.expect("an OOM event names a running pod over its limit");
        self.pod_failed(now, victim, Cause::Oom, queue);
    }

    /// Handles a dead pod: returns its resources, restarts the job from its checkpoint, and
    /// relaunches the pod if the role's budget allows; otherwise the job fails.
    pub(super) fn pod_failed(
        &mut self,
        now: SimTime,
        p: usize,
        cause: Cause,
        queue: &mut EventQueue<Event>,
    ) {
        if !self
            .pods
            .get(p)
            .is_some_and(|x| matches!(x.state, PodState::Running | PodState::Starting))
        {
            return; // Already gone (the job ended or the pod was replaced).
        }
        let j = self.pods[p].job;
        self.jobs[j].advance(now, &mut self.pods);
        let pod = self.pods[p].clone();
        let standby_side = pod.standby || pod.replaces.is_some();
        if self.jobs[j].life.migration().is_some() {
            // Any loss aborts a migration in flight: its new pods are given back.
            self.abort_migration(now, j);
            if standby_side && self.pods[p].state == PodState::Finished {
                // The pod was one of them. (A worker's replacement is not part of the
                // migration: it is still placed and is retired below.)
                self.count_loss(j, cause);
                self.update_phase(now, j, queue);
                self.queue_schedule(now, queue);
                return;
            }
        }
        if self.pods[p].state == PodState::Finished {
            return;
        }
        self.retire_pod(now, p, cause.event());
        self.count_loss(j, cause);
        if pod.replaces.is_some() {
            // A replacement died before taking over: the old pod simply stays.
            self.update_phase(now, j, queue);
            self.queue_schedule(now, queue);
            return;
        }
        let job = &mut self.jobs[j];
        let role_idx = role_index(pod.role);
        if cause != Cause::Evicted {
            job.restarts[role_idx] += 1;
        }
        let over_budget = job.restarts[role_idx] > self.recovery.restart_budget;
        let ps_lost_for_good = pod.role == Role::Ps
            && self.recovery.checkpoint_interval_s <= 0.0
            && job.samples_done > 0.0;
        if over_budget || ps_lost_for_good {
            let reason = match (cause, ps_lost_for_good && !over_budget) {
                (_, true) => FailReason::PsLost,
                (Cause::Oom, false) => FailReason::Oom,
                (Cause::NodeFailure, false) => FailReason::NodeFailures,
                (Cause::Failure | Cause::Evicted, false) => FailReason::PodFailures,
            };
            self.end_job(now, j, Outcome::Failed(reason));
            self.queue_schedule(now, queue);
            return;
        }
        let elastic_worker = pod.role == Role::Worker && job.sharding == Sharding::Dynamic;
        if !elastic_worker {
            // Restart from the last checkpoint: everything since it is lost. A
            // stop-and-restart that was saving is superseded by it.
            self.restart_from_checkpoint(j);
        }
        let mut request = pod.request;
        if cause == Cause::Oom {
            request.mem_mb =
                (request.mem_mb as f64 * self.recovery.oom_memory_factor).ceil() as u64;
            let id = self.jobs[j].spec.id;
            let relaunch = if self.jobs[j].unmanaged {
                OomRelaunch::Default
            } else {
                self.policy.on_oom(id, pod.role, pod.request.mem_mb)
            };
            match relaunch {
                OomRelaunch::Default => {}
                OomRelaunch::WithMemory(mb) => request.mem_mb = mb.max(1),
                OomRelaunch::Abandon => {
                    self.end_job(now, j, Outcome::Failed(FailReason::Oom));
                    self.queue_schedule(now, queue);
                    return;
                }
            }
            if !self.cluster.could_ever_fit(&request) {
                request.mem_mb = pod.request.mem_mb;
            }
        }
        self.add_pod(now, j, pod.role, Some(pod.slot), request, pod.share);
        self.update_phase(now, j, queue);
        self.queue_schedule(now, queue);
    }

    fn count_loss(&mut self, j: usize, cause: Cause) {
        let job = &mut self.jobs[j];
        match cause {
            Cause::Oom => job.oom_kills += 1,
            Cause::Failure => job.pod_failures += 1,
            Cause::Evicted => job.evictions += 1,
            Cause::NodeFailure => job.node_failures += 1,
        }
    }

    /// Rolls a job back to its last checkpoint (progress and, with dynamic sharding, the
    /// shard ledger); it reloads the checkpoint once its pods are back
    /// ([`Lifecycle::restart`](crate::job::Lifecycle::restart), which also supersedes a
    /// stop-and-restart that was saving).
    pub(super) fn restart_from_checkpoint(&mut self, j: usize) {
        let job = &mut self.jobs[j];
        job.samples_done = job.ckpt_samples;
        if let Some(ledger) = job.ledger.as_mut() {
            match &job.ckpt_ledger {
                Some(saved) => ledger.restore(saved),
                None => *ledger = ShardLedger::new(ledger.total_samples(), ledger.shard_samples()),
            }
            job.samples_done = ledger.samples();
        }
        job.train_since_ckpt_s = 0.0;
        job.life.restart(job.ckpt_samples > 0.0);
    }
}
