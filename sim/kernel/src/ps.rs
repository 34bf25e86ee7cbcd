//! Parameter-server shards: embedding tables that grow on first sight, dense slices, optimisers.
//!
//! Each PS shard is served by its own pool of `threads_per_ps` OS threads pulling messages from
//! one MPMC queue, like a PS process with an RPC thread pool. Lookups from different workers
//! are served in parallel (one request by one thread); sparse updates take the table's lock
//! one at a time. The embedding rows live in an [`EmbeddingTable`] (an ID index over
//! contiguous row arenas behind a reader-writer lock, see [`crate::table`]). The shard's dense
//! slice sits behind a single lock, so dense push/pull is serialised per PS like traffic
//! through one NIC.
//!
//! Every handler measures its own CPU time into [`PsStats`]; the calibration turns those into
//! the model's `T_upd` (update work shared by the PS's threads) and `T_sync` (dense traffic).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};
use serde::{Deserialize, Serialize};

use crate::cputime::MeasureToken;
use crate::plan::{dense_range, ps_of, FeatureId};
use crate::table::EmbeddingTable;

/// Queue depth per PS; a worker pushing into a full queue blocks (back-pressure).
const QUEUE_DEPTH: usize = 256;

/// Update rule applied by the PS to pushed gradients.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Optimizer {
    /// `w -= lr * g`.
    Sgd { lr: f32 },
    /// `acc += g²; w -= lr * g / sqrt(acc)`, with `acc` starting at `init_acc`.
    Adagrad { lr: f32, init_acc: f32 },
}

impl Optimizer {
    /// Applies one gradient to `w` (and its accumulators `acc`, same length).
    pub(crate) fn apply(&self, w: &mut [f32], acc: &mut [f32], g: &[f32]) {
        match *self {
            Optimizer::Sgd { lr } => w.iter_mut().zip(g).for_each(|(w, g)| *w -= lr * g),
            Optimizer::Adagrad { lr, .. } => {
                for ((w, a), g) in w.iter_mut().zip(acc.iter_mut()).zip(g) {
                    *a += g * g;
                    *w -= lr * g / a.sqrt();
                }
            }
        }
    }

    pub(crate) fn init_acc(&self) -> f32 {
        match *self {
            Optimizer::Sgd { .. } => 0.0,
            Optimizer::Adagrad { init_acc, .. } => init_acc,
        }
    }
}

/// A message to a PS shard.
pub enum PsMsg {
    /// Return the rows of `ids` (created on first sight), `row_len` floats each, in order.
    /// The rows are written into `buf` (its contents are overwritten; pass the `rows` of an
    /// earlier reply to recycle it, or `Vec::new()`), so a steady stream of lookups
    /// allocates, and page-faults, nothing.
    Lookup {
        tag: usize,
        ids: Vec<FeatureId>,
        buf: Vec<f32>,
        reply: Sender<LookupReply>,
    },
    /// Apply `grads` (`row_len` floats per id) to the rows of `ids`. Fire and forget.
    Update {
        ids: Vec<FeatureId>,
        grads: Vec<f32>,
    },
    /// Apply the dense gradient of this PS's slice (if any) and return the slice's values.
    DenseSync {
        tag: usize,
        grads: Option<Vec<f32>>,
        reply: Sender<DenseReply>,
    },
    /// Wait on the barrier: once every thread of every PS is in it, all earlier work is done.
    Barrier(Arc<Barrier>),
}

/// Answer to [`PsMsg::Lookup`].
pub struct LookupReply {
    pub tag: usize,
    pub rows: Vec<f32>,
    /// The request's IDs, handed back for reuse.
    pub ids: Vec<FeatureId>,
    /// CPU time the serving thread spent on this request.
    pub serve_ns: u64,
}

/// Answer to [`PsMsg::DenseSync`].
pub struct DenseReply {
    pub tag: usize,
    pub values: Vec<f32>,
}

/// Cumulative CPU time and counts of one PS shard's handlers.
#[derive(Debug, Default)]
pub struct PsStats {
    pub lookup_ns: AtomicU64,
    pub update_ns: AtomicU64,
    pub dense_ns: AtomicU64,
    pub lookup_requests: AtomicU64,
    pub rows_served: AtomicU64,
    /// CPU time of the shard's server threads over their whole lives, as a profiler sees it
    /// (waiting on the queue included where it spins); added as each thread exits.
    pub thread_ns: AtomicU64,
}

/// Plain-data copy of [`PsStats`] plus the table size.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PsSnapshot {
    pub lookup_ns: u64,
    pub update_ns: u64,
    pub dense_ns: u64,
    pub lookup_requests: u64,
    pub rows_served: u64,
    pub table_rows: u64,
}

