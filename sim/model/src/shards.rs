//! Dynamic data sharding (DLRover): the dataset is cut into shards of a fixed number of
//! samples, kept in a TODO queue; a worker takes one (DOING), trains it, and it is DONE. A
//! worker that fails or is removed returns its DOING shard to the head of TODO and its
//! partial progress on it is lost. A checkpoint records the ledger with DOING shards
//! returned to TODO, so a restart from it retrains exactly the shards it had not finished.
//!
//! Shards are tracked by id, so the invariant "every shard was trained exactly once by the
//! end of the job" is checked, not assumed ([`ShardLedger::check_exactly_once`]). The DONE
//! set is kept as sorted disjoint intervals of shard ids ([`Intervals`]), not one counter
//! per shard: shards are served in id order, so DONE is `[0, next_fresh)` minus the few
//! shards in TODO or DOING, and its size (and a checkpoint's copy of it) grows with those
//! holes, not with the job's length. A shard completed a second time is recorded as the
//! first violation and reported by the check. (A counter per shard, cloned at every
//! checkpoint, made `dlrover` 7,000x slower than `static` on openb, where month-long jobs
//! have millions of shards: see ARCHITECTURE.md, "Cost of a decision".)
//!
//! Simplification: the ledger is advanced by the job's fluid progress, `rate * dt`, shared
//! between workers in proportion to their speeds. At the very end, when the TODO queue is
//! empty, a worker that runs out of shards hands its remaining speed to the shards still
//! in progress (as if the tail were split), so the job's completion time is the fluid one
//! and the straggler tail of the last shards is not modelled. Hence a straggler's smaller
//! shards change nothing in the simulator beyond the partial progress lost on failure.

use crate::vecmap::VecMap;
use std::collections::VecDeque;

#[derive(Clone, Debug, PartialEq)]
pub struct ShardLedger {
    shard_samples: f64,
    total_samples: f64,
    /// Number of shards (the last one may be partial).
    shards: u32,
    /// Shards completed, in the surviving model state.
    done_set: Intervals,
    /// The first shard completed while already DONE (an exactly-once violation).
    twice: Option<u32>,
    todo: VecDeque<u32>,
    next_fresh: u32,
    /// Worker pod -> (shard, samples trained on it so far).
    doing: VecMap<usize, (u32, f64)>,
    done: u32,
    done_samples: f64,
}

impl ShardLedger {
    /// A ledger for `total_samples`, cut into shards of `shard_samples` (the last shard
    /// takes the remainder).
    pub fn new(total_samples: f64, shard_samples: f64) -> Self {
        assert!(total_samples > 0.0 && shard_samples > 0.0);
        let n = (total_samples / shard_samples).ceil().max(1.0) as u32;
        ShardLedger {
            shard_samples,
            total_samples,
            shards: n,
            done_set: Intervals::default(),
            twice: None,
            todo: VecDeque::new(),
            next_fresh: 0,
            doing: VecMap::new(),
            done: 0,
            done_samples: 0.0,
        }
    }

    pub fn total_samples(&self) -> f64 {
        self.total_samples
    }

    pub fn shard_samples(&self) -> f64 {
        self.shard_samples
    }

    pub fn shards(&self) -> u32 {
        self.shards
    }

    pub fn done(&self) -> u32 {
        self.done
    }

    /// Shards waiting in TODO (returned ones plus never-served ones).
    pub fn todo_len(&self) -> u32 {
        self.todo.len() as u32 + (self.shards() - self.next_fresh)
    }

    pub fn doing_len(&self) -> u32 {
        self.doing.len() as u32
    }

    fn size(&self, shard: u32) -> f64 {
        let start = f64::from(shard) * self.shard_samples;
        (self.total_samples - start).min(self.shard_samples)
    }

    /// Samples in DONE shards plus partial progress on DOING shards.
    pub fn samples(&self) -> f64 {
        self.done_samples + self.doing.values().map(|&(_, s)| s).sum::<f64>()
    }

