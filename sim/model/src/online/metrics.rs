//! Kale's metrics (Sec. Evaluation Metrics) of one online job, and its lines of the run's
//! outputs (`summary.json`'s `online` list, `online.csv`).
//!
//! * SLO violation rate: the share of sampled minutes whose lag exceeds `slo_lag_s` (20 min).
//! * Accumulated lag: the sum over minutes of the lag sampled at each minute's end, in minutes.
//! * Downtime: time the job held pods but trained nothing because of a rescale (pods
//!   loading, the stream being rebuilt), in minutes.
//! * GPU hours: worker pods held (one GPU each, from creation to removal) times time.
//!
//! The lag of the job is the age of its oldest untrained sample over all partitions (Kafka's
//! consumer lag in time, max over partitions); the backlog-weighted mean is reported too.

use crate::online::pods::Pods;
use crate::online::stream::IntervalOutcome;
use serde::Serialize;
use std::fmt::Write as _;

/// Running totals, updated per interval and per minute.
#[derive(Clone, Debug)]
pub struct Accumulator {
    slo_lag_s: f64,
    pub minutes: u64,
    pub violations: u64,
    pub lag_sum_min: f64,
    pub max_lag_s: f64,
    pub mean_lag_sum_s: f64,
    pub downtime_ms: u64,
    pub gpu_seconds: f64,
    pub trained: f64,
    pub forwarded: f64,
    pub rescales: u64,
    /// Pods lost with their node (failure or eviction), each asked for again.
    pub pods_lost: u64,
    pub workers_sum: f64,
    pub peak_workers: u32,
    /// This job's `online.csv` rows (no header: [`ONLINE_CSV_HEADER`]).
    pub timeline: String,
    job: String,
}

/// The header of `online.csv`: one row per online job and minute.
pub const ONLINE_CSV_HEADER: &str =
    "job,minute,arrival_sps,target_workers,pods,consuming,lag_s,mean_lag_s,backlog_samples\n";

impl Accumulator {
    pub fn new(slo_lag_s: f64, job: &str) -> Self {
        Accumulator {
            slo_lag_s,
            minutes: 0,
            violations: 0,
            lag_sum_min: 0.0,
            max_lag_s: 0.0,
            mean_lag_sum_s: 0.0,
            downtime_ms: 0,
            gpu_seconds: 0.0,
            trained: 0.0,
            forwarded: 0.0,
            rescales: 0,
            pods_lost: 0,
            workers_sum: 0.0,
            peak_workers: 0,
            timeline: String::new(),
            job: job.to_string(),
        }
    }

    /// One advanced interval: `stalled_ms` of it trained nothing because of a rescale.
    pub fn interval(&mut self, dt_s: f64, stalled_ms: u64, pods: u32, out: &IntervalOutcome) {
        if pods > 0 {
            self.downtime_ms += stalled_ms;
        }
        self.gpu_seconds += f64::from(pods) * dt_s;
        self.trained += out.trained.iter().sum::<f64>();
        self.forwarded += out.forwarded;
    }

    /// The sample at the end of minute `m`.
    #[allow(clippy::too_many_arguments)]
    pub fn minute(
        &mut self,
        m: usize,
        arrival_sps: f64,
        target: u32,
        pods: &Pods,
        lag_s: f64,
        mean_lag_s: f64,
        backlog: f64,
    ) {
        self.minutes += 1;
        if lag_s > self.slo_lag_s {
            self.violations += 1;
        }
        self.lag_sum_min += lag_s / 60.0;
        self.max_lag_s = self.max_lag_s.max(lag_s);
        self.mean_lag_sum_s += mean_lag_s;
        self.workers_sum += f64::from(pods.count());
        self.peak_workers = self.peak_workers.max(pods.count());
        let _ = writeln!(
            self.timeline,
            "{},{m},{arrival_sps:.1},{target},{},{},{lag_s:.1},{mean_lag_s:.1},{backlog:.0}",
            self.job,
            pods.count(),
            pods.joined().len()
        );
    }
}

/// `summary.json` of an online run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OnlineSummary {
    pub kind: &'static str,
    /// The online job's name.
    pub job: String,
    pub scenario: String,
    pub policy: String,
    pub seed: u64,
    pub days: f64,
    pub minutes: u64,
    /// Share of minutes with lag over the SLO (Kale: 20 min).
    pub violation_rate: f64,
    pub accumulated_lag_min: f64,
    pub downtime_min: f64,
    pub gpu_hours: f64,
    pub rescales: u64,
    pub pods_lost: u64,
    pub mean_lag_s: f64,
    pub mean_partition_lag_s: f64,
    pub max_lag_s: f64,
    pub mean_workers: f64,
    pub peak_workers: u32,
    pub samples_arrived: f64,
    pub samples_trained: f64,
    pub shuffled_samples: f64,
    pub shuffle_traffic_mb: f64,
    pub rejected_actions: u64,
    /// MAPE of each forecaster `lead_min` ahead on this run's observed traffic.
    pub forecast_lead_min: usize,
    pub forecast_mape_pct: serde_json::Value,
    /// Held-out errors of throughput models fitted on the offline profile (Kale Fig. 7).
    pub throughput_fit: serde_json::Value,
    pub policy_report: serde_json::Value,
    pub events: u64,
}

