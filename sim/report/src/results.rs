//! A sweep's results: one row per run (`results.csv`), and the ablation table that pairs
//! runs by seed to give each mechanism's contribution as a mean and a 95% confidence
//! interval.
//!
//! Runs are always listed in grid order, never in completion order, so the tables are
//! byte-identical whatever the thread count or shard split that produced the runs.

use crate::sweep::{group_label, scalar, Point};
use crate::table::{Cell, Table};
use dlsim_policies::PolicySpec;
use serde_json::Value;

/// Summary metrics copied into `results.csv`, in order. Missing keys are left empty, so
/// older or newer `summary.json` files still load.
pub const METRICS: &[&str] = &[
    "jobs_submitted",
    "jobs_completed",
    "jobs_failed",
    "jcr",
    "jct_mean_s",
    "jct_median_s",
    "jct_p90_s",
    "cpu_util_mean",
    "mem_util_mean",
    "gpu_util_mean",
    "cluster_cpu_util",
    "cluster_mem_util",
    "cluster_gpu_util",
    "cluster_cpu_alloc",
    "cluster_mem_alloc",
    "oom_kills",
    "pod_failures",
    "relaunches",
    "makespan_s",
    "events",
];

/// The metrics of the ablation table: name, label, and whether it is shown relative (%)
/// or in percentage points.
pub const ABLATION_METRICS: &[(&str, &str, bool)] = &[
    ("jct_median_s", "median JCT", true),
    ("jct_mean_s", "mean JCT", true),
    ("jcr", "JCR", false),
    ("cluster_cpu_util", "CPU util", false),
    ("cluster_mem_util", "mem util", false),
];

/// One finished run: its grid point and its `summary.json`.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub point: Point,
    pub summary: Value,
}

impl RunResult {
    pub fn metric(&self, key: &str) -> Option<f64> {
        self.summary.get(key).and_then(Value::as_f64)
    }
}

/// `results`: one row per run, in grid order.
pub fn results_table(param_keys: &[String], runs: &[RunResult]) -> Table {
    let mut cols: Vec<&str> = vec!["id", "policy", "group"];
    cols.extend(param_keys.iter().map(String::as_str));
    cols.push("seed");
    cols.extend(METRICS);
    let mut t = Table::new("results", "Every run of the sweep", &cols);
    for r in runs {
        let scenario = r.summary["scenario"].as_str().unwrap_or("?");
        t.provenance.add(scenario, &r.point.policy, r.point.seed);
        let mut row: Vec<Cell> = vec![
            r.point.id.clone().into(),
            r.point.policy.clone().into(),
            r.point.group().into(),
        ];
        for k in param_keys {
            row.push(
                r.point
                    .scenario_params
                    .get(k)
                    .map(scalar)
                    .unwrap_or_default()
                    .into(),
            );
        }
        row.push(Cell::Int(r.point.seed as i64));
        row.extend(METRICS.iter().map(|m| match r.summary.get(*m) {
            Some(v) if v.is_u64() || v.is_i64() => Cell::Int(v.as_i64().unwrap_or(i64::MAX)),
            v => Cell::Num(v.and_then(serde_json::Value::as_f64).unwrap_or(f64::NAN)),
        }));
        t.push(row);
    }
    t
}

/// One comparison of the ablation: `variant` in `group` against `against` in
/// `against_group`, paired by seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub group: String,
    pub variant: String,
    pub against_group: String,
    pub against: String,
    /// What differs, e.g. `warm_start=off`, `policy` or `faults.pod_failure_per_day=0.1`.
    pub change: String,
}

impl Comparison {
    /// `against`, with its group when that differs.
    pub fn against_label(&self) -> String {
        if self.against_group == self.group {
            self.against.clone()
        } else {
            format!("{} @ {}", self.against, self.against_group)
        }
    }
}

/// Paired differences `variant - against` over seeds: mean, 95% CI, relative mean.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delta {
    pub variant_mean: f64,
    pub against_mean: f64,
    pub mean: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub n: usize,
}

impl Delta {
    /// The paired difference of `(variant, against)` pairs: mean and Student t 95% CI
    /// (NaN bounds with one pair); `None` without pairs.
    pub fn from_pairs(pairs: &[(f64, f64)]) -> Option<Delta> {
        if pairs.is_empty() {
            return None;
        }
        let n = pairs.len();
        let diffs: Vec<f64> = pairs.iter().map(|(x, y)| x - y).collect();
        let mean = diffs.iter().sum::<f64>() / n as f64;
        let half = if n > 1 {
            let var = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t975(n - 1) * (var / n as f64).sqrt()
        } else {
            f64::NAN
        };
        Some(Delta {
            variant_mean: pairs.iter().map(|p| p.0).sum::<f64>() / n as f64,
            against_mean: pairs.iter().map(|p| p.1).sum::<f64>() / n as f64,
            mean,
            ci_low: mean - half,
            ci_high: mean + half,
            n,
        })
    }

