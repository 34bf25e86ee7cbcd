//! A training run: start the PSes, run workers over sharded epochs, evaluate, report.
//!
//! The master (the calling thread) spawns one OS thread per worker per epoch, watches for
//! workers that exit, and re-queues the shard of any worker killed by fault injection.
//! Training is asynchronous: workers never wait for each other, only for their own lookups and
//! dense pulls. With more than one thread the interleaving (and so the exact loss) depends on
//! the OS scheduler; the sample stream and all initial values do not.

use std::time::Instant;

use dlsim_fit::PartTimes;
use serde::{Deserialize, Serialize};

use crate::cache::HotCache;
use crate::cputime::MeasureToken;
use crate::data::Dataset;
use crate::metrics::{auc, logloss};
use crate::model::{predict, ModelSpec, SampleRows};
use crate::ps::{Optimizer, PsCluster, PsSnapshot};
use crate::shard::ShardQueue;
use crate::worker::{run_worker, WorkerEnv, WorkerExit, WorkerStats};

/// Kill worker `worker` in epoch `epoch` just before its batch number `before_batch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerKill {
    pub worker: usize,
    pub epoch: u32,
    pub before_batch: u64,
}

/// Fault injection, as configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultConfig {
    pub kills: Vec<WorkerKill>,
}

/// Everything that defines a training run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    pub workers: usize,
    pub ps: usize,
    /// Compute threads per worker (`lambda_w`).
    pub worker_threads: usize,
    /// Server threads per PS (`lambda_p`).
    pub ps_threads: usize,
    /// Batch size `m`.
    pub batch: usize,
    pub spec: ModelSpec,
    pub optimizer: Optimizer,
    /// PICASSO packing: one lookup request per PS instead of one per (field, PS).
    pub packed: bool,
    /// Hot-ID cache rows per worker (0 = no cache).
    pub cache_rows: usize,
    pub cache_refresh_batches: u64,
    /// Batches per data shard.
    pub shard_batches: usize,
    pub epochs: u32,
    pub seed: u64,
    pub faults: FaultConfig,
    /// Run measured sections one at a time for clean CPU times (see `MeasureToken`).
    #[serde(default)]
    pub exclusive_measurement: bool,
}

impl TrainConfig {
    /// A small Wide&Deep configuration suitable for tests.
    pub fn small(workers: usize, ps: usize) -> Self {
        TrainConfig {
            workers,
            ps,
            worker_threads: 1,
            ps_threads: 1,
            batch: 128,
            spec: ModelSpec {
                emb_dim: 4,
                hidden: vec![16],
            },
            optimizer: Optimizer::Adagrad {
                lr: 0.05,
                init_acc: 0.1,
            },
            packed: true,
            cache_rows: 0,
            cache_refresh_batches: 20,
            shard_batches: 4,
            epochs: 1,
            seed: 1,
            faults: FaultConfig::default(),
            exclusive_measurement: false,
        }
    }
}

/// Per-epoch results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EpochReport {
    pub epoch: u32,
    pub train_logloss: f64,
    pub eval_auc: f64,
    pub eval_logloss: f64,
}

/// Results of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainReport {
    /// Evaluation before any training.
    pub initial_auc: f64,
    pub epochs: Vec<EpochReport>,
    /// Mean per-iteration time of each model part, dedicated-core CPU seconds.
    pub parts: PartTimes,
    pub iterations: u64,
    pub wall_s: f64,
    /// Samples trained per wall-clock second on this (possibly oversubscribed) machine.
    pub wall_samples_per_s: f64,
    /// Over all epochs: how many times each sample's shard was committed.
    pub commit_counts: Vec<u32>,
    pub requeued_shards: u32,
    pub killed_workers: u32,
    pub cache_hit_ratio: f64,
    pub lookup_requests: u64,
    /// CPU seconds of all worker threads and their compute threads over the run, as a
    /// profiler sees them (`top`'s view: spinning and polling count). Over `wall_s`, the
    /// workers' busy cores. Meaningful when the machine has a core per thread.
    #[serde(default)]
    pub worker_cpu_s: f64,
    /// The same for all PS server threads (evaluation's lookups included).
    #[serde(default)]
    pub ps_cpu_s: f64,
    pub ps: Vec<PsSnapshot>,
}

