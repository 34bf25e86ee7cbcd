//! Elasticity actions and their costs: worker scaling, stop-and-restart, seamless migration
//! (optionally with a flash checkpoint) and single-pod replacement. The world validates
//! each request; an invalid or untimely one is counted in `rejected_actions` and ignored.
//!
//! Costs (MISSION, DLRover-RM Sec. 2 and 5):
//! - stop-and-restart: training stops while the checkpoint is saved to remote storage
//!   (`elasticity.checkpoint_save_s`), every pod is replaced by the new configuration's pods
//!   (their start latency, plus queueing when the cluster is busy), then the checkpoint is
//!   reloaded (`recovery.reload_s`). No progress is lost: the checkpoint is taken at the stop.
//! - seamless migration: the new pods start while the old ones keep training; when all are
//!   up, training pauses to move the PS state: `state_mb / elasticity.flash_mb_s` with a
//!   flash checkpoint, or a remote save + reload without it; then the old pods go. A
//!   migration that moves no PS state (workers only) has no pause.
//! - worker scaling with dynamic sharding: new workers join when up, removed ones return
//!   their DOING shard (its partial progress is lost). With static partitioning a change in
//!   the worker count needs a stop-and-restart.

use super::{Event, World};
use crate::job::{Migration, PodState, Role};
use crate::policy::{
    Action, JobConfig, JobPhase, Partitioning, PodEventKind, RescaleMethod, Sharding,
};
use crate::Resources;
use dlsim_engine::{EventQueue, SimTime};

impl World {
    /// Applies an elasticity action, or counts it as rejected.
    pub(super) fn apply_elastic(
        &mut self,
        now: SimTime,
        action: Action,
        queue: &mut EventQueue<Event>,
    ) {
        let Some(j) = self.elastic_target(action.job()) else {
            self.rejected_actions += 1;
            return;
        };
        let applied = match action {
            Action::Launch { .. } => unreachable!("launch is applied by the world"),
            Action::ScaleWorkers { workers, .. } => self.scale_workers(now, j, workers, queue),
            Action::Rescale { config, method, .. } => self.rescale(now, j, config, method, queue),
            Action::ReplacePod {
                pod, cpu, mem_mb, ..
            } => self.replace_pod(now, j, pod, cpu, mem_mb, queue),
        };
        if applied {
            self.jobs[j].rescales += 1;
            self.jobs[j].last_rescale = Some(now);
        } else {
            self.rejected_actions += 1;
        }
    }

    /// The job an elasticity action may touch: started, still active, and not already in
    /// the middle of a rescale.
    fn elastic_target(&self, id: u64) -> Option<usize> {
        let &j = self.job_index.get(&id)?;
        self.jobs[j].life.is_steady().then_some(j)
    }

    fn scale_workers(
        &mut self,
        now: SimTime,
        j: usize,
        workers: u32,
        queue: &mut EventQueue<Event>,
    ) -> bool {
        let mut config = self.jobs[j].config;
        if workers == config.workers {
            return false;
        }
        config.workers = workers;
        // No more workers than a trace may ask for (`limits::MAX_PODS_PER_ROLE`), at least one.
        if !self.config_fits(&config) {
            return false;
        }
        if self.jobs[j].sharding == Sharding::Static {
            return self.rescale(now, j, config, RescaleMethod::StopRestart, queue);
        }
        self.jobs[j].advance(now, &mut self.pods);
        let current: Vec<usize> = self.jobs[j]
            .pods
            .iter()
            .copied()
            .filter(|&p| {
                let pod = &self.pods[p];
                pod.role == Role::Worker && pod.state != PodState::Finished && !pod.standby
            })
            .collect();
        let n = current.len() as u32;
        if workers > n {
            let request = config.worker_request();
            for _ in n..workers {
                self.add_pod(now, j, Role::Worker, None, request, 0.0);
            }
        } else {
            // Remove the least advanced first: pending, then starting, then the newest
            // running workers.
            self.retire_least_advanced(now, current, (n - workers) as usize);
        }
        self.jobs[j].config.workers = workers;
        self.update_phase(now, j, queue);
        self.queue_schedule(now, queue);
        true
    }

