//! Worker pods of an online job: their life cycle through a rescale and what the API
//! server and metrics pipeline report about them.
//!
//! A pod is placed on a node of the shared cluster by the world (`world/online.rs`); until
//! it is placed it is Pending and holds nothing, and its load clock starts at placement.
//! A pod lost with its node ([`Pods::lose_node`]) is replaced like a scale-up, so the job
//! pays the reload (and, in `restart` mode, every pod reloads).
//!
//! A new pod is Pending for `container_start_s + image_pull_s`, then Running but not Ready
//! while it loads the model (`model_load_s`). Once loaded it joins the consumer group, which
//! rebuilds the stream assignment (`stream_rebuild_s`), during which no worker consumes.
//! In `restart` mode (Kale's accounting) every rescale recreates all pods and they join
//! together once the last one is loaded; in `rolling` mode surviving pods keep training and
//! each joining or leaving pod triggers a rebuild pause. A pod is Ready from the moment its
//! model is loaded, through any later stream rebuild (a readiness probe checks the process,
//! not the consumer group), so during a rebuild pause the metrics pipeline reports the idle
//! GPUs of Ready pods. Until this was so, pods were unready during each pause and the only
//! samples an autoscaler saw after a rescale were those of the backlog drain at 100% GPU:
//! on `online-7d` the HPA then scaled up after every rescale (2,201 rescales a week, 0.88
//! of adequate GPU hours) and Autopilot rescaled 728 times (288 now).
//!
//! Metrics are scraped from the per-interval work of each pod over `metric_window_s`:
//! GPU utilisation = trained / capacity, samples/s, and CPU utilisation of the request,
//! assumed `0.15 + 0.6 x GPU busy` (input pipeline and lookups scale with throughput; an
//! assumption of ours). Each sample gets multiplicative Gaussian noise.

use crate::online::scenario::{RescaleMode, RescaleSpec};
use crate::policy::{MetricSample, OnlinePodPhase, PodObs};
use dlsim_engine::{SimRng, SimTime};
use rand_distr::{Distribution, Normal};
use std::collections::VecDeque;

/// A worker's CPU use as a share of its request: `CPU_IDLE + CPU_PER_BUSY x GPU busy`
/// (input pipeline and lookups scale with throughput; an assumption of ours).
pub const CPU_IDLE: f64 = 0.15;
pub const CPU_PER_BUSY: f64 = 0.6;

/// The speed of a worker that gets only `cpu_ratio` of its CPU request (on a slow node,
/// `faults.straggler_cpu_ratio`), by the CPU model above: at full speed it uses
/// `CPU_IDLE + CPU_PER_BUSY` of its request, so with less it trains at the GPU busy share
/// the CPU left can feed, `(cpu_ratio - CPU_IDLE) / CPU_PER_BUSY`, in (0, 1]. A floor of 1%
/// keeps a starved worker a (very slow) member of its group rather than a stalled one.
pub fn straggler_speed(cpu_ratio: f64) -> f64 {
    ((cpu_ratio - CPU_IDLE) / CPU_PER_BUSY).clamp(0.01, 1.0)
}

#[derive(Clone, Debug)]
pub struct Pod {
    pub id: u64,
    pub created: SimTime,
    /// The node holding the pod, once placed, and when it was placed.
    pub node: Option<usize>,
    pub placed_at: SimTime,
    pub loaded_at: SimTime,
    pub loaded: bool,
    pub joined: bool,
    /// The share of its CPU request the pod's node gives it: 1, or
    /// `faults.straggler_cpu_ratio` on a slow node (set at placement by the world).
    pub cpu_share: f64,
    /// What co-located services leave of that (1 when they take nothing; set by the world
    /// at each co-location update).
    pub throttle: f64,
    /// `(t_end_ms, trained, capacity, duration_s)` per interval while joined.
    window: VecDeque<(u64, f64, f64, f64)>,
}

