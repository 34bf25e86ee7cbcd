//! `dlsim check`: compare runs or sweeps with a committed baseline, print a diff table, and
//! exit 1 on a regression; `--bless` deliberately records the given runs as the new golden
//! values. A run is compared by its policy spec; a sweep per policy and scenario, pooled
//! over its seeds. `--list-runs` prints the blessed single-run labels, so CI can replay
//! exactly those.

use crate::BadInput;
use clap::Args;
use dlsim_report::check::{
    compare, compare_pooled, diff_table, runs_under, Baseline, Checked, Status,
};
use dlsim_report::table::write_text;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct CheckArgs {
    /// Run folders (summary.json), checked by policy spec, or sweep folders (sweep.json),
    /// checked per policy and scenario pooled over their seeds.
    #[arg(required_unless_present = "list_runs")]
    pub runs: Vec<PathBuf>,
    /// Baseline file, e.g. reports/baselines/quickstart.json.
    #[arg(long)]
    pub baseline: PathBuf,
    /// Record these runs as the baseline's golden values (creates the file if needed).
    #[arg(long, conflicts_with = "list_runs")]
    pub bless: bool,
    /// Print the baseline's run labels, one per line, and exit.
    #[arg(long)]
    pub list_runs: bool,
    /// Print nothing but errors (the exit code tells the verdict; --list-runs still lists).
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let mut base = match Baseline::load(&args.baseline) {
        Ok(b) => b,
        Err(_) if args.bless && !args.baseline.exists() => Baseline::default(),
        Err(e) => return Err(BadInput(e.to_string()).into()),
    };
    if args.list_runs {
        for label in base.runs.keys() {
            println!("{label}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut runs = Vec::new();
    for path in &args.runs {
        runs.extend(runs_under(path).map_err(|e| BadInput(format!("{e:#}")))?);
    }
    if args.bless {
        for checked in &runs {
            let blessed = match checked {
                Checked::Run(label, summary) => base.bless(label, summary).map(|()| label.clone()),
                Checked::Pooled(g) => base.bless_pooled(g).map(|()| g.name()),
            };
            // Nothing is written unless every run blessed.
            let name =
                blessed.map_err(|e| BadInput(format!("{}: {e:#}", args.baseline.display())))?;
            if !args.quiet {
                println!("blessed {name}");
            }
        }
        if let Some(dir) = args.baseline.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        write_text(&args.baseline, &base.to_json())?;
        if !args.quiet {
            println!("wrote {}", args.baseline.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut diffs = Vec::new();
    let mut unblessed = Vec::new();
    // Runs whose check compared no metric: a check that compares nothing fails (issue #19).
    let mut compared_nothing = Vec::new();
    for checked in &runs {
        let compared = match checked {
            Checked::Run(label, _) if !base.runs.contains_key(label) => {
                unblessed.push(label.clone());
                continue;
            }
            Checked::Pooled(g) if base.pooled_of(g).is_none() => {
                unblessed.push(g.name());
                continue;
            }
            Checked::Run(label, summary) => compare(&base, label, summary),
            Checked::Pooled(g) => compare_pooled(&base, g),
        };
        let named = |e: anyhow::Error| BadInput(format!("{}: {e:#}", args.baseline.display()));
        let compared = compared.map_err(named)?;
        if compared.is_empty() {
            compared_nothing.push(match checked {
                Checked::Run(label, _) => label.clone(),
                Checked::Pooled(g) => g.name(),
            });
        }
        diffs.extend(compared);
    }
    // With --quiet, only the errors below (stderr) and the exit code speak.
    let say = |line: &str| {
        if !args.quiet {
            println!("{line}");
        }
    };
    if !args.quiet && !diffs.is_empty() {
        print!("{}", diff_table(&diffs).markdown());
    }
    let regressed = diffs
        .iter()
        .filter(|d| d.status == Status::Regressed)
        .count();
    let missing = diffs.iter().filter(|d| d.status == Status::Missing).count();
    let improved = diffs
        .iter()
        .filter(|d| d.status == Status::Improved)
        .count();
    let hint = format!(
        "dlsim check RUN_OR_SWEEP_DIR --baseline {} --bless",
        args.baseline.display()
    );
    for label in &unblessed {
        eprintln!(
            "error: no baseline for `{label}` in {}; bless it deliberately with `{hint}`",
            args.baseline.display()
        );
    }
    let known: Vec<&&str> = dlsim_policies::POLICY_NAMES
        .iter()
        .filter(|n| !base.runs.keys().any(|k| k.split('[').next() == Some(**n)))
        .collect();
    let policy_labels = base
        .runs
        .keys()
        .any(|k| dlsim_policies::POLICY_NAMES.contains(&k.split('[').next().unwrap_or_default()));
    if policy_labels && !known.is_empty() && !args.quiet {
        eprintln!(
            "note: policies without a baseline in {}: {} (replay them and bless with `{hint}`)",
            args.baseline.display(),
            known
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if improved > 0 {
        say(&format!(
            "{improved} metric(s) improved beyond tolerance: consider re-blessing."
        ));
    }
    for label in &compared_nothing {
        eprintln!(
            "error: `{label}` compared no metric: its golden values in {} have no metric with a tolerance",
            args.baseline.display()
        );
    }
    if regressed + missing > 0 || !unblessed.is_empty() || !compared_nothing.is_empty() {
        // The verdict is the error: printed even with --quiet.
        println!(
            "FAILED: {regressed} regression(s), {missing} missing metric(s), {} run(s) without a baseline, {} run(s) comparing no metric",
            unblessed.len(),
            compared_nothing.len()
        );
        return Ok(ExitCode::from(1));
    }
    say(&format!(
        "ok: {} run(s) or pooled policies, {} metric(s) within tolerance",
        runs.len(),
        diffs.len()
    ));
    Ok(ExitCode::SUCCESS)
}
