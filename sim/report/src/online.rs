//! The report's online section table: each policy's online jobs in the layout of Kale's
//! Table 3 (SLO violation rate, accumulated lag, downtime, GPU hours, rescales), pooled
//! over seeds as the summary table pools them.
//!
//! Every number comes from the runs' `summary.json`: a job's row from its `online_jobs`
//! entry, and, when a run has several online jobs, a `total` row per policy from the
//! top-level `online_*` totals (the violation rate over every sampled minute of every job,
//! the other metrics summed over jobs). Each cell is the mean over the policy's seeds, with
//! the lowest and highest seed beside it (`_lo`/`_hi` columns; `mean [lo..hi]` in the
//! documents), the same spread the figures draw as bands. A job missing from some runs of a
//! policy is pooled over the runs that have it (`runs` says how many).

use crate::aggregate::{policies, Run};
use crate::table::{shown, Cell, Table};
use serde_json::Value;

/// One Table 3 metric: its key in an `online_jobs` entry, its key among `summary.json`'s
/// totals, its column (unit last), its label, and the factor from the summary's unit.
struct Metric {
    job_key: &'static str,
    total_key: &'static str,
    column: &'static str,
    label: &'static str,
    scale: f64,
}

const METRICS: [Metric; 5] = [
    Metric {
        job_key: "violation_rate",
        total_key: "online_violation_rate",
        column: "violation_rate_pct",
        label: "SLO violation rate (%)",
        scale: 100.0,
    },
    Metric {
        job_key: "accumulated_lag_min",
        total_key: "online_accumulated_lag_min",
        column: "accumulated_lag_min",
        label: "accumulated lag (min)",
        scale: 1.0,
    },
    Metric {
        job_key: "downtime_min",
        total_key: "online_downtime_min",
        column: "downtime_min",
        label: "downtime (min)",
        scale: 1.0,
    },
    Metric {
        job_key: "gpu_hours",
        total_key: "online_gpu_hours",
        column: "gpu_hours",
        label: "GPU hours",
        scale: 1.0,
    },
    Metric {
        job_key: "rescales",
        total_key: "online_rescales",
        column: "rescales",
        label: "rescales",
        scale: 1.0,
    },
];

/// The name of the per-policy row of the totals over a run's online jobs.
pub const TOTAL: &str = "total";

/// Whether any run had online jobs.
pub fn has_online(runs: &[Run]) -> bool {
    runs.iter().any(|r| !r.online_jobs().is_empty())
}