    pub fn pct(&self) -> f64 {
        if self.against_mean.abs() > 0.0 {
            100.0 * self.mean / self.against_mean
        } else {
            f64::NAN
        }
    }
}

/// Which pairs the ablation compares, within each scenario-parameter group: each
/// single-parameter deviation from its policy's reference configuration (a mechanism
/// turned off or changed), and each policy's reference against the sweep's baseline. Then,
/// per policy, each group that changes one scenario parameter against the reference group
/// (every parameter at its first value).
pub fn comparisons(runs: &[RunResult], baseline: &str) -> Vec<Comparison> {
    let mut out: Vec<Comparison> = Vec::new();
    let mut push = |c: Comparison| {
        if !out.contains(&c) {
            out.push(c);
        }
    };
    let reference_group = runs.first().map(|r| r.point.scenario_params.clone());
    for r in runs {
        let p = &r.point;
        let group = p.group();
        let pair = |against: &str, change: String| Comparison {
            group: group.clone(),
            variant: p.policy.clone(),
            against_group: group.clone(),
            against: against.to_string(),
            change,
        };
        if p.policy != p.reference {
            if let Some(change) = single_change(&p.policy, &p.reference) {
                push(pair(&p.reference, change));
            }
        }
        if p.policy == p.reference && p.policy != baseline {
            push(pair(baseline, "policy".into()));
        }
    }
    let Some(reference_group) = reference_group else {
        return out;
    };
    for r in runs {
        let p = &r.point;
        let changed: Vec<String> = p
            .scenario_params
            .iter()
            .filter(|(k, v)| reference_group.get(*k) != Some(v))
            .map(|(k, v)| format!("{k}={}", scalar(v)))
            .collect();
        if changed.len() == 1 {
            push(Comparison {
                group: p.group(),
                variant: p.policy.clone(),
                against_group: group_label(&reference_group),
                against: p.policy.clone(),
                change: changed[0].clone(),
            });
        }
    }
    out
}

/// `key=value` when `spec` differs from `reference` in exactly one parameter.
fn single_change(spec: &str, reference: &str) -> Option<String> {
    let (a, b) = (
        PolicySpec::parse(spec).ok()?,
        PolicySpec::parse(reference).ok()?,
    );
    let diffs: Vec<String> = a
        .params
        .iter()
        .filter(|(k, v)| b.params.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    (diffs.len() == 1).then(|| diffs[0].clone())
}

/// Every comparison with its paired delta for each of [`ABLATION_METRICS`], in order.
pub type Ablation = Vec<(Comparison, Vec<Option<Delta>>)>;

/// The ablation of `runs`, computed once for both ablation tables.
pub fn ablation(runs: &[RunResult], baseline: &str) -> Ablation {
    let groups = group_labels(runs);
    comparisons(runs, baseline)
        .into_iter()
        .map(|c| {
            let deltas = ABLATION_METRICS
                .iter()
                .map(|(metric, _, _)| paired(runs, &groups, &c, metric))
                .collect();
            (c, deltas)
        })
        .collect()
}

/// Each run's group label, formatted once rather than at every pairing.
fn group_labels(runs: &[RunResult]) -> Vec<String> {
    runs.iter().map(|r| r.point.group()).collect()
}

/// The paired delta of `metric` for `c`, or `None` when no seed has both runs.
pub fn delta(runs: &[RunResult], c: &Comparison, metric: &str) -> Option<Delta> {
    paired(runs, &group_labels(runs), c, metric)
}

/// [`delta`], with `groups[i]` the group label of `runs[i]`.
fn paired<'a>(
    runs: &'a [RunResult],
    groups: &'a [String],
    c: &'a Comparison,
    metric: &str,
) -> Option<Delta> {
    let in_group = |group: &'a str| {
        runs.iter()
            .zip(groups)
            .filter(move |(_, g)| *g == group)
            .map(|(r, _)| r)
    };
    let mut pairs = Vec::new();
    for r in in_group(&c.group).filter(|r| r.point.policy == c.variant) {
        let against = in_group(&c.against_group)
            .find(|o| o.point.policy == c.against && o.point.seed == r.point.seed);
        if let Some(o) = against {
            if let (Some(x), Some(y)) = (r.metric(metric), o.metric(metric)) {
                pairs.push((x, y));
            }
        }
    }
    Delta::from_pairs(&pairs)
}

