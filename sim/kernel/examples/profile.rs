//! The kernel as a profiler sees it (issue #18, "CPU use as a profiler sees it"): runs each
//! configuration of a small grid twice, once with dedicated-core measurement (the
//! calibration's parts) and once concurrently, and prints one JSON line per configuration
//! (`dlsim_kernel::calibrate::grid::ConcurrentProfile`). Run it on a machine with a core
//! per thread (16 cores for this grid):
//! `cargo run --release -p dlsim-kernel --example profile -- [--quick] > profile.jsonl`.

use dlsim_kernel::calibrate::{kinds, profile_concurrent, GridPoint};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--cores N` overrides the count (to try the grid on a smaller machine).
    let cores = args
        .iter()
        .position(|a| a == "--cores")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    // (workers, worker threads, PS, PS threads): from one big worker to many small ones at
    // a similar core count, and the PS side from one thread to several PSes.
    // `--threads-sweep`: one worker with 1..14 compute threads (how a worker's CPU per step
    // grows with its thread count), three repetitions each.
    let sweep: Vec<(usize, usize, usize, usize)> = [1, 2, 4, 6, 8, 10, 12, 14]
        .iter()
        .flat_map(|&t| [(1, t, 1, 1); 3])
        .collect();
    let grid: &[(usize, usize, usize, usize)] = &[
        (1, 1, 1, 1),
        (1, 2, 1, 1),
        (1, 4, 1, 1),
        (1, 8, 1, 4),
        (1, 4, 1, 4),
        (2, 2, 1, 2),
        (2, 2, 2, 2),
        (4, 1, 1, 4),
        (4, 1, 2, 2),
        (4, 2, 2, 2),
        (3, 3, 2, 2),
        (6, 1, 2, 2),
        (8, 1, 2, 2),
        (8, 1, 1, 4),
        (4, 2, 1, 4),
        (2, 4, 2, 2),
    ];
    let shapes = if args.iter().any(|a| a == "--threads-sweep") {
        &sweep[..]
    } else {
        grid
    };
    for kind in kinds()
        .into_iter()
        .filter(|k| k.name == "wide_deep" || k.name == "xdeepfm")
    {
        for &(w, lw, p, lp) in shapes {
            if w * (lw + 1) + p * lp > cores {
                continue;
            }
            let pt = GridPoint {
                workers: w,
                ps: p,
                worker_threads: lw,
                ps_threads: lp,
                batch: 512,
                emb_dim: 16,
                iterations_per_worker: if quick { 20 } else { 120 },
                heldout: false,
                heldout_shape: false,
            };
            let prof = profile_concurrent(&kind, &pt, 7)?;
            println!("{}", serde_json::to_string(&prof)?);
        }
    }
    Ok(())
}
