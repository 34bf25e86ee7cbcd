//! Sweep files and their grid: policies x policy parameters x scenario parameters x seeds.
//!
//! A sweep file names one scenario and the axes to vary. [`Sweep::load`] validates it
//! (errors name the file, line and field) and [`Sweep::points`] expands the grid into
//! [`Point`]s in a fixed order, each with a stable run id. Everything here is pure: the same
//! sweep file gives the same points, ids and seeds on every machine and thread count, which
//! is what makes `--shard i/n` slices and `dlsim merge` exact.

use dlsim_engine::RngStreams;
use dlsim_model::scenario::set_dotted;
use dlsim_policies::PolicySpec;
use dlsim_traces::InputError;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The sweep file as written by a user. Paths are relative to the sweep file's folder.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    #[serde(default)]
    pub name: String,
    /// The scenario every run starts from.
    pub scenario: PathBuf,
    /// Seed of the sweep: with `seeds` as a count, replicate `k` runs with seed
    /// `derive(seed, "sweep-replicate", k)`.
    #[serde(default = "one")]
    pub seed: u64,
    /// A number of replicates (seeds derived from `seed`) or an explicit list of seeds.
    #[serde(default)]
    pub seeds: Seeds,
    /// Policy specs, or `"all"` for every policy `dlsim_policies::POLICY_NAMES` lists that
    /// builds without parameters.
    pub policies: Policies,
    /// Per policy name: parameter -> values. The first value of each list is the reference
    /// ("full") configuration the ablation table compares the others with.
    #[serde(default)]
    pub policy_params: BTreeMap<String, BTreeMap<String, Vec<Value>>>,
    /// Dotted scenario keys -> values, e.g. `"faults.pod_failure_per_day": [0.0, 0.015]`.
    #[serde(default)]
    pub scenario_params: BTreeMap<String, Vec<Value>>,
    /// The policy every other is compared with in the ablation table [default: the first].
    #[serde(default)]
    pub baseline: Option<String>,
}