    pub fn done_samples(&self) -> f64 {
        self.done_samples
    }

    fn take(&mut self) -> Option<u32> {
        if let Some(s) = self.todo.pop_front() {
            return Some(s);
        }
        (self.next_fresh < self.shards()).then(|| {
            self.next_fresh += 1;
            self.next_fresh - 1
        })
    }

    /// A worker starts (or resumes) taking shards.
    pub fn join(&mut self, worker: usize) {
        if !self.doing.contains_key(&worker) {
            if let Some(s) = self.take() {
                self.doing.insert(worker, (s, 0.0));
            }
        }
    }

    /// A worker leaves (failed or removed): its DOING shard goes back to TODO and its
    /// partial progress is lost. Returns the samples lost.
    pub fn leave(&mut self, worker: usize) -> f64 {
        match self.doing.remove(&worker) {
            Some((s, progress)) => {
                self.todo.push_front(s);
                progress
            }
            None => 0.0,
        }
    }

    /// A worker with `left` samples to train and nothing returned in TODO goes through whole
    /// never-served shards in one step (the same shards, in the same order, as taking them
    /// one at a time; the last, possibly partial, shard is left to the normal path).
    /// Returns the samples left over.
    fn complete_fresh_in_bulk(&mut self, left: f64) -> f64 {
        // Under one and a half shards' worth, `left / shard_samples` is below 2: nothing
        // to complete in bulk (and no division or floor to pay for).
        if !self.todo.is_empty() || left < 1.5 * self.shard_samples {
            return left;
        }
        let whole_fresh = self
            .shards()
            .saturating_sub(1)
            .saturating_sub(self.next_fresh);
        let k = ((left / self.shard_samples).floor() as u32).min(whole_fresh);
        if k <= 1 {
            return left;
        }
        self.mark_done(self.next_fresh, self.next_fresh + k);
        self.next_fresh += k;
        self.done += k;
        let samples = f64::from(k) * self.shard_samples;
        self.done_samples += samples;
        left - samples
    }

    /// Records shards `[a, b)` as DONE, noting the first one that already was.
    fn mark_done(&mut self, a: u32, b: u32) {
        if let Err(s) = self.done_set.insert(a, b) {
            self.twice.get_or_insert(s);
        }
    }

    fn complete(&mut self, shard: u32) {
        self.mark_done(shard, shard + 1);
        self.done += 1;
        self.done_samples += self.size(shard);
    }

    /// Trains `amount[i]` samples on worker `amount[i].0`'s shards, taking new shards as
    /// they finish. Work a worker cannot place (TODO empty) goes to the shards still DOING.
    pub fn advance(&mut self, amounts: &[(usize, f64)]) {
        self.advance_each(amounts.iter().copied());
    }

    /// [`ShardLedger::advance`] of `amount` samples split over workers by their rates:
    /// worker `p` at rate `r` trains `amount * r / total_rate` (no list is built).
    pub fn advance_split(&mut self, rates: &[(usize, f64)], amount: f64, total_rate: f64) {
        self.advance_each(rates.iter().map(|&(p, r)| (p, amount * r / total_rate)));
    }