pub use dlsim_fit::metrics::t975;

/// `ablation`: every comparison x metric, in long form.
pub fn ablation_table(ablation: &Ablation) -> Table {
    let mut t = Table::new(
        "ablation",
        "Each mechanism's contribution (variant - reference, paired by seed)",
        &[
            "group",
            "variant",
            "against",
            "change",
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
    t.units = long_units();
    for (c, deltas) in ablation {
        for ((metric, _, _), d) in ABLATION_METRICS.iter().zip(deltas) {
            if let Some(d) = d {
                t.push(vec![
                    c.group.clone().into(),
                    c.variant.clone().into(),
                    c.against_label().into(),
                    c.change.clone().into(),
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

/// Units of the value columns of a long table with one `metric` per row.
pub fn long_units() -> std::collections::BTreeMap<String, String> {
    let of_metric =
        "unit of the row's `metric` (its name says: _s seconds; jcr and utilisation fractions 0-1)";
    [
        "variant_mean",
        "against_mean",
        "delta",
        "ci95_low",
        "ci95_high",
    ]
    .iter()
    .map(|c| (c.to_string(), of_metric.to_string()))
    .chain([("delta_pct".to_string(), "% of against_mean".to_string())])
    .collect()
}

/// The ablation as one row per comparison: JCT deltas in %, rates in percentage points,
/// each with its 95% CI.
pub fn ablation_view(ablation: &Ablation) -> Table {
    let mut cols = vec!["group", "variant", "vs", "change"];
    cols.extend(ABLATION_METRICS.iter().map(|m| m.1));
    cols.push("seeds");
    let mut t = Table::new(
        "ablation_view",
        "Ablation (mean [95% CI] over seeds)",
        &cols,
    );
    for (c, deltas) in ablation {
        let mut row: Vec<Cell> = vec![
            c.group.clone().into(),
            c.variant.clone().into(),
            c.against_label().into(),
            c.change.clone().into(),
        ];
        let mut n = 0;
        for ((_, _, relative), d) in ABLATION_METRICS.iter().zip(deltas) {
            let text = match d {
                Some(d) => {
                    n = n.max(d.n);
                    format_delta(d, *relative)
                }
                None => "n/a".into(),
            };
            row.push(text.into());
        }
        row.push(Cell::Int(n as i64));
        t.push(row);
    }
    t
}

/// `-12.3% [-15.0, -9.6]` (relative) or `+1.2 pp [0.4, 2.0]` (rates).
pub fn format_delta(d: &Delta, relative: bool) -> String {
    let (scale, unit) = if relative {
        (100.0 / d.against_mean, "%")
    } else {
        (100.0, " pp")
    };
    if relative && d.against_mean.abs() == 0.0 {
        return "n/a".into();
    }
    let ci = if d.ci_low.is_finite() {
        format!(" [{:+.1}, {:+.1}]", d.ci_low * scale, d.ci_high * scale)
    } else {
        String::new()
    };
    format!("{:+.1}{unit}{ci}", d.mean * scale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn run(policy: &str, reference: &str, seed: u64, jct: f64) -> RunResult {
        RunResult {
            point: Point {
                id: format!("{policy}-{seed}"),
                policy: policy.into(),
                reference: reference.into(),
                scenario_params: BTreeMap::new(),
                replicate: 0,
                seed,
            },
            summary: json!({"jct_median_s": jct, "jcr": 1.0}),
        }
    }

    #[test]
    fn pairs_by_seed_with_a_t_interval() {
        let runs = vec![
            run("static", "static", 1, 100.0),
            run("static", "static", 2, 200.0),
            run("p", "p", 1, 90.0),
            run("p", "p", 2, 170.0),
            run("p[x=off]", "p", 1, 95.0),
            run("p[x=off]", "p", 2, 180.0),
        ];
        let cs = comparisons(&runs, "static");
        assert_eq!(cs.len(), 2);
        assert_eq!(
            (cs[0].variant.as_str(), cs[0].change.as_str()),
            ("p", "policy")
        );
        assert_eq!(cs[1].change, "x=off");
        let d = delta(&runs, &cs[0], "jct_median_s").unwrap();
        assert_eq!((d.mean, d.n), (-20.0, 2));
        // diffs -10 and -30: sd = 14.142, half-width = 12.706 * 14.142 / sqrt(2) = 127.06
        assert!((d.ci_high - (-20.0 + 127.06)).abs() < 0.01, "{d:?}");
        assert!((d.pct() - (-20.0 / 150.0 * 100.0)).abs() < 1e-9);
        assert_eq!(format_delta(&d, true), "-13.3% [-98.0, +71.4]");
    }
}
