//! A training worker: takes shards, and per batch deduplicates its IDs (a [`Dedup`], no
//! sort), looks up the rows, computes gradients batch-major on a persistent pool of
//! `threads` compute threads (one rayon pool per worker run, never a thread per batch),
//! reduces the per-thread gradients in parallel, pushes sparse gradients and synchronises
//! the dense parameters.
//!
//! Each phase is measured in CPU time of the threads doing it (see [`crate::cputime`]), in
//! sections that never hold the measurement token while waiting for a PS:
//! `emb` = worker-side planning/gathering + the slowest PS's serving time for this batch;
//! `grad` = the slowest compute thread + the worker's split/reduce work; `upd` and `sync` hold
//! only the worker-side packing here (the PS-side work is added from PS statistics).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_channel::unbounded;
use rayon::prelude::*;

use crate::cache::HotCache;
use crate::cputime::{thread_cpu_ns, MeasureToken};
use crate::data::{Dataset, Sample, NUM_SPARSE};
use crate::index::copy_row;
use crate::index::Dedup;
use crate::model::{forward_backward_into, ModelSpec, SampleRows, Scratch};
use crate::plan::{dense_range, request_groups, FeatureId};
use crate::ps::{PsCluster, PsMsg};
use crate::shard::ShardQueue;

/// Per-worker counters, summed over the batches it ran.
#[derive(Debug, Clone, Default)]
pub struct WorkerStats {
    pub iterations: u64,
    pub samples: u64,
    pub loss_sum: f64,
    pub grad_ns: u64,
    pub emb_ns: u64,
    pub upd_ns: u64,
    pub sync_ns: u64,
    pub lookup_requests: u64,
    /// CPU time of the worker's thread and its compute threads over their whole lives, as
    /// a profiler sees it: waiting that spins or polls counts (see [`run_worker`]).
    pub cpu_ns: u64,
    /// Per-iteration `grad` and `emb` nanoseconds (for robust medians).
    pub grad_iter_ns: Vec<u64>,
    pub emb_iter_ns: Vec<u64>,
}

/// How a worker's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerExit {
    /// The queue ran dry.
    Finished,
    /// Fault injection killed it mid-shard.
    Killed,
}

/// What a worker needs, borrowed from the training run.
pub struct WorkerEnv<'a> {
    pub index: usize,
    pub spec: &'a ModelSpec,
    pub ps: &'a PsCluster,
    pub data: &'a dyn Dataset,
    pub queue: &'a ShardQueue,
    pub batch: usize,
    pub threads: usize,
    pub packed: bool,
    /// Kill the worker before its batch number `kill_before` (counted from 0 in this run).
    pub kill_before: Option<u64>,
    /// Serialises measured compute sections (calibration).
    pub token: &'a MeasureToken,
}

/// What one compute chunk of a batch owns: its scratch, its gradients and its timing.
#[derive(Default)]
struct ChunkBuf {
    scratch: Scratch,
    dense: Vec<f32>,
    /// Per (sample, field) row gradients, as the model writes them.
    per_field: Vec<f32>,
    /// The same summed per unique ID of the batch (`row_len` floats per unique slot).
    sparse: Vec<f32>,
    loss: f64,
    ns: u64,
}

/// A worker's buffers, reused across batches: a step allocates little once warm.
struct WorkerState {
    /// The compute threads (`None` with one thread: the worker's own thread computes).
    pool: Option<rayon::ThreadPool>,
    samples: Vec<Sample>,
    /// The batch's IDs deduplicated; `slots[k * NUM_SPARSE + f]` is sample `k`'s field `f`.
    ids: Dedup,
    /// The rows of `unique`, `row_len` floats each.
    rows: Vec<f32>,
    chunks: Vec<ChunkBuf>,
    dense: Vec<f32>,
    sparse: Vec<f32>,
    /// Lookup request and reply buffers handed back by the PSes, reused by the next batch.
    spare: Vec<(Vec<FeatureId>, Vec<f32>)>,
}

/// CPU nanoseconds of a worker's compute threads, added as each exits, and how many have.
#[derive(Default)]
struct PoolCpu {
    ns: AtomicU64,
    exited: AtomicUsize,
}