    fn advance_each(&mut self, amounts: impl Iterator<Item = (usize, f64)>) {
        let mut spare = 0.0;
        // Workers come in pod order, as DOING is kept: each lookup tries the slot after
        // the last one found.
        let mut cursor = 0;
        for (worker, amount) in amounts {
            let mut left = amount;
            // The common case, in one lookup: the worker's shard absorbs all of it.
            let slot = self.doing.slot_from(&worker, cursor);
            let mut current = slot.map(|i| *self.doing.slot(i));
            if let (Some(i), Some((shard, progress))) = (slot, current) {
                cursor = i + 1;
                if left > 0.0 && left < self.size(shard) - progress {
                    self.doing.slot_mut(i).1 += left;
                    continue;
                }
            }
            // Otherwise the worker's DOING entry is held locally while it goes through
            // shards and written back once, in its slot (nothing else touches DOING
            // meanwhile).
            while left > 0.0 {
                let (shard, progress) = match current {
                    Some(d) => d,
                    None => match self.take() {
                        Some(s) => (s, 0.0),
                        None => {
                            spare += left;
                            break;
                        }
                    },
                };
                let need = self.size(shard) - progress;
                if left < need {
                    current = Some((shard, progress + left));
                    break;
                }
                left -= need;
                self.complete(shard);
                left = self.complete_fresh_in_bulk(left);
                current = self.take().map(|s| (s, 0.0));
            }
            match (current, slot) {
                (Some(d), Some(i)) => *self.doing.slot_mut(i) = d,
                (Some(d), None) => {
                    self.doing.insert(worker, d);
                }
                (None, Some(i)) => {
                    self.doing.remove_slot(i);
                    cursor = i;
                }
                (None, None) => {}
            }
        }
        // The tail: spare capacity finishes the shards still in progress, lowest pod first.
        while spare > 0.0 {
            let Some((_, &(shard, progress))) = self.doing.first() else {
                break;
            };
            let need = self.size(shard) - progress;
            if spare >= need {
                spare -= need;
                self.doing.remove_slot(0);
                self.complete(shard);
            } else {
                self.doing.slot_mut(0).1 = progress + spare;
                spare = 0.0;
            }
        }
    }

    /// Completes whatever is left within `tolerance` samples (float rounding at the fluid
    /// completion instant). Panics if more than that is missing: progress was lost.
    pub fn finish(&mut self, tolerance: f64) {
        let missing = self.total_samples - self.samples();
        assert!(
            missing <= tolerance,
            "job completed with {missing} samples untrained"
        );
        let doing: Vec<u32> = self.doing.values().map(|&(s, _)| s).collect();
        self.doing.clear();
        for s in doing {
            self.complete(s);
        }
        while let Some(s) = self.take() {
            // Only reachable with a sub-tolerance remainder shard.
            self.complete(s);
        }
    }

    /// The state a checkpoint saves: DOING shards back in TODO, partial progress dropped.
    pub fn checkpoint(&self) -> ShardLedger {
        let mut saved = self.clone();
        let doing: Vec<u32> = saved.doing.values().map(|&(s, _)| s).collect();
        saved.doing.clear();
        for s in doing.into_iter().rev() {
            saved.todo.push_front(s);
        }
        saved
    }

    /// Restores a checkpoint: DOING shards of the current workers restart from `saved`.
    pub fn restore(&mut self, saved: &ShardLedger) {
        *self = saved.clone();
    }

    /// The exactly-once invariant: every shard completed once, none twice, none lost.
    pub fn check_exactly_once(&self) -> Result<(), String> {
        if let Some(s) = self.twice {
            return Err(format!("shard {s} trained twice"));
        }
        if let Some(s) = self.done_set.first_missing(self.shards) {
            return Err(format!("shard {s} never trained"));
        }
        if !self.doing.is_empty() || self.todo_len() != 0 {
            return Err("shards left in TODO/DOING".into());
        }
        Ok(())
    }

    /// Bookkeeping consistency at any instant: each shard is in exactly one of TODO,
    /// DOING, DONE, or not yet served (ids from `next_fresh` on).
    pub fn check_consistent(&self) -> Result<(), String> {
        if let Some(s) = self.twice {
            return Err(format!("shard {s} completed twice"));
        }
        if self.next_fresh > self.shards || self.done_set.end() > self.next_fresh {
            return Err(format!(
                "served {} of {} shards but DONE reaches {}",
                self.next_fresh,
                self.shards,
                self.done_set.end()
            ));
        }
        let mut held: Vec<u32> = self.todo.iter().copied().collect();
        held.extend(self.doing.values().map(|&(s, _)| s));
        held.sort_unstable();
        for w in held.windows(2) {
            if w[0] == w[1] {
                return Err(format!("shard {}: 2 places in TODO/DOING", w[0]));
            }
        }
        for &s in &held {
            if s >= self.next_fresh {
                return Err(format!("shard {s}: in TODO/DOING but never served"));
            }
            if self.done_set.contains(s) {
                return Err(format!("shard {s}: in TODO/DOING and DONE"));
            }
        }
        // Disjoint and all below `next_fresh`: together they cover it exactly when the
        // counts add up.
        let placed = self.done_set.count() + held.len() as u64;
        if placed != u64::from(self.next_fresh) {
            return Err(format!(
                "{placed} shards placed in TODO/DOING/DONE, {} served",
                self.next_fresh
            ));
        }
        Ok(())
    }
}

