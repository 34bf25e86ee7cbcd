//! Peer benchmark of the kernel against CPU PyTorch (`scripts/bench-kernel-vs-torch.sh`).
//!
//! * `export` materialises a data set (synthetic or Criteo-format) and the model's initial
//!   state (dense vector, every unique ID's initial embedding row) as raw little-endian files
//!   that `scripts/peer/torch_wd.py` reads, so both sides start from identical bits.
//! * `train` trains the kernel on the exported samples held in memory (sample generation is
//!   not timed) through `dlsim_kernel::train::train` and prints one JSON line.
//! * `gather` measures the embedding gather through the PS path (steady state: the table is
//!   populated first) against a STREAM-like copy bandwidth, and prints one JSON line.
//!
//! Thread mapping of `train --threads T`: one worker with `T` compute threads and `T` PS
//! shards of one server thread each. With one worker the kernel is sequential (lookups,
//! updates and dense syncs are served FIFO per PS, and the worker waits for each batch's
//! dense sync), so at most `T` threads are busy at once.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use clap::{Parser, Subcommand};
use crossbeam_channel::unbounded;
use dlsim_fsio::write_atomic;
use dlsim_kernel::calibrate::copy_bandwidth_mb_s;
use dlsim_kernel::criteo::{read_file, CriteoData};
use dlsim_kernel::data::{Dataset, Sample, SyntheticData, NUM_DENSE, NUM_SPARSE};
use dlsim_kernel::model::ModelSpec;
use dlsim_kernel::ps::{Optimizer, PsCluster, PsMsg};
use dlsim_kernel::table::EmbeddingTable;
use dlsim_kernel::train::{train, TrainConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Zipf};
use serde_json::{json, Value};

#[derive(Parser)]
#[command(about = "Peer benchmark of the kernel against CPU PyTorch (issue #23)")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write samples and the initial model state as raw files for both implementations.
    Export(ExportArgs),
    /// Train the kernel on exported samples; print one JSON line.
    Train(TrainArgs),
    /// Embedding gather through the PS path vs copy bandwidth; print one JSON line.
    Gather(GatherArgs),
}

#[derive(clap::Args)]
struct ExportArgs {
    /// Output folder (created).
    #[arg(long)]
    out: PathBuf,
    /// Number of synthetic samples.
    #[arg(long, default_value_t = 65_536)]
    samples: u64,
    /// Seed of the data, the dense init and the embedding rows' init.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Embedding dimension D (rows have D + 1 floats).
    #[arg(long, default_value_t = 8)]
    emb_dim: usize,
    /// Hidden layer widths, comma-separated.
    #[arg(long, default_value = "32,16", value_delimiter = ',')]
    hidden: Vec<usize>,
    /// Vocabulary scale of `SyntheticData::standard` (8 = 23,560 IDs).
    #[arg(long, default_value_t = 8)]
    vocab_scale: u64,
    /// Read Criteo-format rows from this file instead of generating synthetic samples.
    #[arg(long)]
    criteo: Option<PathBuf>,
    /// Adagrad learning rate recorded in meta.json (the default of `train`).
    #[arg(long, default_value_t = 0.05)]
    lr: f32,
    /// Adagrad initial accumulator recorded in meta.json (the default of `train`).
    #[arg(long, default_value_t = 0.1)]
    init_acc: f32,
}

#[derive(clap::Args)]
struct TrainArgs {
    /// Folder written by `export`.
    #[arg(long)]
    data: PathBuf,
    /// Batch size.
    #[arg(long)]
    batch: usize,
    /// Threads: 1 worker with T compute threads, T PS shards with 1 thread each.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[arg(long, default_value_t = 1)]
    epochs: u32,
    /// Adagrad learning rate (default: meta.json's).
    #[arg(long)]
    lr: Option<f32>,
    /// Adagrad initial accumulator (default: meta.json's).
    #[arg(long)]
    init_acc: Option<f32>,
    /// Hold out the last K samples (never trained on).
    #[arg(long, default_value_t = 0)]
    holdout: usize,
    /// Evaluate log loss and AUC on the held-out samples after each epoch (the kernel's
    /// wall time then includes the evaluation).
    #[arg(long)]
    eval: bool,
    /// Also report the per-batch training losses of the first `--loss-batches` batches of
    /// epoch 1 (replays prefixes of the data from the initial state: exact, since one worker
    /// trains sequentially).
    #[arg(long)]
    losses: bool,
    #[arg(long, default_value_t = 64)]
    loss_batches: usize,
}