impl WorkerState {
    fn new(threads: usize, pool_cpu: &Arc<PoolCpu>) -> Self {
        // A pool that cannot be built (thread limits) degrades to computing on one thread.
        let pool = (threads > 1)
            .then(|| {
                let cpu = Arc::clone(pool_cpu);
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|t| format!("worker-compute-{t}"))
                    .exit_handler(move |_| {
                        cpu.ns.fetch_add(thread_cpu_ns(), Ordering::Relaxed);
                        cpu.exited.fetch_add(1, Ordering::Release);
                    })
                    .build()
                    .ok()
            })
            .flatten();
        WorkerState {
            pool,
            samples: Vec::new(),
            ids: Dedup::default(),
            rows: Vec::new(),
            chunks: Vec::new(),
            dense: Vec::new(),
            sparse: Vec::new(),
            spare: Vec::new(),
        }
    }
}

/// Runs the worker loop until the queue is empty or the worker is killed. Call it on a
/// thread of its own: `cpu_ns` of the result counts this thread's CPU time since it started,
/// plus its compute threads' (collected once the pool has shut down).
pub fn run_worker(
    env: &WorkerEnv,
    params: &mut Vec<f32>,
    cache: &mut HotCache,
) -> (WorkerStats, WorkerExit) {
    let pool_cpu = Arc::new(PoolCpu::default());
    let mut ws = WorkerState::new(env.threads.max(1), &pool_cpu);
    let pool_threads = ws
        .pool
        .as_ref()
        .map_or(0, rayon::ThreadPool::current_num_threads);
    let (mut st, exit) = worker_loop(env, &mut ws, params, cache);
    drop(ws);
    // A dropped rayon pool stops its threads asynchronously: wait (bounded) for their exit
    // handlers, so their CPU time is in the total.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while pool_cpu.exited.load(Ordering::Acquire) < pool_threads
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    st.cpu_ns = thread_cpu_ns() + pool_cpu.ns.load(Ordering::Relaxed);
    (st, exit)
}

fn worker_loop(
    env: &WorkerEnv,
    ws: &mut WorkerState,
    params: &mut Vec<f32>,
    cache: &mut HotCache,
) -> (WorkerStats, WorkerExit) {
    let mut st = WorkerStats::default();
    while let Some(shard) = env.queue.take(env.index) {
        let mut start = shard.start;
        while start < shard.end {
            if env.kill_before == Some(st.iterations) {
                return (st, WorkerExit::Killed);
            }
            let end = (start + env.batch as u64).min(shard.end);
            ws.samples.clear();
            ws.samples.extend((start..end).map(|i| env.data.sample(i)));
            train_batch(env, ws, params, cache, &mut st);
            start = end;
        }
        env.queue.commit(env.index);
    }
    (st, WorkerExit::Finished)
}