/// A set of shard ids as sorted, disjoint, non-adjacent half-open intervals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Intervals {
    runs: Vec<(u32, u32)>,
}

impl Intervals {
    /// Adds `[a, b)`. If any id in it is already present, the set is left unchanged and
    /// the first such id is returned.
    pub fn insert(&mut self, a: u32, b: u32) -> Result<(), u32> {
        debug_assert!(a < b);
        // First run that ends at or after `a` (it may touch or overlap [a, b)).
        let i = self.runs.partition_point(|&(_, e)| e < a);
        if let Some(&(s, e)) = self.runs.get(i) {
            if s < b && a < e {
                return Err(a.max(s));
            }
        }
        let joins_left = i < self.runs.len() && self.runs[i].1 == a;
        let right = if joins_left { i + 1 } else { i };
        let joins_right = right < self.runs.len() && self.runs[right].0 == b;
        match (joins_left, joins_right) {
            (true, true) => {
                self.runs[i].1 = self.runs[right].1;
                self.runs.remove(right);
            }
            (true, false) => self.runs[i].1 = b,
            (false, true) => self.runs[right].0 = a,
            (false, false) => self.runs.insert(i, (a, b)),
        }
        Ok(())
    }

    pub fn contains(&self, x: u32) -> bool {
        let i = self.runs.partition_point(|&(_, e)| e <= x);
        self.runs.get(i).is_some_and(|&(s, _)| s <= x)
    }

    /// Ids in the set.
    pub fn count(&self) -> u64 {
        self.runs.iter().map(|&(s, e)| u64::from(e - s)).sum()
    }

    /// One past the largest id (0 when empty).
    pub fn end(&self) -> u32 {
        self.runs.last().map_or(0, |&(_, e)| e)
    }

    /// The smallest id below `n` not in the set.
    pub fn first_missing(&self, n: u32) -> Option<u32> {
        let first = match self.runs.first() {
            Some(&(0, e)) => e,
            _ => 0,
        };
        (first < n).then_some(first)
    }