impl Pod {
    /// The share of its nominal speed the pod trains at: what the CPU its node leaves it
    /// can feed ([`straggler_speed`]); 1 with its whole request.
    pub fn speed(&self) -> f64 {
        straggler_speed(self.cpu_share * self.throttle)
    }
}

/// The job's pods and its consumer-group state.
#[derive(Clone, Debug)]
pub struct Pods {
    pub pods: Vec<Pod>,
    next_id: u64,
    /// No worker consumes before this time (stream rebuild).
    pub paused_until: SimTime,
    mode: RescaleMode,
    cost: RescaleSpec,
    /// Nodes of placed pods removed since the world last took them (it releases them).
    freed: Vec<usize>,
}

impl Pods {
    /// `n` pods already loaded and consuming at time 0 (the initial deployment).
    pub fn deployed(n: u32, cost: &RescaleSpec) -> Self {
        let mut p = Pods {
            pods: Vec::new(),
            next_id: 0,
            paused_until: SimTime::ZERO,
            mode: cost.mode,
            cost: cost.clone(),
            freed: Vec::new(),
        };
        p.redeploy(n);
        p
    }

    /// Replaces every pod with `n` loaded, consuming ones, at no cost (time 0 only; the
    /// world places them, and one it cannot place loads once it is placed).
    pub fn redeploy(&mut self, n: u32) {
        let freed = self.pods.drain(..).filter_map(|p| p.node);
        self.freed.extend(freed);
        for _ in 0..n {
            let id = self.next_id;
            self.next_id += 1;
            self.pods.push(Pod {
                id,
                created: SimTime::ZERO,
                node: None,
                placed_at: SimTime::ZERO,
                loaded_at: SimTime::ZERO,
                loaded: true,
                joined: true,
                cpu_share: 1.0,
                throttle: 1.0,
                window: VecDeque::new(),
            });
        }
    }

    pub fn count(&self) -> u32 {
        self.pods.len() as u32
    }

    /// Pods holding a node (their GPUs are paid for).
    pub fn held(&self) -> u32 {
        self.pods.iter().filter(|p| p.node.is_some()).count() as u32
    }

    /// Indices of pods waiting for a node, in pod order.
    pub fn unplaced(&self) -> Vec<usize> {
        (0..self.pods.len())
            .filter(|&i| self.pods[i].node.is_none())
            .collect()
    }

    /// Pod `i` is placed on `node` at `now`; returns when it finishes loading, if it must
    /// (a pod of the initial deployment placed at time 0 is loaded already).
    pub fn place(
        &mut self,
        i: usize,
        node: usize,
        now: SimTime,
        cpu_share: f64,
    ) -> Option<SimTime> {
        let load = SimTime::from_secs_f64_ceil(self.cost.load_s());
        let p = &mut self.pods[i];
        p.node = Some(node);
        p.placed_at = now;
        p.cpu_share = cpu_share;
        p.throttle = 1.0;
        if p.loaded && now == SimTime::ZERO {
            return None;
        }
        p.loaded = false;
        p.joined = false;
        p.loaded_at = now + load;
        Some(p.loaded_at)
    }

