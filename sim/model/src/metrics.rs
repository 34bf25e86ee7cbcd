//! Run outputs: `summary.json`, `jobs.csv`, `timeline.csv` (reproducible, byte-identical for
//! the same scenario and seed) and `run.json` (wall-clock figures, not reproducible).
//!
//! Every file is written to a temporary name and renamed, so an interrupted or failed run
//! never leaves a partial output behind.

use crate::job::{FailReason, Job};
use crate::policy::JobPhase;
use crate::Resources;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One row of `timeline.csv`: cluster state at a sampling instant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineRow {
    pub time_s: u64,
    pub cpu_alloc: f64,
    pub cpu_used: f64,
    pub mem_alloc_mb: f64,
    pub mem_used_mb: f64,
    pub gpu_alloc: f64,
    pub gpu_used: f64,
    pub running_jobs: u32,
    pub active_jobs: u32,
    pub pending_pods: u32,
}

/// The headline numbers of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub scenario: String,
    pub policy: String,
    pub seed: u64,
    pub jobs_submitted: usize,
    pub jobs_completed: usize,
    pub jobs_failed: usize,
    pub jcr: f64,
    pub jct_mean_s: f64,
    pub jct_median_s: f64,
    pub jct_p90_s: f64,
    /// Job-level utilisation: used / allocated over each job's life, averaged over jobs.
    pub cpu_util_mean: f64,
    pub mem_util_mean: f64,
    /// Over jobs that hold GPUs; 0 when none do.
    pub gpu_util_mean: f64,
    /// Pooled utilisation, as a cluster's utilisation plot shows its jobs (DLRover-RM
    /// Fig. 14, DLRover Sec. 6.4): used / allocated summed over every batch job's life
    /// (core- and MB-seconds), so each job weighs by what it held and for how long; overall
    /// and by role. 0 when nothing was allocated (a run of online jobs only, or a role no job
    /// has, such as PS on an all-reduce trace). (The `*_util_mean` fields above weigh every job
    /// alike: a job of two pods for a minute counts as much as one of a hundred for a day.)
    pub pooled_cpu_util: f64,
    pub pooled_mem_util: f64,
    pub pooled_worker_cpu_util: f64,
    pub pooled_ps_cpu_util: f64,
    pub pooled_worker_mem_util: f64,
    pub pooled_ps_mem_util: f64,
    /// Cluster-level utilisation: used / capacity, time-averaged over the trace's arrival
    /// window (first to last submission), so a long tail of one straggling job does not
    /// dilute it.
    pub cluster_cpu_util: f64,
    pub cluster_mem_util: f64,
    pub cluster_gpu_util: f64,
    /// Time-averaged allocated / capacity.
    pub cluster_cpu_alloc: f64,
    pub cluster_mem_alloc: f64,
    pub failures_by_reason: BTreeMap<String, usize>,
    pub oom_kills: u64,
    /// Pods lost to failures (not OOM), and relaunches, summed over jobs.
    pub pod_failures: u64,
    pub relaunches: u64,
    /// Pods evicted by co-located services, and pods lost with their node.
    pub evictions: u64,
    pub node_failures: u64,
    /// Elastic changes applied (worker scaling, rescales, pod replacements).
    pub rescales: u64,
    pub rejected_actions: u64,
    pub makespan_s: f64,
    pub events: u64,
    /// Online jobs' totals (present when the scenario has online jobs): Kale's metrics
    /// summed over jobs, the violation rate over all their sampled minutes.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub online: Option<OnlineTotals>,
    /// Each online job's metrics.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub online_jobs: Vec<crate::online::OnlineSummary>,
}

/// The online jobs of a run, together (flattened into `summary.json` as `online_*`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OnlineTotals {
    pub online_violation_rate: f64,
    pub online_accumulated_lag_min: f64,
    pub online_downtime_min: f64,
    pub online_gpu_hours: f64,
    pub online_rescales: u64,
    pub online_pods_lost: u64,
    /// Holt-Winters' forecast MAPE (%) `rescale` minutes ahead, averaged over the jobs
    /// long enough to evaluate it (absent when none is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub online_forecast_mape_pct: Option<f64>,
}

