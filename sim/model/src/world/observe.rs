//! The profiler and the cluster's pod events: what policies observe of each pod, and the
//! optional `observations.csv` that records it (`dlsim replay --trace-observations`).
//!
//! Every sampling interval (`timeline_interval_s`), each running pod reports its CPU and
//! memory use and, for a worker, its samples/s, step time and samples done, each with
//! multiplicative Gaussian noise (`observation.noise_cv`). Pods report life-cycle events
//! (pending, running, failed with a reason, stopped). Samples are taken only when the
//! policy reads pod views or the run traces observations.

use super::World;
use crate::job::{Job, Pod, PodState, Role};
use crate::policy::{PodEvent, PodEventKind, PodPhase, PodSample, PodView};
use dlsim_engine::SimTime;
use rand_distr::{Distribution, StandardNormal};
use std::fmt::Write as _;

pub(super) const OBSERVATIONS_HEADER: &str =
    "time_s,job,pod,role,kind,cpu_used,mem_used_mb,samples_per_s,step_time_s,samples_done,slot,incarnation\n";

/// Events kept per job for policies (older ones are dropped).
const EVENTS_KEPT: usize = 256;

/// The job's latest [`EVENTS_KEPT`] pod events, oldest first: what its policy sees.
pub(super) fn recent_events(job: &Job) -> &[PodEvent] {
    &job.events[job.events.len().saturating_sub(EVENTS_KEPT)..]
}

/// EWMA weight of a new worker throughput sample (ES replaces a worker whose EWMA falls
/// below 0.8 of the median; Or et al. use alpha 0.1).
const EWMA_ALPHA: f64 = 0.1;

/// A pod as the cluster API shows it; `None` once it is gone.
pub(super) fn pod_view(id: usize, pod: &Pod) -> Option<PodView> {
    let phase = match pod.state {
        PodState::Pending => PodPhase::Pending,
        PodState::Starting => PodPhase::Starting,
        PodState::Running => PodPhase::Running,
        PodState::Finished => return None,
    };
    Some(PodView {
        id,
        role: pod.role,
        phase,
        request: pod.request,
        created: pod.created,
        running_since: pod.running_since,
        last: pod.last_sample,
        ewma_samples_per_s: pod.ewma_rate,
    })
}

fn role_str(role: Role) -> &'static str {
    match role {
        Role::Ps => "ps",
        Role::Worker => "worker",
    }
}

impl World {
    /// Records a pod life-cycle event for the job's policy view and the trace.
    pub(super) fn pod_event(&mut self, now: SimTime, p: usize, kind: PodEventKind) {
        self.touch(self.pods[p].job);
        let pod = &self.pods[p];
        let job = &mut self.jobs[pod.job];
        // The list runs to twice the window and then drops its older half at once, not one
        // event per push; policies see the latest `EVENTS_KEPT` (`recent_events`).
        if job.events.len() >= 2 * EVENTS_KEPT {
            job.events.drain(..EVENTS_KEPT);
        }
        job.events.push(PodEvent {
            time: now,
            pod: p,
            role: pod.role,
            kind,
        });
        if let Some(out) = self.observations.as_mut() {
            let _ = writeln!(
                out,
                "{},{},{p},{},{},,,,,,{},{}",
                now.as_ms() / 1000,
                job.spec.id,
                role_str(pod.role),
                kind.as_str(),
                pod.slot,
                pod.incarnation
            );
        }
    }

    /// One noisy profiler sample per running pod of every active job. Call after every
    /// active job was advanced to `now`.
    pub(super) fn sample_pods(&mut self, now: SimTime) {
        let cv = self.noise_cv;
        let holding: Vec<usize> = self.holding.iter().copied().collect();
        for j in holding {
            let (id, batch) = (
                self.jobs[j].spec.id,
                f64::from(self.jobs[j].spec.batch_size),
            );
            for k in 0..self.jobs[j].pods.len() {
                let job = &self.jobs[j];
                let p = job.pods[k];
                let pod = &self.pods[p];
                if !pod.active() {
                    continue;
                }
                let (role, slot, incarnation) = (pod.role, pod.slot, pod.incarnation);
                let cpu = pod.cpu_used;
                let (mem, rate, done) = match role {
                    Role::Worker => (job.worker_mem_used_mb(), pod.rate, pod.samples_trained),
                    Role::Ps => (job.ps_mem_used_mb(job.samples_done, pod.share), 0.0, 0.0),
                };
                let mut noisy = |x: f64| {
                    let z: f64 = StandardNormal.sample(&mut self.noise);
                    (x * (1.0 + cv * z)).max(0.0)
                };
                let rate = noisy(rate);
                let sample = PodSample {
                    time: now,
                    cpu_used: noisy(cpu),
                    mem_used_mb: noisy(mem),
                    samples_per_s: rate,
                    step_time_s: if rate > 0.0 { batch / rate } else { 0.0 },
                    samples_done: noisy(done),
                };
                let pod = &mut self.pods[p];
                pod.ewma_rate = if pod.last_sample.is_none() {
                    rate
                } else {
                    EWMA_ALPHA * rate + (1.0 - EWMA_ALPHA) * pod.ewma_rate
                };
                pod.last_sample = Some(sample);
                self.touch(j);
                if let Some(out) = self.observations.as_mut() {
                    let _ = writeln!(
                        out,
                        "{},{id},{p},{},sample,{:.4},{:.1},{:.3},{:.5},{:.0},{slot},{incarnation}",
                        now.as_ms() / 1000,
                        role_str(role),
                        sample.cpu_used,
                        sample.mem_used_mb,
                        sample.samples_per_s,
                        sample.step_time_s,
                        sample.samples_done
                    );
                }
            }
        }
    }
}
