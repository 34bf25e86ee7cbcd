//! Standard Workload Format v2.2 (Parallel Workloads Archive), plain or gzip.
//!
//! Lines starting with `;` are header comments (`; MaxProcs: 128` is read); every other
//! non-empty line has 18 whitespace-separated fields, -1 meaning unknown: job number, submit
//! time, wait time, run time, allocated processors, average CPU time, used memory (KB per
//! processor), requested processors, requested time, requested memory (KB per processor),
//! status, user, group, executable, queue, partition, preceding job, think time.
//!
//! Mapping (a rigid parallel job becomes one pod without parameter servers):
//!
//! - `submit_s` = submit time; real wait = wait time; real run time = run time (a job whose
//!   run time is -1 has nothing to reproduce and is left out, counted by rule; a run time
//!   of 0, a job that ended within its first second (173 of the NASA iPSC log's 18,239), is
//!   repaired to one step and counted, or stops the import with `--strict`);
//! - `worker_cpu` = allocated processors (else requested), one core per processor;
//! - `worker_mem_mb` = processors x requested memory (else used memory) / 1024; when both are
//!   -1, 4 GB per processor (synthesised, marked; enough for the simulator's worker memory
//!   model, so one-processor jobs are not OOM-killed);
//! - outcome from status: 1 completed, 0 failed, 5 cancelled = killed, others (-1, and the
//!   checkpoint codes 2-4) unknown; `user` = `u<user id>`.
//!
//! Cluster: the machine as one node of `MaxProcs` cores (else `MaxNodes`, else the largest
//! job), with 4 GB per core or the largest job's memory if more. One node models a
//! space-shared machine exactly: a job runs when enough processors are free.

use crate::cluster::NodeRow;
use crate::input::{reject, reject_nodes, repair, Lines, Row, RowError};
use crate::report::ImportReport;
use crate::synth::{Draft, Shape};
use crate::{ImportOptions, Parsed};
use dlsim_traces::{InputError, Observed, Outcome};

const COLS: &[&str] = &[
    "job_number",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "avg_cpu_time",
    "used_memory_kb",
    "requested_procs",
    "requested_time",
    "requested_memory_kb",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
];

const MB_PER_PROC_DEFAULT: u64 = 4096;

/// This format's entry in the registry (`crate::IMPORTERS`).
pub const IMPORTER: crate::Importer = crate::Importer {
    name: "swf",
    source: "Standard Workload Format, plain or gzip",
    read,
    // Without a node list, the PAI cluster's node shapes (`pai2020.rs`).
    node_shapes: crate::pai2020::node_shapes,
};