impl OnlineTotals {
    /// The totals of `jobs`; `None` for a run without online jobs.
    pub fn of(jobs: &[crate::online::OnlineSummary]) -> Option<OnlineTotals> {
        if jobs.is_empty() {
            return None;
        }
        let minutes: u64 = jobs.iter().map(|j| j.minutes).sum();
        let violations: f64 = jobs
            .iter()
            .map(|j| j.violation_rate * j.minutes as f64)
            .sum();
        let mapes: Vec<f64> = jobs
            .iter()
            .filter_map(|j| j.forecast_mape_pct.get("holt_winters")?.as_f64())
            .collect();
        Some(OnlineTotals {
            online_violation_rate: violations / minutes.max(1) as f64,
            online_accumulated_lag_min: jobs.iter().map(|j| j.accumulated_lag_min).sum(),
            online_downtime_min: jobs.iter().map(|j| j.downtime_min).sum(),
            online_gpu_hours: jobs.iter().map(|j| j.gpu_hours).sum(),
            online_rescales: jobs.iter().map(|j| j.rescales).sum(),
            online_pods_lost: jobs.iter().map(|j| j.pods_lost).sum(),
            online_forecast_mape_pct: (!mapes.is_empty())
                .then(|| mapes.iter().sum::<f64>() / mapes.len() as f64),
        })
    }
}

/// The `q`-quantile of sorted data by linear interpolation between closest ranks.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The median of unsorted data, equal to `quantile(sorted, 0.5)`, by selection instead of a
/// sort (it reorders `xs`). For the straggler check, which runs at every rate refresh of a
/// job with a slow worker.
pub fn median_in_place(xs: &mut [f64]) -> f64 {
    let n = xs.len();
    if n == 0 {
        return 0.0;
    }
    let (below, &mut upper, _) = xs.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        return upper;
    }
    let lower = below.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    lower + (upper - lower) * 0.5
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// What the summary and `jobs.csv` need from each job, taken as the job ends: a row of
/// `jobs.csv` and running totals. A run holds this, not its ended jobs, so its memory
/// grows with live jobs (plus one JCT per completed job, for the exact median).
#[derive(Clone, Debug, Default)]
pub struct JobTally {
    /// `jobs.csv` so far: the header, then one row per ended job, in the order they ended.
    pub csv: String,
    jcts: Vec<f64>,
    failures: BTreeMap<String, usize>,
    submitted: usize,
    failed: usize,
    submits: Option<(u64, u64)>,
    utils: [(f64, usize); 3],
    /// Every ended job's usage integrals, summed (the pooled utilisation).
    pooled: crate::job::UsageIntegrals,
    oom_kills: u64,
    pod_failures: u64,
    relaunches: u64,
    evictions: u64,
    node_failures: u64,
    rescales: u64,
    makespan: Option<dlsim_engine::SimTime>,
}

pub const JOBS_HEADER: &str = "id,user,model,submit_s,start_s,end_s,status,fail_reason,workers,ps,worker_cpu,worker_mem_mb,worker_gpu,ps_cpu,ps_mem_mb,steps,steps_done,jct_s,cpu_util,mem_util,gpu_util,oom_kills,pod_failures,relaunches,evictions,node_failures,rescales,sharding,batch_size,dense_mb,emb_dim,req_cores,worker_cpu_util,ps_cpu_util,worker_mem_util,ps_mem_util,seen_hot_ps,seen_straggler,init_workers,init_ps,settled_s,params_m,managed\n";

impl JobTally {
    /// Jobs tallied so far: every job is tallied once, when it ends.
    pub fn ended(&self) -> usize {
        self.submitted
    }

