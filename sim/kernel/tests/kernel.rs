//! Behavioural tests of the training kernel: it learns, it survives killed workers with every
//! sample committed exactly once, and it trains on real Criteo rows.

use dlsim_kernel::criteo;
use dlsim_kernel::data::{Dataset, SyntheticData};
use dlsim_kernel::train::{train, FaultConfig, TrainConfig, WorkerKill};

fn data() -> (SyntheticData, SyntheticData) {
    // Same planted model (seed), disjoint sample streams for train and eval.
    let train = SyntheticData::standard(11, 12_288, 1);
    let eval = SyntheticData::standard(11, 100_000, 1);
    (train, eval)
}

/// Eval set: the tail of the same generator, so its samples never appear in training.
struct Tail<'a>(&'a SyntheticData, u64, u64);

impl Dataset for Tail<'_> {
    fn len(&self) -> u64 {
        self.2
    }
    fn sample(&self, i: u64) -> dlsim_kernel::data::Sample {
        self.0.sample(self.1 + i)
    }
}

#[test]
fn learning_loss_falls_and_auc_rises() {
    let (train_set, gen) = data();
    let eval = Tail(&gen, 50_000, 2_000);
    let mut cfg = TrainConfig::small(2, 2);
    cfg.epochs = 3;
    cfg.worker_threads = 2;
    cfg.ps_threads = 2;
    let t0 = std::time::Instant::now();
    let r = train(&cfg, &train_set, Some(&eval)).unwrap();
    eprintln!(
        "{:?} initial auc {} in {:?}",
        r.epochs,
        r.initial_auc,
        t0.elapsed()
    );
    let (first, last) = (&r.epochs[0], r.epochs.last().unwrap());
    assert!(last.eval_auc > 0.7, "{r:?}");
    assert!(last.eval_auc > r.initial_auc + 0.1);
    assert!(last.train_logloss < first.train_logloss);
    assert!(r.commit_counts.iter().all(|&c| c == cfg.epochs));
}

#[test]
fn faults_killed_workers_shards_are_requeued_and_each_sample_commits_once() {
    let (train_set, gen) = data();
    let eval = Tail(&gen, 50_000, 2_000);
    let mut cfg = TrainConfig::small(3, 2);
    cfg.epochs = 2;
    let clean = train(&cfg, &train_set, Some(&eval)).unwrap();
    // Batch 3 of a worker lies inside its first 4-batch shard: killed mid-shard.
    cfg.faults = FaultConfig {
        kills: vec![
            WorkerKill {
                worker: 1,
                epoch: 0,
                before_batch: 3,
            },
            WorkerKill {
                worker: 2,
                epoch: 1,
                before_batch: 6,
            },
        ],
    };
    let faulty = train(&cfg, &train_set, Some(&eval)).unwrap();
    assert_eq!(faulty.killed_workers, 2);
    assert_eq!(faulty.requeued_shards, 2, "both kills were mid-shard");
    let bad: Vec<usize> = (0..faulty.commit_counts.len())
        .filter(|&i| faulty.commit_counts[i] != cfg.epochs)
        .collect();
    assert!(
        bad.is_empty(),
        "samples not committed exactly once per epoch: {:?}",
        &bad[..bad.len().min(10)]
    );
    let (a, b) = (clean.epochs[1].eval_auc, faulty.epochs[1].eval_auc);
    assert!((a - b).abs() < 0.03, "AUC with failures {b} vs without {a}");
}

#[test]
fn criteo_fixture_parses_every_row_and_trains() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/criteo_sample.txt");
    let d = criteo::read_file(&path).unwrap();
    assert_eq!(d.len(), 200);
    let positives = d.samples.iter().filter(|s| s.label > 0.5).count();
    assert!(positives > 0 && positives < 200);
    let mut cfg = TrainConfig::small(2, 2);
    cfg.batch = 16;
    cfg.shard_batches = 2;
    cfg.epochs = 3;
    let r = train(&cfg, &d, Some(&d)).unwrap();
    assert!(r.commit_counts.iter().all(|&c| c == 3));
    assert!(r.epochs.iter().all(|e| e.train_logloss.is_finite()));
    // Fitting 200 rows three times must at least fit the training rows better than chance.
    assert!(r.epochs[2].eval_auc > 0.6, "{:?}", r.epochs);
    assert!(
        r.ps.iter().map(|p| p.table_rows).sum::<u64>() > 1000,
        "tables grow with new IDs"
    );
}

