//! Alibaba PAI 2020 task table (alibaba/clusterdata cluster-trace-gpu-v2020,
//! `pai_task_table`): headerless CSV `job_name,task_name,inst_num,status,start_time,
//! end_time,plan_cpu,plan_mem,plan_gpu,gpu_type`.
//!
//! The table itself is not available offline; this importer is built from its published
//! schema and tested on a hand-written fixture. Mapping (rows of one `job_name` form a job,
//! in any order):
//!
//! - units: `plan_cpu` is in percent of a core (600 = 6 cores), `plan_mem` in GB (x 1024
//!   MB), `plan_gpu` in percent of a GPU (50 = half a GPU), rounded up to whole GPUs per
//!   instance (counted as a note); `gpu_type` is ignored (no GPU-model matching);
//! - roles: the task named `ps` gives `ps = inst_num` and the PS requests; the other task
//!   with the most instances (`worker`, `tensorflow`, `PyTorchWorker`, ...; first seen on a
//!   tie) gives the workers; further tasks (`evaluator`, `chief`, a second `ps`, ...) are
//!   dropped and counted as a note. A job with only a `ps` task is a bad row;
//! - times: `start_time`/`end_time` are seconds (Unix time in the source); `submit_s` is the
//!   job's earliest task start minus the earliest start in the file (the table records
//!   starts, not submissions, so queueing before the first start is lost);
//! - status: `Waiting` tasks never started and are left out (counted by rule); a job with any
//!   `Failed` task is `failed`, else with any `Running` task `censored` (its end is the
//!   latest time in the file), else `completed` (`Terminated`);
//! - real duration = latest task end minus earliest task start.
//!
//! Cluster: `--nodes pai_machine_spec.csv` (headerless `machine,gpu_type,cap_cpu,cap_mem,
//! cap_gpu`, cores and GB) gives one node per machine; without it the cluster is sized by
//! the peak-demand rule with 96-core 512 GB nodes (8 GPUs on GPU nodes), the spec's
//! commonest shapes.

use crate::cluster::{describe, NodeRow, NodeShape};
use crate::input::{reject, Lines, Row, RowError};
use crate::report::ImportReport;
use crate::synth::{Draft, Shape};
use crate::{secs, ImportOptions, Parsed};
use dlsim_traces::{InputError, Observed, Outcome};
use std::collections::HashMap;
use std::path::Path;

const COLS: &[&str] = &[
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
];

const MACHINE_COLS: &[&str] = &["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"];

pub(crate) fn node_shapes() -> (NodeShape, NodeShape) {
    let cpu = NodeShape {
        prefix: "cpu",
        cores: 96.0,
        mem_gb: 512.0,
        gpus: 0,
        gpu_model: "",
    };
    let gpu = NodeShape {
        prefix: "gpu",
        gpus: 8,
        ..cpu.clone()
    };
    (cpu, gpu)
}

struct Task {
    name: String,
    inst: u32,
    cpu: f64,
    mem_mb: u64,
    gpu: u32,
    status: Outcome,
    start: f64,
    end: Option<f64>,
}

struct Job {
    name: String,
    line: usize,
    tasks: Vec<Task>,
}

/// This format's entry in the registry (`crate::IMPORTERS`).
pub const IMPORTER: crate::Importer = crate::Importer {
    name: "pai2020",
    source: "Alibaba PAI 2020 task table",
    read,
    node_shapes,
};