/// Deduplicates the batch's IDs into `ws.ids` and fetches their rows into `ws.rows` (cache
/// first, then the plan's requests: one per PS, or per (PS, field) unpacked). Returns
/// `(worker ns, slowest PS's serving ns)`. Worker-side work is measured under the token in
/// two sections (before sending, after all replies arrived) so that neither holds it while
/// waiting for a PS.
fn lookup(
    env: &WorkerEnv,
    ws: &mut WorkerState,
    cache: &mut HotCache,
    st: &mut WorkerStats,
) -> (u64, u64) {
    let rl = env.spec.row_len();
    let num_ps = env.ps.num_ps();
    let (requests, ns_before) = env.token.timed(|| {
        let WorkerState {
            samples,
            ids,
            rows,
            spare,
            ..
        } = ws;
        let n = samples.len() * NUM_SPARSE;
        ids.run(samples.iter().flat_map(|s| s.sparse), n);
        let unique = &ids.unique;
        rows.clear();
        rows.resize(unique.len() * rl, 0.0);
        let misses: Vec<u32> = if cache.is_off() {
            (0..unique.len() as u32).collect()
        } else {
            cache.split_into(unique, rows, rl)
        };
        let miss_ids: Vec<FeatureId> = misses.iter().map(|&u| unique[u as usize]).collect();
        request_groups(&miss_ids, num_ps, env.packed)
            .into_iter()
            .map(|(ps, _, members)| {
                let positions: Vec<u32> = members.iter().map(|&m| misses[m as usize]).collect();
                let (mut ids, buf) = spare.pop().unwrap_or_default();
                ids.clear();
                ids.extend(members.iter().map(|&m| miss_ids[m as usize]));
                (ps, positions, ids, buf)
            })
            .collect::<Vec<_>>()
    });
    let (tx, rx) = unbounded();
    let mut positions = Vec::with_capacity(requests.len());
    for (tag, (ps, pos, ids, buf)) in requests.into_iter().enumerate() {
        positions.push((ps, pos));
        let reply = tx.clone();
        env.ps.send(
            ps,
            PsMsg::Lookup {
                tag,
                ids,
                buf,
                reply,
            },
        );
    }
    st.lookup_requests += positions.len() as u64;
    let replies: Vec<_> = (0..positions.len()).map_while(|_| rx.recv().ok()).collect();
    let mut serve_per_ps = vec![0u64; num_ps];
    let ((), ns_after) = env.token.timed(|| {
        for reply in &replies {
            let (ps, pos) = &positions[reply.tag];
            serve_per_ps[*ps] += reply.serve_ns;
            for (k, &u) in pos.iter().enumerate() {
                let row = &reply.rows[k * rl..(k + 1) * rl];
                copy_row(&mut ws.rows[u as usize * rl..(u as usize + 1) * rl], row);
                if !cache.is_off() {
                    cache.fill(ws.ids.unique[u as usize], row);
                }
            }
        }
    });
    ws.spare
        .extend(replies.into_iter().map(|r| (r.ids, r.rows)));
    let ps_ns = serve_per_ps.into_iter().max().unwrap_or(0);
    (ns_before + ns_after, ps_ns)
}

/// Forward and backward of one chunk (samples `base..base + len` of the batch), its row
/// gradients summed per unique ID into `buf.sparse`.
fn compute_chunk(
    env: &WorkerEnv,
    params: &[f32],
    samples: &[Sample],
    slots: &[u32],
    rows: &[f32],
    unique_len: usize,
    buf: &mut ChunkBuf,
) {
    let rl = env.spec.row_len();
    let ((), ns) = env.token.timed(|| {
        buf.dense.clear();
        buf.dense.resize(params.len(), 0.0);
        buf.per_field.resize(samples.len() * NUM_SPARSE * rl, 0.0);
        let rows_of = |k: usize| -> SampleRows<'_> {
            std::array::from_fn(|f| {
                let s = slots[k * NUM_SPARSE + f] as usize;
                &rows[s * rl..(s + 1) * rl]
            })
        };
        buf.loss = forward_backward_into(
            env.spec,
            params,
            samples,
            rows_of,
            &mut buf.scratch,
            &mut buf.dense,
            &mut buf.per_field,
        );
        buf.sparse.clear();
        buf.sparse.resize(unique_len * rl, 0.0);
        for (src, &u) in buf.per_field.chunks_exact(rl).zip(slots) {
            let dst = &mut buf.sparse[u as usize * rl..(u as usize + 1) * rl];
            dst.iter_mut().zip(src).for_each(|(d, v)| *d += v);
        }
    });
    buf.ns = ns;
}

/// `out = scale * sum of parts`, in `threads` contiguous ranges on the pool; returns the
/// slowest range's CPU nanoseconds (the reduction's critical path).
fn reduce_into(env: &WorkerEnv, parts: &[&[f32]], out: &mut [f32], scale: f32) -> u64 {
    let ranges = env.threads.max(1);
    let len = out.len().div_ceil(ranges).max(1);
    out.par_chunks_mut(len)
        .enumerate()
        .map(|(r, dst)| {
            env.token
                .timed(|| {
                    let start = r * len;
                    dst.fill(0.0);
                    for p in parts {
                        let src = &p[start..start + dst.len()];
                        dst.iter_mut().zip(src).for_each(|(d, v)| *d += v);
                    }
                    dst.iter_mut().for_each(|d| *d *= scale);
                })
                .1
        })
        .max()
        .unwrap_or(0)
}

