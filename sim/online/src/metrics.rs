//! Kale's metrics (Sec. Evaluation Metrics) and the run's outputs.
//!
//! * SLO violation rate: the share of sampled minutes whose lag exceeds `slo_lag_s` (20 min).
//! * Accumulated lag: the sum over minutes of the lag sampled at each minute's end, in minutes.
//! * Downtime: time the job held pods but trained nothing because of a rescale (pods
//!   loading, the stream being rebuilt), in minutes.
//! * GPU hours: worker pods held (one GPU each, from creation to removal) times time.
//!
//! The lag of the job is the age of its oldest untrained sample over all partitions (Kafka's
//! consumer lag in time, max over partitions); the backlog-weighted mean is reported too.

use crate::pods::Pods;
use crate::stream::IntervalOutcome;
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
    pub workers_sum: f64,
    pub peak_workers: u32,
    pub timeline: String,
}

impl Accumulator {
    pub fn new(slo_lag_s: f64) -> Self {
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
            workers_sum: 0.0,
            peak_workers: 0,
            timeline: "minute,arrival_sps,target_workers,pods,consuming,lag_s,mean_lag_s,backlog_samples\n".into(),
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
            "{m},{arrival_sps:.1},{target},{},{},{lag_s:.1},{mean_lag_s:.1},{backlog:.0}",
            pods.count(),
            pods.joined().len()
        );
    }
}

/// `summary.json` of an online run.
#[derive(Clone, Debug, Serialize)]
pub struct OnlineSummary {
    pub kind: &'static str,
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
            ("scenario", self.scenario.clone()),
            ("policy", self.policy.clone()),
            ("seed", self.seed.to_string()),
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