#[test]
fn picasso_packing_cuts_requests_and_cache_serves_hits() {
    let (train_set, _) = data();
    let small = Tail(&train_set, 0, 4096);
    let mut cfg = TrainConfig::small(1, 4);
    let packed = train(&cfg, &small, None).unwrap();
    cfg.packed = false;
    let unpacked = train(&cfg, &small, None).unwrap();
    assert_eq!(packed.lookup_requests, packed.iterations * 4);
    assert!(
        unpacked.lookup_requests > 20 * packed.lookup_requests / 2,
        "{} vs {}",
        unpacked.lookup_requests,
        packed.lookup_requests
    );
    cfg.packed = true;
    cfg.cache_rows = 2048;
    cfg.cache_refresh_batches = 8;
    let cached = train(&cfg, &small, None).unwrap();
    assert!(
        cached.cache_hit_ratio > 0.2,
        "hit ratio {}",
        cached.cache_hit_ratio
    );
    let rows =
        |r: &dlsim_kernel::train::TrainReport| r.ps.iter().map(|p| p.rows_served).sum::<u64>();
    assert!(rows(&cached) < rows(&packed));
}

/// The profiler's view (`worker_cpu_s`, `ps_cpu_s`: each role's threads over their whole
/// lives, pools included) covers the sections the calibration measures inside those threads,
/// over two epochs (worker threads and their pools are made anew each epoch).
#[test]
fn profiler_view_covers_every_measured_section() {
    let (train_set, _) = data();
    let mut cfg = TrainConfig::small(2, 2);
    cfg.epochs = 2;
    cfg.worker_threads = 3;
    cfg.ps_threads = 2;
    cfg.exclusive_measurement = true;
    let r = train(&cfg, &train_set, None).unwrap();
    let it = r.iterations as f64;
    // `parts.grad_s` is per iteration: the slowest compute thread plus the worker's
    // split/reduce, all inside the worker's threads.
    assert!(r.worker_cpu_s >= r.parts.grad_s * it, "{r:?}");
    let handlers: u64 =
        r.ps.iter()
            .map(|s| s.lookup_ns + s.update_ns + s.dense_ns)
            .sum();
    assert!(r.ps_cpu_s * 1e9 >= handlers as f64, "{r:?}");
    assert!(r.worker_cpu_s.is_finite() && r.ps_cpu_s.is_finite());
}

/// `profile_concurrent` runs a configuration both ways and reports finite, positive views.
#[test]
fn concurrent_profile_reports_both_views() {
    let kind = dlsim_kernel::calibrate::kinds()
        .into_iter()
        .find(|k| k.name == "wide_deep")
        .unwrap();
    let pt = dlsim_kernel::calibrate::GridPoint {
        workers: 2,
        ps: 1,
        worker_threads: 2,
        ps_threads: 1,
        batch: 64,
        emb_dim: 8,
        iterations_per_worker: 8,
        heldout: false,
        heldout_shape: false,
    };
    let p = dlsim_kernel::calibrate::profile_concurrent(&kind, &pt, 3).unwrap();
    for v in [
        p.sum_steps_per_s,
        p.wall_steps_per_s,
        p.worker_work_s_per_step,
        p.ps_work_s_per_step,
        p.worker_busy_cores,
        p.ps_busy_cores,
    ] {
        assert!(v.is_finite() && v > 0.0, "{p:?}");
    }
    // Work per step: at least the dedicated-core gradient part of one step.
    assert!(p.worker_work_s_per_step >= p.parts.grad_s, "{p:?}");
}
