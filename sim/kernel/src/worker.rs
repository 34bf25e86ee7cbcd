//! A training worker: takes shards, and per batch looks up embeddings, computes gradients on
//! `threads` scoped threads, pushes sparse gradients and synchronises the dense parameters.
//!
//! Each phase is measured in CPU time of the threads doing it (see [`crate::cputime`]), in
//! sections that never hold the measurement token while waiting for a PS:
//! `emb` = worker-side planning/gathering + the slowest PS's serving time for this batch;
//! `grad` = the slowest compute thread + the worker's split/reduce work; `upd` and `sync` hold
//! only the worker-side packing here (the PS-side work is added from PS statistics).

use crossbeam_channel::unbounded;

use crate::cache::HotCache;
use crate::cputime::MeasureToken;
use crate::data::{Dataset, Sample, NUM_SPARSE};
use crate::model::{forward_backward, ChunkGrad, ModelSpec, SampleRows};
use crate::plan::{dense_range, plan_lookup, FeatureId};
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

/// Runs the worker loop until the queue is empty or the worker is killed.
pub fn run_worker(
    env: &WorkerEnv,
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
            let samples: Vec<Sample> = (start..end).map(|i| env.data.sample(i)).collect();
            train_batch(env, &samples, params, cache, &mut st);
            start = end;
        }
        env.queue.commit(env.index);
    }
    (st, WorkerExit::Finished)
}

/// Looks up the batch's rows; returns `(unique ids, rows, slots per sample, worker ns, PS ns)`.
/// Worker-side work is measured under the token in two sections (before sending, after all
/// replies arrived) so that neither holds it while waiting for a PS.
#[allow(clippy::type_complexity)]
fn lookup(
    env: &WorkerEnv,
    samples: &[Sample],
    cache: &mut HotCache,
    st: &mut WorkerStats,
) -> (Vec<FeatureId>, Vec<f32>, Vec<[u32; NUM_SPARSE]>, u64, u64) {
    let rl = env.spec.row_len();
    let ((unique, mut rows, plan), ns_before) = env.token.timed(|| {
        let ids: Vec<FeatureId> = samples.iter().flat_map(|s| s.sparse).collect();
        let unique = crate::plan::unique_sorted(&ids);
        let (hits, misses) = cache.split(&unique);
        let mut rows = vec![0.0f32; unique.len() * rl];
        for (k, row) in hits {
            rows[k * rl..(k + 1) * rl].copy_from_slice(&row);
        }
        (
            unique,
            rows,
            plan_lookup(&misses, env.ps.num_ps(), env.packed),
        )
    });
    let (tx, rx) = unbounded();
    for (tag, r) in plan.requests.iter().enumerate() {
        let reply = tx.clone();
        env.ps.send(
            r.ps,
            PsMsg::Lookup {
                tag,
                ids: r.ids.clone(),
                reply,
            },
        );
    }
    st.lookup_requests += plan.requests.len() as u64;
    let replies: Vec<_> = (0..plan.requests.len())
        .map_while(|_| rx.recv().ok())
        .collect();
    let mut serve_per_ps = vec![0u64; env.ps.num_ps()];
    let (slots, ns_after) = env.token.timed(|| {
        for reply in &replies {
            let req = &plan.requests[reply.tag];
            serve_per_ps[req.ps] += reply.serve_ns;
            for (k, id) in req.ids.iter().enumerate() {
                let slot = unique.binary_search(id).unwrap_or_default();
                let row = &reply.rows[k * rl..(k + 1) * rl];
                rows[slot * rl..(slot + 1) * rl].copy_from_slice(row);
                cache.fill(*id, row);
            }
        }
        samples
            .iter()
            .map(|s| {
                std::array::from_fn(|f| {
                    unique.binary_search(&s.sparse[f]).unwrap_or_default() as u32
                })
            })
            .collect()
    });
    let ps_ns = serve_per_ps.into_iter().max().unwrap_or(0);
    (unique, rows, slots, ns_before + ns_after, ps_ns)
}

/// Row accessor for the samples of one chunk starting at batch position `base`.
fn rows_for<'a>(
    rows: &'a [f32],
    slots: &'a [[u32; NUM_SPARSE]],
    rl: usize,
    base: usize,
) -> impl Fn(usize) -> SampleRows<'a> + Send + 'a {
    move |k| {
        std::array::from_fn(|f| {
            let s = slots[base + k][f] as usize;
            &rows[s * rl..(s + 1) * rl]
        })
    }
}