fn train_batch(
    env: &WorkerEnv,
    ws: &mut WorkerState,
    params: &mut Vec<f32>,
    cache: &mut HotCache,
    st: &mut WorkerStats,
) {
    let rl = env.spec.row_len();
    let (worker_ns, ps_ns) = lookup(env, ws, cache, st);
    st.emb_ns += worker_ns + ps_ns;
    st.emb_iter_ns.push(worker_ns + ps_ns);

    // Gradient computation on the worker's compute threads, one contiguous chunk each.
    let m = ws.samples.len();
    let threads = env.threads.max(1);
    let chunk = m.div_ceil(threads).max(1);
    let n_chunks = m.div_ceil(chunk);
    ws.chunks
        .resize_with(n_chunks.max(ws.chunks.len()), ChunkBuf::default);
    let unique_len = ws.ids.unique.len();
    let WorkerState {
        pool,
        samples,
        ids,
        rows,
        chunks,
        dense,
        sparse,
        ..
    } = ws;
    let p = &**params;
    let chunks = &mut chunks[..n_chunks];
    let mut work = || {
        chunks.par_iter_mut().enumerate().for_each(|(c, buf)| {
            let range = c * chunk..((c + 1) * chunk).min(m);
            let sl = &ids.slots[range.start * NUM_SPARSE..range.end * NUM_SPARSE];
            let s = &samples[range];
            compute_chunk(env, p, s, sl, rows, unique_len, buf);
        });
        let scale = 1.0 / m as f32;
        dense.resize(p.len(), 0.0);
        sparse.resize(unique_len * rl, 0.0);
        let d: Vec<&[f32]> = chunks.iter().map(|b| b.dense.as_slice()).collect();
        let s: Vec<&[f32]> = chunks.iter().map(|b| b.sparse.as_slice()).collect();
        reduce_into(env, &d, dense, scale) + reduce_into(env, &s, sparse, scale)
    };
    let reduce_ns = match pool {
        Some(pool) => pool.install(&mut work),
        None => work(),
    };
    st.loss_sum += chunks.iter().map(|b| b.loss).sum::<f64>();
    let slowest = chunks.iter().map(|b| b.ns).max().unwrap_or(0);
    st.grad_ns += slowest + reduce_ns;
    st.grad_iter_ns.push(slowest + reduce_ns);

    // Sparse push: one packed message per PS, fire and forget (sent outside the token, since a
    // full queue blocks).
    let num_ps = env.ps.num_ps();
    let (updates, upd_ns) = env.token.timed(|| {
        request_groups(&ws.ids.unique, num_ps, true)
            .into_iter()
            .map(|(ps, _, members)| {
                let mut grads = Vec::with_capacity(members.len() * rl);
                for &u in &members {
                    grads.extend_from_slice(&ws.sparse[u as usize * rl..(u as usize + 1) * rl]);
                }
                let ids = members.iter().map(|&u| ws.ids.unique[u as usize]).collect();
                (ps, PsMsg::Update { ids, grads })
            })
            .collect::<Vec<_>>()
    });
    for (ps, msg) in updates {
        env.ps.send(ps, msg);
    }
    st.upd_ns += upd_ns;

    // Dense push + pull.
    let dense = &ws.dense;
    let (slices, pack_ns) = env.token.timed(|| {
        (0..num_ps)
            .map(|j| dense[dense_range(j, num_ps, dense.len())].to_vec())
            .collect::<Vec<_>>()
    });
    let (tx, rx) = unbounded();
    for (j, g) in slices.into_iter().enumerate() {
        env.ps.send(
            j,
            PsMsg::DenseSync {
                tag: j,
                grads: Some(g),
                reply: tx.clone(),
            },
        );
    }
    let replies: Vec<_> = (0..num_ps).map_while(|_| rx.recv().ok()).collect();
    let ((), unpack_ns) = env.token.timed(|| {
        for r in replies {
            let range = dense_range(r.tag, num_ps, params.len());
            params[range].copy_from_slice(&r.values);
        }
    });
    st.sync_ns += pack_ns + unpack_ns;
    st.iterations += 1;
    st.samples += m as u64;
}
