//! Calibration plans (which configurations to run) and the measurement of one configuration.
//!
//! A *kind* is a model shape standing in for one of the papers' jobs: `wide_deep` is the
//! Wide&Deep of [`crate::model`]; `dcn` and `xdeepfm` are the same architecture with wider
//! and deeper MLPs, i.e. compute-heavier stand-ins (no cross or CIN layers), so their
//! `a_grad` is larger as in DLRover's Table 1. Batch size and embedding dimension are fixed per
//! kind, as in DLRover-RM (`m` and `D` do not change during a job); a separate scan varies
//! them to show how the parts scale.

use dlsim_fit::{Config, PartTimes};
use serde::{Deserialize, Serialize};

use crate::data::SyntheticData;
use crate::model::ModelSpec;
use crate::ps::Optimizer;
use crate::train::{train, FaultConfig, TrainConfig};

/// A model kind to calibrate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kind {
    pub name: String,
    pub hidden: Vec<usize>,
    pub emb_dim: usize,
    pub batch: usize,
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
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub kinds: Vec<Kind>,
    /// `(kind index, point)` pairs; points of a kind share its batch size and `D`.
    pub points: Vec<(usize, GridPoint)>,
    /// Points of the first kind varying `m` and `D` (not fitted): how the fit extrapolates.
    pub scan: Vec<(usize, GridPoint)>,
    pub seed: u64,
}

fn kinds(scale: usize) -> Vec<Kind> {
    let k = |name: &str, hidden: Vec<usize>| Kind {
        name: name.into(),
        hidden,
        emb_dim: 8,
        batch: 32 * scale,
    };
    vec![
        k("wide_deep", vec![32, 16]),
        k("dcn", vec![64, 32]),
        k("xdeepfm", vec![128, 64, 32]),
    ]
}

impl Plan {
    /// Cartesian grid over `w, p in ws, ps` and `lambda in 1..=max_threads` (powers of two).
    /// Every fourth point (in a fixed order) is held out.
    fn cartesian(
        kinds: Vec<Kind>,
        ws: &[usize],
        ps: &[usize],
        max_threads: usize,
        iters: usize,
    ) -> Plan {
        let lambdas: Vec<usize> = (0..4)
            .map(|e| 1 << e)
            .filter(|&l| l <= max_threads.max(1))
            .collect();
        let mut points = Vec::new();
        for (ki, kind) in kinds.iter().enumerate() {
            let mut n = 0;
            for &w in ws {
                for &p in ps {
                    for &lw in &lambdas {
                        for &lp in &lambdas {
                            points.push((
                                ki,
                                GridPoint {
                                    workers: w,
                                    ps: p,
                                    worker_threads: lw,
                                    ps_threads: lp,
                                    batch: kind.batch,
                                    emb_dim: kind.emb_dim,
                                    iterations_per_worker: iters,
                                    heldout: n % 4 == 3,
                                },
                            ));
                            n += 1;
                        }
                    }
                }
            }
        }
        Plan {
            kinds,
            points,
            scan: Vec::new(),
            seed: 7,
        }
    }

    /// Adds scan points (kind 0, `w = p = 2`, two threads each) over `batches x dims`.
    fn with_scan(mut self, batches: &[usize], dims: &[usize], iters: usize) -> Plan {
        for &batch in batches {
            for &emb_dim in dims {
                let pt = GridPoint {
                    workers: 2,
                    ps: 2,
                    worker_threads: 2,
                    ps_threads: 2,
                    batch,
                    emb_dim,
                    iterations_per_worker: iters,
                    heldout: true,
                };
                self.scan.push((0, pt));
            }
        }
        self
    }

    /// The default grid: three kinds, `w in {1,2,4,6}`, `p in {1,2,4}`, plus an `m x D` scan.
    pub fn full(max_threads: usize) -> Plan {
        Self::cartesian(kinds(8), &[1, 2, 4, 6], &[1, 2, 4], max_threads, 24).with_scan(
            &[64, 128, 256, 512],
            &[4, 8, 16],
            24,
        )
    }

    /// `--quick`: three kinds, a small grid, few iterations (seconds in release, ~25 s debug).
    pub fn quick(max_threads: usize) -> Plan {
        Self::cartesian(kinds(1), &[1, 2, 4], &[1, 2], max_threads, 4).with_scan(
            &[32, 128],
            &[4, 16],
            4,
        )
    }

    /// A grid small enough for debug-mode unit tests: one kind, eight points.
    pub fn tiny() -> Plan {
        let mut k = kinds(1);
        k.truncate(1);
        k[0].batch = 16;
        k[0].hidden = vec![8];
        k[0].emb_dim = 4;
        Self::cartesian(k, &[1, 2], &[1, 2], 2, 2)
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
}

/// Runs one grid point: a single epoch over exactly `iterations_per_worker` batches per worker.
pub fn measure(
    kind: &Kind,
    pt: &GridPoint,
    bandwidth_mb_s: f64,
    seed: u64,
) -> anyhow::Result<Measurement> {
    let spec = ModelSpec {
        emb_dim: pt.emb_dim,
        hidden: kind.hidden.clone(),
    };
    let cfg = TrainConfig {
        workers: pt.workers,
        ps: pt.ps,
        worker_threads: pt.worker_threads,
        ps_threads: pt.ps_threads,
        batch: pt.batch,
        spec: spec.clone(),
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
        exclusive_measurement: true,
    };
    let n = (pt.workers * pt.iterations_per_worker * pt.batch) as u64;
    let data = SyntheticData::standard(seed, n, 8);
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
    Ok(Measurement {
        kind: kind.name.clone(),
        point: *pt,
        config,
        parts: r.parts,
        throughput,
        wall_samples_per_s: r.wall_samples_per_s,
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
