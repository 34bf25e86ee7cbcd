//! Alibaba disaggregated DLRM trace (alibaba/clusterdata cluster-trace-gpu-v2025):
//! one row per instance, header `instance_sn,role,app_name,cpu_request,cpu_limit,
//! gpu_request,gpu_limit,rdma_request,rdma_limit,memory_request,memory_limit,disk_request,
//! disk_limit,max_instance_per_node,creation_time,scheduled_time,deletion_time`
//! (memory in GiB, times in seconds from the window start, empty = outside the window).
//!
//! The trace is of serving, not training; it is imported as a source of topology (CPU
//! "CN" and GPU "HN" pods per app) and churn. Mapping:
//!
//! - each `app_name` becomes one job; its CN instances become PS-like CPU pods and its HN
//!   instances GPU workers (if an app has no HN, its CN become CPU workers and it has no PS);
//! - per-pod requests are the largest of the app's instances of that role
//!   (`cpu_request` cores, `memory_request` GiB x 1024 MB, `ceil(gpu_request)` GPUs), so every
//!   instance fits its pod (apps with mixed instance sizes are counted as a note);
//! - an empty `creation_time` means the instance existed before the window: it counts from
//!   time 0. An empty `deletion_time` means it was alive at the window's end (the latest time
//!   in the file): it counts until then and the app's outcome is `censored`. Both are counted
//!   as notes. A row with a creation time but no scheduled time was never scheduled in the
//!   window and is left out (counted by rule);
//! - each creation and deletion is an elastic scale event: `observed.scale` lists the pod
//!   counts after every change. The simulator does not apply scale events yet, so the job's
//!   `ps` and `workers` are the peak counts over its life (the peaks of the two roles may
//!   fall at different times);
//! - `submit_s` = the app's first creation; real duration = its last deletion (or the window
//!   end) minus that; outcome `completed` when every instance was deleted in the window.
//!
//! The trace has no node list: the cluster is sized by the peak-demand rule (`cluster`
//! module) with 192-core 1,024 GB CPU nodes and 8-GPU 128-core 1,024 GB GPU nodes.

use crate::cluster::NodeShape;
use crate::input::{reject_nodes, Lines, Row, RowError};
use crate::report::ImportReport;
use crate::synth::{Draft, Shape};
use crate::{secs, ImportOptions, Parsed};
use dlsim_traces::{InputError, Observed, Outcome, ScaleEvent};
use std::collections::HashMap;

const COLS: &[&str] = &[
    "instance_sn",
    "role",
    "app_name",
    "cpu_request",
    "cpu_limit",
    "gpu_request",
    "gpu_limit",
    "rdma_request",
    "rdma_limit",
    "memory_request",
    "memory_limit",
    "disk_request",
    "disk_limit",
    "max_instance_per_node",
    "creation_time",
    "scheduled_time",
    "deletion_time",
];

pub(crate) fn node_shapes() -> (NodeShape, NodeShape) {
    (
        NodeShape {
            prefix: "dlrm-cn",
            cores: 192.0,
            mem_gb: 1024.0,
            gpus: 0,
            gpu_model: "",
        },
        NodeShape {
            prefix: "dlrm-hn",
            cores: 128.0,
            mem_gb: 1024.0,
            gpus: 8,
            gpu_model: "",
        },
    )
}

/// Largest request and instance sizes seen for one role of one app.
#[derive(Default)]
struct RoleAcc {
    cpu: f64,
    mem_mb: u64,
    gpu: u32,
    sizes: Vec<(u64, u64, u32)>,
}

struct App {
    name: String,
    line: usize,
    cn: RoleAcc,
    hn: RoleAcc,
    /// (time, is_hn, +1 created / -1 deleted); `None` time = alive at window end.
    events: Vec<(u64, bool, i32)>,
    alive_at_end: Vec<bool>,
}

pub(crate) fn read(
    mut lines: Lines,
    opts: &ImportOptions,
    report: &mut ImportReport,
) -> Result<Parsed, InputError> {
    reject_nodes(
        lines.path(),
        opts.nodes.as_deref(),
        "dlrm2025",
        "the cluster is sized by rule",
    )?;
    lines.header(COLS, "the DLRM trace")?;
    // Apps in first-seen order; the map is only looked up, never iterated.
    let mut apps: Vec<App> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut window_end = 0u64;
    lines.each_row(opts.skip_bad, report, |line_no, text, report| {
        let Some(row) = instance(text, report)? else {
            return Ok(());
        };
        let i = *index.entry(row.app.clone()).or_insert_with(|| {
            apps.push(App {
                name: row.app.clone(),
                line: line_no,
                cn: RoleAcc::default(),
                hn: RoleAcc::default(),
                events: Vec::new(),
                alive_at_end: Vec::new(),
            });
            apps.len() - 1
        });
        let app = &mut apps[i];
        let acc = if row.is_hn { &mut app.hn } else { &mut app.cn };
        acc.cpu = acc.cpu.max(row.cpu);
        acc.mem_mb = acc.mem_mb.max(row.mem_mb);
        acc.gpu = acc.gpu.max(row.gpu);
        let size = ((row.cpu * 1000.0) as u64, row.mem_mb, row.gpu);
        if !acc.sizes.contains(&size) {
            acc.sizes.push(size);
        }
        app.events.push((row.created, row.is_hn, 1));
        window_end = window_end.max(row.created);
        match row.deleted {
            Some(t) => {
                window_end = window_end.max(t);
                app.events.push((t, row.is_hn, -1));
            }
            None => app.alive_at_end.push(row.is_hn),
        }
        Ok(())
    })?;
    let drafts = apps
        .into_iter()
        .map(|a| finish(a, window_end, report))
        .collect();
    Ok(Parsed {
        drafts,
        nodes: None,
    })
}

