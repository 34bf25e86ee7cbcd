//! The world's side of online jobs (`crate::online`): building them, handling their
//! events, placing their worker pods on the shared cluster, and losing pods with a node.
//!
//! An online job's pods are placed directly on the cluster by its placement rule, ahead of
//! the batch scheduling queue (a serving-adjacent job is not queued behind batch pods); a
//! pod that fits nowhere waits, unplaced and holding nothing, and is tried again at each of
//! the job's ticks. Its pods are not batch `Pod`s: they live in the job (`online::pods`) and
//! a node failure or an eviction reaches them through [`World::online_node_lost`].

use super::{Event, World};
use crate::online::{OnlineJob, OnlinePhase, OnlineSummary};
use crate::policy::Policy;
use crate::scenario::Scenario;
use dlsim_engine::{EventQueue, RngStreams, SimTime};

/// Builds the scenario's online jobs, each with its own autoscaler from `policy`.
///
/// Job 0 draws from the scenario seed's own streams, so an online-only scenario replays
/// exactly as it did in the earlier online world; job `k > 0` from a seed drawn from the
/// `("online-job", k)` substream, independent of every other job.
pub(super) fn build_jobs(scenario: &Scenario, policy: &dyn Policy) -> Vec<OnlineJob> {
    let seed = scenario.file.seed;
    scenario
        .online
        .iter()
        .enumerate()
        .map(|(k, input)| {
            let streams = if k == 0 {
                RngStreams::new(seed)
            } else {
                let mut rng = RngStreams::new(seed).substream("online-job", k as u64);
                RngStreams::new(rand::Rng::gen::<u64>(&mut rng))
            };
            let req = input.file.worker.request();
            let room: u64 = scenario
                .nodes
                .iter()
                .map(|n| n.capacity.count_of(&req))
                .sum();
            let room = room.min(u64::from(u32::MAX)) as u32;
            OnlineJob::new(input, &streams, policy.new_autoscaler(), room)
        })
        .collect()
}

impl World {
    /// Queues each online job's first tick (at its start, which places its initial pods).
    pub(super) fn online_start(&mut self, queue: &mut EventQueue<Event>) {
        for k in 0..self.online.len() {
            queue.push(self.online[k].start, Event::OnlineTick(k));
        }
    }

    /// `now` on online job `k`'s own clock (which counts from its start), once it started.
    fn online_clock(&self, k: usize, now: SimTime) -> Option<SimTime> {
        let start = self.online[k].start;
        (now >= start).then(|| now - start)
    }

    /// Online job `k`'s tick: advance its stream, take the minute's sample, ask its
    /// autoscaler when due, place its waiting pods, and queue the next tick or end it.
    pub(super) fn online_tick(&mut self, now: SimTime, k: usize, queue: &mut EventQueue<Event>) {
        let job = &mut self.online[k];
        if job.phase == OnlinePhase::Ended {
            return;
        }
        let local = now - job.start;
        job.events += 1;
        job.advance(local);
        job.minute_sample(local);
        job.decide(local);
        self.online_place(now, k, queue);
        let job = &mut self.online[k];
        let next = local + job.step;
        if next <= job.horizon {
            queue.push(job.start + next, Event::OnlineTick(k));
        } else {
            let end = job.start + job.horizon;
            self.online_end(k, Some(end));
            self.queue_schedule(now, queue);
        }
    }

    /// A pod of online job `k` finished loading its model (if it is still the pod that
    /// was loading then).
    pub(super) fn online_pod_loaded(&mut self, now: SimTime, k: usize, pod: u64) {
        let job = &mut self.online[k];
        if job.phase == OnlinePhase::Ended {
            return;
        }
        let local = now - job.start;
        job.events += 1;
        job.advance(local);
        job.pods.loaded(local, pod);
    }

    /// Node `n` failed or evicts its pods: every online pod on it is gone (released
    /// here, before the node goes down or its services move in), and its job asks for it
    /// again; the replacement is placed at the job's next tick, so not back on `n`.
    pub(super) fn online_node_lost(&mut self, now: SimTime, n: usize) {
        for k in 0..self.online.len() {
            let Some(local) = self.online_clock(k, now) else {
                continue;
            };
            let job = &mut self.online[k];
            if job.phase == OnlinePhase::Ended || !job.pods.pods.iter().any(|p| p.node == Some(n)) {
                continue;
            }
            job.events += 1;
            job.lose_node(local, n);
            self.online_release(k);
        }
    }

    /// A pod of online job `k` failed (`pod_failure_per_day`, as batch pods do), if it is
    /// still the pod placed then (`placed_ms` on the job's clock): it is gone, and its job
    /// asks for it again and pays the reload, as for a lost node.
    pub(super) fn online_pod_failed(&mut self, now: SimTime, k: usize, pod: u64, placed_ms: u64) {
        let job = &mut self.online[k];
        let now = now - job.start;
        let alive = job
            .pods
            .pods
            .iter()
            .any(|p| p.id == pod && p.node.is_some() && p.placed_at.as_ms() == placed_ms);
        if job.phase == OnlinePhase::Ended || !alive {
            return;
        }
        job.events += 1;
        job.lose_pod(now, pod);
        self.online_release(k);
    }