struct Shard {
    optimizer: Optimizer,
    token: MeasureToken,
    table: EmbeddingTable,
    dense: Mutex<(Vec<f32>, Vec<f32>)>,
    stats: PsStats,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock means a PS thread panicked; the data is still usable for measurement.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shard {
    /// Gathers the rows of `ids` into `buf`. A recycled buffer of the right size is not
    /// cleared first: the gather overwrites every element.
    fn lookup(&self, ids: &[FeatureId], buf: &mut Vec<f32>) {
        buf.resize(ids.len() * self.table.row_len(), 0.0);
        self.table.gather(ids, buf);
    }

    fn dense_sync(&self, grads: Option<&[f32]>) -> Vec<f32> {
        let mut d = lock(&self.dense);
        let (w, acc) = &mut *d;
        if let Some(g) = grads {
            self.optimizer.apply(w, acc, g);
        }
        w.clone()
    }

    fn serve(&self, rx: Receiver<PsMsg>) {
        self.serve_loop(rx);
        self.stats
            .thread_ns
            .fetch_add(crate::cputime::thread_cpu_ns(), Ordering::Relaxed);
    }

    fn serve_loop(&self, rx: Receiver<PsMsg>) {
        while let Ok(msg) = rx.recv() {
            let st = &self.stats;
            match msg {
                PsMsg::Lookup {
                    tag,
                    ids,
                    mut buf,
                    reply,
                } => {
                    let ((), ns) = self.token.timed(|| self.lookup(&ids, &mut buf));
                    st.lookup_ns.fetch_add(ns, Ordering::Relaxed);
                    st.lookup_requests.fetch_add(1, Ordering::Relaxed);
                    st.rows_served
                        .fetch_add(ids.len() as u64, Ordering::Relaxed);
                    // A worker that died no longer listens; that is not the PS's problem.
                    let _ = reply.send(LookupReply {
                        tag,
                        rows: buf,
                        ids,
                        serve_ns: ns,
                    });
                }
                PsMsg::Update { ids, grads } => {
                    let ((), ns) = self.token.timed(|| self.table.update(&ids, &grads));
                    st.update_ns.fetch_add(ns, Ordering::Relaxed);
                }
                PsMsg::DenseSync { tag, grads, reply } => {
                    let (values, ns) = self.token.timed(|| self.dense_sync(grads.as_deref()));
                    st.dense_ns.fetch_add(ns, Ordering::Relaxed);
                    let _ = reply.send(DenseReply { tag, values });
                }
                PsMsg::Barrier(b) => {
                    b.wait();
                }
            }
        }
    }
}

/// All PS shards of a job and their server threads. Dropping it stops and joins the threads.
pub struct PsCluster {
    shards: Vec<Arc<Shard>>,
    senders: Vec<Sender<PsMsg>>,
    threads: Vec<JoinHandle<()>>,
    threads_per_ps: usize,
    dense_len: usize,
    token: MeasureToken,
}

impl PsCluster {
    /// Starts `num_ps` shards with `threads_per_ps` threads each, holding `initial_dense`
    /// (split by [`dense_range`]) and embedding rows of `row_len` floats.
    pub fn start(
        num_ps: usize,
        threads_per_ps: usize,
        row_len: usize,
        initial_dense: &[f32],
        optimizer: Optimizer,
        seed: u64,
    ) -> Self {
        Self::start_measured(
            num_ps,
            threads_per_ps,
            row_len,
            initial_dense,
            optimizer,
            seed,
            MeasureToken::shared(),
        )
    }

    /// Like [`PsCluster::start`], with handlers measured under `token`.
    pub fn start_measured(
        num_ps: usize,
        threads_per_ps: usize,
        row_len: usize,
        initial_dense: &[f32],
        optimizer: Optimizer,
        seed: u64,
        token: MeasureToken,
    ) -> Self {
        let (num_ps, tpp) = (num_ps.max(1), threads_per_ps.max(1));
        let mut cluster = PsCluster {
            shards: Vec::new(),
            senders: Vec::new(),
            threads: Vec::new(),
            threads_per_ps: tpp,
            dense_len: initial_dense.len(),
            token: token.clone(),
        };
        for j in 0..num_ps {
            let slice = initial_dense[dense_range(j, num_ps, initial_dense.len())].to_vec();
            let acc = vec![optimizer.init_acc(); slice.len()];
            let shard = Arc::new(Shard {
                optimizer,
                token: token.clone(),
                table: EmbeddingTable::new(row_len, optimizer, seed),
                dense: Mutex::new((slice, acc)),
                stats: PsStats::default(),
            });
            let (tx, rx) = bounded(QUEUE_DEPTH);
            for t in 0..tpp {
                let (s, rx) = (Arc::clone(&shard), rx.clone());
                let handle = std::thread::Builder::new()
                    .name(format!("ps{j}-t{t}"))
                    .spawn(move || s.serve(rx))
                    .expect("spawning a PS thread");
                cluster.threads.push(handle);
            }
            cluster.shards.push(shard);
            cluster.senders.push(tx);
        }
        cluster
    }

    /// Number of PS shards.
    pub fn num_ps(&self) -> usize {
        self.shards.len()
    }

    /// The token under which measured sections of this job run.
    pub fn token(&self) -> &MeasureToken {
        &self.token
    }

