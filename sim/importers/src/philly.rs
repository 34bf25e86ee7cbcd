//! Microsoft Philly, as extracted by Pollux (petuum/adaptdl, osdi21 artifact,
//! `simulator/traces/philly.csv`): header `timestamp,duration,num_gpus,gpu_time,cluster`.
//!
//! Mapping (each row is one GPU job without parameter servers):
//!
//! - `submit_s` = `timestamp` (`YYYY-MM-DD HH:MM:SS`, UTC assumed) minus the earliest
//!   timestamp in the file; rows are not sorted in the source, the output is;
//! - real run time = `duration` (seconds); `gpu_time` is not used; outcome `unknown` (the
//!   extract has no status); a run time of 0 is repaired to one step (counted; none in the
//!   published file), `--strict` stops at it;
//! - a job of up to 8 GPUs is one worker with all its GPUs; a larger one is split over
//!   `ceil(num_gpus / 8)` workers of `ceil(num_gpus / workers)` GPUs each (Philly's servers
//!   have up to 8 GPUs), which rounds up the total when it does not divide evenly (counted
//!   as a note; `workers` then marked synthesised);
//! - per worker 8 cores and 64 GB per GPU (synthesised: Philly publishes no CPU or memory
//!   requests), so eight GPUs fill one 64-core, 512 GB, 8-GPU node;
//! - `user` = `vc-<cluster>` (the virtual cluster, Philly's unit of quota).
//!
//! The cluster is sized by the peak-demand rule (`cluster` module) with those 8-GPU nodes.

use crate::cluster::NodeShape;
use crate::input::{reject_nodes, repair, Lines, Row, RowError};
use crate::report::ImportReport;
use crate::synth::{Draft, Shape};
use crate::{secs, ImportOptions, Parsed};
use dlsim_traces::{InputError, Observed, Outcome};

const COLS: &[&str] = &["timestamp", "duration", "num_gpus", "gpu_time", "cluster"];
const GPUS_PER_NODE: u32 = 8;
const CORES_PER_GPU: f64 = 8.0;
const MEM_MB_PER_GPU: u64 = 65_536;

pub(crate) fn node_shapes() -> (NodeShape, NodeShape) {
    let gpu = NodeShape {
        prefix: "philly-gpu",
        cores: CORES_PER_GPU * f64::from(GPUS_PER_NODE),
        mem_gb: 512.0,
        gpus: GPUS_PER_NODE,
        gpu_model: "",
    };
    let cpu = NodeShape {
        prefix: "philly-cpu",
        gpus: 0,
        ..gpu.clone()
    };
    (cpu, gpu)
}

/// This format's entry in the registry (`crate::IMPORTERS`).
pub const IMPORTER: crate::Importer = crate::Importer {
    name: "philly",
    source: "Microsoft Philly (Pollux extract)",
    read,
    node_shapes,
};

