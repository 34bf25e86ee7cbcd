//! Stream partitions as fluid FIFO queues, their assignment to workers, and lag accounting.
//!
//! Between two world events every rate is constant, so a partition receives
//! `rate * dt` samples, spread evenly over the interval. Each worker owns a contiguous range
//! of partitions (Kafka's range assignor) and splits its capacity for the interval over them
//! max-min fairly (water-filling), so a partition that needs less than an equal share gets
//! all it needs. Simplification: the allocation is computed on the interval's totals, so a
//! queue that empties inside an interval is treated as served at the interval's average pace.
//!
//! Lag is exact for this fluid model: each partition keeps its cumulative-arrival curve
//! `A(t)` as breakpoints (one per interval, pruned once consumed) and the count consumed
//! `D`; the oldest untrained sample arrived at `A^-1(D)`, so the lag at `t` is
//! `t - A^-1(D)` (0 when the queue is empty).
//!
//! Kale's global shuffling is modelled as threshold-driven forwarding: a worker whose queue
//! after the interval would exceed `high_s` seconds of its capacity forwards the excess to
//! workers whose queue would stay under `low_s`, within their spare capacity. The sender
//! spends `cost_frac` of a sample's processing per forwarded sample, and every forwarded
//! sample crosses the network (`sample_bytes`). With shuffling on, a worker's shuffle unit
//! reads its partitions ahead into a local queue that trains in arrival order, so the
//! worker's capacity goes to its oldest samples first across its partitions (every partition
//! consumed up to one common arrival time) instead of the per-partition max-min split of a
//! plain Kafka consumer. Why it matters: max-min fairness leaves a worker's backlog on its
//! heaviest partition, whose lag (the job's lag is the max over partitions) is then many
//! times the worker's queue in seconds; on `online-7d` without rebuild pauses that alone
//! kept Kale (oracle forecaster) at 23,749 lag-minutes a week, against 2,578 oldest-first.

use std::collections::VecDeque;

/// One partition's fluid queue.
#[derive(Clone, Debug, Default)]
pub struct Partition {
    /// Cumulative arrivals at interval ends: `(t_ms, A)`; the front is at or before the
    /// oldest untrained sample.
    curve: VecDeque<(u64, f64)>,
    pub arrived: f64,
    pub consumed: f64,
}

impl Partition {
    fn new() -> Self {
        let mut curve = VecDeque::new();
        curve.push_back((0, 0.0));
        Partition {
            curve,
            arrived: 0.0,
            consumed: 0.0,
        }
    }

    pub fn backlog(&self) -> f64 {
        (self.arrived - self.consumed).max(0.0)
    }

    /// Lag (ms) at `now_ms`: the age of the oldest untrained sample.
    pub fn lag_ms(&self, now_ms: u64) -> f64 {
        // Below a millionth of a sample the queue is empty (float residue of the fill).
        if self.backlog() <= 1e-6 {
            return 0.0;
        }
        let d = self.consumed;
        for pair in self.curve.iter().zip(self.curve.iter().skip(1)) {
            let ((t0, a0), (t1, a1)) = (*pair.0, *pair.1);
            if a1 > d {
                let frac = if a1 > a0 { (d - a0) / (a1 - a0) } else { 0.0 };
                let born = t0 as f64 + frac.clamp(0.0, 1.0) * (t1 - t0) as f64;
                return (now_ms as f64 - born).max(0.0);
            }
        }
        0.0
    }

    /// Cumulative arrivals at `t_ms` (interpolated on the curve; the front if earlier).
    fn arrived_at(&self, t_ms: f64) -> f64 {
        let k = self.curve.partition_point(|e| (e.0 as f64) < t_ms);
        if k == 0 {
            return self.curve.front().map_or(0.0, |e| e.1);
        }
        let Some(&(t1, a1)) = self.curve.get(k) else {
            return self.arrived;
        };
        let (t0, a0) = self.curve[k - 1];
        a0 + (a1 - a0) * (t_ms - t0 as f64) / (t1 - t0).max(1) as f64
    }