    fn rescale(
        &mut self,
        now: SimTime,
        j: usize,
        config: JobConfig,
        method: RescaleMethod,
        queue: &mut EventQueue<Event>,
    ) -> bool {
        // The same configuration is a change only as a stop-and-restart (the job comes
        // back on fresh pods: how a TFJob operator handles a slow pod) or, for a job whose
        // policy re-partitions evenly, as a migration of its PS set (a re-balance).
        let same = config == self.jobs[j].config;
        let rebalance = same
            && method == RescaleMethod::Migrate
            && self.jobs[j].partitioning == Partitioning::Balanced
            && config.ps > 1;
        if !self.config_fits(&config)
            || (same && method != RescaleMethod::StopRestart && !rebalance)
        {
            return false;
        }
        let worker_gpu_changed = config.worker_gpu != self.jobs[j].config.worker_gpu;
        if worker_gpu_changed && config.worker_gpu > 0 && self.jobs[j].spec.worker_gpu == 0 {
            return false; // A CPU job does not become a GPU job.
        }
        self.jobs[j].advance(now, &mut self.pods);
        let seamless = method == RescaleMethod::Migrate && self.elasticity.seamless_migration;
        if seamless && self.jobs[j].phase() == JobPhase::Training {
            // Only the pods whose shape changes are replaced; workers of an unchanged shape
            // keep training through the switch, and only the difference in count moves.
            let before = self.jobs[j].config;
            let ps_change =
                rebalance || config.ps != before.ps || config.ps_request() != before.ps_request();
            let worker_change = config.worker_request() != before.worker_request();
            let old: Vec<usize> = self.jobs[j]
                .pods
                .iter()
                .copied()
                .filter(|&p| match self.pods[p].role {
                    Role::Ps => ps_change,
                    Role::Worker => worker_change,
                })
                .collect();
            // Same PS count under TensorFlow's allocation: each new PS restores the
            // partition of an old one. DeepRec (`Partitioning::Balanced`) spreads the
            // parameters evenly over the new set instead (`draw_ps_shares`).
            let keep_shares =
                config.ps == before.ps && self.jobs[j].partitioning == Partitioning::Tensor;
            let delta = JobConfig {
                ps: if ps_change { config.ps } else { 0 },
                workers: if worker_change {
                    config.workers
                } else {
                    config.workers.saturating_sub(before.workers)
                },
                ..config
            };
            let mut old = old;
            if !worker_change && config.workers < before.workers {
                // Fewer workers of the same shape: the newest go at the switch.
                let mut workers: Vec<usize> = self.jobs[j]
                    .pods
                    .iter()
                    .copied()
                    .filter(|&p| self.pods[p].role == Role::Worker)
                    .collect();
                workers.sort_unstable_by(|a, b| b.cmp(a));
                old.extend(
                    workers
                        .into_iter()
                        .take((before.workers - config.workers) as usize),
                );
            }
            let new = self.add_config_pods(now, j, &delta, true);
            if keep_shares {
                // Same PS count: each new PS takes over the partition of an old one.
                let old_ps: Vec<usize> = old
                    .iter()
                    .copied()
                    .filter(|&p| self.pods[p].role == Role::Ps)
                    .collect();
                let new_ps: Vec<usize> = new
                    .iter()
                    .copied()
                    .filter(|&p| self.pods[p].role == Role::Ps)
                    .collect();
                for (&n, &o) in new_ps.iter().zip(&old_ps) {
                    self.pods[n].share = self.pods[o].share;
                }
            }
            let nothing_to_start = new.is_empty();
            self.jobs[j].life.begin_migration(Migration {
                config,
                new_pods: new,
                old_pods: old,
                switch_until: None,
            });
            if nothing_to_start {
                self.standby_ready(now, j, queue);
            }
        } else {
            let save = SimTime::from_secs_f64_ceil(self.elasticity.save_s(self.checkpoint_mb(j)));
            let until = now.saturating_add(save);
            let life = &mut self.jobs[j].life;
            life.begin_save(until, config);
            let epoch = life.epoch();
            queue.push(until, Event::StopSaved { job: j, epoch });
            self.update_phase(now, j, queue);
        }
        self.queue_schedule(now, queue);
        true
    }

    fn replace_pod(
        &mut self,
        now: SimTime,
        j: usize,
        p: usize,
        cpu: f64,
        mem_mb: u64,
        queue: &mut EventQueue<Event>,
    ) -> bool {
        if self.pods.get(p).is_none_or(|x| x.job != j) || !(cpu > 0.0 && cpu.is_finite()) {
            return false;
        }
        let old = self.pods[p].clone();
        let request = Resources::new(cpu, mem_mb, old.request.gpu);
        if mem_mb == 0 || !self.cluster.could_ever_fit(&request) || old.replaces.is_some() {
            return false;
        }
        let replaced_already = self.jobs[j]
            .pods
            .iter()
            .any(|&q| self.pods[q].replaces == Some(p) && self.pods[q].state != PodState::Finished);
        if replaced_already {
            return false;
        }
        match old.state {
            PodState::Finished => false,
            PodState::Pending => {
                // Re-request in place: the pod keeps its queue position.
                self.rerequest_pending(p, request);
                self.queue_schedule(now, queue);
                true
            }
            PodState::Starting | PodState::Running => {
                self.jobs[j].advance(now, &mut self.pods);
                match old.role {
                    Role::Worker => {
                        let q = self.add_pod(now, j, Role::Worker, Some(old.slot), request, 0.0);
                        self.pods[q].replaces = Some(p);
                    }
                    Role::Ps => {
                        if self.jobs[j].phase() != JobPhase::Training {
                            return false;
                        }
                        let q = self.add_pod(now, j, Role::Ps, Some(old.slot), request, old.share);
                        self.pods[q].standby = true;
                        let config = self.jobs[j].config;
                        self.jobs[j].life.begin_migration(Migration {
                            config,
                            new_pods: vec![q],
                            old_pods: vec![p],
                            switch_until: None,
                        });
                    }
                }
                self.queue_schedule(now, queue);
                true
            }
        }
    }