#[derive(clap::Args)]
struct GatherArgs {
    /// Rows of the table (populated before timing).
    #[arg(long, default_value_t = 3_000_000)]
    rows: u64,
    /// Embedding dimension D (rows have D + 1 floats).
    #[arg(long, default_value_t = 16)]
    dim: usize,
    /// IDs gathered per repetition.
    #[arg(long, default_value_t = 4_000_000)]
    ids: usize,
    /// IDs per lookup request (one request per batch in the worker: 26 x batch).
    #[arg(long, default_value_t = 26 * 512)]
    request_ids: usize,
    /// Zipf exponent of the IDs' popularity.
    #[arg(long, default_value_t = 1.05)]
    zipf: f64,
    #[arg(long, default_value_t = 3)]
    reps: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the gathered row indices here (u64 little-endian) for the PyTorch side.
    #[arg(long)]
    ids_out: Option<PathBuf>,
    /// Bytes of each buffer of the copy-bandwidth measurement.
    #[arg(long, default_value_t = 256 << 20)]
    copy_bytes: usize,
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u64_bytes(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A file of little-endian `N`-byte values, decoded by `from`.
fn read_le<const N: usize, T>(path: &Path, from: fn([u8; N]) -> T) -> Result<Vec<T>> {
    let b = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    ensure!(
        b.len().is_multiple_of(N),
        "{}: not a whole number of {N}-byte values",
        path.display()
    );
    Ok(b.chunks_exact(N)
        .map(|c| from(c.try_into().expect("N-byte chunk")))
        .collect())
}

fn export(a: &ExportArgs) -> Result<Value> {
    let spec = ModelSpec {
        emb_dim: a.emb_dim,
        hidden: a.hidden.clone(),
    };
    ensure!(a.emb_dim > 0, "--emb-dim must be positive");
    let (samples, source) = match &a.criteo {
        Some(p) => (
            read_file(p)?.samples,
            json!({ "kind": "criteo", "path": p.display().to_string() }),
        ),
        None => {
            let d = SyntheticData::standard(a.seed, a.samples, a.vocab_scale);
            (
                (0..d.len()).map(|i| d.sample(i)).collect::<Vec<Sample>>(),
                json!({ "kind": "synthetic", "vocab_scale": a.vocab_scale }),
            )
        }
    };
    ensure!(!samples.is_empty(), "no samples");
    let n = samples.len();
    fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let dense: Vec<f32> = samples.iter().flat_map(|s| s.dense).collect();
    let label: Vec<f32> = samples.iter().map(|s| s.label).collect();
    let sparse: Vec<u64> = samples.iter().flat_map(|s| s.sparse).collect();
    let ids: Vec<u64> = sparse
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let dense_init = spec.init_dense(a.seed);
    let optimizer = Optimizer::Adagrad {
        lr: a.lr,
        init_acc: a.init_acc,
    };
    // A fresh cluster: peek_row returns the initial row of every (unseen) ID, exactly the
    // row the PS creates on first sight in a training run with the same seed.
    let ps = PsCluster::start(1, 1, spec.row_len(), &dense_init, optimizer, a.seed);
    let emb: Vec<f32> = ids.iter().flat_map(|&id| ps.peek_row(id)).collect();
    drop(ps);
    let out = &a.out;
    write_atomic(&out.join("dense.f32"), &f32_bytes(&dense))?;
    write_atomic(&out.join("label.f32"), &f32_bytes(&label))?;
    write_atomic(&out.join("sparse.u64"), &u64_bytes(&sparse))?;
    write_atomic(&out.join("dense_init.f32"), &f32_bytes(&dense_init))?;
    write_atomic(&out.join("emb_ids.u64"), &u64_bytes(&ids))?;
    write_atomic(&out.join("emb_init.f32"), &f32_bytes(&emb))?;
    let meta = json!({
        "samples": n,
        "num_dense": NUM_DENSE,
        "num_sparse": NUM_SPARSE,
        "seed": a.seed,
        "source": source,
        "spec": spec,
        "row_len": spec.row_len(),
        "num_dense_params": dense_init.len(),
        "num_ids": ids.len(),
        "optimizer": { "kind": "adagrad", "lr": a.lr, "init_acc": a.init_acc },
        "positive_rate": label.iter().map(|&l| f64::from(l)).sum::<f64>() / n as f64,
        "files": {
            "dense.f32": [n, NUM_DENSE],
            "label.f32": [n],
            "sparse.u64": [n, NUM_SPARSE],
            "dense_init.f32": [dense_init.len()],
            "emb_ids.u64": [ids.len()],
            "emb_init.f32": [ids.len(), spec.row_len()],
        },
    });
    write_atomic(
        &out.join("meta.json"),
        serde_json::to_string_pretty(&meta)?.as_bytes(),
    )?;
    Ok(meta)
}

/// Samples read back from an `export` folder, and its metadata.
fn load(dir: &Path) -> Result<(Vec<Sample>, Value)> {
    let meta: Value = serde_json::from_str(
        &fs::read_to_string(dir.join("meta.json"))
            .with_context(|| format!("reading {}/meta.json", dir.display()))?,
    )?;
    let dense = read_le(&dir.join("dense.f32"), f32::from_le_bytes)?;
    let label = read_le(&dir.join("label.f32"), f32::from_le_bytes)?;
    let sparse = read_le(&dir.join("sparse.u64"), u64::from_le_bytes)?;
    let n = label.len();
    ensure!(
        dense.len() == n * NUM_DENSE && sparse.len() == n * NUM_SPARSE,
        "{}: inconsistent shapes",
        dir.display()
    );
    let samples = (0..n)
        .map(|i| Sample {
            id: i as u64,
            label: label[i],
            dense: dense[i * NUM_DENSE..(i + 1) * NUM_DENSE]
                .try_into()
                .expect("NUM_DENSE floats"),
            sparse: sparse[i * NUM_SPARSE..(i + 1) * NUM_SPARSE]
                .try_into()
                .expect("NUM_SPARSE ids"),
        })
        .collect();
    Ok((samples, meta))
}

/// A borrowed prefix of the samples as a data set (for the per-batch loss replay).
struct Prefix<'a>(&'a [Sample]);

impl Dataset for Prefix<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn sample(&self, i: u64) -> Sample {
        self.0[i as usize].clone()
    }
}