    fn prune(&mut self) {
        while self.curve.len() >= 2 && self.curve[1].1 <= self.consumed {
            self.curve.pop_front();
        }
    }
}

/// Threshold-driven forwarding between workers (Kale's global data shuffling).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShuffleConfig {
    /// A worker forwards when its queue would exceed this many seconds of its capacity...
    pub high_s: f64,
    /// ...to workers whose queue would stay below this many seconds.
    pub low_s: f64,
    /// Share of one sample's processing the sender spends forwarding it.
    pub cost_frac: f64,
}

impl Default for ShuffleConfig {
    fn default() -> Self {
        ShuffleConfig {
            high_s: 30.0,
            low_s: 5.0,
            cost_frac: 0.05,
        }
    }
}

/// What one interval did, per worker and in total.
#[derive(Clone, Debug, Default)]
pub struct IntervalOutcome {
    /// Samples each worker trained.
    pub trained: Vec<f64>,
    /// Samples forwarded between workers by shuffling.
    pub forwarded: f64,
}

/// All partitions of the stream.
#[derive(Clone, Debug)]
pub struct Stream {
    pub parts: Vec<Partition>,
}

impl Stream {
    pub fn new(partitions: usize) -> Self {
        Stream {
            parts: (0..partitions).map(|_| Partition::new()).collect(),
        }
    }

    /// Partitions of worker `i` out of `w` (Kafka's range assignor: contiguous ranges, the
    /// first `P mod w` workers get one more).
    pub fn range(&self, i: usize, w: usize) -> std::ops::Range<usize> {
        let p = self.parts.len();
        let base = p / w;
        let extra = p % w;
        let start = i * base + i.min(extra);
        let len = base + usize::from(i < extra);
        start..start + len
    }

    /// Advances `[t0_ms, t1_ms)`: arrivals at `rates` (samples/s per partition), then the
    /// consuming workers, with `caps[i]` samples of capacity each for the interval (less
    /// than `nominal`, one worker's capacity at full speed, for a straggler), consume.
    pub fn advance(
        &mut self,
        t0_ms: u64,
        t1_ms: u64,
        rates: &[f64],
        caps: &[f64],
        nominal: f64,
        shuffle: Option<ShuffleConfig>,
    ) -> IntervalOutcome {
        let w = caps.len();
        let dt = (t1_ms - t0_ms) as f64 / 1000.0;
        for (p, r) in self.parts.iter_mut().zip(rates) {
            p.arrived += r * dt;
            if t1_ms > t0_ms {
                p.curve.push_back((t1_ms, p.arrived));
            }
        }
        let mut out = IntervalOutcome {
            trained: vec![0.0; w],
            forwarded: 0.0,
        };
        if w == 0 || caps.iter().all(|&c| c <= 0.0) {
            return out;
        }
        let mut caps = caps.to_vec();
        if let Some(cfg) = shuffle {
            let demand: Vec<f64> = (0..w)
                .map(|i| self.range(i, w).map(|j| self.parts[j].backlog()).sum())
                .collect();
            // The thresholds are in seconds of a worker's nominal capacity.
            out.forwarded = forward(&demand, &mut caps, nominal / dt.max(1e-9), cfg);
        }
        for (i, &cap_i) in caps.iter().enumerate() {
            let range = self.range(i, w);
            let got = if shuffle.is_some() {
                oldest_first(&self.parts[range.clone()], cap_i, t1_ms)
            } else {
                let want: Vec<f64> = range.clone().map(|j| self.parts[j].backlog()).collect();
                water_fill(&want, cap_i)
            };
            for (j, g) in range.zip(got) {
                self.parts[j].consumed += g;
                out.trained[i] += g;
                self.parts[j].prune();
            }
        }
        out
    }

    /// The job's lag (ms): the oldest untrained sample over all partitions.
    pub fn max_lag_ms(&self, now_ms: u64) -> f64 {
        self.parts
            .iter()
            .map(|p| p.lag_ms(now_ms))
            .fold(0.0, f64::max)
    }

