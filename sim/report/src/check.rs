//! Regression checks against committed golden metrics (`reports/baselines/NAME.json`).
//!
//! A baseline file holds, per run label (a policy spec), the scenario name, seed and metric
//! values of a blessed run (`runs`); per scenario and policy label, the metrics of a
//! blessed sweep pooled over its seeds (`pooled`: the mean over seeds of each metric, with
//! the seeds it was made on); and per-metric tolerances: which direction is worse and how far it may move (`max(abs, rel x |golden|)`).
//! A change beyond the tolerance in the worse direction is a regression; beyond it in the
//! better direction it is reported as an improvement, so the baseline can be re-blessed.
//! The simulator is deterministic, so an unchanged build reproduces the golden values
//! exactly; tolerances only absorb deliberate small model changes.

use crate::table::{Cell, Table};
use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Worse {
    Higher,
    Lower,
}

/// How far a metric may move before it counts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    pub worse: Worse,
    #[serde(default)]
    pub abs: f64,
    #[serde(default)]
    pub rel: f64,
}

/// One blessed run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Golden {
    pub scenario: String,
    pub seed: u64,
    pub metrics: BTreeMap<String, f64>,
}

/// One blessed policy of a sweep: each metric's mean over `seeds`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pooled {
    pub seeds: Vec<u64>,
    pub metrics: BTreeMap<String, f64>,
}

/// A baseline file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub format: String,
    pub version: u32,
    /// How to reproduce the runs, for people: e.g. the scenario file CI replays.
    #[serde(default)]
    pub note: String,
    pub tolerances: BTreeMap<String, Tolerance>,
    pub runs: BTreeMap<String, Golden>,
    /// Scenario -> policy label -> pooled golden values of a sweep.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pooled: BTreeMap<String, BTreeMap<String, Pooled>>,
}

impl Default for Baseline {
    fn default() -> Self {
        let t = |worse, abs, rel| Tolerance { worse, abs, rel };
        let tolerances = [
            ("jct_median_s", t(Worse::Higher, 0.0, 0.02)),
            ("jct_mean_s", t(Worse::Higher, 0.0, 0.02)),
            ("jct_p90_s", t(Worse::Higher, 0.0, 0.05)),
            ("jcr", t(Worse::Lower, 0.005, 0.0)),
            ("jobs_failed", t(Worse::Higher, 2.0, 0.0)),
            ("cluster_cpu_util", t(Worse::Lower, 0.01, 0.0)),
            ("cluster_mem_util", t(Worse::Lower, 0.01, 0.0)),
            // Runs with online jobs (absent from other runs' summaries, so not blessed).
            ("online_violation_rate", t(Worse::Higher, 0.005, 0.0)),
            ("online_accumulated_lag_min", t(Worse::Higher, 0.0, 0.05)),
            ("online_downtime_min", t(Worse::Higher, 0.0, 0.05)),
            ("online_gpu_hours", t(Worse::Higher, 0.0, 0.02)),
        ];
        Baseline {
            format: "dlsim-baseline".into(),
            version: 1,
            note: String::new(),
            tolerances: tolerances
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            runs: BTreeMap::new(),
            pooled: BTreeMap::new(),
        }
    }
}

/// The largest absolute tolerance of a metric (seconds, ratios): a day of JCT.
pub const MAX_ABS_TOLERANCE: f64 = 86_400.0;
/// The largest relative tolerance: the metric may double or halve.
pub const MAX_REL_TOLERANCE: f64 = 1.0;

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline, dlsim_traces::InputError> {
        use dlsim_traces::InputError;
        let text =
            dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES).map_err(|e| {
                InputError::new(
                    path,
                    format!("cannot read baseline: {e} (create one with --bless)"),
                )
            })?;
        let b: Baseline = dlsim_traces::error::parse_json_document(path, &text, 0)?;
        if b.format != "dlsim-baseline" || b.version != 1 {
            return Err(InputError::new(path, "expected a dlsim-baseline v1 file").field("format"));
        }
        // A negative slack flags every run and a huge one none (issue #21).
        for (metric, t) in &b.tolerances {
            for (name, v, hi) in [
                ("abs", t.abs, MAX_ABS_TOLERANCE),
                ("rel", t.rel, MAX_REL_TOLERANCE),
            ] {
                if let Err(m) = dlsim_traces::limits::in_range(v, 0.0, hi) {
                    let e = InputError::new(path, m).field(format!("tolerances.{metric}.{name}"));
                    return Err(match dlsim_model::scenario::key_line(&text, metric) {
                        Some(l) => e.at_line(l),
                        None => e,
                    });
                }
            }
        }
        Ok(b)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("baseline serialises") + "\n"
    }

    /// Records `summary` as the golden values of `label`.
    pub fn bless(&mut self, label: &str, summary: &Value) {
        let metrics = self
            .tolerances
            .keys()
            .filter_map(|k| {
                summary
                    .get(k)
                    .and_then(Value::as_f64)
                    .map(|v| (k.clone(), v))
            })
            .collect();
        self.runs
            .insert(label.to_string(), golden_of(summary, metrics));
    }

    /// Records a sweep's pooled values of one policy as golden.
    pub fn bless_pooled(&mut self, g: &Group) {
        let metrics = self
            .tolerances
            .keys()
            .filter_map(|k| Some((k.clone(), *g.metrics.get(k)?)))
            .collect();
        self.pooled.entry(g.scenario.clone()).or_default().insert(
            g.label.clone(),
            Pooled {
                seeds: g.seeds.clone(),
                metrics,
            },
        );
    }

    /// The pooled golden values of `g`'s scenario and policy, if blessed.
    pub fn pooled_of(&self, g: &Group) -> Option<&Pooled> {
        self.pooled.get(&g.scenario)?.get(&g.label)
    }
}