    pub fn new() -> Self {
        JobTally {
            csv: JOBS_HEADER.to_string(),
            ..JobTally::default()
        }
    }

    /// Takes an ended job (completed or failed): its row and its share of the totals.
    pub fn add(&mut self, j: &Job) {
        job_row(&mut self.csv, j);
        self.submitted += 1;
        match j.phase() {
            JobPhase::Completed => self.jcts.push(
                (j.ended_at().expect("completed job has an end") - j.request.submit).as_secs_f64(),
            ),
            JobPhase::Failed => self.failed += 1,
            _ => {}
        }
        if let Some(r) = j.fail_reason() {
            *self.failures.entry(r.as_str().to_string()).or_insert(0) += 1;
        }
        let t = j.spec.submit_s;
        self.submits = Some(self.submits.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        let u = &j.usage;
        for (acc, r) in self.utils.iter_mut().zip([
            ratio(u.cpu_used_core_s, u.cpu_alloc_core_s),
            ratio(u.mem_used_mb_s, u.mem_alloc_mb_s),
            ratio(u.gpu_used_s, u.gpu_alloc_s),
        ]) {
            if let Some(r) = r {
                *acc = (acc.0 + r, acc.1 + 1);
            }
        }
        self.pooled.add(u);
        self.oom_kills += u64::from(j.oom_kills);
        self.pod_failures += u64::from(j.pod_failures);
        self.relaunches += u64::from(j.restarts[0] + j.restarts[1]);
        self.evictions += u64::from(j.evictions);
        self.node_failures += u64::from(j.node_failures);
        self.rescales += u64::from(j.rescales);
        self.makespan = self.makespan.max(j.ended_at());
    }
}

pub struct SummaryInputs<'a> {
    pub scenario: &'a str,
    pub policy: &'a str,
    pub seed: u64,
    pub jobs: &'a JobTally,
    pub timeline: &'a [TimelineRow],
    pub capacity: Resources,
    pub events: u64,
    pub rejected_actions: u64,
    pub online: &'a [crate::online::OnlineSummary],
}