    /// Lag averaged over partitions, weighted by their backlog.
    pub fn mean_lag_ms(&self, now_ms: u64) -> f64 {
        let total: f64 = self.parts.iter().map(Partition::backlog).sum();
        if total <= 1e-6 {
            return 0.0;
        }
        self.parts
            .iter()
            .map(|p| p.backlog() * p.lag_ms(now_ms))
            .sum::<f64>()
            / total
    }

    pub fn backlog(&self) -> f64 {
        self.parts.iter().map(Partition::backlog).sum()
    }
}

/// Moves capacity from under-loaded to over-loaded workers; returns samples forwarded.
/// `rate` is one worker's capacity per second (for thresholds in seconds).
fn forward(demand: &[f64], caps: &mut [f64], rate: f64, cfg: ShuffleConfig) -> f64 {
    let excess: Vec<f64> = demand
        .iter()
        .zip(caps.iter())
        .map(|(d, c)| (d - c - cfg.high_s * rate).max(0.0))
        .collect();
    let spare: Vec<f64> = demand
        .iter()
        .zip(caps.iter())
        .map(|(d, c)| {
            if d - c < cfg.low_s * rate {
                (c - d).max(0.0)
            } else {
                0.0
            }
        })
        .collect();
    let (ex, sp): (f64, f64) = (excess.iter().sum(), spare.iter().sum());
    // What moves is the smaller of the senders' excess and the receivers' spare room;
    // a sender pays cost_frac per forwarded sample, so its capacity grows by
    // (1 - cost_frac) of what it hands off.
    let moved = ex.min(sp);
    if moved <= 0.0 {
        return 0.0;
    }
    for i in 0..caps.len() {
        if excess[i] > 0.0 {
            let f = moved * excess[i] / ex;
            caps[i] += f * (1.0 - cfg.cost_frac);
        }
        if spare[i] > 0.0 {
            caps[i] -= moved * spare[i] / sp;
        }
    }
    moved
}

/// Oldest samples first over `parts` (the order a worker's local queue trains them in when
/// its shuffle unit reads its partitions ahead): every partition is consumed up to the same
/// arrival time `T`, the latest one `cap` can pay for. Returns what each partition gets.
fn oldest_first(parts: &[Partition], cap: f64, t1_ms: u64) -> Vec<f64> {
    let backlog: Vec<f64> = parts.iter().map(Partition::backlog).collect();
    let total: f64 = backlog.iter().sum();
    if total <= cap {
        return backlog;
    }
    let need_of = |p: &Partition, t: f64| (p.arrived_at(t) - p.consumed).clamp(0.0, p.backlog());
    let need = |t: f64| -> Vec<f64> { parts.iter().map(|p| need_of(p, t)).collect() };
    // Up to the oldest point any partition still keeps nothing is needed: every curve's
    // front has been consumed (pruning keeps it so).
    let floor = parts
        .iter()
        .map(|p| p.curve.front().map_or(0.0, |e| e.0 as f64))
        .fold(f64::INFINITY, f64::min);
    // Bisection on the cut time: need(T) grows with T, need(t1) = total > cap.
    let (mut lo, mut hi) = (0.0f64, t1_ms as f64);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        let fits = if mid <= floor {
            0.0 <= cap
        } else {
            parts.iter().map(|p| need_of(p, mid)).sum::<f64>() <= cap
        };
        if fits {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-3 {
            break;
        }
    }
    need(lo)
}

