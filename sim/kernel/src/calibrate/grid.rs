//! Calibration plans (which configurations to run) and the measurement of one configuration.
//!
//! A *kind* is a model shape standing in for one of the papers' jobs: `wide_deep` is the
//! Wide&Deep of [`crate::model`]; `dcn` and `xdeepfm` are the same architecture with wider
//! and deeper MLPs, i.e. compute-heavier stand-ins (no cross or CIN layers), so their
//! `a_grad` is larger as in DLRover's Table 1. Each kind is measured over a grid of *shapes*
//! (batch size `m` x embedding dimension `D`) and configurations (`w`, `p`, `lambda_w`,
//! `lambda_p`); one shape-aware fit ([`super::shape`]) covers them all, and whole shapes are
//! held out to check that it holds between the shapes it saw.

use dlsim_fit::{Config, PartTimes};
use serde::{Deserialize, Serialize};

use crate::data::{InMemory, SyntheticData};
use crate::model::ModelSpec;
use crate::ps::Optimizer;
use crate::train::{train, FaultConfig, TrainConfig};

use super::shape::ShapeInputs;

/// A model kind to calibrate: its MLP. In the written file, `batch` and `emb_dim` are the
/// reference shape at which `kinds.<kind>` (the paper's form) holds; the grid's points carry
/// the shapes actually measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kind {
    pub name: String,
    pub hidden: Vec<usize>,
    pub emb_dim: usize,
    pub batch: usize,
}

impl Kind {
    /// The model of this kind at embedding dimension `emb_dim`.
    pub fn spec(&self, emb_dim: usize) -> ModelSpec {
        ModelSpec {
            emb_dim,
            hidden: self.hidden.clone(),
        }
    }
}

/// One grid point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridPoint {
    pub workers: usize,
    pub ps: usize,
    pub worker_threads: usize,
    pub ps_threads: usize,
    pub batch: usize,
    pub emb_dim: usize,
    pub iterations_per_worker: usize,
    /// Held out of the fit and used to validate it.
    pub heldout: bool,
    /// Its whole shape `(m, D)` is held out (validates the fit at shapes it never saw).
    #[serde(default)]
    pub heldout_shape: bool,
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub kinds: Vec<Kind>,
    /// `(kind index, point)` pairs over every kind's shapes and configurations.
    pub points: Vec<(usize, GridPoint)>,
    /// The shape `(m, D)` at which the fit is written in the paper's form (the simulator's
    /// reference workload, inside the grid so nothing is extrapolated).
    pub reference: (usize, usize),
    /// Times the whole grid is run; each part is the median over the passes.
    pub passes: usize,
    pub seed: u64,
}

/// The kinds: MLP widths only (`m` and `D` come from the grid's shapes).
pub fn kinds() -> Vec<Kind> {
    let k = |name: &str, hidden: Vec<usize>| Kind {
        name: name.into(),
        hidden,
        emb_dim: 0,
        batch: 0,
    };
    vec![
        k("wide_deep", vec![32, 16]),
        k("dcn", vec![64, 32]),
        k("xdeepfm", vec![128, 64, 32]),
    ]
}

/// A configuration `(w, p, lambda_w, lambda_p)`.
type Cfg = (usize, usize, usize, usize);

/// A shape-grid plan. Every kind runs `dense` configurations at the reference shape and the
/// `sparse` subset at every other shape of `batches x dims`. Shapes in `heldout_shapes` are
/// held out whole; elsewhere every fourth configuration (in a fixed order) is held out.
/// Iterations per worker shrink with the batch so each point trains about `samples` samples
/// (at least `min_iters` iterations per worker).
struct Design<'a> {
    batches: &'a [usize],
    dims: &'a [usize],
    heldout_shapes: &'a [(usize, usize)],
    reference: (usize, usize),
    dense: Vec<Cfg>,
    sparse: Vec<Cfg>,
    samples: usize,
    min_iters: usize,
    max_iters: usize,
    passes: usize,
}