fn one() -> u64 {
    1
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Seeds {
    Count(u32),
    List(Vec<u64>),
}

impl Default for Seeds {
    fn default() -> Self {
        Seeds::Count(1)
    }
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Policies {
    All(String),
    List(Vec<String>),
}

/// One run of the grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Stable, file-name-safe id: policy, scenario parameters and seed.
    pub id: String,
    /// Canonical policy spec, e.g. `dlrover[warm_start=off]`.
    pub policy: String,
    /// The spec this policy's ablation compares with (every parameter at its first value).
    pub reference: String,
    /// Scenario overrides, dotted key -> value.
    pub scenario_params: BTreeMap<String, Value>,
    /// Replicate index and the seed it runs with.
    pub replicate: u32,
    pub seed: u64,
}

impl Point {
    /// The label of this point's scenario-parameter group, e.g. `faults.x=0.1` or `base`.
    pub fn group(&self) -> String {
        group_label(&self.scenario_params)
    }
}

pub fn group_label(params: &BTreeMap<String, Value>) -> String {
    if params.is_empty() {
        return "base".into();
    }
    params
        .iter()
        .map(|(k, v)| format!("{k}={}", scalar(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// A loaded, validated sweep.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub path: PathBuf,
    pub file: SweepFile,
    pub scenario_path: PathBuf,
    /// The scenario file's JSON, to which each point's overrides are applied.
    pub scenario_json: Value,
    pub baseline: String,
    points: Vec<Point>,
}

impl Sweep {
    /// Reads and validates a sweep file and the scenario it names; expands the grid.
    pub fn load(path: &Path) -> Result<Sweep, InputError> {
        let text = dlsim_fsio::read_to_string_limited(path, dlsim_fsio::MAX_INPUT_BYTES)
            .map_err(|e| InputError::new(path, format!("cannot read sweep file: {e}")))?;
        Sweep::from_text(path, &text)
    }

    /// [`Sweep::load`] of `text`, read from (or standing for) `path`, against whose folder
    /// the scenario's path resolves.
    pub fn from_text(path: &Path, text: &str) -> Result<Sweep, InputError> {
        let file: SweepFile = dlsim_traces::error::parse_json_document(path, text, 0)?;
        let at = |key: &str, msg: String| InputError::new(path, msg).field_in(text, key);
        let scenario_path = path.parent().unwrap_or(Path::new(".")).join(&file.scenario);
        let scenario_text =
            dlsim_fsio::read_to_string_limited(&scenario_path, dlsim_fsio::MAX_INPUT_BYTES)
                .map_err(|e| {
                    at(
                        "scenario",
                        format!("cannot read {}: {e}", scenario_path.display()),
                    )
                })?;
        let scenario_json: Value =
            dlsim_traces::error::parse_json_document(&scenario_path, &scenario_text, 0)?;
        let specs = policy_specs(&file).map_err(|(k, m)| at(&k, m))?;
        let baseline = match &file.baseline {
            Some(b) => canonical(b).map_err(|m| at("baseline", m))?,
            None => specs.first().map(|s| s.0.clone()).unwrap_or_default(),
        };
        if !specs.iter().any(|(s, _)| *s == baseline) {
            return Err(at(
                "baseline",
                format!("`{baseline}` is not one of the sweep's policies"),
            ));
        }
        let seeds = seeds(&file).map_err(|m| at("seeds", m))?;
        for (key, values) in &file.scenario_params {
            let field = format!("scenario_params.{key}");
            // The sweep sets these itself, per point; an override would be lost or clash.
            let own = match key.as_str() {
                "seed" => Some("seeds"),
                "policy" => Some("policies"),
                _ => None,
            };
            if let Some(own) = own {
                let msg = format!("the sweep sets `{key}` per run: vary it with `{own}`");
                return Err(at(&field, msg));
            }
            if values.is_empty() {
                return Err(at(&field, "has no values".into()));
            }
        }
        // Bound the grid before it is built (issue #21).
        let runs = file
            .scenario_params
            .values()
            .fold((specs.len() * seeds.len()) as f64, |n, v| {
                n * v.len() as f64
            });
        let max_runs = dlsim_traces::limits::MAX_SWEEP_RUNS;
        if runs > max_runs as f64 {
            return Err(at(
                "scenario_params",
                format!("the grid has {runs} runs, over the limit of {max_runs}"),
            ));
        }
        let groups = product(&file.scenario_params);
        let mut points = Vec::new();
        for group in &groups {
            for (policy, reference) in &specs {
                for (k, &seed) in seeds.iter().enumerate() {
                    points.push(Point {
                        id: run_id(policy, group, seed),
                        policy: policy.clone(),
                        reference: reference.clone(),
                        scenario_params: group.clone(),
                        replicate: k as u32,
                        seed,
                    });
                }
            }
        }
        let mut ids: Vec<&str> = points.iter().map(|p| p.id.as_str()).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(at("policies", format!("two runs share the id `{}`", w[0])));
        }
        Ok(Sweep {
            path: path.to_path_buf(),
            file,
            scenario_path,
            scenario_json,
            baseline,
            points,
        })
    }

    /// Every point, in grid order: scenario parameters, then policy, then seed.
    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// The scenario text of `point`: the scenario file with its overrides and seed applied.
    pub fn scenario_text(&self, point: &Point) -> String {
        let mut v = self.scenario_json.clone();
        for (key, value) in &point.scenario_params {
            set_dotted(&mut v, key, value.clone());
        }
        set_dotted(&mut v, "seed", Value::from(point.seed));
        serde_json::to_string_pretty(&v).expect("JSON values serialise")
    }

    /// The expanded plan, written as `sweep.json`.
    pub fn plan(&self) -> Plan {
        Plan {
            format: "dlsim-sweep-plan".into(),
            version: 1,
            name: self.file.name.clone(),
            baseline: self.baseline.clone(),
            scenario_params: self.file.scenario_params.keys().cloned().collect(),
            points: self.points.clone(),
        }
    }
}

/// A sweep expanded into its runs: identical for identical sweeps, so shards and resumed
/// runs can prove they belong to the same sweep, and `dlsim merge` needs nothing else.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub format: String,
    pub version: u32,
    pub name: String,
    pub baseline: String,
    /// The dotted scenario keys the grid varies, in order.
    pub scenario_params: Vec<String>,
    pub points: Vec<Point>,
}

impl Plan {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plan serialises") + "\n"
    }
}

/// A deterministic slice of the grid: point `j` belongs to shard `j mod n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Parses `i/n` with `0 <= i < n` (0-based, like Slurm array and Kubernetes indices).
    pub fn parse(s: &str) -> Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}` is not i/n"))?;
        let parse = |x: &str| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{s}` is not i/n"))
        };
        let (index, count) = (parse(i)?, parse(n)?);
        if count == 0 || index >= count {
            return Err(format!("shard `{s}`: need 0 <= i < n"));
        }
        Ok(Shard { index, count })
    }

    pub fn contains(&self, position: usize) -> bool {
        position % self.count == self.index
    }
}

