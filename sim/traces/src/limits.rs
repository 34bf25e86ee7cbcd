//! The documented limits on every number read from input (issue #21), in one place.
//!
//! Loading is the one boundary where input is checked: a value outside its range is an
//! [`crate::InputError`] naming the file, the field, the value and the limit, so the run
//! that follows cannot overflow simulated time, divide its way to infinity, or allocate
//! without bound. The limits are far beyond any real cluster or trace (the largest bundled
//! replay is a one-year, one-million-job trace on 10,000 nodes); they exist so that a typo
//! such as `1e19` fails on load instead of panicking, hanging or poisoning a result.

/// Any time or duration given in seconds (an arrival, a horizon, a start-up or checkpoint
/// cost, a repair time): about 31.7 years. Simulated time is integer milliseconds in a
/// `u64`, so sums of a few such values stay far from overflow.
pub const MAX_TIME_S: f64 = 1e9;

/// Timeline samples one run may take: a run ends at `timeline_interval_s` times this at
/// the latest (`timeline.csv` and the in-memory timeline stay under about 100 MB, and a
/// run that barely progresses still ends in seconds).
pub const MAX_TIMELINE_SAMPLES: u64 = 1_000_000;

/// A stall of training (a checkpoint, a reload, a start-up): a day. Longer is no longer
/// a stall, and would only stretch a run to its time cap.
pub const MAX_STALL_S: f64 = 86_400.0;

/// Nodes in one cluster (groups plus node list).
pub const MAX_NODES: u64 = 100_000;
/// Cores of one node or one pod.
pub const MAX_CORES: f64 = 100_000.0;
/// The smallest CPU request a pod may make: one milli-core, the unit of allocation.
pub const MIN_POD_CORES: f64 = 0.001;
/// Memory of one node, GB (1 PB).
pub const MAX_NODE_MEM_GB: f64 = 1e6;
/// Memory of one pod, MB (1 PB).
pub const MAX_POD_MEM_MB: u64 = 1_000_000_000;
/// GPUs of one node or one worker.
pub const MAX_GPUS: u32 = 1_024;

/// Jobs in one workload, read from a trace or generated.
pub const MAX_JOBS: u64 = 10_000_000;
/// Workers or parameter servers of one job.
pub const MAX_PODS_PER_ROLE: u32 = 10_000;
/// Training steps of one job.
pub const MAX_STEPS: u64 = 1_000_000_000_000;
/// Samples per step per worker.
pub const MAX_BATCH: u32 = 1 << 20;
/// Embedding dimension.
pub const MAX_EMB_DIM: u32 = 1 << 16;
/// Model sizes in MB (dense model, initial embeddings): 1 PB.
pub const MAX_MODEL_MB: f64 = 1e9;
/// Embedding growth, MB per million samples.
pub const MAX_EMB_GROWTH_MB: f64 = 1e6;
/// A bandwidth in MB/s (network, storage, flash): 1 PB/s; the least is 1 KB/s.
pub const MAX_BANDWIDTH_MB_S: f64 = 1e9;
pub const MIN_BANDWIDTH_MB_S: f64 = 1e-3;
/// Lognormal sigmas (job variation, memory over-provisioning): `exp(4 z)` already spans
/// many orders of magnitude.
pub const MAX_SIGMA: f64 = 4.0;
/// Throughput-model coefficients (seconds per unit of work).
pub const MAX_COEFFICIENT: f64 = 1e6;
/// Profile samples a policy keeps per job.
pub const MAX_HISTORY_LEN: u64 = 100_000;
/// Seeds (replicates) of one sweep, and runs of one sweep in all.
pub const MAX_SEEDS: u64 = 100_000;
pub const MAX_SWEEP_RUNS: u64 = 1_000_000;
/// Events per day drawn at random (generated arrivals per day, online bursts per day).
pub const MAX_PER_DAY: f64 = 1e6;
/// A rate in samples per second (online traffic).
pub const MAX_RATE_SPS: f64 = 1e12;

/// `Ok` when `lo <= v <= hi` (and `v` is a number), else why not, with the value and the
/// limits: the message every range check shares.
pub fn in_range(v: f64, lo: f64, hi: f64) -> Result<(), String> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(format!(
            "must be in [{}, {}], got {}",
            show(lo),
            show(hi),
            show(v)
        ))
    }
}

/// A number as a person would write it: plain when short, else in exponent form.
pub fn show(v: f64) -> String {
    let plain = format!("{v}");
    let short = format!("{v:e}");
    if plain.len() <= 10 {
        plain
    } else if short.len() <= 10 {
        short
    } else {
        format!("{v:.4e}")
    }
}

/// `Ok` when `v <= hi`, else why not, with the value and the limit.
pub fn at_most(v: u64, hi: u64) -> Result<(), String> {
    if v <= hi {
        Ok(())
    } else {
        Err(format!("must be at most {hi}, got {v}"))
    }
}

/// `Ok` for 0 (off) or a value in `[lo, hi]`.
pub fn off_or_in_range(v: f64, lo: f64, hi: f64) -> Result<(), String> {
    if v == 0.0 {
        return Ok(());
    }
    in_range(v, lo, hi).map_err(|m| format!("{m} (or 0 for off)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_value_and_the_limits() {
        assert!(in_range(1.0, 0.0, 1.0).is_ok());
        let m = in_range(1e19, 0.0, MAX_TIME_S).unwrap_err();
        assert!(m.contains("1e19") && m.contains("1000000000"), "{m}");
        assert_eq!(show(2.0), "2");
        assert_eq!(show(1e-320), "1e-320");
        assert_eq!(show(MAX_TIME_S / 3600.0), "2.7778e5");
        assert!(in_range(f64::NAN, 0.0, 1.0).is_err());
        assert!(at_most(5, 4).unwrap_err().contains("at most 4"));
        assert!(off_or_in_range(0.0, 1.0, 2.0).is_ok());
        assert!(off_or_in_range(1e-320, 1.0, 2.0).is_err());
    }
}