pub fn summarize(x: &SummaryInputs<'_>) -> Summary {
    let t = x.jobs;
    let mut jcts = t.jcts.clone();
    jcts.sort_by(f64::total_cmp);
    let completed = jcts.len();
    let cap = x.capacity;
    let (first, last) = t.submits.unwrap_or((0, 0));
    let window: Vec<&TimelineRow> = x
        .timeline
        .iter()
        .filter(|r| r.time_s >= first && r.time_s <= last)
        .collect();
    let tl = if window.is_empty() {
        x.timeline.iter().collect()
    } else {
        window
    };
    let util = |(s, n): (f64, usize)| if n == 0 { 0.0 } else { s / n as f64 };
    let p = &t.pooled;
    let pooled = |used: f64, alloc: f64| ratio(used, alloc).unwrap_or(0.0);
    let summary = Summary {
        scenario: x.scenario.to_string(),
        policy: x.policy.to_string(),
        seed: x.seed,
        jobs_submitted: t.submitted,
        jobs_completed: completed,
        jobs_failed: t.failed,
        jcr: ratio(completed as f64, t.submitted as f64).unwrap_or(0.0),
        jct_mean_s: mean(t.jcts.iter().copied()),
        jct_median_s: quantile(&jcts, 0.5),
        jct_p90_s: quantile(&jcts, 0.9),
        cpu_util_mean: util(t.utils[0]),
        mem_util_mean: util(t.utils[1]),
        gpu_util_mean: util(t.utils[2]),
        pooled_cpu_util: pooled(p.cpu_used_core_s, p.cpu_alloc_core_s),
        pooled_mem_util: pooled(p.mem_used_mb_s, p.mem_alloc_mb_s),
        pooled_worker_cpu_util: pooled(p.role_cpu_used_core_s[0], p.role_cpu_alloc_core_s[0]),
        pooled_ps_cpu_util: pooled(p.role_cpu_used_core_s[1], p.role_cpu_alloc_core_s[1]),
        pooled_worker_mem_util: pooled(p.role_mem_used_mb_s[0], p.role_mem_alloc_mb_s[0]),
        pooled_ps_mem_util: pooled(p.role_mem_used_mb_s[1], p.role_mem_alloc_mb_s[1]),
        cluster_cpu_util: mean(tl.iter().map(|r| r.cpu_used))
            / cap.cpu_cores().max(f64::MIN_POSITIVE),
        cluster_mem_util: mean(tl.iter().map(|r| r.mem_used_mb))
            / (cap.mem_mb as f64).max(f64::MIN_POSITIVE),
        cluster_gpu_util: ratio(mean(tl.iter().map(|r| r.gpu_used)), f64::from(cap.gpu))
            .unwrap_or(0.0),
        cluster_cpu_alloc: mean(tl.iter().map(|r| r.cpu_alloc))
            / cap.cpu_cores().max(f64::MIN_POSITIVE),
        cluster_mem_alloc: mean(tl.iter().map(|r| r.mem_alloc_mb))
            / (cap.mem_mb as f64).max(f64::MIN_POSITIVE),
        failures_by_reason: t.failures.clone(),
        oom_kills: t.oom_kills,
        pod_failures: t.pod_failures,
        relaunches: t.relaunches,
        evictions: t.evictions,
        node_failures: t.node_failures,
        rescales: t.rescales,
        rejected_actions: x.rejected_actions,
        makespan_s: t.makespan.map_or(0.0, |t| t.as_secs_f64()),
        events: x.events,
        online_jobs: x.online.to_vec(),
        online: OnlineTotals::of(x.online),
    };
    debug_assert!(
        summary.non_finite().is_none(),
        "summary metric `{}` is not finite: {summary:?}",
        summary.non_finite().unwrap_or_default()
    );
    summary
}

impl Summary {
    /// The first metric that is NaN or infinite, if any: a bug, since every input was
    /// range-checked on load (the world asserts against it in debug builds).
    pub fn non_finite(&self) -> Option<&'static str> {
        [
            ("jcr", self.jcr),
            ("jct_mean_s", self.jct_mean_s),
            ("jct_median_s", self.jct_median_s),
            ("jct_p90_s", self.jct_p90_s),
            ("cpu_util_mean", self.cpu_util_mean),
            ("mem_util_mean", self.mem_util_mean),
            ("gpu_util_mean", self.gpu_util_mean),
            ("pooled_cpu_util", self.pooled_cpu_util),
            ("pooled_mem_util", self.pooled_mem_util),
            ("pooled_worker_cpu_util", self.pooled_worker_cpu_util),
            ("pooled_ps_cpu_util", self.pooled_ps_cpu_util),
            ("pooled_worker_mem_util", self.pooled_worker_mem_util),
            ("pooled_ps_mem_util", self.pooled_ps_mem_util),
            ("cluster_cpu_util", self.cluster_cpu_util),
            ("cluster_mem_util", self.cluster_mem_util),
            ("cluster_gpu_util", self.cluster_gpu_util),
            ("cluster_cpu_alloc", self.cluster_cpu_alloc),
            ("cluster_mem_alloc", self.cluster_mem_alloc),
            ("makespan_s", self.makespan_s),
        ]
        .into_iter()
        .find(|(_, v)| !v.is_finite())
        .map(|(name, _)| name)
    }
}

impl TimelineRow {
    /// Whether every quantity of the row is a finite number.
    pub fn is_finite(&self) -> bool {
        [
            self.cpu_alloc,
            self.cpu_used,
            self.mem_alloc_mb,
            self.mem_used_mb,
            self.gpu_alloc,
            self.gpu_used,
        ]
        .iter()
        .all(|v| v.is_finite())
    }
}