impl Design<'_> {
    fn plan(self, kinds: Vec<Kind>, seed: u64) -> Plan {
        let mut points = Vec::new();
        for ki in 0..kinds.len() {
            for &batch in self.batches {
                for &emb_dim in self.dims {
                    let shape = (batch, emb_dim);
                    let held_shape = self.heldout_shapes.contains(&shape);
                    let cfgs = if shape == self.reference {
                        &self.dense
                    } else {
                        &self.sparse
                    };
                    for (n, &(w, p, lw, lp)) in cfgs.iter().enumerate() {
                        let iters =
                            (self.samples / (w * batch)).clamp(self.min_iters, self.max_iters);
                        points.push((
                            ki,
                            GridPoint {
                                workers: w,
                                ps: p,
                                worker_threads: lw,
                                ps_threads: lp,
                                batch,
                                emb_dim,
                                iterations_per_worker: iters,
                                heldout: held_shape || n % 4 == 3,
                                heldout_shape: held_shape,
                            },
                        ));
                    }
                }
            }
        }
        Plan {
            kinds,
            points,
            reference: self.reference,
            passes: self.passes,
            seed,
        }
    }
}

/// Every `(w, p, lambda_w, lambda_p)` over `ws x ps x lambdas x lambdas`.
fn cartesian(ws: &[usize], ps: &[usize], lambdas: &[usize]) -> Vec<Cfg> {
    let mut out = Vec::new();
    for &w in ws {
        for &p in ps {
            for &lw in lambdas {
                for &lp in lambdas {
                    out.push((w, p, lw, lp));
                }
            }
        }
    }
    out
}

/// Powers of two up to `max_threads` (at most 4: 1, 2, 4).
fn lambdas(max_threads: usize) -> Vec<usize> {
    [1, 2, 4]
        .into_iter()
        .filter(|&l| l <= max_threads.max(1))
        .collect()
}

/// A spread of eight configurations covering `w`, `p`, `lambda_w`, `lambda_p` and fan-in,
/// with thread counts capped at `max_threads`.
fn spread(max_threads: usize) -> Vec<Cfg> {
    let l = |x: usize| x.min(max_threads.max(1));
    vec![
        (1, 1, 1, 1),
        (2, 1, l(2), 1),
        (1, 2, 1, l(2)),
        (4, 2, l(2), 1),
        (2, 4, 1, l(2)),
        (4, 4, l(4), l(2)),
        (1, 1, l(4), 1),
        (4, 1, 1, l(2)),
    ]
}

impl Plan {
    /// The default grid: three kinds; m in {32, 256, 512, 1024, 4096} x D in {8, 16, 32, 64};
    /// the full `w, p in {1, 2, 4}` x lambda grid at the reference shape (512, 16), eight
    /// configurations elsewhere; shapes (256, 32) and (1024, 16) held out whole.
    pub fn full(max_threads: usize) -> Plan {
        let l = lambdas(max_threads);
        Design {
            batches: &[32, 256, 512, 1024, 4096],
            dims: &[8, 16, 32, 64],
            heldout_shapes: &[(256, 32), (1024, 16)],
            reference: (512, 16),
            dense: cartesian(&[1, 2, 4], &[1, 2, 4], &l),
            sparse: spread(max_threads),
            samples: 16_384,
            min_iters: 4,
            max_iters: 16,
            passes: 3,
        }
        .plan(kinds(), 7)
    }

    /// `--quick`: three kinds, small shapes (m in {16, 32, 64} x D in {4, 8, 16}, shape (32, 8)
    /// held out), few iterations (seconds in release, well under a minute in debug). Its
    /// reference shape (32, 16) is not the simulator's, so the unit contract rescales it.
    pub fn quick(max_threads: usize) -> Plan {
        let l = lambdas(max_threads.min(2));
        Design {
            batches: &[16, 32, 64],
            dims: &[4, 8, 16],
            heldout_shapes: &[(32, 8)],
            reference: (32, 16),
            dense: cartesian(&[1, 2], &[1, 2], &l),
            sparse: spread(max_threads.min(2))[..6].to_vec(),
            samples: 256,
            min_iters: 3,
            max_iters: 4,
            passes: 1,
        }
        .plan(kinds(), 7)
    }