/// The runs of one policy label on one scenario in a sweep, pooled over seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub scenario: String,
    /// The policy spec, with ` @ k=v` for scenario parameters (as `dlsim report` labels).
    pub label: String,
    /// Sorted.
    pub seeds: Vec<u64>,
    /// Mean over the seeds of every numeric metric all runs have.
    pub metrics: BTreeMap<String, f64>,
}

impl Group {
    /// How the group is named in the diff table.
    pub fn name(&self) -> String {
        format!(
            "{} ({}, {} seeds)",
            self.label,
            self.scenario,
            self.seeds.len()
        )
    }
}

/// Groups `(label, summary)` runs by scenario and label, in first-seen order, and pools
/// each group's metrics over its seeds.
pub fn pool(runs: &[(String, Value)]) -> Vec<Group> {
    let mut groups: Vec<(Group, Vec<&Value>)> = Vec::new();
    for (label, summary) in runs {
        let scenario = summary["scenario"].as_str().unwrap_or_default();
        let seed = summary["seed"].as_u64().unwrap_or_default();
        let at = groups
            .iter()
            .position(|(g, _)| g.scenario == scenario && g.label == *label);
        let i = at.unwrap_or_else(|| {
            groups.push((
                Group {
                    scenario: scenario.into(),
                    label: label.clone(),
                    seeds: Vec::new(),
                    metrics: BTreeMap::new(),
                },
                Vec::new(),
            ));
            groups.len() - 1
        });
        groups[i].0.seeds.push(seed);
        groups[i].1.push(summary);
    }
    groups
        .into_iter()
        .map(|(mut g, summaries)| {
            g.seeds.sort_unstable();
            let keys = summaries[0].as_object().into_iter().flat_map(|o| o.keys());
            for key in keys {
                let values: Vec<f64> = summaries.iter().filter_map(|s| s[key].as_f64()).collect();
                if values.len() == summaries.len() && key != "seed" {
                    let mean = values.iter().sum::<f64>() / values.len() as f64;
                    g.metrics.insert(key.clone(), mean);
                }
            }
            g
        })
        .collect()
}

fn golden_of(summary: &Value, metrics: BTreeMap<String, f64>) -> Golden {
    Golden {
        scenario: summary["scenario"].as_str().unwrap_or_default().to_string(),
        seed: summary["seed"].as_u64().unwrap_or_default(),
        metrics,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Improved,
    Regressed,
    /// The run lacks a metric the baseline has.
    Missing,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Improved => "improved",
            Status::Regressed => "REGRESSED",
            Status::Missing => "MISSING",
        }
    }
}

/// One metric of one run against its golden value.
#[derive(Clone, Debug, PartialEq)]
pub struct Diff {
    pub label: String,
    pub metric: String,
    pub golden: f64,
    pub actual: f64,
    pub allowed: f64,
    pub status: Status,
}