/// Max-min fair split of `cap` over demands `want`.
pub fn water_fill(want: &[f64], cap: f64) -> Vec<f64> {
    let mut got = vec![0.0; want.len()];
    let mut order: Vec<usize> = (0..want.len()).collect();
    order.sort_by(|&a, &b| want[a].total_cmp(&want[b]).then(a.cmp(&b)));
    let mut left = cap.max(0.0);
    let mut n = want.len();
    for &j in &order {
        let share = left / n as f64;
        let g = want[j].min(share);
        got[j] = g;
        left -= g;
        n -= 1;
    }
    got
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn water_fill_is_max_min_fair() {
        assert_eq!(water_fill(&[1.0, 10.0, 10.0], 9.0), vec![1.0, 4.0, 4.0]);
        assert_eq!(water_fill(&[1.0, 2.0], 10.0), vec![1.0, 2.0]);
    }

    #[test]
    fn range_assignor_covers_every_partition_once() {
        let s = Stream::new(10);
        let mut seen = vec![0; 10];
        for i in 0..3 {
            for j in s.range(i, 3) {
                seen[j] += 1;
            }
        }
        assert_eq!(seen, vec![1; 10]);
        assert_eq!(s.range(0, 3), 0..4);
    }

    /// Hand-computed: 10 samples/s arrive for 60 s with no worker, then one worker drains
    /// 20 samples/s. At t=60 s the oldest sample is 60 s old; after 30 s of draining
    /// (600 consumed) it is the one born at t=60 s, so the lag is 30 s; the queue
    /// (600 + 300 - 600 = 300) empties 30 s later.
    #[test]
    fn lag_on_a_hand_computable_stream() {
        let mut s = Stream::new(1);
        s.advance(0, 60_000, &[10.0], &[], 0.0, None);
        assert_eq!(s.parts[0].backlog(), 600.0);
        assert_eq!(s.max_lag_ms(60_000), 60_000.0);
        s.advance(60_000, 90_000, &[10.0], &[600.0], 600.0, None);
        assert_eq!(s.parts[0].backlog(), 300.0);
        assert_eq!(s.max_lag_ms(90_000), 30_000.0);
        s.advance(90_000, 120_000, &[10.0], &[600.0], 600.0, None);
        assert_eq!(s.parts[0].backlog(), 0.0);
        assert_eq!(s.max_lag_ms(120_000), 0.0);
    }

    /// One worker owns a heavy and a light partition and is short of capacity for a minute:
    /// max-min fairness serves the light one fully and leaves every untrained sample on the
    /// heavy one, while the shuffle unit's local queue trains oldest first, so both
    /// partitions end at the same lag and the job's lag (the max) is lower.
    #[test]
    fn shuffle_units_train_oldest_first_across_a_workers_partitions() {
        let run = |shuffle: Option<ShuffleConfig>| {
            let mut s = Stream::new(2);
            s.advance(0, 60_000, &[90.0, 10.0], &[3_000.0], 3_000.0, shuffle);
            s
        };
        let fair = run(None);
        assert_eq!(fair.parts[1].backlog(), 0.0);
        let fifo = run(Some(ShuffleConfig::default()));
        let (l0, l1) = (fifo.parts[0].lag_ms(60_000), fifo.parts[1].lag_ms(60_000));
        assert!((l0 - l1).abs() < 1.0, "{l0} {l1}");
        // 3,000 of 6,000 samples trained: the oldest half, so the lag is 30 s.
        assert!((l0 - 30_000.0).abs() < 1.0, "{l0}");
        assert!(fifo.max_lag_ms(60_000) < fair.max_lag_ms(60_000));
    }

    #[test]
    fn shuffling_moves_work_to_idle_workers() {
        // Two partitions, two workers; all traffic lands on partition 0.
        let mut plain = Stream::new(2);
        let mut shuf = Stream::new(2);
        for k in 0..10u64 {
            let (t0, t1) = (k * 60_000, (k + 1) * 60_000);
            plain.advance(t0, t1, &[15.0, 0.0], &[600.0; 2], 600.0, None);
            shuf.advance(
                t0,
                t1,
                &[15.0, 0.0],
                &[600.0; 2],
                600.0,
                Some(ShuffleConfig::default()),
            );
        }
        assert!(plain.backlog() > 2_000.0, "one worker cannot keep up");
        assert!(shuf.backlog() < plain.backlog() / 2.0, "{}", shuf.backlog());
    }
}

#[cfg(test)]
mod straggler_tests {
    use super::*;

    /// A worker with half the capacity trains half of its own partition's arrivals; the
    /// other worker keeps up with its own.
    #[test]
    fn a_slow_worker_trains_its_partitions_at_its_own_capacity() {
        let mut s = Stream::new(2);
        s.advance(0, 60_000, &[10.0, 10.0], &[600.0, 300.0], 600.0, None);
        assert_eq!(s.parts[0].backlog(), 0.0);
        assert_eq!(s.parts[1].backlog(), 300.0);
    }
}