/// Evaluates the current model on `eval` (AUC, log loss).
pub fn evaluate(spec: &ModelSpec, ps: &PsCluster, eval: &dyn Dataset) -> (f64, f64) {
    let params = ps.dense_params();
    let mut probs = Vec::with_capacity(eval.len() as usize);
    let mut labels = Vec::with_capacity(eval.len() as usize);
    for i in 0..eval.len() {
        let s = eval.sample(i);
        let rows: Vec<Vec<f32>> = s.sparse.iter().map(|&id| ps.peek_row(id)).collect();
        let r: SampleRows = std::array::from_fn(|f| rows[f].as_slice());
        probs.push(f64::from(predict(spec, &params, &s, &r)));
        labels.push(s.label);
    }
    (auc(&probs, &labels), logloss(&probs, &labels))
}

fn add(a: &mut WorkerStats, b: &WorkerStats) {
    a.iterations += b.iterations;
    a.samples += b.samples;
    a.loss_sum += b.loss_sum;
    a.grad_ns += b.grad_ns;
    a.emb_ns += b.emb_ns;
    a.upd_ns += b.upd_ns;
    a.sync_ns += b.sync_ns;
    a.lookup_requests += b.lookup_requests;
    a.cpu_ns += b.cpu_ns;
    a.grad_iter_ns.extend_from_slice(&b.grad_iter_ns);
    a.emb_iter_ns.extend_from_slice(&b.emb_iter_ns);
}

/// Runs one epoch; returns the summed worker stats and the number of killed workers.
fn run_epoch(
    cfg: &TrainConfig,
    epoch: u32,
    ps: &PsCluster,
    data: &dyn Dataset,
    queue: &ShardQueue,
    params: &[Vec<f32>],
    caches: &mut [HotCache],
) -> (WorkerStats, u32, Vec<Vec<f32>>) {
    let mut total = WorkerStats::default();
    let mut killed = 0;
    let mut new_params = params.to_vec();
    std::thread::scope(|scope| {
        let (tx, rx) = crossbeam_channel::unbounded();
        for ((w, p), cache) in new_params.iter_mut().enumerate().zip(caches.iter_mut()) {
            let kill_before = cfg
                .faults
                .kills
                .iter()
                .find(|k| k.worker == w && k.epoch == epoch)
                .map(|k| k.before_batch);
            let env = WorkerEnv {
                index: w,
                spec: &cfg.spec,
                ps,
                data,
                queue,
                batch: cfg.batch,
                threads: cfg.worker_threads,
                packed: cfg.packed,
                kill_before,
                token: ps.token(),
            };
            let tx = tx.clone();
            scope.spawn(move || {
                let (st, exit) = run_worker(&env, p, cache);
                let _ = tx.send((w, st, exit));
            });
        }
        drop(tx);
        // The master: notice each worker's exit; a killed worker's shard goes back to TODO.
        for (w, st, exit) in rx.iter() {
            if exit == WorkerExit::Killed {
                queue.fail(w);
                killed += 1;
            }
            add(&mut total, &st);
        }
    });
    (total, killed, new_params)
}

/// Median of per-iteration nanoseconds: robust to iterations disturbed by other processes.
fn median_ns(v: &[u64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2] as f64,
        n => (v[n / 2 - 1] + v[n / 2]) as f64 / 2.0,
    }
}