    /// Runs held: the set's size in memory.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_returns_the_shard_and_loses_its_progress() {
        let mut l = ShardLedger::new(1000.0, 100.0);
        l.join(1);
        l.join(2);
        l.advance(&[(1, 150.0), (2, 30.0)]);
        assert_eq!(l.done(), 1);
        assert!((l.samples() - 180.0).abs() < 1e-9);
        assert!((l.leave(2) - 30.0).abs() < 1e-9);
        l.check_consistent().unwrap();
        // The returned shard is served next.
        l.advance(&[(1, 50.0 + 100.0)]);
        assert_eq!(l.done(), 3);
        l.advance(&[(1, 700.0)]);
        l.finish(1e-6);
        l.check_exactly_once().unwrap();
    }

    #[test]
    fn checkpoint_restore_retrains_unfinished_shards_once() {
        let mut l = ShardLedger::new(950.0, 100.0);
        assert_eq!(l.shards(), 10);
        l.join(0);
        l.join(1);
        l.advance(&[(0, 120.0), (1, 60.0)]);
        let saved = l.checkpoint();
        assert!((saved.samples() - 100.0).abs() < 1e-9);
        l.advance(&[(0, 300.0), (1, 200.0)]);
        l.restore(&saved);
        l.check_consistent().unwrap();
        l.join(0);
        l.join(1);
        l.advance(&[(0, 425.0), (1, 425.0)]);
        l.finish(1e-6);
        l.check_exactly_once().unwrap();
    }

    #[test]
    fn tail_capacity_finishes_in_progress_shards() {
        let mut l = ShardLedger::new(200.0, 100.0);
        l.join(0);
        l.join(1);
        l.advance(&[(0, 150.0), (1, 50.0)]);
        assert_eq!(l.done(), 2);
        l.check_exactly_once().unwrap();
    }

    #[test]
    fn a_large_step_serves_whole_shards_in_order() {
        let mut l = ShardLedger::new(10_050.0, 100.0);
        l.join(0);
        l.join(1);
        // Worker 0 finishes shard 0 and 29 more (2..=30) and is 30 into shard 31; worker 1
        // finishes shard 1 and 9 more (32..=40) and is 10 into shard 41.
        l.advance(&[(0, 3_030.0), (1, 1_010.0)]);
        l.check_consistent().unwrap();
        assert_eq!(l.done(), 40);
        assert_eq!(l.doing[&0], (31, 30.0));
        assert_eq!(l.doing[&1], (41, 10.0));
        assert!((l.samples() - 4_040.0).abs() < 1e-9);
        // A failure returns shard 41; the rest, with the 50-sample last shard, finishes
        // exactly once.
        assert_eq!(l.leave(1), 10.0);
        l.advance(&[(0, 6_020.0)]);
        l.finish(1e-6);
        l.check_exactly_once().unwrap();
    }

    #[test]
    fn intervals_merge_and_detect_overlap() {
        let mut d = Intervals::default();
        d.insert(5, 7).unwrap();
        d.insert(0, 2).unwrap();
        d.insert(3, 4).unwrap();
        assert_eq!(d.runs(), 3);
        assert_eq!(d.insert(6, 9), Err(6));
        assert_eq!(d.insert(1, 3), Err(1));
        // Filling the gaps merges everything into one run.
        d.insert(2, 3).unwrap();
        d.insert(4, 5).unwrap();
        assert_eq!(d.runs(), 1);
        assert_eq!(d.count(), 7);
        assert!(d.contains(0) && d.contains(6) && !d.contains(7));
        assert_eq!(d.first_missing(7), None);
        assert_eq!(d.first_missing(8), Some(7));
    }

    #[test]
    fn a_shard_completed_twice_fails_the_checks() {
        let mut l = ShardLedger::new(300.0, 100.0);
        l.join(0);
        l.advance(&[(0, 100.0)]);
        // Corrupt the bookkeeping: shard 0 is handed out again after it was DONE.
        l.todo.push_back(0);
        l.advance(&[(0, 300.0)]);
        assert!(l.check_consistent().unwrap_err().contains("shard 0"));
        assert!(l.check_exactly_once().unwrap_err().contains("twice"));
    }

    #[test]
    fn a_long_job_holds_few_runs_through_failures_and_checkpoints() {
        // 10 million shards, 8 workers, a failure every so often: DONE stays a handful
        // of runs and a checkpoint is a small copy.
        let mut l = ShardLedger::new(1e9, 100.0);
        for w in 0..8 {
            l.join(w);
        }
        let mut saved = l.checkpoint();
        for round in 0..2_000 {
            let amounts: Vec<(usize, f64)> = (0..8).map(|w| (w, 61_250.0 + w as f64)).collect();
            l.advance(&amounts);
            if round % 7 == 3 {
                l.leave(round % 8);
                l.join(round % 8);
            }
            if round % 50 == 0 {
                saved = l.checkpoint();
            }
            assert!(l.done_set.runs() <= 20, "{} runs", l.done_set.runs());
        }
        l.check_consistent().unwrap();
        l.restore(&saved);
        l.check_consistent().unwrap();
        for w in 0..8 {
            l.join(w);
        }
        let left = l.total_samples() - l.samples();
        l.advance(&[(0, left)]);
        l.finish(1e-3);
        l.check_exactly_once().unwrap();
    }
}
