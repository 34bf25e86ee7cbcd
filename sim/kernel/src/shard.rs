//! Dynamic data sharding: a TODO/DOING queue of shards (ranges of samples), as in DLRover.
//!
//! A worker takes a shard from TODO (it moves to DOING under the worker's name), trains its
//! batches, and commits it. If the worker dies, the master calls [`ShardQueue::fail`] and the
//! shard goes back to the *front* of TODO for another worker. Semantics: a sample counts as
//! trained when its shard commits, so every sample is committed exactly once per epoch. The
//! gradients a killed worker already pushed for a partial shard stay applied (asynchronous
//! PS training has no rollback); those samples are applied again by the worker that redoes the
//! shard — at-least-once gradient application, exactly-once commit, as in the papers.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};

/// A contiguous range of samples `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataShard {
    pub index: u32,
    pub start: u64,
    pub end: u64,
}

#[derive(Debug, Default)]
struct State {
    todo: VecDeque<DataShard>,
    doing: BTreeMap<usize, DataShard>,
    done: u32,
    requeued: u32,
    commit_counts: Vec<u32>,
}

/// The master's shard queue for one epoch.
#[derive(Debug)]
pub struct ShardQueue {
    state: Mutex<State>,
    changed: Condvar,
}

impl ShardQueue {
    /// Splits `num_samples` into shards of `shard_samples` (the last may be shorter).
    pub fn new(num_samples: u64, shard_samples: u64) -> Self {
        let step = shard_samples.max(1);
        let todo = (0..num_samples.div_ceil(step))
            .map(|k| DataShard {
                index: k as u32,
                start: k * step,
                end: ((k + 1) * step).min(num_samples),
            })
            .collect();
        let state = State {
            todo,
            commit_counts: vec![0; num_samples as usize],
            ..State::default()
        };
        ShardQueue {
            state: Mutex::new(state),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the next shard for `worker`; blocks while TODO is empty but some shard is still
    /// in DOING (it may come back); `None` once everything is done.
    pub fn take(&self, worker: usize) -> Option<DataShard> {
        let mut s = self.lock();
        loop {
            if let Some(shard) = s.todo.pop_front() {
                s.doing.insert(worker, shard);
                return Some(shard);
            }
            if s.doing.is_empty() {
                return None;
            }
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Marks `worker`'s shard done and counts its samples as trained.
    pub fn commit(&self, worker: usize) {
        let mut s = self.lock();
        if let Some(shard) = s.doing.remove(&worker) {
            for i in shard.start..shard.end {
                s.commit_counts[i as usize] += 1;
            }
            s.done += 1;
        }
        self.changed.notify_all();
    }

    /// The master saw `worker` die: its shard (if any) goes back to TODO.
    pub fn fail(&self, worker: usize) {
        let mut s = self.lock();
        if let Some(shard) = s.doing.remove(&worker) {
            s.todo.push_front(shard);
            s.requeued += 1;
        }
        self.changed.notify_all();
    }

    /// How many times each sample was committed.
    pub fn commit_counts(&self) -> Vec<u32> {
        self.lock().commit_counts.clone()
    }

    /// Shards returned to TODO after a failure.
    pub fn requeued(&self) -> u32 {
        self.lock().requeued
    }

    /// Shards committed.
    pub fn done(&self) -> u32 {
        self.lock().done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_shard_is_redone_by_someone_else() {
        let q = ShardQueue::new(10, 4);
        let a = q.take(0).unwrap();
        let b = q.take(1).unwrap();
        q.fail(0);
        q.commit(1);
        assert_eq!(q.take(1), Some(a));
        q.commit(1);
        let c = q.take(1).unwrap();
        assert_eq!((b.index, c.end), (1, 10));
        q.commit(1);
        assert_eq!(q.take(1), None);
        assert_eq!(q.commit_counts(), vec![1; 10]);
        assert_eq!((q.requeued(), q.done()), (1, 3));
    }

    #[test]
    fn take_waits_for_doing_shards() {
        let q = std::sync::Arc::new(ShardQueue::new(4, 4));
        let _ = q.take(0).unwrap();
        let q2 = std::sync::Arc::clone(&q);
        let waiter = std::thread::spawn(move || q2.take(1));
        std::thread::sleep(std::time::Duration::from_millis(20));
        q.fail(0);
        assert_eq!(waiter.join().unwrap().map(|s| s.index), Some(0));
    }
}
