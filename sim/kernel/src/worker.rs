//! A training worker: takes shards, and per batch looks up embeddings, computes gradients on
//! `threads` scoped threads, pushes sparse gradients and synchronises the dense parameters.
//!
//! Each phase is measured in CPU time of the threads doing it (see [`crate::cputime`]):
//! `emb` = worker-side planning/gathering + the slowest PS's serving time for this batch;
//! `grad` = the slowest compute thread + the worker's split/reduce work; `upd` and `sync` hold
//! only the worker-side packing here (the PS-side work is added from PS statistics).

use crossbeam_channel::unbounded;

use crate::cache::HotCache;
use crate::cputime::{thread_cpu_ns, MeasureToken};
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

/// Looks up the batch's rows; returns `(unique ids, rows, slots per sample, PS-side ns)`.
fn lookup(
    env: &WorkerEnv,
    samples: &[Sample],
    cache: &mut HotCache,
    st: &mut WorkerStats,
) -> (Vec<FeatureId>, Vec<f32>, Vec<[u32; NUM_SPARSE]>, u64) {
    let rl = env.spec.row_len();
    let ids: Vec<FeatureId> = samples.iter().flat_map(|s| s.sparse).collect();
    let unique = crate::plan::unique_sorted(&ids);
    let (hits, misses) = cache.split(&unique);
    let mut rows = vec![0.0f32; unique.len() * rl];
    for (k, row) in hits {
        rows[k * rl..(k + 1) * rl].copy_from_slice(&row);
    }
    let plan = plan_lookup(&misses, env.ps.num_ps(), env.packed);
    let (tx, rx) = unbounded();
    for (tag, r) in plan.requests.iter().enumerate() {
        env.ps.send(
            r.ps,
            PsMsg::Lookup {
                tag,
                ids: r.ids.clone(),
                reply: tx.clone(),
            },
        );
    }
    st.lookup_requests += plan.requests.len() as u64;
    let mut serve_per_ps = vec![0u64; env.ps.num_ps()];
    for _ in 0..plan.requests.len() {
        let Ok(reply) = rx.recv() else { break };
        let req = &plan.requests[reply.tag];
        serve_per_ps[req.ps] += reply.serve_ns;
        for (k, id) in req.ids.iter().enumerate() {
            let slot = unique.binary_search(id).unwrap_or_default();
            let row = &reply.rows[k * rl..(k + 1) * rl];
            rows[slot * rl..(slot + 1) * rl].copy_from_slice(row);
            cache.fill(*id, row);
        }
    }
    let slots = samples
        .iter()
        .map(|s| {
            std::array::from_fn(|f| unique.binary_search(&s.sparse[f]).unwrap_or_default() as u32)
        })
        .collect();
    let ps_ns = serve_per_ps.into_iter().max().unwrap_or(0);
    (unique, rows, slots, ps_ns)
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
    let t0 = thread_cpu_ns();
    let (unique, rows, slots, ps_ns) = lookup(env, samples, cache, st);
    let t1 = thread_cpu_ns();
    st.emb_ns += t1 - t0 + ps_ns;

    // Gradient computation over `threads` scoped threads, one contiguous chunk each.
    let chunk = samples.len().div_ceil(env.threads.max(1));
    let rows_of = |base: usize| rows_for(&rows, &slots, rl, base);
    let mut results: Vec<(ChunkGrad, u64)> = Vec::new();
    let mut own_ns = 0;
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
        let first = env.token.timed(|| {
            forward_backward(
                env.spec,
                params,
                &samples[..chunk.min(samples.len())],
                rows_of(0),
            )
        });
        own_ns = first.1;
        results.push(first);
        results.extend(handles.into_iter().filter_map(|h| h.join().ok()));
    });
    let scale = 1.0 / samples.len() as f32;
    let mut dense = vec![0.0f32; params.len()];
    let mut sparse = vec![0.0f32; unique.len() * rl];
    for (c, (g, _)) in results.iter().enumerate() {
        st.loss_sum += g.loss_sum;
        dense
            .iter_mut()
            .zip(&g.dense)
            .for_each(|(d, v)| *d += v * scale);
        for (k, sl) in slots[c * chunk..]
            .iter()
            .take(g.sparse.len() / (NUM_SPARSE * rl))
            .enumerate()
        {
            for f in 0..NUM_SPARSE {
                let src = &g.sparse[(k * NUM_SPARSE + f) * rl..(k * NUM_SPARSE + f + 1) * rl];
                let dst = &mut sparse[sl[f] as usize * rl..(sl[f] as usize + 1) * rl];
                dst.iter_mut().zip(src).for_each(|(d, v)| *d += v * scale);
            }
        }
    }
    let t2 = thread_cpu_ns();
    let slowest = results.iter().map(|r| r.1).max().unwrap_or(0);
    st.grad_ns += slowest + (t2 - t1).saturating_sub(own_ns);

    // Sparse push: one packed message per PS, fire and forget.
    let plan = plan_lookup(&unique, env.ps.num_ps(), true);
    for r in plan.requests {
        let mut grads = Vec::with_capacity(r.ids.len() * rl);
        for id in &r.ids {
            let slot = unique.binary_search(id).unwrap_or_default();
            grads.extend_from_slice(&sparse[slot * rl..(slot + 1) * rl]);
        }
        env.ps.send(r.ps, PsMsg::Update { ids: r.ids, grads });
    }
    let t3 = thread_cpu_ns();
    st.upd_ns += t3 - t2;

    // Dense push + pull.
    let p = env.ps.num_ps();
    let (tx, rx) = unbounded();
    for j in 0..p {
        let g = dense[dense_range(j, p, dense.len())].to_vec();
        env.ps.send(
            j,
            PsMsg::DenseSync {
                tag: j,
                grads: Some(g),
                reply: tx.clone(),
            },
        );
    }
    for _ in 0..p {
        let Ok(r) = rx.recv() else { break };
        let range = dense_range(r.tag, p, params.len());
        params[range].copy_from_slice(&r.values);
    }
    st.sync_ns += thread_cpu_ns() - t3;
    st.iterations += 1;
    st.samples += samples.len() as u64;
}
