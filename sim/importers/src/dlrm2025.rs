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
//!   counts after every change, in the job's roles (`ps` = CN, `workers` = HN; CN for an
//!   app without HN). The job's `ps` and `workers` (its request) are the peak counts over
//!   its life (the peaks of the two roles may fall at different times); under `static` the
//!   world follows the recorded counts (`dlsim_model::world::recorded`), and `steps` are
//!   sized on them (`synth`), so an uncontended replay lasts about the recorded life;
//! - `submit_s` = the app's first creation; real duration = its last deletion (or the window
//!   end) minus that; outcome `completed` when every instance was deleted in the window.
//!
//! Pod failures, from the trace's own evidence. The trace records no failures, but a
//! failed serving instance is replaced by its controller: it shows as a deletion followed
//! within [`REPLACE_WINDOW_S`] by a creation in the same app and role. Scale-downs (no
//! creation follows) and rolling updates (creations before deletions, or several deletions
//! together) are not failures. So an *isolated replacement* is a deletion with a creation
//! of the same app and role in `[d, d + W]`, no other deletion of it in `[d - W, d + W]` and
//! no creation in `[d - W, d)`. Their count per instance-day in the window (instances
//! alive before the window count from 0, those alive at its end until then) is the
//! failure rate, reported in `derived` as `pod_failure_per_day` (`1 - exp(-rate)`, the
//! daily probability the scenario's `faults.pod_failure_per_day` takes), with
//! `isolated_replacements` and `instance_days`. On the published trace: 506 isolated
//! replacements in 245,303 instance-days, 0.21% a day (W = 60 s gives 497, 600 s 445:
//! the figure does not hinge on W), against the 1.5% default (DLRover-RM's training
//! pods). Any replacement within W, rolling updates included, would give 1.4%; that is an
//! upper bound. The trace has no per-job failure field, so the figure goes to the report
//! and `scenarios/import-dlrm2025.json` sets it.
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

/// How soon after a deletion a replacement must be created to count as one (a choice: a
/// controller re-creates a failed pod within seconds; 300 s covers scheduling and the
/// trace's whole-second times with room; the module doc gives the sensitivity).
pub const REPLACE_WINDOW_S: u64 = 300;

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
    /// Per role (CN, HN): creation times inside the window and deletion times, for the
    /// failure evidence; and the instances' summed life in the window (s, ends filled in
    /// at the window end).
    created_in_window: [Vec<u64>; 2],
    deleted: [Vec<u64>; 2],
    life_s: u64,
    alive_since: Vec<u64>,
}

/// This format's entry in the registry (`crate::IMPORTERS`).
pub const IMPORTER: crate::Importer = crate::Importer {
    name: "dlrm2025",
    source: "Alibaba disaggregated DLRM trace (v2025)",
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
                created_in_window: [Vec::new(), Vec::new()],
                deleted: [Vec::new(), Vec::new()],
                life_s: 0,
                alive_since: Vec::new(),
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
        let role = usize::from(row.is_hn);
        if row.in_window {
            app.created_in_window[role].push(row.created);
        }
        window_end = window_end.max(row.created);
        match row.deleted {
            Some(t) => {
                window_end = window_end.max(t);
                app.events.push((t, row.is_hn, -1));
                app.deleted[role].push(t);
                app.life_s += t - row.created;
            }
            None => {
                app.alive_at_end.push(row.is_hn);
                app.alive_since.push(row.created);
            }
        }
        Ok(())
    })?;
    derive_failure_rate(&mut apps, window_end, report);
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
    /// Created inside the window (not alive since before it).
    in_window: bool,
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
    let in_window = created.is_some();
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
        in_window,
        cpu,
        mem_mb,
        gpu,
        created: secs(created),
        deleted: deleted.map(secs),
    }))
}

/// Counts isolated replacements per instance-day (module doc) and reports the rate.
fn derive_failure_rate(apps: &mut [App], window_end: u64, report: &mut ImportReport) {
    let w = REPLACE_WINDOW_S;
    let (mut failures, mut life_s) = (0u64, 0u64);
    for app in apps.iter_mut() {
        life_s += app.life_s;
        life_s += app
            .alive_since
            .iter()
            .map(|&c| window_end.saturating_sub(c))
            .sum::<u64>();
        for role in 0..2 {
            let created = &mut app.created_in_window[role];
            let deleted = &mut app.deleted[role];
            created.sort_unstable();
            deleted.sort_unstable();
            let count_in = |v: &[u64], lo: u64, hi: u64| {
                v.partition_point(|&t| t <= hi) - v.partition_point(|&t| t < lo)
            };
            for &d in deleted.iter() {
                let replaced = count_in(created, d, d + w) > 0;
                let alone = count_in(deleted, d.saturating_sub(w), d + w) == 1;
                let surge = d > 0 && count_in(created, d.saturating_sub(w), d - 1) > 0;
                if replaced && alone && !surge {
                    failures += 1;
                }
            }
        }
    }
    let instance_days = life_s as f64 / 86_400.0;
    if instance_days > 0.0 {
        let rate = failures as f64 / instance_days;
        let per_day = 1.0 - (-rate).exp();
        report
            .derived
            .insert("pod_failure_per_day".into(), (per_day * 1e6).round() / 1e6);
        report
            .derived
            .insert("isolated_replacements".into(), failures as f64);
        report
            .derived
            .insert("instance_days".into(), instance_days.round());
    }
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
    if peak_hn == 0 {
        // No HN: the CN instances are the job's workers (see the shape below).
        for e in &mut scale {
            (e.ps, e.workers) = (0, e.ps);
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
        duration_s: Some(duration_s),
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