struct Instance {
    app: String,
    is_hn: bool,
    cpu: f64,
    mem_mb: u64,
    gpu: u32,
    created: u64,
    deleted: Option<u64>,
}

fn instance(text: &str, report: &mut ImportReport) -> Result<Option<Instance>, RowError> {
    let r = Row::csv(text, COLS)?;
    let is_hn = match r.str(1) {
        "HN" => true,
        "CN" => false,
        other => {
            return Err(RowError::new(
                "role",
                "unknown role",
                format!("expected CN or HN, got `{other}`"),
            ))
        }
    };
    if r.str(2).is_empty() {
        return Err(RowError::new("app_name", "missing", "the field is empty"));
    }
    let cpu = r.positive(3)?;
    let gpu = r.non_negative(5)?.ceil() as u32;
    let mem_mb = (r.positive(9)? * 1024.0).ceil() as u64;
    let created = r.opt_time_s(14)?;
    let scheduled = r.opt_time_s(15)?;
    let deleted = r.opt_time_s(16)?;
    let created = match (created, scheduled) {
        (None, _) => {
            report.note("instance created before the window (counted from 0)");
            0.0
        }
        (Some(_), None) => {
            report.skip_by_rule("instance created but never scheduled in the window");
            return Ok(None);
        }
        (Some(c), Some(_)) => c,
    };
    if deleted.is_none() {
        report.note("instance alive at the window end (censored)");
    }
    if let Some(d) = deleted {
        if d < created {
            return Err(RowError::new(
                "deletion_time",
                "before creation_time",
                format!("deleted at {d} s, before its creation at {created} s"),
            ));
        }
    }
    Ok(Some(Instance {
        app: r.str(2).to_string(),
        is_hn,
        cpu,
        mem_mb,
        gpu,
        created: secs(created),
        deleted: deleted.map(secs),
    }))
}

/// Turns an app's instances into one job with peak counts and its scale events.
fn finish(mut app: App, window_end: u64, report: &mut ImportReport) -> Draft {
    let censored = !app.alive_at_end.is_empty();
    app.events.sort_by_key(|e| e.0);
    let (mut cn, mut hn, mut peak_cn, mut peak_hn) = (0i64, 0i64, 0i64, 0i64);
    let mut scale: Vec<ScaleEvent> = Vec::new();
    for (k, &(t, is_hn, delta)) in app.events.iter().enumerate() {
        if is_hn {
            hn += i64::from(delta);
        } else {
            cn += i64::from(delta);
        }
        // Record the state once all changes at this second are applied.
        let last_at_t = app.events.get(k + 1).is_none_or(|next| next.0 != t);
        if last_at_t {
            peak_cn = peak_cn.max(cn);
            peak_hn = peak_hn.max(hn);
            scale.push(ScaleEvent {
                t_s: t,
                ps: cn.max(0) as u32,
                workers: hn.max(0) as u32,
            });
        }
    }
    // Instances alive at the end were never deleted, so counts at the end include them.
    let submit_s = app.events.first().map_or(0, |e| e.0);
    let last_delete = app
        .events
        .iter()
        .filter(|e| e.2 < 0)
        .map(|e| e.0)
        .max()
        .unwrap_or(submit_s);
    let end = if censored { window_end } else { last_delete };
    let duration_s = end.saturating_sub(submit_s);
    if app.cn.sizes.len() > 1 || app.hn.sizes.len() > 1 {
        report.note("app with mixed instance sizes (largest request taken)");
    }
    let shape = if peak_hn > 0 {
        Shape {
            workers: peak_hn as u32,
            ps: peak_cn.max(0) as u32,
            worker_cpu: app.hn.cpu,
            worker_mem_mb: app.hn.mem_mb,
            worker_gpu: app.hn.gpu,
            ps_cpu: app.cn.cpu,
            ps_mem_mb: app.cn.mem_mb,
        }
    } else {
        report.note("app without HN instances: CN instances become CPU workers");
        Shape {
            workers: peak_cn.max(1) as u32,
            ps: 0,
            worker_cpu: app.cn.cpu,
            worker_mem_mb: app.cn.mem_mb,
            worker_gpu: app.cn.gpu,
            ps_cpu: 0.0,
            ps_mem_mb: 0,
        }
    };
    Draft {
        submit_s,
        user: String::new(),
        priority: 0,
        shape,
        duration_s,
        observed: Observed {
            name: app.name,
            outcome: if censored {
                Outcome::Censored
            } else {
                Outcome::Completed
            },
            duration_s: Some(duration_s),
            wait_s: None,
            scale,
        },
        synthesized: Vec::new(),
        line: app.line,
    }
}