    /// A grid small enough for debug-mode unit tests: one small kind, four shapes.
    pub fn tiny() -> Plan {
        let mut k = kinds();
        k.truncate(1);
        k[0].hidden = vec![8];
        Design {
            batches: &[8, 16],
            dims: &[2, 4],
            heldout_shapes: &[(16, 2)],
            reference: (16, 4),
            dense: cartesian(&[1, 2], &[1, 2], &[1, 2]),
            sparse: cartesian(&[1, 2], &[1, 2], &[1]),
            samples: 32,
            min_iters: 2,
            max_iters: 2,
            passes: 1,
        }
        .plan(k, 7)
    }
}

/// The measured outcome of one grid point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub kind: String,
    pub point: GridPoint,
    /// The model inputs (what the simulator will call the model with).
    pub config: Config,
    /// Dedicated-core per-part iteration times.
    pub parts: PartTimes,
    /// `w m / sum(parts)`: throughput on dedicated cores, samples/s (the fitted quantity).
    pub throughput: f64,
    /// Samples/s actually achieved on this machine (oversubscribed when threads > cores).
    pub wall_samples_per_s: f64,
    /// Mean unique IDs per batch (rows fetched per step; the cache is off).
    #[serde(default)]
    pub unique_rows: f64,
    /// MLP multiply-adds per sample of the model measured.
    #[serde(default)]
    pub mlp_macs: f64,
}

impl Measurement {
    /// The shape model's inputs at this measurement.
    pub fn shape_inputs(&self) -> ShapeInputs {
        let c = &self.config;
        ShapeInputs {
            workers: f64::from(c.workers),
            ps: f64::from(c.ps),
            worker_cores: c.worker_cores,
            ps_cores: c.ps_cores,
            batch: f64::from(c.batch),
            emb_dim: f64::from(c.emb_dim),
            unique_rows: self.unique_rows,
            mlp_macs: self.mlp_macs,
            model_mb: c.model_mb,
            bandwidth_mb_s: c.bandwidth_mb_s,
        }
    }
}

/// The training run of one grid point: a single epoch, packed requests, no cache, one
/// batch per shard; `exclusive` runs measured sections one at a time (the calibration's
/// dedicated-core measurement).
fn grid_config(kind: &Kind, pt: &GridPoint, seed: u64, exclusive: bool) -> TrainConfig {
    TrainConfig {
        workers: pt.workers,
        ps: pt.ps,
        worker_threads: pt.worker_threads,
        ps_threads: pt.ps_threads,
        batch: pt.batch,
        spec: kind.spec(pt.emb_dim),
        optimizer: Optimizer::Adagrad {
            lr: 0.05,
            init_acc: 0.1,
        },
        packed: true,
        cache_rows: 0,
        cache_refresh_batches: 1,
        shard_batches: 1,
        epochs: 1,
        seed,
        faults: FaultConfig::default(),
        exclusive_measurement: exclusive,
    }
}

/// Runs one grid point: a single epoch over exactly `iterations_per_worker` batches per worker.
pub fn measure(
    kind: &Kind,
    pt: &GridPoint,
    bandwidth_mb_s: f64,
    seed: u64,
) -> anyhow::Result<Measurement> {
    let spec = kind.spec(pt.emb_dim);
    let cfg = grid_config(kind, pt, seed, true);
    let n = (pt.workers * pt.iterations_per_worker * pt.batch) as u64;
    // Materialised first: generating samples on one core while another core's section is
    // measured would inflate that section's CPU time (shared caches, SMT siblings).
    let data = InMemory::materialise(&SyntheticData::standard(seed, n, 8), n);
    let r = train(&cfg, &data, None)?;
    let config = Config {
        workers: pt.workers as u32,
        ps: pt.ps as u32,
        worker_cores: pt.worker_threads as f64,
        ps_cores: pt.ps_threads as f64,
        batch: pt.batch as u32,
        model_mb: spec.model_mb(),
        bandwidth_mb_s,
        emb_dim: pt.emb_dim as u32,
    };
    let throughput = (pt.workers * pt.batch) as f64 / r.parts.total_s().max(1e-12);
    let rows: u64 = r.ps.iter().map(|s| s.rows_served).sum();
    Ok(Measurement {
        kind: kind.name.clone(),
        point: *pt,
        config,
        parts: r.parts,
        throughput,
        wall_samples_per_s: r.wall_samples_per_s,
        unique_rows: rows as f64 / r.iterations.max(1) as f64,
        mlp_macs: spec.mlp_macs() as f64,
    })
}

