//! Alibaba GPU cluster trace v2023 ("openb", alibaba/clusterdata cluster-trace-gpu-v2023).
//!
//! Pod list (header `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
//! creation_time,deletion_time,scheduled_time`, times in seconds from trace start): every pod
//! is an independent task, so each pod becomes one job with one worker and no PS:
//!
//! - `worker_cpu = cpu_milli / 1000`, `worker_mem_mb = memory_mib` (MiB are taken as the
//!   simulator's MB, here and in the node list, so fits are preserved exactly);
//! - `memory_mib = 0` is a pod without a memory request (Kubernetes then bounds it by
//!   nothing). Every published variant has one such Succeeded pod of 14 cores and a whole
//!   GPU (`openb-pod-1523` of `default` and `multigpu50`, `-1693` of `cpu050`, `-5685` of
//!   `gpushare40`). It is repaired and counted under `repaired` as `memory_mib: 0 = no
//!   request, raised to the memory model's need`: the request becomes what the simulator's
//!   memory model needs (the raise every importer applies to too-small requests, `synth`
//!   module; `worker_mem_mb` marked synthesised). `--strict` stops at it instead;
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
//! Pod lists without time columns (header `name,cpu_milli,memory_mib,num_gpu,gpu_milli`, the
//! `multigpu50` variant) are what Alibaba's FGD simulator (the openb trace's companion)
//! schedules as one batch: every pod arrives at t = 0 (`submit_s` marked synthesised), none
//! is left out (no phase), priority 0 (no `qos`), outcome `unknown`, and with no run time
//! `steps` are drawn by the seeded rule in `synth` (the generator's step distribution). A
//! replay of such a list is therefore a batch experiment (everything queued at once, JCT
//! is mostly queueing plus a synthetic run time), not a replay of recorded arrivals and
//! durations; the FGD simulator itself measures only where pods fit, not when they end.
//!
//! A pod with `deletion_time = scheduled_time` (run time 0) is repaired to one step
//! (counted; none in the published variants); `--strict` stops at it.

use crate::cluster::{describe, NodeRow};
use crate::input::{repair, Lines, Row, RowError};
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

/// The leading columns, which are all a pod list without times has.
const UNTIMED_COLS: &[&str] = &["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"];

const NODE_COLS: &[&str] = &["sn", "cpu_milli", "memory_mib", "gpu", "model"];

/// This format's entry in the registry (`crate::IMPORTERS`).
pub const IMPORTER: crate::Importer = crate::Importer {
    name: "openb",
    source: "Alibaba GPU cluster trace v2023 pod list",
    read,
    // Without a node list, the PAI cluster's node shapes (`pai2020.rs`).
    node_shapes: crate::pai2020::node_shapes,
};

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
    let timed = pod_list_header(&mut lines)?;
    let mut drafts = Vec::new();
    lines.each_row(opts.skip_bad, report, |line_no, text, report| {
        drafts.extend(pod(text, line_no, timed, opts.strict, report)?);
        Ok(())
    })?;
    Ok(Parsed { drafts, nodes })
}

/// Reads line 1: `true` for the full header with times, `false` for the five leading
/// columns alone (no times); anything else is an error naming both.
fn pod_list_header(lines: &mut Lines) -> Result<bool, InputError> {
    let path = lines.path().to_path_buf();
    let Some((_, text)) = lines.next_line()? else {
        let e = InputError::new(&path, "empty file: expected an openb pod list");
        return Err(e.at_line(1));
    };
    let got: Vec<&str> = text.split(',').map(str::trim).collect();
    if got == UNTIMED_COLS {
        return Ok(false);
    }
    if got == POD_COLS {
        return Ok(true);
    }
    let msg = format!(
        "expected the header `{}` (or, without times, `{}`), got `{text}`",
        POD_COLS.join(","),
        UNTIMED_COLS.join(",")
    );
    Err(InputError::new(&path, msg).at_line(1))
}

/// One pod row; `None` when a mapping rule leaves it out.
fn pod(
    text: &str,
    line: usize,
    timed: bool,
    strict: bool,
    report: &mut ImportReport,
) -> Result<Option<Draft>, RowError> {
    let r = Row::csv(text, if timed { POD_COLS } else { UNTIMED_COLS })?;
    let cpu = r.positive(1)? / 1000.0;
    let mut mem_mb = r.non_negative(2)?.ceil() as u64;
    let mut synthesized = Vec::new();
    if mem_mb == 0 {
        repair(
            strict,
            report,
            "memory_mib",
            "0 = no request, raised to the memory model's need",
            "memory_mib is 0 (a pod without a memory request)",
        )?;
        // The synthesis step raises any request below the memory model's need.
        mem_mb = 1;
        synthesized.push("worker_mem_mb");
    }
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
    let shape = Shape {
        workers: 1,
        ps: 0,
        worker_cpu: cpu,
        worker_mem_mb: mem_mb,
        worker_gpu: gpus,
        ps_cpu: 0.0,
        ps_mem_mb: 0,
    };
    if !timed {
        synthesized.push("submit_s");
        return Ok(Some(Draft {
            submit_s: 0,
            user: String::new(),
            priority: 0,
            shape,
            duration_s: None,
            observed: Observed {
                name: r.str(0).to_string(),
                outcome: Outcome::Unknown,
                duration_s: None,
                wait_s: None,
                scale: Vec::new(),
            },
            synthesized,
            line,
        }));
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
    if duration_s == 0 {
        repair(
            strict,
            report,
            "deletion_time",
            "run time 0, replayed as 1 step",
            "deletion_time equals scheduled_time (a run time of 0 s)",
        )?;
    }
    Ok(Some(Draft {
        submit_s: secs(created),
        user: String::new(),
        priority,
        shape,
        duration_s: Some(duration_s),
        observed: Observed {
            name: r.str(0).to_string(),
            outcome,
            duration_s: Some(duration_s),
            wait_s: Some(secs(scheduled - created)),
            scale: Vec::new(),
        },
        synthesized,
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