fn train_batch(
    env: &WorkerEnv,
    samples: &[Sample],
    params: &mut Vec<f32>,
    cache: &mut HotCache,
    st: &mut WorkerStats,
) {
    let rl = env.spec.row_len();
    let (unique, rows, slots, worker_ns, ps_ns) = lookup(env, samples, cache, st);
    st.emb_ns += worker_ns + ps_ns;
    st.emb_iter_ns.push(worker_ns + ps_ns);

    // Gradient computation over `threads` scoped threads, one contiguous chunk each.
    let chunk = samples.len().div_ceil(env.threads.max(1));
    let rows_of = |base: usize| rows_for(&rows, &slots, rl, base);
    let mut results: Vec<(ChunkGrad, u64)> = Vec::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = samples
            .chunks(chunk)
            .enumerate()
            .skip(1)
            .map(|(c, part)| {
                let f = rows_of(c * chunk);
                let p = &*params;
                scope.spawn(move || env.token.timed(|| forward_backward(env.spec, p, part, f)))
            })
            .collect();
        let first = &samples[..chunk.min(samples.len())];
        results.push(
            env.token
                .timed(|| forward_backward(env.spec, params, first, rows_of(0))),
        );
        results.extend(handles.into_iter().filter_map(|h| h.join().ok()));
    });
    let ((dense, sparse), reduce_ns) = env.token.timed(|| {
        let scale = 1.0 / samples.len() as f32;
        let mut dense = vec![0.0f32; params.len()];
        let mut sparse = vec![0.0f32; unique.len() * rl];
        for (c, (g, _)) in results.iter().enumerate() {
            st.loss_sum += g.loss_sum;
            dense
                .iter_mut()
                .zip(&g.dense)
                .for_each(|(d, v)| *d += v * scale);
            let n = g.sparse.len() / (NUM_SPARSE * rl);
            for (k, sl) in slots[c * chunk..].iter().take(n).enumerate() {
                for f in 0..NUM_SPARSE {
                    let src = &g.sparse[(k * NUM_SPARSE + f) * rl..(k * NUM_SPARSE + f + 1) * rl];
                    let dst = &mut sparse[sl[f] as usize * rl..(sl[f] as usize + 1) * rl];
                    dst.iter_mut().zip(src).for_each(|(d, v)| *d += v * scale);
                }
            }
        }
        (dense, sparse)
    });
    let slowest = results.iter().map(|r| r.1).max().unwrap_or(0);
    st.grad_ns += slowest + reduce_ns;
    st.grad_iter_ns.push(slowest + reduce_ns);

    // Sparse push: one packed message per PS, fire and forget (sent outside the token, since a
    // full queue blocks).
    let (updates, upd_ns) = env.token.timed(|| {
        let plan = plan_lookup(&unique, env.ps.num_ps(), true);
        plan.requests
            .into_iter()
            .map(|r| {
                let mut grads = Vec::with_capacity(r.ids.len() * rl);
                for id in &r.ids {
                    let slot = unique.binary_search(id).unwrap_or_default();
                    grads.extend_from_slice(&sparse[slot * rl..(slot + 1) * rl]);
                }
                (r.ps, PsMsg::Update { ids: r.ids, grads })
            })
            .collect::<Vec<_>>()
    });
    for (ps, msg) in updates {
        env.ps.send(ps, msg);
    }
    st.upd_ns += upd_ns;

    // Dense push + pull.
    let p = env.ps.num_ps();
    let (slices, pack_ns) = env.token.timed(|| {
        (0..p)
            .map(|j| dense[dense_range(j, p, dense.len())].to_vec())
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
    let replies: Vec<_> = (0..p).map_while(|_| rx.recv().ok()).collect();
    let ((), unpack_ns) = env.token.timed(|| {
        for r in replies {
            let range = dense_range(r.tag, p, params.len());
            params[range].copy_from_slice(&r.values);
        }
    });
    st.sync_ns += pack_ns + unpack_ns;
    st.iterations += 1;
    st.samples += samples.len() as u64;
}