/// Reads a JSON value as a short string: strings unquoted, numbers as written.
pub fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The canonical form of a policy spec, composed (`dlrover+kale`) or not.
fn canonical(spec: &str) -> Result<String, String> {
    if dlsim_policies::split_composed(spec)
        .map_err(|e| e.to_string())?
        .len()
        > 1
    {
        return dlsim_policies::build(spec)
            .map(|p| p.spec())
            .map_err(|e| e.to_string());
    }
    PolicySpec::parse(spec)
        .map(|s| s.canonical())
        .map_err(|e| e.to_string())
}

/// `(spec, reference spec)` for every policy variant, in order.
/// An error names the field: the policy's place in `policies`, or its `policy_params` key.
fn policy_specs(file: &SweepFile) -> Result<Vec<(String, String)>, (String, String)> {
    let names: Vec<String> = match &file.policies {
        // Every policy that builds with its default parameters; one that needs parameters
        // must be listed with them.
        Policies::All(s) if s == "all" => dlsim_policies::POLICY_NAMES
            .iter()
            .filter(|n| dlsim_policies::build(n).is_ok())
            .map(|s| s.to_string())
            .collect(),
        Policies::All(s) => {
            return Err((
                "policies".into(),
                format!("expected a list of specs or \"all\", got `{s}`"),
            ))
        }
        Policies::List(l) => l.clone(),
    };
    if names.is_empty() {
        return Err(("policies".into(), "no policies".into()));
    }
    for name in file.policy_params.keys() {
        if !names.iter().any(|n| n.split('[').next() == Some(name)) {
            return Err((
                format!("policy_params.{name}"),
                "is not one of the sweep's policies".into(),
            ));
        }
    }
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let listed = match &file.policies {
            Policies::List(_) => format!("policies[{i}]"),
            Policies::All(_) => "policies".into(),
        };
        let parts =
            dlsim_policies::split_composed(name).map_err(|e| (listed.clone(), e.to_string()))?;
        if parts.len() > 1 {
            // A composed spec (`dlrover+kale`) is one variant: `policy_params` grids apply
            // to plain specs only.
            let spec = canonical(name).map_err(|e| (listed.clone(), e))?;
            out.push((spec.clone(), spec));
            continue;
        }
        let base = PolicySpec::parse(name).map_err(|e| (listed.clone(), e.to_string()))?;
        let grid = file
            .policy_params
            .get(&base.name)
            .cloned()
            .unwrap_or_default();
        let mut reference = base.clone();
        for (key, values) in &grid {
            let field = format!("policy_params.{}.{key}", base.name);
            let first = values
                .first()
                .ok_or_else(|| (field.clone(), "has no values".to_string()))?;
            if base.params.contains_key(key) {
                return Err((field, format!("`{key}` is set both in `{name}` and here")));
            }
            reference.params.insert(key.clone(), scalar(first));
        }
        for combo in product(&grid) {
            let mut spec = base.clone();
            for (k, v) in combo {
                spec.params.insert(k, scalar(&v));
            }
            // Fail now, not in the middle of a sweep, on an unknown policy or parameter.
            dlsim_policies::build(&spec.canonical())
                .map_err(|e| (listed.clone(), e.to_string()))?;
            out.push((spec.canonical(), reference.canonical()));
        }
    }
    Ok(out)
}

