//! Running, resuming, merging and summarising sweeps on disk.
//!
//! Layout of a sweep folder:
//!
//! ```text
//! OUT/sweep.json                 the expanded plan (every point, its id and seed)
//! OUT/runs/<id>/                 summary.json, jobs.csv, timeline.csv, point.json
//! OUT/results.{csv,parquet}      one row per run, in grid order
//! OUT/ablation.{csv,parquet,md}  each mechanism's contribution, mean and 95% CI
//! ```
//!
//! A run is written into a staging folder beside `runs/<id>/` (`dlsim_fsio::stage_dir`)
//! and renamed into place when complete, so
//! `runs/<id>/` exists only for finished runs: that is what makes a sweep resumable and a
//! killed shard harmless. Only reproducible files are written (no wall-clock `run.json`),
//! so two sweeps of one plan are byte-identical whatever their threads or shards.

use crate::results::{ablation, ablation_table, ablation_view, results_table, RunResult};
use crate::sweep::{Plan, Point, Sweep};
use crate::table::{write_text, Table};
use anyhow::{bail, Context};
use dlsim_model::Scenario;
use dlsim_traces::InputError;
use std::path::{Path, PathBuf};

pub fn run_dir(out: &Path, point: &Point) -> PathBuf {
    out.join("runs").join(&point.id)
}

/// Whether `point` already finished in `out` (its folder exists and holds this point).
pub fn is_done(out: &Path, point: &Point) -> bool {
    let dir = run_dir(out, point);
    if !dir.join("summary.json").is_file() {
        return false;
    }
    dlsim_fsio::read_to_string_limited(&dir.join("point.json"), dlsim_fsio::MAX_INPUT_BYTES)
        .ok()
        .and_then(|t| serde_json::from_str::<Point>(&t).ok())
        .is_some_and(|p| p == *point)
}

/// Loads `point`'s scenario (overrides and seed applied), ready to run.
pub fn scenario(sweep: &Sweep, point: &Point) -> Result<Scenario, InputError> {
    Scenario::from_text(&sweep.scenario_path, &sweep.scenario_text(point)).map_err(|mut e| {
        e.message = format!(
            "{} (with the sweep's scenario_params {})",
            e.message,
            point.group()
        );
        e
    })
}

/// Fails on the first point whose scenario or policy does not load, before anything runs;
/// returns the scenarios' warnings ([`Scenario::warnings`]), each once. Each group of
/// scenario parameters is loaded once; a generated workload, which depends on the seed, is
/// loaded (generated and checked) for every seed.
pub fn validate(sweep: &Sweep) -> Result<Vec<String>, InputError> {
    let generated = sweep.scenario_json.get("generate").is_some()
        || sweep
            .points()
            .first()
            .is_some_and(|p| p.scenario_params.keys().any(|k| k.starts_with("generate")));
    // Each group's nodes, for the policies' pods: a policy whose pods no node of the
    // cluster holds would reject every launch.
    let mut nodes = std::collections::BTreeMap::new();
    let mut checked = std::collections::BTreeSet::new();
    let mut warnings: Vec<String> = Vec::new();
    for p in sweep.points() {
        if !nodes.contains_key(&p.group()) || generated {
            let s = scenario(sweep, p)?;
            for w in s.warnings {
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
            nodes.insert(p.group(), s.nodes);
        }
        if checked.insert((p.group(), p.policy.clone())) {
            if let Ok(policy) = dlsim_policies::build(&p.policy) {
                dlsim_model::scenario::check_policy_pods(&nodes[&p.group()], policy.as_ref())
                    .map_err(|e| {
                        InputError::new(&sweep.path, format!("{e} (on {})", point_where(p)))
                            .field("policies")
                    })?;
            }
        }
    }
    Ok(warnings)
}

/// The scenario parameters a point runs with, for an error message.
fn point_where(p: &Point) -> String {
    if p.scenario_params.is_empty() {
        "the sweep's scenario".to_string()
    } else {
        format!("the sweep's scenario with scenario_params {}", p.group())
    }
}

/// Runs one point and moves its outputs into `OUT/runs/<id>/`.
pub fn run_point(sweep: &Sweep, point: &Point, out: &Path) -> anyhow::Result<()> {
    let mut scenario = scenario(sweep, point).map_err(|e| anyhow::anyhow!("{e}"))?;
    scenario.keep_ended = false;
    let policy = dlsim_policies::build(&point.policy)
        .map_err(|e| anyhow::anyhow!("run {}: {e}", point.id))?;
    let output = dlsim_model::run(&scenario, policy);
    install(&run_dir(out, point), |dir| {
        output
            .write(dir)
            .with_context(|| format!("writing {}", dir.display()))?;
        let point_json = serde_json::to_string_pretty(point)? + "\n";
        write_text(&dir.join("point.json"), &point_json)
    })
}

/// The files a finished run folder may hold: a replay's and `point.json`.
const RUN_DIR_FILES: [&str; 6] = [
    "summary.json",
    "jobs.csv",
    "timeline.csv",
    "observations.csv",
    "run.json",
    "point.json",
];

/// Fills a staging folder beside `dest` with `fill` and renames it into place whole
/// (`dlsim_fsio`), replacing a stale run; on failure nothing is left.
fn install(dest: &Path, fill: impl FnOnce(&Path) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let staged = dlsim_fsio::stage_dir(dest, &RUN_DIR_FILES)?;
    if let Err(e) = fill(&staged) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(e);
    }
    Ok(dlsim_fsio::commit_dir(&staged, dest)?)
}