/// One configuration as a profiler sees it: run with every thread on a core of its own
/// (`exclusive_measurement` off, so sections overlap as they do in production), next to
/// the same configuration's dedicated-core parts (the calibration's measurement).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConcurrentProfile {
    pub kind: String,
    pub point: GridPoint,
    /// The calibration's dedicated-core parts (exclusive run) and the steps/s of the job
    /// they predict, `w / sum(parts)`.
    pub parts: PartTimes,
    pub sum_steps_per_s: f64,
    /// Exclusive run: CPU seconds per worker step of the worker side (worker thread and
    /// its compute threads) and of the PS side (all server threads): the work.
    pub worker_work_s_per_step: f64,
    pub ps_work_s_per_step: f64,
    /// Concurrent run: steps/s of the whole job on the wall clock.
    pub wall_steps_per_s: f64,
    /// Concurrent run: busy cores per worker and of all PS together (CPU time over wall).
    pub worker_busy_cores: f64,
    pub ps_busy_cores: f64,
}

/// Runs `pt` twice (dedicated-core measurement, then concurrent) and reports both views.
/// Needs a machine with at least `w (lambda_w + 1) + p lambda_p` free cores to mean anything.
pub fn profile_concurrent(
    kind: &Kind,
    pt: &GridPoint,
    seed: u64,
) -> anyhow::Result<ConcurrentProfile> {
    let n = (pt.workers * pt.iterations_per_worker * pt.batch) as u64;
    let data = InMemory::materialise(&SyntheticData::standard(seed, n, 8), n);
    let run = |exclusive: bool| train(&grid_config(kind, pt, seed, exclusive), &data, None);
    let ex = run(true)?;
    let co = run(false)?;
    let it = ex.iterations.max(1) as f64;
    Ok(ConcurrentProfile {
        kind: kind.name.clone(),
        point: *pt,
        parts: ex.parts,
        sum_steps_per_s: pt.workers as f64 / ex.parts.total_s().max(1e-12),
        worker_work_s_per_step: ex.worker_cpu_s / it,
        ps_work_s_per_step: ex.ps_cpu_s / it,
        wall_steps_per_s: co.iterations as f64 / co.wall_s.max(1e-12),
        worker_busy_cores: co.worker_cpu_s / co.wall_s.max(1e-12) / pt.workers as f64,
        ps_busy_cores: co.ps_cpu_s / co.wall_s.max(1e-12),
    })
}

/// Best-of-N single-thread copy bandwidth in MB/s (STREAM "copy", counting read + write).
pub fn copy_bandwidth_mb_s(bytes: usize, reps: usize) -> f64 {
    let n = bytes / 8;
    let src: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let mut dst = vec![0.0f64; n];
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) {
        let t = std::time::Instant::now();
        dst.copy_from_slice(&src);
        std::hint::black_box(&mut dst);
        best = best.min(t.elapsed().as_secs_f64());
    }
    (2 * n * 8) as f64 / best.max(1e-9) / 1e6
}

/// Facts about the machine the calibration ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cores: usize,
    pub cpu_model: String,
    /// Measured single-thread copy bandwidth (STREAM copy, read + write), MB/s.
    pub memory_bandwidth_mb_s: f64,
    /// The bandwidth `B` (MB/s) every measurement's config and the fit used: the file's own
    /// declared unit for `a_sync`. The kernel has no network, so this is the memory bandwidth;
    /// the simulator's unit contract (`dlsim_model::perf::calibration`) rescales `a_sync` by
    /// its network bandwidth over this value.
    pub bandwidth_mb_s: f64,
    pub build: String,
    pub os: String,
}

impl Machine {
    pub fn probe() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|m| m.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        let memory_bandwidth_mb_s = copy_bandwidth_mb_s(64 << 20, 5);
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model,
            memory_bandwidth_mb_s,
            bandwidth_mb_s: memory_bandwidth_mb_s,
            build: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .into(),
            os: std::env::consts::OS.into(),
        }
    }
}
