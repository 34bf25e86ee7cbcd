//! `check`'s baseline file (`reports/baselines/NAME.json`): its format, loading with
//! every range check (issue #21), blessing, and the pooling of a sweep's runs over seeds.
//!
//! A baseline holds, per run label (a policy spec), the scenario name, seed and metric
//! values of a blessed run (`runs`); per scenario and policy label, the metrics of a
//! blessed sweep pooled over its seeds (`pooled`: the mean over seeds of each metric, with
//! the seeds it was made on); and per-metric tolerances: which direction is worse and how
//! far it may move (`max(abs, rel x |golden|)`). Comparing runs with it, and the diff
//! table, are `dlsim_report::check`'s.

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
        Baseline::from_text(path, &text)
    }

    /// [`Baseline::load`] of `text`, read from (or standing for) `path`.
    pub fn from_text(path: &Path, text: &str) -> Result<Baseline, dlsim_traces::InputError> {
        use dlsim_traces::InputError;
        let b: Baseline = dlsim_traces::error::parse_json_document(path, text, 0)?;
        if b.format != "dlsim-baseline" || b.version != 1 {
            let e = InputError::new(path, "expected a dlsim-baseline v1 file");
            return Err(e.field_in(text, "format"));
        }
        // An entry without metrics would make every check of it pass while comparing
        // nothing (issue #19).
        let empty = b
            .runs
            .iter()
            .filter(|(_, g)| g.metrics.is_empty())
            .map(|(label, _)| format!("runs.{label}"))
            .chain(b.pooled.iter().flat_map(|(scenario, labels)| {
                labels
                    .iter()
                    .filter(|(_, p)| p.metrics.is_empty())
                    .map(move |(label, _)| format!("pooled.{scenario}.{label}"))
            }))
            .next();
        if let Some(entry) = empty {
            let e = InputError::new(
                path,
                "blessed without a single metric, so a check of it would compare nothing; re-bless it from a run that has the baseline's metrics",
            );
            return Err(e.field_in(text, format!("{entry}.metrics")));
        }
        // A negative slack flags every run and a huge one none (issue #21).
        for (metric, t) in &b.tolerances {
            for (name, v, hi) in [
                ("abs", t.abs, MAX_ABS_TOLERANCE),
                ("rel", t.rel, MAX_REL_TOLERANCE),
            ] {
                if let Err(m) = dlsim_traces::limits::in_range(v, 0.0, hi) {
                    let field = format!("tolerances.{metric}.{name}");
                    return Err(InputError::new(path, m).field_in(text, field));
                }
            }
        }
        Ok(b)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("baseline serialises") + "\n"
    }

    /// Records `summary` as the golden values of `label`. Fails, recording nothing, when
    /// the summary has none of the metrics the baseline has tolerances for.
    pub fn bless(&mut self, label: &str, summary: &Value) -> Result<(), String> {
        let metrics: BTreeMap<String, f64> = self
            .tolerances
            .keys()
            .filter_map(|k| {
                summary
                    .get(k)
                    .and_then(Value::as_f64)
                    .map(|v| (k.clone(), v))
            })
            .collect();
        self.nonempty(&metrics, &format!("run `{label}`"))?;
        self.runs
            .insert(label.to_string(), golden_of(summary, metrics));
        Ok(())
    }

    /// Records a sweep's pooled values of one policy as golden; fails as [`Self::bless`].
    pub fn bless_pooled(&mut self, g: &Group) -> Result<(), String> {
        let metrics: BTreeMap<String, f64> = self
            .tolerances
            .keys()
            .filter_map(|k| Some((k.clone(), *g.metrics.get(k)?)))
            .collect();
        self.nonempty(&metrics, &g.name())?;
        self.pooled.entry(g.scenario.clone()).or_default().insert(
            g.label.clone(),
            Pooled {
                seeds: g.seeds.clone(),
                metrics,
            },
        );
        Ok(())
    }

    /// A blessing with no metric would make every later check compare nothing.
    fn nonempty(&self, metrics: &BTreeMap<String, f64>, what: &str) -> Result<(), String> {
        if metrics.is_empty() {
            return Err(format!(
                "{what} has none of the metrics the baseline has tolerances for ({}); nothing blessed",
                self.tolerances
                    .keys()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(())
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

/// The golden values of a run with these `metrics`: its scenario and seed with them.
pub fn golden_of(summary: &Value, metrics: BTreeMap<String, f64>) -> Golden {
    Golden {
        scenario: summary["scenario"].as_str().unwrap_or_default().to_string(),
        seed: summary["seed"].as_u64().unwrap_or_default(),
        metrics,
    }
}
