//! Loading run folders into polars frames and aggregating them per policy: JCT statistics
//! over the pooled jobs of every seed, utilisation averaged over runs, deltas against a
//! baseline policy, and failure counts by reason.
//!
//! Policies are listed in the order they are first met in the inputs, and runs in input
//! order (a sweep folder in its grid order, a `replay --policy a,b` folder in the order of
//! its run folders' names), so a report is reproducible.

use crate::results::{format_delta, Delta};
use crate::table::{Cell, Provenance, Table};
use anyhow::{bail, Context};
use polars::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One run folder, loaded.
pub struct Run {
    pub dir: PathBuf,
    /// The policy spec the run was made with (from `summary.json`), with the scenario
    /// overrides of a sweep point appended.
    pub policy: String,
    pub seed: u64,
    pub summary: Value,
    pub jobs: DataFrame,
    pub timeline: DataFrame,
    /// `observations.csv`, when the run traced what policies observe.
    pub observations: Option<DataFrame>,
    /// `online.csv`, when the run had online jobs (one row per online job and minute).
    pub online: Option<DataFrame>,
}

impl Run {
    pub fn metric(&self, key: &str) -> f64 {
        self.summary
            .get(key)
            .and_then(Value::as_f64)
            .unwrap_or(f64::NAN)
    }

