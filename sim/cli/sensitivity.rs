//! `dlsim sensitivity`: runs the papers' reproduction once as the manifests set it and once
//! per variant of the open choices listed in a choices file (`scenarios/paper/choices.json`),
//! and writes `sensitivity.md`, `sensitivity.json` and a bar chart of what each variant
//! gains or loses (`sensitivity.{png,svg,pdf}`) into `--out` (a temporary folder
//! renamed into place): per variant, how many rows stay within ±25% and which cross the
//! band or flip direction (`dlsim_reproduce::sensitivity`).

use crate::BadInput;
use clap::Args;
use dlsim_reproduce::{sensitivity, Options};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct SensitivityArgs {
    /// The choices file: each open choice with its value, its source and the variants to
    /// try (`--set` overrides, as `dlsim reproduce --set` takes them).
    #[arg(long, default_value = "scenarios/paper/choices.json")]
    pub choices: PathBuf,
    /// Only these choices (ids, repeatable or comma-separated); all when omitted.
    #[arg(long, value_delimiter = ',')]
    pub choice: Vec<String>,
    /// Which paper's rows: dlrover-rm, dlrover, kale, picasso or all.
    #[arg(long, default_value = "all")]
    pub paper: String,
    /// Fewer seeds and smaller runs (as `dlsim reproduce --quick`).
    #[arg(long)]
    pub quick: bool,
    /// Worker threads [default: all cores]; results are identical on any count.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output folder for sensitivity.{md,json}.
    #[arg(long, default_value = "reports/runs/sensitivity")]
    pub out: PathBuf,
    /// Folder of the paper manifests.
    #[arg(long, default_value = "scenarios/paper")]
    pub papers_dir: PathBuf,
    /// Print nothing but errors and the summary line.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(args: &SensitivityArgs) -> anyhow::Result<ExitCode> {
    let papers = crate::reproduce::papers_and_threads(&args.paper, args.threads)?;
    let file =
        sensitivity::ChoicesFile::load(&args.choices).map_err(|e| BadInput(e.to_string()))?;
    let mut choices = file.choices;
    if !args.choice.is_empty() {
        if let Some(bad) = args
            .choice
            .iter()
            .find(|id| !choices.iter().any(|c| &&c.id == id))
        {
            let known: Vec<&str> = choices.iter().map(|c| c.id.as_str()).collect();
            return Err(BadInput(format!(
                "--choice: no choice `{bad}` in {} (choices: {})",
                args.choices.display(),
                known.join(", ")
            ))
            .into());
        }
        choices.retain(|c| args.choice.contains(&c.id));
    }
    dlsim_fsio::check_folder_target(&args.out).map_err(|e| BadInput(format!("--out: {e}")))?;
    let opts = Options {
        root: args.papers_dir.clone(),
        papers,
        quick: args.quick,
        rows: Default::default(),
        overrides: vec![],
        keep_runs: false,
    };
    let bar =
        crate::reproduce::progress_bar(args.quiet, "{pos}/{len} reproductions, eta {eta} {msg}");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()?;
    let start = Instant::now();
    let result = pool
        .install(|| {
            sensitivity::run(&opts, &choices, &|done, total, what| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
                bar.set_message(what.to_string());
            })
        })
        .map_err(|e| BadInput(format!("{}: {e}", args.choices.display())))?;
    bar.finish_and_clear();
    write_outputs(&args.out, &result)?;
    let variants: usize = result.choices.iter().map(|c| c.variants.len()).sum();
    let best = result
        .choices
        .iter()
        .flat_map(|c| {
            c.variants
                .iter()
                .map(move |v| (v.within_25, &c.choice.id, &v.name))
        })
        .max_by_key(|(n, _, _)| *n);
    print!(
        "baseline {} of {} rows within ±25%; {variants} variant(s) of {} choice(s)",
        result.within_25,
        result.rows,
        result.choices.len()
    );
    match best {
        Some((n, c, v)) => print!(", the most within ±25%: {n} ({c} / {v})"),
        None => print!(", none applies to the selected papers"),
    }
    if result.skipped.is_empty() {
        println!(".");
    } else {
        println!(
            "; {} variant(s) left out (they change only other papers).",
            result.skipped.len()
        );
    }
    if !args.quiet {
        println!(
            "{:.1} s. Outputs: {}",
            start.elapsed().as_secs_f64(),
            args.out.join("sensitivity.md").display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the files into a staging folder beside `out`, then renames it into place whole:
/// `sensitivity.json`, `sensitivity.md` and the figure `sensitivity.{png,svg,pdf}` (one bar
/// per variant: rows within ±25% gained or lost against the baseline).
fn write_outputs(out: &Path, s: &sensitivity::Sensitivity) -> anyhow::Result<()> {
    let staged = dlsim_fsio::stage_dir(
        out,
        &[
            "sensitivity.json",
            "sensitivity.md",
            "sensitivity.png",
            "sensitivity.svg",
            "sensitivity.pdf",
        ],
    )
    .map_err(|e| BadInput(format!("--out: {e}")))?;
    if let Err(e) = fill(&staged, s) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(e);
    }
    Ok(dlsim_fsio::commit_dir(&staged, out)?)
}

fn fill(dir: &Path, s: &sensitivity::Sensitivity) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(s).expect("serialises") + "\n";
    dlsim_fsio::write_atomic(&dir.join("sensitivity.json"), json.as_bytes())?;
    dlsim_fsio::write_atomic(
        &dir.join("sensitivity.md"),
        sensitivity::markdown(s).as_bytes(),
    )?;
    // Bars are labelled by the variants' numbers in sensitivity.md's table.
    let bars: Vec<(String, f64)> = s
        .choices
        .iter()
        .flat_map(|c| c.variants.iter())
        .enumerate()
        .map(|(i, v)| ((i + 1).to_string(), v.within_25 as f64 - s.within_25 as f64))
        .collect();
    let chart = dlsim_plot::Chart {
        title: format!(
            "Rows within ±25% each variant gains or loses (baseline {} of {})",
            s.within_25, s.rows
        ),
        x_label: "variant (# in sensitivity.md)".into(),
        y_label: "rows, against the baseline".into(),
        ..dlsim_plot::Chart::default()
    };
    dlsim_plot::bar_chart(&dir.join("sensitivity"), &chart, &bars)
        .map_err(|e| anyhow::anyhow!("drawing sensitivity: {e}"))?;
    Ok(())
}