impl OnlineSummary {
    /// The printed table, one metric a line.
    pub fn table(&self) -> String {
        let rows: Vec<(&str, String)> = vec![
            ("online job", self.job.clone()),
            ("autoscaler", self.policy.clone()),
            ("days", format!("{}", self.days)),
            (
                "SLO violation rate (lag > 20 min)",
                format!("{:.2}%", 100.0 * self.violation_rate),
            ),
            (
                "accumulated lag",
                format!("{:.0} min", self.accumulated_lag_min),
            ),
            (
                "downtime (rescaling)",
                format!("{:.0} min", self.downtime_min),
            ),
            ("GPU hours", format!("{:.1} h", self.gpu_hours)),
            ("rescales", self.rescales.to_string()),
            (
                "mean / max lag",
                format!(
                    "{:.1} s / {:.1} min",
                    self.mean_lag_s,
                    self.max_lag_s / 60.0
                ),
            ),
            (
                "mean / peak workers",
                format!("{:.2} / {}", self.mean_workers, self.peak_workers),
            ),
            (
                "samples trained / arrived",
                format!(
                    "{:.4}",
                    self.samples_trained / self.samples_arrived.max(1.0)
                ),
            ),
            (
                "shuffle traffic",
                format!("{:.0} MB", self.shuffle_traffic_mb),
            ),
        ];
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        rows.iter()
            .map(|(k, v)| format!("{k:<width$}  {v}\n"))
            .collect()
    }
}

/// Kale Table 3: violation rate (%), accumulated lag (min), downtime (min), GPU hours.
pub const PAPER_TABLE3: [(&str, f64, f64, f64, f64); 5] = [
    ("adequate", 0.0, 0.0, 0.0, 672.0),
    ("hpa", 19.57, 7151.0, 163.0, 268.0),
    ("autopilot", 5.49, 4420.0, 269.0, 303.0),
    ("madu", 2.57, 2303.0, 190.0, 455.0),
    ("kale", 2.60, 2204.0, 109.0, 242.0),
];
/// Our metrics next to Kale's Table 3, one row per policy.
pub fn table3(rows: &[OnlineSummary]) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "| scheme | violation rate (ours / paper) | accumulated lag, min (ours / paper) | downtime, min (ours / paper) | GPU hours (ours / paper) | GPU hours / adequate (ours / paper) | rescales |");
    let _ = writeln!(t, "|---|---|---|---|---|---|---|");
    let ours_adequate = rows
        .iter()
        .find(|s| scheme(&s.policy) == "adequate")
        .map(|s| s.gpu_hours);
    for s in rows {
        let name = scheme(&s.policy);
        let paper = PAPER_TABLE3.iter().find(|p| p.0 == name);
        let p = |f: fn(&(&str, f64, f64, f64, f64)) -> String| {
            paper.map(f).unwrap_or_else(|| "-".into())
        };
        let rel = ours_adequate
            .map(|a| format!("{:.2}", s.gpu_hours / a))
            .unwrap_or_else(|| "-".into());
        // A configured variant (e.g. an operator-tuned `hpa[...]`) is compared with the
        // paper's row of its scheme, and says so.
        let label = if paper.is_some() && s.policy != name {
            format!("{} (paper row: {name})", s.policy)
        } else {
            s.policy.clone()
        };
        let _ = writeln!(
            t,
            "| {label} | {:.2}% / {} | {:.0} / {} | {:.0} / {} | {:.1} / {} | {rel} / {} | {} |",
            100.0 * s.violation_rate,
            p(|r| format!("{:.2}%", r.1)),
            s.accumulated_lag_min,
            p(|r| format!("{:.0}", r.2)),
            s.downtime_min,
            p(|r| format!("{:.0}", r.3)),
            s.gpu_hours,
            p(|r| format!("{:.0}", r.4)),
            p(|r| format!("{:.2}", r.4 / 672.0)),
            s.rescales,
        );
    }
    t
}

/// The autoscaler scheme of a run's spec: `dlrover+hpa[up_window_s=540]` -> `hpa`.
fn scheme(policy: &str) -> &str {
    let auto = policy.rsplit('+').next().unwrap_or(policy);
    auto.split('[').next().unwrap_or(auto)
}