    /// A standby pod is up; when all are, the migration pauses training to move state.
    pub(super) fn standby_ready(&mut self, now: SimTime, j: usize, queue: &mut EventQueue<Event>) {
        let Some(m) = self.jobs[j].life.migration() else {
            return;
        };
        let all_up = m
            .new_pods
            .iter()
            .all(|&p| self.pods[p].state == PodState::Running);
        if !all_up || m.switch_until.is_some() {
            return;
        }
        let job = &self.jobs[j];
        let state_mb: f64 = m
            .old_pods
            .iter()
            .filter(|&&p| self.pods[p].role == Role::Ps && self.pods[p].state != PodState::Finished)
            .map(|&p| job.ps_mem_used_mb(job.samples_done, self.pods[p].share))
            .sum();
        let pause_s = if state_mb <= 0.0 {
            0.0
        } else if self.elasticity.flash_checkpoint {
            state_mb / self.elasticity.flash_mb_s
        } else {
            self.elasticity.save_s(self.checkpoint_mb(j)) + self.reload_s(j)
        };
        let until = now.saturating_add(SimTime::from_secs_f64_ceil(pause_s));
        let life = &mut self.jobs[j].life;
        life.begin_switch(until);
        let epoch = life.epoch();
        queue.push(until, Event::SwitchDone { job: j, epoch });
        self.update_phase(now, j, queue);
    }

    /// The migration's pause is over: old pods go, the new ones train.
    pub(super) fn switch_done(&mut self, now: SimTime, j: usize, queue: &mut EventQueue<Event>) {
        let m = self.jobs[j].life.finish_switch();
        self.jobs[j].advance(now, &mut self.pods);
        for &p in &m.old_pods {
            self.retire_pod(now, p, PodEventKind::Stopped);
        }
        for &p in &m.new_pods {
            let pod = &mut self.pods[p];
            pod.standby = false;
            // A new pod lost during the pause and relaunched is not running yet: it counts
            // when it comes up (`pods_ready`), like any other pod.
            if pod.state != PodState::Running {
                continue;
            }
            let (role, share) = (pod.role, pod.share);
            let job = &mut self.jobs[j];
            match role {
                Role::Ps => {
                    job.running.ps += 1;
                    job.running.ps_share += share;
                }
                Role::Worker => job.running.workers += 1,
            }
        }
        self.jobs[j].config = m.config;
        self.update_phase(now, j, queue);
        self.queue_schedule(now, queue);
    }

    /// Gives back the new pods of a migration that cannot complete.
    pub(super) fn abort_migration(&mut self, now: SimTime, j: usize) {
        let m = self.jobs[j].life.abort_migration();
        for &p in &m.new_pods {
            self.retire_pod(now, p, PodEventKind::Stopped);
        }
    }

    /// The checkpoint of a stop-and-restart is saved: every pod stops and the new
    /// configuration's pods are requested; the job reloads once they are up.
    pub(super) fn stop_saved(&mut self, now: SimTime, j: usize, queue: &mut EventQueue<Event>) {
        let config = self.jobs[j]
            .life
            .saving()
            .expect("a StopSaved of the current epoch finds the job saving");
        self.jobs[j].advance(now, &mut self.pods);
        {
            let job = &mut self.jobs[j];
            job.ckpt_samples = job.samples_done;
            if let Some(ledger) = &job.ledger {
                let saved = ledger.checkpoint();
                job.ckpt_samples = saved.samples();
                job.ckpt_ledger = Some(saved);
            }
            job.train_since_ckpt_s = 0.0;
        }
        let pods: Vec<usize> = self.jobs[j].pods.clone();
        for p in pods {
            self.retire_pod(now, p, PodEventKind::Stopped);
        }
        self.restart_from_checkpoint(j);
        self.jobs[j].config = config;
        self.add_config_pods(now, j, &config, false);
        self.update_phase(now, j, queue);
        self.queue_schedule(now, queue);
    }
}
