//! Faults of a shared cloud beyond single pods: node failures (exponential lifetimes with
//! mean `faults.node_mtbf_days`, repaired after `faults.node_repair_h`; every pod on a
//! failed node fails), slow spells of nodes (`faults.slow_spell_h`; batch pods on the node
//! slow down and recover with it, while an online pod keeps the speed of its node at
//! placement: a simplification of the online world), and co-located high-priority services
//! whose diurnal demand evicts or throttles training pods (`faults.colocation`).
//!
//! Simplifications: the services' demand is a smooth daily curve times per-node noise,
//! re-evaluated every `update_interval_s` (a spike between two updates is not seen). In
//! throttle mode only CPU contention is modelled: the pods on the node share what CPU the
//! services leave (at least 3% of their request, the papers' harshest straggler), and the
//! services' memory is squeezed into what is free rather than evicting anyone.

use super::recovery::Cause;
use super::{Event, World};
use crate::faults::{ColocationAction, FaultConfig};
use crate::job::{Pod, PodState};
use crate::Resources;
use dlsim_engine::{EventQueue, RngStreams, SimRng, SimTime};
use rand::Rng;
use rand_distr::{Distribution, LogNormal};
use std::collections::BTreeSet;

/// The harshest straggler the papers use: 3% of the configured CPU.
const MIN_THROTTLE: f64 = 0.03;

pub(super) struct CloudState {
    streams: RngStreams,
    /// Per node: lifetimes drawn so far, the key of its next draw.
    node_lifetimes: Vec<u32>,
    /// Per node: slow or normal spells drawn so far, the key of its next draw.
    slow_spells: Vec<u32>,
    coloc_rng: SimRng,
    /// Nodes that host co-located services, in index order.
    coloc_nodes: Vec<usize>,
}

impl CloudState {
    pub(super) fn new(
        streams: &RngStreams,
        faults: &FaultConfig,
        nodes: usize,
        queue: &mut EventQueue<Event>,
    ) -> Self {
        let mut state = CloudState {
            streams: *streams,
            node_lifetimes: vec![0; nodes],
            slow_spells: vec![0; nodes],
            coloc_rng: streams.stream("colocation"),
            coloc_nodes: Vec::new(),
        };
        if faults.node_mtbf_days > 0.0 {
            for n in 0..nodes {
                let ttf = state.time_to_failure(faults, n);
                queue.push(ttf, Event::NodeFail(n));
            }
        }
        let c = &faults.colocation;
        if c.node_fraction > 0.0 {
            state.coloc_nodes = (0..nodes)
                .filter(|_| state.coloc_rng.gen::<f64>() < c.node_fraction)
                .collect();
            queue.push(SimTime::ZERO, Event::Colocation);
        }
        state
    }

    /// Node `n`'s next lifetime, keyed by the node and how many it drew before (stream
    /// `node-lifetime`), so every policy meets the same node failures.
    fn time_to_failure(&mut self, faults: &FaultConfig, n: usize) -> SimTime {
        let k = self.node_lifetimes[n];
        self.node_lifetimes[n] += 1;
        let u: f64 = self
            .streams
            .keyed("node-lifetime", &[n as u64, u64::from(k)])
            .gen::<f64>()
            .max(f64::MIN_POSITIVE);
        SimTime::from_secs_f64_ceil(-u.ln() * faults.node_mtbf_days * 86_400.0)
    }
}

/// Whether nodes alternate between slow and normal spells (`faults.slow_spell_h`): only
/// when some but not every node is slow at a time.
pub(super) fn slow_spells(faults: &FaultConfig) -> bool {
    faults.slow_spell_h > 0.0 && faults.slow_node_fraction > 0.0 && faults.slow_node_fraction < 1.0
}