/// Dedicated-core part times (worker-side parts: median per iteration): worker-side means plus the busiest PS's share of its work.
fn part_times(cfg: &TrainConfig, st: &WorkerStats, ps: &[PsSnapshot]) -> PartTimes {
    let it = st.iterations.max(1) as f64;
    let per_worker_it = it / cfg.workers as f64;
    let upd_ps = ps.iter().map(|s| s.update_ns).max().unwrap_or(0) as f64 / cfg.ps_threads as f64;
    let dense_ps = ps.iter().map(|s| s.dense_ns).max().unwrap_or(0) as f64;
    PartTimes {
        grad_s: median_ns(&st.grad_iter_ns) * 1e-9,
        emb_s: median_ns(&st.emb_iter_ns) * 1e-9,
        upd_s: (st.upd_ns as f64 / it + upd_ps / per_worker_it) * 1e-9,
        sync_s: (st.sync_ns as f64 / it + dense_ps / per_worker_it) * 1e-9,
    }
}

/// Trains on `data` for `cfg.epochs` epochs, evaluating on `eval` (if given) after each.
pub fn train(
    cfg: &TrainConfig,
    data: &dyn Dataset,
    eval: Option<&dyn Dataset>,
) -> anyhow::Result<TrainReport> {
    anyhow::ensure!(
        cfg.workers > 0 && cfg.ps > 0 && cfg.batch > 0,
        "workers, ps and batch must be positive"
    );
    anyhow::ensure!(
        cfg.worker_threads > 0 && cfg.ps_threads > 0,
        "thread counts must be positive"
    );
    let dense0 = cfg.spec.init_dense(cfg.seed);
    let token = if cfg.exclusive_measurement {
        MeasureToken::exclusive()
    } else {
        MeasureToken::shared()
    };
    let ps = PsCluster::start_measured(
        cfg.ps,
        cfg.ps_threads,
        cfg.spec.row_len(),
        &dense0,
        cfg.optimizer,
        cfg.seed,
        token,
    );
    let eval_now = |ps: &PsCluster| eval.map_or((0.5, f64::NAN), |e| evaluate(&cfg.spec, ps, e));
    let initial_auc = eval_now(&ps).0;
    let mut params = vec![dense0; cfg.workers];
    let mut caches: Vec<HotCache> = (0..cfg.workers)
        .map(|_| HotCache::new(cfg.cache_rows, cfg.cache_refresh_batches))
        .collect();
    let mut total = WorkerStats::default();
    let mut epochs = Vec::new();
    let mut commit_counts = vec![0u32; data.len() as usize];
    let (mut requeued, mut killed) = (0, 0);
    let start = Instant::now();
    for epoch in 0..cfg.epochs {
        let queue = ShardQueue::new(data.len(), (cfg.shard_batches * cfg.batch) as u64);
        let (st, k, p) = run_epoch(cfg, epoch, &ps, data, &queue, &params, &mut caches);
        params = p;
        ps.quiesce();
        requeued += queue.requeued();
        killed += k;
        for (c, q) in commit_counts.iter_mut().zip(queue.commit_counts()) {
            *c += q;
        }
        let (eval_auc, eval_logloss) = eval_now(&ps);
        epochs.push(EpochReport {
            epoch,
            train_logloss: st.loss_sum / st.samples.max(1) as f64,
            eval_auc,
            eval_logloss,
        });
        add(&mut total, &st);
    }
    let wall_s = start.elapsed().as_secs_f64();
    let snaps = ps.snapshots();
    let ps_thread_ns: u64 = ps.stop().iter().sum();
    let (hits, lookups) = caches
        .iter()
        .map(HotCache::counts)
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    Ok(TrainReport {
        initial_auc,
        epochs,
        parts: part_times(cfg, &total, &snaps),
        iterations: total.iterations,
        wall_s,
        wall_samples_per_s: total.samples as f64 / wall_s.max(1e-9),
        commit_counts,
        requeued_shards: requeued,
        killed_workers: killed,
        cache_hit_ratio: if lookups == 0 {
            0.0
        } else {
            hits as f64 / lookups as f64
        },
        lookup_requests: total.lookup_requests,
        worker_cpu_s: total.cpu_ns as f64 * 1e-9,
        ps_cpu_s: ps_thread_ns as f64 * 1e-9,
        ps: snaps,
    })
}