/// Checks, writing nothing, that `out` can take the sweep of `plan`: it is missing, or a
/// folder whose `sweep.json`, if any, is this plan (a sweep being resumed). A failure is
/// the user's (`--out`).
pub fn check_out(out: &Path, plan: &Plan) -> anyhow::Result<()> {
    if let Err(e) = dlsim_fsio::check_folder_target(out) {
        bail!("--out: {e}");
    }
    let path = out.join("sweep.json");
    if path.exists() {
        let same = dlsim_fsio::read_to_string_limited(&path, dlsim_fsio::MAX_INPUT_BYTES)
            .ok()
            .and_then(|t| serde_json::from_str::<Plan>(&t).ok())
            .is_some_and(|p| p == *plan);
        if !same {
            bail!(
                "{} holds a different sweep; choose another --out or delete it",
                path.display()
            );
        }
    }
    Ok(())
}

/// Writes `OUT/sweep.json` (unless there already, see [`check_out`]) and `OUT/runs/`.
pub fn write_plan(out: &Path, plan: &Plan) -> anyhow::Result<()> {
    check_out(out, plan)?;
    std::fs::create_dir_all(out.join("runs"))
        .with_context(|| format!("creating {}", out.display()))?;
    let path = out.join("sweep.json");
    if path.exists() {
        return Ok(());
    }
    write_text(&path, &plan.to_json())
}