/// Appends job `j`'s row of `jobs.csv` to `out`.
fn job_row(out: &mut String, j: &Job) {
    let opt_s = |t: Option<dlsim_engine::SimTime>| {
        t.map(|t| format!("{:.3}", t.as_secs_f64()))
            .unwrap_or_default()
    };
    let opt_f = |x: Option<f64>| x.map(|x| format!("{x:.4}")).unwrap_or_default();
    let c = &j.config;
    let status = match j.phase() {
        JobPhase::Completed => "completed",
        JobPhase::Failed => "failed",
        _ => "active",
    };
    let jct = (j.phase() == JobPhase::Completed)
        .then(|| (j.ended_at().expect("ended") - j.request.submit).as_secs_f64());
    let u = &j.usage;
    writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.3},{}",
        j.spec.id,
        j.spec.user,
        j.spec.model,
        j.spec.submit_s,
        opt_s(j.start()),
        opt_s(j.ended_at()),
        status,
        j.fail_reason().map(FailReason::as_str).unwrap_or(""),
        c.workers,
        c.ps,
        c.worker_cpu,
        c.worker_mem_mb,
        c.worker_gpu,
        c.ps_cpu,
        c.ps_mem_mb,
        j.spec.steps,
        j.steps_done(),
        opt_f(jct),
        opt_f(ratio(u.cpu_used_core_s, u.cpu_alloc_core_s)),
        opt_f(ratio(u.mem_used_mb_s, u.mem_alloc_mb_s)),
        opt_f(ratio(u.gpu_used_s, u.gpu_alloc_s)),
        j.oom_kills,
        j.pod_failures,
        j.restarts[0] + j.restarts[1],
        j.evictions,
        j.node_failures,
        j.rescales,
        match j.sharding {
            crate::policy::Sharding::Static => "static",
            crate::policy::Sharding::Dynamic => "dynamic",
        },
        j.spec.batch_size,
        j.spec.dense_mb,
        j.spec.emb_dim,
        j.request.requested.total().cpu_cores(),
        opt_f(ratio(u.role_cpu_used_core_s[0], u.role_cpu_alloc_core_s[0])),
        opt_f(ratio(u.role_cpu_used_core_s[1], u.role_cpu_alloc_core_s[1])),
        opt_f(ratio(u.role_mem_used_mb_s[0], u.role_mem_alloc_mb_s[0])),
        opt_f(ratio(u.role_mem_used_mb_s[1], u.role_mem_alloc_mb_s[1])),
        u8::from(j.seen_hot_ps.seen()),
        u8::from(j.seen_straggler.seen()),
        j.launched.map(|c| c.workers.to_string()).unwrap_or_default(),
        j.launched.map(|c| c.ps.to_string()).unwrap_or_default(),
        // Seconds from the start of training to the last elastic change (0: never changed).
        opt_s(j.start().map(|s| j.last_rescale.map_or(s, |r| r.max(s)) - s)),
        j.params_m(),
        // 0 for a job the policy did not manage (`managed_share`).
        u8::from(!j.unmanaged),
    )
    .expect("writing to a String cannot fail");
}

