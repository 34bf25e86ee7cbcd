//! Recorded scale events replayed as recorded: when the policy runs the user's own
//! configuration ([`Policy::follows_recorded_scale`](crate::policy::Policy), i.e. `static`),
//! a job whose trace record carries `observed.scale` (dlrm2025 apps) changes its PS and
//! worker counts at the recorded times, as the source's owner did.
//!
//! Rules:
//! - at launch the job starts with the counts of the last recorded event at or before that
//!   time (the request holds the peak counts); each later event is one
//!   [`Event::RecordedScale`] at its recorded time (`t_s` is trace time, so a job that
//!   queued still scales when its source did), queued one at a time;
//! - counts are clamped by [`counts`]: at least one worker, at least one PS for a job with
//!   PS (an app whose instances all went away and came back keeps one pod of each role
//!   through the gap), and at most the request's peak;
//! - pods are added and removed in place, as the source's instances came and went: no
//!   checkpoint, restart or migration pause. Added pods queue like any pod; removed ones
//!   go least advanced first (pending, starting, then the newest running). An added worker
//!   trains once up. An added PS starts as a standby pod and joins when it is running
//!   (`recorded_join`, called from `pods_ready`): the job trains on with the PS it has
//!   meanwhile instead of stopping for the new one's start-up (minutes for a 64-core pod,
//!   and dlrm2025 apps change their CN count every few minutes). When the PS set changes
//!   the parameters are re-split evenly over the joined PS (a hot PS's extra share, if one
//!   was drawn, is spread out). Moving parameters between PS costs nothing here; the
//!   importer's steps are sized on the same clamped counts (`dlsim_importers::synth`), so
//!   an uncontended replay lasts about the recorded life;
//! - the job's configured counts are always its live, joined pods (pending ones included),
//!   so the world's rule "a job trains when all its PS and a worker run" keeps holding, and
//!   a failed pod's relaunch (`recovery.rs`) is waited for as usual;
//! - an event that finds a policy-driven rescale in flight (not under `static`, which
//!   never rescales) is retried [`RETRY_S`] later.
//!
//! Jobs without recorded events, and every policy that decides counts itself, are
//! untouched: no event is queued and no random draw is taken.

use super::{Event, World};
use crate::job::{PodState, Role};
use crate::policy::JobConfig;
use dlsim_engine::{EventQueue, SimTime};
use dlsim_traces::{JobSpec, ScaleEvent};

/// Delay before a recorded change that found a rescale in flight is tried again (a choice:
/// short next to the minutes-to-hours between a dlrm2025 app's recorded changes).
pub const RETRY_S: u64 = 60;

/// The (PS, worker) counts a job runs for a recorded event: the event's counts within
/// `[1, peak]` per role (PS stay 0 for a job without PS).
pub fn counts(spec: &JobSpec, ev: &ScaleEvent) -> (u32, u32) {
    let workers = ev.workers.clamp(1, spec.workers.max(1));
    let ps = if spec.ps > 0 {
        ev.ps.clamp(1, spec.ps)
    } else {
        0
    };
    (ps, workers)
}

/// Index of the last event at or before `t`, if any (events are in time order).
pub fn last_due(scale: &[ScaleEvent], t: SimTime) -> Option<usize> {
    scale
        .partition_point(|e| SimTime::from_secs(e.t_s) <= t)
        .checked_sub(1)
}

fn recorded(spec: &JobSpec) -> &[ScaleEvent] {
    spec.observed.as_ref().map_or(&[], |o| o.scale.as_slice())
}

impl World {
    /// Whether job `j` keeps its recorded pod counts: under a policy that runs the user's
    /// own configuration, or when the policy does not manage it (`managed_share`).
    fn follows_recorded(&self, j: usize) -> bool {
        self.jobs[j].unmanaged || self.policy.follows_recorded_scale()
    }

    /// The configuration a job launches with: `config` with the counts recorded at `now`
    /// when the job follows recorded events; queues the job's next recorded change.
    pub(super) fn recorded_launch(
        &self,
        now: SimTime,
        j: usize,
        mut config: JobConfig,
        queue: &mut EventQueue<Event>,
    ) -> JobConfig {
        let spec = &self.jobs[j].spec;
        let scale = recorded(spec);
        if scale.is_empty() || !self.follows_recorded(j) {
            return config;
        }
        let due = last_due(scale, now);
        if let Some(k) = due {
            (config.ps, config.workers) = counts(spec, &scale[k]);
        }
        let next = due.map_or(0, |k| k + 1);
        if let Some(ev) = scale.get(next) {
            let event = Event::RecordedScale { job: j, k: next };
            queue.push(SimTime::from_secs(ev.t_s), event);
        }
        config
    }