    /// The nodes of placed pods removed since the last call (to release).
    pub fn take_freed(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.freed)
    }

    /// Removes the pods on `node` (it failed, or evicted them; their room is to be released,
    /// [`Pods::take_freed`]); returns how many. A
    /// consuming pod leaving rebuilds the stream in `rolling` mode; the world then asks
    /// for the lost pods again ([`Pods::rescale`] to the target).
    pub fn lose_node(&mut self, now: SimTime, node: usize) -> u32 {
        self.lose_where(now, |p| p.node == Some(node))
    }

    /// Removes the placed pods `lost` picks (a node lost, a pod failed), as
    /// [`Pods::lose_node`] does; returns how many.
    pub fn lose_where(&mut self, now: SimTime, lost: impl Fn(&Pod) -> bool) -> u32 {
        let mut left_joined = false;
        let mut freed = Vec::new();
        self.pods.retain(|p| {
            let gone = p.node.is_some() && lost(p);
            if gone {
                left_joined |= p.joined;
                freed.extend(p.node);
            }
            !gone
        });
        let lost = freed.len() as u32;
        self.freed.extend(freed);
        if left_joined && self.mode == RescaleMode::Rolling {
            self.pause(now);
        }
        if left_joined && self.mode == RescaleMode::Restart {
            // Synchronous training stops when a member is lost: the others leave the
            // group and join again with the replacement.
            for p in &mut self.pods {
                p.joined = false;
            }
        }
        lost
    }

    /// Indices of consuming pods, in id order (their partition ranges follow this order).
    pub fn joined(&self) -> Vec<usize> {
        (0..self.pods.len())
            .filter(|&i| self.pods[i].joined)
            .collect()
    }

    fn new_pod(&mut self, now: SimTime) -> Pod {
        let id = self.next_id;
        self.next_id += 1;
        Pod {
            id,
            created: now,
            node: None,
            placed_at: now,
            cpu_share: 1.0,
            throttle: 1.0,
            loaded_at: SimTime::MAX,
            loaded: false,
            joined: false,
            window: VecDeque::new(),
        }
    }

    /// Changes the pod count to `n` at `now`. New pods wait for the world to place them
    /// ([`Pods::unplaced`]); removed pods' nodes are to be released ([`Pods::take_freed`]).
    pub fn rescale(&mut self, now: SimTime, n: u32) {
        let n = n as usize;
        // Remove the newest pods first, those not consuming before those that are.
        while self.pods.len() > n {
            let victim = (0..self.pods.len())
                .rev()
                .find(|&i| !self.pods[i].joined)
                .unwrap_or(self.pods.len() - 1);
            let removed = self.pods.remove(victim);
            self.freed.extend(removed.node);
            if removed.joined && self.mode == RescaleMode::Rolling {
                self.pause(now);
            }
        }
        if self.mode == RescaleMode::Restart {
            // Stop and restart: every surviving pod is recreated (unless it is still loading).
            for i in 0..self.pods.len() {
                if self.pods[i].loaded {
                    let fresh = self.new_pod(now);
                    let old = std::mem::replace(&mut self.pods[i], fresh);
                    self.freed.extend(old.node);
                }
            }
        }
        while self.pods.len() < n {
            let p = self.new_pod(now);
            self.pods.push(p);
        }
    }

    fn pause(&mut self, now: SimTime) {
        let until = now + SimTime::from_secs_f64_ceil(self.cost.stream_rebuild_s);
        self.paused_until = self.paused_until.max(until);
    }

    /// Pod `id` finished loading at `now` (ignored if it was removed or recreated since).
    pub fn loaded(&mut self, now: SimTime, id: u64) {
        let Some(i) = self
            .pods
            .iter()
            .position(|p| p.id == id && !p.loaded && p.loaded_at == now)
        else {
            return;
        };
        self.pods[i].loaded = true;
        match self.mode {
            RescaleMode::Rolling => {
                self.pods[i].joined = true;
                self.pause(now);
            }
            RescaleMode::Restart => {
                if self.pods.iter().all(|p| p.loaded) {
                    for p in &mut self.pods {
                        p.joined = true;
                    }
                    self.pause(now);
                }
            }
        }
    }

    /// Whether a rescale is under way (a pod not consuming, or the stream being rebuilt).
    pub fn rescaling(&self, now: SimTime) -> bool {
        now < self.paused_until || self.pods.iter().any(|p| !p.joined)
    }

    /// Records one interval's work of pod `i`; keeps `window_ms` of history.
    pub fn record(
        &mut self,
        i: usize,
        t_end_ms: u64,
        trained: f64,
        capacity: f64,
        dur_s: f64,
        window_ms: u64,
    ) {
        let w = &mut self.pods[i].window;
        w.push_back((t_end_ms, trained, capacity, dur_s));
        while w.front().is_some_and(|e| e.0 + window_ms <= t_end_ms) {
            w.pop_front();
        }
    }

    /// What the API server and metrics pipeline report about every pod at `now`.
    pub fn observe(
        &self,
        now: SimTime,
        window: SimTime,
        sigma: f64,
        rng: &mut SimRng,
    ) -> Vec<PodObs> {
        let noise = Normal::new(0.0, sigma).expect("valid sigma");
        let pending_s = self.cost.container_start_s + self.cost.image_pull_s;
        self.pods
            .iter()
            .map(|p| {
                let phase = if p.node.is_none()
                    || now < p.placed_at + SimTime::from_secs_f64_ceil(pending_s)
                {
                    OnlinePodPhase::Pending
                } else {
                    OnlinePodPhase::Running
                };
                // The readiness probe passes once the model is loaded; a consumer-group
                // rebuild does not fail it (the pod is up, it just has nothing to train).
                let ready = p.loaded;
                let ready_transition = if ready { p.loaded_at } else { p.created };
                let entries: Vec<_> = p
                    .window
                    .iter()
                    .filter(|e| {
                        e.0 > ready_transition.as_ms() && e.0 + window.as_ms() > now.as_ms()
                    })
                    .collect();
                let (trained, cap, dur) = entries
                    .iter()
                    .fold((0.0, 0.0, 0.0), |a, e| (a.0 + e.1, a.1 + e.2, a.2 + e.3));
                let mut draw = |v: f64| v * (1.0 + noise.sample(rng)).max(0.0);
                let sample = |value: f64| MetricSample {
                    value,
                    timestamp: now,
                    window,
                };
                let (gpu, cpu, sps) = if ready && cap > 0.0 && dur > 0.0 {
                    let busy = (trained / cap).clamp(0.0, 1.0);
                    (
                        Some(sample(draw(busy).min(1.0))),
                        Some(sample(draw(CPU_IDLE + CPU_PER_BUSY * busy))),
                        Some(sample(draw(trained / dur))),
                    )
                } else {
                    (None, None, None)
                };
                PodObs {
                    phase,
                    ready,
                    ready_transition,
                    start_time: p.placed_at,
                    gpu_util: gpu,
                    cpu_util: cpu,
                    sps,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(mode: RescaleMode) -> RescaleSpec {
        RescaleSpec {
            mode,
            ..RescaleSpec::default()
        }
    }

    /// `n` pods deployed at time 0 and placed (on node 0), as the world does.
    fn deployed(n: u32, mode: RescaleMode) -> Pods {
        let mut p = Pods::deployed(n, &cost(mode));
        for i in p.unplaced() {
            assert_eq!(
                p.place(i, 0, SimTime::ZERO, 1.0),
                None,
                "initial pods are loaded"
            );
        }
        p
    }

    /// Rescales to `n` at `now` and places every waiting pod (on node 0), as the world
    /// does; returns `(pod id, loaded_at)` of the pods to wake.
    fn rescale(p: &mut Pods, now: SimTime, n: u32) -> Vec<(u64, SimTime)> {
        p.rescale(now, n);
        p.take_freed();
        p.unplaced()
            .into_iter()
            .filter_map(|i| p.place(i, 0, now, 1.0).map(|at| (p.pods[i].id, at)))
            .collect()
    }

    #[test]
    fn a_pod_lost_with_its_node_is_asked_for_again_and_reloads() {
        let mut p = Pods::deployed(2, &cost(RescaleMode::Rolling));
        for i in p.unplaced() {
            assert_eq!(
                p.place(i, i, SimTime::ZERO, 1.0),
                None,
                "initial pods are loaded"
            );
        }
        assert_eq!(p.lose_node(SimTime::from_secs(100), 1), 1);
        assert_eq!(p.joined().len(), 1, "the survivor keeps training");
        assert_eq!(
            p.paused_until,
            SimTime::from_secs(220),
            "the stream is rebuilt"
        );
        let wake = rescale(&mut p, SimTime::from_secs(100), 2);
        assert_eq!(wake.len(), 1);
        assert_eq!(
            wake[0].1,
            SimTime::from_secs(520),
            "the replacement reloads"
        );
        assert_eq!(
            p.lose_node(SimTime::from_secs(200), 7),
            0,
            "nothing on node 7"
        );
    }

    #[test]
    fn restart_stops_everyone_until_all_are_loaded_and_the_stream_rebuilt() {
        let mut p = deployed(2, RescaleMode::Restart);
        let t = SimTime::from_secs(100);
        let wake = rescale(&mut p, t, 3);
        assert_eq!(wake.len(), 3, "every pod reloads");
        assert!(p.joined().is_empty());
        for (id, at) in wake {
            assert_eq!(at, SimTime::from_secs(520));
            p.loaded(at, id);
        }
        assert_eq!(p.joined().len(), 3);
        assert_eq!(p.paused_until, SimTime::from_secs(640), "100 + 420 + 120 s");
        assert!(p.rescaling(SimTime::from_secs(639)));
        assert!(!p.rescaling(SimTime::from_secs(640)));
    }

    #[test]
    fn rolling_keeps_old_pods_training_and_pauses_only_for_the_rebuild() {
        let mut p = deployed(2, RescaleMode::Rolling);
        let wake = rescale(&mut p, SimTime::from_secs(100), 3);
        assert_eq!(wake.len(), 1);
        assert_eq!(p.joined().len(), 2);
        p.loaded(wake[0].1, wake[0].0);
        assert_eq!(p.joined().len(), 3);
        assert_eq!(p.paused_until, SimTime::from_secs(640));
        // Observation: a Pending pod right after creation.
        rescale(&mut p, SimTime::from_secs(700), 4);
        let mut rng = dlsim_engine::RngStreams::new(1).stream("n");
        let obs = p.observe(
            SimTime::from_secs(710),
            SimTime::from_secs(60),
            0.0,
            &mut rng,
        );
        assert_eq!(obs[3].phase, OnlinePodPhase::Pending);
        assert!(!obs[3].ready && obs[3].gpu_util.is_none());
    }

    /// What the HPA's metrics pipeline sees through a rolling scale-up: the new pod is not
    /// Ready (and has no metric) while it loads; the old pods stay Ready through the stream
    /// rebuild that its join causes, reporting the idle GPUs of the pause, as a readiness
    /// probe and a GPU exporter on real pods would.
    #[test]
    fn pods_stay_ready_through_a_stream_rebuild_and_report_its_idle_gpus() {
        let mut p = deployed(2, RescaleMode::Rolling);
        let mut rng = dlsim_engine::RngStreams::new(1).stream("n");
        let window = SimTime::from_secs(60);
        let record = |p: &mut Pods, from_s: u64, to_s: u64, busy: f64| {
            for t in (from_s..to_s).step_by(15) {
                for i in p.joined() {
                    p.record(i, (t + 15) * 1000, busy * 15.0, 15.0, 15.0, 60_000);
                }
            }
        };
        record(&mut p, 0, 100, 0.6);
        let wake = rescale(&mut p, SimTime::from_secs(100), 3);
        record(&mut p, 100, 520, 0.9);
        let obs = p.observe(SimTime::from_secs(300), window, 0.0, &mut rng);
        assert!(!obs[2].ready && obs[2].gpu_util.is_none(), "loading");
        assert!(obs[0].ready);
        assert!((obs[0].gpu_util.unwrap().value - 0.9).abs() < 1e-9);
        p.loaded(wake[0].1, wake[0].0);
        // The rebuild pause (520 s to 640 s): nothing trains, every pod is Ready.
        record(&mut p, 520, 600, 0.0);
        let obs = p.observe(SimTime::from_secs(600), window, 0.0, &mut rng);
        assert!(obs.iter().all(|o| o.ready), "{obs:?}");
        for o in &obs {
            assert_eq!(o.gpu_util.unwrap().value, 0.0, "{o:?}");
        }
        assert_eq!(obs[2].ready_transition, SimTime::from_secs(520));
    }
}