pub(crate) fn read(
    mut lines: Lines,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<Parsed, InputError> {
    let path = lines.path().to_path_buf();
    let nodes = match &opts.nodes {
        Some(p) => {
            let nodes = read_machines(p)?;
            let desc = describe(&nodes, "the PAI machine spec");
            Some((nodes, desc))
        }
        None => None,
    };
    // Jobs in first-seen order; the map is only looked up, never iterated.
    let mut jobs: Vec<Job> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut latest = f64::MIN;
    lines.each_row(opts.skip_bad, report, |line_no, text, report| {
        let Some((job_name, task)) = task(text, report)? else {
            return Ok(());
        };
        latest = latest.max(task.start).max(task.end.unwrap_or(f64::MIN));
        let i = *index.entry(job_name.clone()).or_insert_with(|| {
            jobs.push(Job {
                name: job_name,
                line: line_no,
                tasks: Vec::new(),
            });
            jobs.len() - 1
        });
        jobs[i].tasks.push(task);
        Ok(())
    })?;
    let t0 = jobs
        .iter()
        .flat_map(|j| j.tasks.iter().map(|t| t.start))
        .fold(f64::INFINITY, f64::min);
    let mut drafts = Vec::with_capacity(jobs.len());
    for job in jobs {
        let line = job.line;
        match finish(job, t0, latest, report) {
            Ok(d) => drafts.push(d),
            Err(e) => reject(&path, line, e, opts.skip_bad, report)?,
        }
    }
    Ok(Parsed { drafts, nodes })
}

fn task(text: &str, report: &mut ImportReport) -> Result<Option<(String, Task)>, RowError> {
    let r = Row::csv(text, COLS)?;
    if r.str(0).is_empty() {
        return Err(RowError::new("job_name", "missing", "the field is empty"));
    }
    let inst = r.positive(2)?;
    if inst.fract() != 0.0 || inst > 1e6 {
        return Err(RowError::new(
            "inst_num",
            "not a whole number",
            format!("got {inst}"),
        ));
    }
    let status = match r.str(3) {
        "Terminated" => Outcome::Completed,
        "Failed" => Outcome::Failed,
        "Running" => Outcome::Censored,
        "Waiting" => {
            report.skip_by_rule("Waiting task: never started");
            return Ok(None);
        }
        other => {
            return Err(RowError::new(
                "status",
                "unknown status",
                format!("expected Terminated, Failed, Running or Waiting, got `{other}`"),
            ))
        }
    };
    let start = r.non_negative(4)?;
    let end = r.opt_time_s(5)?;
    match end {
        Some(e) if e < start => {
            return Err(RowError::new(
                "end_time",
                "before start_time",
                format!("ends at {e}, before its start at {start}"),
            ))
        }
        None if status != Outcome::Censored => {
            return Err(RowError::new(
                "end_time",
                "missing",
                "only Running tasks may lack an end time",
            ))
        }
        _ => {}
    }
    let plan_gpu = r.opt_f64(8)?.unwrap_or(0.0);
    if plan_gpu < 0.0 {
        return Err(RowError::new(
            "plan_gpu",
            "negative",
            format!("must be >= 0, got {plan_gpu}"),
        ));
    }
    let gpu = (plan_gpu / 100.0).ceil() as u32;
    if f64::from(gpu) * 100.0 > plan_gpu {
        report.note("GPU share rounded up to whole GPUs");
    }
    if !r.str(9).is_empty() {
        report.note("gpu_type ignored (no GPU-model matching)");
    }
    Ok(Some((
        r.str(0).to_string(),
        Task {
            name: r.str(1).to_string(),
            inst: inst as u32,
            cpu: r.positive(6)? / 100.0,
            mem_mb: (r.positive(7)? * 1024.0).ceil() as u64,
            gpu,
            status,
            start,
            end,
        },
    )))
}

fn finish(job: Job, t0: f64, latest: f64, report: &mut ImportReport) -> Result<Draft, RowError> {
    let ps = job.tasks.iter().position(|t| t.name == "ps");
    let mut worker: Option<usize> = None;
    for (i, t) in job.tasks.iter().enumerate() {
        if Some(i) != ps && worker.is_none_or(|w| t.inst > job.tasks[w].inst) {
            worker = Some(i);
        }
    }
    let Some(w) = worker else {
        return Err(RowError::new(
            "task_name",
            "job without workers",
            format!("job `{}` has only a ps task", job.name),
        ));
    };
    let dropped = job.tasks.len() - 1 - usize::from(ps.is_some());
    for _ in 0..dropped {
        report.note("auxiliary task dropped (evaluator, chief, ...)");
    }
    let start = job
        .tasks
        .iter()
        .map(|t| t.start)
        .fold(f64::INFINITY, f64::min);
    let outcome = if job.tasks.iter().any(|t| t.status == Outcome::Failed) {
        Outcome::Failed
    } else if job.tasks.iter().any(|t| t.status == Outcome::Censored) {
        Outcome::Censored
    } else {
        Outcome::Completed
    };
    let end = job
        .tasks
        .iter()
        .map(|t| t.end.unwrap_or(latest))
        .fold(start, f64::max);
    let duration_s = secs(end - start);
    let wt = &job.tasks[w];
    let (ps_n, ps_cpu, ps_mem_mb) = ps.map_or((0, 0.0, 0), |p| {
        let t = &job.tasks[p];
        (t.inst, t.cpu, t.mem_mb)
    });
    Ok(Draft {
        submit_s: secs(start - t0),
        user: String::new(),
        priority: 0,
        shape: Shape {
            workers: wt.inst,
            ps: ps_n,
            worker_cpu: wt.cpu,
            worker_mem_mb: wt.mem_mb,
            worker_gpu: wt.gpu,
            ps_cpu,
            ps_mem_mb,
        },
        duration_s: Some(duration_s),
        observed: Observed {
            name: job.name,
            outcome,
            duration_s: Some(duration_s),
            wait_s: None,
            scale: Vec::new(),
        },
        synthesized: Vec::new(),
        line: job.line,
    })
}

/// Reads the PAI machine spec. Errors always stop the import.
pub fn read_machines(path: &Path) -> Result<Vec<NodeRow>, InputError> {
    Lines::open(path)?.node_rows("the machine spec has no machines", |text| {
        let r = Row::csv(text, MACHINE_COLS)?;
        let gpus = r.non_negative(4)?.round() as u32;
        Ok(NodeRow {
            name: r.str(0).to_string(),
            cores: r.positive(2)?,
            mem_gb: r.positive(3)?,
            gpus,
            gpu_model: if gpus > 0 {
                r.str(1).to_string()
            } else {
                String::new()
            },
        })
    })
}