    /// Recorded event `k` of job `j` is due: set the counts of the latest event due now.
    pub(super) fn recorded_scale(
        &mut self,
        now: SimTime,
        j: usize,
        k: usize,
        queue: &mut EventQueue<Event>,
    ) {
        if !self.live(j, |_| true) {
            return;
        }
        let scale = recorded(&self.jobs[j].spec);
        let k = last_due(scale, now).unwrap_or(k).max(k);
        let next = scale.get(k + 1).map(|e| SimTime::from_secs(e.t_s));
        if self.jobs[j].life.is_rescaling() {
            let retry = now + SimTime::from_secs(RETRY_S);
            queue.push(retry, Event::RecordedScale { job: j, k });
            return;
        }
        let (ps, workers) = counts(&self.jobs[j].spec, &scale[k]);
        self.jobs[j].advance(now, &mut self.pods);
        self.set_count(now, j, Role::Worker, workers);
        self.set_count(now, j, Role::Ps, ps);
        self.reconcile_counts(j);
        if let Some(t) = next {
            queue.push(t.max(now), Event::RecordedScale { job: j, k: k + 1 });
        }
        self.update_phase(now, j, queue);
        self.queue_schedule(now, queue);
    }

    /// Called when pods of job `j` came up: PS added by a recorded change join now.
    /// Returns whether the job's pods changed (its phase and rate need a refresh).
    pub(super) fn recorded_join(&mut self, now: SimTime, j: usize) -> bool {
        if recorded(&self.jobs[j].spec).is_empty()
            || !self.follows_recorded(j)
            || self.jobs[j].life.migration().is_some()
        {
            return false;
        }
        self.jobs[j].advance(now, &mut self.pods);
        let mut joined = false;
        for k in 0..self.jobs[j].pods.len() {
            let p = self.jobs[j].pods[k];
            if self.pods[p].standby && self.pods[p].state == PodState::Running {
                self.pods[p].standby = false;
                match self.pods[p].role {
                    Role::Ps => self.jobs[j].running.ps += 1,
                    Role::Worker => self.jobs[j].running.workers += 1,
                }
                joined = true;
            }
        }
        self.reconcile_counts(j) || joined
    }

    /// Adds or removes pods of `role` in place until the job has `target`, standby ones
    /// (added PS not yet up) included.
    fn set_count(&mut self, now: SimTime, j: usize, role: Role, target: u32) {
        let live: Vec<usize> = self.jobs[j]
            .pods
            .iter()
            .copied()
            .filter(|&p| self.pods[p].role == role && self.pods[p].state != PodState::Finished)
            .collect();
        let n = live.len() as u32;
        if target > n {
            let config = self.jobs[j].config;
            let request = match role {
                Role::Worker => config.worker_request(),
                Role::Ps => config.ps_request(),
            };
            for _ in n..target {
                let p = self.add_pod(now, j, role, None, request, 0.0);
                self.pods[p].standby = role == Role::Ps;
            }
        } else {
            // The least advanced go first: pending, then starting, then the newest running.
            self.retire_least_advanced(now, live, (n - target) as usize);
        }
    }

    /// Sets the job's counts to its live joined pods and, when its PS set changed,
    /// re-splits the parameters; whether anything changed.
    fn reconcile_counts(&mut self, j: usize) -> bool {
        let (mut ps, mut workers) = (0u32, 0u32);
        for &p in &self.jobs[j].pods {
            let pod = &self.pods[p];
            if pod.state == PodState::Finished || pod.standby {
                continue;
            }
            match pod.role {
                Role::Ps => ps += 1,
                Role::Worker => workers += 1,
            }
        }
        let config = &mut self.jobs[j].config;
        let changed = (config.ps, config.workers) != (ps, workers);
        let ps_changed = config.ps != ps;
        (config.ps, config.workers) = (ps, workers);
        if ps_changed {
            self.resplit_ps_shares(j);
        }
        changed
    }

    /// Splits the parameters evenly over the job's PS and recounts the running share.
    fn resplit_ps_shares(&mut self, j: usize) {
        let ps: Vec<usize> = self.jobs[j]
            .pods
            .iter()
            .copied()
            .filter(|&p| {
                let pod = &self.pods[p];
                pod.role == Role::Ps && pod.state != PodState::Finished && !pod.standby
            })
            .collect();
        let share = 1.0 / ps.len().max(1) as f64;
        let mut running = 0.0;
        for &p in &ps {
            self.pods[p].share = share;
            if self.pods[p].active() {
                running += share;
            }
        }
        self.jobs[j].running.ps_share = running;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t_s: u64, ps: u32, workers: u32) -> ScaleEvent {
        ScaleEvent { t_s, ps, workers }
    }

    #[test]
    fn counts_stay_within_one_and_the_peak() {
        let mut spec = dlsim_traces::generate(&Default::default(), 1).remove(0);
        spec.ps = 4;
        spec.workers = 6;
        assert_eq!(counts(&spec, &ev(0, 0, 0)), (1, 1));
        assert_eq!(counts(&spec, &ev(0, 3, 9)), (3, 6));
        spec.ps = 0;
        assert_eq!(counts(&spec, &ev(0, 5, 2)), (0, 2));
    }

    #[test]
    fn last_due_is_the_latest_event_at_or_before_now() {
        let s = [ev(10, 1, 1), ev(20, 2, 2), ev(20, 3, 3), ev(30, 1, 1)];
        assert_eq!(last_due(&s, SimTime::from_secs(9)), None);
        assert_eq!(last_due(&s, SimTime::from_secs(10)), Some(0));
        assert_eq!(last_due(&s, SimTime::from_secs(25)), Some(2));
        assert_eq!(last_due(&s, SimTime::from_secs(99)), Some(3));
    }
}
