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
//! A run is written into `runs/.<id>.tmp-<pid>/` and renamed into place when complete, so
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
    std::fs::read_to_string(dir.join("point.json"))
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

/// Fails on the first point whose scenario or policy does not load, before anything runs.
/// Each group of scenario parameters is loaded once; a generated workload, which depends
/// on the seed, is loaded (generated and checked) for every seed.
pub fn validate(sweep: &Sweep) -> Result<(), InputError> {
    let generated = sweep.scenario_json.get("generate").is_some()
        || sweep
            .points()
            .first()
            .is_some_and(|p| p.scenario_params.keys().any(|k| k.starts_with("generate")));
    let mut seen = std::collections::BTreeSet::new();
    for p in sweep.points() {
        if seen.insert(p.group()) || generated {
            scenario(sweep, p)?;
        }
    }
    Ok(())
}

/// Runs one point and moves its outputs into `OUT/runs/<id>/`.
pub fn run_point(sweep: &Sweep, point: &Point, out: &Path) -> anyhow::Result<()> {
    let mut scenario = scenario(sweep, point).map_err(|e| anyhow::anyhow!("{e}"))?;
    scenario.keep_ended = false;
    let policy = dlsim_policies::build(&point.policy)
        .map_err(|e| anyhow::anyhow!("run {}: {e}", point.id))?;
    let output = dlsim_model::run(&scenario, policy);
    let runs = out.join("runs");
    let tmp = runs.join(format!(".{}.tmp-{}", point.id, std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    output
        .write(&tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    let point_json = serde_json::to_string_pretty(point)? + "\n";
    write_text(&tmp.join("point.json"), &point_json)?;
    install(&tmp, &run_dir(out, point))
}

/// Renames a complete temporary run folder into place, replacing a stale one.
fn install(tmp: &Path, dest: &Path) -> anyhow::Result<()> {
    if dest.exists() {
        std::fs::remove_dir_all(dest).with_context(|| format!("removing {}", dest.display()))?;
    }
    std::fs::rename(tmp, dest).with_context(|| format!("renaming to {}", dest.display()))
}

/// Writes `OUT/sweep.json`, or checks that the one there is the same plan.
pub fn write_plan(out: &Path, plan: &Plan) -> anyhow::Result<()> {
    std::fs::create_dir_all(out.join("runs"))
        .with_context(|| format!("creating {}", out.display()))?;
    let path = out.join("sweep.json");
    if let Ok(old) = std::fs::read_to_string(&path) {
        match serde_json::from_str::<Plan>(&old) {
            Ok(p) if p == *plan => return Ok(()),
            _ => bail!(
                "{} holds a different sweep; choose another --out or delete it",
                path.display()
            ),
        }
    }
    write_text(&path, &plan.to_json())
}

pub fn read_plan(dir: &Path) -> anyhow::Result<Plan> {
    let path = dir.join("sweep.json");
    let text = std::fs::read_to_string(&path)
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
            let text = std::fs::read_to_string(&path)
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

/// Combines shard folders of one sweep into `out` and writes its tables.
pub fn merge(shards: &[PathBuf], out: &Path) -> anyhow::Result<Table> {
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
    write_plan(out, &plan)?;
    for p in &plan.points {
        if is_done(out, p) {
            continue;
        }
        let Some(src) = shards.iter().find(|s| is_done(s, p)) else {
            continue; // `collect` below names every missing run.
        };
        let tmp = out
            .join("runs")
            .join(format!(".{}.tmp-{}", p.id, std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        let from = run_dir(src, p);
        for entry in std::fs::read_dir(&from)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                std::fs::copy(entry.path(), tmp.join(entry.file_name()))
                    .with_context(|| format!("copying {}", entry.path().display()))?;
            }
        }
        install(&tmp, &run_dir(out, p))?;
    }
    finish(out, &plan)
}
