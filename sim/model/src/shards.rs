//! Dynamic data sharding (DLRover): the dataset is cut into shards of a fixed number of
//! samples, kept in a TODO queue; a worker takes one (DOING), trains it, and it is DONE. A
//! worker that fails or is removed returns its DOING shard to the head of TODO and its
//! partial progress on it is lost. A checkpoint records the ledger with DOING shards
//! returned to TODO, so a restart from it retrains exactly the shards it had not finished.
//!
//! Shards are tracked one by one (`done_count` per shard id), so the invariant "every shard
//! was trained exactly once by the end of the job" is checked, not assumed
//! ([`ShardLedger::check_exactly_once`]).
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
    /// Times each shard was completed, in the surviving model state.
    done_count: Vec<u8>,
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
            done_count: vec![0; n as usize],
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
        self.done_count.len() as u32
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
        for c in &mut self.done_count[self.next_fresh as usize..(self.next_fresh + k) as usize] {
            *c += 1;
        }
        self.next_fresh += k;
        self.done += k;
        let samples = f64::from(k) * self.shard_samples;
        self.done_samples += samples;
        left - samples
    }

    fn complete(&mut self, shard: u32) {
        self.done_count[shard as usize] += 1;
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
        if let Some(i) = self.done_count.iter().position(|&c| c != 1) {
            let c = self.done_count[i];
            return Err(format!("shard {i} trained {c} times"));
        }
        if !self.doing.is_empty() || self.todo_len() != 0 {
            return Err("shards left in TODO/DOING".into());
        }
        Ok(())
    }

    /// Bookkeeping consistency at any instant: each shard is in exactly one of TODO,
    /// DOING, DONE, or not yet served.
    pub fn check_consistent(&self) -> Result<(), String> {
        let mut seen = vec![0u8; self.done_count.len()];
        for &s in &self.todo {
            seen[s as usize] += 1;
        }
        for &(s, _) in self.doing.values() {
            seen[s as usize] += 1;
        }
        for (i, c) in self.done_count.iter().enumerate() {
            let fresh = u32::from(i as u32 >= self.next_fresh);
            let total = u32::from(seen[i]) + u32::from(*c) + fresh;
            if total != 1 {
                return Err(format!(
                    "shard {i}: {total} places (todo/doing {}, done {c}, fresh {fresh})",
                    seen[i]
                ));
            }
        }
        Ok(())
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
}