impl CloudState {
    /// The length of node `n`'s next spell, `slow` or normal (exponential, with the means
    /// of `faults.slow_spell_h`), keyed by the node and how many spells it drew before
    /// (stream `slow-spell`), so every policy meets the same slow spells.
    pub(super) fn spell_length(&mut self, faults: &FaultConfig, n: usize, slow: bool) -> SimTime {
        let k = self.slow_spells[n];
        self.slow_spells[n] += 1;
        let f = faults.slow_node_fraction;
        let mean_h = if slow {
            faults.slow_spell_h
        } else {
            faults.slow_spell_h * (1.0 - f) / f
        };
        let u: f64 = self
            .streams
            .keyed("slow-spell", &[n as u64, u64::from(k)])
            .gen::<f64>()
            .max(f64::MIN_POSITIVE);
        // At least a second, so that a node never toggles twice at one instant.
        SimTime::from_secs_f64_ceil((-u.ln() * mean_h * 3_600.0).max(1.0))
    }
}

impl World {
    /// Queues the end of every node's first spell (the state drawn at the start is
    /// stationary, and spells are memoryless, so the first one's remainder has the same
    /// law as a whole spell).
    pub(super) fn start_slow_spells(&mut self, queue: &mut EventQueue<Event>) {
        if !slow_spells(&self.faults) {
            return;
        }
        for n in 0..self.slow_nodes.len() {
            let len = self.cloud.spell_length(&self.faults, n, self.slow_nodes[n]);
            queue.push(len, Event::SlowSpell(n));
        }
    }

    /// Node `n`'s spell ended: it turns slow or back to normal, and so does every pod on it.
    pub(super) fn slow_spell_ended(
        &mut self,
        now: SimTime,
        n: usize,
        queue: &mut EventQueue<Event>,
    ) {
        if self.unfinished == 0 {
            return;
        }
        let slow = !self.slow_nodes[n];
        self.slow_nodes[n] = slow;
        let len = self.cloud.spell_length(&self.faults, n, slow);
        queue.push(now.saturating_add(len), Event::SlowSpell(n));
        let factor = if slow {
            self.faults.straggler_cpu_ratio
        } else {
            1.0
        };
        self.set_node_pods(
            now,
            n,
            queue,
            |p| p.cpu_factor != factor,
            |p| p.cpu_factor = factor,
        );
    }

    /// Changes every pod on node `n` that `changes` picks with `apply`, after bringing its
    /// job's usage integrals up to `now`, then refreshes the rate of each such job that has
    /// a running pod.
    fn set_node_pods(
        &mut self,
        now: SimTime,
        n: usize,
        queue: &mut EventQueue<Event>,
        changes: impl Fn(&Pod) -> bool,
        apply: impl Fn(&mut Pod),
    ) {
        let mut touched = BTreeSet::new();
        for p in self.pods_on(n) {
            if !changes(&self.pods[p]) {
                continue;
            }
            let j = self.pods[p].job;
            if touched.insert(j) {
                self.jobs[j].advance(now, &mut self.pods);
            }
            apply(&mut self.pods[p]);
        }
        for j in touched {
            if self.jobs[j]
                .pods
                .iter()
                .any(|&p| self.pods[p].state == PodState::Running)
            {
                self.refresh_rate(now, j, queue);
            }
        }
    }

    /// Placed pods on node `n`, in pod order.
    fn pods_on(&self, n: usize) -> Vec<usize> {
        self.on_node[n].keys().copied().collect()
    }

    pub(super) fn node_failed(&mut self, now: SimTime, n: usize, queue: &mut EventQueue<Event>) {
        if self.unfinished == 0 {
            return;
        }
        for p in self.pods_on(n) {
            self.pod_failed(now, p, Cause::NodeFailure, queue);
        }
        self.online_node_lost(now, n);
        self.cluster.set_down(n, true);
        let repair = SimTime::from_secs_f64_ceil(self.faults.node_repair_h * 3_600.0);
        queue.push(now.saturating_add(repair), Event::NodeRepair(n));
    }

