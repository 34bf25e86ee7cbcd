//! Loading run folders into polars frames and aggregating them per policy: JCT statistics
//! over the pooled jobs of every seed, utilisation averaged over runs, deltas against a
//! baseline policy, and failure counts by reason.
//!
//! Policies are listed in the order they are first met in the inputs, and runs in input
//! order (a sweep folder in its grid order), so a report is reproducible.

use crate::table::{Cell, Table};
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
}

impl Run {
    pub fn metric(&self, key: &str) -> f64 {
        self.summary
            .get(key)
            .and_then(Value::as_f64)
            .unwrap_or(f64::NAN)
    }
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
        } else {
            runs.push(load_run(path)?);
        }
    }
    if runs.is_empty() {
        bail!("no finished runs under the given folders");
    }
    Ok(runs)
}

fn load_run(dir: &Path) -> anyhow::Result<Run> {
    let summary_path = dir.join("summary.json");
    let text = std::fs::read_to_string(&summary_path).with_context(|| {
        format!(
            "{}: not a run folder (no summary.json) nor a sweep folder (no sweep.json)",
            dir.display()
        )
    })?;
    let summary: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: malformed JSON", summary_path.display()))?;
    let observations = dir.join("observations.csv");
    let mut policy = summary["policy"].as_str().unwrap_or("?").to_string();
    // A sweep run with scenario overrides is its own configuration: `policy @ overrides`.
    if let Ok(text) = std::fs::read_to_string(dir.join("point.json")) {
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

/// `summary`: JCT (pooled over seeds), JCR and utilisation per policy.
pub fn summary_table(stats: &[PolicyStats]) -> Table {
    let mut t = Table::new(
        "summary",
        "JCT, JCR and utilisation per policy (JCT over the completed jobs of every seed; utilisation averaged over runs)",
        &[
            "policy",
            "runs",
            "jobs",
            "completed",
            "failed",
            "JCR",
            "JCT mean (min)",
            "JCT median (min)",
            "JCT p90 (min)",
            "job CPU util",
            "job mem util",
            "job GPU util",
            "cluster CPU util",
            "cluster mem util",
            "cluster GPU util",
        ],
    );
    for s in stats {
        t.push(vec![
            s.policy.clone().into(),
            Cell::Int(s.runs as i64),
            Cell::Int(s.jobs as i64),
            Cell::Int(s.completed as i64),
            Cell::Int(s.failed as i64),
            s.jcr.into(),
            (s.jct_mean_s / 60.0).into(),
            (s.jct_median_s / 60.0).into(),
            (s.jct_p90_s / 60.0).into(),
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

/// `deltas`: each policy against the baseline policy; JCT in %, rates in points.
pub fn deltas_table(stats: &[PolicyStats], baseline: &str) -> (Table, Vec<String>) {
    let mut t = Table::new(
        "deltas",
        &format!(
            "Change against `{baseline}` (JCT in %, JCR and utilisation in percentage points)"
        ),
        &[
            "policy",
            "vs",
            "median JCT %",
            "mean JCT %",
            "p90 JCT %",
            "JCR pp",
            "cluster CPU util pp",
            "cluster mem util pp",
        ],
    );
    let mut headlines = Vec::new();
    let Some(base) = stats.iter().find(|s| s.policy == baseline) else {
        return (t, headlines);
    };
    let pct = |a: f64, b: f64| 100.0 * (a - b) / b;
    for s in stats.iter().filter(|s| s.policy != baseline) {
        let median = pct(s.jct_median_s, base.jct_median_s);
        let jcr = 100.0 * (s.jcr - base.jcr);
        t.push(vec![
            s.policy.clone().into(),
            baseline.into(),
            median.into(),
            pct(s.jct_mean_s, base.jct_mean_s).into(),
            pct(s.jct_p90_s, base.jct_p90_s).into(),
            jcr.into(),
            (100.0 * (s.cluster_cpu_util - base.cluster_cpu_util)).into(),
            (100.0 * (s.cluster_mem_util - base.cluster_mem_util)).into(),
        ]);
        headlines.push(format!(
            "`{}`: {:+.0}% median JCT, {:+.1} pp JCR vs {baseline}",
            s.policy, median, jcr
        ));
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