pub(crate) fn read(
    mut lines: Lines,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<Parsed, InputError> {
    let path = lines.path().to_path_buf();
    reject_nodes(
        &path,
        opts.nodes.as_deref(),
        "swf",
        "the machine comes from the MaxProcs header",
    )?;
    let (mut max_procs, mut max_nodes) = (None, None);
    let mut drafts = Vec::new();
    while let Some((line_no, text)) = lines.next_line()? {
        let t = text.trim();
        if let Some(comment) = t.strip_prefix(';') {
            if let Some((key, value)) = comment.split_once(':') {
                let v = value.trim().parse::<u32>().ok();
                match key.trim() {
                    "MaxProcs" => max_procs = v,
                    "MaxNodes" => max_nodes = v,
                    _ => {}
                }
            }
            continue;
        }
        if t.is_empty() {
            continue;
        }
        report.rows_read += 1;
        match job(t, line_no, opts.strict, report) {
            Ok(Some(d)) => drafts.push(d),
            Ok(None) => {}
            Err(e) => reject(&path, line_no, e, opts.skip_bad, report)?,
        }
    }
    let largest = drafts
        .iter()
        .map(|d| d.shape.worker_cpu as u32)
        .max()
        .unwrap_or(1);
    let (cores, from) = match (max_procs, max_nodes) {
        (Some(p), _) if p > 0 => (p, "MaxProcs header"),
        (_, Some(n)) if n > 0 => (n, "MaxNodes header"),
        _ => (largest, "largest job (no MaxProcs header)"),
    };
    let largest_mem_mb = drafts
        .iter()
        .map(|d| d.shape.worker_mem_mb)
        .max()
        .unwrap_or(0);
    let per_core_gb = (MB_PER_PROC_DEFAULT / 1024) as f64;
    let mem_gb = (f64::from(cores) * per_core_gb).max((largest_mem_mb as f64 / 1024.0).ceil());
    let node = NodeRow {
        name: "swf-machine".into(),
        cores: f64::from(cores),
        mem_gb,
        gpus: 0,
        gpu_model: String::new(),
    };
    let desc = format!("1 node of {cores} cores (from the {from}), {mem_gb} GB");
    Ok(Parsed {
        drafts,
        nodes: Some((vec![node], desc)),
    })
}

fn job(
    text: &str,
    line: usize,
    strict: bool,
    report: &mut ImportReport,
) -> Result<Option<Draft>, RowError> {
    let r = Row::whitespace(text, COLS)?;
    // -1 = unknown in every field.
    let known = |i: usize| -> Result<Option<f64>, RowError> {
        let v = r.opt_f64(i)?;
        Ok(v.filter(|&x| x != -1.0))
    };
    let submit = known(1)?
        .ok_or_else(|| RowError::new("submit_time", "unknown", "the submit time is -1"))?;
    if submit < 0.0 {
        return Err(RowError::new(
            "submit_time",
            "negative",
            format!("must be >= 0, got {submit}"),
        ));
    }
    let Some(run) = known(3)? else {
        report.skip_by_rule("run time unknown (-1)");
        return Ok(None);
    };
    if run < 0.0 {
        return Err(RowError::new(
            "run_time",
            "negative",
            format!("must be >= 0 or -1, got {run}"),
        ));
    }
    let procs = match (known(4)?, known(7)?) {
        (Some(p), _) if p > 0.0 => p,
        (_, Some(p)) if p > 0.0 => p,
        _ => {
            return Err(RowError::new(
                "allocated_procs",
                "no processor count",
                "neither allocated nor requested processors are known",
            ))
        }
    };
    let procs = procs.round().clamp(1.0, 1e6) as u64;
    let mut synthesized = Vec::new();
    let mem_mb = match (known(9)?, known(6)?) {
        (Some(kb), _) if kb > 0.0 => (kb * procs as f64 / 1024.0).ceil() as u64,
        (_, Some(kb)) if kb > 0.0 => (kb * procs as f64 / 1024.0).ceil() as u64,
        _ => {
            synthesized.push("worker_mem_mb");
            MB_PER_PROC_DEFAULT * procs
        }
    };
    let outcome = match known(10)?.map(|s| s as i64) {
        Some(1) => Outcome::Completed,
        Some(0) => Outcome::Failed,
        Some(5) => Outcome::Killed,
        _ => Outcome::Unknown,
    };
    let user = known(11)?.map(|u| format!("u{u}")).unwrap_or_default();
    let duration_s = run.round() as u64;
    if duration_s == 0 {
        repair(
            strict,
            report,
            "run_time",
            "0 s, replayed as 1 step",
            "a run time of 0 s (a job that ended within its first second)",
        )?;
    }
    Ok(Some(Draft {
        submit_s: submit.round() as u64,
        user,
        priority: 0,
        shape: Shape {
            workers: 1,
            ps: 0,
            worker_cpu: procs as f64,
            worker_mem_mb: mem_mb.max(1),
            worker_gpu: 0,
            ps_cpu: 0.0,
            ps_mem_mb: 0,
        },
        duration_s: Some(duration_s),
        observed: Observed {
            name: r.str(0).to_string(),
            outcome,
            duration_s: Some(duration_s),
            wait_s: known(2)?.map(|w| w.max(0.0).round() as u64),
            scale: Vec::new(),
        },
        synthesized,
        line,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minus_one_means_unknown() {
        let mut r = ImportReport::new("swf");
        let d = job(
            "7 100 -1 50 32 -1 -1 -1 -1 -1 1 4 1 -1 -1 -1 -1 -1",
            40,
            false,
            &mut r,
        )
        .unwrap()
        .unwrap();
        assert_eq!(d.shape.worker_cpu, 32.0);
        assert_eq!(d.shape.worker_mem_mb, 32 * 4096);
        assert_eq!(d.synthesized, vec!["worker_mem_mb"]);
        assert_eq!(d.observed.outcome, Outcome::Completed);
        assert_eq!(d.observed.wait_s, None);
        assert_eq!(d.user, "u4");
        let none = job(
            "8 100 -1 -1 32 -1 -1 -1 -1 -1 1 4 1 -1 -1 -1 -1 -1",
            41,
            false,
            &mut r,
        )
        .unwrap();
        assert!(none.is_none());
        assert_eq!(r.skipped_by_rule.values().sum::<u64>(), 1);
        let e = job(
            "9 100 -1 5 -1 -1 -1 -1 -1 -1 1 4 1 -1 -1 -1 -1 -1",
            42,
            false,
            &mut r,
        )
        .unwrap_err();
        assert_eq!(e.field, "allocated_procs");
    }
}