/// Compares one run's summary with its golden values. Fails when the run was made under
/// other conditions (scenario or seed) than the blessed one.
pub fn compare(base: &Baseline, label: &str, summary: &Value) -> anyhow::Result<Vec<Diff>> {
    let Some(golden) = base.runs.get(label) else {
        bail!("no golden values for `{label}`");
    };
    identity(summary, &["scenario", "seed"]).with_context(|| format!("run `{label}`"))?;
    let here = golden_of(summary, BTreeMap::new());
    if here.scenario != golden.scenario || here.seed != golden.seed {
        bail!(
            "`{label}` ran scenario `{}` seed {}, but its baseline is scenario `{}` seed {}",
            here.scenario,
            here.seed,
            golden.scenario,
            golden.seed
        );
    }
    Ok(diffs(base, label, &golden.metrics, |m| {
        summary.get(m).and_then(Value::as_f64)
    }))
}

/// Compares a sweep's pooled values with the pooled golden values of its scenario and
/// policy. Fails when they were made on other seeds.
pub fn compare_pooled(base: &Baseline, g: &Group) -> anyhow::Result<Vec<Diff>> {
    let Some(golden) = base.pooled_of(g) else {
        bail!(
            "no pooled golden values for `{}` on `{}`",
            g.label,
            g.scenario
        );
    };
    if golden.seeds != g.seeds {
        bail!(
            "`{}` on `{}` ran seeds {:?}, but its baseline was pooled over seeds {:?}",
            g.label,
            g.scenario,
            g.seeds,
            golden.seeds
        );
    }
    Ok(diffs(base, &g.name(), &golden.metrics, |m| {
        g.metrics.get(m).copied()
    }))
}

/// Each golden metric that has a tolerance against `actual`.
fn diffs(
    base: &Baseline,
    label: &str,
    golden: &BTreeMap<String, f64>,
    actual: impl Fn(&str) -> Option<f64>,
) -> Vec<Diff> {
    let mut out = Vec::new();
    for (metric, &gold) in golden {
        let Some(tol) = base.tolerances.get(metric) else {
            continue;
        };
        let allowed = tol.abs.max(tol.rel * gold.abs());
        let actual = actual(metric);
        let status = match actual {
            None => Status::Missing,
            Some(a) => {
                let worse_by = match tol.worse {
                    Worse::Higher => a - gold,
                    Worse::Lower => gold - a,
                };
                if worse_by > allowed + 1e-12 {
                    Status::Regressed
                } else if -worse_by > allowed + 1e-12 {
                    Status::Improved
                } else {
                    Status::Ok
                }
            }
        };
        out.push(Diff {
            label: label.to_string(),
            metric: metric.clone(),
            golden: gold,
            actual: actual.unwrap_or(f64::NAN),
            allowed,
            status,
        });
    }
    out
}

/// The diff table printed by `dlsim check`.
pub fn diff_table(diffs: &[Diff]) -> Table {
    let mut t = Table::new(
        "check",
        "Metrics against the baseline",
        &[
            "run",
            "metric",
            "golden",
            "actual",
            "change",
            "tolerance",
            "status",
        ],
    );
    for d in diffs {
        let change = if d.golden.abs() > 0.0 {
            format!("{:+.2}%", 100.0 * (d.actual - d.golden) / d.golden.abs())
        } else {
            format!("{:+}", d.actual - d.golden)
        };
        t.push(vec![
            d.label.clone().into(),
            d.metric.clone().into(),
            Cell::Num(d.golden),
            Cell::Num(d.actual),
            change.into(),
            format!("±{}", crate::table::shown(&Cell::Num(d.allowed))).into(),
            d.status.as_str().into(),
        ]);
    }
    t
}

/// Checks that a run's summary says which scenario, seed and policy it ran: a summary
/// without them cannot be matched with its golden values (issue #21: not `""` and `0`).
fn identity(summary: &Value, keys: &[&str]) -> anyhow::Result<()> {
    for &key in keys {
        let v = summary.get(key);
        let ok = match key {
            "seed" => v.is_some_and(Value::is_u64),
            _ => v.is_some_and(Value::is_string),
        };
        if !ok {
            bail!("summary.json has no `{key}` (expected a run's summary)");
        }
    }
    Ok(())
}

/// What `check` compares: a run by its policy spec, or a sweep's policies pooled over seeds.
pub enum Checked {
    Run(String, Value),
    Pooled(Group),
}