/// The online jobs' names, in the order first met (runs in input order, each run's jobs in
/// its own order).
pub fn job_names(runs: &[Run]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in runs {
        for j in r.online_jobs() {
            let name = j["job"].as_str().unwrap_or("?");
            if !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// A column split around its unit: `violation_rate_pct` -> `violation_rate_lo_pct`;
/// a column without a unit suffix (`rescales`) gets `_lo` at the end.
fn spread_column(column: &str, which: &str) -> String {
    for unit in ["_pct", "_min", "_hours"] {
        if let Some(stem) = column.strip_suffix(unit) {
            return format!("{stem}_{which}{unit}");
        }
    }
    format!("{column}_{which}")
}

/// One pooled row: each metric's (mean, lowest, highest) over the runs' values.
struct Pooled {
    policy: String,
    job: String,
    runs: usize,
    metrics: Vec<(f64, f64, f64)>,
}

impl Pooled {
    /// The row's first cells, the same in both views: policy, online job, runs.
    fn head(&self) -> Vec<Cell> {
        vec![
            self.policy.clone().into(),
            self.job.clone().into(),
            Cell::Int(self.runs as i64),
        ]
    }
}

/// The rows of the table, policies in order, each policy's jobs then its total.
fn pooled(runs: &[Run]) -> Vec<Pooled> {
    let jobs = job_names(runs);
    let several = runs.iter().any(|r| r.online_jobs().len() > 1);
    let mut out = Vec::new();
    for policy in policies(runs) {
        let mine: Vec<&Run> = runs.iter().filter(|r| r.policy == policy).collect();
        let mut rows: Vec<(String, Vec<&Value>)> = jobs
            .iter()
            .map(|job| {
                let entries = mine
                    .iter()
                    .filter_map(|r| r.online_jobs().iter().find(|j| j["job"] == **job))
                    .collect();
                (job.clone(), entries)
            })
            .collect();
        if several {
            let totals = mine
                .iter()
                .filter(|r| !r.online_jobs().is_empty())
                .map(|r| &r.summary)
                .collect();
            rows.push((TOTAL.to_string(), totals));
        }
        for (job, entries) in rows {
            if entries.is_empty() {
                continue;
            }
            let key = |m: &Metric| if job == TOTAL { m.total_key } else { m.job_key };
            let metrics = METRICS
                .iter()
                .map(|m| {
                    let values: Vec<f64> = entries
                        .iter()
                        .map(|e| e[key(m)].as_f64().unwrap_or(f64::NAN) * m.scale)
                        .collect();
                    crate::figures::spread(&values)
                })
                .collect();
            out.push(Pooled {
                policy: policy.clone(),
                job,
                runs: entries.len(),
                metrics,
            });
        }
    }
    out
}

/// `table3`, tidy: one row per policy and online job (and a `total` row per policy when a
/// run has several jobs), each metric's mean over seeds with its lowest and highest seed.
pub fn table3_table(runs: &[Run]) -> Table {
    let mut columns = vec!["policy".to_string(), "job".into(), "runs".into()];
    for m in &METRICS {
        columns.push(m.column.into());
        columns.push(spread_column(m.column, "lo"));
        columns.push(spread_column(m.column, "hi"));
    }
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut t = Table::new(
        "table3",
        "Online jobs in the layout of Kale's Table 3 (mean over seeds, with the lowest and highest seed)",
        &names,
    );
    for m in &METRICS {
        for c in [
            m.column.to_string(),
            spread_column(m.column, "lo"),
            spread_column(m.column, "hi"),
        ] {
            let unit = crate::table::unit(&c).unwrap_or("count");
            t.units.insert(c, unit.into());
        }
    }
    for row in pooled(runs) {
        let mut cells = row.head();
        for (mean, lo, hi) in row.metrics {
            cells.extend([mean.into(), lo.into(), hi.into()]);
        }
        t.push(cells);
    }
    t
}

/// `table3` for people: each metric `mean [lo..hi]` over seeds (the mean alone for one
/// seed).
pub fn table3_view(runs: &[Run]) -> Table {
    let mut labels = vec!["policy", "online job", "runs"];
    labels.extend(METRICS.iter().map(|m| m.label));
    let mut t = Table::new(
        "table3",
        "Online jobs in the layout of Kale's Table 3: mean over seeds [lowest..highest seed]",
        &labels,
    );
    for row in pooled(runs) {
        let mut cells = row.head();
        for (mean, lo, hi) in row.metrics {
            let (m, l, h) = (shown(&mean.into()), shown(&lo.into()), shown(&hi.into()));
            cells.push(if row.runs > 1 {
                format!("{m} [{l}..{h}]").into()
            } else {
                m.into()
            });
        }
        t.push(cells);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::DataFrame;
    use std::path::PathBuf;

    fn run(policy: &str, seed: u64, jobs: &[(&str, f64)]) -> Run {
        let entries: Vec<Value> = jobs
            .iter()
            .map(|(job, x)| {
                serde_json::json!({"job": job, "violation_rate": x / 100.0,
                    "accumulated_lag_min": 10.0 * x, "downtime_min": x, "gpu_hours": 2.0 * x,
                    "rescales": 3})
            })
            .collect();
        let total: f64 = jobs.iter().map(|j| j.1).sum();
        Run {
            dir: PathBuf::new(),
            policy: policy.into(),
            seed,
            summary: serde_json::json!({"online_jobs": entries,
                "online_violation_rate": 0.5, "online_accumulated_lag_min": 10.0 * total,
                "online_downtime_min": total, "online_gpu_hours": 2.0 * total,
                "online_rescales": 3 * jobs.len()}),
            jobs: DataFrame::empty(),
            timeline: DataFrame::empty(),
            observations: None,
            online: None,
        }
    }

    #[test]
    fn rows_are_per_policy_and_job_with_totals_and_seed_spread() {
        let runs = vec![
            run("hpa", 1, &[("a", 2.0), ("b", 4.0)]),
            run("hpa", 2, &[("a", 6.0), ("b", 4.0)]),
            run("kale", 1, &[("a", 1.0), ("b", 1.0)]),
        ];
        let t = table3_table(&runs);
        assert_eq!(
            &t.columns[..6],
            [
                "policy",
                "job",
                "runs",
                "violation_rate_pct",
                "violation_rate_lo_pct",
                "violation_rate_hi_pct"
            ]
        );
        assert!(t.columns.contains(&"gpu_hi_hours".to_string()));
        assert!(t.columns.contains(&"rescales_lo".to_string()));
        let jobs: Vec<&Cell> = t.rows.iter().map(|r| &r[1]).collect();
        assert_eq!(jobs.len(), 6, "two jobs and a total per policy");
        // hpa, job a: 2% and 6% over two seeds.
        assert_eq!(t.rows[0][..3], ["hpa".into(), "a".into(), Cell::Int(2)]);
        assert_eq!(t.rows[0][3..6], [4.0.into(), 2.0.into(), 6.0.into()]);
        // hpa's total: the summaries' totals (violation rate 50%, lag 10 x (6 or 10)).
        assert_eq!(t.rows[2][1], Cell::Str(TOTAL.into()));
        assert_eq!(t.rows[2][3], 50.0.into());
        assert_eq!(t.rows[2][6..9], [80.0.into(), 60.0.into(), 100.0.into()]);
        assert_eq!(t.units["accumulated_lag_lo_min"], "min");
        assert_eq!(t.units["rescales_hi"], "count");
        let view = table3_view(&runs);
        assert_eq!(view.rows[0][3], Cell::Str("4.000 [2.000..6.000]".into()));
        assert_eq!(view.rows[3][3], Cell::Str("1.000".into()), "one seed");
        // One job per run: no total row.
        let single = vec![run("kale", 1, &[("a", 1.0)])];
        assert_eq!(table3_table(&single).rows.len(), 1);
        assert!(has_online(&single));
    }
}
