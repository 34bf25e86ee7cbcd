//! `dlsim report`: aggregate run folders (or sweep folders) into `report.md`, a
//! self-contained `report.html`, tables as CSV and Parquet, and figures as PNG and SVG.

use crate::BadInput;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct ReportArgs {
    /// Run folders (`dlsim replay --out`), folders of one run per policy (`dlsim replay
    /// --policy a,b --out`) or sweep folders (`dlsim sweep --out`).
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Policy the deltas are taken against [default: static when present, else a
    /// composed static+..., else the first].
    #[arg(long)]
    pub baseline: Option<String>,
    /// Output folder.
    #[arg(long)]
    pub out: PathBuf,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    for dir in &args.runs {
        if !dir.join("summary.json").is_file()
            && !dir.join("sweep.json").is_file()
            && dlsim_report::aggregate::policy_folders(dir).is_none()
        {
            return Err(BadInput(format!(
                "{}: not a run folder (summary.json), a folder of run folders (`replay --policy a,b`) nor a sweep folder (sweep.json)",
                dir.display()
            ))
            .into());
        }
    }
    // What fails here is the runs given or --out: the user's (exit 2). Nothing is written
    // then, since the report is staged whole.
    let written = dlsim_report::render::report(&args.runs, args.baseline.as_deref(), &args.out)
        .map_err(|e| BadInput(format!("{e:#}")))?;
    if args.quiet {
        return Ok(ExitCode::SUCCESS);
    }
    for h in &written.headlines {
        println!("{}", h.replace('`', ""));
    }
    println!(
        "Wrote {} and {} ({} tables, {} figure files) in {}",
        written.markdown.display(),
        written.html.display(),
        written.tables.len(),
        written.figures.len(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
