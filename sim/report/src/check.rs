//! Regression checks against committed golden metrics (`reports/baselines/NAME.json`).
//!
//! The baseline file itself (format, loading, blessing, pooling) is
//! [`dlsim_study::baseline`]; this module compares runs with it. A change beyond the
//! tolerance in the worse direction is a regression; beyond it in the better direction it
//! is reported as an improvement, so the baseline can be re-blessed. The simulator is
//! deterministic, so an unchanged build reproduces the golden values exactly; tolerances
//! only absorb deliberate small model changes.

use crate::table::{Cell, Table};
use anyhow::{bail, Context};
use dlsim_study::baseline::golden_of;
pub use dlsim_study::baseline::{
    pool, Baseline, Golden, Group, Pooled, Tolerance, Worse, MAX_ABS_TOLERANCE, MAX_REL_TOLERANCE,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

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
        base.bless("static", &run).unwrap();
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
            base.bless_pooled(g).unwrap();
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

    /// A run or sweep without any of the baseline's metrics (an online run checked against
    /// batch tolerances, say) is not blessed, and a file holding such an entry is refused,
    /// so no check can pass by comparing nothing (issue #19).
    #[test]
    fn nothing_is_blessed_or_loaded_without_metrics() {
        let mut base = Baseline::default();
        let online = json!({"scenario": "o", "seed": 1, "violation_rate": 0.1});
        let err = base.bless("hpa", &online).unwrap_err().to_string();
        assert!(err.contains("run `hpa` has none of the metrics"), "{err}");
        assert!(base.runs.is_empty());
        let g = Group {
            scenario: "o".into(),
            label: "hpa".into(),
            seeds: vec![1],
            metrics: BTreeMap::from([("violation_rate".to_string(), 0.1)]),
        };
        assert!(base.bless_pooled(&g).is_err());
        assert!(base.pooled.is_empty());
        // A hand-made (or formerly blessed) empty entry is refused on load, naming it.
        base.runs.insert(
            "hpa".into(),
            Golden {
                scenario: "o".into(),
                seed: 1,
                metrics: BTreeMap::new(),
            },
        );
        let dir = std::env::temp_dir().join(format!("dlsim-check-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("b.json");
        std::fs::write(&path, base.to_json()).unwrap();
        let err = Baseline::load(&path).unwrap_err().to_string();
        assert!(err.contains("runs.hpa.metrics"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
