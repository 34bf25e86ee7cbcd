//! Pod creation with injected conditions (stragglers, hot PS), pod failures, OOM kills,
//! relaunch with a restart budget, and restart from the last checkpoint.
//!
//! Recovery semantics (a TFJob with static data partitioning): losing any pod restarts the
//! job from its last periodic checkpoint. Progress since that checkpoint is lost, the failed
//! pod is relaunched (counting against its role's budget), and once every PS and a worker
//! run again the job reloads the checkpoint (`recovery.reload_s`) before training resumes.

use super::{Event, World};
use crate::job::{FailReason, Pod, PodState, Role};
use crate::policy::JobPhase;
use crate::Resources;
use dlsim_engine::{EventQueue, SimTime};
use rand::Rng;
use std::cmp::Reverse;

/// Why a pod died.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    Failure,
    Oom,
}

impl World {
    /// Queues a new pending pod for job `j`, drawing whether it lands as a straggler.
    pub(super) fn add_pod(
        &mut self,
        j: usize,
        role: Role,
        request: Resources,
        share: f64,
    ) -> usize {
        let straggler_prob = match role {
            Role::Ps => self.faults.ps_straggler_prob,
            Role::Worker => self.faults.worker_straggler_prob,
        };
        let straggler = straggler_prob > 0.0 && self.fault_rng.gen::<f64>() < straggler_prob;
        let cpu_factor = if straggler {
            self.faults.straggler_cpu_ratio
        } else {
            1.0
        };
        let p = self.pods.len();
        self.pods.push(Pod {
            job: j,
            role,
            request,
            state: PodState::Pending,
            node: None,
            cpu_factor,
            share,
        });
        let job = &mut self.jobs[j];
        job.pods.push(p);
        job.pending_pods += 1;
        self.pending.insert((Reverse(job.spec.priority), j, p));
        p
    }

    /// Parameter shares of `ps` servers: equal, unless the job is drawn to have a hot PS,
    /// which then carries `hot_ps_load_factor` times the share of each other PS.
    pub(super) fn draw_ps_shares(&mut self, ps: u32) -> Vec<f64> {
        if ps == 0 {
            return Vec::new();
        }
        let hot = ps > 1
            && self.faults.hot_ps_prob > 0.0
            && self.fault_rng.gen::<f64>() < self.faults.hot_ps_prob;
        if !hot {
            return vec![1.0 / f64::from(ps); ps as usize];
        }
        let h = self.faults.hot_ps_load_factor;
        let total = h + f64::from(ps - 1);
        std::iter::once(h / total)
            .chain(std::iter::repeat_n(1.0 / total, ps as usize - 1))
            .collect()
    }

    /// Draws the running pod's exponential lifetime and schedules its failure.
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
        let u: f64 = self.fault_rng.gen::<f64>().max(f64::MIN_POSITIVE);
        let ttf_s = -u.ln() / rate;
        // Lifetimes beyond a year never matter for a replay and would overflow nothing, but
        // skipping them keeps the queue small.
        if ttf_s < 365.0 * 86_400.0 {
            queue.push(now + SimTime::from_secs_f64_ceil(ttf_s), Event::PodFail(p));
        }
    }

    /// A memory limit was crossed: kill the offending pod (a PS whose embeddings grew past
    /// its limit, or a worker that never fitted).
    pub(super) fn oom(&mut self, now: SimTime, j: usize, queue: &mut EventQueue<Event>) {
        self.jobs[j].advance(now, &self.pods);
        let job = &self.jobs[j];
        let worker_over = job.worker_mem_used_mb() > job.config.worker_mem_mb as f64;
        let victim = if worker_over {
            job.pods.iter().copied().find(|&p| {
                self.pods[p].role == Role::Worker && self.pods[p].state == PodState::Running
            })
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
        if !matches!(self.pods[p].state, PodState::Running | PodState::Starting) {
            return; // Already gone (the job ended or the pod was replaced).
        }
        let j = self.pods[p].job;
        self.jobs[j].advance(now, &self.pods);
        let pod = self.pods[p].clone();
        let was_running = pod.state == PodState::Running;
        self.cluster
            .release(pod.node.expect("placed pod has a node"), &pod.request);
        self.pods[p].state = PodState::Finished;
        let job = &mut self.jobs[j];
        if was_running {
            match pod.role {
                Role::Ps => {
                    job.running_ps -= 1;
                    job.ps_share_running -= pod.share;
                }
                Role::Worker => job.running_workers -= 1,
            }
        }
        match cause {
            Cause::Oom => job.oom_kills += 1,
            Cause::Failure => job.pod_failures += 1,
        }
        let role_idx = usize::from(pod.role == Role::Worker);
        job.restarts[role_idx] += 1;
        let over_budget = job.restarts[role_idx] > self.recovery.restart_budget;
        let ps_lost_for_good = pod.role == Role::Ps
            && self.recovery.checkpoint_interval_s <= 0.0
            && job.samples_done > 0.0;
        if over_budget || ps_lost_for_good {
            let reason = match (cause, ps_lost_for_good && !over_budget) {
                (_, true) => FailReason::PsLost,
                (Cause::Oom, false) => FailReason::Oom,
                (Cause::Failure, false) => FailReason::PodFailures,
            };
            self.end_job(now, j, JobPhase::Failed, Some(reason));
            self.queue_schedule(now, queue);
            return;
        }
        // Restart from the last checkpoint: everything since it is lost.
        job.samples_done = job.ckpt_samples;
        job.train_since_ckpt_s = 0.0;
        job.needs_reload = job.ckpt_samples > 0.0;
        job.reloading = false;
        job.epoch += 1;
        if job.phase == JobPhase::Training {
            job.phase = JobPhase::Starting;
        }
        let mut request = pod.request;
        if cause == Cause::Oom {
            request.mem_mb =
                (request.mem_mb as f64 * self.recovery.oom_memory_factor).ceil() as u64;
            if !self.cluster.could_ever_fit(&request) {
                request.mem_mb = pod.request.mem_mb;
            }
        }
        self.add_pod(j, pod.role, request, pod.share);
        self.update_phase(now, j, queue);
        self.queue_schedule(now, queue);
    }
}