pub fn read_plan(dir: &Path) -> anyhow::Result<Plan> {
    let path = dir.join("sweep.json");
    let text = dlsim_fsio::read_to_string_limited(&path, dlsim_fsio::MAX_INPUT_BYTES)
        .with_context(|| format!("{}: not a sweep folder", dir.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: malformed plan", path.display()))
}

/// The finished runs of `plan` in `out`, in grid order; fails naming the missing ones.
pub fn collect(out: &Path, plan: &Plan) -> anyhow::Result<Vec<RunResult>> {
    let missing: Vec<&str> = plan
        .points
        .iter()
        .filter(|p| !is_done(out, p))
        .map(|p| p.id.as_str())
        .collect();
    if !missing.is_empty() {
        bail!(
            "{} of {} runs are not finished in {} (e.g. {}); run the remaining shards or resume the sweep",
            missing.len(),
            plan.points.len(),
            out.display(),
            missing[..missing.len().min(3)].join(", ")
        );
    }
    plan.points
        .iter()
        .map(|p| {
            let path = run_dir(out, p).join("summary.json");
            let text = dlsim_fsio::read_to_string_limited(&path, dlsim_fsio::MAX_INPUT_BYTES)
                .with_context(|| format!("reading {}", path.display()))?;
            Ok(RunResult {
                point: p.clone(),
                summary: serde_json::from_str(&text)
                    .with_context(|| format!("parsing {}", path.display()))?,
            })
        })
        .collect()
}

/// Writes the results and ablation tables of a complete sweep; returns the ablation view.
pub fn finish(out: &Path, plan: &Plan) -> anyhow::Result<Table> {
    let runs = collect(out, plan)?;
    let results = results_table(&plan.scenario_params, &runs);
    results.write(out)?;
    let ablation = ablation(&runs, &plan.baseline);
    let mut table = ablation_table(&ablation);
    table.provenance = results.provenance.clone();
    table.write(out)?;
    crate::jobs::write_jobs(out, &plan.scenario_params, &runs, &results.provenance)?;
    let view = ablation_view(&ablation);
    let md =
        format!(
        "# Ablation: {}\n\nEach row is `variant - vs`, paired by seed: JCT as % of `vs`, JCR and \
         utilisation in percentage points; brackets are 95% confidence intervals (Student t) \
         over seeds.\n\n{}",
        if plan.name.is_empty() { "sweep" } else { &plan.name },
        view.markdown()
    );
    write_text(&out.join("ablation.md"), &md)?;
    Ok(view)
}

/// What `dlsim merge` will do, checked before anything is written: the shards' common
/// plan and, per run, the shard folder holding it finished (`None`: already in `out`).
pub struct MergePlan {
    pub plan: Plan,
    pub sources: Vec<(Point, Option<PathBuf>)>,
}

/// Checks shard folders of one sweep before merging them into `out`: all hold the same
/// plan (as does `out`, if it is a sweep folder already), and every run is finished in
/// one of them or in `out`, with a readable `summary.json`. Every failure here is the
/// user's; nothing is written.
pub fn merge_plan(shards: &[PathBuf], out: &Path) -> anyhow::Result<MergePlan> {
    let Some(first) = shards.first() else {
        bail!("no shard folders given");
    };
    let plan = read_plan(first)?;
    for s in &shards[1..] {
        if read_plan(s)? != plan {
            bail!(
                "{} and {} hold different sweeps",
                first.display(),
                s.display()
            );
        }
    }
    check_out(out, &plan)?;
    let mut sources = Vec::new();
    let mut missing = Vec::new();
    for p in &plan.points {
        let src = if is_done(out, p) {
            None
        } else if let Some(s) = shards.iter().find(|s| is_done(s, p)) {
            Some(s.clone())
        } else {
            missing.push(p.id.as_str());
            continue;
        };
        let summary = run_dir(src.as_deref().unwrap_or(out), p).join("summary.json");
        let text = dlsim_fsio::read_to_string_limited(&summary, dlsim_fsio::MAX_INPUT_BYTES)
            .with_context(|| format!("reading {}", summary.display()))?;
        serde_json::from_str::<serde_json::Value>(&text)
            .with_context(|| format!("parsing {}", summary.display()))?;
        sources.push((p.clone(), src));
    }
    if !missing.is_empty() {
        bail!(
            "{} of {} runs are not finished in any of the shards (e.g. {}); run the remaining shards first",
            missing.len(),
            plan.points.len(),
            missing[..missing.len().min(3)].join(", ")
        );
    }
    Ok(MergePlan { plan, sources })
}

/// Combines the shard folders of a checked [`merge_plan`] into `out`, each run folder
/// copied whole through a staging folder, and writes the sweep's tables.
pub fn merge(m: &MergePlan, out: &Path) -> anyhow::Result<Table> {
    write_plan(out, &m.plan)?;
    for (p, src) in &m.sources {
        let Some(src) = src else { continue };
        let from = run_dir(src, p);
        install(&run_dir(out, p), |dir| {
            for entry in std::fs::read_dir(&from)? {
                let entry = entry?;
                if entry.file_type()?.is_file() {
                    std::fs::copy(entry.path(), dir.join(entry.file_name()))
                        .with_context(|| format!("copying {}", entry.path().display()))?;
                }
            }
            Ok(())
        })?;
    }
    finish(out, &m.plan)
}
