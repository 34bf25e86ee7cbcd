//! `dlsim check`: compare runs or sweeps with a committed baseline, print a diff table, and
//! exit 1 on a regression; `--bless` deliberately records the given runs as the new golden
//! values. `--list-runs` prints the blessed labels, so CI can replay exactly those.

use crate::BadInput;
use clap::Args;
use dlsim_report::check::{compare, diff_table, runs_under, Baseline, Status};
use dlsim_report::table::write_text;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct CheckArgs {
    /// Run folders (summary.json) or sweep folders (sweep.json) to check.
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
        for (label, summary) in &runs {
            base.bless(label, summary);
            println!("blessed {label}");
        }
        if let Some(dir) = args.baseline.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        write_text(&args.baseline, &base.to_json())?;
        println!("wrote {}", args.baseline.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut diffs = Vec::new();
    let mut unblessed = Vec::new();
    for (label, summary) in &runs {
        if !base.runs.contains_key(label) {
            unblessed.push(label.clone());
            continue;
        }
        let named = |e: anyhow::Error| BadInput(format!("{}: {e:#}", args.baseline.display()));
        diffs.extend(compare(&base, label, summary).map_err(named)?);
    }
    print!("{}", diff_table(&diffs).markdown());
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
        "dlsim check RUN_DIR --baseline {} --bless",
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
    if policy_labels && !known.is_empty() {
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
        println!("{improved} metric(s) improved beyond tolerance: consider re-blessing.");
    }
    if regressed + missing > 0 || !unblessed.is_empty() {
        println!(
            "FAILED: {regressed} regression(s), {missing} missing metric(s), {} run(s) without a baseline",
            unblessed.len()
        );
        return Ok(ExitCode::from(1));
    }
    println!(
        "ok: {} run(s), {} metric(s) within tolerance",
        runs.len(),
        diffs.len()
    );
    Ok(ExitCode::SUCCESS)
}