/// What to check under a path: a run folder gives itself by its policy spec; a sweep folder
/// gives each policy label (with its scenario parameters) pooled over its seeds.
pub fn runs_under(path: &Path) -> anyhow::Result<Vec<Checked>> {
    let read = |p: &Path| -> anyhow::Result<Value> {
        let text = dlsim_fsio::read_to_string_limited(p, dlsim_fsio::MAX_INPUT_BYTES)
            .with_context(|| format!("reading {}", p.display()))?;
        let v: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))?;
        identity(&v, &["scenario", "seed", "policy"])
            .with_context(|| format!("{}", p.display()))?;
        Ok(v)
    };
    if path.join("sweep.json").is_file() {
        let plan = crate::exec::read_plan(path)?;
        let runs: Vec<(String, Value)> = crate::exec::collect(path, &plan)?
            .into_iter()
            .map(|r| {
                let label = if r.point.scenario_params.is_empty() {
                    r.point.policy.clone()
                } else {
                    format!("{} @ {}", r.point.policy, r.point.group())
                };
                (label, r.summary)
            })
            .collect();
        return Ok(pool(&runs).into_iter().map(Checked::Pooled).collect());
    }
    let summary = read(&path.join("summary.json")).with_context(|| {
        format!(
            "{} is neither a run folder (summary.json) nor a sweep folder (sweep.json)",
            path.display()
        )
    })?;
    let label = summary["policy"].as_str().unwrap_or_default().to_string();
    Ok(vec![Checked::Run(label, summary)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flags_regressions_beyond_tolerance_only() {
        let mut base = Baseline::default();
        let run = json!({"scenario": "q", "seed": 1, "jct_median_s": 1000.0, "jcr": 0.9});
        base.bless("static", &run);
        let same = compare(&base, "static", &run).unwrap();
        assert!(same.iter().all(|d| d.status == Status::Ok), "{same:?}");
        let slower = json!({"scenario": "q", "seed": 1, "jct_median_s": 1030.0, "jcr": 0.9});
        let d = compare(&base, "static", &slower).unwrap();
        let jct = d.iter().find(|d| d.metric == "jct_median_s").unwrap();
        assert_eq!(jct.status, Status::Regressed);
        let better = json!({"scenario": "q", "seed": 1, "jct_median_s": 900.0, "jcr": 0.903});
        let d = compare(&base, "static", &better).unwrap();
        let s: Vec<_> = d.iter().map(|d| (d.metric.as_str(), d.status)).collect();
        assert_eq!(s, [("jcr", Status::Ok), ("jct_median_s", Status::Improved)]);
        let other_seed = json!({"scenario": "q", "seed": 2});
        assert!(compare(&base, "static", &other_seed).is_err());
    }

    #[test]
    fn sweeps_are_checked_per_policy_and_scenario_pooled_over_seeds() {
        let run = |label: &str, scenario: &str, seed: u64, jct: f64| {
            let s = json!({"scenario": scenario, "seed": seed, "jct_median_s": jct, "jcr": 0.9});
            (label.to_string(), s)
        };
        let runs = vec![
            run("static", "q", 2, 100.0),
            run("dlrover", "q", 2, 50.0),
            run("static", "q", 1, 300.0),
            run("dlrover", "q", 1, 70.0),
            run("static", "other", 1, 1.0),
        ];
        let groups = pool(&runs);
        let names: Vec<String> = groups.iter().map(Group::name).collect();
        assert_eq!(
            names,
            [
                "static (q, 2 seeds)",
                "dlrover (q, 2 seeds)",
                "static (other, 1 seeds)"
            ]
        );
        assert_eq!(groups[0].seeds, [1, 2]);
        assert_eq!(groups[0].metrics["jct_median_s"], 200.0);
        assert!(!groups[0].metrics.contains_key("seed"));
        let mut base = Baseline::default();
        for g in &groups[..2] {
            base.bless_pooled(g);
        }
        assert!(
            base.pooled_of(&groups[2]).is_none(),
            "keyed by scenario too"
        );
        let same = compare_pooled(&base, &groups[0]).unwrap();
        assert!(same.iter().all(|d| d.status == Status::Ok), "{same:?}");
        // One seed 30% slower moves the pooled median JCT 15%: a regression.
        let mut slower = runs.clone();
        slower[2].1["jct_median_s"] = json!(330.0);
        let d = compare_pooled(&base, &pool(&slower)[0]).unwrap();
        let jct = d.iter().find(|d| d.metric == "jct_median_s").unwrap();
        assert_eq!((jct.status, jct.actual), (Status::Regressed, 215.0));
        // Other seeds are other conditions, not a comparison.
        let err = compare_pooled(&base, &pool(&runs[..2])[0]).unwrap_err();
        assert!(err.to_string().contains("seeds [2]"), "{err}");
        // The file keeps single runs and pooled sweeps apart and reads back.
        let text = base.to_json();
        assert!(text.contains("\"pooled\": {\n    \"q\": {"), "{text}");
        let back: Baseline = serde_json::from_str(&text).unwrap();
        assert_eq!(back, base);
    }
}