fn seeds(file: &SweepFile) -> Result<Vec<u64>, String> {
    let count = match &file.seeds {
        Seeds::Count(n) => u64::from(*n),
        Seeds::List(l) => l.len() as u64,
    };
    dlsim_traces::limits::at_most(count, dlsim_traces::limits::MAX_SEEDS)
        .map_err(|m| format!("{m} seeds"))?;
    let seeds = match &file.seeds {
        Seeds::Count(0) => return Err("need at least one seed".into()),
        Seeds::Count(n) => {
            let streams = RngStreams::new(file.seed);
            (0..u64::from(*n))
                .map(|k| u64::from(streams.substream("sweep-replicate", k).next_u32()))
                .collect()
        }
        Seeds::List(l) => l.clone(),
    };
    let mut sorted = seeds.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != seeds.len() || seeds.is_empty() {
        return Err("seeds must be non-empty and distinct".into());
    }
    Ok(seeds)
}

/// The cartesian product of `axes` (keys in order, values in listed order).
fn product(axes: &BTreeMap<String, Vec<Value>>) -> Vec<BTreeMap<String, Value>> {
    let mut out = vec![BTreeMap::new()];
    for (key, values) in axes {
        out = out
            .into_iter()
            .flat_map(|partial| {
                values.iter().map(move |v| {
                    let mut next = partial.clone();
                    next.insert(key.clone(), v.clone());
                    next
                })
            })
            .collect();
    }
    out
}

/// `policy__key=value__s<seed>`, with every character outside `[A-Za-z0-9._=+-]` as `_`.
pub fn run_id(policy: &str, params: &BTreeMap<String, Value>, seed: u64) -> String {
    let mut id = slug(policy);
    for (k, v) in params {
        id.push_str("__");
        id.push_str(&slug(&format!("{k}={}", scalar(v))));
    }
    format!("{id}__s{seed}")
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._=+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Sets `a.b.c` in a JSON object, creating objects on the way.
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shards_partition_the_grid() {
        let s = Shard::parse("1/3").unwrap();
        let taken: Vec<usize> = (0..7).filter(|&j| s.contains(j)).collect();
        assert_eq!(taken, [1, 4]);
        assert!(Shard::parse("3/3").is_err());
        assert!(Shard::parse("x").is_err());
    }

    #[test]
    fn dotted_keys_create_objects() {
        let mut v = json!({"faults": {"a": 1}});
        set_dotted(&mut v, "faults.pod_failure_per_day", json!(0.1));
        set_dotted(&mut v, "recovery.reload_s", json!(5));
        assert_eq!(
            v,
            json!({"faults": {"a": 1, "pod_failure_per_day": 0.1}, "recovery": {"reload_s": 5}})
        );
    }

    #[test]
    fn run_ids_are_file_name_safe() {
        let mut p = BTreeMap::new();
        p.insert("faults.x".to_string(), json!(0.5));
        assert_eq!(
            run_id("a[b=1,c=x y]", &p, 7),
            "a_b=1_c=x_y___faults.x=0.5__s7"
        );
    }

    #[test]
    fn product_keeps_listed_order() {
        let mut axes = BTreeMap::new();
        axes.insert("a".to_string(), vec![json!(1), json!(2)]);
        axes.insert("b".to_string(), vec![json!("x"), json!("y")]);
        let labels: Vec<String> = product(&axes).iter().map(group_label).collect();
        assert_eq!(labels, ["a=1,b=x", "a=1,b=y", "a=2,b=x", "a=2,b=y"]);
    }
}
