//! Alibaba GPU cluster trace v2023 ("openb", alibaba/clusterdata cluster-trace-gpu-v2023).
//!
//! Pod list (header `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
//! creation_time,deletion_time,scheduled_time`, times in seconds from trace start): every pod
//! is an independent task, so each pod becomes one job with one worker and no PS:
//!
//! - `worker_cpu = cpu_milli / 1000`, `worker_mem_mb = memory_mib` (MiB are taken as the
//!   simulator's MB, here and in the node list, so fits are preserved exactly);
//! - `worker_gpu = ceil(num_gpu x gpu_milli / 1000)`: the simulator has whole GPUs only, so a
//!   shared-GPU pod (e.g. 460 milli-GPU) holds a whole GPU (counted as a note); `gpu_spec`
//!   (a required GPU model) is ignored, as the simulator does not match GPU models;
//! - `submit_s = creation_time`; real wait `scheduled_time - creation_time`; real run time
//!   `deletion_time - scheduled_time`, from which `steps` is synthesised;
//! - `priority` from `qos`: LS and Guaranteed 1, Burstable 0, BE (best effort) -1;
//! - outcome from `pod_phase`: Succeeded = completed, Failed = failed (replayed as running
//!   for its real run time; the simulator does not inject the failure), Running = censored at
//!   trace end (its deletion time is the trace end, so the run time is a lower bound),
//!   Pending = never scheduled: it has no run time to reproduce, so it is left out and
//!   counted under "pending" in the report.
//!
//! Node list (`--nodes`, header `sn,cpu_milli,memory_mib,gpu,model`): one node each,
//! `cores = cpu_milli / 1000`, `mem_gb = memory_mib / 1024`, `gpus = gpu`,
//! `gpu_model = model` (empty for CPU nodes). Without `--nodes` the cluster is sized by the
//! peak-demand rule (`cluster` module) with PAI-like node shapes.
//!
//! The `multigpu50` variant has no time columns and cannot be imported as a trace.

use crate::cluster::{describe, NodeRow};
use crate::input::{Lines, Row, RowError};
use crate::report::ImportReport;
use crate::synth::{Draft, Shape};
use crate::{secs, ImportOptions, Parsed};
use dlsim_traces::{InputError, Observed, Outcome};
use std::path::Path;

const POD_COLS: &[&str] = &[
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
];

const NODE_COLS: &[&str] = &["sn", "cpu_milli", "memory_mib", "gpu", "model"];

pub(crate) fn read(
    mut lines: Lines,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<Parsed, InputError> {
    let nodes = match &opts.nodes {
        Some(p) => {
            let nodes = read_nodes(p)?;
            let desc = describe(&nodes, "the openb node list");
            Some((nodes, desc))
        }
        None => None,
    };
    lines.header(POD_COLS, "an openb pod list")?;
    let mut drafts = Vec::new();
    lines.each_row(opts.skip_bad, report, |line_no, text, report| {
        drafts.extend(pod(text, line_no, report)?);
        Ok(())
    })?;
    Ok(Parsed { drafts, nodes })
}

/// One pod row; `None` when a mapping rule leaves it out.
fn pod(text: &str, line: usize, report: &mut ImportReport) -> Result<Option<Draft>, RowError> {
    let r = Row::csv(text, POD_COLS)?;
    let cpu = r.positive(1)? / 1000.0;
    let mem_mb = r.positive(2)?.ceil() as u64;
    let num_gpu = r.non_negative(3)?;
    let gpu_milli = r.opt_f64(4)?.unwrap_or(0.0);
    if !(0.0..=1000.0).contains(&gpu_milli) {
        return Err(RowError::new(
            "gpu_milli",
            "out of range",
            format!("must be in 0..=1000, got {gpu_milli}"),
        ));
    }
    let gpu_exact = num_gpu * gpu_milli / 1000.0;
    let gpus = if num_gpu > 0.0 && gpu_milli == 0.0 {
        // A GPU count with no share given: take it as whole GPUs.
        num_gpu.ceil() as u32
    } else {
        gpu_exact.ceil() as u32
    };
    if gpu_exact > 0.0 && f64::from(gpus) > gpu_exact {
        report.note("GPU share rounded up to whole GPUs");
    }
    if !r.str(5).is_empty() {
        report.note("gpu_spec ignored (no GPU-model matching)");
    }
    let priority = match r.str(6) {
        "LS" | "Guaranteed" => 1,
        "Burstable" => 0,
        "BE" => -1,
        other => {
            return Err(RowError::new(
                "qos",
                "unknown qos",
                format!("expected LS, Guaranteed, Burstable or BE, got `{other}`"),
            ))
        }
    };
    let outcome = match r.str(7) {
        "Succeeded" => Outcome::Completed,
        "Failed" => Outcome::Failed,
        "Running" => Outcome::Censored,
        "Pending" => {
            report.skip_by_rule("pending: never scheduled, no run time to reproduce");
            return Ok(None);
        }
        other => {
            return Err(RowError::new(
                "pod_phase",
                "unknown phase",
                format!("expected Succeeded, Failed, Running or Pending, got `{other}`"),
            ))
        }
    };
    let created = r.non_negative(8)?;
    let deleted = r.non_negative(9)?;
    let scheduled = r.non_negative(10)?;
    if scheduled < created {
        return Err(RowError::new(
            "scheduled_time",
            "before creation_time",
            format!("scheduled at {scheduled} s, before its creation at {created} s"),
        ));
    }
    if deleted < scheduled {
        return Err(RowError::new(
            "deletion_time",
            "before scheduled_time",
            format!("deleted at {deleted} s, before it was scheduled at {scheduled} s"),
        ));
    }
    let duration_s = secs(deleted - scheduled);
    Ok(Some(Draft {
        submit_s: secs(created),
        user: String::new(),
        priority,
        shape: Shape {
            workers: 1,
            ps: 0,
            worker_cpu: cpu,
            worker_mem_mb: mem_mb,
            worker_gpu: gpus,
            ps_cpu: 0.0,
            ps_mem_mb: 0,
        },
        duration_s,
        observed: Observed {
            name: r.str(0).to_string(),
            outcome,
            duration_s: Some(duration_s),
            wait_s: Some(secs(scheduled - created)),
            scale: Vec::new(),
        },
        synthesized: Vec::new(),
        line,
    }))
}

/// Reads the openb node list. Node-list errors always stop the import.
pub fn read_nodes(path: &Path) -> Result<Vec<NodeRow>, InputError> {
    let mut lines = Lines::open(path)?;
    lines.header(NODE_COLS, "an openb node list")?;
    lines.node_rows("the node list has no nodes", |text| {
        let r = Row::csv(text, NODE_COLS)?;
        Ok(NodeRow {
            name: r.str(0).to_string(),
            cores: r.positive(1)? / 1000.0,
            mem_gb: r.positive(2)? / 1024.0,
            gpus: r.non_negative(3)?.round() as u32,
            gpu_model: r.str(4).to_string(),
        })
    })
}