    /// Draws a placed online pod's exponential lifetime and queues its failure. The draw
    /// is keyed by what the pod is (stream `pod-lifetime`: the online job's id, role
    /// worker, the pod's id within its job as its slot, incarnation 0; online job ids
    /// are never a trace job's), as for batch pods.
    fn arm_online_pod_failure(
        &mut self,
        now: SimTime,
        k: usize,
        i: usize,
        queue: &mut EventQueue<Event>,
    ) {
        let local = now - self.online[k].start;
        let rate = self.faults.pod_failure_rate_per_s();
        if rate <= 0.0 {
            return;
        }
        let job = &self.online[k];
        let pod = job.pods.pods[i].id;
        if let Some(at) = self.pod_death(now, rate, &[job.id, 1, pod, 0]) {
            queue.push(
                at,
                Event::OnlinePodFail {
                    job: k,
                    pod,
                    placed_ms: local.as_ms(),
                },
            );
        }
    }

    /// Co-located services on node `n` left its pods `throttle` of their CPU: online
    /// workers there train at the speed that CPU can feed ([`crate::online::pods::Pod::speed`]).
    pub(super) fn online_node_throttled(&mut self, now: SimTime, n: usize, throttle: f64) {
        for job in &mut self.online {
            if job.phase != OnlinePhase::Ended && now >= job.start {
                job.throttle_node(now - job.start, n, throttle);
            }
        }
    }

    /// Releases the nodes of job `k`'s removed pods; says whether there were any.
    fn online_release(&mut self, k: usize) -> bool {
        let req = self.online[k].spec.worker.request();
        let freed = self.online[k].pods.take_freed();
        for &node in &freed {
            self.cluster.release(node, &req);
        }
        !freed.is_empty()
    }

    /// Releases the nodes of job `k`'s removed pods (batch pods waiting for room are
    /// tried again), then places its waiting pods, in pod order, queueing a wake-up for
    /// each one that must load its model.
    fn online_place(&mut self, now: SimTime, k: usize, queue: &mut EventQueue<Event>) {
        if self.online_release(k) {
            self.queue_schedule(now, queue);
        }
        let req = self.online[k].spec.worker.request();
        for i in self.online[k].pods.unplaced() {
            let Some(node) = self.cluster.place(&req) else {
                break;
            };
            // A worker on a slow node is a straggler there, as a batch pod is.
            let cpu_share = if self.slow_nodes[node] {
                self.faults.straggler_cpu_ratio
            } else {
                1.0
            };
            let job = &mut self.online[k];
            let local = now - job.start;
            if let Some(at) = job.pods.place(i, node, local, cpu_share) {
                let pod = job.pods.pods[i].id;
                queue.push(job.start + at, Event::OnlinePodLoaded { job: k, pod });
            }
            self.arm_online_pod_failure(now, k, i, queue);
        }
        if now == self.online[k].start {
            // The initial deployment: a pod that found no node loads once it is placed.
            for i in self.online[k].pods.unplaced() {
                let p = &mut self.online[k].pods.pods[i];
                p.loaded = false;
                p.joined = false;
            }
        }
    }

    /// Online job `k` ended (at `at`, run time; `None` if it never started): its pods
    /// leave the cluster.
    fn online_end(&mut self, k: usize, at: Option<SimTime>) {
        let req = self.online[k].spec.worker.request();
        let job = &mut self.online[k];
        job.phase = OnlinePhase::Ended;
        job.ended_at = at;
        let mut nodes: Vec<usize> = job.pods.pods.iter().filter_map(|p| p.node).collect();
        job.pods.pods.clear();
        nodes.extend(job.pods.take_freed());
        for node in nodes {
            self.cluster.release(node, &req);
        }
        self.unfinished -= 1;
    }

    /// The run ends at `now` (its horizon, or its time cap) with online jobs still
    /// running: each is advanced to `now` and ends there, its pods leaving the cluster; one
    /// that had not started ends without having run.
    pub(super) fn online_cut(&mut self, now: SimTime) {
        for k in 0..self.online.len() {
            if self.online[k].phase == OnlinePhase::Ended {
                continue;
            }
            match self.online_clock(k, now) {
                Some(local) => {
                    let job = &mut self.online[k];
                    job.advance(local.min(job.horizon));
                    self.online_end(k, Some(now));
                }
                None => self.online_end(k, None),
            }
        }
    }

    /// Every online job's line of `summary.json`, at the end of the run.
    pub fn online_summaries(&self, scenario: &str, seed: u64) -> Vec<OnlineSummary> {
        self.online
            .iter()
            .map(|j| j.summary(scenario, seed))
            .collect()
    }

    /// Every online job's row of `jobs.csv`, after the batch jobs' rows.
    pub fn online_jobs_rows(&self) -> String {
        self.online.iter().map(OnlineJob::jobs_row).collect()
    }

    /// `online.csv`: every online job's per-minute rows, job after job.
    pub fn online_csv(&self) -> Option<String> {
        if self.online.is_empty() {
            return None;
        }
        let mut csv = crate::online::metrics::ONLINE_CSV_HEADER.to_string();
        for j in &self.online {
            csv.push_str(&j.acc.timeline);
        }
        Some(csv)
    }
}