/// Renders `timeline.csv`.
pub fn timeline_csv(rows: &[TimelineRow]) -> String {
    let mut out =
        String::from("time_s,cpu_alloc,cpu_used,mem_alloc_mb,mem_used_mb,gpu_alloc,gpu_used,running_jobs,active_jobs,pending_pods\n");
    for r in rows {
        writeln!(
            out,
            "{},{:.3},{:.3},{:.1},{:.1},{:.3},{:.3},{},{},{}",
            r.time_s,
            r.cpu_alloc,
            r.cpu_used,
            r.mem_alloc_mb,
            r.mem_used_mb,
            r.gpu_alloc,
            r.gpu_used,
            r.running_jobs,
            r.active_jobs,
            r.pending_pods
        )
        .expect("writing to a String cannot fail");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::UsageIntegrals;

    /// The pooled utilisation weighs each job by the core- and MB-seconds it held; the
    /// per-job mean weighs jobs alike.
    #[test]
    fn pooled_utilisation_weighs_jobs_by_what_they_held() {
        // A 2-core worker for a minute at 50% CPU, 40% memory, and a 100-core worker for a
        // day at 10% CPU, 20% memory; a PS only in the second job, at 30% CPU.
        let small = UsageIntegrals {
            role_cpu_alloc_core_s: [120.0, 0.0],
            role_cpu_used_core_s: [60.0, 0.0],
            role_mem_alloc_mb_s: [60_000.0, 0.0],
            role_mem_used_mb_s: [24_000.0, 0.0],
            cpu_alloc_core_s: 120.0,
            cpu_used_core_s: 60.0,
            mem_alloc_mb_s: 60_000.0,
            mem_used_mb_s: 24_000.0,
            ..UsageIntegrals::default()
        };
        let day = 86_400.0;
        let large = UsageIntegrals {
            role_cpu_alloc_core_s: [100.0 * day, 10.0 * day],
            role_cpu_used_core_s: [10.0 * day, 3.0 * day],
            role_mem_alloc_mb_s: [1e5 * day, 1e4 * day],
            role_mem_used_mb_s: [2e4 * day, 1e3 * day],
            cpu_alloc_core_s: 110.0 * day,
            cpu_used_core_s: 13.0 * day,
            mem_alloc_mb_s: 1.1e5 * day,
            mem_used_mb_s: 2.1e4 * day,
            ..UsageIntegrals::default()
        };
        let mut pooled = UsageIntegrals::default();
        pooled.add(&small);
        pooled.add(&large);
        let tally = JobTally {
            pooled,
            utils: [(0.5 + 13.0 / 110.0, 2), (0.4 + 2.1 / 11.0, 2), (0.0, 0)],
            ..JobTally::new()
        };
        let inputs = SummaryInputs {
            scenario: "s",
            policy: "p",
            seed: 1,
            jobs: &tally,
            timeline: &[],
            capacity: Resources::default(),
            events: 0,
            rejected_actions: 0,
            online: &[],
        };
        let s = summarize(&inputs);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-4;
        assert!(close(
            s.pooled_worker_cpu_util,
            (60.0 + 10.0 * day) / (120.0 + 100.0 * day)
        ));
        assert!(
            close(s.pooled_worker_cpu_util, 0.1),
            "the day-long job dominates"
        );
        assert!(close(s.pooled_ps_cpu_util, 0.3));
        assert!(close(s.pooled_worker_mem_util, 0.2));
        assert!(close(s.pooled_ps_mem_util, 0.1));
        assert!(close(s.pooled_cpu_util, 13.0 / 110.0));
        assert!(close(s.pooled_mem_util, 2.1 / 11.0));
        // The per-job mean counts the minute-long job as much as the day-long one.
        assert!(close(s.cpu_util_mean, (0.5 + 13.0 / 110.0) / 2.0));
        // Nothing allocated: 0, not NaN.
        let none = JobTally::new();
        let empty = summarize(&SummaryInputs {
            jobs: &none,
            ..inputs
        });
        assert_eq!(empty.pooled_ps_cpu_util, 0.0);
        assert!(empty.non_finite().is_none());
    }

    #[test]
    fn median_by_selection_is_the_sorted_median() {
        let mut rng = 12_345u64;
        for n in 1..40 {
            let mut xs: Vec<f64> = (0..n)
                .map(|_| {
                    rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    (rng >> 11) as f64 / (1u64 << 53) as f64 * 100.0
                })
                .collect();
            let mut sorted = xs.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(median_in_place(&mut xs), quantile(&sorted, 0.5), "n = {n}");
        }
        assert_eq!(median_in_place(&mut []), 0.0);
    }

    #[test]
    fn quantiles_interpolate() {
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&xs, 0.5), 3.0);
        assert_eq!(quantile(&xs, 0.9), 4.6);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}