fn train_cmd(a: &TrainArgs) -> Result<Value> {
    ensure!(
        a.batch > 0 && a.threads > 0 && a.epochs > 0,
        "batch, threads, epochs > 0"
    );
    let (mut samples, meta) = load(&a.data)?;
    ensure!(
        a.holdout < samples.len(),
        "--holdout leaves no training data"
    );
    let eval = CriteoData {
        samples: samples.split_off(samples.len() - a.holdout),
    };
    let data = CriteoData { samples };
    let spec: ModelSpec = serde_json::from_value(meta["spec"].clone())?;
    let opt = &meta["optimizer"];
    let lr = a.lr.unwrap_or(opt["lr"].as_f64().unwrap_or(0.05) as f32);
    let init_acc = a
        .init_acc
        .unwrap_or(opt["init_acc"].as_f64().unwrap_or(0.1) as f32);
    let n = data.samples.len();
    let cfg = TrainConfig {
        workers: 1,
        ps: a.threads,
        worker_threads: a.threads,
        ps_threads: 1,
        batch: a.batch,
        spec,
        optimizer: Optimizer::Adagrad { lr, init_acc },
        packed: true,
        cache_rows: 0,
        cache_refresh_batches: 20,
        // One shard per epoch: batches never straddle shards, so batch k is samples
        // [kB, (k+1)B) as on the PyTorch side.
        shard_batches: n.div_ceil(a.batch),
        epochs: a.epochs,
        seed: meta["seed"].as_u64().unwrap_or(1),
        exclusive_measurement: false,
        // Anything else (no faults; fields added later) as in the kernel's test config.
        ..TrainConfig::small(1, a.threads)
    };
    let eval_set: Option<&dyn Dataset> = if a.eval && a.holdout > 0 {
        Some(&eval)
    } else {
        None
    };
    let r = train(&cfg, &data, eval_set)?;
    let last = r.epochs.last();
    let mut out = json!({
        "impl": "rust",
        "batch": a.batch,
        "threads": a.threads,
        "config": {
            "workers": 1, "worker_threads": a.threads, "ps": a.threads, "ps_threads": 1,
            "packed": true, "cache_rows": 0,
        },
        "epochs": a.epochs,
        "train_samples": n,
        "wall_s": r.wall_s,
        "samples_per_s": r.wall_samples_per_s,
        "timed_includes_eval": eval_set.is_some(),
        "train_logloss": r.epochs.iter().map(|e| e.train_logloss).collect::<Vec<_>>(),
        "eval_logloss": last.filter(|_| eval_set.is_some()).map(|e| e.eval_logloss),
        "eval_auc": last.filter(|_| eval_set.is_some()).map(|e| e.eval_auc),
        "initial_eval_auc": eval_set.map(|_| r.initial_auc),
        "iterations": r.iterations,
    });
    if a.losses {
        out["batch_losses"] = json!(batch_losses(&cfg, &data.samples, a.loss_batches)?);
    }
    Ok(out)
}