    /// Threads serving each shard.
    pub fn threads_per_ps(&self) -> usize {
        self.threads_per_ps
    }

    /// Sends `msg` to PS `ps`, blocking while its queue is full.
    pub fn send(&self, ps: usize, msg: PsMsg) {
        // Sending only fails once the cluster is dropped, which cannot happen while borrowed.
        let _ = self.senders[ps].send(msg);
    }

    /// Returns once every message sent before the call has been fully processed.
    pub fn quiesce(&self) {
        let b = Arc::new(Barrier::new(self.shards.len() * self.threads_per_ps + 1));
        for j in 0..self.shards.len() {
            for _ in 0..self.threads_per_ps {
                self.send(j, PsMsg::Barrier(Arc::clone(&b)));
            }
        }
        b.wait();
    }

    /// The current row of `id` without creating it (an unseen ID gets its initial row).
    pub fn peek_row(&self, id: FeatureId) -> Vec<f32> {
        self.shards[ps_of(id, self.shards.len())].table.peek(id)
    }

    /// The full dense parameter vector, concatenated from the shards.
    pub fn dense_params(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.dense_len);
        for s in &self.shards {
            out.extend_from_slice(&lock(&s.dense).0);
        }
        out
    }

    /// Per-shard statistics.
    pub fn snapshots(&self) -> Vec<PsSnapshot> {
        self.shards
            .iter()
            .map(|s| PsSnapshot {
                lookup_ns: s.stats.lookup_ns.load(Ordering::Relaxed),
                update_ns: s.stats.update_ns.load(Ordering::Relaxed),
                dense_ns: s.stats.dense_ns.load(Ordering::Relaxed),
                lookup_requests: s.stats.lookup_requests.load(Ordering::Relaxed),
                rows_served: s.stats.rows_served.load(Ordering::Relaxed),
                table_rows: s.table.len() as u64,
            })
            .collect()
    }
}

impl PsCluster {
    /// Stops and joins the server threads; returns each shard's thread CPU nanoseconds over
    /// the threads' whole lives (the profiler's view of the PS, see [`PsStats::thread_ns`]).
    pub fn stop(mut self) -> Vec<u64> {
        self.senders.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.shards
            .iter()
            .map(|s| s.stats.thread_ns.load(Ordering::Relaxed))
            .collect()
    }
}

impl Drop for PsCluster {
    fn drop(&mut self) {
        self.senders.clear(); // closes the queues; server loops end
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::feature_id;

    #[test]
    fn rows_are_created_on_first_sight_and_updated() {
        let ps = PsCluster::start(2, 2, 3, &[0.0; 10], Optimizer::Sgd { lr: 0.5 }, 1);
        let ids: Vec<FeatureId> = (0..50).map(|v| feature_id(1, v)).collect();
        let (tx, rx) = crossbeam_channel::unbounded();
        let owned: Vec<FeatureId> = ids.iter().copied().filter(|&i| ps_of(i, 2) == 0).collect();
        ps.send(
            0,
            PsMsg::Lookup {
                tag: 7,
                ids: owned.clone(),
                buf: vec![9.0; 3],
                reply: tx,
            },
        );
        let r = rx.recv().unwrap();
        assert_eq!((r.tag, r.rows.len()), (7, owned.len() * 3));
        assert_eq!(ps.snapshots()[0].table_rows, owned.len() as u64);
        let before = ps.peek_row(owned[0]);
        ps.send(
            0,
            PsMsg::Update {
                ids: vec![owned[0]],
                grads: vec![1.0, 1.0, 2.0],
            },
        );
        ps.quiesce();
        let after = ps.peek_row(owned[0]);
        assert!(
            (before[2] - 1.0 - after[2]).abs() < 1e-6,
            "{before:?} -> {after:?}"
        );
    }

    #[test]
    fn dense_sync_applies_and_returns_slice() {
        let ps = PsCluster::start(3, 1, 2, &[1.0; 9], Optimizer::Sgd { lr: 1.0 }, 1);
        let (tx, rx) = crossbeam_channel::unbounded();
        ps.send(
            1,
            PsMsg::DenseSync {
                tag: 1,
                grads: Some(vec![0.5; 3]),
                reply: tx,
            },
        );
        assert_eq!(rx.recv().unwrap().values, vec![0.5; 3]);
        assert_eq!(
            ps.dense_params(),
            vec![1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0]
        );
    }

    #[test]
    fn adagrad_steps_shrink() {
        let opt = Optimizer::Adagrad {
            lr: 1.0,
            init_acc: 0.0,
        };
        let (mut w, mut acc) = (vec![0.0f32], vec![0.0f32]);
        opt.apply(&mut w, &mut acc, &[2.0]);
        assert!((w[0] + 1.0).abs() < 1e-6);
        opt.apply(&mut w, &mut acc, &[2.0]);
        assert!((w[0] + 1.0 + 2.0 / 8f32.sqrt()).abs() < 1e-6);
    }
}