    /// The run's online jobs (`summary.json`'s `online_jobs`), empty without any.
    pub fn online_jobs(&self) -> &[Value] {
        self.summary["online_jobs"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Whether `jobs.csv` has a batch job (a row whose status is not `online`).
    pub fn has_batch_jobs(&self) -> anyhow::Result<bool> {
        Ok(strings(&self.jobs, "status")?.iter().any(|s| s != "online"))
    }
}

/// The run folders of a `dlsim replay --policy a,b --out DIR` folder: its sub-folders that
/// hold a `summary.json`, by name; `None` when `dir` has none (or is a run or sweep folder).
pub fn policy_folders(dir: &Path) -> Option<Vec<PathBuf>> {
    if dir.join("summary.json").is_file() || dir.join("sweep.json").is_file() {
        return None;
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.join("summary.json").is_file())
        .collect();
    found.sort();
    (!found.is_empty()).then_some(found)
}

/// Every run under `paths`: run folders as given, sweep folders as their runs in grid order.
pub fn load_runs(paths: &[PathBuf]) -> anyhow::Result<Vec<Run>> {
    let mut runs = Vec::new();
    for path in paths {
        if path.join("sweep.json").is_file() {
            let plan = crate::exec::read_plan(path)?;
            for p in &plan.points {
                if crate::exec::is_done(path, p) {
                    runs.push(load_run(&crate::exec::run_dir(path, p))?);
                }
            }
        } else if let Some(dirs) = policy_folders(path) {
            for dir in dirs {
                runs.push(load_run(&dir)?);
            }
        } else {
            runs.push(load_run(path)?);
        }
    }
    if runs.is_empty() {
        bail!("no finished runs under the given folders");
    }
    one_scenario(&runs)?;
    Ok(runs)
}

/// Fails, naming each scenario's first folder, when the runs come from more than one
/// scenario (by the `scenario` of their `summary.json`): runs of other scenarios replayed
/// other workloads on other clusters, so pooling their jobs under one policy, or pairing
/// their seeds for deltas, would mix them silently.
fn one_scenario(runs: &[Run]) -> anyhow::Result<()> {
    let mut seen: Vec<(&str, &Path, usize)> = Vec::new();
    for r in runs {
        let name = r.summary["scenario"].as_str().unwrap_or("?");
        match seen.iter_mut().find(|(n, _, _)| *n == name) {
            Some((_, _, count)) => *count += 1,
            None => seen.push((name, &r.dir, 1)),
        }
    }
    if seen.len() > 1 {
        let listed: Vec<String> = seen
            .iter()
            .map(|(n, dir, count)| format!("`{n}` ({count} run(s), e.g. {})", dir.display()))
            .collect();
        bail!(
            "the runs come from {} scenarios: {}; a report compares policies on one scenario, so report each scenario's runs separately",
            seen.len(),
            listed.join(", ")
        );
    }
    Ok(())
}

fn load_run(dir: &Path) -> anyhow::Result<Run> {
    let summary_path = dir.join("summary.json");
    let text = dlsim_fsio::read_to_string_limited(&summary_path, dlsim_fsio::MAX_INPUT_BYTES)
        .with_context(|| {
            format!(
                "{}: not a run folder (no summary.json) nor a sweep folder (no sweep.json)",
                dir.display()
            )
        })?;
    let summary: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: malformed JSON", summary_path.display()))?;
    let observations = dir.join("observations.csv");
    let online = dir.join("online.csv");
    let mut policy = summary["policy"].as_str().unwrap_or("?").to_string();
    // A sweep run with scenario overrides is its own configuration: `policy @ overrides`.
    if let Ok(text) =
        dlsim_fsio::read_to_string_limited(&dir.join("point.json"), dlsim_fsio::MAX_INPUT_BYTES)
    {
        if let Ok(point) = serde_json::from_str::<crate::sweep::Point>(&text) {
            if !point.scenario_params.is_empty() {
                policy = format!("{policy} @ {}", point.group());
            }
        }
    }
    Ok(Run {
        dir: dir.to_path_buf(),
        policy,
        seed: summary["seed"].as_u64().unwrap_or_default(),
        jobs: read_csv(&dir.join("jobs.csv"))?,
        timeline: read_csv(&dir.join("timeline.csv"))?,
        observations: if observations.is_file() {
            Some(read_csv(&observations)?)
        } else {
            None
        },
        online: if online.is_file() {
            Some(read_csv(&online)?)
        } else {
            None
        },
        summary,
    })
}

pub fn read_csv(path: &Path) -> anyhow::Result<DataFrame> {
    CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(None)
        .try_into_reader_with_file_path(Some(path.to_path_buf()))
        .and_then(|r| r.finish())
        .with_context(|| format!("reading {}", path.display()))
}

/// A numeric column as f64 values, nulls and unparsable cells dropped.
pub fn floats(df: &DataFrame, name: &str) -> anyhow::Result<Vec<f64>> {
    let col = df
        .column(name)
        .with_context(|| format!("no column `{name}`"))?
        .cast(&DataType::Float64)?;
    Ok(col.f64()?.into_iter().flatten().collect())
}

/// A text column, nulls as empty strings.
pub fn strings(df: &DataFrame, name: &str) -> anyhow::Result<Vec<String>> {
    let col = df
        .column(name)
        .with_context(|| format!("no column `{name}`"))?
        .cast(&DataType::String)?;
    Ok(col
        .str()?
        .into_iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect())
}

/// Policies in first-seen order.
pub fn policies(runs: &[Run]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in runs {
        if !out.contains(&r.policy) {
            out.push(r.policy.clone());
        }
    }
    out
}

/// The completed jobs of every run of `policy`, stacked into one frame.
pub fn completed_jobs(runs: &[Run], policy: &str) -> anyhow::Result<DataFrame> {
    let mut stacked: Option<DataFrame> = None;
    for r in runs.iter().filter(|r| r.policy == policy) {
        let mask = r.jobs.column("status")?.str()?.equal("completed");
        let done = r.jobs.filter(&mask)?.select(["id", "jct_s"])?;
        let done = DataFrame::new(vec![
            done.column("id")?.cast(&DataType::Int64)?,
            done.column("jct_s")?.cast(&DataType::Float64)?,
        ])?;
        match &mut stacked {
            None => stacked = Some(done),
            Some(s) => {
                s.vstack_mut(&done)?;
            }
        }
    }
    stacked.context("policy without runs")
}

/// Per-policy headline statistics.
#[derive(Clone, Debug, Default)]
pub struct PolicyStats {
    pub policy: String,
    pub runs: usize,
    pub jobs: f64,
    pub completed: f64,
    pub failed: f64,
    pub jcr: f64,
    pub jct_mean_s: f64,
    pub jct_median_s: f64,
    pub jct_p90_s: f64,
    pub cpu_util: f64,
    pub mem_util: f64,
    pub gpu_util: f64,
    pub cluster_cpu_util: f64,
    pub cluster_mem_util: f64,
    pub cluster_gpu_util: f64,
}

pub fn policy_stats(runs: &[Run], policy: &str) -> anyhow::Result<PolicyStats> {
    let mine: Vec<&Run> = runs.iter().filter(|r| r.policy == policy).collect();
    let n = mine.len() as f64;
    let avg = |key: &str| mine.iter().map(|r| r.metric(key)).sum::<f64>() / n;
    let sum = |key: &str| mine.iter().map(|r| r.metric(key)).sum::<f64>();
    let jobs = completed_jobs(runs, policy)?;
    let jct = jobs.column("jct_s")?.f64()?.clone();
    let submitted = sum("jobs_submitted");
    Ok(PolicyStats {
        policy: policy.to_string(),
        runs: mine.len(),
        jobs: submitted,
        completed: jobs.height() as f64,
        failed: sum("jobs_failed"),
        jcr: if submitted > 0.0 {
            jobs.height() as f64 / submitted
        } else {
            f64::NAN
        },
        jct_mean_s: jct.mean().unwrap_or(f64::NAN),
        jct_median_s: jct.median().unwrap_or(f64::NAN),
        jct_p90_s: jct
            .quantile(0.9, QuantileMethod::Linear)?
            .unwrap_or(f64::NAN),
        cpu_util: avg("cpu_util_mean"),
        mem_util: avg("mem_util_mean"),
        gpu_util: avg("gpu_util_mean"),
        cluster_cpu_util: avg("cluster_cpu_util"),
        cluster_mem_util: avg("cluster_mem_util"),
        cluster_gpu_util: avg("cluster_gpu_util"),
    })
}

/// Every run's scenario, policy and seed, for the tables' Parquet metadata.
pub fn provenance(runs: &[Run]) -> Provenance {
    let mut p = Provenance::default();
    for r in runs {
        p.add(
            r.summary["scenario"].as_str().unwrap_or("?"),
            &r.policy,
            r.seed,
        );
    }
    p
}

/// `summary`: JCT (pooled over seeds), JCR and utilisation per policy. Columns are named
/// as in `results.parquet`.
pub fn summary_table(stats: &[PolicyStats]) -> Table {
    // The metrics of `results.parquet` up to the GPU utilisation, under the same names.
    let last = crate::results::METRICS
        .iter()
        .position(|m| *m == "cluster_gpu_util")
        .expect("results carry cluster_gpu_util");
    let mut columns = vec!["policy", "runs"];
    columns.extend_from_slice(&crate::results::METRICS[..=last]);
    let mut t = Table::new(
        "summary",
        "JCT, JCR and utilisation per policy (JCT over the completed jobs of every seed; utilisation averaged over runs)",
        &columns,
    )
    .with_labels(&[
        "policy",
        "runs",
        "jobs",
        "completed",
        "failed",
        "JCR",
        "JCT mean (s)",
        "JCT median (s)",
        "JCT p90 (s)",
        "job CPU util",
        "job mem util",
        "job GPU util",
        "cluster CPU util",
        "cluster mem util",
        "cluster GPU util",
    ]);
    for s in stats {
        t.push(vec![
            s.policy.clone().into(),
            Cell::Int(s.runs as i64),
            Cell::Int(s.jobs as i64),
            Cell::Int(s.completed as i64),
            Cell::Int(s.failed as i64),
            s.jcr.into(),
            s.jct_mean_s.into(),
            s.jct_median_s.into(),
            s.jct_p90_s.into(),
            s.cpu_util.into(),
            s.mem_util.into(),
            s.gpu_util.into(),
            s.cluster_cpu_util.into(),
            s.cluster_mem_util.into(),
            s.cluster_gpu_util.into(),
        ]);
    }
    t
}

/// The metrics deltas are taken of: name, label, and whether shown relative (%) or in
/// percentage points.
pub const DELTA_METRICS: &[(&str, &str, bool)] = &[
    ("jct_median_s", "median JCT", true),
    ("jct_mean_s", "mean JCT", true),
    ("jct_p90_s", "p90 JCT", true),
    ("jcr", "JCR", false),
    ("cluster_cpu_util", "cluster CPU util", false),
    ("cluster_mem_util", "cluster mem util", false),
    // Runs with online jobs only (absent elsewhere, so neither a row nor a column there).
    ("online_accumulated_lag_min", "online lag", true),
    ("online_violation_rate", "online SLO violations", false),
    ("online_gpu_hours", "online GPU hours", true),
];

/// One run's value of a [`DELTA_METRICS`] metric: JCT statistics over its completed jobs
/// (`jobs.csv`, as the summary table pools them), the rest from `summary.json`.
pub fn run_metric(run: &Run, metric: &str) -> anyhow::Result<f64> {
    let q = match metric {
        "jct_median_s" => 0.5,
        "jct_p90_s" => 0.9,
        "jct_mean_s" => -1.0,
        _ => return Ok(run.metric(metric)),
    };
    let status = strings(&run.jobs, "status")?;
    let jct = strings(&run.jobs, "jct_s")?;
    let mut done: Vec<f64> = status
        .iter()
        .zip(&jct)
        .filter(|(s, _)| *s == "completed")
        .filter_map(|(_, j)| j.parse().ok())
        .collect();
    if done.is_empty() {
        return Ok(f64::NAN);
    }
    done.sort_by(f64::total_cmp);
    Ok(if q < 0.0 {
        done.iter().sum::<f64>() / done.len() as f64
    } else {
        dlsim_model::metrics::quantile(&done, q)
    })
}

/// Each policy against `baseline`, paired by seed: per policy, one delta per
/// [`DELTA_METRICS`] metric (`None` when no seed has both runs).
pub type Deltas = Vec<(String, Vec<Option<Delta>>)>;

pub fn deltas(runs: &[Run], baseline: &str) -> anyhow::Result<Deltas> {
    let mut out = Vec::new();
    for policy in policies(runs).into_iter().filter(|p| p != baseline) {
        let mut per_metric = Vec::new();
        for (metric, _, _) in DELTA_METRICS {
            let mut pairs = Vec::new();
            for r in runs.iter().filter(|r| r.policy == policy) {
                let against = runs
                    .iter()
                    .find(|b| b.policy == baseline && b.seed == r.seed);
                if let Some(b) = against {
                    let (x, y) = (run_metric(r, metric)?, run_metric(b, metric)?);
                    if x.is_finite() && y.is_finite() {
                        pairs.push((x, y));
                    }
                }
            }
            per_metric.push(Delta::from_pairs(&pairs));
        }
        out.push((policy, per_metric));
    }
    Ok(out)
}

/// `deltas`, tidy: one row per policy and metric, the paired difference against the
/// baseline with its 95% CI over seeds (the columns of `ablation.parquet`).
pub fn deltas_table(deltas: &Deltas, baseline: &str) -> Table {
    let mut t = Table::new(
        "deltas",
        &format!("Change against `{baseline}`, paired by seed (mean and 95% CI over seeds)"),
        &[
            "policy",
            "vs",
            "metric",
            "variant_mean",
            "against_mean",
            "delta",
            "ci95_low",
            "ci95_high",
            "delta_pct",
            "seeds",
        ],
    );
    t.units = crate::results::long_units();
    for (policy, per_metric) in deltas {
        for ((metric, _, _), d) in DELTA_METRICS.iter().zip(per_metric) {
            if let Some(d) = d {
                t.push(vec![
                    policy.clone().into(),
                    baseline.into(),
                    (*metric).into(),
                    d.variant_mean.into(),
                    d.against_mean.into(),
                    d.mean.into(),
                    d.ci_low.into(),
                    d.ci_high.into(),
                    d.pct().into(),
                    Cell::Int(d.n as i64),
                ]);
            }
        }
    }
    t
}

/// The deltas for people: one row per policy, JCT in %, rates in percentage points, each
/// `mean [95% CI]`; and one headline per policy.
pub fn deltas_view(deltas: &Deltas, baseline: &str) -> (Table, Vec<String>) {
    // A metric no pair has (utilisation of summaries without it, online metrics of
    // batch-only runs) gets no column.
    let shown: Vec<bool> = (0..DELTA_METRICS.len())
        .map(|k| deltas.iter().any(|(_, per)| per[k].is_some()))
        .collect();
    let mut cols = vec!["policy", "vs"];
    cols.extend(
        DELTA_METRICS
            .iter()
            .zip(&shown)
            .filter(|(_, &on)| on)
            .map(|(m, _)| m.1),
    );
    cols.push("seeds");
    let online = DELTA_METRICS
        .iter()
        .zip(&shown)
        .any(|(m, &on)| on && m.0.starts_with("online_"));
    let units = if online {
        "JCT, online lag and GPU hours in %, JCR, utilisation and SLO violations in percentage points"
    } else {
        "JCT in %, JCR and utilisation in percentage points"
    };
    let mut t = Table::new(
        "deltas",
        &format!("Change against `{baseline}`, paired by seed: {units}, mean [95% CI] over seeds"),
        &cols,
    );
    let mut headlines = Vec::new();
    for (policy, per_metric) in deltas {
        let mut row: Vec<Cell> = vec![policy.clone().into(), baseline.into()];
        let mut n = 0;
        for (((_, _, relative), d), _) in DELTA_METRICS
            .iter()
            .zip(per_metric)
            .zip(&shown)
            .filter(|(_, &on)| on)
        {
            row.push(match d {
                Some(d) => {
                    n = n.max(d.n);
                    format_delta(d, *relative).into()
                }
                None => "n/a".into(),
            });
        }
        row.push(Cell::Int(n as i64));
        t.push(row);
        if let (Some(median), Some(jcr)) = (&per_metric[0], &per_metric[3]) {
            let ci = if median.ci_low.is_finite() {
                let s = 100.0 / median.against_mean;
                format!(
                    " (95% CI {:+.0}..{:+.0}%)",
                    median.ci_low * s,
                    median.ci_high * s
                )
            } else {
                String::new()
            };
            headlines.push(format!(
                "`{policy}`: {:+.0}% median JCT{ci}, {:+.1} pp JCR vs {baseline} ({} paired seeds)",
                median.pct(),
                100.0 * jcr.mean,
                median.n
            ));
        }
    }
    (t, headlines)
}

/// `failures`: failed jobs by reason per policy, and the fault counters of the runs.
pub fn failures_table(runs: &[Run]) -> anyhow::Result<Table> {
    const COUNTERS: &[&str] = &[
        "oom_kills",
        "pod_failures",
        "relaunches",
        "evictions",
        "node_failures",
    ];
    let mut t = Table::new(
        "failures",
        "Failed jobs by reason, and fault events, summed over each policy's runs",
        &["policy", "kind", "what", "count"],
    );
    for policy in policies(runs) {
        let mut reasons: BTreeMap<String, i64> = BTreeMap::new();
        let mut counters: BTreeMap<&str, i64> = BTreeMap::new();
        for r in runs.iter().filter(|r| r.policy == policy) {
            let status = strings(&r.jobs, "status")?;
            let reason = strings(&r.jobs, "fail_reason")?;
            for (s, why) in status.iter().zip(&reason) {
                if s == "failed" {
                    *reasons.entry(why.clone()).or_default() += 1;
                }
            }
            for c in COUNTERS {
                if let Some(v) = r.summary.get(*c).and_then(Value::as_i64) {
                    *counters.entry(c).or_default() += v;
                }
            }
        }
        for (why, n) in reasons {
            t.push(vec![
                policy.clone().into(),
                "failed jobs".into(),
                why.into(),
                Cell::Int(n),
            ]);
        }
        for c in COUNTERS {
            if let Some(n) = counters.get(c) {
                t.push(vec![
                    policy.clone().into(),
                    "events".into(),
                    (*c).into(),
                    Cell::Int(*n),
                ]);
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(policy: &str, seed: u64, jct: &[f64], jcr: f64) -> Run {
        let jobs = df!(
            "id" => (0..jct.len() as i64).collect::<Vec<_>>(),
            "status" => vec!["completed"; jct.len()],
            "jct_s" => jct.to_vec(),
        )
        .unwrap();
        Run {
            dir: PathBuf::new(),
            policy: policy.into(),
            seed,
            summary: serde_json::json!({"scenario": "s", "jcr": jcr}),
            jobs,
            timeline: DataFrame::empty(),
            observations: None,
            online: None,
        }
    }

    #[test]
    fn deltas_pair_runs_by_seed_and_carry_a_95_ci() {
        // Seeds listed in different orders; `b` is 20% and 40% slower on seeds 1 and 2,
        // and its seed 3 has no `a` to pair with.
        let runs = vec![
            run("a", 2, &[100.0, 200.0, 300.0], 0.9),
            run("a", 1, &[10.0, 20.0, 30.0], 0.8),
            run("b", 1, &[12.0, 24.0, 36.0], 0.9),
            run("b", 2, &[140.0, 280.0, 420.0], 0.9),
            run("b", 3, &[1e6], 0.0),
        ];
        let d = deltas(&runs, "a").unwrap();
        assert_eq!(d.len(), 1);
        let median = d[0].1[0].unwrap();
        assert_eq!(median.n, 2);
        assert_eq!((median.variant_mean, median.against_mean), (152.0, 110.0));
        assert_eq!(median.mean, 42.0);
        // diffs 4 and 80: sd 53.74, half-width 12.706 * 53.74 / sqrt(2) = 482.8
        assert!((median.ci_high - 42.0 - 482.8).abs() < 0.1, "{median:?}");
        let jcr = d[0].1[3].unwrap();
        assert!((jcr.mean - 0.05).abs() < 1e-12);
        let t = deltas_table(&d, "a");
        assert_eq!(
            t.rows.len(),
            4,
            "no utilisation nor online metrics in these summaries"
        );
        assert_eq!(t.rows[0][2], Cell::Str("jct_median_s".into()));
        let (view, headlines) = deltas_view(&d, "a");
        assert_eq!(view.rows.len(), 1);
        assert_eq!(
            view.columns,
            [
                "policy",
                "vs",
                "median JCT",
                "mean JCT",
                "p90 JCT",
                "JCR",
                "seeds"
            ],
            "a column only for a metric some pair has"
        );
        assert!(
            headlines[0].starts_with("`b`: +38% median JCT (95% CI "),
            "{headlines:?}"
        );
    }
}