/// Per-batch training losses of the first `nb` batches of epoch 1. The kernel reports only
/// per-epoch losses, so this replays prefixes of 1, 2, ... batches (each a fresh run from the
/// same initial state; with one worker the kernel is sequential, so prefix `k` repeats the
/// first `k` batches of the full run) and differences their summed losses.
fn batch_losses(cfg: &TrainConfig, samples: &[Sample], nb: usize) -> Result<Vec<f64>> {
    let cfg = TrainConfig {
        epochs: 1,
        ..cfg.clone()
    };
    let (mut prev_sum, mut prev_n, mut out) = (0.0f64, 0usize, Vec::new());
    for k in 1..=nb {
        let end = (k * cfg.batch).min(samples.len());
        if end == prev_n {
            break;
        }
        let r = train(&cfg, &Prefix(&samples[..end]), None)?;
        let sum = r.epochs[0].train_logloss * end as f64;
        out.push((sum - prev_sum) / (end - prev_n) as f64);
        (prev_sum, prev_n) = (sum, end);
    }
    Ok(out)
}

fn gib(bytes: f64) -> f64 {
    bytes / f64::from(1u32 << 30)
}

fn gather(a: &GatherArgs) -> Result<Value> {
    ensure!(
        a.rows > 0 && a.dim > 0 && a.ids > 0 && a.request_ids > 0,
        "sizes must be positive"
    );
    let rl = a.dim + 1;
    let opt = Optimizer::Adagrad {
        lr: 0.05,
        init_acc: 0.1,
    };
    let ps = PsCluster::start(1, 1, rl, &[0.0; 1], opt, a.seed);
    // One round trip; the reply hands the ID and row buffers back for the next request, as a
    // worker recycles them (a fresh 900 KB reply per request would cost page faults).
    let (tx, rx) = unbounded();
    let lookup = |ids: Vec<u64>, buf: Vec<f32>| -> Result<(Vec<u64>, Vec<f32>)> {
        ps.send(
            0,
            PsMsg::Lookup {
                tag: 0,
                ids,
                buf,
                reply: tx.clone(),
            },
        );
        let r = rx.recv().context("PS hung up")?;
        Ok((r.ids, r.rows))
    };
    // Populate: every row is created on first sight, so look each one up once.
    let t = Instant::now();
    let all: Vec<u64> = (0..a.rows).collect();
    for c in all.chunks(1 << 16) {
        lookup(c.to_vec(), Vec::new())?;
    }
    let populate_s = t.elapsed().as_secs_f64();
    // Zipf-popular rows scattered over the table by a multiplicative permutation.
    let zipf = Zipf::new(a.rows, a.zipf).context("Zipf parameters")?;
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed);
    const MULT: u128 = 2_654_435_761; // prime; coprime with any table size it does not divide
    ensure!(
        !u128::from(a.rows).is_multiple_of(MULT),
        "--rows must not be a multiple of {MULT}"
    );
    let ids: Vec<u64> = (0..a.ids)
        .map(|_| {
            let rank = zipf.sample(&mut rng) as u64 - 1;
            ((u128::from(rank) * MULT) % u128::from(a.rows)) as u64
        })
        .collect();
    if let Some(p) = &a.ids_out {
        write_atomic(p, &u64_bytes(&ids))?;
    }
    let distinct = ids.iter().collect::<BTreeSet<_>>().len();
    let requests: Vec<Vec<u64>> = ids.chunks(a.request_ids).map(<[u64]>::to_vec).collect();
    let mut times = Vec::new();
    let mut checksum = 0.0f64;
    let (mut ids_buf, mut rows_buf) = (Vec::new(), Vec::new());
    for _ in 0..a.reps.max(1) {
        let t = Instant::now();
        for r in &requests {
            ids_buf.clear();
            ids_buf.extend_from_slice(r);
            (ids_buf, rows_buf) = lookup(ids_buf, rows_buf)?;
            checksum += f64::from(rows_buf[0]);
        }
        times.push(t.elapsed().as_secs_f64());
    }
    drop(ps);
    // The same gather in process: the PS's table itself (`EmbeddingTable::gather`, what a PS
    // thread runs for a request), into a reused buffer, comparable with `index_select`.
    let table = EmbeddingTable::new(rl, opt, a.seed);
    let mut out = vec![0.0f32; (1usize << 16) * rl];
    for c in all.chunks(1 << 16) {
        table.gather(c, &mut out[..c.len() * rl]);
    }
    let mut out = vec![0.0f32; a.request_ids * rl];
    let mut table_times = Vec::new();
    for _ in 0..a.reps.max(1) {
        let t = Instant::now();
        for r in &requests {
            let out = &mut out[..r.len() * rl];
            table.gather(r, out);
            checksum += f64::from(out[0]);
        }
        table_times.push(t.elapsed().as_secs_f64());
    }
    let table_best = table_times.iter().copied().fold(f64::INFINITY, f64::min);
    let best = times.iter().copied().fold(f64::INFINITY, f64::min);
    let row_bytes = (a.ids * rl * 4) as f64;
    let copy_mb_s = copy_bandwidth_mb_s(a.copy_bytes, 5);
    let gather_gib_s = gib(row_bytes) / best;
    let table_gather_gib_s = gib(row_bytes) / table_best;
    let copy_gib_s = copy_mb_s * 1e6 / f64::from(1u32 << 30);
    Ok(json!({
        "impl": "rust",
        "path": "PsCluster 1 PS x 1 thread, PsMsg::Lookup round trips",
        "rows": a.rows,
        "dim": a.dim,
        "row_len": rl,
        "table_bytes_values": a.rows as usize * rl * 4,
        "ids": a.ids,
        "distinct_ids": distinct,
        "request_ids": a.request_ids,
        "zipf": a.zipf,
        "populate_s": populate_s,
        "times_s": times,
        "gather_gib_s": gather_gib_s,
        "copy_gib_s": copy_gib_s,
        "copy_convention": "STREAM copy, read + write bytes, 1 thread, best of 5",
        "gather_convention": "rows gathered (one per requested ID), bytes counted read + write as STREAM counts copy",
        "gather_pct_of_copy": 100.0 * 2.0 * gather_gib_s / copy_gib_s,
        "table_times_s": table_times,
        "table_gather_gib_s": table_gather_gib_s,
        "table_gather_pct_of_copy": 100.0 * 2.0 * table_gather_gib_s / copy_gib_s,
        "checksum": checksum,
    }))
}

fn main() -> std::process::ExitCode {
    let r = match Cli::parse().cmd {
        Cmd::Export(a) => export(&a),
        Cmd::Train(a) => train_cmd(&a),
        Cmd::Gather(a) => gather(&a),
    };
    match r {
        Ok(v) => {
            println!("{v}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