pub(crate) fn read(
    mut lines: Lines,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<Parsed, InputError> {
    reject_nodes(
        lines.path(),
        opts.nodes.as_deref(),
        "philly",
        "the cluster is sized by rule",
    )?;
    lines.header(COLS, "the Philly CSV")?;
    let mut drafts = Vec::new();
    lines.each_row(opts.skip_bad, report, |line_no, text, report| {
        drafts.push(job(text, line_no, opts.strict, report)?);
        Ok(())
    })?;
    let t0 = drafts.iter().map(|d| d.submit_s).min().unwrap_or(0);
    for d in &mut drafts {
        d.submit_s -= t0;
    }
    Ok(Parsed {
        drafts,
        nodes: None,
    })
}

fn job(
    text: &str,
    line: usize,
    strict: bool,
    report: &mut ImportReport,
) -> Result<Draft, RowError> {
    let r = Row::csv(text, COLS)?;
    let submit = parse_timestamp(r.str(0)).ok_or_else(|| {
        RowError::new(
            "timestamp",
            "not a date-time",
            format!("expected `YYYY-MM-DD HH:MM:SS`, got `{}`", r.str(0)),
        )
    })?;
    let duration_s = secs(r.non_negative(1)?);
    if duration_s == 0 {
        repair(
            strict,
            report,
            "duration",
            "0 s, replayed as 1 step",
            "a run time of 0 s",
        )?;
    }
    let gpus_f = r.positive(2)?;
    if gpus_f.fract() != 0.0 || gpus_f > 100_000.0 {
        return Err(RowError::new(
            "num_gpus",
            "not a whole number",
            format!("expected a whole number of GPUs, got {gpus_f}"),
        ));
    }
    let gpus = gpus_f as u32;
    let (workers, per_worker) = if gpus <= GPUS_PER_NODE {
        (1, gpus)
    } else {
        let w = gpus.div_ceil(GPUS_PER_NODE);
        (w, gpus.div_ceil(w))
    };
    let mut synthesized = vec!["worker_cpu", "worker_mem_mb"];
    if workers > 1 {
        synthesized.push("workers");
        if workers * per_worker > gpus {
            report.note("GPUs rounded up to split evenly over 8-GPU workers");
            synthesized.push("worker_gpu");
        }
    }
    Ok(Draft {
        submit_s: submit,
        user: format!("vc-{}", r.str(4)),
        priority: 0,
        shape: Shape {
            workers,
            ps: 0,
            worker_cpu: CORES_PER_GPU * f64::from(per_worker),
            worker_mem_mb: MEM_MB_PER_GPU * u64::from(per_worker),
            worker_gpu: per_worker,
            ps_cpu: 0.0,
            ps_mem_mb: 0,
        },
        duration_s: Some(duration_s),
        observed: Observed {
            name: format!("line {line}"),
            outcome: Outcome::Unknown,
            duration_s: Some(duration_s),
            wait_s: None,
            scale: Vec::new(),
        },
        synthesized,
        line,
    })
}

/// Seconds since 1970-01-01 of `YYYY-MM-DD HH:MM:SS` (proleptic Gregorian, no time zone).
pub fn parse_timestamp(s: &str) -> Option<u64> {
    let (date, time) = s.trim().split_once(' ')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|p| p.parse::<i64>().ok());
    let (hh, mm, ss) = (t.next()??, t.next()??, t.next()??);
    if d.next().is_some()
        || t.next().is_some()
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&day)
        || !(0..24).contains(&hh)
        || !(0..60).contains(&mm)
        || !(0..=60).contains(&ss)
        || !(1970..=9999).contains(&y)
    {
        return None;
    }
    // Days from civil (H. Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3_600 + mm * 60 + ss).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_unix_seconds() {
        assert_eq!(parse_timestamp("1970-01-01 00:00:00"), Some(0));
        assert_eq!(parse_timestamp("2017-10-09 07:01:55"), Some(1_507_532_515));
        assert_eq!(parse_timestamp("2016-02-29 00:00:01"), Some(1_456_704_001));
        for bad in [
            // A year that overflowed the day count (found by fuzzing, issue #21).
            "999999999999999999-01-01 00:00:00",
            "10000-01-01 00:00:00",
            "2017-13-01 00:00:00",
            "2017-10-09",
            "x",
            "2017-10-09 07:61:00",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    #[test]
    fn large_jobs_split_over_eight_gpu_workers() {
        let mut r = ImportReport::new("philly");
        let d = job("2017-10-09 07:01:55,66.0,12,792.0,11cb48", 2, false, &mut r).unwrap();
        assert_eq!((d.shape.workers, d.shape.worker_gpu), (2, 6));
        let d = job("2017-10-09 07:01:55,66.0,9,792.0,11cb48", 2, false, &mut r).unwrap();
        assert_eq!((d.shape.workers, d.shape.worker_gpu), (2, 5));
        assert_eq!(r.notes.values().sum::<u64>(), 1);
        assert_eq!(d.user, "vc-11cb48");
    }
}