    pub(super) fn node_repaired(&mut self, now: SimTime, n: usize, queue: &mut EventQueue<Event>) {
        self.cluster.set_down(n, false);
        if self.unfinished > 0 {
            let ttf = self.cloud.time_to_failure(&self.faults, n);
            queue.push(now.saturating_add(ttf), Event::NodeFail(n));
        }
        self.queue_schedule(now, queue);
    }

    /// Re-evaluates the services' demand on every node hosting them, evicting or
    /// throttling training pods where it no longer fits.
    pub(super) fn colocation(&mut self, now: SimTime, queue: &mut EventQueue<Event>) {
        let c = self.faults.colocation.clone();
        let base = c.demand_fraction(now.as_secs_f64());
        let noise = LogNormal::new(0.0, c.noise_sigma).expect("validated sigma");
        for k in 0..self.cloud.coloc_nodes.len() {
            let n = self.cloud.coloc_nodes[k];
            let f = (base * noise.sample(&mut self.cloud.coloc_rng)).min(1.0);
            if self.cluster.nodes()[n].down {
                continue;
            }
            let cap = self.cluster.nodes()[n].capacity;
            let demand = Resources {
                cpu_milli: (cap.cpu_milli as f64 * f) as u64,
                mem_mb: (cap.mem_mb as f64 * f) as u64,
                gpu: 0,
            };
            match c.action {
                ColocationAction::Evict => self.evict_for(now, n, demand, queue),
                ColocationAction::Throttle => self.throttle_for(now, n, demand, queue),
            }
        }
        self.queue_schedule(now, queue);
        if self.unfinished > 0 {
            queue.push(
                now + SimTime::from_secs(c.update_interval_s),
                Event::Colocation,
            );
        }
    }

    /// Evicts the lowest-priority, most recently created pods until `demand` fits.
    fn evict_for(
        &mut self,
        now: SimTime,
        n: usize,
        demand: Resources,
        queue: &mut EventQueue<Event>,
    ) {
        let cap = self.cluster.nodes()[n].capacity;
        let mut victims = self.pods_on(n);
        victims.sort_by_key(|&p| {
            let prio = self.jobs[self.pods[p].job].spec.priority;
            (prio, std::cmp::Reverse(p))
        });
        let mut victims = victims.into_iter();
        while !(self.cluster.nodes()[n].allocated + demand).fits_in(&cap) {
            let Some(p) = victims.next() else { break };
            // An earlier eviction may have ended (and released) this pod's job.
            if self.pods.get(p).is_some_and(|x| x.placed()) {
                self.pod_failed(now, p, Cause::Evicted, queue);
            }
        }
        if !(self.cluster.nodes()[n].allocated + demand).fits_in(&cap) {
            // Online pods go last (their jobs serve fresh models).
            self.online_node_lost(now, n);
        }
        self.cluster.set_reserved(n, demand);
    }

    /// Gives the services what is free and slows the node's pods to the CPU left over.
    fn throttle_for(
        &mut self,
        now: SimTime,
        n: usize,
        demand: Resources,
        queue: &mut EventQueue<Event>,
    ) {
        let node = &self.cluster.nodes()[n];
        let (cap, alloc) = (node.capacity, node.allocated);
        let reserved = Resources {
            cpu_milli: demand.cpu_milli.min(cap.cpu_milli - alloc.cpu_milli),
            mem_mb: demand.mem_mb.min(cap.mem_mb - alloc.mem_mb),
            gpu: 0,
        };
        self.cluster.set_reserved(n, reserved);
        let left = cap.cpu_milli.saturating_sub(demand.cpu_milli) as f64;
        let factor = if alloc.cpu_milli == 0 {
            1.0
        } else {
            (left / alloc.cpu_milli as f64).clamp(MIN_THROTTLE, 1.0)
        };
        self.set_node_pods(
            now,
            n,
            queue,
            |p| p.throttle != factor,
            |p| p.throttle = factor,
        );
        self.online_node_throttled(now, n, factor);
    }
}
